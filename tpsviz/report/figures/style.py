"""The common look of every figure: the predictor palette, predictor names, axis labels and the
layout (docs/architecture.md).

Conventions:

- one colour per predictor, the same everywhere (:func:`predictor_colors`, Okabe–Ito
  colour-blind-safe palette); the truthful / oracle predictor, when present, is drawn in black
  with a thicker line and labelled "= true probability (synthetic)" (a ``ref:*`` reference forecaster is
  labelled "(reference forecaster)": "reference" names those yardsticks only);
- every score axis says its units and direction (:func:`score_label`);
- figures ship aggregates, never raw steps, and use SVG traces only (no WebGL).
"""

from __future__ import annotations

import html
import textwrap

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from tpsviz.core.schema import clean_text
from tpsviz.core.scores import score_unit
from tpsviz.forecasts.references import is_reference as is_reference_forecaster

__all__ = [
    "TRUE_PROBABILITY", "BASE_RATE_LINE",
    "PALETTE", "REFERENCE_COLOR", "REFERENCE_NAMES", "TEMPLATE", "FONT", "use_template_by_default",
    "is_reference", "default_baseline", "predictor_colors", "by_predictor", "display_name", "plot_label",
    "color_of", "rgba", "line_width", "score_label", "apply_layout", "layout_dict", "empty_figure", "with_caption",
    "integer_ticks",
]


# Okabe & Ito (2008) colour-blind-safe palette, ordered so that neighbours differ in hue and
# lightness (orange, dark blue, green, pink, vermillion, sky blue); black is reserved for the
# reference predictor. Okabe–Ito's yellow (#F0E442) and Tol's pale sand/cyan are left out: they are
# unreadable as thin lines on white.
REFERENCE_COLOR = "#000000"
PALETTE = ["#E69F00", "#0072B2", "#009E73", "#CC79A7", "#D55E00", "#56B4E9",
           # Paul Tol "muted" (darker members) for more than 6 predictors
           "#332288", "#117733", "#882255", "#999933", "#44AA99", "#AA4499", "#CC6677", "#6699CC"]
REFERENCE_NAMES = ("truthful", "oracle", "truth", "true")
TEMPLATE = "plotly_white"


def use_template_by_default() -> None:
    """Make :data:`TEMPLATE` plotly's default template in this process (the dashboard calls it once).

    Assigning a template to a figure validates and copies it: about 10 ms per figure, most of a
    rerun's figure time (bench/bench_browser.py). A figure made while the template is the default
    gets it at creation without that cost, and :func:`apply_layout` then leaves it alone. Figures
    look the same either way; a library user who never calls this gets the template assigned per
    figure.
    """
    if pio.templates.default != TEMPLATE:  # setting it validates the template (~40 ms)
        pio.templates.default = TEMPLATE


def _template_kw() -> dict:
    """The template argument of a layout: none when :data:`TEMPLATE` is already plotly's default."""
    return {} if pio.templates.default == TEMPLATE else {"template": TEMPLATE}
FONT = dict(family="Source Sans Pro, Arial, sans-serif", size=13)


#: what the truthful/oracle predictor of synthetic data is, as every label says it
TRUE_PROBABILITY = "true probability (synthetic)"
#: the line of always saying the base rate, as every figure labels it (skill is measured against it)
BASE_RATE_LINE = "constant forecast (base rate)"


def is_reference(name: str) -> bool:
    """True for the truthful/oracle predictor of synthetic data (drawn as the reference)."""
    return str(name).lower() in REFERENCE_NAMES


def default_baseline(names):
    """The predictor others are compared with by default: the reference (:func:`is_reference`),
    else the first of ``names``; None when there is none."""
    names = list(names)
    return next((n for n in names if is_reference(n)), names[0] if names else None)


def predictor_colors(names) -> dict[str, str]:
    """A stable colour per predictor: the reference in black, others in palette order.

    Pass the full predictor list of the dataset (not a selection) so that colours do not
    change when the user selects a subset.
    """
    out, i = {}, 0
    for n in names:
        if is_reference(n):
            out[n] = REFERENCE_COLOR
        else:
            out[n] = PALETTE[i % len(PALETTE)]
            i += 1
    return out


def by_predictor(frame, colors):
    """Each predictor's rows of a long table, in the order of ``colors``, skipping those without rows.

    Parameters
    ----------
    frame : DataFrame
        With a ``predictor`` column.
    colors : dict
        Predictor name to colour (:func:`predictor_colors`): which predictors, in which order.

    Yields
    ------
    name : str
    rows : DataFrame
        The rows of ``frame`` whose predictor is ``name`` (never empty).
    """
    for name in colors:
        rows = frame[frame["predictor"] == name]
        if not rows.empty:
            yield name, rows


def display_name(name: str) -> str:
    """Predictor label with what it is marked: the truthful/oracle predictor of synthetic data
    "= true probability (synthetic)", a reference forecaster fitted on the log (``ref:…``,
    docs/forecasts.md §1) "(reference forecaster)", never mistaken for the agent's signal ("reference"
    names those yardsticks only)."""
    if is_reference_forecaster(name):
        return f"{name} (reference forecaster)"
    return f"{name} = {TRUE_PROBABILITY}" if is_reference(name) else str(name)


def plot_label(name: str) -> str:
    """Predictor / run label for plotly text (plotly renders a subset of HTML: escape log text)."""
    return html.escape(display_name(name), quote=False)


def color_of(colors: dict, name: str) -> str:
    """The colour of predictor ``name`` in ``colors`` (:func:`predictor_colors`), grey if it has none.

    Parameters
    ----------
    colors : dict
        Predictor name to colour.
    name : str
        The predictor.

    Returns
    -------
    str
        A colour string plotly reads.
    """
    return colors.get(name, "#777777")


def rgba(color: str, alpha: float) -> str:
    """A ``#rrggbb`` colour with transparency (other colour strings are returned as given).

    Parameters
    ----------
    color : str
        A colour, e.g. of :func:`predictor_colors`.
    alpha : float
        Opacity in [0, 1].

    Returns
    -------
    str
        ``rgba(r,g,b,alpha)`` for a ``#rrggbb`` colour, else ``color`` itself.
    """
    if isinstance(color, str) and color.startswith("#") and len(color) == 7:
        r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
        return f"rgba({r},{g},{b},{alpha})"
    return color


def line_width(name: str) -> float:
    """Line width of a predictor's trace: thicker for the reference (:func:`is_reference`).

    Parameters
    ----------
    name : str
        The predictor.

    Returns
    -------
    float
        3.5 for the reference, 2.0 otherwise.
    """
    return 3.5 if is_reference(name) else 2.0


def score_label(alpha: float, beta: float, per: str = "trajectory", short: bool = False) -> str:
    """Axis label with units and direction, e.g. 'TPS (nats per trajectory; higher is better, 0 is perfect)'."""
    unit = score_unit(alpha, beta)
    if short:
        return f"TPS ({unit}/{per}, ↑ better)"
    return f"TPS ({unit} per {per}; higher is better, 0 is perfect)"


def apply_layout(fig: go.Figure, title: str | None = None, height: int = 380, legend_bottom: bool = False,
                 **kw) -> go.Figure:
    """Give ``fig`` the common look: title top-left, horizontal legend between title and plot (or below it).

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        Changed in place.
    title : str, optional
        Figure title (none: no room is kept for it).
    height : int
        Height in pixels.
    legend_bottom : bool
        Legend below the plot instead of above it.
    **kw
        Further layout properties.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig``.
    """
    fig.update_layout(**layout_dict(title, height, legend_bottom, **kw))
    return fig


def layout_dict(title: str | None = None, height: int = 380, legend_bottom: bool = False, **kw) -> dict:
    """The layout :func:`apply_layout` gives, as a dict: for a figure made in one constructor
    (``go.Figure(data=…, layout=layout_dict(…))``, validated once).

    Parameters
    ----------
    title, height, legend_bottom, **kw
        As in :func:`apply_layout`.

    Returns
    -------
    dict
    """
    top = 30 + (30 if title else 0) + (0 if legend_bottom else 28)
    legend = (dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0) if legend_bottom else
              dict(orientation="h", yanchor="bottom", y=1.01, xanchor="left", x=0))
    return dict(**_template_kw(), font=FONT, height=height, margin=dict(l=60, r=20, t=top, b=90 if legend_bottom else 50),
                title=dict(text=title, x=0, xanchor="left", y=0.995, yanchor="top", yref="container",
                           pad=dict(t=8), font=dict(size=15)) if title else None,
                legend=legend, **kw)


def empty_figure(message: str, height: int = 240) -> go.Figure:
    """A blank figure carrying a message (designed empty state)."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=14, color="#555"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return apply_layout(fig, height=height)


def with_caption(fig: go.Figure, text: str, size: int = 11) -> go.Figure:
    """A copy of ``fig`` with ``text`` (e.g. the settings it was made under) written under its title,
    so an exported image says what it shows. It goes in the title's subtitle, above the plot: below
    it, rotated tick labels would cross it. The text is escaped (plotly reads a few HTML tags, and
    a file name may hold one) and wrapped."""
    out = go.Figure(fig)
    lines = _wrap(html.escape(clean_text(text, 600)), 130)
    added = 15 * len(lines) + 10
    top = out.layout.margin.t if out.layout.margin and out.layout.margin.t is not None else 60
    title = out.layout.title.text or ""
    out.update_layout(title=dict(text=title or " ", subtitle=dict(text="<br>".join(lines),
                                                                   font=dict(size=size, color="#555"))),
                      margin=dict(t=top + added), height=int(out.layout.height or 450) + added)
    return out


def _wrap(text: str, width: int) -> list:
    return textwrap.wrap(text, width) or [""]


def integer_ticks(fig: go.Figure) -> go.Figure:
    """Steps and lengths are whole numbers: x ticks at integers 1, 2, 5, 10 … apart, never 2.5.

    The spacing is chosen from the largest x of the figure's traces (at most 12 ticks); a
    categorical axis (text x values) is left alone.
    """
    top = 0.0
    for tr in fig.data:
        x = getattr(tr, "x", None)
        if x is None:
            continue
        try:
            vals = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            return fig  # categorical
        vals = vals[np.isfinite(vals)]
        if vals.size:
            top = max(top, float(vals.max()))
    step = 1
    for m in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000):
        step = m
        if top / m <= 12:
            break
    fig.update_xaxes(tickmode="linear", tick0=0, dtick=step, tickformat="d")
    return fig
