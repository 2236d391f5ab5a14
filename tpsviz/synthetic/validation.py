"""Logs with known truth for the instrument's own validation (``bench/validate.py``, docs/validation.md).

The agent of :mod:`tpsviz.synthetic.agent`, with three additions:

- **every target exactly**, per step row: q_t = P(Y=1 | H_t), m_t = P(Δ=1, Y=1 | H_t) (the simple
  score's target), d_t = P(Δ=1 | H_t) (the run submits within the budget), the complete-case target
  c_t = P(Y=1 | H_t, Δ=1) = m_t / d_t and the upper score's u_t = P(Y=1 or Δ=0 | H_t) = m_t + 1 − d_t;
- **the true q_Z** of a censored run: q_t at its last step (``q_z_true``), written as the ``q_z``
  column for exact mode;
- **tasks repeated over epochs with a task effect**: a finite set of tasks, each with a family and its
  own prior P(good | task) drawn once (its log-odds = the family's + ``spread`` · N(0, 1)), and
  ``epochs`` runs per task. Runs of one task share that prior, so they are correlated; the truthful
  predictor knows the task (its posterior starts at the task's prior, so q_t conditions on the task);
  the ``task`` column names the task.

:func:`mode_target` picks the target a censoring mode's score elicits (docs/theory.md §4, §8);
:func:`distortions` and :func:`raw_signals` build the predictors the validation judges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tpsviz.io.tables.longform import from_frame
from tpsviz.synthetic.agent import Scenario, TaskFamily, budget_targets, logit, sigmoid, walk_runs

__all__ = ["TaskLog", "simulate_tasks", "mode_target", "distortions", "raw_signals", "DISTORTIONS",
           "EXPECTED_LABELS", "TARGET_NAMES", "VALIDATION_AGENT", "stretch_centre"]

#: the agent of the validation: runs of 2 to 4 sub-goals, about 6 steps long with a budget of 8 steps
#: (then about 40% of runs are cut off) and 11 steps with a budget of 40 (6% cut off); its truthful
#: q_t ranks complete runs' steps at AUROC 0.72 (budget 8) to 0.80 (budget 40)
VALIDATION_AGENT = Scenario(
    name="validation", n_trajectories=200, budget=40,
    families=(TaskFamily("easy", 0.4, 2, 0.65), TaskFamily("medium", 0.4, 3, 0.45),
              TaskFamily("hard", 0.2, 4, 0.25)),
    emit_good=(0.6, 0.3, 0.1), emit_bad=(0.3, 0.4, 0.3), correct_good=0.92, correct_bad=0.10)

#: the distortions of a mode's target and the verdict label each should get (docs/validation.md)
EXPECTED_LABELS = {
    "plus15": ("optimistic",),
    "minus15": ("pessimistic",),
    "logit_x2": ("overconfident",),
    "logit_half": ("underconfident",),
    "logit_noise": ("overconfident", "uninformative"),
    "constant": ("constant",),
}
DISTORTIONS = tuple(EXPECTED_LABELS)
#: the target each censoring mode's score elicits, in words
TARGET_NAMES = {"simple": "m_t = P(Δ=1, Y=1 | H_t)", "exact": "q_t = P(Y=1 | H_t), with the true q_Z",
                "complete": "c_t = P(Y=1 | H_t, Δ=1)", "upper": "u_t = P(Y=1 or Δ=0 | H_t)"}
#: distorted forecasts are kept in [CLIP, 1 − CLIP] (the ±0.15 shifts)
CLIP = 0.01


@dataclass
class TaskLog:
    """Output of :func:`simulate_tasks`.

    Attributes
    ----------
    steps : DataFrame
        The log in long format: ``trajectory_id``, ``step``, ``outcome`` (NaN when censored),
        ``censored``, ``task``, ``difficulty`` (the task's family); no forecast yet.
    rows : DataFrame
        Per step row (aligned with ``steps``): ``q``, ``m``, ``d``, ``c``, ``u`` (the targets of the
        module docstring), ``t``, ``k``, ``family``, ``posterior``, ``traj`` (run number), ``task``
        (task number).
    truth : DataFrame
        Per run: ``trajectory_id``, ``task``, ``family``, ``prior`` (the task's P(good)), ``good``,
        ``y_true`` (also for censored runs), ``censored``, ``length``, ``q_z_true`` (NaN for
        complete runs).
    tasks : DataFrame
        Per task: ``family``, ``prior``.
    scenario : Scenario
    """

    steps: pd.DataFrame
    rows: pd.DataFrame
    truth: pd.DataFrame
    tasks: pd.DataFrame
    scenario: Scenario

    def frame(self, forecasts: dict, q_z: bool = False) -> pd.DataFrame:
        """The long-format frame with predictors and signals added.

        Parameters
        ----------
        forecasts : dict
            Column name (``conf_<name>``, ``raw_<name>``, ``unc_<name>``) → one value per step row.
        q_z : bool
            Add the ``q_z`` column: the true q_Z on the rows of censored runs.

        Returns
        -------
        DataFrame
        """
        out = self.steps.copy()
        if q_z:
            out["q_z"] = self.truth["q_z_true"].to_numpy()[self.rows["traj"].to_numpy()]
        for col, v in forecasts.items():
            out[col] = np.asarray(v, dtype=float)
        return out

    def to_data(self, forecasts: dict, q_z: bool = False):
        """:meth:`frame` as a validated :class:`tpsviz.core.data.TrajectoryData`."""
        return from_frame(self.frame(forecasts, q_z), source=f"validation:{self.scenario.name}")


def _draw_tasks(sc: Scenario, n_tasks: int, spread: float, rng: np.random.Generator):
    """Each task's family and prior P(good): the family's prior log-odds + spread · N(0, 1)."""
    w = np.array([f.weight for f in sc.families], dtype=float)
    fam = rng.choice(len(sc.families), size=n_tasks, p=w / w.sum())
    base = logit(np.array([f.prior_good for f in sc.families]))[fam]
    return fam, sigmoid(base + spread * rng.standard_normal(n_tasks))


def simulate_tasks(sc: Scenario, n_runs: int, seed: int, epochs: int = 1, spread: float = 0.0) -> TaskLog:
    """Simulate ``n_runs`` runs of the agent of ``sc`` over tasks repeated ``epochs`` times.

    Parameters
    ----------
    sc : Scenario
        Families, emissions, c_B and the step budget H (its ``n_trajectories``, ``n_rollouts`` and
        ``seed`` are not used).
    n_runs : int
        Number of runs; run j is an epoch of task j // epochs (the last task may have fewer).
    seed : int
    epochs : int
        Runs per task (1: every run its own task).
    spread : float
        SD of a task's prior log-odds of a good approach around its family's (0: no task effect).

    Returns
    -------
    TaskLog
    """
    if n_runs < 1 or epochs < 1 or spread < 0:
        raise ValueError("n_runs and epochs must be >= 1 and spread >= 0")
    rng = np.random.default_rng(seed)
    n_tasks = -(-int(n_runs) // int(epochs))
    task_fam, task_prior = _draw_tasks(sc, n_tasks, float(spread), rng)
    task = np.arange(n_runs) // int(epochs)
    fam, prior = task_fam[task], task_prior[task]
    good = rng.random(n_runs) < prior
    y_true = np.where(good, rng.random(n_runs) < sc.correct_good, rng.random(n_runs) < sc.correct_bad).astype(int)
    goals = np.array([f.goals for f in sc.families])[fam]
    walk = walk_runs(sc, rng, good, goals, logit(prior))
    traj, tt, kk = walk.traj, walk.t, walk.k
    post = sigmoid(walk.logodds)
    q = post * sc.correct_good + (1 - post) * sc.correct_bad
    m, d = budget_targets(sc, fam[traj], tt, kk, post, q, goals[traj])
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.where(d > 0, m / np.where(d > 0, d, 1.0), q)  # d = 0 only at a censored run's last step
    tid = np.array([f"run-{i:05d}" for i in range(n_runs)])
    task_ids = np.array([f"task-{i:04d}" for i in range(n_tasks)])
    names = np.array([f.name for f in sc.families])
    steps = pd.DataFrame({
        "trajectory_id": tid[traj], "step": tt,
        "outcome": np.where(walk.censored[traj], np.nan, y_true[traj].astype(float)),
        "censored": walk.censored[traj], "task": task_ids[task][traj], "difficulty": names[fam][traj],
    })
    rows = pd.DataFrame({"q": q, "m": m, "d": d, "c": np.clip(c, 0.0, 1.0), "u": m + 1.0 - d, "t": tt, "k": kk,
                         "family": fam[traj], "posterior": post, "traj": traj, "task": task[traj]})
    last = np.r_[np.flatnonzero(np.diff(traj)), traj.size - 1]
    q_last = np.full(n_runs, np.nan)
    q_last[traj[last]] = q[last]
    truth = pd.DataFrame({
        "trajectory_id": tid, "task": task, "family": fam, "prior": prior, "good": good, "y_true": y_true,
        "censored": walk.censored, "length": walk.length, "q_z_true": np.where(walk.censored, q_last, np.nan),
    })
    return TaskLog(steps, rows, truth, pd.DataFrame({"family": task_fam, "prior": task_prior}), sc)


def mode_target(rows: pd.DataFrame, mode: str) -> np.ndarray:
    """The target a censoring mode's score elicits, per step row.

    Parameters
    ----------
    rows : DataFrame
        :attr:`TaskLog.rows`.
    mode : {"simple", "exact", "complete", "upper"}
        ``simple``: m_t; ``exact``: q_t (scored with the true q_Z); ``complete``: c_t (on a censored
        run's last step, where Δ = 1 is impossible, q_t: complete-case never scores that row);
        ``upper``: u_t.

    Returns
    -------
    ndarray
    """
    key = {"simple": "m", "exact": "q", "complete": "c", "upper": "u"}.get(mode)
    if key is None:
        raise ValueError(f"mode must be one of {', '.join(TARGET_NAMES)}, got {mode!r}")
    return rows[key].to_numpy(dtype=float)


def stretch_centre(target: np.ndarray, factor: float, rows: np.ndarray | None = None) -> float:
    """The centre c of the stretch σ(c + factor·(logit F − c)) that keeps the mean forecast.

    Parameters
    ----------
    target : ndarray
        The forecasts F per step row.
    factor : float
        The stretch of the logit (> 1: more extreme, < 1: more timid).
    rows : ndarray of bool, optional
        The rows whose mean is kept (default every row).

    Returns
    -------
    float
        c such that mean(σ(c + factor·(logit F − c))) = mean(F) over ``rows`` (bisection, to 1e-10);
        the logit of the mean forecast when ``factor`` is 1.
    """
    f = target if rows is None else target[rows]
    goal = float(f.mean())
    lt = logit(f)
    if factor == 1.0:
        return float(logit(np.array(goal)))
    lo, hi = -30.0, 30.0
    sign = 1.0 if factor < 1.0 else -1.0  # the mean grows with c when factor < 1, shrinks when > 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        gap = sign * (float(sigmoid(mid + factor * (lt - mid)).mean()) - goal)
        lo, hi = (lo, mid) if gap > 0 else (mid, hi)
        if hi - lo < 1e-10:
            break
    return 0.5 * (lo + hi)


def distortions(target: np.ndarray, rng: np.random.Generator, constant: float, noise: float = 1.0,
                rows: np.ndarray | None = None, centres: dict | None = None) -> dict:
    """Known distortions of a target forecast (docs/validation.md).

    Parameters
    ----------
    target : ndarray
        The mode's target per step row (:func:`mode_target`).
    rng : numpy.random.Generator
        Draws the noise of ``logit_noise`` (one N(0, 1) per step row).
    constant : float
        The value of ``constant`` (the base rate).
    noise : float
        SD of the noise added to the logit.
    rows : ndarray of bool, optional
        The rows the score labels (complete-case: the complete runs' rows); the stretches keep the
        mean forecast over these rows (default every row).
    centres : dict, optional
        ``{2.0: c, 0.5: c}``: fixed centres of the stretches instead (e.g. a scenario's, from a large
        pilot simulation, so that a distortion is the same function of the history in every log).

    Returns
    -------
    dict
        ``plus15`` / ``minus15``: target ± 0.15 clipped to [CLIP, 1 − CLIP]; ``logit_x2`` /
        ``logit_half``: the logit stretched ×2 / ×0.5 around the centre that keeps the mean forecast
        (:func:`stretch_centre`; :func:`tpsviz.synthetic.agent.known_distortions` stretches around the
        logit of the mean, which moves the mean of a skewed target such as m_t); ``logit_noise``:
        logit + noise · N(0, 1); ``constant``: ``constant`` on every row.
    """
    lt = logit(target)
    out = {"plus15": np.clip(target + 0.15, CLIP, 1 - CLIP), "minus15": np.clip(target - 0.15, CLIP, 1 - CLIP)}
    for name, factor in (("logit_x2", 2.0), ("logit_half", 0.5)):
        c = centres[factor] if centres else stretch_centre(target, factor, rows)
        out[name] = sigmoid(c + factor * (lt - c))
    out["logit_noise"] = sigmoid(lt + noise * rng.standard_normal(target.size))
    out["constant"] = np.full(target.size, float(constant))
    return out


def raw_signals(target: np.ndarray, floor: float = 1e-6) -> dict:
    """Raw signals (not probabilities) that are exact increasing maps of a target.

    Parameters
    ----------
    target : ndarray
    floor : float
        The target is kept in [floor, 1 − floor] first (m_t is exactly 0 on a censored run's last
        step; the maps stay monotone, not strictly below the floor).

    Returns
    -------
    dict
        ``affine``: 1.7 · logit(target) − 0.5 (Platt's family contains the inverse map);
        ``log``: ln(target) (monotone, not affine in the logit).
    """
    p = np.clip(target, floor, 1 - floor)
    return {"affine": 1.7 * logit(p) - 0.5, "log": np.log(p)}
