"""``tpsviz.evaluate(source, *, settings=None, read=None, engine="auto", **overrides)``: any log a
user holds, of any outcome kind, scored as ``python -m tpsviz score`` scores it.

The source is opened once (:func:`open_log`): a path (a file, a tau2-bench folder, a dataset
folder or glob), an open binary file, a pandas DataFrame or pyarrow Table in the long format, or a
log already read. Its outcome kind is told from its columns as ``score`` tells it
(:func:`tpsviz.io.kinds.outcome_kind`), and the log is scored by its kind's path: a binary log by
:meth:`~tpsviz.evaluation.record.BinaryEvaluation.compute` after its recalibrations and references
(:func:`evaluate_binary`), the others by :mod:`tpsviz.evaluation.outcome_kinds`. The command line's
``score`` calls the same functions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

from tpsviz.core.censoring import default_censoring
from tpsviz.core.clusters import check_cluster_by
from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import SettingError
from tpsviz.core.inference import INTERVALS
from tpsviz.core.wording import setting
from tpsviz.evaluation.base import Evaluation
from tpsviz.evaluation.options import ENGINES, ReadSettings, Settings, check_for_kind, resolve
from tpsviz.engines import OUT_OF_CORE
from tpsviz.evaluation.out_of_core import evaluate_dataset
from tpsviz.evaluation.outcome_kinds import evaluate_continuous, evaluate_multiclass
from tpsviz.evaluation.record import BinaryEvaluation
from tpsviz.core.schema import plain_text
from tpsviz.evaluation.engine_choice import choose_engine, memory_reason
from tpsviz.evaluation.reading import (default_converted, no_forecast_reason, read_log, read_options, recalibrated,
                                       with_references)
from tpsviz.evaluation.settings import NO_RECALIBRATION, RECALIBRATIONS, check_settings, qz_source, score_settings
from tpsviz.io.kinds.continuous import ContinuousLog, read_continuous
from tpsviz.io.dataset import DATASET_FORMATS, is_dataset_spec, open_dataset
from tpsviz.io.files import limits_from_env, read_file
from tpsviz.io.kinds import outcome_kind
from tpsviz.io.loading import is_frame, read_source
from tpsviz.io.kinds.multiclass import MulticlassLog, read_multiclass
from tpsviz.io.tables import FORMATS, format_of, table_columns

__all__ = ["evaluate", "evaluate_binary", "open_log", "log_header", "prepare_binary", "PreparedLog",
           "NothingToScore", "check_early"]


class NothingToScore(SettingError):
    """A log without any forecast whose references cannot be formed: nothing to score.

    Attributes
    ----------
    data : TrajectoryData
        The log as read.
    settings : ScoreSettings
    notes : list of str
        The notes of the reading.
    """

    def __init__(self, data: TrajectoryData, settings, notes):
        super().__init__(no_forecast_reason(data))
        self.data, self.settings, self.notes = data, settings, list(notes)


def evaluate(source, *, settings: Settings | None = None, read: ReadSettings | None = None, engine: str = "auto",
             scheduler: str | None = None, cache=None, **overrides) -> Evaluation:
    """Score every predictor of a log and decide every report of ``python -m tpsviz score``.

    Parameters
    ----------
    source : str, PathLike, binary file, DataFrame, pyarrow Table or a log already read
        A log file (a table, a harness log, a trace file), a tau2-bench folder, a dataset (a
        folder or glob of Parquet/CSV files), an open binary file, a DataFrame or Table in the
        long format (``mapping`` renames other columns; it is never modified), or a
        :class:`~tpsviz.core.data.TrajectoryData` (or a multi-class or continuous log) already read.
    settings : Settings, optional
        How the log is scored (:class:`tpsviz.Settings`; default: ``score``'s defaults).
    read : ReadSettings, optional
        How it is read (:class:`tpsviz.ReadSettings`: format, mapping, harness and trace options).
    engine : {"auto", "memory", "duckdb", "dask"}
        Where the rows are scored, as ``score --engine`` chooses: ``auto`` reads into memory a log
        within ``TPSVIZ_MAX_ROWS`` and scores a larger Parquet/CSV dataset out of core with DuckDB
        (:func:`choose_engine`). Out of core, what needs the step rows in memory is refused by name
        and the verdicts are decided on a sample of runs (:mod:`tpsviz.evaluation.out_of_core`).
    scheduler : str, optional
        With ``engine="dask"``: the address of a Dask scheduler (default: a local cluster).
    cache : tpsviz.evaluation.parts.PartsMemo, optional
        A binary log's parts are kept in it under the settings each depends on, so a second call
        with one setting moved recomputes only what depends on it in memory (the same numbers;
        :mod:`tpsviz.evaluation.parts`). Not used for the other outcome kinds.
    **overrides
        Any field of :class:`Settings` or :class:`ReadSettings` by name (``n_boot=500``,
        ``mapping={"trajectory_id": "run"}``), overriding ``settings`` and ``read``.

    Returns
    -------
    Evaluation
        A :class:`~tpsviz.evaluation.record.BinaryEvaluation` (a
        :class:`~tpsviz.evaluation.out_of_core.DatasetEvaluation` out of core), or for a multi-class or
        continuous-outcome log a :class:`~tpsviz.evaluation.outcome_kinds.MulticlassEvaluation` or
        :class:`~tpsviz.evaluation.outcome_kinds.ContinuousEvaluation`; ``kind`` says which.

    Raises
    ------
    ValueError
        For an unknown keyword (naming the nearest valid one), a setting out of range or that does
        not apply to the log's kind (tpsviz.LogFormatError, a ValueError, for a log that cannot be
        read; :class:`NothingToScore` for a log without any forecast or reference).
    """
    s, r = resolve(settings, read, overrides)
    check_early(s, engine)
    kind, log = open_log(source, r)
    check_for_kind(s, r, kind)
    if kind != "binary" and engine in OUT_OF_CORE:
        raise SettingError(f"{setting('engine', engine)}: a {kind} log has no out-of-core path yet; it is read into "
                           f"memory from one file ({setting('engine', 'memory')})")
    if kind == "multiclass":
        return evaluate_multiclass(log, s)
    if kind == "continuous":
        return evaluate_continuous(log, s)
    engine, why, ds = choose_engine(source, r.fmt, engine)
    if ds is not None:
        return evaluate_dataset(ds, s, r, engine, why, scheduler)
    return evaluate_binary(log, s, r, why, cache)


def check_early(s: Settings, engine: str = "auto") -> None:
    """Refuse a setting out of range before the log is read.

    Parameters
    ----------
    s : Settings
    engine : str

    Raises
    ------
    SettingError
    """
    if engine not in ENGINES:
        raise SettingError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    check_settings(s.n_boot, s.seed, s.eps, s.folds, s.level)
    check_cluster_by(s.cluster_by)
    if s.interval not in INTERVALS:
        raise SettingError(f"{setting('interval')} must be one of {', '.join(INTERVALS)}, got {s.interval!r}")
    if s.recalibrate is not None and s.recalibrate not in RECALIBRATIONS + (NO_RECALIBRATION,):
        raise SettingError(f"{setting('recalibrate')} must be one of {', '.join(RECALIBRATIONS + (NO_RECALIBRATION,))}, "
                           f"got {s.recalibrate!r}")
    if s.rule not in ("log", "brier"):
        raise SettingError(f"{setting('rule')} must be log or brier, got {s.rule!r}")
    score_settings(False, s.alpha, s.beta, s.score, s.schedule, s.censoring, s.eps, s.n_boot, s.seed, s.level)


# ----------------------------------------------------------------------------- the source
def log_header(path) -> list[str]:
    """The column names of a table file or dataset, or [] when there is none to read (a harness log,
    a folder of harness files, a file that is not there: the reader then says what is wrong).

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    list of str
    """
    if is_dataset_spec(path):
        return list(open_dataset(path).columns)
    p = Path(path)
    if not p.is_file():  # (a FIFO or a device is no file: never opened here)
        return []
    suffix = p.suffix.lower()
    if suffix in DATASET_FORMATS:
        return list(open_dataset(path).columns)  # (the first line or the footer only)
    if suffix in FORMATS:
        raw = read_file(path, limits_from_env().max_bytes, label=p.name)
        return table_columns(raw, p.name, FORMATS[suffix])
    return []


def _kind_of(columns, r: ReadSettings) -> str:
    """The outcome kind of a table's columns; a forced harness format or a mapping reads binary logs."""
    if r.fmt not in (None, "auto", "csv", "tsv", "parquet", "jsonl") or r.mapping:
        return "binary"
    return outcome_kind([str(c) for c in columns])


def open_log(source, r: ReadSettings | None = None) -> tuple[str, object]:
    """The outcome kind of a source and the source as its kind's path reads it.

    Parameters
    ----------
    source : path, binary file, DataFrame, pyarrow Table or a log already read
    r : ReadSettings, optional

    Returns
    -------
    kind : {"binary", "multiclass", "continuous"}
    log : object
        A multi-class or continuous log read; for a binary log the source itself (a path, bytes
        with their name, a frame or a TrajectoryData), read by :func:`evaluate_binary`.
    """
    r = r or ReadSettings()
    if isinstance(source, TrajectoryData):
        return "binary", source
    if isinstance(source, MulticlassLog):
        return "multiclass", source
    if isinstance(source, ContinuousLog):
        return "continuous", source
    if is_frame(source):
        kind = _kind_of(source.column_names if hasattr(source, "column_names") else source.columns, r)
        frame = source if kind == "binary" or not hasattr(source, "to_pandas") else source.to_pandas()
        return kind, _read_kind(kind, frame, "<DataFrame>")
    if isinstance(source, (str, os.PathLike)):
        try:
            kind = _kind_of(log_header(source), r)
        except (OSError, ValueError):  # (the binary reader names the problem as it always has)
            kind = "binary"
        if kind != "binary" and is_dataset_spec(source):
            raise SettingError(f"{plain_text(source)}: the folder's files hold a {kind} log; such a log is read "
                               "from one file: give the path of one file")
        return kind, _read_kind(kind, source, None)
    if hasattr(source, "read"):  # an open binary file: read once, under the size limit
        raw, name = read_source(source, None, limits_from_env())
        kind = "binary"
        if Path(name).suffix.lower() in FORMATS:
            kind = _kind_of(table_columns(raw, name, format_of(name, "a log", raw)), r)
        return kind, _read_kind(kind, (raw, name), name)
    return "binary", source


def _read_kind(kind: str, source, name):
    """A multi-class or continuous log read; a binary source as it is."""
    if kind == "multiclass":
        return read_multiclass(source, name)
    if kind == "continuous":
        return read_continuous(source, name)
    return source


# ----------------------------------------------------------------------------- binary logs
@dataclass(frozen=True)
class PreparedLog:
    """A binary log ready to score: read, with its q_Z source, recalibrations and references.

    Attributes
    ----------
    data : TrajectoryData
    settings : ScoreSettings
    q_z : Series, ndarray or None
        q_Z of the censored runs in exact mode (None: the log's column).
    notes : list of str
        What the reading, the q_Z source, the recalibration and the references did.
    """

    data: TrajectoryData
    settings: object
    q_z: object
    notes: list


def prepare_binary(source, s: Settings, r: ReadSettings) -> PreparedLog:
    """Read a binary log (or take it as read), choose its q_Z source and censoring mode, add its
    recalibrations (fitted on the mode's population, docs/theory.md §6) and references: the first half
    of :func:`evaluate_binary`, which ``compare``, ``monitor`` and ``defer`` share.

    Parameters
    ----------
    source : path, (bytes, name), DataFrame or TrajectoryData
    s : Settings
    r : ReadSettings

    Returns
    -------
    PreparedLog
        Its ``data`` may have no predictor (no forecast, and too few runs for a reference).
    """
    options = None if isinstance(source, TrajectoryData) else _read_options(r)
    if options is None and r != ReadSettings():
        given = [f.name for f in _given_fields(r)]
        raise SettingError(f"{', '.join(given)}: reading options apply to a file; this log is already read "
                           "(a TrajectoryData)")
    data, notes = read_log(source, options, r.forecasts, None, s.folds, s.seed, s.schedule,
                           allow_empty=True, outcomes=r.outcomes)
    q, censoring, qz_notes = qz_source(data, s.q_z, s.rollouts, s.censoring)
    settings = replace(score_settings(default_censoring(data) == "exact", s.alpha, s.beta, s.score, s.schedule,
                                      censoring, s.eps, s.n_boot, s.seed, s.level),
                       cluster_by=s.cluster_by, interval=s.interval)
    more = []
    if s.recalibrate == NO_RECALIBRATION:  # asked for: raw signals stay raw (their note says so); references come
        more = []
    elif s.recalibrate:  # fitted on the population the score scores (docs/theory.md §6)
        data, more = recalibrated(data, s.recalibrate, s.folds, s.seed, settings.censoring, q)
    else:  # a log of raw signals only: converted as on every face (default_forecasts)
        data, more = default_converted(data, s.folds, s.seed, settings.censoring, q)
    data, refs = with_references(data, settings, q, bool(s.references), s.folds, s.seed)
    return PreparedLog(data, settings, q, notes + more + qz_notes + refs)


def evaluate_binary(source, s: Settings, r: ReadSettings, why: str | None = None, cache=None) -> BinaryEvaluation:
    """A binary log prepared (:func:`prepare_binary`), then :meth:`BinaryEvaluation.compute`.

    Parameters
    ----------
    source : path, (bytes, name), DataFrame or TrajectoryData
    s : Settings
    r : ReadSettings
    why : str, optional
        Why the log is scored in memory.
    cache : tpsviz.evaluation.parts.PartsMemo, optional
        Passed to :meth:`BinaryEvaluation.compute`.

    Returns
    -------
    BinaryEvaluation

    Raises
    ------
    NothingToScore
        When the log holds no forecast and its references cannot be formed.
    """
    p = prepare_binary(source, s, r)
    if not p.data.predictors:
        raise NothingToScore(p.data, p.settings, p.notes)
    return BinaryEvaluation.compute(p.data, p.settings, p.q_z, p.notes, why or memory_reason(source, r.fmt), cache)


def _read_options(r: ReadSettings):
    return read_options(r.fmt, r.success_threshold, r.treat, r.scorer, r.conf, r.mapping, r.percent, r.run_by,
                        r.step_spans, r.outcome, r.censor_when)


def _given_fields(r: ReadSettings) -> list:
    """The reading options given (not at their defaults)."""
    default = ReadSettings()
    return [f for f in fields(r) if getattr(r, f.name) not in (getattr(default, f.name), (), [], {}, "auto", None)]
