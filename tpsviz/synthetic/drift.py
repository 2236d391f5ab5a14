"""A drifting deployment for the monitoring demo (``demo_data/drift-like.csv``; docs/theory.md §11).

Runs of the tau2-like synthetic agent (:func:`tpsviz.synthetic.agent.simulate`, exact q_t) are given
timestamps about an hour apart. A model update after run ``change`` leaves the task mix and the
success rate as they were, but the agent's own confidence ``conf_agent`` turns over-confident:
σ(logit q_t + ``lift``) instead of q_t. ``conf_truthful`` stays q_t throughout, so a monitor should
stay quiet on it and raise an alarm on ``agent`` soon after the change.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.synthetic.agent import logit, sigmoid, simulate

__all__ = ["simulate_drift", "demo_frames", "CHANGE_RUN"]

CHANGE_RUN = 540   # the first run after the model update (0-based, in time order)


def simulate_drift(n_runs: int = 900, change: int = CHANGE_RUN, lift: float = 1.5,
                   seed: int = 11) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A log whose ``agent`` predictor degrades after run ``change``, with its hidden truth.

    Parameters
    ----------
    n_runs : int
        Runs, in time order.
    change : int
        0-based index of the first run after the update.
    lift : float
        The over-confidence after the update, added to logit q_t.
    seed : int

    Returns
    -------
    log : DataFrame
        Long format: ``trajectory_id`` (run-00000 … in time order), ``step``, ``outcome``,
        ``censored``, ``conf_agent`` (first: the predictor a monitor watches by default), ``conf_truthful``, ``timestamp`` (ISO 8601, UTC),
        ``model_version`` (v1 / v2) and ``difficulty``.
    truth : DataFrame
        Per run: ``trajectory_id``, ``after_change``, ``y_true``, ``censored``.
    """
    sim = simulate("tau2-like", n_trajectories=n_runs, seed=seed)
    steps = sim.steps
    rng = np.random.default_rng(seed + 1)
    run = np.arange(n_runs)
    start = np.datetime64("2026-09-01T00:00:00")
    minutes = np.cumsum(rng.integers(30, 90, size=n_runs))
    stamps = (start + minutes.astype("timedelta64[m]")).astype("datetime64[s]")
    code = pd.factorize(steps["trajectory_id"], sort=True)[0]  # ids tau-00000 … are in run order
    after = code >= change
    q = steps["conf_truthful"].to_numpy()
    log = pd.DataFrame({
        "trajectory_id": np.char.add("run-", np.char.zfill(run.astype(str), 5))[code],
        "step": steps["step"].to_numpy(),
        "outcome": steps["outcome"].to_numpy(),
        "censored": steps["censored"].to_numpy(),
        "conf_agent": np.where(after, sigmoid(logit(q) + lift), q),
        "conf_truthful": q,
        "timestamp": np.char.add(np.datetime_as_string(stamps, unit="s"), "Z")[code],
        "model_version": np.where(after, "v2", "v1"),
        "difficulty": steps["difficulty"].to_numpy(),
    })
    truth = pd.DataFrame({"trajectory_id": np.char.add("run-", np.char.zfill(run.astype(str), 5)),
                          "after_change": run >= change, "y_true": sim.truth["y_true"].to_numpy(),
                          "censored": sim.truth["censored"].to_numpy()})
    return log, truth


def demo_frames() -> dict[str, pd.DataFrame]:
    """The drifting demo files: ``{"drift-like.csv": log, "drift-like_truth.csv": truth}``."""
    log, truth = simulate_drift()
    return {"drift-like.csv": log, "drift-like_truth.csv": truth}
