"""CORP decomposition: published golden values, identities, non-negativity."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpsviz.diagnostics.decomposition import decompose, decompose_by_step, pav
from tpsviz.core.scores import beta_score

Y = [0, 0, 0, 1, 1, 1]
F = [0.4, 0.3, 0.2, 0.1, 0.5, 0.9]


def test_golden_log_score():
    # model-diagnostics tests, from R reliabilitydiag
    d = decompose(F, Y, 0, 0)
    assert d["mcb"] == pytest.approx(0.3237327, abs=1e-6)
    assert d["dsc"] == pytest.approx(0.3182571, abs=1e-6)
    assert d["unc"] == pytest.approx(0.6931472, abs=1e-6)
    assert d["mean_score"] == pytest.approx(-0.6986228, abs=1e-6)


def test_golden_brier_is_half_at_alpha_beta_one():
    d = decompose(F, Y, 1, 1)
    assert d["mcb"] == pytest.approx(0.1016667 / 2, abs=1e-6)
    assert d["dsc"] == pytest.approx(0.125 / 2, abs=1e-6)
    assert d["unc"] == pytest.approx(0.25 / 2, abs=1e-6)
    assert d["mean_score"] == pytest.approx(-0.2266667 / 2, abs=1e-6)


def _pav_reference(x, y):
    """Textbook PAV on the distinct x values (ties pooled first), pure Python."""
    xs = sorted(set(x))
    blocks = [[sum(yy for xx, yy in zip(x, y) if xx == v), sum(1 for xx in x if xx == v), [v]]
              for v in xs]
    i = 0
    while i < len(blocks) - 1:
        a, b = blocks[i], blocks[i + 1]
        if a[0] / a[1] > b[0] / b[1]:
            blocks[i:i + 2] = [[a[0] + b[0], a[1] + b[1], a[2] + b[2]]]
            i = max(i - 1, 0)
        else:
            i += 1
    value = {v: blk[0] / blk[1] for blk in blocks for v in blk[2]}
    return [value[v] for v in x]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.05, 0.2, 0.2, 0.5, 0.8, 0.95]) | st.floats(0, 1),
                          st.integers(0, 1)), min_size=1, max_size=30))
def test_pav_matches_reference_and_pools_ties(rows):
    x = [r[0] for r in rows]
    y = [r[1] for r in rows]
    got = pav(x, y)
    np.testing.assert_allclose(got, _pav_reference(x, y), atol=1e-12)
    for v in set(x):
        assert np.ptp(got[np.array(x) == v]) == 0


AB = [(0.0, 0.0), (1.0, 1.0), (-0.5, -0.5), (2.0, 1.0), (0.5, 3.0), (-0.7, 0.3)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0.001, 0.999), st.integers(0, 1)), min_size=2, max_size=60),
       st.sampled_from(AB))
def test_components_non_negative_and_identity(rows, ab):
    p = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows], dtype=float)
    d = decompose(p, y, *ab)
    assert d["mcb"] >= 0 and d["dsc"] >= 0 and d["unc"] >= 0
    mean = float(np.mean(beta_score(p, y, *ab)))
    assert d["mean_score"] == pytest.approx(mean, rel=1e-12, abs=1e-12)
    assert -(d["mcb"] - d["dsc"] + d["unc"]) == pytest.approx(mean, rel=1e-9, abs=1e-9)


def test_recalibrated_to_one_scores_zero_not_nan():
    # bin {0.9, 0.9} has outcomes all 1 -> recalibrated to exactly 1: log score 0 there
    p, y = [0.2, 0.2, 0.9, 0.9], [0, 1, 1, 1]
    assert list(pav(p, y)) == [0.5, 0.5, 1.0, 1.0]
    d = decompose(p, y, 0, 0)
    loss_r = 2 * np.log(2) / 4
    unc = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    assert d["unc"] == pytest.approx(unc)
    assert d["dsc"] == pytest.approx(unc - loss_r)
    assert d["mcb"] == pytest.approx(-np.mean(np.log([0.8, 0.2, 0.9, 0.9])) - loss_r)


def test_perfect_forecast_all_one_class():
    d = decompose([1.0, 1.0], [1, 1], 0, 0)
    assert d == {"mcb": 0.0, "dsc": 0.0, "unc": 0.0, "mean_score": 0.0, "n": 2}


def test_by_step():
    rng = np.random.default_rng(0)
    step = np.repeat([3, 1, 2], 50)
    p = rng.random(150)
    y = (rng.random(150) < p).astype(float)
    df = decompose_by_step(p, y, step, 1, 1)
    assert list(df.columns) == ["step", "n", "mcb", "dsc", "unc", "mean_score"]
    assert list(df["step"]) == [1, 2, 3] and list(df["n"]) == [50, 50, 50]
    row = df.iloc[2]
    d = decompose(p[:50], y[:50], 1, 1)
    assert row["mcb"] == pytest.approx(d["mcb"]) and row["dsc"] == pytest.approx(d["dsc"])


@pytest.mark.parametrize("args", [([0.1, 0.2], [0]), ([0.1, 0.2], [0, 0.5]),
                                  ([0.1, 1.5], [0, 1]), ([], [])])
def test_bad_input(args):
    with pytest.raises(ValueError):
        decompose(*args)
    with pytest.raises(ValueError):
        decompose([0.1], [1], -1, 0)
