"""Figures of outcomes other than success/failure (tpsviz.outcomes): one-vs-rest reliability of a
multi-class log and PIT histograms of continuous forecasts."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tpsviz.report.figures.style import color_of, line_width, plot_label

__all__ = ["ovr_reliability_figure", "pit_figure"]


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
                showlegend=i == 0, line=dict(color=color_of(colors, name), width=line_width(name)),
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
                             marker=dict(color=color_of(colors, name), line=dict(color="#fff", width=1)),
                             name=plot_label(name), showlegend=False, customdata=np.c_[t["count"]],
                             hovertemplate="PIT %{x:.2f}: %{customdata[0]:,} (×%{y:.2f} of uniform)<extra></extra>"),
                      r, c)
        fig.add_hline(y=1, line=dict(color="#333", dash="dash"), row=r, col=c)
        fig.update_xaxes(range=[0, 1], title="PIT" if r == rows else None, row=r, col=c)
        fig.update_yaxes(title="× uniform" if c == 1 else None, range=[0, top], row=r, col=c)
    fig.update_layout(height=320 * rows, title="PIT histograms (flat = calibrated)", bargap=0)
    return fig
