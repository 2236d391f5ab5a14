"""Strict propriety by simulation on the synthetic agent whose true q_t is known."""

import numpy as np
import pytest

from tpsviz import ScoreSettings, Schedule, compute_tps, from_frame
from tpsviz.synthetic.agent import Scenario, TaskFamily, length_tilted_target, simulate


def logit(p):
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return np.log(p / (1 - p))


def sig(x):
    return 1 / (1 + np.exp(-x))


@pytest.fixture(scope="module")
def sim():
    return simulate("webshop-like", n_trajectories=20_000, seed=99)


def with_distortions(sim):
    df = sim.steps.copy()
    q = df["conf_truthful"].to_numpy()
    lq = logit(q)
    df["conf_shift_up"] = sig(lq + 0.4)
    df["conf_shift_down"] = sig(lq - 0.4)
    df["conf_sharpened"] = sig(1.4 * lq)
    df["conf_flattened"] = sig(0.7 * lq)
    return df


def paired(res, a, b):
    m = res.tps_matrix()
    d = (m[a] - m[b]).dropna()
    return d.mean(), d.mean() / (d.std(ddof=1) / np.sqrt(d.size))


PROPER = [Schedule("uniform"), Schedule("linear"), Schedule("front", 0.85),
          Schedule("back", 0.9, 30)]


@pytest.mark.parametrize("schedule", PROPER, ids=lambda s: s.spec)
@pytest.mark.parametrize("ab", [(0.0, 0.0), (1.0, 1.0), (2.0, 0.5), (-0.5, -0.5)])
def test_truthful_wins_under_exact_censoring_with_true_qz(sim, schedule, ab):
    assert schedule.verdict.is_strictly_proper
    data = from_frame(with_distortions(sim))
    q_true = sim.truth.set_index("trajectory_id")["q_z_true"]
    st = ScoreSettings(alpha=ab[0], beta=ab[1], schedule=schedule, censoring="exact", n_boot=0)
    res = compute_tps(data, st, q_z=q_true)
    assert res.summary["n_qz_fallback"].eq(0).all()
    best = res.summary["tps_mean"].idxmax()
    assert best == "truthful", res.summary["tps_mean"].sort_values()
    for other in res.summary.index.drop("truthful"):
        delta, z = paired(res, "truthful", other)
        assert delta > 0 and z > 3, (other, delta, z)


@pytest.mark.parametrize("ab", [(0.0, 0.0), (1.0, 1.0)])
def test_simple_score_prefers_the_budget_aware_target(sim, ab):
    data = from_frame(sim.steps)
    st = ScoreSettings(alpha=ab[0], beta=ab[1], censoring="simple", n_boot=0)
    res = compute_tps(data, st, predictors=["truthful", "budget_aware"])
    delta, z = paired(res, "budget_aware", "truthful")
    assert delta > 0 and z > 3
    # ... while the exact score with the true q_Z prefers the truthful one
    res = compute_tps(data, ScoreSettings(alpha=ab[0], beta=ab[1], censoring="exact", n_boot=0),
                      predictors=["truthful", "budget_aware"],
                      q_z=sim.truth.set_index("trajectory_id")["q_z_true"])
    delta, z = paired(res, "truthful", "budget_aware")
    assert delta > 0 and z > 3


def test_per_length_schedule_prefers_the_length_tilted_target():
    sc = Scenario(
        name="finishing", n_trajectories=20_000, budget=400,
        families=(TaskFamily("easy", 0.5, 3, 0.6), TaskFamily("hard", 0.5, 4, 0.35)),
        emit_good=(0.55, 0.4, 0.05), emit_bad=(0.3, 0.5, 0.2), correct_good=0.9,
        correct_bad=0.2, seed=5)
    sim = simulate(sc)
    assert not sim.truth["censored"].any()  # every run finishes: T is the realised length
    df = sim.steps.copy()
    tilted = length_tilted_target(sim)
    assert np.abs(tilted - df["conf_truthful"]).max() > 0.05  # a materially different target
    df["conf_tilted"] = tilted
    data = from_frame(df)
    verdict = Schedule("per-length").verdict
    assert verdict.status == "not proper"
    for ab in [(0.0, 0.0), (1.0, 1.0)]:
        res = compute_tps(data, ScoreSettings(alpha=ab[0], beta=ab[1],
                                              schedule=Schedule("per-length"), n_boot=0),
                          predictors=["truthful", "tilted"])
        delta, z = paired(res, "tilted", "truthful")
        assert delta > 0 and z > 3, (ab, delta, z)
        # under a proper schedule the truthful trace wins again
        res = compute_tps(data, ScoreSettings(alpha=ab[0], beta=ab[1], n_boot=0),
                          predictors=["truthful", "tilted"])
        delta, z = paired(res, "truthful", "tilted")
        assert delta > 0 and z > 3
