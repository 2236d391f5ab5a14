"""Figures that compare predictors: the leaderboard (mean TPS with its interval), the paired Δ/SE
matrix and the bars of a why-not-AUROC demonstration (tpsviz.diagnostics.demonstrators)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tpsviz.report.figures.style import apply_layout, color_of, is_reference, plot_label, score_label

__all__ = ["leaderboard_figure", "delta_matrix_figure", "demo_bars_figure"]


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
                textposition="middle right", marker=dict(color=color_of(colors, name), size=12, symbol="triangle-left"),
                showlegend=False, hovertemplate=(f"<b>{plot_label(name)}</b><br>mean TPS = "
                                                 f"{'−∞' if m == -np.inf else 'undefined'}<extra></extra>")))
            continue
        fig.add_trace(go.Scatter(
            x=[m], y=[plot_label(name)], mode="markers",
            marker=dict(color=color_of(colors, name), size=13 if is_reference(name) else 10,
                        symbol="diamond" if is_reference(name) else "circle"),
            error_x=dict(type="data", symmetric=False, array=[hi - m if np.isfinite(hi) else 0],
                         arrayminus=[m - lo if np.isfinite(lo) else 0], color=color_of(colors, name),
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
    return apply_layout(fig, title, height=max(220, 60 + 42 * len(s)))


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
