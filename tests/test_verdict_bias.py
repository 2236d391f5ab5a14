"""The verdict's bias check by the studentized bootstrap (issue 45: a rule that missed its level is fixed,
not its text): its p-value against a replicate-by-replicate loop over the same resampling counts, and its
error rate against the normal z on a bias carried by a few long runs."""

import numpy as np
import pytest

from tpsviz.core.inference import bootstrap_weights
from tpsviz.diagnostics.verdict.checks import bias_test


def _loop_p(p, lab, runs, n_boot, seed):
    """Each replicate's resampled rows written out: the bias and its SE clustered by run, t* = (b* − b)/SE*,
    and the two-sided p of z = b/SE, each tail (1 + k)/(B + 1)."""
    k = runs.max() + 1
    d = p - lab

    def bias_se(weights):  # a run drawn c times counts c times
        w = weights[runs]
        b = np.sum(w * d) / np.sum(w)
        e = np.bincount(runs, weights=w * (d - b), minlength=k) / np.where(weights > 0, weights, 1)
        return b, np.sqrt(k / (k - 1) * np.sum(weights * e ** 2)) / np.sum(w)

    b, se = bias_se(np.ones(k))
    ts = []
    for c in np.vstack(list(bootstrap_weights(k, n_boot, seed))):
        bs, ss = bias_se(c)
        if ss > 0:
            ts.append((bs - b) / ss)
    ts = np.array(ts)
    z = b / se
    tail = min(np.count_nonzero(ts >= z), np.count_nonzero(ts <= z))
    return min(1.0, 2 * (1 + tail) / (ts.size + 1))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_bias_p_value_matches_a_loop_over_the_resampled_runs(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 12, 40)
    runs = np.repeat(np.arange(40), lengths)
    p = rng.uniform(0.05, 0.95, runs.size)
    lab = np.repeat((rng.random(40) < 0.45).astype(float), lengths)
    got = bias_test(p, lab, runs, n_boot=300, seed=seed)
    assert got == pytest.approx(_loop_p(p, lab, runs, 300, seed), abs=1e-12)
    assert 0 < got <= 1


@pytest.mark.slow
def test_a_truthful_forecast_with_long_runs_passes_the_bias_check_at_its_level():
    """m_t, truthful under the simple score, on the validation agent with the long budget (H = 40: a few long
    runs carry much of the bias's variance; docs/validation.md, simple-200-long): over 300 logs of 200 runs
    the studentized bootstrap rejects "no bias" at the verdict's per-check level 1/60 within its Monte-Carlo
    spread, and no more often than the normal z does (measured on these seeds: 6 of 300 against the z's 13,
    where 5 is the level; 2.0% against 2.7% on 300 other seeds)."""
    from dataclasses import replace

    from tpsviz.synthetic.validation import VALIDATION_AGENT, mode_target, simulate_tasks

    rej = {"z": 0, "t": 0}
    for i in range(300):
        log = simulate_tasks(replace(VALIDATION_AGENT, budget=40), 200, 9000 + i)
        rows = log.rows
        runs = np.unique(rows["traj"].to_numpy(), return_inverse=True)[1]
        lab = (log.truth["y_true"].to_numpy() * ~log.truth["censored"].to_numpy())[rows["traj"].to_numpy()]
        p = mode_target(rows, "simple")
        d = p - lab
        k, n = runs.max() + 1, d.size
        dk, nk = np.bincount(runs, weights=d), np.bincount(runs)
        b = d.mean()
        se = np.sqrt(k / (k - 1) * np.sum((dk - b * nk) ** 2)) / n
        rej["z"] += abs(b / se) > 2.394  # the normal critical value at 1/60
        rej["t"] += bias_test(p, lab.astype(float), runs, seed=i) < 0.05 / 3
    assert rej["t"] <= 11 and rej["t"] <= rej["z"] + 2, rej  # (1/60 of 300 is 5; 11 is its 99% bound)
