"""Figure builders: they take core outputs, return plotly figures, SVG only, units on score axes."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import tpsviz
from tpsviz import figures as F
from tpsviz.reliability import corp_curve, forecast_histogram, reliability_bins

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def data():
    return tpsviz.load(ROOT / "demo_data" / "webshop-like.csv")


@pytest.fixture(scope="module")
def res(data):
    # linear weights: TPSResult.step_contributions currently fails for the uniform schedule (core bug)
    return tpsviz.compute_tps(data, tpsviz.ScoreSettings(n_boot=100, censoring="simple",
                                                         schedule=tpsviz.Schedule("linear")))


def _no_webgl(fig: go.Figure):
    assert not any(t.type.endswith("gl") for t in fig.data)


def test_colors_are_stable_and_reference_is_black():
    c1 = F.predictor_colors(["verbal", "truthful", "noisy"])
    c2 = F.predictor_colors(["verbal", "truthful", "noisy", "verbal@platt"])
    assert c1["truthful"] == F.REFERENCE_COLOR == "#000000"
    assert c1["verbal"] == c2["verbal"] and c1["noisy"] == c2["noisy"]
    assert len(set(c2.values())) == 4
    assert F.display_name("truthful") == "truthful (reference)" and F.display_name("x") == "x"


def test_score_label_has_units_and_direction():
    assert "nats" in F.score_label(0, 0) and "higher is better" in F.score_label(0, 0)
    assert "half-Brier" in F.score_unit(1, 1)
    assert "α=2" in F.score_unit(2, 1)


def test_leaderboard_figure(res, data):
    fig = F.leaderboard_figure(res.summary, F.predictor_colors(data.predictors), 0, 0, ref_value=-15)
    _no_webgl(fig)
    assert len(fig.data) == len(res.summary)
    assert "nats" in fig.layout.xaxis.title.text
    # CI whiskers match the summary
    tr = next(t for t in fig.data if t.name.startswith("truthful"))
    row = res.summary.loc["truthful"]
    assert tr.x[0] == pytest.approx(row["tps_mean"])
    assert tr.x[0] - tr.error_x.arrayminus[0] == pytest.approx(row["tps_ci_low"])


def test_heatmap_aggregates_large_logs(res, data):
    contrib = res.step_contributions(["verbal"])
    h = F.prepare_heatmap(contrib, data.trajectories, max_rows=100)
    assert h["z"].shape[0] == 100 and h["aggregated"]
    assert h["band_size"].sum() == data.n_trajectories
    fig = F.contribution_heatmap_figure(h, "verbal", 0, 0)
    _no_webgl(fig)
    assert np.nanmax(h["z"]) <= 0  # rewards: 0 is perfect


def test_step_means_match_contributions(res, data):
    contrib = res.step_contributions(["truthful", "verbal"])
    m = F.prepare_step_means(contrib)
    direct = contrib[(contrib.predictor == "verbal") & (contrib.t == 3)]["contribution"].mean()
    assert m[(m.predictor == "verbal") & (m.t == 3)]["mean"].iloc[0] == pytest.approx(direct)
    fig = F.step_means_figure(m, F.predictor_colors(["truthful", "verbal"]), 0, 0)
    _no_webgl(fig)
    widths = {t.name: t.line.width for t in fig.data if t.mode == "lines"}
    assert widths["truthful (reference)"] > widths["verbal"]


def test_reliability_and_histogram_figures(data):
    comp = ~data.trajectories["censored"].to_numpy()[data.steps["traj"].to_numpy()]
    y = data.trajectories["outcome"].to_numpy()[data.steps["traj"].to_numpy()][comp]
    panels, hists = [], []
    for name in ("truthful", "verbal"):
        p = data.forecasts(name)[comp]
        panels.append({"name": name, "bins": reliability_bins(p, y), "corp": corp_curve(p, y, n_boot=20)})
        hists.append(forecast_histogram(p).assign(predictor=name))
    colors = F.predictor_colors(data.predictors)
    fig = F.reliability_figure(panels, colors, "t")
    _no_webgl(fig)
    assert len(fig.layout.annotations) >= 2  # one facet title per predictor
    fig2 = F.histogram_figure(pd.concat(hists), colors)
    _no_webgl(fig2)


def test_scoring_figures():
    c = np.linspace(0.01, 0.99, 50)
    fig = F.omega_figure(c, tpsviz.omega(c, 0, 0), 0, 0)
    assert np.nanmax(fig.data[0].y) == pytest.approx(1.0)
    s1, s0 = tpsviz.beta_score_pair(c, 1, 1)
    fig = F.score_curves_figure(c, s1, s0, 1, 1)
    assert "half-Brier" in fig.layout.yaxis.title.text
    s = tpsviz.Schedule("per-length")
    fig = F.schedule_figure(np.arange(1, 6), np.full(5, 0.2), s.formula, s.verdict.status)
    assert "not proper" in fig.layout.title.text


def test_censoring_figures(data):
    fig = F.length_histogram_figure(data.trajectories)
    assert {t.name.split(" ")[0] for t in fig.data} == {"complete", "censored"}
    sweep = pd.DataFrame({"predictor": ["a"] * 3, "q_z": [0, 0.5, 1], "tps_mean": [-3, -2, -1]})
    fig = F.qz_band_figure(sweep, {"a": "#E69F00"}, 0, 0, {"current": 0.5})
    assert list(fig.data[0].y) == [-3, -2, -1]
    t = pd.DataFrame({"predictor": ["a", "a"], "mode": ["x", "y"], "tps_mean": [-1, -2], "tps_ci_low": [-1.5, -2.5],
                      "tps_ci_high": [-0.5, -1.5], "n_trajectories": [10, 12]})
    _no_webgl(F.censoring_modes_figure(t, {"a": "#E69F00"}, 0, 0))


def test_untrusted_names_are_escaped():
    assert F.plot_label("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    fig = F.step_means_figure(pd.DataFrame({"predictor": ["<b>x</b>"], "t": [1], "mean": [-1.0], "se": [0.1],
                                            "count": [3]}), {"<b>x</b>": "#E69F00"}, 0, 0)
    assert all("<b>x" not in (t.name or "") for t in fig.data)


def test_empty_figure():
    fig = F.empty_figure("nothing to show")
    assert fig.layout.annotations[0].text == "nothing to show"
