"""calibrate: data-level cross-fitted recalibration, never fitted on a run's own outcome."""

import numpy as np
import pytest

from tpsviz import ScoreSettings, compute_tps, from_frame
from tpsviz.diagnostics.calibrate import add_all_recalibrated, add_recalibrated, recalibrated_name
from tpsviz.diagnostics.recalibration import recalibrate
from tpsviz.synthetic.agent import simulate


@pytest.fixture(scope="module")
def sim():
    return simulate("webshop-like", n_trajectories=150, seed=21)


@pytest.fixture(scope="module")
def data(sim):
    return sim.to_data()


def _labels_by_hand(data, mode):
    """Each row's label under a censoring mode, written out independently of the code under test:
    Y of a complete run; a censored run's 0 (simple), 1 (upper), q_z (exact), NaN (complete)."""
    t = data.trajectories
    per_run = []
    for y, cens, q in zip(t["outcome"], t["censored"], t["q_z"]):
        if not cens:
            per_run.append(float(y))
        else:
            per_run.append({"simple": 0.0, "upper": 1.0, "exact": float(q), "complete": np.nan}[mode])
    return np.array(per_run)[data.steps.traj.to_numpy()]


@pytest.mark.parametrize("mode", ["complete", "simple", "upper", "exact"])
def test_matches_recalibrate_on_the_modes_labels_and_is_scorable(data, mode):
    """The map is fitted with the labels of the censoring mode the predictor is scored under (issue 45)."""
    d2, rep = add_recalibrated(data, "verbal", "platt", folds=4, seed=3, censoring=mode)
    assert "verbal@platt" in d2.predictors and "verbal@platt" not in data.predictors
    codes = data.steps.traj.to_numpy()
    y = _labels_by_hand(data, mode)
    direct = recalibrate(data.forecasts("verbal"), y, codes, "platt", 4, seed=3)
    np.testing.assert_allclose(d2.forecasts("verbal@platt"), direct.probabilities, rtol=0, atol=0)
    assert rep["name"] == "verbal@platt" and rep["n_labelled"] == int((~np.isnan(y)).sum())
    assert rep["censoring"] == mode
    n, k = data.n_trajectories, data.n_censored
    assert rep["fitted_on"].startswith(f"the {n - k:,} complete runs" if mode == "complete" else f"all {n:,} runs")
    res = compute_tps(d2, ScoreSettings(censoring=mode, n_boot=0), ["verbal", "verbal@platt"])
    assert res.summary.loc["verbal@platt", "tps_mean"] > res.summary.loc["verbal", "tps_mean"]
    # fitted on the scored population, the conversion is calibrated in the large on it
    lab, p = y[~np.isnan(y)], d2.forecasts("verbal@platt")[~np.isnan(y)]
    assert abs(p.mean() - lab.mean()) < 0.02


def test_own_outcome_never_used(sim):
    """Flip the outcome of one complete run: its recalibrated forecasts do not move."""
    df = sim.steps.copy()
    d0 = from_frame(df)
    tr = d0.trajectories
    victim = tr.trajectory_id[~tr.censored].iloc[7]
    df.loc[df.trajectory_id == victim, "outcome"] = 1 - df.loc[df.trajectory_id == victim,
                                                               "outcome"]
    d1 = from_frame(df)
    for method in ("platt", "isotonic", "beta"):
        a, _ = add_recalibrated(d0, "noisy", method, folds=5, seed=1)
        b, _ = add_recalibrated(d1, "noisy", method, folds=5, seed=1)
        rows = (d0.steps.trajectory_id == victim).to_numpy()
        name = f"noisy@{method}"
        np.testing.assert_array_equal(a.forecasts(name)[rows], b.forecasts(name)[rows])
        assert not np.array_equal(a.forecasts(name), b.forecasts(name))  # others did move


def test_censored_runs_enter_the_fit_by_the_mode(sim):
    """Changing a censored run's signal changes no other row in complete-case mode (it is never in a training
    set), and does change other folds' rows in simple mode (there it is a failure the map is fitted on)."""
    df = sim.steps.copy()
    d0 = from_frame(df)
    cens_id = d0.trajectories.trajectory_id[d0.trajectories.censored].iloc[0]
    df.loc[df.trajectory_id == cens_id, "raw_logprob"] -= 3.0
    d1 = from_frame(df)
    other = (d0.steps.trajectory_id != cens_id).to_numpy()
    for mode, same in (("complete", True), ("simple", False)):
        a, _ = add_recalibrated(d0, "raw_logprob", "platt", seed=2, per_step=True, censoring=mode)
        b, _ = add_recalibrated(d1, "raw_logprob", "platt", seed=2, per_step=True, censoring=mode)
        assert np.array_equal(a.forecasts("logprob@platt")[other], b.forecasts("logprob@platt")[other]) == same
        assert np.isfinite(a.forecasts("logprob@platt")).all()


def test_signals_directions_and_names(data):
    d2, rep = add_recalibrated(data, "unc_hesitation", "isotonic", seed=0)
    p = d2.forecasts("hesitation@isotonic")
    assert ((p >= 0) & (p <= 1)).all() and rep["direction"] == -1
    x = data.steps.unc_hesitation.to_numpy()
    # within a fold the isotonic map is non-increasing in the uncertainty
    assert np.corrcoef(x, p)[0, 1] < 0
    assert recalibrated_name(data, "raw_logprob", "platt") == "logprob@platt"
    with pytest.raises(ValueError, match="raw signal"):
        add_recalibrated(data, "raw_logprob", "beta")
    with pytest.raises(ValueError, match="nothing to recalibrate called 'nope'.*verbal"):
        add_recalibrated(data, "nope")


def test_name_clash_keeps_prefix(sim):
    df = sim.steps.copy()
    df["conf_logprob"] = df["conf_noisy"]
    d = from_frame(df)
    assert recalibrated_name(d, "raw_logprob", "platt") == "raw_logprob@platt"


def test_missing_forecasts_stay_missing(sim):
    df = sim.steps.copy()
    df.loc[[3, 50], "conf_verbal"] = np.nan
    d = from_frame(df)
    d2, rep = add_recalibrated(d, "verbal", "beta")
    v = d2.forecasts("verbal@beta")
    assert np.isnan(v).sum() == 2 and rep["n_missing"] == 2


def test_add_all(data):
    d2, reps = add_all_recalibrated(data, "beta", folds=3)
    assert "verbal@beta" in d2.predictors and "truthful@beta" in d2.predictors
    assert reps["raw_logprob"].startswith("skipped")
    d3, reps = add_all_recalibrated(data, "platt", folds=3)
    assert {"logprob@platt", "hesitation@platt"} <= set(d3.predictors)
