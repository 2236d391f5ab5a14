"""The Overview's leaderboard picture (``leaderboard_svg``, issue 35 point 5): it draws what the plotly
leaderboard figure draws (same rows in the same order, same means and interval ends, read back from
the picture through its own axis ticks), names from a log stay text, and its axis ticks are round
numbers spaced evenly over any range."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tpsviz
from tpsviz.report import figures as F

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
NS = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> dict:
    """Rows (label, mean, low, high, marker) top down and the axis, read back from the picture: a
    pixel becomes a score through the first and last tick labels' positions."""
    root = ET.fromstring(svg)
    texts = list(root.iter(f"{NS}text"))
    ticks = [(float(t.get("x")), float(t.text.replace("−", "-"))) for t in texts
             if t.get("text-anchor") == "middle" and re.fullmatch(r"−?[\d.e+−]+", t.text or "")]
    (p0, v0), (p1, v1) = ticks[0], ticks[-1]

    def value(px: float) -> float:
        return v0 + (px - p0) * (v1 - v0) / (p1 - p0)

    labels = [(float(t.get("y")) - 4, t.text) for t in texts if t.get("text-anchor") == "end"]
    rows = []
    for y, label in labels:
        at_y = [e for e in root.iter() if e.get("cy") == f"{y:.1f}" or e.get("y1") == f"{y:.1f}"
                or (e.tag == f"{NS}polygon" and f",{y:.1f} " in e.get("points", "") + " ")]
        marks = [e for e in at_y if e.tag in (f"{NS}circle", f"{NS}polygon")]
        bars = [e for e in at_y if e.tag == f"{NS}line" and e.get("stroke") is None]  # the whisker group's
        row = {"label": label, "marker": marks[0].tag.removeprefix(NS)}
        if row["marker"] == "circle":
            row["mean"] = value(float(marks[0].get("cx")))
        elif len(marks[0].get("points").split()) == 4:  # the reference's diamond: its centre
            xs = [float(p.split(",")[0]) for p in marks[0].get("points").split()]
            row["mean"] = value((min(xs) + max(xs)) / 2)
        else:
            row["mean"] = -np.inf
        if bars:
            row["low"], row["high"] = value(float(bars[0].get("x1"))), value(float(bars[0].get("x2")))
        rows.append(row)
    return {"root": root, "rows": rows, "ticks": ticks, "value": value}


@pytest.fixture(scope="module")
def res():
    data = tpsviz.load(ROOT / "demo_data" / "webshop-like.csv")
    return data, tpsviz.compute_tps(data, tpsviz.ScoreSettings(n_boot=100, censoring="simple"))


def test_the_picture_draws_the_rows_of_the_plotly_figure(res):
    data, r = res
    colors = F.predictor_colors(data.predictors)
    fig = F.leaderboard_figure(r.summary, colors, 0, 0, ref_value=-15)
    got = _parse(F.leaderboard_svg(r.summary, colors, 0, 0, ref_value=-15))
    traces = list(fig.data)[::-1]  # plotly draws the best at the top, from the bottom up
    assert [row["label"] for row in got["rows"]] == [t.y[0] for t in traces]
    span = got["ticks"][-1][1] - got["ticks"][0][1]
    for row, t in zip(got["rows"], traces):
        assert row["mean"] == pytest.approx(t.x[0], abs=span / 2000)  # within a tenth of a pixel or so
        assert row["low"] == pytest.approx(t.x[0] - t.error_x.arrayminus[0], abs=span / 2000)
        assert row["high"] == pytest.approx(t.x[0] + t.error_x.array[0], abs=span / 2000)
        assert row["marker"] == ("polygon" if t.marker.symbol == "diamond" else "circle")
    ref = next(e for e in got["root"].iter(f"{NS}line") if e.get("stroke-dasharray"))
    assert got["value"](float(ref.get("x1"))) == pytest.approx(-15, abs=span / 2000)
    assert "nats" in F.leaderboard_svg(r.summary, colors, 0, 0)  # the axis says its unit


def test_minus_infinity_the_interval_title_and_names_from_a_log(res):
    _, r = res
    s = r.summary.copy()
    s.loc["verbal", ["tps_mean", "tps_ci_low", "tps_ci_high"]] = [-np.inf, np.nan, np.nan]
    evil = '<script>alert("x")</script>&\u202e' + "y" * 60
    s = s.rename(index={"noisy": evil})
    svg = F.leaderboard_svg(s, F.predictor_colors(s.index), 0, 0, -14.0, ci_label="± 1.96 SE (bootstrap off)")
    got = _parse(svg)
    assert not list(got["root"].iter(f"{NS}script"))  # well-formed, and the name is text
    bottom = got["rows"][-1]
    assert bottom["label"] == "verbal" and bottom["mean"] == -np.inf and bottom["marker"] == "polygon"
    assert any(t.text == "−∞" for t in got["root"].iter(f"{NS}text"))
    shown = next(row["label"] for row in got["rows"] if row["label"].startswith("<script>"))
    assert len(shown) == 40 and shown.endswith("…") and "\u202e" not in shown  # cleaned and cut
    assert got["root"].find(f"{NS}title").text == "Mean TPS ± 1.96 SE (bootstrap off)"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e4, 1e4), st.floats(0, 1e3), st.floats(0, 1e3)), min_size=1, max_size=8),
       st.one_of(st.none(), st.floats(-1e4, 1e4)))
def test_the_axis_has_round_evenly_spaced_ticks_and_every_row_is_on_it(rows, ref):
    names = [f"p{i}" for i in range(len(rows))]
    s = pd.DataFrame({"tps_mean": [m for m, _, _ in rows], "tps_ci_low": [m - lo for m, lo, _ in rows],
                      "tps_ci_high": [m + hi for m, _, hi in rows], "n_trajectories": 10, "n_censored": 0},
                     index=names)
    got = _parse(F.leaderboard_svg(s, F.predictor_colors(names), 0, 0, ref))
    px = np.array([p for p, _ in got["ticks"]])
    vals = np.array([v for _, v in got["ticks"]])
    assert 2 <= len(vals) <= 13
    steps = np.diff(vals)
    assert np.allclose(steps, steps[0], rtol=1e-3) and np.allclose(np.diff(px), np.diff(px)[0], atol=0.2)
    mantissa = steps[0] / 10 ** np.floor(np.log10(steps[0]))
    assert min(abs(mantissa - m) for m in (1, 2, 2.5, 5, 10)) < 1e-3
    span = vals[-1] - vals[0]
    lo_px, hi_px = px.min() - np.diff(px)[0], px.max() + np.diff(px)[0]  # the plot area reaches at most a step beyond
    for row, (m, lo, hi) in zip(got["rows"], sorted(rows, key=lambda t: -t[0])):
        assert row["mean"] == pytest.approx(m, abs=span / 500 + 1e-9)
        assert got["value"](lo_px) <= row["low"] <= row["high"] <= got["value"](hi_px)
