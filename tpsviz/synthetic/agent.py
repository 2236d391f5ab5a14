"""A synthetic agent whose true success probabilities are known exactly.

The generative process (one trajectory):

1. A task family f is drawn (observed: the ``difficulty`` column); it fixes the number of
   sub-goals K_f and the prior P(good | f) of a hidden approach B ∈ {good, bad}.
2. Each step t = 1, 2, … emits an observed signal o_t ∈ {+1 progress, 0 stall, -1 setback}
   with probabilities that depend on B; the progress counter k_t = max(k_{t-1} + o_t, 0).
3. When k_t reaches K_f the agent submits and the run ends at T = t; the outcome is
   Y ~ Bernoulli(c_B) (a good approach is usually right, a bad one usually wrong).
4. A step budget H censors runs that have not submitted by step H (Z = H, Y unobserved).
   Every run would submit eventually, so Y exists for censored runs too.

The forecast F_t is reported at the end of step t. Everything below is computed exactly:

- the posterior π_t = P(B = good | H_t) from the signals (Bayes' rule),
- q_t = P(Y=1 | H_t) = π_t c_good + (1 - π_t) c_bad,
- m_t = P(Δ=1, Y=1 | H_t) = Σ_B P(B | H_t) c_B P(submit within the budget | B, k_t, H - t),
  the pseudo-label target of the simple censored score (dynamic programming), and
  d_t = P(Δ=1 | H_t) = Σ_B P(B | H_t) P(submit within the budget | B, k_t, H - t)
  (:func:`budget_targets`),
- the length-tilted target E[Y/T | H_t] / E[1/T | H_t] that the 1/T schedule elicits.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from tpsviz.io.tables.longform import from_frame

__all__ = ["TaskFamily", "Scenario", "SimulatedLog", "simulate", "SCENARIOS",
           "length_tilted_target", "known_distortions", "logit", "sigmoid", "Walk", "walk",
           "budget_targets"]


@dataclass(frozen=True)
class TaskFamily:
    """A kind of task.

    Parameters
    ----------
    name : str
        Label written to the ``difficulty`` column.
    weight : float
        Share of runs drawn from this family.
    goals : int
        Progress K needed to submit.
    prior_good : float
        P(B = good) for this family.
    """

    name: str
    weight: float
    goals: int
    prior_good: float


@dataclass(frozen=True)
class Scenario:
    """Parameters of a synthetic benchmark.

    Parameters
    ----------
    name : str
    n_trajectories : int
    budget : int
        Step budget H (runs not submitted by step H are censored).
    families : tuple of TaskFamily
    emit_good, emit_bad : tuple of float
        P(o = +1), P(o = 0), P(o = -1) under a good / bad approach.
    correct_good, correct_bad : float
        c_B = P(Y = 1 | B) at submission.
    n_rollouts : int
        Monte-Carlo continuations simulated per censored run (0 = none).
    seed : int
    """

    name: str
    n_trajectories: int
    budget: int
    families: tuple[TaskFamily, ...]
    emit_good: tuple[float, float, float] = (0.5, 0.4, 0.1)
    emit_bad: tuple[float, float, float] = (0.2, 0.5, 0.3)
    correct_good: float = 0.9
    correct_bad: float = 0.25
    n_rollouts: int = 0
    seed: int = 0

    def base_rate(self) -> float:
        """Population success rate P(Y = 1), exactly."""
        w = np.array([f.weight for f in self.families], dtype=float)
        w /= w.sum()
        pg = np.array([f.prior_good for f in self.families])
        return float(np.sum(w * (pg * self.correct_good + (1 - pg) * self.correct_bad)))


SCENARIOS: dict[str, Scenario] = {
    "tau2-like": Scenario(
        name="tau2-like", n_trajectories=450, budget=60,
        families=(TaskFamily("easy", 0.4, 3, 0.6), TaskFamily("medium", 0.4, 4, 0.4),
                  TaskFamily("hard", 0.2, 5, 0.2)),
        emit_good=(0.5, 0.4, 0.1), emit_bad=(0.35, 0.45, 0.2),
        correct_good=0.9, correct_bad=0.2, n_rollouts=0, seed=2,
    ),
    "webshop-like": Scenario(
        name="webshop-like", n_trajectories=600, budget=30,
        families=(TaskFamily("easy", 0.35, 3, 0.7), TaskFamily("medium", 0.4, 5, 0.42),
                  TaskFamily("hard", 0.25, 7, 0.25)),
        emit_good=(0.5, 0.4, 0.1), emit_bad=(0.2, 0.5, 0.3),
        correct_good=0.9, correct_bad=0.25, n_rollouts=16, seed=3,
    ),
}


@dataclass
class SimulatedLog:
    """Output of :func:`simulate`.

    Attributes
    ----------
    steps : DataFrame
        The log in long format (docs/formats.md), ready to write or to pass to
        :func:`tpsviz.from_frame`.
    truth : DataFrame
        Per trajectory: ``trajectory_id``, ``difficulty``, ``good`` (hidden B), ``y_true``
        (also for censored runs), ``censored``, ``length``, ``q_z_true`` (censored runs).
    rollouts : DataFrame
        ``trajectory_id``, ``rollout``, ``outcome``: simulated continuations of censored runs.
    rows : DataFrame
        Per step row (aligned with ``steps``): ``q`` (q_t), ``m`` (m_t), ``k``, ``family``,
        ``t`` and ``posterior`` (π_t) for exact computations in tests.
    scenario : Scenario
    """

    steps: pd.DataFrame
    truth: pd.DataFrame
    rollouts: pd.DataFrame
    rows: pd.DataFrame
    scenario: Scenario
    extra: dict = field(default_factory=dict)

    def to_data(self):
        """The log as a validated :class:`tpsviz.core.data.TrajectoryData`."""
        return from_frame(self.steps, source=f"synthetic:{self.scenario.name}")


def logit(p):
    """log(p / (1 − p)), with p clipped to [1e-12, 1 − 1e-12] so it stays finite.

    Parameters
    ----------
    p : float or ndarray

    Returns
    -------
    float or ndarray
    """
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(p) - np.log1p(-p)


def sigmoid(x):
    """The logistic function 1 / (1 + e^(−x)), written with tanh so it never overflows.

    Parameters
    ----------
    x : float or ndarray

    Returns
    -------
    float or ndarray
    """
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _hit_within(goals: int, emit: tuple[float, float, float], horizon: int) -> np.ndarray:
    """h[k, r] = P(progress reaches `goals` within r more steps | k), k < goals, r <= horizon."""
    up, stay, down = emit
    h = np.zeros((goals + 1, horizon + 1))
    h[goals, :] = 1.0
    for r in range(1, horizon + 1):
        prev = h[:, r - 1]
        for k in range(goals):
            h[k, r] = up * prev[k + 1] + stay * prev[k] + down * prev[max(k - 1, 0)]
    return h[:goals]


def _first_hit_pmf(goals: int, emit: tuple[float, float, float], s_max: int) -> np.ndarray:
    """f[k, s] = P(progress first reaches `goals` after exactly s more steps | k)."""
    h = _hit_within(goals, emit, s_max)
    f = np.diff(h, axis=1, prepend=0.0)
    return f


def simulate(scenario: Scenario | str, n_trajectories: int | None = None,
             seed: int | None = None, n_rollouts: int | None = None) -> SimulatedLog:
    """Simulate a benchmark of agent runs with exact truth.

    Parameters
    ----------
    scenario : Scenario or str
        A :class:`Scenario` or a key of ``SCENARIOS`` ("tau2-like", "webshop-like").
    n_trajectories : int, optional
        Override the scenario's number of runs.
    seed : int, optional
        Override the scenario's seed.
    n_rollouts : int, optional
        Override the number of Monte-Carlo continuations simulated per censored run.

    Returns
    -------
    SimulatedLog
        Predictors (``conf_<name>``): ``truthful`` (q_t), ``verbal`` (over-confident,
        saturated near 0.9–1.0), ``pessimistic`` (σ(logit q_t - 1)), ``noisy``, ``flat`` (the base rate at every step),
        ``budget_aware`` (m_t). Signals: ``raw_logprob`` (higher = more confident) and
        ``unc_hesitation`` (higher = less confident).
    """
    sc = SCENARIOS[scenario] if isinstance(scenario, str) else scenario
    if n_rollouts is not None:
        sc = replace(sc, n_rollouts=int(n_rollouts))
    n = int(n_trajectories if n_trajectories is not None else sc.n_trajectories)
    # the random draws, in this order: runs, walks, predictor noise, rollouts (the demo data's
    # and the tests' numbers depend on it)
    rng = np.random.default_rng(sc.seed if seed is None else seed)
    fam, good, y_true = _draw_runs(sc, n, rng)
    goals = np.array([f.goals for f in sc.families])[fam]
    walk = walk_runs(sc, rng, good, goals, logit(np.array([f.prior_good for f in sc.families])[fam]))
    traj, tt, kk = walk.traj, walk.t, walk.k
    post = sigmoid(walk.logodds)
    q = post * sc.correct_good + (1 - post) * sc.correct_bad
    m, _ = budget_targets(sc, fam[traj], tt, kk, post, q, goals[traj])
    tid = np.array([f"{sc.name[:3]}-{i:05d}" for i in range(n)])
    noise = rng.standard_normal((4, traj.size))
    steps = pd.DataFrame({
        "trajectory_id": tid[traj],
        "step": tt,
        "outcome": np.where(walk.censored[traj], np.nan, y_true[traj].astype(float)),
        "censored": walk.censored[traj],
    })
    rollouts, qz_hat = _rollouts(sc, rng, good, walk.censored, tid)
    if rollouts is not None:
        steps["q_z"] = qz_hat[traj]
    else:
        rollouts = pd.DataFrame(columns=["trajectory_id", "rollout", "outcome"])
    _add_forecasts(steps, q, m, noise, sc.base_rate())
    family_names = np.array([f.name for f in sc.families])[fam]
    steps["difficulty"] = family_names[traj]
    steps["task"] = np.array([f"task-{(i * 7919) % 97:02d}" for i in range(n)])[traj]
    last = np.r_[np.flatnonzero(np.diff(traj)), traj.size - 1]
    q_last = np.full(n, np.nan)
    q_last[traj[last]] = q[last]
    truth = pd.DataFrame({
        "trajectory_id": tid, "difficulty": family_names,
        "good": good, "y_true": y_true, "censored": walk.censored, "length": walk.length,
        "q_z_true": np.where(walk.censored, q_last, np.nan),
    })
    rows = pd.DataFrame({"q": q, "m": m, "k": kk, "family": fam[traj], "t": tt, "posterior": post,
                         "traj": traj})
    return SimulatedLog(steps, truth, rollouts, rows, sc)


def _draw_runs(sc: Scenario, n: int, rng: np.random.Generator):
    """Each run's task family, hidden approach (good or bad) and outcome Y at submission."""
    fam_w = np.array([f.weight for f in sc.families], dtype=float)
    fam = rng.choice(len(sc.families), size=n, p=fam_w / fam_w.sum())
    prior = np.array([f.prior_good for f in sc.families])[fam]
    good = rng.random(n) < prior
    y_true = np.where(good, rng.random(n) < sc.correct_good, rng.random(n) < sc.correct_bad).astype(int)
    return fam, good, y_true


@dataclass
class Walk:
    """The runs' progress walks (:func:`walk_runs`): one entry per step row, sorted by (run, t)."""

    traj: np.ndarray      # run of each row
    t: np.ndarray         # step t of each row
    k: np.ndarray         # progress k_t after the step
    logodds: np.ndarray   # log-odds of a good approach after the step (Bayes' rule)
    length: np.ndarray    # per run: T, or H when censored
    censored: np.ndarray  # per run: not submitted by step H


def walk_runs(sc: Scenario, rng: np.random.Generator, good: np.ndarray, goals: np.ndarray,
              logodds: np.ndarray) -> Walk:
    """Every run's signals o_t drawn step by step up to the budget H, with the progress counter
    and the posterior log-odds of a good approach.

    Parameters
    ----------
    sc : Scenario
        Its budget and emission probabilities are used.
    rng : numpy.random.Generator
    good : ndarray of bool
        Each run's hidden approach.
    goals : ndarray of int
        Each run's progress needed to submit.
    logodds : ndarray of float
        Each run's prior log-odds of a good approach (updated in place).

    Returns
    -------
    Walk
    """
    n, H = good.size, int(sc.budget)
    eg = np.array(sc.emit_good)
    eb = np.array(sc.emit_bad)
    llr = np.log(eg) - np.log(eb)  # log-likelihood ratio of o = +1, 0, -1
    k = np.zeros(n, dtype=int)
    active = np.ones(n, dtype=bool)
    length = np.full(n, H)
    rec = {key: [] for key in ("traj", "t", "k", "logodds")}
    for t in range(1, H + 1):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        u = rng.random(idx.size)
        probs = np.where(good[idx, None], eg, eb)
        o_code = (u > probs[:, 0]).astype(int) + (u > probs[:, 0] + probs[:, 1]).astype(int)
        delta = np.array([1, 0, -1])[o_code]
        k[idx] = np.maximum(k[idx] + delta, 0)
        logodds[idx] = logodds[idx] + llr[o_code]
        rec["traj"].append(idx)
        rec["t"].append(np.full(idx.size, t))
        rec["k"].append(k[idx].copy())
        rec["logodds"].append(logodds[idx].copy())
        done = k[idx] >= goals[idx]
        length[idx[done]] = t
        active[idx[done]] = False
    traj = np.concatenate(rec["traj"])
    tt = np.concatenate(rec["t"])
    order = np.lexsort((tt, traj))
    return Walk(traj[order], tt[order], np.concatenate(rec["k"])[order],
                 np.concatenate(rec["logodds"])[order], length, active.copy())


def budget_targets(sc: Scenario, f_r: np.ndarray, tt: np.ndarray, kk: np.ndarray, post: np.ndarray,
                   q: np.ndarray, goals_r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """m_t = P(Δ=1, Y=1 | H_t) and d_t = P(Δ=1 | H_t) for every step row.

    Δ = 1 when the run submits within the budget H; at the submission step m_t = q_t and d_t = 1.

    Parameters
    ----------
    sc : Scenario
    f_r, tt, kk, post, q, goals_r : ndarray
        Per step row: the run's family, the step t, the progress k_t, the posterior π_t, q_t and
        the run's goals.

    Returns
    -------
    m, d : ndarray
    """
    H = int(sc.budget)
    cg, cb = sc.correct_good, sc.correct_bad
    m_succ, d_succ = np.empty_like(q), np.empty_like(q)
    for fi, f in enumerate(sc.families):
        hg = _hit_within(f.goals, sc.emit_good, H)
        hb = _hit_within(f.goals, sc.emit_bad, H)
        sel = f_r == fi
        kk_s = np.minimum(kk[sel], f.goals - 1)
        rem = H - tt[sel]
        m_succ[sel] = post[sel] * cg * hg[kk_s, rem] + (1 - post[sel]) * cb * hb[kk_s, rem]
        d_succ[sel] = post[sel] * hg[kk_s, rem] + (1 - post[sel]) * hb[kk_s, rem]
    done = kk >= goals_r
    return np.where(done, q, m_succ), np.where(done, 1.0, d_succ)


def _rollouts(sc: Scenario, rng: np.random.Generator, good: np.ndarray, censored: np.ndarray,
              tid: np.ndarray):
    """Monte-Carlo continuations of the censored runs (they share the run's hidden approach) and
    the q_Z estimate of each run (NaN where none); (None, …) when none is simulated."""
    qz_hat = np.full(good.size, np.nan)
    if not (sc.n_rollouts > 0 and censored.any()):
        return None, qz_hat
    cidx = np.flatnonzero(censored)
    pc = np.where(good[cidx], sc.correct_good, sc.correct_bad)
    outs = (rng.random((cidx.size, sc.n_rollouts)) < pc[:, None]).astype(int)
    qz_hat[cidx] = outs.mean(axis=1)
    return pd.DataFrame({
        "trajectory_id": np.repeat(tid[cidx], sc.n_rollouts),
        "rollout": np.tile(np.arange(1, sc.n_rollouts + 1), cidx.size),
        "outcome": outs.ravel(),
    }), qz_hat


def _add_forecasts(steps: pd.DataFrame, q: np.ndarray, m: np.ndarray, noise: np.ndarray, base: float) -> None:
    """The predictors (``conf_<name>``) and signals (``raw_logprob``, ``unc_hesitation``) of
    :func:`simulate`, from q_t, m_t and four rows of standard normal noise."""
    lq = logit(q)
    verbal = np.clip(np.round(sigmoid(0.3 * lq + 3.0 + 0.35 * noise[0]), 2), 0.5, 0.99)
    conf = {
        "truthful": q,
        "verbal": verbal,
        "pessimistic": sigmoid(lq - 1.0),
        "noisy": sigmoid(lq + 0.8 * noise[1]),
        "flat": np.full(q.size, base),  # the base rate at every step: a constant forecast
        "budget_aware": m,
    }
    for name, v in conf.items():
        steps[f"conf_{name}"] = v
    steps["raw_logprob"] = np.log(sigmoid(1.5 * lq - 1.0 + 0.5 * noise[2]))
    steps["unc_hesitation"] = np.exp(-0.8 * lq + 0.4 * noise[3])


def known_distortions(scenario: Scenario | str = "webshop-like", n_trajectories: int = 400,
                      seed: int = 0, budget: int = 400):
    """A log whose predictors are known distortions of the true q_t (the verdict's test bed).

    Predictors: ``truthful`` (q_t), ``optimistic`` / ``pessimistic`` (σ(logit q_t ± 1)),
    ``overconfident`` / ``underconfident`` (logit q_t stretched ×2.5 / ×0.4 around the logit of
    the mean forecast, so the slope changes and not the mean) and ``uninformative`` (noise around
    that mean, independent of the run). ``budget`` overrides the scenario's step budget (a large
    one leaves few runs censored).

    Returns
    -------
    TrajectoryData
    """
    sc = SCENARIOS[scenario] if isinstance(scenario, str) else scenario
    sim = simulate(replace(sc, budget=budget), n_trajectories=n_trajectories, seed=seed)
    df = sim.steps[["trajectory_id", "step", "outcome", "censored"]].copy()
    q = sim.rows["q"].to_numpy()
    lq = logit(q)
    c = logit(np.array(q.mean()))
    rng = np.random.default_rng(seed + 1000)
    df["conf_truthful"] = q
    df["conf_optimistic"] = sigmoid(lq + 1.0)
    df["conf_pessimistic"] = sigmoid(lq - 1.0)
    df["conf_overconfident"] = sigmoid(c + 2.5 * (lq - c))
    df["conf_underconfident"] = sigmoid(c + 0.4 * (lq - c))
    df["conf_uninformative"] = sigmoid(c + 0.5 * rng.standard_normal(len(df)))
    return from_frame(df)


def length_tilted_target(sim: SimulatedLog, s_max: int = 3000) -> np.ndarray:
    """E[Y/T | H_t] / E[1/T | H_t] for every step row, ignoring the budget.

    This is what the length-normalised schedule w_t = 1/T elicits instead of q_t
    (docs/theory.md §3). Exact up to the truncation of the hitting-time law at ``s_max`` further steps
    (use a scenario whose runs all finish before the budget).

    Returns
    -------
    ndarray
        One value per row of ``sim.steps``.
    """
    sc = sim.scenario
    rows = sim.rows
    cg, cb = sc.correct_good, sc.correct_bad
    post = rows["posterior"].to_numpy()
    t = rows["t"].to_numpy()
    k = rows["k"].to_numpy()
    fam = rows["family"].to_numpy()
    out = rows["q"].to_numpy().copy()  # at the submission step T is known: target = q_T
    s = np.arange(s_max + 1, dtype=float)
    for fi, f in enumerate(sc.families):
        sel = (fam == fi) & (k < f.goals)
        if not sel.any():
            continue
        fg = _first_hit_pmf(f.goals, sc.emit_good, s_max)
        fb = _first_hit_pmf(f.goals, sc.emit_bad, s_max)
        keys = pd.DataFrame({"k": k[sel], "t": t[sel]}).drop_duplicates()
        inv = 1.0 / (keys["t"].to_numpy()[:, None] + s[None, :])
        eg = np.sum(fg[keys["k"].to_numpy()] * inv, axis=1)
        eb = np.sum(fb[keys["k"].to_numpy()] * inv, axis=1)
        table = pd.Series(list(zip(eg, eb)), index=pd.MultiIndex.from_frame(keys))
        vals = np.array(table.loc[list(zip(k[sel], t[sel]))].tolist())
        pg = post[sel]
        num = pg * cg * vals[:, 0] + (1 - pg) * cb * vals[:, 1]
        den = pg * vals[:, 0] + (1 - pg) * vals[:, 1]
        out[sel] = num / den
    return out
