"""Figures of censoring: run lengths of complete and censored runs, mean TPS by censoring
treatment, the q_Z sensitivity band, the artificial-censoring check and the Monte-Carlo audit of
q_Z (docs/theory.md §4)."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from tpsviz.diagnostics.reliability import wilson_interval
from tpsviz.report.figures.style import (
    apply_layout, by_predictor, color_of, integer_ticks, line_width, plot_label, score_label)

__all__ = ["length_histogram_figure", "censoring_modes_figure", "qz_band_figure", "artificial_check_figure",
           "mc_audit_figure"]


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
    return apply_layout(fig, "Run length: complete vs censored")


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
                        color=[color_of(colors, p) for p in t["predictor"]],
                        line=dict(color="#000" if cur else "#333", width=2.5 if cur else 1)),
            error_x=dict(type="data", symmetric=False, array=(t["tps_ci_high"] - t["tps_mean"]).fillna(0),
                         arrayminus=(t["tps_mean"] - t["tps_ci_low"]).fillna(0), color="#666"),
            customdata=np.c_[t["predictor"], t["tps_ci_low"], t["tps_ci_high"], t["n_trajectories"]],
            hovertemplate=(f"{mode}<br>%{{customdata[0]}}: %{{x:.4g}} [%{{customdata[1]:.4g}}, "
                           "%{customdata[2]:.4g}]<br>n = %{customdata[3]} runs<extra></extra>")))
    fig.update_yaxes(tickvals=list(range(len(preds))), ticktext=[plot_label(p) for p in preds],
                     autorange="reversed")
    fig.update_xaxes(title=score_label(alpha, beta))
    return apply_layout(fig, "Mean TPS (95% CI) by censoring treatment", height=max(300, 80 + 55 * len(preds)))


#: the y ticks of the q_Z band: four significant digits, no trailing zeros (the axis of a band that
#: moved only in its last digits read "-6.715668866680235105")
BAND_TICKS = ".4~g"
NO_CENSORED_NOTE = "No run is censored: q_Z changes no score, so every line is flat."


def qz_band_figure(sweep: pd.DataFrame, colors: dict, alpha: float, beta: float,
                   marks: dict | None = None, n_censored: int | None = None) -> go.Figure:
    """Mean TPS against a common q_Z for every censored run (linear in q_Z: a band with no model).

    ``sweep`` columns: predictor, q_z, tps_mean (:func:`tpsviz.diagnostics.populations.qz_band`).
    ``n_censored``: the log's censored runs; with none the lines are flat and a note says why. The y
    ticks are rounded (:data:`BAND_TICKS`), and a band narrower than its rounding gets a range wide
    enough for distinct ticks.
    """
    fig = go.Figure()
    for name, s in by_predictor(sweep, colors):
        fig.add_trace(go.Scatter(x=s["q_z"], y=s["tps_mean"], mode="lines", name=plot_label(name),
                                 line=dict(color=color_of(colors, name), width=line_width(name)),
                                 hovertemplate=f"{plot_label(name)}<br>q_Z=%{{x:.2f}}: mean TPS %{{y:.4g}}<extra></extra>"))
    for label, x in (marks or {}).items():
        fig.add_vline(x=x, line=dict(color="#999", dash="dot"), annotation_text=label)
    fig.update_xaxes(title="q_Z given to every censored run (0 = simple: censoring as failure)", range=[0, 1])
    fig.update_yaxes(title=score_label(alpha, beta, short=True), tickformat=BAND_TICKS)
    y = sweep["tps_mean"].to_numpy(dtype=float)
    y = y[np.isfinite(y)]
    if y.size and y.max() - y.min() <= 1e-6 * max(1.0, float(np.abs(y).max())):  # flat: a range of its own
        mid, half = float(y.mean()), max(0.05 * abs(float(y.mean())), 0.01)
        fig.update_yaxes(range=[mid - half, mid + half])
    if n_censored == 0:
        fig.add_annotation(text=NO_CENSORED_NOTE, xref="paper", yref="paper", x=0.5, y=1.0, yanchor="bottom",
                           showarrow=False, font=dict(color="#555"))
    return apply_layout(fig, "Sensitivity of mean TPS to q_Z (the band spans every possible q_Z)")


def artificial_check_figure(check: pd.DataFrame, colors: dict) -> go.Figure:
    """Absolute error |direct − closed form| per predictor (max and median), log scale, predictors
    in the order of ``colors`` (the order everywhere else). An error of exactly 0 cannot sit on a
    log axis: its bar is drawn as a stub at 1e−17 and labelled "0"."""
    g = check.groupby("predictor", sort=False)["abs_error"].agg(["max", "median"])
    g = g.reindex([p for p in colors if p in g.index] + [p for p in g.index if p not in colors]).reset_index()
    zero = g["max"].to_numpy() == 0
    fig = go.Figure(go.Bar(x=[plot_label(p) for p in g["predictor"]], y=np.maximum(g["max"], 1e-17),
                           marker_color=[color_of(colors, p) for p in g["predictor"]],
                           text=["0" if z else "" for z in zero], textposition="outside",
                           customdata=np.where(zero, "0 (exact)", [f"{v:.2e}" for v in g["max"]]),
                           hovertemplate="%{x}: max |direct − closed form| = %{customdata}<extra></extra>"))
    fig.update_yaxes(type="log", title="max |direct − closed form|", range=[-18, 0])
    fig.add_hline(y=1e-9, line=dict(color="#999", dash="dot"), annotation_text="1e−9")
    return apply_layout(fig, "Artificial censoring: closed form vs direct difference", height=300)


def mc_audit_figure(audit: pd.DataFrame) -> go.Figure:
    """q̂_Z from rollouts with its 95% Wilson interval per censored run, sorted, with the log's q_Z
    if given.

    Wilson, not ±1.96 SE: the SE is 0 where every rollout agrees (q̂ = 0 or 1), which drew no bar
    at all from a handful of rollouts, and ± SE ran below 0 near it. The log's q_Z is drawn as a
    larger hollow ring so that it stays visible where it equals q̂_Z.
    """
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
    return apply_layout(fig, "Monte-Carlo audit: continuation success per censored run (95% Wilson interval)")
