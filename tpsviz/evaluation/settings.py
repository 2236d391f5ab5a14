"""The score settings of an evaluation: what ``python -m tpsviz score`` accepts, checked
(:func:`check_settings`) and turned into a :class:`~tpsviz.core.tps.ScoreSettings`
(:func:`score_settings`), and the q_Z of the censored runs in exact mode (:func:`qz_source`).

Reading a log is :mod:`tpsviz.evaluation.reading`; where it is scored, :mod:`tpsviz.evaluation.engine_choice`.
A message names a setting by a marker of :mod:`tpsviz.core.wording` (``SettingError``,
``wording.Text`` notes): ``n_boot`` and ``recalibrate='platt'`` from Python, ``--n-boot`` and
``--recalibrate platt`` once the command line words it (docs/architecture.md, "Messages").
"""

from __future__ import annotations

import math

import numpy as np

from tpsviz.core.censoring import MissingQz, qz_coverage
from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import SettingError
from tpsviz.core.schedules import Schedule, parse_schedule
from tpsviz.core.schema import show_id
from tpsviz.core.scores import PRESETS
from tpsviz.core.tps import ScoreSettings
from tpsviz.core.wording import setting, text
from tpsviz.diagnostics.audit import qz_for_source, rollout_qz_series

__all__ = ["check_settings", "qz_source", "score_settings", "MIN_N_BOOT", "MAX_N_BOOT", "MAX_SEED", "RECALIBRATIONS",
           "NO_RECALIBRATION"]

MAX_N_BOOT = 20_000      # bootstrap replicates accepted
MIN_N_BOOT = 50          # fewer replicates make no 95% percentile interval (adversarial pass 7)
MAX_SEED = 2 ** 63 - 1
#: cross-fitted recalibrations that add predictors ``<name>@<method>``
RECALIBRATIONS = ("platt", "isotonic", "beta")
#: ``recalibrate="none"``: no recalibration, and a log of raw signals only is not converted either
NO_RECALIBRATION = "none"


def check_settings(n_boot: int = 2000, seed: int | None = None, eps: float = 1e-6, folds: int = 5,
                   level: float = 0.95) -> None:
    """Refuse setting values before any file is read, naming the setting.

    Parameters
    ----------
    n_boot : int
        0 (no bootstrap) or between :data:`MIN_N_BOOT` and :data:`MAX_N_BOOT`.
    seed : int, optional
        Between 0 and 2^63 − 1.
    eps : float
        In [0, 0.5).
    folds : int
        Cross-fitting folds of a recalibration, 2 to 50.
    level : float
        Confidence level, in (0, 1).

    Raises
    ------
    ValueError
        For the first value out of range.
    """
    for name, v in (("n_boot", n_boot), ("seed", seed), ("folds", folds)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise SettingError(f"{setting(name)} must be an integer, got {v!r}")
    if not (n_boot == 0 or MIN_N_BOOT <= n_boot <= MAX_N_BOOT):
        raise SettingError(f"{setting('n_boot')} must be 0 (no bootstrap) or between {MIN_N_BOOT} and "
                         f"{MAX_N_BOOT:,}, got {n_boot}: the 2.5% and 97.5% percentiles of fewer "
                         "replicates are not a 95% interval")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise SettingError(f"{setting('seed')} must be an integer between 0 and 2^63 - 1, got {seed}")
    eps, level = _float("eps", eps), _float("level", level)
    if not (math.isfinite(eps) and 0 <= eps < 0.5):
        raise SettingError(f"{setting('eps')} must be in [0, 0.5), got {eps:g}")
    if not 0 < level < 1:
        raise SettingError(f"{setting('level')} must be in (0, 1), got {level:g}")
    if not 2 <= folds <= 50:
        raise SettingError(f"{setting('folds')} must be between 2 and 50, got {folds}")


def qz_source(data: TrajectoryData, q_z=None, rollouts=None, censoring: str | None = None) -> tuple[object, str | None, list]:
    """The q_Z of censored runs in exact mode, the censoring mode it implies, and notes.

    Parameters
    ----------
    data : TrajectoryData
    q_z : {"column", "rollouts"} or float, optional
        The log's ``q_z`` column (default without ``rollouts``); the Monte-Carlo mean of
        ``rollouts`` (default with them); or one probability for every censored run.
    rollouts : str, Path or DataFrame, optional
        A rollouts table ``trajectory_id, outcome`` (docs/formats.md).
    censoring : str, optional
        The censoring mode asked for; None: ``exact`` when a q_Z source other than the column
        is given, else decided by :func:`score_settings`.

    Returns
    -------
    q_z : Series, ndarray or None
        The ``q_z`` argument of :func:`tpsviz.compute_tps` (None: the log's column).
    censoring : str or None
    notes : list of str
    """
    source = q_z if q_z is not None else ("rollouts" if rollouts is not None else "column")
    if isinstance(source, str):
        if source not in ("column", "rollouts"):
            raise SettingError(f"{setting('q_z')} must be 'column', 'rollouts' or a probability in [0, 1], "
                             f"got {source!r}")
        if source == "rollouts" and rollouts is None:
            raise SettingError(f"{setting('q_z', 'rollouts')} needs a rollouts table ({setting('rollouts')})")
        if source == "column":
            if rollouts is not None:
                raise SettingError(f"{setting('rollouts')} given with {setting('q_z', 'column')}: choose one")
            return None, censoring, _column_qz(data, censoring)
        return _rollouts(data, rollouts, censoring)
    if isinstance(source, bool) or not isinstance(source, (int, float, np.number)):
        raise SettingError(f"{setting('q_z')} must be 'column', 'rollouts' or a probability in [0, 1], "
                         f"got {source!r}")
    if rollouts is not None:
        raise SettingError(f"{setting('rollouts')} given with a constant {setting('q_z')}: choose one")
    q, words = qz_for_source(data, "constant", float(source))
    censoring = censoring or "exact"
    note = f"{words} (exact mode)" if censoring == "exact" else \
        f"q_Z = {float(source):g}: not used, censoring is {censoring}"
    return q, censoring, [note]


def _column_qz(data: TrajectoryData, censoring: str | None) -> list:
    """Notes on the log's q_z column; :class:`MissingQz` when exact mode is asked for and some censored
    run has no q_z (exact mode is exact: docs/theory.md §4)."""
    with_qz, n_cens = qz_coverage(data)
    if censoring == "exact" and with_qz < n_cens:
        raise MissingQz(n_cens - with_qz, n_cens)
    if censoring is None and 0 < with_qz < n_cens:
        return [text(f"q_z is given for {with_qz:,} of the {n_cens:,} censored runs: exact censoring needs "
                     f"every one, so the log is scored {setting('censoring', 'simple')} (a cut-off run counts "
                     "as a failure)")]
    return []


def _rollouts(data: TrajectoryData, rollouts, censoring: str | None):
    """(q_z, censoring, notes) of a rollouts table: exact mode by default (docs/theory.md)."""
    q_z, info = rollout_qz_series(data, rollouts)
    censoring = censoring or "exact"
    notes = [f"rollouts: q_Z estimated for {info['n_with_rollouts']} of {info['n_censored']} censored runs"]
    if info["censored_without"] and censoring == "exact":  # exact mode is exact (docs/theory.md §4)
        raise MissingQz(len(info["censored_without"]), info["n_censored"])
    if info["unknown_ids"]:
        notes.append(f"rollouts: {len(info['unknown_ids'])} trajectory id(s) not in the log "
                     f"were ignored (e.g. {', '.join(show_id(i) for i in info['unknown_ids'][:3])})")
    if censoring != "exact":
        notes.append(text(f"rollouts: not used, censoring is {censoring} (use {setting('censoring', 'exact')})"))
    return q_z, censoring, notes


def score_settings(has_qz: bool, alpha=None, beta=None, score: str | None = None,
                   schedule: str | Schedule = "uniform", censoring: str | None = None, eps: float = 1e-6,
                   n_boot: int = 2000, seed: int | None = None, level: float = 0.95) -> ScoreSettings:
    """The :class:`ScoreSettings` of the settings; censoring defaults to exact when the log has q_z.

    Parameters
    ----------
    has_qz : bool
        The log has a q_z value for some censored run (:func:`tpsviz.default_censoring`).
    alpha, beta : float, optional
        Beta-family parameters (default 0, 0: the log score).
    score : str, optional
        A preset instead of α, β: ``log``, ``brier``, ``boosting``, ``asym-high``, ``asym-low``.
    schedule : str or Schedule
        A weight schedule (:func:`tpsviz.parse_schedule`).
    censoring : {"complete", "simple", "exact", "upper"}, optional
    eps, n_boot, seed, level
        Clipping, bootstrap replicates and seed, confidence level.

    Returns
    -------
    ScoreSettings

    Raises
    ------
    ValueError
        For an unknown preset, a preset given with α or β, or a value ScoreSettings refuses.
    """
    if score is not None:
        if alpha is not None or beta is not None:
            raise SettingError(f"give {setting('score')} (a preset) or {setting('alpha')} and {setting('beta')}, "
                             "not both")
        if score not in PRESETS:
            raise ValueError(f"unknown score {score!r}: the presets are {', '.join(PRESETS)}")
        alpha, beta = PRESETS[score].alpha, PRESETS[score].beta
    sched = schedule if isinstance(schedule, Schedule) else parse_schedule(str(schedule))
    kwargs = dict(alpha=_float("alpha", 0.0 if alpha is None else alpha),
                  beta=_float("beta", 0.0 if beta is None else beta), schedule=sched,
                  censoring=censoring or ("exact" if has_qz else "simple"), eps=_float("eps", eps),
                  n_boot=int(n_boot), level=_float("level", level))
    if seed is not None:
        kwargs["seed"] = int(seed)
    return ScoreSettings(**kwargs)


def _float(name: str, v) -> float:
    if isinstance(v, bool):
        raise SettingError(f"{setting(name)} must be a number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise SettingError(f"{setting(name)} must be a number, got {v!r}") from None


