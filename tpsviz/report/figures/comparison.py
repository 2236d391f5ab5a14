"""Figures that compare predictors: the leaderboard (mean TPS with its interval), the paired Δ/SE
matrix and the bars of a why-not-AUROC demonstration (tpsviz.diagnostics.demonstrators)."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tpsviz.core.schema import clean_text
from tpsviz.report.figures.style import (
    BASE_RATE_LINE,
    apply_layout, color_of, display_name, is_reference, layout_dict, plot_label, score_label)

__all__ = ["leaderboard_figure", "leaderboard_svg", "delta_matrix_figure", "demo_bars_figure"]


def leaderboard_figure(summary: pd.DataFrame, colors: dict, alpha: float, beta: float,
                       ref_value: float | None = None, level: float = 0.95, intervals: dict | None = None,
                       ci_label: str = "bootstrap CI") -> go.Figure:
    """Mean TPS per predictor with its interval (dot and whiskers), best at the top.

    ``summary`` is ``TPSResult.summary`` (index = predictor). ``intervals`` maps a predictor to
    (low, high) to draw instead of the bootstrap CI (e.g. ± 1.96 SE when the bootstrap is off);
    ``ci_label`` names them in the title. A predictor whose mean is −∞ (a forecast of exactly
    0 or 1 under an unbounded score) is drawn as a "−∞" arrow at the left edge.

    The figure is made by one constructor from plain dicts (the traces, the reference line and
    its label in the layout): plotly validates it once, where a trace added at a time, a
    ``add_vline`` and the layout's updates validated it again at each step (30 ms against 11 ms a
    figure on the demo; the dashboard builds it after every change of α).
    """
    s, bounds, edge = _leaderboard_rows(summary, intervals)
    traces = [_leaderboard_trace(name, row, bounds[name], colors, level, edge) for name, row in s.iterrows()]
    title = _leaderboard_title(level, ci_label)
    extra = {}
    if ref_value is not None and np.isfinite(ref_value):  # what fig.add_vline(…, annotation_position="top") adds
        extra = dict(shapes=[dict(type="line", x0=ref_value, x1=ref_value, xref="x", y0=0, y1=1, yref="y domain",
                                  line=dict(color="#777", dash="dot"))],
                     annotations=[dict(text=BASE_RATE_LINE, showarrow=False, x=ref_value, xref="x", y=1,
                                       yref="y domain", xanchor="center", yanchor="bottom")])
    layout = layout_dict(title, height=max(220, 60 + 42 * len(s)), xaxis=dict(title=dict(text=score_label(alpha, beta))),
                         **extra)
    return go.Figure(data=traces, layout=layout)


def leaderboard_svg(summary: pd.DataFrame, colors: dict, alpha: float, beta: float,
                    ref_value: float | None = None, level: float = 0.95, intervals: dict | None = None,
                    ci_label: str = "bootstrap CI", width: int = 720) -> str:
    """:func:`leaderboard_figure` as a static SVG picture: the same rows, whiskers, "−∞" arrows,
    reference line and title, without hover or zoom.

    The dashboard's Overview redraws its leaderboard after every move of α or β. A plotly chart
    there is redrawn in full once the rest of the page is drawn, and on the demo that made a
    nudge about 0.1 s slower in the browser (docs/deployment.md); a picture is decoded at once.
    Predictor names come from the log: they are cleaned, cut to 40 characters and escaped, so
    they are only ever text.

    Parameters
    ----------
    summary, colors, alpha, beta, ref_value, level, intervals, ci_label
        As in :func:`leaderboard_figure`.
    width : int
        Width of the picture in pixels (it scales with its container).

    Returns
    -------
    str
        An ``<svg>`` document.
    """
    s, bounds, edge = _leaderboard_rows(summary, intervals)
    rows = list(s.iterrows())[::-1]  # best first, top down
    labels = [clean_text(display_name(n), 40) for n, _ in rows]
    row_h, top, bottom = 34, 50, 48
    x0 = min(250, 16 + 7.5 * max((len(t) for t in labels), default=4))
    x1, y_end = width - 24, top + row_h * len(rows)
    height = y_end + bottom
    lo_d, hi_d = _svg_domain(s, bounds, edge, ref_value)

    def x(v: float) -> float:
        return x0 + (min(max(v, lo_d), hi_d) - lo_d) / (hi_d - lo_d) * (x1 - x0)

    ticks = [t for t in _nice_ticks(lo_d, hi_d) if lo_d <= t <= hi_d]
    parts = ['<g stroke="#e5e5e5">' + "".join(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{y_end}"/>'
                                                 for t in ticks) + "</g>",
             f'<line x1="{x0}" y1="{y_end}" x2="{x1}" y2="{y_end}" stroke="#999"/>']
    parts += [f'<text x="{x(t):.1f}" y="{y_end + 16}" text-anchor="middle">{text}</text>'
              for t, text in zip(ticks, _tick_texts(ticks))]
    for i, ((name, row), label) in enumerate(zip(rows, labels)):
        parts.append(_svg_row(row, bounds[name], color_of(colors, name), is_reference(name), html.escape(label),
                              top + (i + 0.5) * row_h, x, x(edge), (x0, x1)))
    if ref_value is not None and np.isfinite(ref_value):
        xr, half = x(ref_value), 4 * len(BASE_RATE_LINE)  # (about half the label's width at 14 px: kept inside)
        parts.append(f'<line x1="{xr:.1f}" y1="{top}" x2="{xr:.1f}" y2="{y_end}" stroke="#777" stroke-dasharray="3,3"/>'
                     f'<text x="{min(max(xr, x0 + half), x1 - half):.1f}" y="{top - 5}" text-anchor="middle">'
                     f"{BASE_RATE_LINE}</text>")
    title = html.escape(_leaderboard_title(level, ci_label))
    axis = html.escape(score_label(alpha, beta))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} '
            f'{height}" font-family="Source Sans Pro, Arial, sans-serif" font-size="14" fill="#31333F">'
            f'<title>{title}</title><text x="4" y="20" font-size="16">{title}</text>{"".join(parts)}'
            f'<text x="{(x0 + x1) / 2:.1f}" y="{height - 8}" text-anchor="middle">{axis}</text></svg>')


def _svg_domain(s: pd.DataFrame, bounds: dict, edge: float, ref_value: float | None) -> tuple:
    """The x range of :func:`leaderboard_svg`: every finite mean, interval end, the reference and
    the "−∞" edge, with 4% to spare on each side."""
    vals = [float(v) for n, r in s.iterrows() for v in (r["tps_mean"], *bounds[n])]
    if not np.isfinite(s["tps_mean"]).all():
        vals.append(edge)
    if ref_value is not None:
        vals.append(float(ref_value))
    vals = [v for v in vals if np.isfinite(v)] or [-1.0, 0.0]
    lo, hi = min(vals), max(vals)
    if hi - lo > max(1e-12 * max(abs(lo), abs(hi)), 1e-200):  # a range a tick step can divide
        return lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo)
    return lo - max(abs(lo) * 0.1, 0.5), hi + max(abs(hi) * 0.1, 0.5)


def _nice_ticks(lo: float, hi: float, n: int = 6) -> list:
    """About ``n`` round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) over [lo, hi]."""
    raw = (hi - lo) / max(n, 1)
    mag = 10.0 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [k * step for k in range(int(np.ceil(lo / step)), int(np.floor(hi / step)) + 1)]


def _tick_texts(ticks: list) -> list:
    """The tick labels: the fewest significant digits (at least 3) that write every tick exactly
    enough to tell it from its neighbours (100.25 is not 100.2), minus signs typeset."""
    if not ticks:
        return []
    step = ticks[1] - ticks[0] if len(ticks) > 1 else abs(ticks[0]) or 1.0
    for digits in range(3, 17):
        out = [f"{v:.{digits}g}" for v in ticks]
        if all(abs(float(t) - v) <= 1e-6 * step for t, v in zip(out, ticks)):
            break
    return [t.replace("-", "−") for t in out]


def _svg_row(row, bounds: tuple, color: str, ref: bool, label: str, y: float, x, x_edge: float, plot: tuple) -> str:
    """One predictor of :func:`leaderboard_svg`: its label, and its mean with whiskers or an arrow
    at the left edge when the mean is not finite (``x`` maps a score to the picture, whose plot
    area runs over ``plot`` = (left, right))."""
    m, (lo, hi) = float(row["tps_mean"]), bounds
    out = (f'<text x="{plot[0] - 8}" y="{y + 4:.1f}" text-anchor="end">{label}</text>'
           f'<line x1="{plot[0]}" y1="{y:.1f}" x2="{plot[1]}" y2="{y:.1f}" stroke="#f2f2f2"/>')
    if not np.isfinite(m):
        return out + (f'<polygon points="{x_edge - 6:.1f},{y:.1f} {x_edge + 6:.1f},{y - 7:.1f} {x_edge + 6:.1f},'
                      f'{y + 7:.1f}" fill="{color}"/><text x="{x_edge + 10:.1f}" y="{y + 4:.1f}">'
                      f'{"−∞" if m == -np.inf else "n/a"}</text>')
    a, b = x(lo if np.isfinite(lo) else m), x(hi if np.isfinite(hi) else m)
    out += (f'<g stroke="{color}" stroke-width="2"><line x1="{a:.1f}" y1="{y:.1f}" x2="{b:.1f}" y2="{y:.1f}"/>'
            f'<line x1="{a:.1f}" y1="{y - 5:.1f}" x2="{a:.1f}" y2="{y + 5:.1f}"/>'
            f'<line x1="{b:.1f}" y1="{y - 5:.1f}" x2="{b:.1f}" y2="{y + 5:.1f}"/></g>')
    xm = x(m)
    if ref:
        return out + (f'<polygon points="{xm - 7:.1f},{y:.1f} {xm:.1f},{y - 7:.1f} {xm + 7:.1f},{y:.1f} {xm:.1f},'
                      f'{y + 7:.1f}" fill="{color}"/>')
    return out + f'<circle cx="{xm:.1f}" cy="{y:.1f}" r="5" fill="{color}"/>'


def _leaderboard_rows(summary: pd.DataFrame, intervals: dict | None) -> tuple:
    """The leaderboard's rows, worst first (drawn bottom up), each predictor's (low, high), and the
    left edge where a mean of −∞ is drawn: (ordered summary, {name: (low, high)}, edge)."""
    s = summary.assign(_m=summary["tps_mean"].fillna(-np.inf)).sort_values("_m", ascending=True)
    bounds = {n: intervals[n] if intervals and n in intervals else (r["tps_ci_low"], r["tps_ci_high"])
              for n, r in s.iterrows()}
    finite = s["tps_mean"][np.isfinite(s["tps_mean"])]
    if len(finite):
        lo_all = np.asarray([bounds[n][0] for n in finite.index], dtype=float)
        left = float(np.nanmin(np.r_[finite.to_numpy(), lo_all]))
        edge = left - 0.08 * max(float(finite.max()) - left, 1e-9)
    else:
        edge = -1.0
    return s, bounds, edge


def _leaderboard_title(level: float, ci_label: str) -> str:
    return f"Mean TPS with {level:.0%} {ci_label}" if "SE" not in ci_label else f"Mean TPS {ci_label}"


def _leaderboard_trace(name, row, bounds: tuple, colors: dict, level: float, edge: float) -> dict:
    """One predictor of the leaderboard figure: its mean with whiskers, or an arrow at ``edge``
    when the mean is not finite."""
    m, (lo, hi) = row["tps_mean"], bounds
    label, color = plot_label(name), color_of(colors, name)
    if not np.isfinite(m):
        return dict(type="scatter", x=[edge], y=[label], mode="markers+text", text=["−∞" if m == -np.inf else "n/a"],
                    textposition="middle right", marker=dict(color=color, size=12, symbol="triangle-left"),
                    showlegend=False, hovertemplate=(f"<b>{label}</b><br>mean TPS = "
                                                     f"{'−∞' if m == -np.inf else 'undefined'}<extra></extra>"))
    ref = is_reference(name)
    return dict(type="scatter", x=[m], y=[label], mode="markers",
                marker=dict(color=color, size=13 if ref else 10, symbol="diamond" if ref else "circle"),
                error_x=dict(type="data", symmetric=False, array=[hi - m if np.isfinite(hi) else 0],
                             arrayminus=[m - lo if np.isfinite(lo) else 0], color=color, thickness=2),
                name=label, showlegend=False,
                hovertemplate=(f"<b>{label}</b><br>mean TPS %{{x:.4g}}<br>{level:.0%} CI [{lo:.4g}, {hi:.4g}]<br>"
                               f"n = {int(row['n_trajectories'])} trajectories ({int(row['n_censored'])} "
                               f"censored)<extra></extra>"))


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
    return apply_layout(fig, title, height=max(260, 80 + 40 * len(z)))


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
    return apply_layout(fig, title or None, height=340)
