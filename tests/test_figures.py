"""Figure builders: they take core outputs, return plotly figures, SVG only, units on score axes."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import tpsviz
from tpsviz.core.scores import score_unit
from tpsviz.report import figures as F
from tpsviz.diagnostics.reliability import corp_curve, forecast_histogram, reliability_bins

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def data():
    return tpsviz.load(ROOT / "demo_data" / "webshop-like.csv")


@pytest.fixture(scope="module")
def res(data):
    return tpsviz.compute_tps(data, tpsviz.ScoreSettings(n_boot=100, censoring="simple"))


def _no_webgl(fig: go.Figure):
    assert not any(t.type.endswith("gl") for t in fig.data)


def test_colors_are_stable_and_reference_is_black():
    c1 = F.predictor_colors(["verbal", "truthful", "noisy"])
    c2 = F.predictor_colors(["verbal", "truthful", "noisy", "verbal@platt"])
    assert c1["truthful"] == F.REFERENCE_COLOR == "#000000"
    assert c1["verbal"] == c2["verbal"] and c1["noisy"] == c2["noisy"]
    assert len(set(c2.values())) == 4
    assert F.display_name("truthful") == "truthful = true probability (synthetic)" and F.display_name("x") == "x"
    assert F.display_name("ref:task+step") == "ref:task+step (reference forecaster)"  # never the agent's


def test_score_label_has_units_and_direction():
    assert "nats" in F.score_label(0, 0) and "higher is better" in F.score_label(0, 0)
    assert "half-Brier" in score_unit(1, 1)
    assert "α=2" in score_unit(2, 1)


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
    assert widths["truthful = true probability (synthetic)"] > widths["verbal"]


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


# ------------------------------------------------------------------ first-user review fixes
def _luminance(hex_color: str) -> float:
    r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_palette_is_readable_on_white_and_distinct():
    assert "#F0E442" not in F.PALETTE and "#DDCC77" not in F.PALETTE and "#88CCEE" not in F.PALETTE
    assert all(_luminance(c) < 0.7 for c in F.PALETTE)
    assert len(set(F.PALETTE)) == len(F.PALETTE)
    # the two blues are not neighbours (they used to be two predictors side by side)
    i, j = F.PALETTE.index("#0072B2"), F.PALETTE.index("#56B4E9")
    assert abs(i - j) > 1


def test_leaderboard_draws_minus_infinity_and_se_title(res):
    s = res.summary.copy()
    s.loc["verbal", ["tps_mean", "tps_ci_low", "tps_ci_high"]] = [-np.inf, np.nan, np.nan]
    fig = F.leaderboard_figure(s, F.predictor_colors(s.index), 0, 0, -14.0,
                               ci_label="± 1.96 SE (bootstrap off)")
    texts = [t.text for t in fig.data if t.text is not None]
    assert any("−∞" in tt for tt in texts)
    assert "± 1.96 SE" in fig.layout.title.text and "bootstrap CI" not in fig.layout.title.text


def test_demo_bars_show_noise_as_zero():
    t = pd.DataFrame({"T-ECE (↓)": [3.4e-16, 0.12], "TPS": [-5.1, -5.2]}, index=["bin means", "truthful"])
    fig = F.demo_bars_figure(t, "", colors=["#8c8c8c", "#000000"], errors={"TPS": [0.1, 0.1]})
    bars = [tr for tr in fig.data if isinstance(tr, go.Bar)]
    assert bars[0].y[0] == 0 and bars[0].text[0] == "≈0"
    assert bars[1].error_y.array is not None


def test_mc_audit_shows_both_series_when_identical():
    a = pd.DataFrame({"trajectory_id": ["a", "b"], "q_hat": [0.2, 0.6], "q_se": [0.1, 0.1],
                      "n_rollouts": [10, 10], "q_log": [0.2, 0.6]})
    fig = F.mc_audit_figure(a)
    names = [t.name for t in fig.data]
    assert any("identical" in n for n in names)
    ring = next(t for t in fig.data if "log" in t.name)
    dots = next(t for t in fig.data if "rollouts" in t.name)
    # an open ring, stroked in a visible colour (open symbols stroke in marker.color), drawn on top of the dots
    assert ring.marker.symbol == "circle-open" and ring.marker.size > dots.marker.size
    assert ring.marker.color.startswith("#") and list(fig.data).index(ring) > list(fig.data).index(dots)


def test_mc_audit_bars_are_wilson_intervals_inside_zero_one():
    """±1.96 SE drew no bar where every rollout agreed (q̂ = 0 or 1) and ran below 0 near it."""
    from tpsviz.diagnostics.reliability import wilson_interval

    a = pd.DataFrame({"trajectory_id": ["a", "b", "c"], "q_hat": [0.0, 1 / 16, 1.0], "q_se": [0.0, 0.06, 0.0],
                      "n_rollouts": [16, 16, 16]})
    dots = F.mc_audit_figure(a).data[0]
    lo, hi = wilson_interval(np.array([0, 1, 16]), np.array([16, 16, 16]))
    np.testing.assert_allclose(np.asarray(dots.error_y.array), hi - a["q_hat"])
    np.testing.assert_allclose(np.asarray(dots.error_y.arrayminus), a["q_hat"] - lo)
    assert dots.error_y.array[0] > 0.1 and dots.error_y.arrayminus[2] > 0.1  # k = 0 of 16: up to ~0.19
    assert (a["q_hat"] - np.asarray(dots.error_y.arrayminus) >= 0).all()


def test_censoring_modes_figure_marks_current_mode():
    t = pd.DataFrame({"predictor": ["a", "a"], "mode": ["simple", "upper"], "tps_mean": [-1.0, -0.5],
                      "tps_ci_low": [-1.1, -0.6], "tps_ci_high": [-0.9, -0.4], "n_trajectories": [5, 5]})
    fig = F.censoring_modes_figure(t, {"a": "#E69F00"}, 0, 0, current="upper")
    legend = [tr.name for tr in fig.data if tr.showlegend is not False]
    assert any("current" in n and n.startswith("upper") for n in legend)
    assert all(tr.marker.color == "#bbbbbb" for tr in fig.data if tr.showlegend is not False)


def test_heatmap_axis_says_top_to_bottom(data, res):
    h = F.prepare_heatmap(res.step_contributions(["verbal"]), data.trajectories)
    fig = F.contribution_heatmap_figure(h, "verbal", 0, 0)
    assert "top to bottom: successes" in fig.layout.yaxis.title.text


def test_drill_down_success_is_not_a_cross(data):
    steps = data.steps[data.steps["traj"] == 0]
    fig = F.trajectory_figure(steps, ["truthful"], {"truthful": "#000"}, 1.0, False, None, "run")
    out = next(t for t in fig.data if t.name.startswith("outcome"))
    assert out.marker.symbol != "x"


def test_consistency_band_stays_a_band_with_few_distinct_forecasts():
    from tpsviz.report.figures.reliability import band_steps

    # one distinct forecast: a box of positive width around it, not a zero-width line
    x, hi, lo = band_steps([0.4], [0.6], [0.2])
    assert x.min() < 0.4 < x.max() and (x.max() - x.min()) >= 0.03
    assert list(hi) == [0.6, 0.6] and list(lo) == [0.2, 0.2]
    # two: contiguous steps meeting half-way, each holding its own interval
    x, hi, lo = band_steps([0.2, 0.8], [0.5, 0.9], [0.1, 0.6])
    np.testing.assert_allclose(x, [0.185, 0.5, 0.5, 0.815])
    assert list(hi) == [0.5, 0.5, 0.9, 0.9]
    # within [0, 1] at the ends
    x, _, _ = band_steps([0.0, 1.0], [0.1, 1.0], [0.0, 0.9])
    assert x.min() == 0.0 and x.max() == 1.0


def test_step_axes_have_integer_ticks():
    from tpsviz.report.figures.style import integer_ticks

    for top, dtick in ((3, 1), (12, 1), (13, 2), (60, 5), (3000, 500)):
        fig = integer_ticks(go.Figure(go.Scatter(x=np.arange(1, top + 1), y=np.zeros(top))))
        assert fig.layout.xaxis.dtick == dtick and fig.layout.xaxis.tickformat == "d"
        assert top / dtick <= 12
    heat = integer_ticks(go.Figure(go.Heatmap(x=["1", "2", "≥3"], z=[[1, 2, 3]])))
    assert heat.layout.xaxis.dtick is None  # a categorical axis is left alone


def test_twelve_predictors_get_twelve_distinct_colours():
    import itertools

    names = ["truthful"] + [f"p{i}" for i in range(12)]
    colors = F.predictor_colors(names)
    assert len(set(colors.values())) == 13  # 12 predictors + the reference in black

    def rgb(h):
        return np.array([int(h[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)

    dist = min(np.linalg.norm(rgb(a) - rgb(b)) for a, b in itertools.combinations(colors.values(), 2))
    assert dist > 60  # no two are near-identical (RGB distance; measured minimum 64.5)


def test_exported_figure_carries_its_settings_as_escaped_text():
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    out = F.with_caption(fig, "Data: <a href='http://x'>log</a>.csv · Score family: log (α=0, β=0)")
    sub = out.layout.title.subtitle.text
    assert "Score family: log" in sub and "<a" not in sub and "&lt;a" in sub
    assert out.layout.height > 450 and out.layout.margin.t > 60
    assert len(fig.layout.annotations) == 0  # the original is not modified


def test_omega_svg_is_the_normalised_weight_curve():
    """The sidebar thumbnail: well-formed SVG whose line is ω(c)/max ω on the plot box."""
    import xml.etree.ElementTree as ET

    import tpsviz
    from tpsviz.report.figures.scoring import omega_svg

    c = np.linspace(0.005, 0.995, 199)
    w = tpsviz.omega(c, 0.5, 2.0)
    svg = omega_svg(c, w, 0.5, 2.0, width=260, height=120)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.find(f"{ns}title").text == "ω(c) for α=0.5, β=2"
    pts = np.array([[float(v) for v in p.split(",")] for p in root.find(f"{ns}polyline").get("points").split()])
    assert len(pts) == 199
    left, up, pw, ph = 22, 22, 260 - 22 - 8, 120 - 22 - 30
    np.testing.assert_allclose((pts[:, 0] - left) / pw, c, atol=0.06 / pw)
    np.testing.assert_allclose(1 - (pts[:, 1] - up) / ph, w / w.max(), atol=0.06 / ph)


def test_artificial_check_bars_keep_the_predictor_order_and_show_an_exact_zero():
    check = pd.DataFrame({"predictor": ["zeta", "alpha", "zeta", "alpha"], "abs_error": [0.0, 3e-15, 0.0, 1e-16]})
    bar = F.artificial_check_figure(check, {"zeta": "#000", "alpha": "#111"}).data[0]
    assert list(bar.x) == ["zeta", "alpha"]  # the colours' order, not alphabetical
    assert bar.y[0] == 1e-17 and bar.text[0] == "0" and bar.customdata[0] == "0 (exact)"
    assert bar.y[1] == 3e-15 and bar.text[1] == ""


def test_the_figures_namespace_holds_every_public_builder():
    """Pages draw through ``from tpsviz.report import figures as F``: every public name of the figure
    modules is there (style's layout helpers apart, which only the builders use)."""
    import importlib

    helpers = {"color_of", "rgba", "line_width", "apply_layout", "layout_dict", "by_predictor", "TEMPLATE", "FONT"}
    for mod in ("style", "scoring", "comparison", "steps", "censoring", "reliability", "monitoring", "outcomes"):
        m = importlib.import_module(f"tpsviz.report.figures.{mod}")
        for name in set(m.__all__) - helpers:
            assert getattr(F, name) is getattr(m, name), (mod, name)
            assert name in F.__all__, (mod, name)
