"""Figures of tpsviz.diagnostics.monitoring: TPS, skill and calibration over sliding windows, the CUSUM alarm,
and the deferral curves (hand off when F_t < τ; docs/theory.md §10–§11)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tpsviz.report.figures.style import apply_layout, color_of, line_width, plot_label, rgba

__all__ = ["monitor_figure", "cusum_figure", "deferral_figure"]


def monitor_figure(windows: pd.DataFrame, colors: dict, x_title: str) -> go.Figure:
    """TPS per run, skill and calibration-in-the-large over sliding windows
    (:func:`tpsviz.diagnostics.monitoring.monitor.monitor`; ``windows`` long, with a ``predictor`` column), each window
    placed at its last run; bands are the 95% intervals (up to three predictors)."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.38, 0.32, 0.30],
                        subplot_titles=["TPS per run (↑ better)", "Skill against each window's success rate (↑ better)",
                                        "Success rate (grey, dotted) and mean forecast (dashed)"])
    groups = list(windows.groupby("predictor", sort=False))
    bands = len(groups) <= 3
    mode = "lines" if windows["window"].nunique() > 3 else "lines+markers"  # one or a few windows: show the points
    for name, w in groups:
        col, x = color_of(colors, name), w["key_last"]
        for row, (mid, lo, hi) in enumerate([("tps_mean", "tps_ci_low", "tps_ci_high"),
                                             ("skill", "skill_ci_low", "skill_ci_high")], start=1):
            if bands and w[lo].notna().any():
                fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[w[hi], w[lo][::-1]], fill="toself", mode="lines",
                                         fillcolor=rgba(col, 0.12), line=dict(width=0), showlegend=False,
                                         hoverinfo="skip", legendgroup=name), row, 1)
            fig.add_trace(go.Scatter(
                x=x, y=w[mid], mode=mode, name=plot_label(name), legendgroup=name, showlegend=row == 1,
                line=dict(color=col, width=line_width(name)), customdata=np.c_[w[lo], w[hi], w["n_runs"]],
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
    and the alarms (:class:`tpsviz.diagnostics.monitoring.cusum.Alarm`)."""
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


def deferral_figure(results: dict, colors: dict) -> go.Figure:
    """Hand off when F_t < τ: mean utility per run over τ (with its pointwise 95% band for up to
    three predictors, and the best τ starred: both ends when the curve is flat at its maximum), and the
    risk–coverage curve (:func:`tpsviz.diagnostics.monitoring.deferral.deferral` results by predictor)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=["Mean utility per run of 'hand off when F < τ'", "Risk–coverage"])
    bands = len(results) <= 3  # more overlapping bands hide the curves
    for name, r in results.items():
        c, col = r.curve, color_of(colors, name)
        if bands and c["ci_low"].notna().any():
            fig.add_trace(go.Scatter(x=np.r_[c["tau"], c["tau"][::-1]], y=np.r_[c["ci_high"], c["ci_low"][::-1]],
                                     fill="toself", fillcolor=rgba(col, 0.12), line=dict(width=0), showlegend=False,
                                     hoverinfo="skip", legendgroup=name), 1, 1)
        fig.add_trace(go.Scatter(x=c["tau"], y=c["utility"], mode="lines", name=plot_label(name), legendgroup=name,
                                 line=dict(color=col, width=line_width(name)),
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
                                 line=dict(color=col, width=line_width(name), shape="hv"),
                                 hovertemplate=f"{plot_label(name)}<br>coverage %{{x:.0%}}: failure rate %{{y:.1%}}"
                                               "<extra></extra>"), 1, 2)
    # a little room beyond τ = 0 and 1, so a star there is not drawn over the axis and its tick labels
    fig.update_xaxes(title="threshold τ (the Murphy diagram's c)", range=[-0.03, 1.03], row=1, col=1)
    fig.update_yaxes(title="mean utility per run (↑ better)", row=1, col=1)
    fig.update_xaxes(title="coverage: share of runs the agent finishes", range=[0, 1], row=1, col=2)
    fig.update_yaxes(title="risk: failure rate among them (↓ better)", row=1, col=2)
    apply_layout(fig, None, height=480, legend_bottom=True)
    fig.update_layout(legend=dict(y=-0.25), legend_title_text="")
    return fig
