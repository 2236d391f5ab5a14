"""Reference forecasters from the log alone (tpsviz.forecasts.references; docs/forecasts.md §1):
the beta-binomial prior against an independent fit, the leave-out rule bit for bit, the formulas
against brute-force loops, and the synthetic agent's known truth."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics.compare import compare
from tpsviz.diagnostics.verdict.checks import z_value
from tpsviz.forecasts.betabinomial import fit_beta_binomial, log_likelihood, shrunk_rate
from tpsviz.forecasts.references import (
    PSEUDO_RUNS, REFERENCES, add_references, exclusive_group_sums, reference_forecasts, run_folds, run_labels,
    step_curve, task_column)
from tpsviz.io.tables.longform import from_frame
from tpsviz.synthetic.agent import simulate


# ----------------------------------------------------------------------------- a small log
def small_log(n_runs: int = 40, n_tasks: int = 8, seed: int = 0, censor_share: float = 0.2) -> TrajectoryData:
    """Runs of 1-9 steps on tasks of different difficulty; some censored with a q_z."""
    rng = np.random.default_rng(seed)
    task = rng.integers(0, n_tasks, n_runs)
    p = np.linspace(0.1, 0.9, n_tasks)[task]
    y = (rng.random(n_runs) < p).astype(float)
    cens = rng.random(n_runs) < censor_share
    length = rng.integers(1, 10, n_runs)
    qz = rng.random(n_runs).round(3)
    rows = []
    for i in range(n_runs):
        for t in range(1, length[i] + 1):
            rows.append({"trajectory_id": f"r{i:03d}", "step": t, "outcome": np.nan if cens[i] else y[i],
                         "censored": bool(cens[i]), "q_z": qz[i] if cens[i] else np.nan,
                         "task": f"k{task[i]}", "conf_agent": float(np.clip(p[i] + 0.1 * rng.standard_normal(),
                                                                            0.01, 0.99))})
    return from_frame(pd.DataFrame(rows), source="small")


SMALL = small_log()


def with_run_changed(data: TrajectoryData, i: int) -> TrajectoryData:
    """The log with run i's outcome flipped (finished run) or its q_z moved (censored run)."""
    t = data.trajectories.copy()
    if bool(t.loc[i, "censored"]):
        t.loc[i, "q_z"] = 1.0 - float(t.loc[i, "q_z"]) if t.loc[i, "q_z"] != 0.5 else 0.9
    else:
        t.loc[i, "outcome"] = 1.0 - float(t.loc[i, "outcome"])
    return TrajectoryData(data.steps, t, list(data.predictors), dict(data.signals), data.source,
                          list(data.notes), dict(data.reading))


# ----------------------------------------------------------------------------- beta-binomial
def _independent_fit(s: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """MLE of (μ, κ) by Nelder-Mead on (log a, log b) of a log-likelihood written as products:
    log Π_{j<s}(a+j) Π_{j<n-s}(b+j) / Π_{j<n}(a+b+j)."""
    from scipy.optimize import minimize

    def nll(theta):
        a, b = math.exp(theta[0]), math.exp(theta[1])
        total = 0.0
        for sk, nk in zip(s.astype(int), n.astype(int)):
            total += sum(math.log(a + j) for j in range(sk)) + sum(math.log(b + j) for j in range(nk - sk))
            total -= sum(math.log(a + b + j) for j in range(nk))
        return -total

    res = minimize(nll, np.array([0.0, 0.0]), method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
    a, b = math.exp(res.x[0]), math.exp(res.x[1])
    return a / (a + b), a + b


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beta_binomial_mle_matches_an_independent_fit(seed):
    rng = np.random.default_rng(seed)
    n = rng.integers(2, 9, 60).astype(float)
    p = rng.beta(2.0, 3.0, n.size)
    s = rng.binomial(n.astype(int), p).astype(float)
    fit = fit_beta_binomial(s, n)
    mu, kappa = _independent_fit(s, n)
    assert fit.at_bound == ""
    assert fit.mu == pytest.approx(mu, rel=1e-4)
    assert fit.kappa == pytest.approx(kappa, rel=1e-3)


def test_beta_binomial_log_likelihood_is_the_product_form():
    s, n = np.array([0.0, 3.0, 5.0, 1.0]), np.array([2.0, 4.0, 5.0, 3.0])
    a, b = 0.7, 1.9
    direct = 0.0
    for sk, nk in zip(s.astype(int), n.astype(int)):
        direct += sum(math.log(a + j) for j in range(sk)) + sum(math.log(b + j) for j in range(nk - sk))
        direct -= sum(math.log(a + b + j) for j in range(nk))
    assert log_likelihood(a / (a + b), a + b, s, n) == pytest.approx(direct, rel=1e-12)


def test_identical_tasks_put_kappa_at_its_upper_bound():
    """Tasks that differ by binomial noise only: the prior is the base rate (κ at its bound)."""
    rng = np.random.default_rng(5)
    n = np.full(200, 4.0)
    s = rng.binomial(4, 0.3, 200).astype(float)
    fit = fit_beta_binomial(s, n)
    assert fit.at_bound == "kappa_max" or fit.kappa > 200
    assert fit.mu == pytest.approx(s.sum() / n.sum(), abs=0.01)


# ----------------------------------------------------------------------------- formulas by loops
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(0, 1)), min_size=1, max_size=30))
def test_exclusive_group_sums_against_a_loop(items):
    g = np.array([a for a, _ in items])
    x = np.array([b for _, b in items])
    got = exclusive_group_sums(x, g)
    for i in range(len(items)):
        want = sum(x[j] for j in range(len(items)) if j != i and g[j] == g[i])
        assert got[i] == pytest.approx(want, abs=1e-12)


def test_step_curve_against_a_loop():
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 12, 50)
    labels = rng.random(50).round(2)
    curve = step_curve(lengths, labels)
    rate = labels.mean()
    for t in range(1, lengths.max() + 1):
        alive = lengths >= t
        want = (labels[alive].sum() + PSEUDO_RUNS * rate) / (alive.sum() + PSEUDO_RUNS)
        assert curve[t - 1] == pytest.approx(want, rel=1e-12)


def test_ref_step_and_ref_task_are_their_formulas_on_other_folds():
    data = SMALL
    values, info = reference_forecasts(data, "exact", folds=5, seed=7)
    labels = run_labels(data, "exact")
    fold = run_folds(data.n_trajectories, 5, 7)
    lengths = data.trajectories["length"].to_numpy()
    tasks = data.trajectories["task"].to_numpy()
    traj, tt = data.steps["traj"].to_numpy(), data.steps["t"].to_numpy()
    for row in range(0, data.n_steps, 7):
        i, t = traj[row], tt[row]
        train = (fold != fold[i]) & ~np.isnan(labels)
        curve = step_curve(lengths[train], labels[train])
        assert values["ref:step"][row] == pytest.approx(curve[min(t, curve.size) - 1], rel=1e-12)
        others = (tasks == tasks[i]) & (np.arange(data.n_trajectories) != i) & ~np.isnan(labels)
        prior = info["priors"][fold[i]]
        want = (labels[others].sum() + prior["mu"] * prior["kappa"]) / (others.sum() + prior["kappa"])
        assert values["ref:task"][row] == pytest.approx(want, rel=1e-12)


def test_ref_task_prior_is_fitted_without_the_fold():
    data = SMALL
    _, info = reference_forecasts(data, "simple", folds=4, seed=1)
    labels = run_labels(data, "simple")
    fold = run_folds(data.n_trajectories, 4, 1)
    codes = pd.factorize(data.trajectories["task"])[0]
    for f, prior in enumerate(info["priors"]):
        m = fold != f
        s = np.bincount(codes[m], weights=labels[m])
        n = np.bincount(codes[m]).astype(float)
        want = fit_beta_binomial(s, n)
        assert prior["mu"] == want.mu and prior["kappa"] == want.kappa
        assert shrunk_rate([1.0], [2.0], want)[0] == pytest.approx((1 + want.mu * want.kappa) / (2 + want.kappa))


# ----------------------------------------------------------------------------- leave-out, bit for bit
@hsettings(max_examples=25, deadline=None)
@given(i=st.integers(0, SMALL.n_trajectories - 1), mode=st.sampled_from(["simple", "exact", "upper", "complete"]))
def test_changing_a_runs_outcome_leaves_its_own_forecasts_bit_identical(i, mode):
    s = ScoreSettings(censoring=mode, n_boot=0)
    before = add_references(SMALL, s)
    after = add_references(with_run_changed(SMALL, i), s)
    rows = SMALL.steps["traj"].to_numpy() == i
    assert before.predictors[-3:] == list(REFERENCES)
    for name in REFERENCES:
        a, b = before.forecasts(name)[rows], after.forecasts(name)[rows]
        assert np.array_equal(a, b), (name, mode)


def test_the_outcomes_do_enter_the_other_runs_forecasts():
    """The leave-out test above would pass for references that ignore outcomes: they do not."""
    s = ScoreSettings(censoring="simple", n_boot=0)
    i = int(np.flatnonzero(~SMALL.trajectories["censored"].to_numpy())[0])
    before, after = add_references(SMALL, s), add_references(with_run_changed(SMALL, i), s)
    others = SMALL.steps["traj"].to_numpy() != i
    for name in REFERENCES:
        assert not np.array_equal(before.forecasts(name)[others], after.forecasts(name)[others]), name


def test_references_are_deterministic_and_seeded():
    s = ScoreSettings(n_boot=0)
    a, b = add_references(SMALL, s), add_references(SMALL, s)
    c = add_references(SMALL, s, seed=99)
    for name in REFERENCES:
        assert np.array_equal(a.forecasts(name), b.forecasts(name))
    assert not np.array_equal(a.forecasts("ref:step"), c.forecasts("ref:step"))


def test_adding_references_twice_replaces_them():
    s = ScoreSettings(n_boot=0)
    once = add_references(SMALL, s)
    twice = add_references(once, ScoreSettings(censoring="upper", n_boot=0))
    assert twice.predictors == ["agent", *REFERENCES]
    assert np.array_equal(twice.forecasts("ref:step"),
                          add_references(SMALL, ScoreSettings(censoring="upper", n_boot=0)).forecasts("ref:step"))


# ----------------------------------------------------------------------------- what is offered
def test_without_a_task_only_ref_step_is_offered_and_the_notes_say_why():
    data = TrajectoryData(SMALL.steps, SMALL.trajectories.drop(columns=["task"]), list(SMALL.predictors))
    out = add_references(data)
    assert [p for p in out.predictors if p.startswith("ref:")] == ["ref:step"]
    assert any("ref:task and ref:task+step not offered: the log names no task" in n for n in out.notes)
    assert out.reading["references"]["not_offered"]["ref:task"].startswith("the log names no task")


def test_a_reader_names_its_task_column():
    data = TrajectoryData(SMALL.steps, SMALL.trajectories.assign(sample_id=SMALL.trajectories["task"],
                                                                 task="one eval"),
                          list(SMALL.predictors), reading={"task_column": "sample_id"})
    assert task_column(data) == "sample_id"
    assert task_column(SMALL) == "task"


def test_tasks_without_repeats_offer_no_task_reference():
    t = SMALL.trajectories.assign(task=[f"u{i}" for i in range(SMALL.n_trajectories)])
    out = add_references(TrajectoryData(SMALL.steps, t, list(SMALL.predictors)))
    assert "ref:task" not in out.predictors
    assert "no task has two runs" in out.reading["references"]["not_offered"]["ref:task"]


# ----------------------------------------------------------------------------- known truth
def _exact_truth_log(n: int = 600, seed: int = 3):
    """The webshop-like agent with the true q_Z of every censored run in its q_z column."""
    sim = simulate("webshop-like", n_trajectories=n, seed=seed)
    q = sim.truth.set_index("trajectory_id")["q_z_true"]
    steps = sim.steps.assign(q_z=sim.steps["trajectory_id"].map(q))
    return sim, from_frame(steps, source="truth")


def test_the_truthful_trace_beats_every_reference_under_exact_censoring():
    sim, data = _exact_truth_log()
    assert data.n_censored > 50
    s = ScoreSettings(censoring="exact", n_boot=0)
    data = add_references(data, s)
    table = compare(data, s, baseline="truthful", predictors=list(REFERENCES), n_boot=0, metrics=())
    crit = z_value(0.99)
    for name in REFERENCES:  # Δ = reference − truthful < 0, beyond its noise
        assert table.loc[name, "tps_z"] < -crit, (name, table.loc[name].to_dict())


def test_ref_step_is_the_budget_aware_target_within_binomial_noise():
    """Under simple censoring a run's label is ΔY, and ΔY | H_t ~ Bernoulli(m_t): so ref:step at t,
    estimated from the runs R alive at t in the other folds, differs from their mean m_t by at most
    z·sqrt(Σ m(1 − m))/n (binomial noise) plus the pseudo-runs' pull c·|r − m̄|/(n + c). Tested at every
    (fold, t) with at least 30 runs, z Bonferroni-corrected at a total error rate of 0.001."""
    sim = simulate("tau2-like", n_trajectories=1500, seed=11)
    data = sim.to_data()
    s = ScoreSettings(censoring="simple", n_boot=0)
    labels = run_labels(data, "simple")
    fold = run_folds(data.n_trajectories, 5, s.seed)
    lengths = data.trajectories["length"].to_numpy()
    m = sim.rows["m"].to_numpy()
    traj, tt = data.steps["traj"].to_numpy(), data.steps["t"].to_numpy()
    checks = []
    for f in range(5):
        train = fold != f
        curve = step_curve(lengths[train], labels[train])
        rate = labels[train].mean()
        for t in range(1, curve.size + 1):
            rows = train[traj] & (tt == t)
            n = int(rows.sum())
            if n >= 30:
                checks.append((curve[t - 1], m[rows], n, rate))
    z = z_value(1 - 0.001 / len(checks))
    for est, mt, n, rate in checks:
        noise = z * math.sqrt(float(np.sum(mt * (1 - mt)))) / n
        pull = PSEUDO_RUNS * abs(rate - mt.mean()) / (n + PSEUDO_RUNS)
        assert abs(est - mt.mean()) <= noise + pull
    assert len(checks) > 50
    # and the references the log gets are those curves
    ref = add_references(data, s).forecasts("ref:step")
    f0 = fold[traj] == 0
    curve0 = step_curve(lengths[fold != 0], labels[fold != 0])
    assert np.array_equal(ref[f0], curve0[np.minimum(tt[f0], curve0.size) - 1])


def test_the_docstring_example_runs():
    import doctest

    from tpsviz.forecasts import references

    result = doctest.testmod(references, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 2 and result.failed == 0
