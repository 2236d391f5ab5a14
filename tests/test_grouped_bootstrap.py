"""Millions of runs: the out-of-core score resamples random groups of runs (runsums.run_groups).
Its intervals agree with the bootstrap over runs within Monte-Carlo error, and say how they were
made."""

from __future__ import annotations

import numpy as np
import pytest

import tpsviz

from tpsviz.engines import runsums
from tpsviz.engines.runsums import score_from_sums
from tpsviz.engines.memory import sums_in_memory
from tpsviz.core.inference import group_sums
from tpsviz.synthetic.agent import simulate
from tpsviz.core.tps import ScoreSettings
from tpsviz.core.trajectory_sums import tps_from_sums


def test_groups_are_balanced_seeded_and_cover_every_run():
    g = runsums.run_groups(10_007, seed=3, n_groups=100)
    sizes = np.bincount(g, minlength=100)
    assert sizes.min() in (100, 101) and sizes.max() - sizes.min() <= 1 and sizes.sum() == 10_007
    assert np.array_equal(g, runsums.run_groups(10_007, seed=3, n_groups=100))
    assert not np.array_equal(g, runsums.run_groups(10_007, seed=4, n_groups=100))


def test_group_sums_against_a_loop():
    rng = np.random.default_rng(0)
    x, g = rng.normal(size=(500, 3)), rng.integers(0, 7, 500)
    want = np.array([[x[g == k, j].sum() for j in range(3)] for k in range(7)])
    np.testing.assert_allclose(group_sums(x, g), want, rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def sums():
    data = tpsviz.from_frame(simulate("webshop-like", n_trajectories=6000, seed=11).steps)
    return sums_in_memory(data, ScoreSettings(n_boot=1000))


def test_grouped_intervals_match_the_bootstrap_over_runs(sums, monkeypatch):
    st = ScoreSettings(n_boot=1000)
    over_runs = score_from_sums(sums, st)
    monkeypatch.setattr(runsums, "GROUPED_MIN", 1000)
    monkeypatch.setattr(runsums, "BOOT_GROUPS", 512)
    grouped = score_from_sums(sums, st)
    assert "512 random groups of runs" in grouped.ci_words and "over runs" in over_runs.ci_words
    assert all("SE by run" in s.ci_words for s in (grouped, over_runs))  # (said: no task clusters out of core)
    a, b = over_runs.summary, grouped.summary
    np.testing.assert_array_equal(a["tps_mean"], b["tps_mean"])  # point estimates from the runs
    w_runs = (a["tps_ci_high"] - a["tps_ci_low"]).to_numpy()
    w_grp = (b["tps_ci_high"] - b["tps_ci_low"]).to_numpy()
    # the width of a 95% percentile interval from 1,000 replicates varies by about 5%; 512 groups
    # add about 6% (sqrt(2/512) in variance): 25% is far outside both, a wrong grouping is not
    assert np.all(np.abs(w_grp / w_runs - 1) < 0.25), w_grp / w_runs
    centre = (b["tps_ci_high"] + b["tps_ci_low"]) / 2 - b["tps_mean"]
    assert np.all(np.abs(centre) < 0.25 * w_runs)
    s1, s2 = over_runs.skill, grouped.skill
    np.testing.assert_array_equal(s1["skill"], s2["skill"])
    ws1 = (s1["skill_ci_high"] - s1["skill_ci_low"]).to_numpy()
    ws2 = (s2["skill_ci_high"] - s2["skill_ci_low"]).to_numpy()
    ok = np.isfinite(ws1)
    assert ok.any() and np.all(np.abs(ws2[ok] / ws1[ok] - 1) < 0.25), ws2 / ws1


def test_grouping_ignoring_the_valid_runs_would_be_caught(sums, monkeypatch):
    """The check above can fail: dividing by the groups' sizes instead of their scored runs moves
    the complete-case intervals (censored runs are not scored there) far off."""
    st = ScoreSettings(n_boot=1000, censoring="complete")
    ref = score_from_sums(sums, st).summary
    monkeypatch.setattr(runsums, "GROUPED_MIN", 1000)
    monkeypatch.setattr(runsums, "BOOT_GROUPS", 512)
    real = runsums._grouped_intervals

    def wrong(cols, valids, groups, settings):
        return real(cols, [np.ones_like(v) for v in valids], groups, settings)

    monkeypatch.setattr(runsums, "_grouped_intervals", wrong)
    bad = score_from_sums(sums, st).summary
    centre = (bad["tps_ci_high"] + bad["tps_ci_low"]) / 2 - ref["tps_mean"]
    assert np.any(np.abs(centre) > (ref["tps_ci_high"] - ref["tps_ci_low"]))


def _stacked_intervals(cols, valids, groups, st):
    """The grouped intervals computed the plain way: every column stacked, then summed by group."""
    from tpsviz.core.inference import bootstrap_sums
    vals, ok = np.column_stack(cols), np.column_stack(valids)
    finite = np.array([np.isfinite(vals[ok[:, j], j]).all() for j in range(vals.shape[1])])
    v = np.where(ok, vals, 0.0)
    v[~np.isfinite(v)] = 0.0
    sums = bootstrap_sums(group_sums(np.hstack([v, ok.astype(float)]), groups), st.n_boot, st.seed)
    k = vals.shape[1]
    reps = sums[:, :k] / sums[:, k:]
    lo, hi = np.full(k, np.nan), np.full(k, np.nan)
    for j in range(k):
        if finite[j] and ok[:, j].sum() >= 2:
            lo[j], hi[j] = np.quantile(reps[:, j][np.isfinite(reps[:, j])], [0.025, 0.975])
    return lo, hi


def test_grouped_intervals_column_by_column_equal_the_stacked_computation():
    """runsums._grouped_intervals sums each column by group with no stacked copy of the runs:
    the same intervals as stacking them, for columns valid everywhere, on some runs, and one
    with an infinite value (no interval)."""
    rng = np.random.default_rng(5)
    n = 3000
    valids = [np.ones(n, bool), rng.random(n) < 0.7, np.ones(n, bool), rng.random(n) < 0.5]
    cols = [np.where(ok, rng.normal(-1, 0.3, n), 0.0) for ok in valids]
    cols[2][17] = -np.inf
    groups = runsums.run_groups(n, seed=3, n_groups=97)
    st = ScoreSettings(n_boot=400)
    lo, hi = runsums._grouped_intervals(cols, valids, groups, st)
    want_lo, want_hi = _stacked_intervals(cols, valids, groups, st)
    np.testing.assert_array_equal(lo, want_lo)
    np.testing.assert_array_equal(hi, want_hi)
    assert np.isnan(lo[2]) and np.isfinite(lo[[0, 1, 3]]).all()


def test_group_sums_of_columns_equal_those_of_the_stacked_array():
    rng = np.random.default_rng(8)
    x, g = rng.normal(size=(400, 3)), rng.integers(0, 9, 400)
    np.testing.assert_array_equal(group_sums([x[:, j].copy() for j in range(3)], g), group_sums(x, g))
    assert group_sums([], g).shape == (9, 0)


@pytest.mark.parametrize("fn", ["tps", "ref"])
def test_run_scores_against_a_loop(fn):
    """TPS_i = A1 (ℓ = 1), A0 (ℓ = 0), ℓ·A1 + (1 − ℓ)·A0 otherwise, NaN for ℓ = NaN; a branch that
    does not count is never read (−∞ there leaves the run finite). The reference's W·S(r, ℓ) the
    same way, as the TPS of W·S(r, 1) and W·S(r, 0)."""
    rng = np.random.default_rng(2)
    n = 200
    label = rng.choice([0.0, 1.0, 0.3, 0.9, np.nan], n)
    a1, a0 = rng.normal(-2, 1, n), rng.normal(-2, 1, n)
    a1[label == 0.0] = -np.inf
    a0[label == 1.0] = -np.inf
    w, s1, s0 = rng.random(n) * 5, -0.7, -1.3
    if fn == "tps":
        got = tps_from_sums(a1, a0, label)
        b1, b0 = a1, a0
    else:
        got = runsums._ref_per_run(w, s1, s0, label)
        b1, b0 = w * s1, w * s0
    for i in range(n):
        ell = label[i]
        want = b1[i] if ell == 1.0 else b0[i] if ell == 0.0 else ell * b1[i] + (1 - ell) * b0[i]
        assert (np.isnan(got[i]) and np.isnan(want)) or got[i] == want, i
    assert np.isfinite(got[~np.isnan(label)]).all()
