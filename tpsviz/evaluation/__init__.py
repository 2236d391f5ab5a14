"""``tpsviz.evaluate``: what ``python -m tpsviz score`` computes, as one Python object.

:func:`evaluate` reads a log (or takes a :class:`~tpsviz.core.data.TrajectoryData`), applies the
settings of ``score`` and returns an :class:`~tpsviz.evaluation.record.Evaluation`: the TPS
summary and per-trajectory scores, the usual metrics, skill against the base rate, the verdict of
every predictor (docs/theory.md §8), the excess movement of rational updating, warnings and notes;
``to_json()`` is the object ``score --json`` prints, ``to_html()`` the offline report (docs/api.md).

``settings`` checks the settings and reads the log, ``record`` holds the Evaluation and its JSON,
``tables`` writes it as tables of text cells (the dashboard's Overview, the reports), ``report``
builds its HTML report. Builds on every layer below ``cli``; the command line uses it.
"""

from __future__ import annotations

from dataclasses import replace

from tpsviz.core.clusters import check_cluster_by
from tpsviz.core.inference import INTERVALS
from tpsviz.core.data import TrajectoryData
from tpsviz.core.censoring import default_censoring
from tpsviz.evaluation.record import Evaluation
from tpsviz.evaluation.settings import (
    RECALIBRATIONS, check_settings, memory_reason, no_forecast_reason, qz_source, read_log, read_options,
    recalibrated, score_settings, with_references)

__all__ = ["evaluate", "Evaluation"]


def evaluate(source_or_data, *, alpha: float | None = None, beta: float | None = None,
             score: str | None = None, schedule="uniform", censoring: str | None = None,
             eps: float = 1e-6, n_boot: int = 2000, seed: int | None = None, level: float = 0.95,
             q_z=None, rollouts=None, recalibrate: str | None = None, folds: int = 5,
             fmt: str | None = None, success_threshold: float | None = None, treat=(),
             scorer: str | None = None, conf=(), mapping=(), percent=(), forecasts=None,
             references: bool = False, run_by: str | None = None, step_spans=(), outcome: str | None = None,
             outcomes=None, censor_when=(), cluster_by: str = "auto", interval: str = "studentized") -> Evaluation:
    """Score every predictor of a log and decide every report of ``python -m tpsviz score``.

    Parameters
    ----------
    source_or_data : str, PathLike or TrajectoryData
        A log :func:`tpsviz.load` reads (a table, a dataset folder or pattern, a harness log), or a
        log already read.
    alpha, beta : float, optional
        Beta-family parameters > −1 (default 0, 0: the log score; 1, 1: half the Brier score).
    score : str, optional
        A preset instead of α and β: ``log``, ``brier``, ``boosting``, ``asym-high``, ``asym-low``.
    schedule : str or Schedule
        Weight schedule (default ``uniform``; :func:`tpsviz.parse_schedule`).
    censoring : {"complete", "simple", "exact", "upper"}, optional
        Default: ``exact`` when every censored run has a q_Z (a q_z value, ``rollouts``, ``q_z``), else ``simple``.
    eps : float
        Forecasts are clipped to [ε, 1 − ε] (default 1e-6; 0 = off).
    n_boot, seed, level
        Bootstrap replicates (0: no CI, or 50 to 20,000; default 2000), the bootstrap's (and
        recalibration's) seed (default fixed), the level of intervals and verdict tests (default 0.95).
    q_z : {"column", "rollouts"} or float, optional
        q_Z of censored runs in exact mode: the log's ``q_z`` column (default), the Monte-Carlo
        mean of ``rollouts`` (default when they are given), or one probability for every run.
    rollouts : str, Path or DataFrame, optional
        A rollouts table ``trajectory_id, outcome``.
    recalibrate : {"platt", "isotonic", "beta"}, optional
        Add a cross-fitted recalibration ``<name>@<method>`` of every predictor and raw signal.
    folds : int
        Cross-fitting folds of ``recalibrate`` (2 to 50, default 5).
    fmt, success_threshold, treat, scorer, conf, mapping, percent, forecasts
        Reading options of a path, as ``score``'s (docs/harness.md):
        :func:`tpsviz.evaluation.settings.read_options`; ``forecasts`` is a sidecar table
        ``trajectory_id, step, conf_*`` joined on (trajectory_id, step).
    run_by, step_spans, outcome, outcomes, censor_when
        Trace files (docs/traces.md), as ``score``'s ``--run-by`` … ``--censor-when``; ``outcomes``
        is a table ``trajectory_id, outcome[, censored]`` or Phoenix evaluations.
    references : bool
        Add the reference forecasters ``ref:step``, ``ref:task``, ``ref:task+step`` computed from
        the log's outcomes alone (docs/forecasts.md §1; ``folds`` and ``seed`` set their folds):
        every other predictor's verdict then says whether it beats the best of them. A log
        without any forecast always gets them.
    cluster_by, interval : str
        The unit of SEs and bootstraps: ``"auto"``, ``"run"`` or a column (docs/theory.md §6.1,
        ``to_json()["settings"]["se"]`` says which); the bootstrap CI of a mean: ``"studentized"``
        (default, the bootstrap-t) or ``"percentile"`` (:mod:`tpsviz.core.inference`).

    Returns
    -------
    Evaluation

    Raises
    ------
    ValueError
        For a setting out of range or that does not fit the log (tpsviz.LogFormatError, a
        ValueError, for a log that cannot be read).
    """
    _check_early(recalibrate, (cluster_by, interval), alpha, beta, score, schedule, censoring, eps, n_boot, seed,
                 level, folds)
    options = _reading_options(source_or_data, forecasts, dict(
        fmt=fmt, success_threshold=success_threshold, treat=treat, scorer=scorer, conf=conf, mapping=mapping,
        percent=percent, run_by=run_by, step_spans=step_spans, outcome=outcome, censor_when=censor_when), outcomes)
    data, notes = read_log(source_or_data, options, forecasts, None, folds, seed, schedule,
                           allow_empty=True, outcomes=outcomes)
    q, censoring, qz_notes = qz_source(data, q_z, rollouts, censoring)
    settings = replace(score_settings(default_censoring(data) == "exact", alpha, beta, score, schedule, censoring,
                                      eps, n_boot, seed, level), cluster_by=cluster_by, interval=interval)
    data, more = _added_forecasts(data, settings, q, recalibrate, references, folds, seed)
    if not data.predictors:
        raise ValueError(no_forecast_reason(data))
    return Evaluation.compute(data, settings, q, notes + qz_notes + more, memory_reason(source_or_data, fmt))


def _added_forecasts(data, settings, q, recalibrate, references, folds, seed) -> tuple:
    """(the log with its recalibrations and references, notes): both fitted once the censoring mode and
    q_Z are known, on the population the score scores (docs/theory.md §6)."""
    notes = []
    if recalibrate:
        data, notes = recalibrated(data, recalibrate, folds, seed, settings.censoring, q)
    data, ref_notes = with_references(data, settings, q, bool(references), folds, seed)
    return data, notes + ref_notes


def _check_early(recalibrate, inference, alpha, beta, score, schedule, censoring, eps, n_boot, seed, level,
                 folds) -> None:
    """Refuse a setting out of range before the log is read (the settings of :func:`evaluate`;
    ``inference``: its cluster_by and interval)."""
    check_settings(n_boot, seed, eps, folds, level)
    check_cluster_by(inference[0])
    if inference[1] not in INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {inference[1]!r}")
    if recalibrate is not None and recalibrate not in RECALIBRATIONS:
        raise ValueError(f"recalibrate must be one of {', '.join(RECALIBRATIONS)}, got {recalibrate!r}")
    score_settings(False, alpha, beta, score, schedule, censoring, eps, n_boot, seed, level)


def _reading_options(source_or_data, forecasts, reading: dict, outcomes=None):
    """The reading options of a path (None for a TrajectoryData, which refuses them)."""
    if isinstance(source_or_data, TrajectoryData):
        given = [k for k, v in reading.items() if v not in (None, (), [], {}, "auto")]
        given += [k for k, v in (("forecasts", forecasts), ("outcomes", outcomes)) if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: reading options apply to a file; this log is already read "
                             "(a TrajectoryData)")
        return None
    return read_options(**reading)
