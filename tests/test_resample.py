"""The resampling counts are exactly Multinomial(n; 1/n, …), reproducible and fast-path safe.

Independent references: the Poisson pmf (computed here from its formula), the multinomial
pmf of every count vector (enumerated), chi-square tests from scipy, and plain float64
matrix products of the materialised counts.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tpsviz.core import resample as R
from tpsviz.core._fast import counts as F


def _poisson_pmf(lam, kmax=64):
    k = np.arange(kmax)
    return np.exp(-lam + k * math.log(lam) - np.array([math.lgamma(i + 1.0) for i in k]))


@pytest.mark.parametrize("lam", [0.999, 0.99, 0.9, 0.75, 0.5, 0.1, 1e-3])
def test_byte_layout_is_the_poisson_pmf_to_double_precision(lam):
    got = R.layout_pmf(lam)
    want = _poisson_pmf(lam)[: got.size]
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-16)
    assert _poisson_pmf(lam)[got.size:].sum() < 1e-16  # what the layout leaves out
    starts, z, cdf = F._poisson_layout(lam)
    assert 0 < z < 0.03 and list(starts) == sorted(starts) and cdf[-1] == 1.0


def _chi2_pvalue(observed, expected):
    """Pearson chi-square p-value, cells with expected < 5 pooled into their neighbour."""
    obs, exp = [], []
    o_acc = e_acc = 0.0
    for o, e in zip(observed, expected):
        o_acc += o
        e_acc += e
        if e_acc >= 5:
            obs.append(o_acc)
            exp.append(e_acc)
            o_acc = e_acc = 0.0
    obs[-1] += o_acc
    exp[-1] += e_acc
    obs, exp = np.array(obs), np.array(exp)
    return stats.chi2.sf(((obs - exp) ** 2 / exp).sum(), obs.size - 1)


@pytest.mark.parametrize("lam", [0.99, 0.6])
def test_poisson_stage_draws_poisson_counts(lam):
    rng = np.random.default_rng(5)
    c = np.empty(2_000_000, np.uint8)
    F._poisson_counts(rng, c, lam)
    counts = np.bincount(c, minlength=20)[:20]
    pmf = _poisson_pmf(lam)[:20]
    assert _chi2_pvalue(counts, pmf * c.size) > 1e-3
    # the rare counts drawn from the remainder R are there too (P(c >= 5) ≈ 4e-3 at λ=0.99)
    assert (c >= 5).sum() == pytest.approx(c.size * pmf[5:].sum(), rel=0.2)


def _multinomial_pmf(n):
    vecs = [v for v in itertools.product(range(n + 1), repeat=n) if sum(v) == n]
    pmf = [math.factorial(n) / math.prod(math.factorial(k) for k in v) / n**n for v in vecs]
    return vecs, np.array(pmf)


@pytest.mark.parametrize("n, lam", [(4, None), (4, 0.9), (5, 0.7), (3, 0.99)])
def test_counts_are_exactly_multinomial(n, lam):
    """Every count vector has its multinomial probability, whichever branch drew it.

    λ = 0.9 with n = 4 overshoots (Poisson total > n) in ≈ 29% of replicates, so the reset
    branch is exercised as well as the Poisson stage and the top-up.
    """
    vecs, pmf = _multinomial_pmf(n)
    index = {v: i for i, v in enumerate(vecs)}
    observed = np.zeros(len(vecs))
    rows, groups = 64, 1200
    for g in range(groups):
        out = np.empty((rows, n), np.uint8)
        F._group_counts(n, 17, g, out, lam=lam)
        assert (out.sum(axis=1) == n).all()
        for v in map(tuple, out.tolist()):
            observed[index[v]] += 1
    assert _chi2_pvalue(observed, pmf * rows * groups) > 1e-3


def test_large_n_counts_have_multinomial_moments():
    n, n_boot = 2000, 3000
    c = np.vstack(list(R.count_blocks(n, n_boot, 4))).astype(float)
    assert c.shape == (n_boot, n) and (c.sum(axis=1) == n).all()
    # each count is Binomial(n, 1/n); counts of one replicate have covariance -1/n
    pooled = np.bincount(c.astype(int).ravel(), minlength=12)[:12]
    want = stats.binom.pmf(np.arange(12), n, 1 / n) * c.size
    assert _chi2_pvalue(pooled, want) > 1e-4
    assert c.var(axis=0).mean() == pytest.approx(1 - 1 / n, rel=0.02)
    pair = np.mean((c[:, 0::2] - 1) * (c[:, 1::2] - 1))
    assert abs(pair) < 0.01
    # replicates are independent: correlation of totals of the first halves across rows
    halves = c[:, : n // 2].sum(axis=1)
    assert abs(np.corrcoef(halves[:-1], halves[1:])[0, 1]) < 0.08


def test_fast_counts_agree_in_law_with_the_plain_multinomial():
    """The fast sampler against its oracle, ``Generator.multinomial`` (:func:`R.plain_counts`).

    Each check is sized so that chance fails it with probability below ~1e-6 (|z| < 5, chi-square
    p > 1e-6); a sampler with its Poisson remainder, overshoot reset or uniform top-up broken
    fails them (checked by breaking each in turn).
    """
    n, n_boot = 50, 20_000
    fast = np.vstack(list(R.count_blocks(n, n_boot, 11))).astype(np.int64)
    plain = R.plain_counts(n, n_boot, 11)
    cell0 = []
    for c in (fast, plain):
        assert c.shape == (n_boot, n) and (c.sum(axis=1) == n).all()
        # every cell is drawn equally often overall: totals are Multinomial(n·B; 1/n, …)
        assert _chi2_pvalue(c.sum(axis=0), np.full(n, float(n_boot))) > 1e-6
        d = c - 1.0
        # per-replicate moments (replicates are independent): variance 1 - 1/n of a count,
        # covariance -1/n between two cells of one replicate
        for per_row, want in ((np.mean(d * d, axis=1), 1 - 1 / n),
                              (np.mean(d * np.roll(d, 1, axis=1), axis=1), -1 / n)):
            z = (per_row.mean() - want) / (per_row.std() / math.sqrt(n_boot))
            assert abs(z) < 5, (want, per_row.mean(), z)
        # the count of one cell, and of all cells pooled, is Binomial(n, 1/n)
        pmf = stats.binom.pmf(np.arange(n + 1), n, 1 / n)
        assert _chi2_pvalue(np.bincount(c[:, 0], minlength=n + 1), pmf * n_boot) > 1e-6
        assert _chi2_pvalue(np.bincount(c.ravel(), minlength=n + 1), pmf * c.size) > 1e-6
        cell0.append(np.bincount(c[:, 0], minlength=n + 1)[:6])
    # and the two samplers against each other (counts above 5 are too rare to compare)
    assert stats.chi2_contingency(np.array(cell0)[:, :5])[1] > 1e-6


def test_plain_counts_edge_cases():
    assert R.plain_counts(0, 3, 1).shape == (3, 0)
    np.testing.assert_array_equal(R.plain_counts(1, 4, 1), np.ones((4, 1)))
    np.testing.assert_array_equal(R.plain_counts(7, 5, 2), R.plain_counts(7, 5, 2))


def test_counts_depend_on_seed_only_not_on_threads_or_cache(monkeypatch):
    monkeypatch.setattr(F, "_CACHE", type(F._CACHE)())
    first = np.vstack(list(R.count_blocks(700, 150, 9)))
    assert (700, 150, 9) in F._CACHE
    again = np.vstack(list(R.count_blocks(700, 150, 9)))  # replayed from memory
    np.testing.assert_array_equal(first, again)
    monkeypatch.setattr(F, "_CACHE", type(F._CACHE)())
    monkeypatch.setattr(F, "_THREADS", 1)
    single = np.vstack(list(R.count_blocks(700, 150, 9)))
    np.testing.assert_array_equal(first, single)
    monkeypatch.setattr(F, "_CACHE_MAX_CELLS", 100)  # too large to keep: drawn each time
    monkeypatch.setattr(F, "_CACHE", type(F._CACHE)())
    unkept = np.vstack(list(R.count_blocks(700, 150, 9)))
    assert (700, 150, 9) not in F._CACHE
    np.testing.assert_array_equal(first, unkept)
    other = np.vstack(list(R.count_blocks(700, 150, 10)))
    assert (other != first).any()


def test_cache_keeps_recent_counts_within_its_bound(monkeypatch):
    monkeypatch.setattr(F, "_CACHE", type(F._CACHE)())
    monkeypatch.setattr(F, "_CACHE_MAX_CELLS", 300 * 50 + 10)
    list(R.count_blocks(300, 50, 7))
    list(R.count_blocks(300, 50, 8))
    assert (300, 50, 7) not in F._CACHE and (300, 50, 8) in F._CACHE
    # kept counts are handed out read-only, so no caller can change later replicates
    block = next(R.count_blocks(300, 50, 8))
    with pytest.raises(ValueError):
        block[0, 0] = 3


@pytest.mark.parametrize("exact", [True, False])
def test_counts_times_is_the_product_with_the_same_counts(exact, monkeypatch):
    if not exact:  # force the float32 products large bootstraps use
        monkeypatch.setattr(F, "_EXACT_CELLS", 0)
    rng = np.random.default_rng(3)
    n, n_boot = 5000, 300
    x = np.column_stack([rng.normal(-26, 30, n), rng.random(n) < 0.7, rng.exponential(2, n)])
    c = np.vstack(list(R.count_blocks(n, n_boot, 21))).astype(float)
    want = c @ x
    got = R.counts_times(x, n_boot, 21)
    spread = want.std(axis=0)
    err = np.abs(got - want).max(axis=0) / spread
    assert (err < (1e-12 if exact else 1e-4)).all(), err
    alone = R.counts_times(x[:, 0], n_boot, 21)  # a vector gives the same replicates
    assert np.abs(alone - got[:, 0]).max() < (1e-12 if exact else 1e-4) * spread[0]


def test_counts_times_edge_cases():
    assert R.counts_times(np.ones((0, 2)), 5, 1).shape == (5, 2)
    assert R.counts_times(np.ones(3), 0, 1).shape == (0,)
    with pytest.raises(ValueError, match="finite"):
        R.counts_times(np.array([1.0, np.nan]), 5, 1)
    one = R.counts_times(np.array([2.5]), 7, 1)  # one run is always drawn once
    np.testing.assert_array_equal(one, np.full(7, 2.5))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 400), n_boot=st.integers(1, 150), seed=st.integers(0, 2**31 - 1),
       k=st.integers(1, 3))
def test_any_size_gives_multinomial_rows_and_matching_sums(n, n_boot, seed, k):
    """Every (n, n_boot): rows sum to n, and the product replays the very same counts."""
    c = np.vstack(list(R.count_blocks(n, n_boot, seed)))
    assert c.shape == (n_boot, n) and (c.sum(axis=1, dtype=np.int64) == n).all()
    x = np.random.default_rng(seed).normal(size=(n, k))
    got = R.counts_times(x, n_boot, seed)
    want = c.astype(float) @ x
    assert np.abs(got - want).max() <= 1e-9 * (1 + np.abs(want).max())
