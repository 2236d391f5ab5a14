"""Beta-family scores against independent high-precision computations (mpmath, quadrature)."""

import itertools

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from tpsviz.core.scores import (
    PRESETS, beta_score, beta_score_pair, clip_forecasts, elementary_loss, expected_score, omega,
    validate_alpha_beta)

mp.mp.dps = 40

P_GRID = [1e-12, 1e-9, 1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1 - 1e-3, 1 - 1e-6,
          1 - 1e-9, 1 - 1e-12]
AB_GRID = [-0.999, -0.9, -0.5, -0.1, -1e-3, -1e-4, -3e-5, -1e-8, 0.0, 1e-8, 3e-5, 1e-4, 1e-3,
           0.1, 0.5, 1.0, 2.0, 3.7, 10.0, 50.0]


def ref_score(p: float, y: int, a: float, b: float) -> float:
    """-B(1-p; β+1, α) or -B(p; α+1, β) in 40-digit arithmetic (mpmath's incomplete beta)."""
    p, a, b = mp.mpf(p), mp.mpf(a), mp.mpf(b)
    if y == 1:
        v = -mp.betainc(b + 1, a, 0, 1 - p)
    else:
        v = -mp.betainc(a + 1, b, 0, p)
    return float(v)


def assert_close(got, ref, p, y, a, b):
    # relative 1e-9; values below 1e-290 sit at the edge of double range (subnormal), where
    # only absolute accuracy is meaningful
    if abs(ref) < 1e-290:
        assert abs(got - ref) < 1e-295, (p, y, a, b, got, ref)
    else:
        assert abs(got - ref) <= 1e-9 * abs(ref), (p, y, a, b, got, ref, abs(got - ref) / abs(ref))


@pytest.mark.parametrize("a,b", list(itertools.product(AB_GRID, AB_GRID)))
def test_against_mpmath_grid(a, b):
    ps = np.array(P_GRID)
    for y in (0, 1):
        got = beta_score(ps, y, a, b)
        for p, g in zip(ps, got):
            assert_close(g, ref_score(p, y, a, b), p, y, a, b)


def _quad1(p, a, b):
    """∫_p^1 c^(a-1) (1-c)^b dc, with quad's algebraic weight (1-c)^b handling the endpoint."""
    return integrate.quad(lambda c: c ** (a - 1), p, 1, weight="alg", wvar=(0.0, b),
                          epsabs=0, epsrel=1e-12, limit=400)[0]


@pytest.mark.parametrize("a,b", [(-0.5, 2.0), (0.3, -0.7), (1.5, 0.5), (0.0, 3.0), (4.0, 0.0)])
@pytest.mark.parametrize("p", [0.05, 0.4, 0.93])
def test_against_quadrature(a, b, p):
    """Direct numerical integration of the Schervish integrals."""
    s1 = -_quad1(p, a, b)
    s0 = -integrate.quad(lambda c: c ** a * (1 - c) ** (b - 1), 0, p, epsabs=0, epsrel=1e-12,
                         limit=400)[0]
    g1, g0 = beta_score_pair(np.array([p]), a, b)
    assert g1[0] == pytest.approx(s1, rel=1e-9)
    assert g0[0] == pytest.approx(s0, rel=1e-9)


def test_named_special_cases():
    p = np.linspace(0.01, 0.99, 99)
    np.testing.assert_allclose(beta_score(p, 1, 0, 0), np.log(p), rtol=1e-14)
    np.testing.assert_allclose(beta_score(p, 0, 0, 0), np.log1p(-p), rtol=1e-14)
    np.testing.assert_allclose(beta_score(p, 1, 1, 1), -0.5 * (1 - p) ** 2, rtol=1e-14)
    np.testing.assert_allclose(beta_score(p, 0, 1, 1), -0.5 * p**2, rtol=1e-14)
    np.testing.assert_allclose(beta_score(p, 1, -0.5, -0.5), -2 * np.sqrt((1 - p) / p), rtol=1e-13)
    # the general path agrees with the closed forms just next to them
    np.testing.assert_allclose(beta_score(p, 1, 1e-9, 1e-9), np.log(p), rtol=1e-7)
    np.testing.assert_allclose(beta_score(p, 0, 1 + 1e-12, 1), -0.5 * p**2, rtol=1e-9)
    assert set(PRESETS) >= {"log", "brier", "boosting"}
    assert (PRESETS["log"].alpha, PRESETS["log"].beta) == (0.0, 0.0)
    assert (PRESETS["brier"].alpha, PRESETS["brier"].beta) == (1.0, 1.0)
    assert (PRESETS["boosting"].alpha, PRESETS["boosting"].beta) == (-0.5, -0.5)


def test_edges_and_unbounded():
    assert beta_score(np.array([0.0]), 1, 0, 0)[0] == -np.inf
    assert beta_score(np.array([1.0]), 0, 0, 0)[0] == -np.inf
    assert beta_score(np.array([1.0]), 1, 0, 0)[0] == 0.0
    assert beta_score(np.array([0.0]), 0, 0.5, 0.5)[0] == 0.0
    # bounded when α, β > 0: S(0, 1) = -B(β+1, α)
    assert beta_score(np.array([0.0]), 1, 1, 1)[0] == pytest.approx(-0.5)
    assert beta_score(np.array([1.0]), 0, 2, 3)[0] == pytest.approx(
        float(-mp.beta(3, 3)), rel=1e-12)


@pytest.mark.parametrize("bad", [-1.0, -2.0, float("nan"), float("inf"), "x"])
def test_invalid_parameters(bad):
    with pytest.raises(ValueError, match="greater than -1|must be a number"):
        beta_score(0.5, 1, bad, 0.0)
    with pytest.raises(ValueError):
        validate_alpha_beta(0.0, bad)


def test_invalid_inputs():
    with pytest.raises(ValueError, match="probabilities"):
        beta_score(np.array([1.2]), 1)
    with pytest.raises(ValueError, match="probabilities"):
        beta_score(np.array([np.nan]), 1)
    with pytest.raises(ValueError, match="0 or 1"):
        beta_score(np.array([0.5]), 2)


params = st.floats(-0.95, 8.0)
probs = st.floats(1e-9, 1 - 1e-9)


@settings(max_examples=150, deadline=None)
@given(k=st.integers(1, 2**30 - 1), a=params, b=params)
def test_scores_nonpositive_and_symmetry(k, a, b):
    p = k / 2**30  # dyadic, so 1 - p is exact and the symmetry can be checked tightly
    s1, s0 = beta_score_pair(np.array([p]), a, b)
    assert s1[0] <= 0 and s0[0] <= 0
    # S(p, 0; α, β) = S(1-p, 1; β, α)
    s1_swapped = beta_score(np.array([1 - p]), 1, b, a)[0]
    assert s0[0] == pytest.approx(s1_swapped, rel=1e-7, abs=1e-300)


@settings(max_examples=100, deadline=None)
@given(a=params, b=params, ps=st.lists(probs, min_size=2, max_size=8, unique=True))
def test_monotone_in_p(a, b, ps):
    p = np.sort(np.array(ps))
    s1, s0 = beta_score_pair(p, a, b)
    assert np.all(np.diff(s1) >= -1e-12 * np.abs(s1[:-1]))  # S(p,1) increasing
    assert np.all(np.diff(s0) <= 1e-12 * np.abs(s0[:-1]))   # S(p,0) decreasing


@settings(max_examples=60, deadline=None)
@given(q=st.floats(0.02, 0.98), a=st.floats(-0.9, 5), b=st.floats(-0.9, 5))
def test_strict_propriety_pointwise(q, a, b):
    """The expected score q S(p,1) + (1-q) S(p,0) is maximised at p = q."""
    grid = np.clip(q + np.array([-0.2, -0.05, -0.01, 0.01, 0.05, 0.2]), 1e-6, 1 - 1e-6)
    at_q = expected_score(np.array([q]), q, a, b)[0]
    others = expected_score(grid, q, a, b)
    assert np.all(others < at_q)


def test_expected_score_zero_weights():
    # q = 0 with S(0, 1) = -inf must give S(0, 0) = 0, not NaN
    assert expected_score(np.array([0.0]), 0.0, 0, 0)[0] == 0.0
    assert expected_score(np.array([1.0]), 1.0, 0, 0)[0] == 0.0
    assert expected_score(np.array([0.3]), 0.4, 1, 1)[0] == pytest.approx(
        0.4 * -0.5 * 0.49 + 0.6 * -0.5 * 0.09)


def test_schervish_representation():
    """-S(p, y) = ∫ ℓ_c(p, y) ω(c) dc for the elementary loss."""
    for a, b in [(0.0, 0.0), (1.0, 1.0), (2.0, 0.5), (-0.5, 1.5)]:
        for p, y in [(0.3, 1), (0.3, 0), (0.8, 1), (0.8, 0)]:
            val = integrate.quad(lambda c: elementary_loss(p, y, c) * omega(c, a, b), 0, 1,
                                 points=[p], limit=200, epsrel=1e-11)[0]
            assert -beta_score(np.array([p]), y, a, b)[0] == pytest.approx(val, rel=1e-8)


def test_clip_forecasts_counts():
    p = np.array([0.0, 1e-9, 0.5, 1.0, np.nan])
    out, n = clip_forecasts(p, 1e-6)
    assert n == 3
    assert out[0] == 1e-6 and out[3] == 1 - 1e-6 and np.isnan(out[4])
    out, n = clip_forecasts(p, 0.0)
    assert n == 0 and out[0] == 0.0
    with pytest.raises(ValueError):
        clip_forecasts(p, 0.5)


def test_large_arrays_use_threads_consistently(monkeypatch):
    from tpsviz.core._fast import kernels as _kernels

    monkeypatch.setattr(_kernels, "THREAD_MIN", 400_000)
    rng = np.random.default_rng(1)
    p = rng.uniform(1e-6, 1 - 1e-6, 1_200_000)
    y = rng.integers(0, 2, p.size)
    big = beta_score(p, y, 2.5, 0.7)
    small = np.concatenate([beta_score(p[i:i + 100_000], y[i:i + 100_000], 2.5, 0.7)
                            for i in range(0, p.size, 100_000)])
    np.testing.assert_array_equal(big, small)


@pytest.mark.parametrize("a,b", [(2.5, 0.7), (0.5, 3.0), (-0.5, 2.0), (50.0, 50.0), (-0.99, 0.3),
                                 (0.0, 2.0), (1e-5, 3.0), (7.0, -0.8), (2.0, 3.0), (0.0, 0.0),
                                 (-0.5, -0.5), (1.0, 1.0)])
def test_fast_path_matches_the_plain_oracle(a, b, monkeypatch):
    """Large inputs go through blocks, two threads and (general α, β) the verified table;
    ``plain_score`` (whole-array closed forms, the exact ``scipy.special`` evaluator) is the
    oracle, on random p and the extremes 0, 1, 1e-12, 1 - 1e-12."""
    from tpsviz.core._fast import kernels as _kernels
    from tpsviz.core.scores import plain_score

    monkeypatch.setattr(_kernels, "THREAD_MIN", 4 * _kernels.BLOCK)  # threads at a test's size
    rng = np.random.default_rng(2)
    u = rng.uniform(-27.6, 27.6, 5 * _kernels.BLOCK)
    p = 1 / (1 + np.exp(-u))
    p[:10] = [0.0, 1.0, 1e-13, 1 - 1e-13, 0.5, 1e-12, 1 - 1e-12, 0.25, 0.75, 1e-300]
    y = rng.integers(0, 2, p.size)
    assert p.size >= max(_kernels.TABLE_MIN, _kernels.THREAD_MIN)
    got = beta_score(p, y, a, b)
    want = plain_score(p, y, a, b)
    small = beta_score(p[:5000], y[:5000], a, b)  # below the table threshold: exact path
    np.testing.assert_allclose(got[:5000], small, rtol=1e-9, atol=1e-295)
    tiny = np.abs(want) < 1e-290  # subnormal values: only absolute accuracy means anything
    np.testing.assert_array_equal(got[~np.isfinite(want)], want[~np.isfinite(want)])
    ok = np.isfinite(want) & ~tiny
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-9)
    np.testing.assert_allclose(got[tiny], want[tiny], rtol=0, atol=1e-295)
    for i in rng.choice(np.flatnonzero(ok & (p > 0) & (p < 1)), 5, replace=False):
        assert_close(got[i], ref_score(p[i], y[i], a, b), p[i], y[i], a, b)


@pytest.mark.parametrize("a,b", [(0.45, 0.0), (0.3, 5e-5), (2.5, 0.7), (-0.5, 2.0), (7.0, -0.8),
                                 (0.0, 2.0), (1e-5, 3.0), (3.0, -0.3)])
def test_repeated_forecasts_are_evaluated_once_with_the_same_bits(a, b):
    """Forecasts on a grid (a verbal confidence), a constant and distinct values mixed: the exact
    evaluator runs once per distinct forecast (``kernels._distinct``) and gives every row the bits
    the oracle gives it evaluated row by row, each value alone."""
    from tpsviz.core._fast import kernels as _kernels
    from tpsviz.core.scores import plain_score

    rng = np.random.default_rng(5)
    grid = rng.choice(np.round(np.linspace(0.05, 0.95, 19), 2), 3000)
    p = np.concatenate([grid, np.full(500, 0.37), rng.uniform(0.001, 0.999, 400), [0.0, 1.0] * 5])
    y = rng.integers(0, 2, p.size)
    u, back = _kernels._distinct(p[:3500])
    assert u.size == 20 and np.array_equal(u[back], p[:3500])  # the grid and the constant
    assert _kernels._distinct(rng.uniform(0, 1, 500))[1] is None  # nothing repeats: no sort kept
    got = beta_score(p, y, a, b)
    one_by_one = np.array([plain_score(p[i:i + 1], y[i:i + 1], a, b)[0] for i in range(0, p.size, 7)])
    np.testing.assert_array_equal(got[::7], one_by_one)
    np.testing.assert_array_equal(got, plain_score(p, y, a, b))
