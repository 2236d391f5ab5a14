"""Figures of the scoring rule: the threshold weight ω(c), the score of one forecast, a weight
schedule and the Murphy diagram (the loss at every decision threshold; docs/theory.md §2–§3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tpsviz.core.scores import score_unit
from tpsviz.report.figures.style import apply_layout, by_predictor, color_of, integer_ticks, line_width, plot_label

__all__ = ["omega_figure", "omega_svg", "score_curves_figure", "schedule_figure", "murphy_figure"]


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
        apply_layout(fig, height=150)
        fig.update_layout(margin=dict(l=10, r=10, t=25, b=35), showlegend=False,
                          title=dict(text=f"ω(c) for α={alpha:g}, β={beta:g}", font=dict(size=12), x=0))
        fig.update_xaxes(title=dict(text="threshold c", font=dict(size=11)))
        return fig
    return apply_layout(fig, f"Threshold weight ω(c) = c^(α−1)(1−c)^(β−1), α={alpha:g}, β={beta:g}")


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
    return apply_layout(fig, f"The score of one forecast, α={alpha:g}, β={beta:g}")


def schedule_figure(t: np.ndarray, w: np.ndarray, formula: str, verdict: str) -> go.Figure:
    """The weight schedule w_t drawn as bars, titled with its propriety verdict."""
    col = {"strictly proper": "#009E73", "not proper": "#D55E00"}.get(verdict, "#E69F00")
    fig = go.Figure(go.Bar(x=t, y=w, marker_color=col, hovertemplate="t=%{x}: w_t=%{y:.3g}<extra></extra>"))
    fig.update_xaxes(title="step t")
    integer_ticks(fig)
    fig.update_yaxes(title="weight w_t")
    return apply_layout(fig, f"{formula} — {verdict}", height=300)


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
    for name, d in by_predictor(curves, colors):
        fig.add_trace(go.Scatter(x=d["c"], y=d["loss"], mode="lines", name=plot_label(name),
                                 line=dict(color=color_of(colors, name), width=line_width(name)),
                                 hovertemplate=f"{plot_label(name)}<br>c=%{{x:.2f}}: mean ℓ_c %{{y:.4f}}<extra></extra>"),
                      secondary_y=False)
    fig.update_xaxes(title="decision threshold c (act as if success when F ≥ c)", range=[0, 1])
    fig.update_yaxes(title_text="mean elementary loss ℓ_c (↓ better)", secondary_y=False, rangemode="tozero")
    # tickmode "auto": plotly.js otherwise syncs an overlaying axis's ticks to the left grid (0.183, 0.366, …)
    fig.update_yaxes(title_text="ω(c), relative", secondary_y=True, showgrid=False, rangemode="tozero",
                     tickmode="auto")
    return apply_layout(fig, "Murphy diagram: loss at every decision threshold")
