"""Censoring: the modes, q_Z per trajectory and each run's label by mode (docs/theory.md §4).

A run stopped at Z before its outcome is known is scored with the expected score under its
continuation success probability q_Z:

    TPS_cen(q_Z) = Σ_{t<=Z} w_t [q_Z S(F_t, 1) + (1 - q_Z) S(F_t, 0)]

Censoring modes:

``complete``  complete-case: censored runs are left out (the population changes; say so).
``simple``    q_Z = 0 for every censored run (censoring treated as failure); strictly
              proper for the pseudo-label target m_t = P(Δ=1, Y=1 | H_t).
``exact``     q_Z from the log's ``q_z`` column (or a supplied estimate, e.g. Monte-Carlo
              rollouts). Every censored run needs one: a censored run without q_Z is refused
              (:class:`MissingQz`, with its remedies), never scored as if q_Z were 0 under the
              name "exact" (docs/theory.md §4).
``upper``     q_Z = 1 for every censored run: with ``simple`` it bounds TPS_cen, which is
              linear in q_Z, for any q_Z in [0, 1].

Since the censored score is linear in q_Z, a run's TPS is ℓ·A1 + (1 − ℓ)·A0 with ℓ its label under
the mode (:func:`labels_for_runs`) and A1, A0 its sums of w_t·S(F_t, 1) and w_t·S(F_t, 0)
(:mod:`tpsviz.core.trajectory_sums`); :mod:`tpsviz.core.artificial_censoring` checks the simple
censored score's closed form.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import SettingError
from tpsviz.core.wording import setting

__all__ = ["CENSORING_MODES", "CENSORING_LABELS", "TARGETS", "MissingQz", "default_censoring", "qz_coverage",
           "qz_per_trajectory", "qz_for_runs", "mode_labels", "labels_for_runs", "population_words"]

CENSORING_MODES = ("complete", "simple", "exact", "upper")
CENSORING_LABELS = {
    "complete": "complete-case (censored runs left out)",
    "simple": "simple (q_Z = 0: censoring scored as failure)",
    "exact": "exact (q_Z of every censored run from the log or an estimate)",
    "upper": "upper bound (q_Z = 1)",
}


#: what the score of each mode elicits at step t (docs/theory.md §4): the target a forecast must report
#: to be truthful under that mode, and so the label a map from a signal to a probability is fitted on
TARGETS = {
    "simple": "m_t = P(success within the budget | H_t): a cut-off run counts as a failure",
    "upper": "P(success or cut off | H_t): a cut-off run counts as a success",
    "exact": "q_t = P(success | H_t): a cut-off run counts as q_Z of a success",
    "complete": "P(success | H_t, the run ends within the budget): cut-off runs are left out",
}


class MissingQz(SettingError):
    """Exact censoring asked for a log where some censored run has no q_Z.

    Attributes
    ----------
    n_missing, n_censored : int
        Censored runs without q_Z, and all censored runs.
    """

    def __init__(self, n_missing: int, n_censored: int):
        self.n_missing, self.n_censored = int(n_missing), int(n_censored)
        super().__init__(
            f"exact censoring needs q_Z for every censored run, and {self.n_missing:,} of the "
            f"{self.n_censored:,} censored runs have none: give a q_Z for every one ({setting('rollouts')} "
            f"covering every censored run, a q_z value in the log for each, or one value for all, "
            f"{setting('q_z', 0.5)}), or choose {setting('censoring', 'simple')} (a cut-off run counts as a "
            "failure)")

    def __reduce__(self):
        return (MissingQz, (self.n_missing, self.n_censored))


def qz_coverage(data: TrajectoryData) -> tuple[int, int]:
    """(censored runs with a ``q_z`` value in the log, censored runs)."""
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    return int((cens & t["q_z"].notna().to_numpy()).sum()), int(cens.sum())


def default_censoring(data: TrajectoryData) -> str:
    """``exact`` when every censored run of the log has a ``q_z`` value (and there is one), else ``simple``.

    A log where only some censored runs have q_z is scored ``simple`` by default: exact mode needs
    every one (:class:`MissingQz`)."""
    with_qz, n_cens = qz_coverage(data)
    return "exact" if n_cens and with_qz == n_cens else "simple"


def qz_per_trajectory(data: TrajectoryData, mode: str, q_z) -> tuple[np.ndarray, np.ndarray]:
    """q_Z per trajectory (NaN for complete runs) and the mask of censored runs without an estimate
    (always empty: :func:`qz_for_runs` refuses them in ``exact`` mode).

    Raises
    ------
    MissingQz
        In ``exact`` mode, when a censored run has no q_Z."""
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
        Censored runs without an estimate: always none (kept for the callers' counts).

    Raises
    ------
    MissingQz
        In ``exact`` mode, when a censored run has no estimate.
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
    missing = cens & np.isnan(q)
    if missing.any():
        raise MissingQz(int(missing.sum()), int(cens.sum()))
    return q, none


def mode_labels(data: TrajectoryData, censoring: str, q_z=None) -> np.ndarray:
    """Each run's label under a censoring mode: the outcome the score of that mode rewards.

    A complete run's label is its outcome Y. A censored run's label is 0 (``simple``), 1
    (``upper``), its q_Z (``exact``: a soft label, weight q_Z on success) or NaN (``complete``:
    left out). A forecast is truthful under a mode when it reports the expected label given the
    history (:data:`TARGETS`), so everything fitted or tested against outcomes (recalibration maps,
    the reference forecasters, the verdict's checks, the base rate) uses these labels
    (docs/theory.md §4, §6).

    Parameters
    ----------
    data : TrajectoryData
    censoring : str
        One of :data:`CENSORING_MODES`.
    q_z : array_like or Series, optional
        q_Z estimates in ``exact`` mode (default: the log's ``q_z`` column).

    Returns
    -------
    ndarray of float
        One label in [0, 1] per run, in the order of ``data.trajectories`` (NaN: not used).

    Raises
    ------
    MissingQz
        In ``exact`` mode, when a censored run has no q_Z.
    """
    if censoring not in CENSORING_MODES:
        raise ValueError(f"censoring must be one of {', '.join(CENSORING_MODES)}, got {censoring!r}")
    t = data.trajectories
    given = (t["q_z"].to_numpy(dtype=float) if q_z is None else _align_qz(data, q_z)) if censoring == "exact" else None
    return labels_for_runs(t["outcome"].to_numpy(dtype=float), t["censored"].to_numpy(dtype=bool), given,
                           censoring)[0]


def labels_for_runs(outcome: np.ndarray, cens: np.ndarray, given: np.ndarray | None,
                    censoring: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mode_labels` on arrays (the engines' per-run sums have no TrajectoryData).

    Parameters
    ----------
    outcome : ndarray of float
        Y per run (read on complete runs).
    cens : ndarray of bool
        Censored, per run.
    given : ndarray of float or None
        q_Z estimates per run (read in ``exact`` mode only).
    censoring : str

    Returns
    -------
    label : ndarray
        ℓ per run (NaN: left out, complete-case).
    q : ndarray
        q_Z used per run (NaN for complete runs).

    Raises
    ------
    MissingQz
        In ``exact`` mode, when a censored run has no q_Z.
    """
    q, _ = qz_for_runs(cens, given, censoring)
    label = np.where(cens, np.nan if censoring == "complete" else q, outcome)
    return label, q


def population_words(data: TrajectoryData, censoring: str) -> str:
    """The runs a fit under ``censoring`` uses, in words: "all 600 runs, the 280 cut off counted as
    failures" or "the 320 complete runs (280 cut off left out)"."""
    n, n_cens = int(data.n_trajectories), int(data.n_censored)
    if not n_cens:
        return f"all {n:,} runs (none cut off)"
    if censoring == "complete":
        return f"the {n - n_cens:,} complete runs ({n_cens:,} cut off left out)"
    how = {"simple": "counted as failures", "upper": "counted as successes",
           "exact": "counted at their q_Z"}[censoring]
    return f"all {n:,} runs, the {n_cens:,} cut off {how}"


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
