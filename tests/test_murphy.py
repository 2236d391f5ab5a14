"""Murphy curves against a brute-force loop; the exact integral against the mean score and
against numerical quadrature."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from tpsviz.diagnostics.murphy import murphy_curve, murphy_integral
from tpsviz.core.scores import beta_score, omega


def _loop(p, y, cs):
    out = []
    for c in cs:
        total = 0.0
        for pi, yi in zip(p, y):
            if yi == 1 and pi < c:
                total += 1 - c
            if yi == 0 and pi >= c:
                total += c
        out.append(total / len(p))
    return out


def test_curve_matches_loop_including_thresholds_at_forecasts():
    rng = np.random.default_rng(0)
    p = np.round(rng.random(80), 2)
    y = (rng.random(80) < p).astype(int)
    cs = np.unique(np.concatenate([np.linspace(0.01, 0.99, 99), p[(p > 0) & (p < 1)]]))
    curve = murphy_curve(p, y, cs)
    np.testing.assert_allclose(curve.mean_loss, _loop(p, y, cs), atol=1e-15)
    df = curve.to_frame()
    assert list(df.columns) == ["threshold", "mean_loss"] and len(df) == cs.size
    assert murphy_curve(p, y).thresholds.size == 999


AB = [(0.0, 0.0), (1.0, 1.0), (-0.5, -0.5), (2.0, 1.0), (0.5, 3.0), (-0.7, 0.3), (3.0, -0.4)]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-4, 1 - 1e-4) | st.sampled_from([0.1, 0.5, 0.5, 0.9]),
                          st.integers(0, 1)), min_size=1, max_size=40),
       st.sampled_from(AB))
def test_integral_equals_mean_score(rows, ab):
    p = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    got = murphy_integral(murphy_curve(p, y), *ab)
    assert got == pytest.approx(-np.mean(beta_score(p, y, *ab)), abs=1e-6, rel=1e-9)


@pytest.mark.parametrize("ab", [(1.0, 1.0), (2.0, 1.0), (0.0, 0.0), (-0.5, -0.5)])
def test_integral_equals_quadrature_of_the_curve(ab):
    p = np.array([0.15, 0.4, 0.4, 0.7, 0.9])
    y = np.array([0, 1, 0, 1, 0])
    curve = murphy_curve(p, y)

    def integrand(c):
        return murphy_curve(p, y, [c]).mean_loss[0] * omega(c, *ab)

    pts = np.unique(p)
    edges = np.concatenate([[0.0], pts, [1.0]])
    quad = sum(integrate.quad(integrand, a, b, limit=200)[0] for a, b in zip(edges, edges[1:]))
    assert murphy_integral(curve, *ab) == pytest.approx(quad, rel=1e-7)


def test_integral_infinite_for_wrong_certain_forecast():
    curve = murphy_curve([0.0, 0.5], [1, 0])
    assert murphy_integral(curve, 0, 0) == np.inf
    assert murphy_integral(curve, 1, 1) == pytest.approx(-np.mean(beta_score([0, .5], [1, 0],
                                                                             1, 1)))
    assert murphy_integral(murphy_curve([1.0, 0.0], [1, 0]), 0, 0) == 0.0


def test_bad_input():
    with pytest.raises(ValueError):
        murphy_curve([0.1], [0, 1])
    with pytest.raises(ValueError):
        murphy_curve([0.1], [2])
    with pytest.raises(ValueError):
        murphy_curve([0.1], [1], thresholds=[0.0, 0.5])


def test_murphy_diagram_against_a_loop_over_runs():
    """Each predictor's curve and check on a log, from the complete runs' steps collected by hand."""
    import tpsviz
    from tpsviz.diagnostics.murphy import murphy_diagram

    log = tpsviz.load("demo_data/webshop-like.csv")
    names = ["verbal", "truthful"]
    cs = np.linspace(0.05, 0.95, 19)
    got = murphy_diagram(log, names, 1.0, 0.5, thresholds=cs)
    assert list(got.checks["predictor"]) == names
    done = log.trajectories.set_index("trajectory_id")
    for name in names:
        p, y = [], []
        for tid, g in log.steps.groupby("trajectory_id"):
            if done.loc[tid, "censored"]:
                continue
            f = g[f"conf_{name}"].to_numpy(float)
            p += list(f[np.isfinite(f)])
            y += [float(done.loc[tid, "outcome"])] * int(np.isfinite(f).sum())
        curve = got.curves[got.curves["predictor"] == name]
        np.testing.assert_allclose(curve["c"], cs)
        np.testing.assert_allclose(curve["loss"], _loop(p, y, cs), atol=1e-12)
        row = got.checks.set_index("predictor").loc[name]
        assert row["n_steps"] == len(p)
        assert row["mean_score"] == pytest.approx(np.mean(beta_score(np.array(p), np.array(y), 1.0, 0.5)))
        assert row["integral"] == pytest.approx(-row["mean_score"], rel=1e-9)
    assert murphy_diagram(log, names).curves["c"].nunique() == 250  # the default grid


def test_murphy_diagram_leaves_out_a_predictor_without_two_labelled_steps():
    from tpsviz import from_frame
    from tpsviz.diagnostics.murphy import murphy_diagram

    steps = pd.DataFrame({"trajectory_id": ["a", "a", "b"], "step": [1, 2, 1], "outcome": [1, 1, 0],
                          "conf_x": [0.2, 0.9, 0.4], "conf_y": [0.5, np.nan, np.nan]})
    got = murphy_diagram(from_frame(steps), ["x", "y"], 0.0, 0.0)
    assert list(got.checks["predictor"]) == ["x"] and set(got.curves["predictor"]) == {"x"}
    none = murphy_diagram(from_frame(steps), ["y"])
    assert none.checks.empty and none.curves.empty and list(none.curves.columns) == ["predictor", "c", "loss"]
    with pytest.raises(ValueError):
        murphy_diagram(from_frame(steps), ["x"], -1.5, 0.0)
