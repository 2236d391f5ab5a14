"""Millions of runs: the out-of-core score resamples random groups of runs (runsums.run_groups).
Its intervals agree with the bootstrap over runs within Monte-Carlo error, and say how they were
made."""

from __future__ import annotations

import numpy as np
import pytest

import tpsviz

from tpsviz.engines import runsums, score_from_sums
from tpsviz.engines.memory import sums_in_memory
from tpsviz.inference import group_sums
from tpsviz.synthetic import simulate
from tpsviz.tps import ScoreSettings


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

    def wrong(values, valid, groups, settings):
        return real(values, np.ones_like(valid), groups, settings)

    monkeypatch.setattr(runsums, "_grouped_intervals", wrong)
    bad = score_from_sums(sums, st).summary
    centre = (bad["tps_ci_high"] + bad["tps_ci_low"]) / 2 - ref["tps_mean"]
    assert np.any(np.abs(centre) > (ref["tps_ci_high"] - ref["tps_ci_low"]))
