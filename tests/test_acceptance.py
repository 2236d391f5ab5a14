"""The issue's headline checks on the committed demo data (docs/theory.md §1 headline results).

- tau2-like (450 runs): cross-fitted Platt recalibration of ``verbal`` barely moves AUROC
  (|Δ| < 0.01) while TPS (log score) improves by Δ/SE > 8, several times the AUROC's |Δ/SE|
  (measured 9.9–11.1 on the demo and seeds 5, 9, 11, 13 with maps fitted on the simple score's population,
  issue 45).
- webshop-like: including censored runs with the simple score (q_Z = 0) instead of dropping them
  (complete-case) shifts mean TPS up for the under-confident predictor and down for the
  over-confident one, each with a bootstrap CI over trajectories.
- The Monte-Carlo audit: exact (q̂_Z from rollouts) and simple scores differ beyond their CI.
"""

from pathlib import Path

import pytest

from tpsviz import ScoreSettings, load
from tpsviz.diagnostics.audit import mc_audit
from tpsviz.diagnostics.calibrate import add_recalibrated
from tpsviz.diagnostics.compare import censoring_shift, compare
from tpsviz.synthetic.agent import simulate

DEMO = Path(__file__).resolve().parents[1] / "demo_data"
LOG = ScoreSettings(alpha=0.0, beta=0.0, n_boot=2000)  # log score, uniform weights


def _platt_vs_raw(data):
    d2, _ = add_recalibrated(data, "verbal", "platt", folds=5)
    return compare(d2, LOG, baseline="verbal", predictors=["verbal@platt"],
                   metrics=("auroc",)).loc["verbal@platt"]


@pytest.fixture(scope="module")
def tau_platt():
    return _platt_vs_raw(load(DEMO / "tau2-like.csv"))


def test_tau2_platt_barely_moves_auroc(tau_platt):
    assert abs(tau_platt.auroc_delta) < 0.01
    assert abs(tau_platt.auroc_z) < 3


def test_tau2_headline(tau_platt):
    assert tau_platt.tps_delta > 0
    assert tau_platt.tps_z > 8 and tau_platt.tps_z > 3 * abs(tau_platt.auroc_z)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [5, 9])
def test_tau2_headline_holds_for_other_draws(seed):
    """Not a property of one lucky draw: the same scenario with other seeds."""
    r = _platt_vs_raw(simulate("tau2-like", seed=seed).to_data())
    assert abs(r.auroc_delta) < 0.01
    assert r.tps_z > 8 and r.tps_z > 3 * abs(r.auroc_z)


@pytest.fixture(scope="module")
def web():
    return load(DEMO / "webshop-like.csv")


@pytest.fixture(scope="module")
def shift(web):
    return censoring_shift(web, LOG, ["pessimistic", "verbal", "truthful"], from_mode="complete",
                           to_mode="simple")


def test_webshop_is_heavily_censored(web):
    t = web.trajectories
    assert 0.4 < t.censored.mean() < 0.5
    assert t[t.censored].length.mean() > 2.5 * t[~t.censored].length.mean()


def test_webshop_shift_over_confident_negative(shift):
    v = shift.loc["verbal"]
    assert v["shift"] < 0 and v.shift_ci_high < 0            # per trajectory
    assert v.shift_step < 0 and v.shift_step_ci_high < 0  # per step


def test_webshop_shift_under_confident_positive(shift):
    h = shift.loc["pessimistic"]
    assert h["shift"] > 0 and h.shift_ci_low > 0            # per trajectory
    assert h.shift_step > 0 and h.shift_step_ci_low > 0      # per weighted step


def test_mc_audit_exact_and_simple_differ_beyond_ci(web):
    audit = mc_audit(web, DEMO / "webshop-like_rollouts.csv", LOG)
    t = audit.table
    assert audit.info["n_with_rollouts"] == audit.info["n_censored"] > 0
    for name, r in t.iterrows():  # paired CI of exact − simple excludes 0
        assert r.delta_ci_low > 0 or r.delta_ci_high < 0, name
        assert abs(r.delta_z) > 5, name
    for name in ("truthful", "verbal"):  # and the two scores' own CIs do not overlap
        r = t.loc[name]
        assert r.exact_ci_high < r.simple_ci_low or r.simple_ci_high < r.exact_ci_low, name
