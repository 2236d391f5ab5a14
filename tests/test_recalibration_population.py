"""Recalibration fitted on the population the score scores (issue 45, point 1; docs/theory.md §6).

- soft labels (a censored run's q_Z in exact mode) enter a fit as the expected log-likelihood: checked
  against the same fit on hard 0/1 rows replicated in the labels' proportions (an independent route);
- on a log whose raw signal is an exact monotone map of the mode's target and where a step budget cuts
  off about 40% of the runs, the converted signal is calibrated in the large and called trustworthy,
  while the old fit (complete runs only, scored under simple) is the +0.17 "optimistic" of the issue.
"""

from dataclasses import replace

import numpy as np
import pytest

import tpsviz
from tpsviz.diagnostics.calibrate import add_recalibrated
from tpsviz.diagnostics.recalibration import recalibrate
from tpsviz.synthetic.agent import SCENARIOS, logit, simulate


def _soft_runs(n_runs=120, seed=4):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 6, n_runs)
    g = np.repeat(np.arange(n_runs), lengths)
    x = rng.normal(size=g.size) + 0.8 * np.repeat(rng.normal(size=n_runs), lengths)
    p = 1 / (1 + np.exp(-(0.3 + 1.2 * x)))
    y_run = (rng.random(n_runs) < p[np.r_[0, np.cumsum(lengths)[:-1]]]).astype(float)
    soft = rng.random(n_runs) < 0.3  # a third of the runs "censored" with a soft label in quarters
    y_run[soft] = rng.integers(0, 5, soft.sum()) / 4
    return x, y_run[g], g


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_soft_labels_fit_as_replicated_hard_rows(method):
    """ℓ = k/4 on a row is the same fit as four copies of the row, k of them successes."""
    x, y, g = _soft_runs()
    soft = recalibrate(x, y, g, method=method, folds=4, seed=1, signal="raw")
    k = np.rint(4 * y).astype(int)
    xs = np.repeat(x, 4)
    ys = (np.tile(np.arange(4), x.size) < np.repeat(k, 4)).astype(float)  # k ones, 4 − k zeros per row
    hard = recalibrate(xs, ys, np.repeat(g, 4), method=method, folds=4, seed=1, signal="raw")
    # (the logistic solver stops at its tolerance: the two routes agree to about 1e-4)
    np.testing.assert_allclose(soft.probabilities, hard.probabilities[::4], atol=5e-4)
    # the test can tell: soft labels rounded to 0/1 give another fit
    rounded = recalibrate(x, np.rint(y), g, method=method, folds=4, seed=1, signal="raw")
    assert np.max(np.abs(rounded.probabilities - soft.probabilities)) > 0.02


def _budget_frame(seed: int, mode: str):
    """tau2-like runs with a step budget of 11 (about 45% cut off) and a raw signal that is an exact
    increasing map of the mode's target: m_t under simple, q_t (with the run's true q_Z) under exact."""
    sim = simulate(replace(SCENARIOS["tau2-like"], budget=11), n_trajectories=600, seed=seed)
    df = sim.steps[["trajectory_id", "step", "outcome", "censored"]].copy()
    target = sim.rows["m" if mode == "simple" else "q"].to_numpy()
    if mode == "exact":
        df["q_z"] = df["trajectory_id"].map(sim.truth.set_index("trajectory_id")["q_z_true"])
    df["raw_signal"] = 1.7 * logit(target) - 0.4
    return df, target


def _budget_log(seed: int, mode: str):
    df, target = _budget_frame(seed, mode)
    return tpsviz.from_frame(df), target


@pytest.mark.slow
@pytest.mark.parametrize("mode,method", [("simple", "platt"), ("simple", "isotonic"), ("exact", "platt"),
                                         ("exact", "isotonic")])
def test_a_monotone_map_of_the_target_converts_to_a_trustworthy_forecast(mode, method):
    data, target = _budget_log(seed=1, mode=mode)
    share = data.n_censored / data.n_trajectories
    assert 0.35 < share < 0.55
    ev = tpsviz.evaluate(data, recalibrate=method, censoring=mode, n_boot=200)
    v = ev.verdicts[f"signal@{method}"]
    assert v.label == "trustworthy", v.text
    assert abs(v.mean_forecast - v.success_rate) <= 0.02  # the success share it is scored against
    conv = ev.data.forecasts(f"signal@{method}")
    assert abs(np.mean(conv - target)) <= 0.02  # against the known target itself
    assert f"fitted on all {data.n_trajectories:,} runs, the {data.n_censored:,} cut off counted" in v.text


@pytest.mark.slow
def test_the_old_fit_on_complete_runs_was_the_wrong_population():
    """The same signal, its map fitted on complete runs only and scored under simple: the +0.17 to +0.19
    'optimistic' of issue 45. This is what the mode's labels fix (and proves the test above can fail)."""
    data, _ = _budget_log(seed=1, mode="simple")
    wrong, _ = add_recalibrated(data, "raw_signal", "platt", censoring="complete")
    ev = tpsviz.evaluate(wrong, censoring="simple", n_boot=200)
    v = ev.verdicts["signal@platt"]
    assert v.bias > 0.1 and v.label != "trustworthy"
    assert any("its map was fitted on the" in w for w in ev.warnings.all())


@pytest.mark.slow
def test_the_cli_converts_on_the_scored_population_and_refuses_exact_without_qz(tmp_path, capsys):
    """`score LOG --recalibrate platt --censoring simple` on the issue's kind of log: trustworthy, with its
    population named; `--censoring exact` without q_Z exits 2 with the remedies; `--q-z` is one of them."""
    from tpsviz.cli.main import main

    path = tmp_path / "budget.csv"
    _budget_frame(seed=2, mode="simple")[0].to_csv(path, index=False)
    assert main(["score", str(path), "--recalibrate", "platt", "--censoring", "simple", "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("signal@platt:"))
    assert "signal@platt: trustworthy" in line and "cut off counted as failures" in line
    assert main(["score", str(path), "--censoring", "exact", "--recalibrate", "platt", "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "exact censoring needs q_Z for every censored run" in err and "--q-z" in err and "--rollouts" in err
    assert main(["score", str(path), "--q-z", "0.3", "--recalibrate", "platt", "--n-boot", "0"]) == 0
    assert "q_Z = 0.3 for every censored run (exact mode)" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_under_the_upper_bound_a_cut_off_run_is_a_success_for_the_map_too(method):
    """``upper`` (a cut-off run counts as a success): a raw signal that is an exact monotone map of its target
    u_t = P(success or cut off | H_t) (the validation agent's exact u_t, budget 8: about 40% cut off)
    converts to a trustworthy forecast within 0.02 of the success share it is scored against."""
    from tpsviz.synthetic.validation import VALIDATION_AGENT, mode_target, simulate_tasks

    log = simulate_tasks(replace(VALIDATION_AGENT, budget=8), 600, seed=4)
    target = mode_target(log.rows, "upper")
    data = log.to_data({"raw_signal": 1.7 * logit(target) - 0.4})
    assert 0.3 < data.n_censored / data.n_trajectories < 0.5
    ev = tpsviz.evaluate(data, recalibrate=method, censoring="upper", n_boot=200)
    v = ev.verdicts[f"signal@{method}"]
    assert v.label == "trustworthy", v.text
    assert abs(v.mean_forecast - v.success_rate) <= 0.02
    assert abs(np.mean(ev.data.forecasts(f"signal@{method}") - target)) <= 0.02
    assert "cut off counted as successes" in v.text
