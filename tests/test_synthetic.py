"""The synthetic agent: its q_t and m_t are exact, and the demo data are reproducible."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tpsviz import load
from tpsviz.synthetic.agent import SCENARIOS, simulate
from tpsviz.synthetic.demo import write_demo

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def big():
    return simulate("webshop-like", n_trajectories=30_000, seed=123)


def one_row_per_run(sim, seed=0):
    """For each run, its row at a step t* drawn uniformly from 1..H, if the run reached t*.

    t* is drawn independently of the run, and 'the run reached t*' is part of H_t*, so the
    rows are an unbiased sample of (H_t, Y) pairs (picking a step uniformly from 1..T would
    condition on the future length T). Rows of different runs are independent.
    """
    rows = sim.rows
    rng = np.random.default_rng(seed)
    n = int(rows["traj"].max()) + 1
    t_star = rng.integers(1, sim.scenario.budget + 1, n)
    hit = rows["t"].to_numpy() == t_star[rows["traj"].to_numpy()]
    return rows[hit].reset_index(drop=True)


def calibration_z(pred, target, bins=10):
    """Max over quantile bins of |mean target - mean pred| / SE."""
    edges = np.quantile(pred, np.linspace(0, 1, bins + 1))
    idx = np.clip(np.searchsorted(edges, pred, side="right") - 1, 0, bins - 1)
    zs = []
    for b in range(bins):
        m = idx == b
        if m.sum() < 50:
            continue
        se = np.sqrt(np.clip(pred[m].mean() * (1 - pred[m].mean()), 1e-4, None) / m.sum())
        zs.append(abs(target[m].mean() - pred[m].mean()) / se)
    return max(zs)


def test_q_t_is_calibrated_for_the_true_outcome(big):
    """E[Y | q_t] = q_t, with Y the true outcome (observed or not)."""
    r = one_row_per_run(big)
    y = big.truth["y_true"].to_numpy()[r["traj"].to_numpy()]
    assert calibration_z(r["q"].to_numpy(), y) < 4.5


def test_m_t_is_calibrated_for_the_pseudo_label(big):
    """E[Δ·Y | m_t] = m_t: success observed within the budget."""
    r = one_row_per_run(big, seed=1)
    tr = big.truth
    dy = ((~tr["censored"]) & (tr["y_true"] == 1)).to_numpy()[r["traj"].to_numpy()].astype(float)
    assert calibration_z(r["m"].to_numpy(), dy) < 4.5
    # and q_t is NOT calibrated for Δ·Y when success mass is lost to censoring
    assert calibration_z(r["q"].to_numpy(), dy) > 10


def continue_runs(sc, fam, good, k, t, n, rng):
    """Independent brute-force continuation of the process from (family, B, k, t)."""
    f = sc.families[fam]
    emit = np.array(sc.emit_good if good else sc.emit_bad)
    kk = np.full(n, k)
    done_at = np.full(n, -1)
    for step in range(t + 1, sc.budget + 1):
        live = done_at < 0
        u = rng.random(n)
        move = np.where(u < emit[0], 1, np.where(u < emit[0] + emit[1], 0, -1))
        kk = np.where(live, np.maximum(kk + move, 0), kk)
        done_at = np.where(live & (kk >= f.goals), step, done_at)
    c = sc.correct_good if good else sc.correct_bad
    y = rng.random(n) < c
    return y.mean(), (y & (done_at > 0)).mean()


def test_q_and_m_against_brute_force_continuations(big):
    sc = big.scenario
    rows = big.rows
    rng = np.random.default_rng(7)
    cand = rows[(rows["k"] < np.array([f.goals for f in sc.families])[rows["family"]])
                & (rows["t"] < sc.budget)]
    for i in rng.choice(len(cand), 6, replace=False):
        r = cand.iloc[i]
        n = 40_000
        yg, mg = continue_runs(sc, int(r.family), True, int(r.k), int(r.t), n, rng)
        yb, mb = continue_runs(sc, int(r.family), False, int(r.k), int(r.t), n, rng)
        q_bf = r.posterior * yg + (1 - r.posterior) * yb
        m_bf = r.posterior * mg + (1 - r.posterior) * mb
        assert abs(q_bf - r.q) < 0.012
        assert abs(m_bf - r.m) < 0.012


def test_true_qz_and_rollouts(big):
    tr = big.truth
    assert tr.loc[tr.censored, "q_z_true"].notna().all()
    assert tr.loc[~tr.censored, "q_z_true"].isna().all()
    ro = big.rollouts
    assert set(ro.columns) == {"trajectory_id", "rollout", "outcome"}
    qhat = ro.groupby("trajectory_id")["outcome"].mean()
    logq = big.steps.groupby("trajectory_id")["q_z"].first().dropna()
    pd.testing.assert_series_equal(qhat.sort_index(), logq.sort_index(), check_names=False)
    # rollouts estimate q_Z without bias: their mean over runs matches the mean true q_Z
    qtrue = tr.set_index("trajectory_id").loc[qhat.index, "q_z_true"]
    assert abs(qhat.mean() - qtrue.mean()) < 4 * qhat.std() / np.sqrt(qhat.size)


def test_scenarios_look_like_their_benchmarks():
    tau = simulate("tau2-like")
    assert tau.truth["censored"].mean() < 0.05
    v = tau.steps["conf_verbal"]
    assert v.median() >= 0.9 and (v >= 0.85).mean() > 0.8  # saturated near 0.9–1.0
    web = simulate("webshop-like")
    tr = web.truth
    assert 0.4 <= tr["censored"].mean() <= 0.55
    ratio = tr.loc[tr.censored, "length"].mean() / tr.loc[~tr.censored, "length"].mean()
    assert 2.5 <= ratio <= 3.5
    assert 200 <= len(tau.truth) <= 1000


def test_demo_data_regenerates_byte_identically(tmp_path):
    written = write_demo(tmp_path)
    assert len(written) == 11  # 5 binary files, then the drifting, multi-class and continuous demos (2 each)
    total = 0
    for p in written:
        committed = ROOT / "demo_data" / p.name
        assert committed.read_bytes() == p.read_bytes(), p.name
        total += committed.stat().st_size
    assert total < 6 * 1024 * 1024


def test_demo_logs_load_cleanly():
    for key in SCENARIOS:
        d = load(ROOT / "demo_data" / f"{key}.csv")
        assert "truthful" in d.predictors and "verbal" in d.predictors
        assert d.notes == []
    web = load(ROOT / "demo_data" / "webshop-like.csv")
    assert web.trajectories.loc[web.trajectories.censored, "q_z"].notna().all()
