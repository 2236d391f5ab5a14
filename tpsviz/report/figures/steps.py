"""Figures along the steps of a run: the per-step contribution w_t·S as a (run × step) heatmap, its
mean by step, and one run's forecasts. The ``prepare_*`` functions aggregate the step
contributions a :class:`~tpsviz.core.tps.TPSResult` returns into what the figures draw, so that
a figure ships aggregates, never raw steps."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from tpsviz.core.scores import score_unit
from tpsviz.report.figures.style import apply_layout, by_predictor, color_of, integer_ticks, line_width, plot_label

__all__ = ["prepare_heatmap", "contribution_heatmap_figure", "prepare_step_means", "step_means_figure",
           "trajectory_figure"]


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
    return apply_layout(fig, f"Per-step contribution w_t·S for {plot_label(predictor)} "
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
    for name, m in by_predictor(means, colors):
        col = color_of(colors, name)
        x = m["t"].to_numpy()
        y = m["mean"].to_numpy()
        se = np.nan_to_num(m["se"].to_numpy())
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[y + se, (y - se)[::-1]], fill="toself",
                                 fillcolor=col, opacity=0.15, line=dict(width=0), hoverinfo="skip",
                                 showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=plot_label(name), legendgroup=name,
                                 line=dict(color=col, width=line_width(name)),
                                 customdata=np.c_[se, m["count"]],
                                 hovertemplate=(f"{plot_label(name)}<br>step %{{x}}: mean w_t·S %{{y:.3g}}"
                                                " ± %{customdata[0]:.2g} (SE)<br>n = %{customdata[1]} runs"
                                                "<extra></extra>")))
    fig.update_xaxes(title="step t")
    integer_ticks(fig)
    fig.update_yaxes(title=f"mean w_t·S ({score_unit(alpha, beta)}; ↑ better)")
    return apply_layout(fig, "Mean contribution by step (±1 SE); fewer runs reach late steps")


def trajectory_figure(steps: pd.DataFrame, predictors: list[str], colors: dict, outcome: float,
                      censored: bool, q_z: float | None, title: str) -> go.Figure:
    """F_t of every predictor along one run, with the outcome, the censoring point Z and q_Z."""
    fig = go.Figure()
    for name in predictors:
        col = f"conf_{name}"
        if col not in steps:
            continue
        fig.add_trace(go.Scatter(x=steps["step"], y=steps[col], mode="lines+markers", name=plot_label(name),
                                 line=dict(color=color_of(colors, name), width=line_width(name)),
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
    return apply_layout(fig, title)
