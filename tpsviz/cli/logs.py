"""A command's log: which kind of outcome it holds, how it is read (reading options, recalibrated
predictors, rollouts) and the score settings its options give: the steps of
:mod:`tpsviz.evaluation.settings` under the command line's option names.

The kind (binary, multi-class, continuous: :func:`tpsviz.io.kinds.outcome_kind`) is decided from
the header alone (a table's first line or Parquet footer, a dataset's columns), so ``score`` and
``compare`` can hand a log to the command that reads its kind before any row is read.
"""

from __future__ import annotations

import math
from dataclasses import replace

from tpsviz.cli.common import Fail
from tpsviz.cli.wording import say
from tpsviz.core.errors import LogFormatError
from tpsviz.core.censoring import default_censoring
from tpsviz.core.tps import ScoreSettings
from tpsviz.evaluation import reading as evaluation_reading
from tpsviz.evaluation import settings as evaluation_settings
from tpsviz.evaluation.front_door import log_header, prepare_binary
from tpsviz.evaluation.options import ReadSettings, Settings
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.io.kinds import outcome_kind

__all__ = ["log_kind", "settings_of", "read_options", "settings_from", "settings_for", "load_log", "prepare", "cluster_choice"]


def log_kind(args) -> str:
    """The kind of outcome the command's log holds.

    Parameters
    ----------
    args : Namespace
        ``path`` and, where the command has them, ``format`` and ``map`` (a forced harness format
        or a column mapping makes a binary log: those options read binary logs only).

    Returns
    -------
    str
        ``"binary"``, ``"multiclass"`` or ``"continuous"``; ``"binary"`` whenever the header
        cannot be read (the binary reader then names the problem as it always has).
    """
    if getattr(args, "format", "auto") not in ("auto", "csv", "tsv", "parquet", "jsonl") or getattr(args, "map", None):
        return "binary"
    try:
        return outcome_kind(log_header(args.path))
    except (LogFormatError, OSError, ValueError):
        return "binary"


def settings_of(args) -> tuple[Settings, ReadSettings]:
    """The command's options as the two groups of settings of :func:`tpsviz.evaluate`.

    Parameters
    ----------
    args : Namespace
        The options of ``score`` (a command without an option leaves its field at the default).

    Returns
    -------
    (Settings, ReadSettings)

    Raises
    ------
    Fail
        For a success threshold that is not finite.
    """
    if getattr(args, "success_threshold", None) is not None and not math.isfinite(args.success_threshold):
        raise Fail("--success-threshold must be a finite number")
    score = {f: getattr(args, f) for f in Settings.__dataclass_fields__ if hasattr(args, f)}
    score["cluster_by"] = cluster_choice(args)
    read = {f: getattr(args, f) for f in ReadSettings.__dataclass_fields__ if hasattr(args, f)}
    read.update(fmt=getattr(args, "format", None), mapping=getattr(args, "map", None) or ())
    return Settings(**score), ReadSettings(**read)


def read_options(args) -> ReadOptions:
    """The reading options (``--format``, ``--treat``, ``--map`` …) as a :class:`ReadOptions`
    (:func:`tpsviz.evaluation.reading.read_options`).

    Raises
    ------
    Fail
        For an option value that cannot be parsed.
    """
    if args.success_threshold is not None and not math.isfinite(args.success_threshold):
        raise Fail("--success-threshold must be a finite number")
    try:
        return evaluation_reading.read_options(args.format, args.success_threshold, args.treat, args.scorer,
                                                args.conf, args.map, args.percent, getattr(args, "run_by", None),
                                                getattr(args, "step_spans", ()), getattr(args, "outcome", None),
                                                getattr(args, "censor_when", ()))
    except ValueError as exc:
        raise Fail(say(exc)) from None


def settings_from(args, has_qz: bool) -> ScoreSettings:
    """The score settings of the options (:func:`tpsviz.evaluation.settings.score_settings`).

    Parameters
    ----------
    args : Namespace
        ``alpha``, ``beta``, ``schedule``, ``censoring``, ``eps``, ``n_boot``, ``level``, ``seed`` and,
        where the command has them, ``cluster_by`` and ``pair_on`` (:func:`cluster_choice`).
    has_qz : bool
        Whether the log has q_z: the default censoring is then exact, else simple.

    Returns
    -------
    ScoreSettings

    Raises
    ------
    Fail
        For settings the core refuses (the core's message).
    """
    try:
        settings = evaluation_settings.score_settings(has_qz, args.alpha, args.beta, None, args.schedule,
                                                      args.censoring, args.eps, args.n_boot, args.seed, args.level)
        return replace(settings, cluster_by=cluster_choice(args), interval=getattr(args, "interval", "studentized"))
    except ValueError as exc:
        raise Fail(say(exc)) from None


def cluster_choice(args) -> str:
    """``--cluster-by`` (default auto); with auto, a column named by ``--pair-on`` is the cluster too."""
    by = getattr(args, "cluster_by", "auto") or "auto"
    pair_on = getattr(args, "pair_on", None)
    if by == "auto" and pair_on and pair_on.lower() not in ("auto", "none") and pair_on != getattr(args, "by", None):
        return pair_on  # (pair_on = --by is refused by the pairing, in its own words)
    return by


def settings_for(args, data) -> ScoreSettings:
    """:func:`settings_from` for a loaded log (exact censoring by default when it has q_z)."""
    return settings_from(args, default_censoring(data) == "exact")


def load_log(args, path, allow_empty: bool = False, recalibrate=True):
    """One log with its recalibrated predictors (``--recalibrate``), and the notes of the loading
    (:func:`tpsviz.evaluation.reading.read_log`).

    Parameters
    ----------
    args : Namespace
        The reading options, ``forecasts``, ``recalibrate``, ``folds``, ``seed`` and, where the
        command has it, ``schedule``.
    path : str
        The log.
    allow_empty : bool
        Return a log without any forecast (the caller adds its references) instead of refusing it.
    recalibrate : bool
        Add ``--recalibrate``'s predictors here, fitted on the population of ``--censoring`` (or the
        log's default mode); False: the caller adds them once q_Z is known (:func:`prepare`).

    Returns
    -------
    data : TrajectoryData
    notes : list of str

    Raises
    ------
    Fail
        For a log with nothing to score, or a recalibration that gives no predictor.
    """
    options = read_options(args)
    recalibrate = args.recalibrate if recalibrate else None
    try:
        return evaluation_reading.read_log(path, options, args.forecasts, recalibrate, args.folds, args.seed,
                                            getattr(args, "schedule", "uniform"),
                                            allow_empty=allow_empty, outcomes=getattr(args, "outcomes", None),
                                            censoring=getattr(args, "censoring", None))
    except LogFormatError:
        raise
    except ValueError as exc:
        raise Fail(say(exc)) from None


def prepare(args):
    """Load the log, add recalibrated predictors, read rollouts, build the settings, add the
    references (``--references``, and always to a log without any forecast): the front door's
    :func:`tpsviz.evaluation.front_door.prepare_binary` under the command's options.

    Returns
    -------
    data : TrajectoryData
    settings : ScoreSettings
    q_z : Series or None
        q_Z of the censored runs from ``--rollouts`` or ``--q-z``.
    notes : list of str
        What the loading did (recalibration, rollouts).

    Raises
    ------
    Fail
    """
    try:
        p = prepare_binary(args.path, *settings_of(args))
    except LogFormatError:
        raise
    except ValueError as exc:
        raise Fail(say(exc)) from None
    args.censoring = p.settings.censoring
    return p.data, p.settings, p.q_z, p.notes
