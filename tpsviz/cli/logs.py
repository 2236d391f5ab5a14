"""A command's log: which kind of outcome it holds, how it is read (reading options, recalibrated
predictors, rollouts) and the score settings its options give.

The kind (binary, multi-class, continuous: :func:`tpsviz.io.kinds.outcome_kind`) is decided from
the header alone (a table's first line or Parquet footer, a dataset's columns), so ``score`` and
``compare`` can hand a log to the command that reads its kind before any row is read.
"""

from __future__ import annotations

import math
from pathlib import Path

from tpsviz.cli.common import Fail, safe
from tpsviz.core.errors import LogFormatError
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.schedules import parse_schedule
from tpsviz.core.schema import show_id
from tpsviz.core.tps import ScoreSettings, default_censoring
from tpsviz.io.dataset import DATASET_FORMATS, is_dataset_spec, open_dataset
from tpsviz.io.files import limits_from_env, read_file
from tpsviz.io.harness.runs import ReadOptions, parse_conf, parse_mapping, parse_treat
from tpsviz.io.kinds import outcome_kind
from tpsviz.io.loading import load
from tpsviz.io.tables import FORMATS, table_columns

__all__ = ["log_kind", "read_options", "settings_from", "settings_for", "load_log", "prepare"]


def _header(path: str) -> list[str]:
    """The column names of a table file or dataset, or [] when there is none to read (a harness log,
    a folder of harness files, a file that is not there: the reader then says what is wrong)."""
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
        return outcome_kind(_header(args.path))
    except (LogFormatError, OSError, ValueError):
        return "binary"


def read_options(args) -> ReadOptions:
    """The reading options (``--format``, ``--treat``, ``--map`` …) as a :class:`ReadOptions`.

    Raises
    ------
    Fail
        For an option value that cannot be parsed.
    """
    try:
        mapping = parse_mapping(args.map)
        percent = tuple(p.strip() for item in args.percent for p in str(item).split(",") if p.strip())
        if args.success_threshold is not None and not math.isfinite(args.success_threshold):
            raise ValueError("--success-threshold must be a finite number")
        return ReadOptions(fmt=None if args.format == "auto" else args.format,
                           success_threshold=args.success_threshold, treat=parse_treat(args.treat),
                           scorer=args.scorer, conf=parse_conf(args.conf), mapping=tuple(mapping),
                           percent=percent)
    except ValueError as exc:
        raise Fail(str(exc)) from None


def settings_from(args, has_qz: bool) -> ScoreSettings:
    """The score settings of the options.

    Parameters
    ----------
    args : Namespace
        ``alpha``, ``beta``, ``schedule``, ``censoring``, ``eps``, ``n_boot``, ``level``, ``seed``.
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
        schedule = parse_schedule(args.schedule)
        kwargs = dict(alpha=args.alpha, beta=args.beta, schedule=schedule,
                      censoring=args.censoring or ("exact" if has_qz else "simple"), eps=args.eps,
                      n_boot=args.n_boot, level=args.level)
        if args.seed is not None:
            kwargs["seed"] = args.seed
        return ScoreSettings(**kwargs)
    except ValueError as exc:
        raise Fail(str(exc)) from None


def settings_for(args, data) -> ScoreSettings:
    """:func:`settings_from` for a loaded log (exact censoring by default when it has q_z)."""
    return settings_from(args, default_censoring(data) == "exact")


def prepare(args):
    """Load the log, add recalibrated predictors, read rollouts, build the settings.

    Returns
    -------
    data : TrajectoryData
    settings : ScoreSettings
    q_z : Series or None
        q_Z of the censored runs from ``--rollouts``.
    notes : list of str
        What the loading did (recalibration, rollouts).
    """
    data, notes = load_log(args, args.path)
    q_z = None
    if getattr(args, "rollouts", None):
        q_z = _rollouts(args, data, notes)
    settings = settings_for(args, data)
    return data, settings, q_z, notes


def _rollouts(args, data, notes: list):
    """q_Z of the censored runs from --rollouts (exact mode by default); notes say what was used."""
    from tpsviz.diagnostics.audit import rollout_qz_series

    q_z, info = rollout_qz_series(data, args.rollouts)
    if args.censoring is None:
        args.censoring = "exact"
    notes.append(f"rollouts: q_Z estimated for {info['n_with_rollouts']} of "
                 f"{info['n_censored']} censored runs")
    if info["censored_without"]:
        notes.append(f"rollouts: {len(info['censored_without'])} censored runs have no "
                     "rollouts and are scored with q_Z = 0")
    if info["unknown_ids"]:
        notes.append(f"rollouts: {len(info['unknown_ids'])} trajectory id(s) not in the log "
                     f"were ignored (e.g. {', '.join(show_id(i) for i in info['unknown_ids'][:3])})")
    if args.censoring != "exact":
        notes.append(f"rollouts: not used, censoring is {args.censoring} (use --censoring "
                     "exact)")
    return q_z


def load_log(args, path):
    """One log with its recalibrated predictors (``--recalibrate``), and the notes of the loading.

    Parameters
    ----------
    args : Namespace
        The reading options, ``recalibrate``, ``folds``, ``seed`` and, where the command has it,
        ``schedule``.
    path : str
        The log.

    Returns
    -------
    data : TrajectoryData
    notes : list of str

    Raises
    ------
    Fail
        For a log with nothing to score, or a recalibration that gives no predictor.
    """
    data = load(path, options=read_options(args), forecasts=args.forecasts)
    if not data.predictors and not args.recalibrate:
        raise Fail(f"{safe(data.source)} has no probability column, only raw signals "
                   f"({', '.join(safe(s, 40) for s in data.signals)}): add --recalibrate platt (or "
                   "isotonic) to score them as cross-fitted probabilities <name>@<method>")
    if getattr(args, "schedule", "").strip().lower() == "column" and "weight" not in data.steps:
        raise Fail("schedule 'column' needs a 'weight' column in the log; this file has none")
    notes = []
    if args.recalibrate:
        data = _recalibrated(args, data, notes)
    return data, notes


def _recalibrated(args, data, notes: list):
    """``data`` with every predictor and signal recalibrated (``<name>@<method>``) by cross-fitting."""
    from tpsviz.diagnostics.calibrate import add_all_recalibrated

    before = list(data.notes)
    try:
        data, reports = add_all_recalibrated(data, args.recalibrate, folds=args.folds,
                                             seed=args.seed if args.seed is not None else DEFAULT_SEED)
    except ValueError as exc:
        raise Fail(str(exc)) from None
    added = [p for p in data.predictors if p.endswith(f"@{args.recalibrate}")]
    if not data.predictors:
        why = "; ".join(f"{safe(s, 40)}: {safe(r, 200)}" for s, r in reports.items() if isinstance(r, str))
        raise Fail(f"--recalibrate {args.recalibrate} gave no predictor to score"
                   + (f" ({why})" if why else "") + "; try another method or fewer --folds")
    data.notes = before + [  # one line instead of one note per recalibrated predictor
        f"added {len(added)} predictors by cross-fitted {args.recalibrate} recalibration "
        f"({args.folds} folds by trajectory, fitted on complete runs): {', '.join(added)}"]
    for src, rep in reports.items():
        if isinstance(rep, str):
            notes.append(f"recalibration of {src} {rep}")
    return data

