"""Censoring: the modes, q_Z per trajectory and the censored scores of step rows (docs/theory.md §4).

A run stopped at Z before its outcome is known is scored with the expected score under its
continuation success probability q_Z:

    TPS_cen(q_Z) = Σ_{t<=Z} w_t [q_Z S(F_t, 1) + (1 - q_Z) S(F_t, 0)]

Censoring modes:

``complete``  complete-case: censored runs are left out (the population changes; say so).
``simple``    q_Z = 0 for every censored run (censoring treated as failure); strictly
              proper for the pseudo-label target m_t = P(Δ=1, Y=1 | H_t).
``exact``     q_Z from the log's ``q_z`` column (or a supplied estimate, e.g. Monte-Carlo
              rollouts); censored runs without q_Z fall back to ``simple`` and are counted.
``upper``     q_Z = 1 for every censored run: with ``simple`` it bounds TPS_cen, which is
              linear in q_Z, for any q_Z in [0, 1].

:func:`tpsviz.core.tps.compute_tps` sums these row scores per run;
:mod:`tpsviz.core.artificial_censoring` checks the simple censored score's closed form.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.scores import beta_score

__all__ = ["CENSORING_MODES", "CENSORING_LABELS", "default_censoring", "qz_per_trajectory", "qz_for_runs",
           "censored_row_scores"]

CENSORING_MODES = ("complete", "simple", "exact", "upper")
CENSORING_LABELS = {
    "complete": "complete-case (censored runs left out)",
    "simple": "simple (q_Z = 0: censoring scored as failure)",
    "exact": "exact (q_Z from the log, simple where missing)",
    "upper": "upper bound (q_Z = 1)",
}


def default_censoring(data: TrajectoryData) -> str:
    """``exact`` when the log has a ``q_z`` value for some censored run, else ``simple``."""
    t = data.trajectories
    return "exact" if bool((t["censored"] & t["q_z"].notna()).any()) else "simple"


def qz_per_trajectory(data: TrajectoryData, mode: str, q_z) -> tuple[np.ndarray, np.ndarray]:
    """q_Z per trajectory (NaN for complete runs) and the mask of censored runs that fell
    back to q_Z = 0 for want of an estimate (``exact`` mode only)."""
    t = data.trajectories
    given = None
    if mode == "exact":
        given = t["q_z"].to_numpy(dtype=float) if q_z is None else _align_qz(data, q_z)
    return qz_for_runs(t["censored"].to_numpy(), given, mode)


def qz_for_runs(cens: np.ndarray, given: np.ndarray | None, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """q_Z used for each run under a censoring mode, and the censored runs scored with q_Z = 0
    for want of an estimate.

    Parameters
    ----------
    cens : ndarray of bool
        Censored, per run.
    given : ndarray of float or None
        q_Z estimates per run (NaN: none); read in ``exact`` mode only.
    mode : str
        One of :data:`CENSORING_MODES`.

    Returns
    -------
    q : ndarray
        q_Z per run (NaN for complete runs).
    fallback : ndarray of bool
        Censored runs without an estimate in ``exact`` mode (scored with q_Z = 0).
    """
    q = np.full(cens.shape, np.nan)
    none = np.zeros(cens.shape, dtype=bool)
    if mode in ("simple", "complete"):
        q[cens] = 0.0
        return q, none
    if mode == "upper":
        q[cens] = 1.0
        return q, none
    q[cens] = given[cens]
    fallback = cens & np.isnan(q)
    q[fallback] = 0.0
    return q, fallback


def _align_qz(data: TrajectoryData, q_z) -> np.ndarray:
    if isinstance(q_z, pd.Series):
        arr = q_z.reindex(data.trajectories["trajectory_id"]).to_numpy(dtype=float)
    else:
        arr = np.asarray(q_z, dtype=float)
        if arr.shape != (data.n_trajectories,):
            raise ValueError("q_z must have one value per trajectory (or be a Series indexed by "
                             "trajectory_id)")
    if np.any((arr < 0) | (arr > 1)):
        raise ValueError("q_z estimates must be in [0, 1]")
    return arr


def censored_row_scores(p: np.ndarray, y: np.ndarray, q: np.ndarray | None, censored_rows: np.ndarray | None,
                        alpha: float, beta: float, table: bool | None = None) -> np.ndarray:
    """The score of every step row with a forecast: S(p, y) on a complete run's rows, the expected
    score q·S(p, 1) + (1 − q)·S(p, 0) on a censored run's rows.

    Parameters
    ----------
    p : ndarray of float
        Forecasts, clipped, without NaN.
    y : ndarray of float
        The outcome of each row (read on complete rows only).
    q : ndarray of float or None
        q_Z of each row (read on censored rows only; None when ``censored_rows`` is None).
    censored_rows : ndarray of bool or None
        Rows of censored runs (None: no such row).
    alpha, beta : float
        The beta family's parameters.
    table : bool, optional
        One evaluation method for every subset scored (:func:`tpsviz.core.scores.beta_score`).

    Returns
    -------
    ndarray of float
    """
    if censored_rows is None:
        return beta_score(p, y, alpha, beta, table)
    out = np.empty(p.shape)
    comp = ~censored_rows
    if comp.any():
        out[comp] = beta_score(p[comp], y[comp], alpha, beta, table)
    pc, qc = p[censored_rows], q[censored_rows]
    s = np.zeros(pc.shape)
    some1, some0 = qc > 0, qc < 1
    if some1.any():
        s[some1] += qc[some1] * beta_score(pc[some1], 1, alpha, beta, table)
    if some0.any():
        s[some0] += (1.0 - qc[some0]) * beta_score(pc[some0], 0, alpha, beta, table)
    out[censored_rows] = s
    return out
