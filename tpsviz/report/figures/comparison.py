"""Figures that compare predictors: the leaderboard (mean TPS with its interval), the paired Δ/SE
matrix and the bars of a why-not-AUROC demonstration (tpsviz.diagnostics.demonstrators)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tpsviz.report.figures.style import apply_layout, color_of, is_reference, layout_dict, plot_label, score_label

__all__ = ["leaderboard_figure", "delta_matrix_figure", "demo_bars_figure"]


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
    traces = [_leaderboard_trace(name, row, bounds[name], colors, level, edge) for name, row in s.iterrows()]
    title = f"Mean TPS with {level:.0%} {ci_label}" if "SE" not in ci_label else f"Mean TPS {ci_label}"
    extra = {}
    if ref_value is not None and np.isfinite(ref_value):  # what fig.add_vline(…, annotation_position="top") adds
        extra = dict(shapes=[dict(type="line", x0=ref_value, x1=ref_value, xref="x", y0=0, y1=1, yref="y domain",
                                  line=dict(color="#777", dash="dot"))],
                     annotations=[dict(text="base-rate reference", showarrow=False, x=ref_value, xref="x", y=1,
                                       yref="y domain", xanchor="center", yanchor="bottom")])
    layout = layout_dict(title, height=max(220, 60 + 42 * len(s)), xaxis=dict(title=dict(text=score_label(alpha, beta))),
                         **extra)
    return go.Figure(data=traces, layout=layout)


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
