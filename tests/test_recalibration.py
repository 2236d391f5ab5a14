"""Cross-fitted recalibration: never uses a run's own outcome; recovers calibration."""

import numpy as np
import pytest

from tpsviz.diagnostics.metrics import tece
from tpsviz.diagnostics.recalibration import recalibrate


def _runs(n_traj=300, steps=6, seed=0):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_traj), steps)
    step = np.tile(np.arange(1, steps + 1), n_traj)
    q = rng.uniform(0.05, 0.95, g.size)
    y = (rng.random(n_traj) < q.reshape(n_traj, steps).mean(1)).astype(float)[g]
    return q, y, g, step


@pytest.mark.parametrize("method", ["platt", "isotonic", "beta"])
@pytest.mark.parametrize("per_step", [False, True])
def test_own_outcome_never_used(method, per_step):
    q, y, g, step = _runs()
    kw = dict(method=method, folds=4, seed=3, per_step=step if per_step else None)
    base = recalibrate(q, y, g, **kw).probabilities
    target = g == 17
    y2 = y.copy()
    y2[target] = 1 - y2[target]
    flipped = recalibrate(q, y2, g, **kw).probabilities
    np.testing.assert_array_equal(flipped[target], base[target])
    assert not np.array_equal(flipped[~target], base[~target])  # the test can fail
    assert ((base >= 0) & (base <= 1)).all()


def test_unlabelled_rows_are_predicted_but_never_fitted():
    q, y, g, _ = _runs()
    y = y.copy()
    target = g == 5
    y[target] = np.nan
    a = recalibrate(q, y, g, "platt", folds=5, seed=1)
    q2 = q.copy()
    q2[target] = 0.999  # only the unlabelled run's signal changes
    b = recalibrate(q2, y, g, "platt", folds=5, seed=1)
    np.testing.assert_array_equal(a.probabilities[~target], b.probabilities[~target])
    assert np.isfinite(a.probabilities).all()
    assert a.report["n_labelled"] == y.size - target.sum()
    assert a.report["n_trajectories"] == 300


def test_platt_undoes_a_logit_linear_distortion():
    rng = np.random.default_rng(4)
    n = 20000
    q = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < q).astype(float)
    g = np.arange(n) // 4
    lq = np.log(q / (1 - q))
    f = 1 / (1 + np.exp(-(2.5 * lq + 1.5)))  # over-confident, biased upwards
    res = recalibrate(f, y, g, "platt", folds=5)
    assert tece(f, y, 10) > 0.1
    assert tece(res.probabilities, y, 10) < 0.02
    assert np.mean(np.abs(res.probabilities - q)) < 0.02


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_raw_uncertainty_signal_with_direction(method):
    rng = np.random.default_rng(5)
    n = 20000
    q = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < q).astype(float)
    g = np.arange(n) // 4
    unc = -3.0 * np.log(q / (1 - q)) + 10.0  # higher = less confident, not a probability
    res = recalibrate(unc, y, g, method, folds=5, signal="raw", direction=-1)
    assert np.mean(np.abs(res.probabilities - q)) < 0.03
    assert np.corrcoef(res.probabilities, q)[0, 1] > 0.95
    with pytest.raises(ValueError, match="beta calibration"):
        recalibrate(unc, y, g, "beta", signal="raw")
    with pytest.raises(ValueError, match="probability"):
        recalibrate(unc, y, g, "platt")


def test_per_step_fallback_is_counted():
    q, y, g, step = _runs(n_traj=200, steps=5)
    step = step.copy()
    step[(g < 6) & (step == 1)] = 99  # a step with 6 rows in total: never enough to fit
    res = recalibrate(q, y, g, "isotonic", folds=3, per_step=step, seed=0)
    rep = res.report
    assert rep["per_step"] and rep["fallback_steps"] == [99]
    folds_with_99 = rep["n_fallback"]
    assert 1 <= folds_with_99 <= 3
    assert rep["n_fit"] == 3 + 3 * 5  # pooled per fold + five ordinary steps per fold
    assert rep["method"] == "isotonic" and rep["folds"] == 3


def test_bad_input():
    q, y, g, _ = _runs(n_traj=20)
    with pytest.raises(ValueError, match="differ in length"):
        recalibrate(q[:-1], y, g)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        recalibrate(q, y * 2, g)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        recalibrate(q, y - 0.5, g)
    with pytest.raises(ValueError, match="folds"):
        recalibrate(q, y, g, folds=1)
    with pytest.raises(ValueError, match="method"):
        recalibrate(q, y, g, method="temperature")
    with pytest.raises(ValueError, match="direction"):
        recalibrate(q, y, g, direction=0)
    with pytest.raises(ValueError, match="at least"):
        recalibrate(q[:12], y[:12], g[:12], folds=5)
    with pytest.raises(ValueError, match="one class"):
        recalibrate(q, np.zeros_like(y), g, folds=2)


def test_a_constant_signal_is_not_recalibrated_and_the_others_are():
    """A signal with one value on every row (the demo's base rate) has nothing to recalibrate: its
    cross-fitted map is each fold's base rate, and their differences alone ranked the runs (AUROC
    0.467 on the demo, flagged as worse than chance). It is skipped with the reason; the others are
    recalibrated as before."""
    from pathlib import Path

    import tpsviz
    from tpsviz.diagnostics.calibrate import add_all_recalibrated, add_recalibrated

    data = tpsviz.load(Path(__file__).resolve().parents[1] / "demo_data" / "tau2-like.csv")
    with pytest.raises(ValueError, match="same value on every row"):
        add_recalibrated(data, "flat", "platt")
    out, reports = add_all_recalibrated(data, "platt")
    assert reports["flat"].startswith("skipped:") and "same value on every row" in reports["flat"]
    assert "flat@platt" not in out.predictors
    assert {"logprob@platt", "hesitation@platt", "verbal@platt"} <= set(out.predictors)
