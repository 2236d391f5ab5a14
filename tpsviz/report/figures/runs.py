"""One run on the Runs page: its forecasts over the steps above, each step's contribution w_t·S
below, the largest forecast moves marked and the chosen step drawn as a line (issue 46).

It draws :func:`tpsviz.diagnostics.runs.run_steps` and :func:`~tpsviz.diagnostics.runs.run_moves`;
every point carries its step in ``customdata``, so a click on the curve names a step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tpsviz.core.scores import score_unit
from tpsviz.report.figures.style import apply_layout, color_of, integer_ticks, line_width, plot_label

__all__ = ["run_figure"]


def _forecast_traces(fig: go.Figure, steps: pd.DataFrame, predictors, colors: dict) -> None:
    for name in predictors:
        label = plot_label(name)
        fig.add_trace(go.Scatter(
            x=steps["step"], y=steps[f"F {name}"], customdata=steps["step"], mode="lines+markers", name=label,
            legendgroup=label, line=dict(color=color_of(colors, name), width=line_width(name)), marker=dict(size=7),
            hovertemplate=f"{label}<br>step %{{x}}: F = %{{y:.3f}}<extra>click: show this step</extra>"), row=1, col=1)
        fig.add_trace(go.Scatter(
            x=steps["step"], y=steps[f"w·S {name}"], customdata=steps["step"], mode="lines+markers", name=label,
            legendgroup=label, showlegend=False, line=dict(color=color_of(colors, name), width=1.5, dash="dot"),
            marker=dict(size=6), hovertemplate=f"{label}<br>step %{{x}}: w·S = %{{y:.4g}}<extra></extra>"),
            row=2, col=1)


def _move_traces(fig: go.Figure, moves: pd.DataFrame, colors: dict) -> None:
    if moves is None or not len(moves):
        return
    for name, part in moves.groupby("predictor", sort=False):
        label = plot_label(name)
        # the move is written at each predictor's largest one only: several predictors' labels overlap
        big = int(np.argmax(np.abs(part["move"].to_numpy(dtype=float))))
        text = [f"{m:+.2f}" if i == big else "" for i, m in enumerate(part["move"])]
        fig.add_trace(go.Scatter(
            x=part["step"], y=part["after"], customdata=part["step"], mode="markers+text", text=text,
            textposition="top center", textfont=dict(size=11, color=color_of(colors, name)),
            name=f"largest moves of {label}", legendgroup=label, showlegend=False,
            marker=dict(symbol="circle-open", size=16, color=color_of(colors, name),
                        line=dict(width=2.5, color=color_of(colors, name))),
            hovertext=[f"{m:+.3f}" for m in part["move"]],
            hovertemplate=f"{label}: F moved %{{hovertext}} into step %{{x}}<extra>a largest move</extra>"), row=1, col=1)


def _end_marker(fig: go.Figure, last: int, outcome: float, censored: bool, q_z: float | None) -> None:
    if censored:
        fig.add_vline(x=last, line=dict(color="#555", dash="dash"), row=1, col=1)
        if q_z is not None and np.isfinite(q_z):
            fig.add_trace(go.Scatter(x=[last], y=[q_z], mode="markers", name=f"q_Z = {q_z:.2f}",
                                     marker=dict(symbol="star", size=14, color="#555"),
                                     hovertemplate="q_Z, the evaluator's P(success | history at Z) = %{y:.3f}"
                                                   "<extra></extra>"), row=1, col=1)
        return
    if outcome in (0.0, 1.0):
        label = "success (Y = 1)" if outcome == 1 else "failure (Y = 0)"
        fig.add_trace(go.Scatter(x=[last], y=[outcome], mode="markers", name=f"outcome: {label}",
                                 marker=dict(symbol="circle" if outcome == 1 else "x", size=14,
                                             color="#009E73" if outcome == 1 else "#D55E00",
                                             line=dict(color="#333", width=1)),
                                 hovertemplate=f"outcome {label}<extra></extra>"), row=1, col=1)


def run_figure(steps: pd.DataFrame, predictors, colors: dict, moves: pd.DataFrame | None, chosen: int | None,
               outcome: float, censored: bool, q_z: float | None, alpha: float, beta: float,
               title: str | None = None) -> go.Figure:
    """One run's forecasts F_t (top) and contributions w_t·S (bottom) over its steps.

    Parameters
    ----------
    steps : DataFrame
        :func:`tpsviz.diagnostics.runs.run_steps`'s: ``step`` and per predictor ``F <p>`` and
        ``w·S <p>``.
    predictors : list of str
    colors : dict
        Predictor → colour (:func:`tpsviz.report.figures.style.predictor_colors`).
    moves : DataFrame or None
        :func:`tpsviz.diagnostics.runs.run_moves`'s: circled, with the move written above.
    chosen : int or None
        The step shown beside the figure: a vertical line.
    outcome : float
        1.0, 0.0 or NaN; drawn at the last step unless ``censored``.
    censored : bool
        Censored runs get a dashed line at Z and q_Z as a star when given.
    q_z : float or None
    alpha, beta : float
        The score family, for the unit of the contributions' axis.
    title : str, optional
        Plain text (escaped by the caller for plotly).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.62, 0.38])
    _forecast_traces(fig, steps, predictors, colors)
    _move_traces(fig, moves, colors)
    last = int(steps["step"].max()) if len(steps) else 1
    _end_marker(fig, last, outcome, censored, q_z)
    if chosen is not None:
        fig.add_vline(x=chosen, line=dict(color="#888", width=6), opacity=0.25)
    fig.update_yaxes(title_text="F_t = P(success)", range=[-0.05, 1.12], row=1, col=1)
    fig.update_yaxes(title_text=f"w_t·S ({score_unit(alpha, beta)})", row=2, col=1)
    fig.update_xaxes(title_text="step", row=2, col=1)
    integer_ticks(fig)
    fig.update_layout(clickmode="event+select", hovermode="closest")
    return apply_layout(fig, title, height=520)
