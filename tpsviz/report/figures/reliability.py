"""Figures of calibration and updating: reliability diagrams with the CORP curve and its
consistency band, forecast histograms, the CORP decomposition (overall and by step) and the drift
of the next forecast (tpsviz.diagnostics.reliability, decomposition, updating)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tpsviz.core.scores import score_unit
from tpsviz.report.figures.style import apply_layout, by_predictor, color_of, integer_ticks, line_width, plot_label

__all__ = ["band_steps", "reliability_figure", "histogram_figure", "decomposition_figure",
           "decomposition_by_step_figure", "drift_figure"]


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
        col = color_of(colors, p["name"])
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
    apply_layout(fig, title, height=330 * rows + 110, legend_bottom=True)
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
            line=dict(color=color_of(colors, name), width=line_width(name)),
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


def histogram_figure(hists: pd.DataFrame, colors: dict, title: str = "Forecast histograms") -> go.Figure:
    """Forecast histograms (aggregated): columns predictor, bin_lo, bin_hi, count."""
    fig = go.Figure()
    for name, h in by_predictor(hists, colors):
        mid = (h["bin_lo"] + h["bin_hi"]) / 2
        share = h["count"] / max(h["count"].sum(), 1)
        fig.add_trace(go.Scatter(x=mid, y=share, mode="lines", line=dict(color=color_of(colors, name),
                                 width=line_width(name), shape="hvh"), name=plot_label(name),
                                 hovertemplate=f"{plot_label(name)}<br>F≈%{{x:.2f}}: %{{y:.1%}} of forecasts<extra></extra>"))
    fig.update_xaxes(title="forecast F", range=[0, 1])
    fig.update_yaxes(title="share of forecasts", tickformat=".0%")
    return apply_layout(fig, title, height=360)


def decomposition_figure(dec: pd.DataFrame, colors: dict, alpha: float, beta: float) -> go.Figure:
    """MCB / DSC / UNC bars per predictor. ``dec``: predictor, mcb, dsc, unc (loss units)."""
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08, subplot_titles=[
        "MCB miscalibration (↓)", "DSC discrimination (↑)", "UNC uncertainty (same for all)"])
    names = [plot_label(p) for p in dec["predictor"]]
    cols = [color_of(colors, p) for p in dec["predictor"]]
    for j, key in enumerate(("mcb", "dsc", "unc")):
        fig.add_trace(go.Bar(x=names, y=dec[key], marker_color=cols, showlegend=False,
                             hovertemplate=f"%{{x}}<br>{key.upper()} = %{{y:.4g}}<extra></extra>"), 1, j + 1)
    fig.update_yaxes(title_text=f"loss units ({score_unit(alpha, beta)})", row=1, col=1)
    fig.update_xaxes(tickangle=-35)
    return apply_layout(fig, "CORP decomposition: mean loss = MCB − DSC + UNC", height=360)


def decomposition_by_step_figure(dec: pd.DataFrame, colors: dict, alpha: float, beta: float) -> go.Figure:
    """MCB and DSC per step t for each predictor (two panels). ``dec``: predictor, step, mcb, dsc."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["MCB by step (↓ better)", "DSC by step (↑ better)"])
    for name, d in by_predictor(dec, colors):
        for j, key in enumerate(("mcb", "dsc")):
            fig.add_trace(go.Scatter(x=d["step"], y=d[key], mode="lines", name=plot_label(name),
                                     legendgroup=name, showlegend=(j == 0),
                                     line=dict(color=color_of(colors, name), width=line_width(name)),
                                     hovertemplate=f"{plot_label(name)} step %{{x}}: {key.upper()} %{{y:.3g}}<extra></extra>"),
                          1, j + 1)
    fig.update_xaxes(title_text="step t")
    integer_ticks(fig)
    fig.update_yaxes(title_text=f"{score_unit(alpha, beta)}", row=1, col=1)
    return apply_layout(fig, "Where along the run: miscalibration and discrimination per step", height=380,
                   legend_bottom=True)
