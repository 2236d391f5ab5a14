"""Plotly figure builders for the dashboard and the HTML report (docs/architecture.md).

Compute and plot are separate: every ``*_figure`` function takes data frames or dicts that
the core returns (or small aggregates made here by ``prepare_*`` helpers) and returns a
``plotly.graph_objects.Figure``. Nothing here imports streamlit.

Conventions (docs/architecture.md):

- one colour per predictor, the same everywhere (:func:`predictor_colors`, Okabe–Ito
  colour-blind-safe palette); the truthful / oracle predictor, when present, is drawn in black
  with a thicker line and labelled "(reference)";
- every score axis says its units and direction (:func:`score_label`);
- figures ship aggregates, never raw steps, and use SVG traces only (no WebGL).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from tpsviz.core.schema import clean_text
from tpsviz.core.scores import score_unit
from plotly.subplots import make_subplots

__all__ = [
    "PALETTE", "REFERENCE_NAMES", "is_reference", "default_baseline", "predictor_colors", "display_name", "plot_label",
    "score_unit", "score_label", "omega_figure", "score_curves_figure", "leaderboard_figure",
    "delta_matrix_figure", "prepare_heatmap", "contribution_heatmap_figure",
    "prepare_step_means", "step_means_figure", "trajectory_figure", "length_histogram_figure",
    "censoring_modes_figure", "qz_band_figure", "artificial_check_figure", "mc_audit_figure",
    "reliability_figure", "band_steps", "with_caption", "integer_ticks", "histogram_figure", "drift_figure", "deferral_figure", "decomposition_figure", "decomposition_by_step_figure",
    "murphy_figure", "schedule_figure", "demo_bars_figure", "empty_figure", "use_template_by_default",
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
    gets it at creation without that cost, and :func:`_layout` then leaves it alone. Figures look
    the same either way; a library user who never calls this gets the template assigned per figure.
    """
    import plotly.io as pio

    if pio.templates.default != TEMPLATE:  # setting it validates the template (~40 ms)
        pio.templates.default = TEMPLATE


def _template_kw() -> dict:
    import plotly.io as pio

    return {} if pio.templates.default == TEMPLATE else {"template": TEMPLATE}
FONT = dict(family="Source Sans Pro, Arial, sans-serif", size=13)


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


def display_name(name: str) -> str:
    """Predictor label with the reference marked."""
    return f"{name} (reference)" if is_reference(name) else str(name)


def plot_label(name: str) -> str:
    """Predictor / run label for plotly text (plotly renders a subset of HTML: escape log text)."""
    return html.escape(display_name(name), quote=False)


def _color(colors: dict, name: str) -> str:
    return colors.get(name, "#777777")


def _rgba(color: str, alpha: float) -> str:
    """A ``#rrggbb`` colour with transparency (other colour strings are returned as given)."""
    if isinstance(color, str) and color.startswith("#") and len(color) == 7:
        r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
        return f"rgba({r},{g},{b},{alpha})"
    return color


def _width(name: str) -> float:
    return 3.5 if is_reference(name) else 2.0


def score_label(alpha: float, beta: float, per: str = "trajectory", short: bool = False) -> str:
    """Axis label with units and direction, e.g. 'TPS (nats per trajectory; higher is better, 0 is perfect)'."""
    unit = score_unit(alpha, beta)
    if short:
        return f"TPS ({unit}/{per}, ↑ better)"
    return f"TPS ({unit} per {per}; higher is better, 0 is perfect)"


def _layout(fig: go.Figure, title: str | None = None, height: int = 380, legend_bottom: bool = False,
            **kw) -> go.Figure:
    """Common look: title top-left, horizontal legend between title and plot (or below it)."""
    top = 30 + (30 if title else 0) + (0 if legend_bottom else 28)
    legend = (dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0) if legend_bottom else
              dict(orientation="h", yanchor="bottom", y=1.01, xanchor="left", x=0))
    fig.update_layout(**_template_kw(), font=FONT, height=height,
                      margin=dict(l=60, r=20, t=top, b=90 if legend_bottom else 50),
                      title=dict(text=title, x=0, xanchor="left", y=0.995, yanchor="top", yref="container",
                                 pad=dict(t=8), font=dict(size=15)) if title else None,
                      legend=legend, **kw)
    return fig


def empty_figure(message: str, height: int = 240) -> go.Figure:
    """A blank figure carrying a message (designed empty state)."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=14, color="#555"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, height=height)


# ------------------------------------------------------------------------- scoring rule
def omega_figure(c: np.ndarray, w: np.ndarray, alpha: float, beta: float, small: bool = True) -> go.Figure:
    """ω_{α,β}(c) against the decision threshold c (normalised to its maximum on the grid)."""
    w = np.asarray(w, dtype=float)
    finite = np.isfinite(w)
    top = np.nanmax(w[finite]) if finite.any() else 1.0
    fig = go.Figure(go.Scatter(x=c, y=w / top, mode="lines", line=dict(color="#0072B2", width=2),
                               fill="tozeroy", name="ω(c)",
                               hovertemplate="threshold c=%{x:.2f}<br>relative weight %{y:.2f}<extra></extra>"))
    fig.update_xaxes(title="decision threshold c", range=[0, 1])
    fig.update_yaxes(title="ω(c), relative" if not small else None, rangemode="tozero")
    if small:
        _layout(fig, height=150)
        fig.update_layout(margin=dict(l=10, r=10, t=25, b=35), showlegend=False,
                          title=dict(text=f"ω(c) for α={alpha:g}, β={beta:g}", font=dict(size=12), x=0))
        fig.update_xaxes(title=dict(text="threshold c", font=dict(size=11)))
        return fig
    return _layout(fig, f"Threshold weight ω(c) = c^(α−1)(1−c)^(β−1), α={alpha:g}, β={beta:g}")


def omega_svg(c: np.ndarray, w: np.ndarray, alpha: float, beta: float, width: int = 260,
              height: int = 120) -> str:
    """The sidebar's ω_{α,β}(c) thumbnail as a small static SVG (normalised as :func:`omega_figure`).

    A plotly chart costs the browser a full plot on every α or β move; this picture is a few
    hundred bytes drawn at once. Only numbers enter it (no text from a log).
    """
    w = np.asarray(w, dtype=float)
    finite = np.isfinite(w)
    top = np.nanmax(w[finite]) if finite.any() else 1.0
    y = np.clip(np.where(finite, w / top, 1.0), 0.0, 1.0)
    left, right, up, low = 22, 8, 22, 30  # margins: axis labels left and below, title above
    pw, ph = width - left - right, height - up - low
    xs, ys = left + np.asarray(c, dtype=float) * pw, up + (1 - y) * ph
    line = " ".join(f"{x:.1f},{v:.1f}" for x, v in zip(xs, ys))
    base = up + ph
    area = f"{xs[0]:.1f},{base} {line} {xs[-1]:.1f},{base}"
    ticks = "".join(
        f'<text x="{left + t * pw:.1f}" y="{base + 13}" text-anchor="middle">{t:g}</text>' for t in (0, 0.5, 1))
    ticks += "".join(
        f'<text x="{left - 4}" y="{up + (1 - t) * ph + 3:.1f}" text-anchor="end">{t:g}</text>' for t in (0, 0.5, 1))
    grid = "".join(f'<line x1="{left + t * pw:.1f}" y1="{up}" x2="{left + t * pw:.1f}" y2="{base}"/>'
                   for t in (0.5, 1))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="10" fill="#444">'
            f'<title>ω(c) for α={alpha:g}, β={beta:g}</title>'
            f'<text x="0" y="12" font-size="11" fill="#31333F">ω(c) for α={alpha:g}, β={beta:g}</text>'
            f'<g stroke="#e5e5e5" stroke-width="1">{grid}</g>'
            f'<line x1="{left}" y1="{base}" x2="{left + pw}" y2="{base}" stroke="#999"/>'
            f'<polygon points="{area}" fill="#0072B2" fill-opacity="0.25" stroke="none"/>'
            f'<polyline points="{line}" fill="none" stroke="#0072B2" stroke-width="2"/>'
            f'{ticks}<text x="{left + pw / 2:.1f}" y="{height - 3}" text-anchor="middle">threshold c</text></svg>')


def score_curves_figure(p: np.ndarray, s1: np.ndarray, s0: np.ndarray, alpha: float, beta: float) -> go.Figure:
    """S(p, 1) and S(p, 0) against the forecast p."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=p, y=s1, name="S(p, 1): the run succeeds", line=dict(color="#009E73", width=2.5)))
    fig.add_trace(go.Scatter(x=p, y=s0, name="S(p, 0): the run fails", line=dict(color="#D55E00", width=2.5)))
    fig.update_xaxes(title="forecast p (reported probability of success)", range=[0, 1])
    fig.update_yaxes(title=f"score ({score_unit(alpha, beta)}; higher is better, 0 is perfect)")
    return _layout(fig, f"The score of one forecast, α={alpha:g}, β={beta:g}")


# ------------------------------------------------------------------------- overview
def leaderboard_figure(summary: pd.DataFrame, colors: dict, alpha: float, beta: float,
                       ref_value: float | None = None, level: float = 0.95, intervals: dict | None = None,
                       ci_label: str = "bootstrap CI") -> go.Figure:
    """Mean TPS per predictor with its interval (dot and whiskers), best at the top.

    ``summary`` is ``TPSResult.summary`` (index = predictor). ``intervals`` maps a predictor to
    (low, high) to draw instead of the bootstrap CI (e.g. ± 1.96 SE when the bootstrap is off);
    ``ci_label`` names them in the title. A predictor whose mean is −∞ (a forecast of exactly
    0 or 1 under an unbounded score) is drawn as a "−∞" arrow at the left edge.
    """
    s = summary.assign(_m=summary["tps_mean"].fillna(-np.inf)).sort_values("_m", ascending=True)
    fig = go.Figure()
    finite = s["tps_mean"][np.isfinite(s["tps_mean"])]
    if len(finite):
        lo_all = [intervals[n][0] if intervals and n in intervals else s.loc[n, "tps_ci_low"] for n in finite.index]
        left = float(np.nanmin(np.r_[finite.to_numpy(), np.asarray(lo_all, dtype=float)]))
        span = max(float(finite.max()) - left, 1e-9)
        edge = left - 0.08 * span
    else:
        edge = -1.0
    for name, row in s.iterrows():
        m = row["tps_mean"]
        lo, hi = intervals[name] if intervals and name in intervals else (row["tps_ci_low"], row["tps_ci_high"])
        if not np.isfinite(m):
            fig.add_trace(go.Scatter(
                x=[edge], y=[plot_label(name)], mode="markers+text", text=["−∞" if m == -np.inf else "n/a"],
                textposition="middle right", marker=dict(color=_color(colors, name), size=12, symbol="triangle-left"),
                showlegend=False, hovertemplate=(f"<b>{plot_label(name)}</b><br>mean TPS = "
                                                 f"{'−∞' if m == -np.inf else 'undefined'}<extra></extra>")))
            continue
        fig.add_trace(go.Scatter(
            x=[m], y=[plot_label(name)], mode="markers",
            marker=dict(color=_color(colors, name), size=13 if is_reference(name) else 10,
                        symbol="diamond" if is_reference(name) else "circle"),
            error_x=dict(type="data", symmetric=False, array=[hi - m if np.isfinite(hi) else 0],
                         arrayminus=[m - lo if np.isfinite(lo) else 0], color=_color(colors, name),
                         thickness=2),
            name=plot_label(name), showlegend=False,
            hovertemplate=(f"<b>{plot_label(name)}</b><br>mean TPS %{{x:.4g}}<br>"
                           f"{level:.0%} CI [{lo:.4g}, {hi:.4g}]<br>n = {int(row['n_trajectories'])} "
                           f"trajectories ({int(row['n_censored'])} censored)<extra></extra>")))
    if ref_value is not None and np.isfinite(ref_value):
        fig.add_vline(x=ref_value, line=dict(color="#777", dash="dot"),
                      annotation_text="base-rate reference", annotation_position="top")
    fig.update_xaxes(title=score_label(alpha, beta))
    fig.update_yaxes(title=None)
    title = f"Mean TPS with {level:.0%} {ci_label}" if "SE" not in ci_label else f"Mean TPS {ci_label}"
    return _layout(fig, title, height=max(220, 60 + 42 * len(s)))


def delta_matrix_figure(z: pd.DataFrame, title: str = "Paired Δ/SE (row − column)") -> go.Figure:
    """Heatmap of a square Δ/SE matrix (rows minus columns), diverging colours centred on 0."""
    vals = z.to_numpy(dtype=float)
    lim = float(np.nanmax(np.abs(vals))) if np.isfinite(vals).any() else 1.0
    lim = max(lim, 2.0)
    text = np.where(np.isfinite(vals), np.vectorize(lambda v: f"{v:+.1f}")(np.nan_to_num(vals)), "")
    fig = go.Figure(go.Heatmap(
        z=vals, x=[plot_label(c) for c in z.columns], y=[plot_label(r) for r in z.index],
        zmin=-lim, zmax=lim, colorscale="RdBu", text=text, texttemplate="%{text}",
        colorbar=dict(title="Δ/SE"),
        hovertemplate="%{y} − %{x}<br>Δ/SE = %{z:.2f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, height=max(260, 80 + 40 * len(z)))


# ------------------------------------------------------------------------- step contributions
def prepare_heatmap(contrib: pd.DataFrame, trajectories: pd.DataFrame, max_rows: int = 400,
                    max_steps: int = 60) -> dict:
    """Aggregate per-step contributions of ONE predictor into a (trajectory × step) matrix.

    Trajectories are ordered by outcome (successes, failures, censored) then length; when
    there are more than ``max_rows`` runs, consecutive runs in that order are averaged into
    ``max_rows`` bands (so the figure ships an aggregate). Steps beyond ``max_steps`` are
    pooled into the last column.
    """
    t = trajectories[["trajectory_id", "outcome", "censored", "length"]].copy()
    group = np.where(t["censored"], 2, np.where(t["outcome"] == 1, 0, 1))
    t["group"] = group
    t = t.sort_values(["group", "length"], kind="stable").reset_index(drop=True)
    t["row"] = np.arange(len(t))
    n = len(t)
    bands = min(n, max_rows)
    t["band"] = (t["row"] * bands // max(n, 1)).astype(int)
    c = contrib.merge(t[["trajectory_id", "band"]], on="trajectory_id", how="inner")
    step = np.minimum(c["t"].to_numpy(), max_steps)
    c = c.assign(col=step)
    piv = c.pivot_table(index="band", columns="col", values="contribution", aggfunc="mean")
    piv = piv.reindex(index=range(bands))
    size = t.groupby("band").size().reindex(range(bands)).fillna(0).astype(int)
    grp = t.groupby("band")["group"].agg(lambda g: int(np.bincount(g, minlength=3).argmax()))
    labels = np.array(["success", "failure", "censored"])[grp.reindex(range(bands)).fillna(0).astype(int)]
    first_id = t.groupby("band")["trajectory_id"].first().reindex(range(bands)).astype(str).map(
        lambda v: html.escape(v, quote=False))
    return {"z": piv.to_numpy(), "steps": list(piv.columns), "band_size": size.to_numpy(),
            "band_label": labels, "band_first": first_id.to_numpy(), "n_trajectories": n,
            "aggregated": n > max_rows, "capped": int(contrib["t"].max() if len(contrib) else 0) > max_steps,
            "boundaries": [int(t.loc[t["group"] == g, "band"].min()) for g in (1, 2)
                           if (t["group"] == g).any()]}


def contribution_heatmap_figure(h: dict, predictor: str, alpha: float, beta: float) -> go.Figure:
    """Heatmap of w_t·S over trajectories (rows) × steps (columns)."""
    z = h["z"]
    fin = z[np.isfinite(z)]
    zmin = float(np.quantile(fin, 0.02)) if fin.size else -1
    custom = np.stack([np.repeat(h["band_label"][:, None], z.shape[1], 1),
                       np.repeat(h["band_size"][:, None], z.shape[1], 1),
                       np.repeat(h["band_first"][:, None].astype(str), z.shape[1], 1)], axis=-1)
    fig = go.Figure(go.Heatmap(
        z=z, x=h["steps"], y=np.arange(z.shape[0]), colorscale="Viridis", zmin=zmin, zmax=0,
        customdata=custom,
        colorbar=dict(title=f"w_t·S<br>({score_unit(alpha, beta)})"),
        hovertemplate=("step %{x}<br>%{customdata[0]} run(s), %{customdata[1]} in this row "
                       "(first: %{customdata[2]})<br>mean w_t·S = %{z:.3g}<extra></extra>")))
    for b in h["boundaries"]:
        fig.add_hline(y=b - 0.5, line=dict(color="white", width=3), layer="above")
    fig.update_xaxes(title="step t" + (" (last column pools later steps)" if h["capped"] else ""))
    integer_ticks(fig)
    # the y axis runs top to bottom (reversed): say so, since a rotated title reads bottom to top
    fig.update_yaxes(title="runs, top to bottom: successes | failures | censored",
                     showticklabels=False, autorange="reversed")
    return _layout(fig, f"Per-step contribution w_t·S for {plot_label(predictor)} "
                        f"(darker = more score lost; 0 is perfect)", height=460)


def prepare_step_means(contrib: pd.DataFrame, max_steps: int = 60) -> pd.DataFrame:
    """Mean and SE of w_t·S by step and predictor (steps beyond ``max_steps`` pooled)."""
    c = contrib.assign(tt=np.minimum(contrib["t"].to_numpy(), max_steps))
    g = c.groupby(["predictor", "tt"])["contribution"]
    out = g.agg(["mean", "std", "count"]).reset_index().rename(columns={"tt": "t"})
    out["se"] = out["std"] / np.sqrt(out["count"])
    return out


def step_means_figure(means: pd.DataFrame, colors: dict, alpha: float, beta: float) -> go.Figure:
    """Mean contribution per step and predictor with a ±1 SE band."""
    fig = go.Figure()
    for name in colors:
        m = means[means["predictor"] == name]
        if m.empty:
            continue
        col = _color(colors, name)
        x = m["t"].to_numpy()
        y = m["mean"].to_numpy()
        se = np.nan_to_num(m["se"].to_numpy())
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[y + se, (y - se)[::-1]], fill="toself",
                                 fillcolor=col, opacity=0.15, line=dict(width=0), hoverinfo="skip",
                                 showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=plot_label(name), legendgroup=name,
                                 line=dict(color=col, width=_width(name)),
                                 customdata=np.c_[se, m["count"]],
                                 hovertemplate=(f"{plot_label(name)}<br>step %{{x}}: mean w_t·S %{{y:.3g}}"
                                                " ± %{customdata[0]:.2g} (SE)<br>n = %{customdata[1]} runs"
                                                "<extra></extra>")))
    fig.update_xaxes(title="step t")
    integer_ticks(fig)
    fig.update_yaxes(title=f"mean w_t·S ({score_unit(alpha, beta)}; ↑ better)")
    return _layout(fig, "Mean contribution by step (±1 SE); fewer runs reach late steps")


def trajectory_figure(steps: pd.DataFrame, predictors: list[str], colors: dict, outcome: float,
                      censored: bool, q_z: float | None, title: str) -> go.Figure:
    """F_t of every predictor along one run, with the outcome, the censoring point Z and q_Z."""
    fig = go.Figure()
    for name in predictors:
        col = f"conf_{name}"
        if col not in steps:
            continue
        fig.add_trace(go.Scatter(x=steps["step"], y=steps[col], mode="lines+markers", name=plot_label(name),
                                 line=dict(color=_color(colors, name), width=_width(name)),
                                 marker=dict(size=5),
                                 hovertemplate=f"{plot_label(name)}<br>step %{{x}}: F = %{{y:.3f}}<extra></extra>"))
    last = steps["step"].max() if len(steps) else 1
    if censored:
        fig.add_vline(x=last, line=dict(color="#555", dash="dash"),
                      annotation_text=f"censored at Z = {last}", annotation_position="top left")
        if q_z is not None and np.isfinite(q_z):
            fig.add_trace(go.Scatter(x=[last], y=[q_z], mode="markers", name=f"q_Z = {q_z:.2f}",
                                     marker=dict(symbol="star", size=14, color="#555"),
                                     hovertemplate="q_Z: the evaluator's estimate of P(success | history at Z)"
                                                   " = %{y:.3f}<extra></extra>"))
    else:
        label = "success (Y = 1)" if outcome == 1 else "failure (Y = 0)"
        fig.add_trace(go.Scatter(x=[last], y=[outcome], mode="markers", name=f"outcome: {label}",
                                 marker=dict(symbol="circle" if outcome == 1 else "x", size=14,
                                             color="#009E73" if outcome == 1 else "#D55E00",
                                             line=dict(color="#333", width=1)),
                                 hovertemplate=f"outcome {label}<extra></extra>"))
    fig.update_xaxes(title="step")
    integer_ticks(fig)
    fig.update_yaxes(title="F_t = reported P(success)", range=[-0.03, 1.03])
    return _layout(fig, title)


# ------------------------------------------------------------------------- censoring
def length_histogram_figure(trajectories: pd.DataFrame) -> go.Figure:
    """Run lengths of complete vs censored runs (aggregated counts, overlaid bars)."""
    fig = go.Figure()
    for cens, name, col in ((False, "complete", "#0072B2"), (True, "censored", "#D55E00")):
        t = trajectories[trajectories["censored"] == cens]
        if t.empty:
            continue
        counts = t["length"].value_counts().sort_index()
        fig.add_trace(go.Bar(x=counts.index, y=counts.to_numpy(), name=f"{name} (n={len(t)})",
                             marker_color=col, opacity=0.7,
                             hovertemplate=f"{html.escape(str(name), quote=False)}: %{{y}} runs of length %{{x}}<extra></extra>"))
    fig.update_layout(barmode="overlay")
    # (two lines: the figure sits in half the page's width, where one line was cut)
    fig.update_xaxes(title="observed length (steps)<br>for a censored run: its stopping step Z")
    integer_ticks(fig)
    fig.update_yaxes(title="runs")
    return _layout(fig, "Run length: complete vs censored")


def censoring_modes_figure(table: pd.DataFrame, colors: dict, alpha: float, beta: float,
                           current: str | None = None) -> go.Figure:
    """Mean TPS with CI per predictor (y) and censoring treatment (marker), one row per predictor.

    ``table`` columns: predictor, mode (label), tps_mean, tps_ci_low, tps_ci_high, n_trajectories.
    ``current``: the mode label in use elsewhere in the app, drawn larger and named in the legend.
    The legend shows each treatment's marker shape in grey (the colour is the predictor's).
    """
    symbols = ["circle", "square", "diamond", "triangle-up", "cross"]
    modes = list(dict.fromkeys(table["mode"]))
    fig = go.Figure()
    preds = list(dict.fromkeys(table["predictor"]))
    offsets = np.linspace(-0.25, 0.25, len(modes)) if len(modes) > 1 else [0.0]
    for j, mode in enumerate(modes):
        t = table[table["mode"] == mode]
        ypos = [preds.index(p) + offsets[j] for p in t["predictor"]]
        cur = mode == current
        fig.add_trace(go.Scatter(  # legend entry: the shape in neutral grey
            x=[None], y=[None], mode="markers", name=mode + ("  ◀ current mode" if cur else ""),
            marker=dict(symbol=symbols[j % len(symbols)], size=14 if cur else 10, color="#bbbbbb",
                        line=dict(color="#000" if cur else "#333", width=2.5 if cur else 1)),
            legendgroup=mode, hoverinfo="skip"))
        fig.add_trace(go.Scatter(
            x=t["tps_mean"], y=ypos, mode="markers", name=mode, showlegend=False, legendgroup=mode,
            marker=dict(symbol=symbols[j % len(symbols)], size=14 if cur else 10,
                        color=[_color(colors, p) for p in t["predictor"]],
                        line=dict(color="#000" if cur else "#333", width=2.5 if cur else 1)),
            error_x=dict(type="data", symmetric=False, array=(t["tps_ci_high"] - t["tps_mean"]).fillna(0),
                         arrayminus=(t["tps_mean"] - t["tps_ci_low"]).fillna(0), color="#666"),
            customdata=np.c_[t["predictor"], t["tps_ci_low"], t["tps_ci_high"], t["n_trajectories"]],
            hovertemplate=(f"{mode}<br>%{{customdata[0]}}: %{{x:.4g}} [%{{customdata[1]:.4g}}, "
                           "%{customdata[2]:.4g}]<br>n = %{customdata[3]} runs<extra></extra>")))
    fig.update_yaxes(tickvals=list(range(len(preds))), ticktext=[plot_label(p) for p in preds],
                     autorange="reversed")
    fig.update_xaxes(title=score_label(alpha, beta))
    return _layout(fig, "Mean TPS (95% CI) by censoring treatment", height=max(300, 80 + 55 * len(preds)))


def qz_band_figure(sweep: pd.DataFrame, colors: dict, alpha: float, beta: float,
                   marks: dict | None = None) -> go.Figure:
    """Mean TPS against a common q_Z for every censored run (linear in q_Z: a band with no model).

    ``sweep`` columns: predictor, q_z, tps_mean.
    """
    fig = go.Figure()
    for name in colors:
        s = sweep[sweep["predictor"] == name]
        if s.empty:
            continue
        fig.add_trace(go.Scatter(x=s["q_z"], y=s["tps_mean"], mode="lines", name=plot_label(name),
                                 line=dict(color=_color(colors, name), width=_width(name)),
                                 hovertemplate=f"{plot_label(name)}<br>q_Z=%{{x:.2f}}: mean TPS %{{y:.4g}}<extra></extra>"))
    for label, x in (marks or {}).items():
        fig.add_vline(x=x, line=dict(color="#999", dash="dot"), annotation_text=label)
    fig.update_xaxes(title="q_Z given to every censored run (0 = simple: censoring as failure)", range=[0, 1])
    fig.update_yaxes(title=score_label(alpha, beta, short=True))
    return _layout(fig, "Sensitivity of mean TPS to q_Z (the band spans every possible q_Z)")


def artificial_check_figure(check: pd.DataFrame, colors: dict) -> go.Figure:
    """Absolute error |direct − closed form| per predictor (max and median), log scale, predictors
    in the order of ``colors`` (the order everywhere else). An error of exactly 0 cannot sit on a
    log axis: its bar is drawn as a stub at 1e−17 and labelled "0"."""
    g = check.groupby("predictor", sort=False)["abs_error"].agg(["max", "median"])
    g = g.reindex([p for p in colors if p in g.index] + [p for p in g.index if p not in colors]).reset_index()
    zero = g["max"].to_numpy() == 0
    fig = go.Figure(go.Bar(x=[plot_label(p) for p in g["predictor"]], y=np.maximum(g["max"], 1e-17),
                           marker_color=[_color(colors, p) for p in g["predictor"]],
                           text=["0" if z else "" for z in zero], textposition="outside",
                           customdata=np.where(zero, "0 (exact)", [f"{v:.2e}" for v in g["max"]]),
                           hovertemplate="%{x}: max |direct − closed form| = %{customdata}<extra></extra>"))
    fig.update_yaxes(type="log", title="max |direct − closed form|", range=[-18, 0])
    fig.add_hline(y=1e-9, line=dict(color="#999", dash="dot"), annotation_text="1e−9")
    return _layout(fig, "Artificial censoring: closed form vs direct difference", height=300)


def mc_audit_figure(audit: pd.DataFrame) -> go.Figure:
    """q̂_Z from rollouts with its 95% Wilson interval per censored run, sorted, with the log's q_Z
    if given.

    Wilson, not ±1.96 SE: the SE is 0 where every rollout agrees (q̂ = 0 or 1), which drew no bar
    at all from a handful of rollouts, and ± SE ran below 0 near it. The log's q_Z is drawn as a
    larger hollow ring so that it stays visible where it equals q̂_Z.
    """
    from tpsviz.diagnostics.reliability import wilson_interval

    a = audit.sort_values("q_hat").reset_index(drop=True)
    n = a["n_rollouts"].to_numpy(dtype=float)
    lo, hi = wilson_interval(np.round(a["q_hat"].to_numpy(dtype=float) * n), n)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=np.arange(len(a)), y=a["q_hat"], mode="markers", name="q̂_Z (rollouts)",
                             marker=dict(color="#0072B2", size=5),
                             error_y=dict(type="data", symmetric=False, array=np.nan_to_num(hi - a["q_hat"]),
                                          arrayminus=np.nan_to_num(a["q_hat"] - lo), color="#9ecae1", thickness=1),
                             customdata=np.c_[a["trajectory_id"].astype(str).map(lambda v: html.escape(v, quote=False)),
                                              a["n_rollouts"]],
                             hovertemplate="%{customdata[0]}: q̂_Z = %{y:.3f} from %{customdata[1]} rollouts<extra></extra>"))
    if "q_log" in a and a["q_log"].notna().any():
        same = bool(np.allclose(a["q_log"], a["q_hat"], equal_nan=True, atol=1e-12))
        fig.add_trace(go.Scatter(x=np.arange(len(a)), y=a["q_log"], mode="markers",
                                 name="q_Z in the log" + (" (identical to q̂_Z)" if same else ""),
                                 marker=dict(color="#D55E00", size=11, symbol="circle-open",  # open symbols
                                             line=dict(width=2)),                        # stroke in marker.color
                                 hovertemplate="log q_Z = %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title="censored runs, sorted by q̂_Z")
    fig.update_yaxes(title="q_Z = P(success | history at Z)", range=[-0.03, 1.03])
    return _layout(fig, "Monte-Carlo audit: continuation success per censored run (95% Wilson interval)")


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
    import textwrap

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


# ------------------------------------------------------------------------- reliability
def band_steps(x, high, low, min_half_width: float = 0.015):
    """A pointwise band as a step polygon that stays a band with few distinct forecasts.

    Each forecast value x_i holds its interval [low_i, high_i] from half-way to its left neighbour
    to half-way to its right one; the outermost values reach ``min_half_width`` beyond themselves
    (within [0, 1]). With one distinct forecast the band is a box around it instead of a line of
    zero width, with two it is two steps instead of a sliver between two points.

    Returns
    -------
    x, high, low : ndarray
        Two points per forecast value (left and right end of its step).
    """
    x = np.asarray(x, dtype=float)
    mid = (x[1:] + x[:-1]) / 2
    left = np.r_[x[0] - min_half_width, mid]  # neighbouring steps meet half-way: one contiguous band
    right = np.r_[mid, x[-1] + min_half_width]
    left, right = np.clip(left, 0, 1), np.clip(right, 0, 1)
    bx = np.column_stack([left, right]).ravel()
    return (bx, np.repeat(np.asarray(high, dtype=float), 2), np.repeat(np.asarray(low, dtype=float), 2))


def reliability_figure(panels: list[dict], colors: dict, title: str) -> go.Figure:
    """Reliability diagrams side by side (one SVG figure with facets).

    Each panel: ``name``; ``bins`` = :func:`tpsviz.diagnostics.reliability.reliability_bins` output
    (``n``, ``mean_forecast``, ``observed_rate``, ``ci_low``, ``ci_high``); optional ``corp`` =
    :func:`tpsviz.diagnostics.reliability.corp_curve` output (``x``, ``recalibrated``, ``band_low``,
    ``band_high``).
    """
    n = len(panels)
    cols = min(n, 3) or 1
    rows = int(np.ceil(n / cols)) or 1
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[plot_label(p["name"]) for p in panels] or [""],
                        shared_yaxes=True, horizontal_spacing=0.05, vertical_spacing=0.12)
    for i, p in enumerate(panels):
        r, c = i // cols + 1, i % cols + 1
        col = _color(colors, p["name"])
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#bbb", dash="dot"),
                                 showlegend=False, hoverinfo="skip"), r, c)
        corp = p.get("corp")
        if corp is not None and len(corp):
            if "band_low" in corp and corp["band_low"].notna().any():
                bx, bhi, blo = band_steps(corp["x"], corp["band_high"], corp["band_low"])
                fig.add_trace(go.Scatter(x=np.r_[bx, bx[::-1]], y=np.r_[bhi, blo[::-1]], fill="toself",
                                         fillcolor="rgba(120,120,120,0.18)", line=dict(width=0),
                                         name="consistency band (calibrated)", showlegend=(i == 0),
                                         legendgroup="band", hoverinfo="skip"), r, c)
            fig.add_trace(go.Scatter(x=corp["x"], y=corp["recalibrated"], mode="lines", line=dict(color=col, width=2, shape="hv"),
                                     name="CORP isotonic curve", showlegend=(i == 0), legendgroup="corp",
                                     hovertemplate="F=%{x:.3f}: recalibrated %{y:.3f}<extra></extra>"), r, c)
        b = p["bins"]
        b = b[b["n"] > 0] if len(b) else b
        if len(b):
            fig.add_trace(go.Scatter(
                x=b["mean_forecast"], y=b["observed_rate"], mode="markers", name="binned rate (95% interval)",
                showlegend=(i == 0), legendgroup="bins", cliponaxis=False,  # (a rate of 0 or 1: the whole dot)
                marker=dict(color=col, size=np.clip(4 + 10 * np.sqrt(b["n"] / b["n"].max()), 4, 14),
                            line=dict(color="#333", width=1)),
                error_y=dict(type="data", symmetric=False, array=(b["ci_high"] - b["observed_rate"]).clip(lower=0),
                             arrayminus=(b["observed_rate"] - b["ci_low"]).clip(lower=0), color=col),
                customdata=np.c_[b["n"], b["ci_low"], b["ci_high"]],
                hovertemplate=("mean F %{x:.3f}<br>observed success rate %{y:.3f} [%{customdata[1]:.3f}, "
                               "%{customdata[2]:.3f}]<br>n = %{customdata[0]} (trajectory, step) pairs<extra></extra>")),
                r, c)
        fig.update_xaxes(range=[0, 1], row=r, col=c, title_text="forecast F" if r == rows else None)
        fig.update_yaxes(range=[0, 1], row=r, col=c, title_text="observed success rate" if c == 1 else None)
    _layout(fig, title, height=330 * rows + 110, legend_bottom=True)
    fig.update_layout(legend=dict(y=-0.08 if rows > 1 else -0.2))
    return fig


def drift_figure(tables: dict, colors: dict, by: str) -> go.Figure:
    """Mean next move E[F_{t+1} − F_t] with its 95% interval per forecast bin or step
    (:func:`tpsviz.diagnostics.updating.drift_table`); 0 is rational updating."""
    fig = go.Figure()
    fig.add_hline(y=0, line=dict(color="#999", dash="dot"))
    width = 0.1 if by == "bin" else 1.0
    for i, (name, d) in enumerate(tables.items()):
        if d is None or d.empty:
            continue
        x = (d["group"] + width / 2 if by == "bin" else d["group"]) + (i - (len(tables) - 1) / 2) * width * 0.08
        fig.add_trace(go.Scatter(
            x=x, y=d["mean"], mode="lines+markers", name=plot_label(name),
            line=dict(color=_color(colors, name), width=_width(name)),
            error_y=dict(type="data", symmetric=False, array=d["ci_high"] - d["mean"],
                         arrayminus=d["mean"] - d["ci_low"], thickness=1),
            customdata=np.c_[d["n"]],
            hovertemplate=f"{plot_label(name)}<br>" + ("F in [%{x:.1f}]" if by == "bin" else "step %{x}")
                          + ": mean move %{y:+.3f} (n = %{customdata[0]:,})<extra></extra>"))
    fig.update_xaxes(title="forecast Fₜ (bin)" if by == "bin" else "step t (position among the run's forecasts)",
                     range=[0, 1] if by == "bin" else None)
    fig.update_yaxes(title="mean next move Fₜ₊₁ − Fₜ", zeroline=False)
    fig.update_layout(title="Drift: where does the forecast go next?", height=380, legend_title_text="")
    return fig


def deferral_figure(results: dict, colors: dict) -> go.Figure:
    """Hand off when F_t < τ: mean utility per run over τ (with its pointwise 95% band for up to
    three predictors, and the best τ starred: both ends when the curve is flat at its maximum), and the risk–coverage curve (:func:`tpsviz.monitoring.deferral.deferral` results by predictor)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=["Mean utility per run of 'hand off when F < τ'", "Risk–coverage"])
    bands = len(results) <= 3  # more overlapping bands hide the curves
    for name, r in results.items():
        c, col = r.curve, _color(colors, name)
        if bands and c["ci_low"].notna().any():
            fig.add_trace(go.Scatter(x=np.r_[c["tau"], c["tau"][::-1]], y=np.r_[c["ci_high"], c["ci_low"][::-1]],
                                     fill="toself", fillcolor=_rgba(col, 0.12), line=dict(width=0), showlegend=False,
                                     hoverinfo="skip", legendgroup=name), 1, 1)
        fig.add_trace(go.Scatter(x=c["tau"], y=c["utility"], mode="lines", name=plot_label(name), legendgroup=name,
                                 line=dict(color=col, width=_width(name)),
                                 customdata=np.c_[c["handoff_rate"]],
                                 hovertemplate=f"{plot_label(name)}<br>τ = %{{x:.2f}}: %{{y:.3f}} per run, "
                                               "%{customdata[0]:.0%} handed off<extra></extra>"), 1, 1)
        ends = sorted({r.best_tau_low, r.best_tau_high})  # both ends of a plateau at the maximum
        fig.add_trace(go.Scatter(x=ends, y=[r.best_utility] * len(ends), mode="markers", showlegend=False,
                                 legendgroup=name, marker=dict(color=col, size=10, symbol="star"),
                                 cliponaxis=False,  # a star at τ = 0 or 1 sits on the axis edge
                                 hovertemplate=f"{plot_label(name)}: best τ = {r.best_tau_label()}<extra></extra>"),
                      1, 1)
        fig.add_trace(go.Scatter(x=c["coverage"], y=c["risk"], mode="lines", showlegend=False, legendgroup=name,
                                 line=dict(color=col, width=_width(name), shape="hv"),
                                 hovertemplate=f"{plot_label(name)}<br>coverage %{{x:.0%}}: failure rate %{{y:.1%}}"
                                               "<extra></extra>"), 1, 2)
    # a little room beyond τ = 0 and 1, so a star there is not drawn over the axis and its tick labels
    fig.update_xaxes(title="threshold τ (the Murphy diagram's c)", range=[-0.03, 1.03], row=1, col=1)
    fig.update_yaxes(title="mean utility per run (↑ better)", row=1, col=1)
    fig.update_xaxes(title="coverage: share of runs the agent finishes", range=[0, 1], row=1, col=2)
    fig.update_yaxes(title="risk: failure rate among them (↓ better)", row=1, col=2)
    _layout(fig, None, height=480, legend_bottom=True)
    fig.update_layout(legend=dict(y=-0.25), legend_title_text="")
    return fig


def monitor_figure(windows: pd.DataFrame, colors: dict, x_title: str) -> go.Figure:
    """TPS per run, skill and calibration-in-the-large over sliding windows
    (:func:`tpsviz.monitoring.monitor.monitor`; ``windows`` long, with a ``predictor`` column), each window
    placed at its last run; bands are the 95% intervals (up to three predictors)."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.38, 0.32, 0.30],
                        subplot_titles=["TPS per run (↑ better)", "Skill against each window's success rate (↑ better)",
                                        "Success rate (grey, dotted) and mean forecast (dashed)"])
    groups = list(windows.groupby("predictor", sort=False))
    bands = len(groups) <= 3
    mode = "lines" if windows["window"].nunique() > 3 else "lines+markers"  # one or a few windows: show the points
    for name, w in groups:
        col, x = _color(colors, name), w["key_last"]
        for row, (mid, lo, hi) in enumerate([("tps_mean", "tps_ci_low", "tps_ci_high"),
                                             ("skill", "skill_ci_low", "skill_ci_high")], start=1):
            if bands and w[lo].notna().any():
                fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[w[hi], w[lo][::-1]], fill="toself", mode="lines",
                                         fillcolor=_rgba(col, 0.12), line=dict(width=0), showlegend=False,
                                         hoverinfo="skip", legendgroup=name), row, 1)
            fig.add_trace(go.Scatter(
                x=x, y=w[mid], mode=mode, name=plot_label(name), legendgroup=name, showlegend=row == 1,
                line=dict(color=col, width=_width(name)), customdata=np.c_[w[lo], w[hi], w["n_runs"]],
                hovertemplate=f"{plot_label(name)}<br>window ending %{{x}}: %{{y:.3f}} "
                              "[%{customdata[0]:.3f}, %{customdata[1]:.3f}], %{customdata[2]} runs<extra></extra>"), row, 1)
        fig.add_trace(go.Scatter(x=x, y=w["mean_forecast"], mode=mode, legendgroup=name, showlegend=False,
                                 line=dict(color=col, width=1.5, dash="dash"),
                                 hovertemplate=f"{plot_label(name)}: mean forecast %{{y:.2f}}<extra></extra>"), 3, 1)
    if groups:
        w = groups[0][1]
        fig.add_trace(go.Scatter(x=w["key_last"], y=w["rate"], mode=mode, name="success rate",
                                 line=dict(color="#888", width=2.5, dash="dot"),
                                 hovertemplate="success rate %{y:.2f}<extra></extra>"), 3, 1)
    fig.add_hline(y=0, line=dict(color="#999", dash="dot"), row=2, col=1)
    fig.update_yaxes(title="TPS / run", row=1, col=1)
    fig.update_yaxes(title="skill", row=2, col=1)
    fig.update_yaxes(title="rate / mean F", range=[0, 1], row=3, col=1)
    fig.update_xaxes(title=x_title, row=3, col=1)
    fig.update_layout(height=720, legend_title_text="", hovermode="closest")
    return fig


def cusum_figure(runs: pd.DataFrame, alarm, color: str, x_title: str) -> go.Figure:
    """The CUSUM statistic S_i of one predictor over the runs, its threshold h, the in-control part
    and the alarms (:class:`tpsviz.monitoring.monitor.Alarm`)."""
    fig = go.Figure()
    ok = np.isfinite(alarm.statistic)
    x = runs["key"].to_numpy()[ok]
    if alarm.n_baseline and ok.any():
        fig.add_vrect(x0=x[0], x1=x[min(alarm.n_baseline, x.size) - 1], fillcolor="#888", opacity=0.10,
                      line_width=0, annotation_text="in-control part", annotation_position="top left")
    fig.add_trace(go.Scatter(x=x, y=alarm.statistic[ok], mode="lines", name="CUSUM S", line=dict(color=color, width=2),
                             hovertemplate="%{x}: S = %{y:.2f}<extra></extra>"))
    # (at the right: the in-control part's label sits at the top left, where the line may pass)
    fig.add_hline(y=alarm.h, line=dict(color="#c0392b", dash="dash"), annotation_text=f"threshold h = {alarm.h:.2f}",
                  annotation_position="bottom right")
    if len(alarm.alarms):
        a = alarm.alarms
        fig.add_trace(go.Scatter(x=a["key"], y=np.full(len(a), alarm.h), mode="markers", name="alarm",
                                 marker=dict(color="#c0392b", size=11, symbol="x"),
                                 customdata=np.c_[a["start_key"].astype(str)],
                                 hovertemplate="alarm at %{x}<br>excursion from %{customdata[0]}<extra></extra>"))
    fig.update_xaxes(title=x_title)
    # a two-line axis title: one line as long as the plot is high ran into the figure's title
    fig.update_yaxes(title="CUSUM statistic S<br>(↑ = evidence of a drop)", rangemode="tozero")
    fig.update_layout(title=f"Degradation alarm on {plot_label(alarm.predictor)}", height=380, legend_title_text="")
    return fig


def ovr_reliability_figure(tables: dict, labels: list, colors: dict) -> go.Figure:
    """One-vs-rest reliability of a multi-class log, one panel per label: observed frequency of the
    label against the mean forecast probability of it, per bin, with 95% run-bootstrap intervals
    (:func:`tpsviz.outcomes.multiclass_reliability.reliability_ovr` tables by predictor)."""
    k = len(labels)
    cols = min(k, 3)
    rows = (k + cols - 1) // cols
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"P({html.escape(str(lab))})" for lab in labels],
                        horizontal_spacing=0.07, vertical_spacing=0.14)
    for i, lab in enumerate(labels):
        r, c = i // cols + 1, i % cols + 1
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dot"),
                                 showlegend=False, hoverinfo="skip"), r, c)
        for name, tab in tables.items():
            d = tab[tab["label"] == lab]
            d = d[d["n"] > 0]
            fig.add_trace(go.Scatter(
                x=d["mean_forecast"], y=d["observed"], mode="lines+markers", name=plot_label(name), legendgroup=name,
                showlegend=i == 0, line=dict(color=_color(colors, name), width=_width(name)),
                error_y=dict(type="data", symmetric=False, array=d["ci_high"] - d["observed"],
                             arrayminus=d["observed"] - d["ci_low"], thickness=1),
                customdata=np.c_[d["n"], d["n_runs"]],
                hovertemplate=f"{plot_label(name)}<br>forecast %{{x:.2f}} → observed %{{y:.2f}} "
                              "(%{customdata[0]:,} steps, %{customdata[1]:,} runs)<extra></extra>"), r, c)
        fig.update_xaxes(range=[-0.03, 1.03], title="forecast probability" if r == rows else None, row=r, col=c)
        fig.update_yaxes(range=[-0.03, 1.03], title="observed frequency" if c == 1 else None, row=r, col=c)
    fig.update_layout(height=380 * rows, legend_title_text="", title="One-vs-rest reliability (complete runs)")
    return fig


def pit_figure(hists: dict, tests: dict, colors: dict) -> go.Figure:
    """PIT histograms of continuous forecasts, one panel per predictor: bar heights relative to a
    uniform PIT (1 = calibrated; U-shape = too narrow, hump = too wide, slope = biased), with the
    χ² p-value of each in its title (:func:`tpsviz.outcomes.continuous_pit.pit_histogram`)."""
    names = list(hists)
    cols = min(len(names), 3) or 1
    rows = (len(names) + cols - 1) // cols or 1
    titles = [f"{plot_label(n)}: p = {tests[n]['p_value']:.2g}" if np.isfinite(tests[n]["p_value"]) else plot_label(n)
              for n in names]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.07, vertical_spacing=0.16)
    # one scale for every panel, so that a taller bar means the same everywhere
    top = 1.05 * max([1.0] + [float((t["count"] / t["expected"].where(t["expected"] > 0)).max()) for t in hists.values()
                              if (t["expected"] > 0).any()])
    for i, name in enumerate(names):
        r, c = i // cols + 1, i % cols + 1
        t = hists[name]
        rel = t["count"] / t["expected"].where(t["expected"] > 0)
        fig.add_trace(go.Bar(x=(t["bin_low"] + t["bin_high"]) / 2, y=rel, width=t["bin_high"] - t["bin_low"],
                             marker=dict(color=_color(colors, name), line=dict(color="#fff", width=1)),
                             name=plot_label(name), showlegend=False, customdata=np.c_[t["count"]],
                             hovertemplate="PIT %{x:.2f}: %{customdata[0]:,} (×%{y:.2f} of uniform)<extra></extra>"),
                      r, c)
        fig.add_hline(y=1, line=dict(color="#333", dash="dash"), row=r, col=c)
        fig.update_xaxes(range=[0, 1], title="PIT" if r == rows else None, row=r, col=c)
        fig.update_yaxes(title="× uniform" if c == 1 else None, range=[0, top], row=r, col=c)
    fig.update_layout(height=320 * rows, title="PIT histograms (flat = calibrated)", bargap=0)
    return fig


def histogram_figure(hists: pd.DataFrame, colors: dict, title: str = "Forecast histograms") -> go.Figure:
    """Forecast histograms (aggregated): columns predictor, bin_lo, bin_hi, count."""
    fig = go.Figure()
    for name in colors:
        h = hists[hists["predictor"] == name]
        if h.empty:
            continue
        mid = (h["bin_lo"] + h["bin_hi"]) / 2
        share = h["count"] / max(h["count"].sum(), 1)
        fig.add_trace(go.Scatter(x=mid, y=share, mode="lines", line=dict(color=_color(colors, name),
                                 width=_width(name), shape="hvh"), name=plot_label(name),
                                 hovertemplate=f"{plot_label(name)}<br>F≈%{{x:.2f}}: %{{y:.1%}} of forecasts<extra></extra>"))
    fig.update_xaxes(title="forecast F", range=[0, 1])
    fig.update_yaxes(title="share of forecasts", tickformat=".0%")
    return _layout(fig, title, height=360)


def decomposition_figure(dec: pd.DataFrame, colors: dict, alpha: float, beta: float) -> go.Figure:
    """MCB / DSC / UNC bars per predictor. ``dec``: predictor, mcb, dsc, unc (loss units)."""
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08, subplot_titles=[
        "MCB miscalibration (↓)", "DSC discrimination (↑)", "UNC uncertainty (same for all)"])
    names = [plot_label(p) for p in dec["predictor"]]
    cols = [_color(colors, p) for p in dec["predictor"]]
    for j, key in enumerate(("mcb", "dsc", "unc")):
        fig.add_trace(go.Bar(x=names, y=dec[key], marker_color=cols, showlegend=False,
                             hovertemplate=f"%{{x}}<br>{key.upper()} = %{{y:.4g}}<extra></extra>"), 1, j + 1)
    fig.update_yaxes(title_text=f"loss units ({score_unit(alpha, beta)})", row=1, col=1)
    fig.update_xaxes(tickangle=-35)
    return _layout(fig, "CORP decomposition: mean loss = MCB − DSC + UNC", height=360)


def decomposition_by_step_figure(dec: pd.DataFrame, colors: dict, alpha: float, beta: float) -> go.Figure:
    """MCB and DSC per step t for each predictor (two panels). ``dec``: predictor, step, mcb, dsc."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["MCB by step (↓ better)", "DSC by step (↑ better)"])
    for name in colors:
        d = dec[dec["predictor"] == name]
        if d.empty:
            continue
        for j, key in enumerate(("mcb", "dsc")):
            fig.add_trace(go.Scatter(x=d["step"], y=d[key], mode="lines", name=plot_label(name),
                                     legendgroup=name, showlegend=(j == 0),
                                     line=dict(color=_color(colors, name), width=_width(name)),
                                     hovertemplate=f"{plot_label(name)} step %{{x}}: {key.upper()} %{{y:.3g}}<extra></extra>"),
                          1, j + 1)
    fig.update_xaxes(title_text="step t")
    integer_ticks(fig)
    fig.update_yaxes(title_text=f"{score_unit(alpha, beta)}", row=1, col=1)
    return _layout(fig, "Where along the run: miscalibration and discrimination per step", height=380,
                   legend_bottom=True)


def murphy_figure(curves: pd.DataFrame, colors: dict, c: np.ndarray, w: np.ndarray,
                  alpha: float, beta: float) -> go.Figure:
    """Murphy diagram: mean elementary loss against threshold c, with ω_{α,β}(c) shaded.

    ``curves``: predictor, c, loss.
    """
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    wf = np.where(np.isfinite(w), w, np.nan)
    top = np.nanmax(wf) if np.isfinite(wf).any() else 1
    fig.add_trace(go.Scatter(x=c, y=wf / top, fill="tozeroy", line=dict(color="rgba(0,114,178,0.3)", width=0),
                             fillcolor="rgba(0,114,178,0.12)", name=f"ω(c), α={alpha:g}, β={beta:g} (right axis)",
                             hovertemplate="c=%{x:.2f}: relative weight %{y:.2f}<extra></extra>"), secondary_y=True)
    for name in colors:
        d = curves[curves["predictor"] == name]
        if d.empty:
            continue
        fig.add_trace(go.Scatter(x=d["c"], y=d["loss"], mode="lines", name=plot_label(name),
                                 line=dict(color=_color(colors, name), width=_width(name)),
                                 hovertemplate=f"{plot_label(name)}<br>c=%{{x:.2f}}: mean ℓ_c %{{y:.4f}}<extra></extra>"),
                      secondary_y=False)
    fig.update_xaxes(title="decision threshold c (act as if success when F ≥ c)", range=[0, 1])
    fig.update_yaxes(title_text="mean elementary loss ℓ_c (↓ better)", secondary_y=False, rangemode="tozero")
    # tickmode "auto": plotly.js otherwise syncs an overlaying axis's ticks to the left grid (0.183, 0.366, …)
    fig.update_yaxes(title_text="ω(c), relative", secondary_y=True, showgrid=False, rangemode="tozero",
                     tickmode="auto")
    return _layout(fig, "Murphy diagram: loss at every decision threshold")


def schedule_figure(t: np.ndarray, w: np.ndarray, formula: str, verdict: str) -> go.Figure:
    """The weight schedule w_t drawn as bars, titled with its propriety verdict."""
    col = {"strictly proper": "#009E73", "not proper": "#D55E00"}.get(verdict, "#E69F00")
    fig = go.Figure(go.Bar(x=t, y=w, marker_color=col, hovertemplate="t=%{x}: w_t=%{y:.3g}<extra></extra>"))
    fig.update_xaxes(title="step t")
    integer_ticks(fig)
    fig.update_yaxes(title="weight w_t")
    return _layout(fig, f"{formula} — {verdict}", height=300)


def demo_bars_figure(table: pd.DataFrame, title: str, colors: list | None = None,
                     errors: dict | None = None) -> go.Figure:
    """Bars for a why-not-AUROC demonstration.

    ``table``: rows = forecasts (index), columns = metric names; each metric in its own facet
    (different units), with the metric's direction in the facet title. ``colors``: one colour per
    row (the predictor's own colour; modified forecasts grey). ``errors``: column → half-widths
    of an interval drawn on the bars. Values below 1e-9 in magnitude (floating-point noise, e.g.
    a T-ECE that is 0 by construction) are drawn as 0 and labelled "≈0", so noise never fills an axis.
    """
    metrics = list(table.columns)
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=metrics, horizontal_spacing=0.18)
    cols = colors or ["#777777"] * len(table)
    labels = [plot_label(n) for n in table.index]
    for j, m in enumerate(metrics):
        v = table[m].to_numpy(dtype=float)
        tiny = np.isfinite(v) & (np.abs(v) < 1e-9)
        v = np.where(tiny, 0.0, v)
        err = None
        if errors and m in errors:
            err = dict(type="data", array=np.asarray(errors[m], dtype=float), color="#444", thickness=1.5)
        # a value with an interval is labelled inside its bar, at the zero end: outside, the whisker ran
        # through the label
        place = dict(textposition="inside", insidetextanchor="start", textfont_color="white") if err else dict(
            textposition="outside")
        fig.add_trace(go.Bar(x=labels, y=v, marker_color=cols, error_y=err,
                             text=["≈0" if t else f"{x:.3g}" for x, t in zip(v, tiny)], **place,
                             showlegend=False, cliponaxis=False,
                             hovertemplate=f"%{{x}}<br>{m}: %{{y:.4g}}<extra></extra>"), 1, j + 1)
        if np.all(np.abs(v[np.isfinite(v)]) < 1e-9):
            fig.update_yaxes(range=[0, 1], row=1, col=j + 1)
    fig.update_yaxes(rangemode="tozero")
    fig.update_xaxes(tickangle=-20)
    return _layout(fig, title or None, height=340)
