"""The validation generator (tpsviz/synthetic/validation.py) against independent computations.

- m_t, d_t, c_t: a brute-force Monte-Carlo continuation of the walk from a row's state (its own loop,
  not the dynamic programme of tpsviz.synthetic.agent);
- q_t, m_t, d_t, c_t and the true q_Z against the outcomes the generator drew (y_true exists for
  censored runs too), within bins of the target and of the task's prior, SEs clustered by task: a q_t
  that ignored the task (the family's prior) fails the same check;
- the task structure, the mean-keeping stretches and the monotone raw signals.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from tpsviz.synthetic.agent import logit, sigmoid
from tpsviz.synthetic.validation import (
    VALIDATION_AGENT, distortions, mode_target, raw_signals, simulate_tasks, stretch_centre)

SHORT = replace(VALIDATION_AGENT, budget=8)


def _continue(sc, family, posterior, k, t, n, rng):
    """Brute force: n continuations of a run from its state after step t; (Δ, Y) of each."""
    f = sc.families[family]
    good = rng.random(n) < posterior
    emit = np.where(good[:, None], np.array(sc.emit_good), np.array(sc.emit_bad))
    y = rng.random(n) < np.where(good, sc.correct_good, sc.correct_bad)
    kk = np.full(n, k)
    done = kk >= f.goals
    for _ in range(t + 1, sc.budget + 1):
        u = rng.random(n)
        step = np.where(u < emit[:, 0], 1, np.where(u < emit[:, 0] + emit[:, 1], 0, -1))
        kk = np.where(done, kk, np.maximum(kk + step, 0))
        done |= kk >= f.goals
    return done, y


def test_continuation_matches_m_d_c():
    log = simulate_tasks(SHORT, 400, seed=11, epochs=4, spread=1.0)
    r = log.rows
    rng = np.random.default_rng(5)
    open_rows = r[(r["d"] > 0.05) & (r["d"] < 0.95)]
    picks = open_rows.sample(8, random_state=3)
    n = 60_000
    for _, row in picks.iterrows():
        done, y = _continue(SHORT, int(row["family"]), float(row["posterior"]), int(row["k"]), int(row["t"]), n, rng)
        for name, sample, exact in (("d", done, row["d"]), ("m", done & y, row["m"]), ("q", y, row["q"])):
            se = np.sqrt(exact * (1 - exact) / n)
            assert abs(sample.mean() - exact) < 4.5 * se + 1e-12, (name, dict(row), sample.mean())
        c_hat = y[done].mean()
        se_c = np.sqrt(row["c"] * (1 - row["c"]) / done.sum())
        assert abs(c_hat - row["c"]) < 4.5 * se_c, (dict(row), c_hat)


def _clustered_mean(resid: np.ndarray, cluster: np.ndarray) -> tuple[float, float]:
    """Mean of resid and its SE with clusters (sum of centred values per cluster)."""
    m = resid.mean()
    g = np.bincount(cluster, weights=resid - m)
    return float(m), float(np.sqrt(np.sum(g ** 2)) / resid.size)


@pytest.fixture(scope="module")
def big():
    return simulate_tasks(SHORT, 30_000, seed=7, epochs=5, spread=1.5)


def _binned_residuals(pred, label, weight, groups, task):
    """z of the mean residual weight·(label − pred) in each group (rows with weight only)."""
    out = []
    for g in np.unique(groups):
        sel = (groups == g) & (weight > 0)
        if sel.sum() < 500:
            continue
        m, se = _clustered_mean(label[sel] - pred[sel], task[sel])
        if se == 0:  # every row of the bin is certain (d_t = 1 at submission): no residual at all
            assert m == 0
            continue
        out.append(m / se)
    return np.array(out)


def _bins(x: np.ndarray, k: int) -> np.ndarray:
    return np.searchsorted(np.quantile(x, np.linspace(0, 1, k + 1)[1:-1]), x, side="right")


def test_targets_are_calibrated_against_the_outcomes_within_task_prior_bins(big):
    r, tr = big.rows, big.truth
    traj, task = r["traj"].to_numpy(), r["task"].to_numpy()
    y = tr["y_true"].to_numpy()[traj].astype(float)
    delta = (~tr["censored"].to_numpy())[traj].astype(float)
    prior_bin = _bins(tr["prior"].to_numpy()[traj], 4)
    checks = {"q": (r["q"], y, np.ones_like(y)), "m": (r["m"], delta * y, np.ones_like(y)),
              "d": (r["d"], delta, np.ones_like(y)), "c": (r["c"], y, delta)}
    zs = {}
    for name, (pred, label, weight) in checks.items():
        pred = pred.to_numpy()
        groups = prior_bin * 10 + _bins(pred + 1e-9 * np.arange(pred.size) / pred.size, 5)
        zs[name] = _binned_residuals(pred, label, weight, groups, task)
        assert zs[name].size >= 12, name
        assert np.max(np.abs(zs[name])) < 4.0, (name, np.round(zs[name], 2))
    # the same check can fail: q_t computed from the family's prior instead of the task's
    fam_prior = np.array([f.prior_good for f in SHORT.families])[r["family"].to_numpy()]
    lo = logit(r["posterior"].to_numpy()) - logit(tr["prior"].to_numpy()[traj]) + logit(fam_prior)
    q_fam = sigmoid(lo) * SHORT.correct_good + (1 - sigmoid(lo)) * SHORT.correct_bad
    groups = prior_bin * 10 + _bins(q_fam, 5)
    z_fam = _binned_residuals(q_fam, y, np.ones_like(y), groups, task)
    assert np.max(np.abs(z_fam)) > 10, np.round(z_fam, 1)


def test_true_qz_is_q_at_the_last_step_and_calibrated(big):
    r, tr = big.rows, big.truth
    cens = tr["censored"].to_numpy()
    last = r.groupby("traj")["q"].last().to_numpy()
    np.testing.assert_array_equal(tr["q_z_true"].to_numpy()[cens], last[cens])
    assert tr["q_z_true"][~cens].isna().all()
    m, se = _clustered_mean(tr["y_true"].to_numpy()[cens] - last[cens], tr["task"].to_numpy()[cens])
    assert abs(m) < 4 * se
    assert 0.3 < cens.mean() < 0.5  # the short budget cuts off about 40% of runs


def test_identities_between_the_targets():
    log = simulate_tasks(SHORT, 300, seed=2, epochs=3, spread=1.0)
    r, tr = log.rows, log.truth
    goals = np.array([f.goals for f in SHORT.families])[r["family"].to_numpy()]
    sub = r["k"].to_numpy() >= goals
    np.testing.assert_allclose(r["d"][sub], 1.0)
    np.testing.assert_allclose(r["m"][sub], r["q"][sub])
    open_ = r["d"].to_numpy() > 0
    np.testing.assert_allclose(r["c"][open_], (r["m"] / r["d"])[open_], rtol=1e-12)
    np.testing.assert_allclose(r["u"], r["m"] + 1 - r["d"])
    last = r.groupby("traj").tail(1)
    cens_last = last[tr["censored"].to_numpy()[last["traj"].to_numpy()]]
    np.testing.assert_allclose(cens_last[["m", "d"]].to_numpy(), 0.0)
    assert (r["m"] <= r["q"] + 1e-12).all() and (r["m"] <= r["d"] + 1e-12).all()
    for mode, col in (("simple", "m"), ("exact", "q"), ("complete", "c"), ("upper", "u")):
        np.testing.assert_array_equal(mode_target(r, mode), r[col].to_numpy())
    with pytest.raises(ValueError, match="mode must be one of"):
        mode_target(r, "other")


def test_task_structure_and_columns():
    log = simulate_tasks(SHORT, 23, seed=4, epochs=5, spread=1.0)
    tr = log.truth
    assert tr["task"].tolist() == [i // 5 for i in range(23)]
    per_task = tr.groupby("task").agg(fam=("family", "nunique"), prior=("prior", "nunique"), n=("task", "size"))
    assert (per_task["fam"] == 1).all() and (per_task["prior"] == 1).all()
    assert per_task["n"].tolist() == [5, 5, 5, 5, 3]
    steps = log.steps
    first = steps.groupby("trajectory_id")["task"].first()
    assert first.tolist() == [f"task-{i // 5:04d}" for i in range(23)]
    # without a task effect every task has its family's prior
    flat = simulate_tasks(SHORT, 50, seed=4, epochs=2, spread=0.0).truth
    fam_prior = np.array([f.prior_good for f in SHORT.families])[flat["family"].to_numpy()]
    np.testing.assert_allclose(flat["prior"], fam_prior)
    # the q_z column holds the true q_Z on censored runs only, and the log reads
    data = log.to_data({"conf_truthful": log.rows["q"]}, q_z=True)
    t = data.trajectories.set_index("trajectory_id")
    np.testing.assert_allclose(t["q_z"].to_numpy(dtype=float), log.truth["q_z_true"].to_numpy())
    assert "task" in data.metadata_columns
    with pytest.raises(ValueError):
        simulate_tasks(SHORT, 0, seed=1)


def test_stretches_keep_the_mean_and_shifts_are_clipped():
    log = simulate_tasks(SHORT, 400, seed=9)
    target = mode_target(log.rows, "simple")
    rows = np.random.default_rng(0).random(target.size) < 0.6
    d = distortions(target, np.random.default_rng(1), 0.31, rows=rows)
    for name, factor in (("logit_x2", 2.0), ("logit_half", 0.5)):
        assert abs(d[name][rows].mean() - target[rows].mean()) < 1e-8
        # the stretch itself: logit F' − c = factor·(logit F − c), on rows where F is not clipped to 0
        c = stretch_centre(target, factor, rows)
        ok = (target > 1e-6) & (target < 1 - 1e-6)
        np.testing.assert_allclose(logit(d[name][ok]) - c, factor * (logit(target[ok]) - c), atol=1e-6)
    assert d["plus15"].min() >= 0.01 and d["minus15"].max() <= 0.99
    np.testing.assert_allclose(d["plus15"], np.clip(target + 0.15, 0.01, 0.99))
    assert np.all(d["constant"] == 0.31)
    assert abs(np.std(logit(d["logit_noise"]) - logit(target))) == pytest.approx(1.0, abs=0.05)


def test_raw_signals_rank_rows_as_the_target():
    log = simulate_tasks(SHORT, 200, seed=3)
    target = mode_target(log.rows, "simple")
    for name, raw in raw_signals(target).items():
        above = np.clip(target, 1e-6, 1 - 1e-6)
        order = np.argsort(above, kind="stable")
        assert np.all(np.diff(raw[order]) >= 0), name
        assert pd.Series(raw).corr(pd.Series(above), method="spearman") == pytest.approx(1.0), name
