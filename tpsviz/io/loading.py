"""Loading trajectory logs (docs/formats.md, docs/harness.md): :func:`load` and its types.

Formats: long CSV/TSV, Parquet, JSON Lines (flat or nested), and the logs of agent harnesses —
tau2-bench (a results file or its folder layout), tau-bench (v1) and Inspect AI (``.eval`` and
``.json``) — chosen from the content unless forced. The user's file is only ever read; paths
are opened as regular files of bounded size (:mod:`tpsviz.io.files`) and the row cap is checked
before parsing. Every defect raises :class:`LogFormatError` naming the file, the row (line),
run or trajectory and the column or field, never a value the file holds.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.io.dataset import is_dataset_spec, open_dataset
from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import Limits, limits_from_env, read_file
from tpsviz.io.harness import (
    HARNESS_FORMATS, TABLE_FORMATS, TRACE_FORMATS, detect_format, read_harness, read_tau2_dir, read_tau2_parts)
from tpsviz.io.harness.forecasts import join_sidecar
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.io.tables.longform import from_frame
from tpsviz.io.tables.run_ids import id_text
from tpsviz.core.schema import SEPARATORS, canonical_name, separator_note, show_id
from tpsviz.core.wording import setting, text
from tpsviz.io.tables import FORMATS, format_of, read_table, table_columns
from tpsviz.io.traces.openinference import is_evaluations_table, read_openinference_evaluations
from tpsviz.io.traces.options import parse_rules
from tpsviz.io.traces.read import read_traces

__all__ = ["TrajectoryData", "LogFormatError", "load", "from_frame", "FORMATS", "read_source", "read_outcomes_table",
           "ReadOptions", "read_forecasts_table", "guarded", "no_forecast_note", "is_frame", "READERS"]


def read_source(source, name: str | None = None, limits: Limits | None = None,
                read=None) -> tuple[bytes, str]:
    """The bytes and display name of a path, bytes or binary file object (size-limited).

    Raises
    ------
    tpsviz.io.files.FileRefused
        For a path that is not a readable regular file, or one above ``limits.max_bytes``.
    LogFormatError
        For bytes or a file object above the size limit.
    """
    limits = limits or limits_from_env()
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = name or path.name or str(path)
        reader = read or (lambda p, n, label: read_file(p, n, label=label))
        return reader(path, limits.max_bytes, name), str(name)
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], (bytes, bytearray)):
        raw, name = bytes(source[0]), name or source[1]
    elif isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
    else:
        raw = source.read(limits.max_bytes + 1)
        name = name or getattr(source, "name", None)
    name = str(name or "<upload>")
    if len(raw) > limits.max_bytes:
        raise LogFormatError(name, [f"the file is larger than the {limits.max_bytes // 2**20:,} MB "
                                    "this installation reads (TPSVIZ_MAX_FILE_MB)"])
    return raw, name


def apply_mapping(df, mapping, name: str):
    """Rename columns of other names to the long format's (``--map target=column``)."""
    if not mapping:
        return df
    problems = []
    opt = setting("map")
    rename = {}
    for target, col in mapping:
        target, col = str(target).strip(), str(col).strip()
        ok_target = target in ("trajectory_id", "step", "outcome", "censored", "q_z", "weight") or (
            target.startswith(("conf_", "raw_", "unc_")) and len(target.split("_", 1)[1]) > 0)
        if not ok_target:
            problems.append(f"{opt} {target}={col}: {show_id(target)} is not a long-format column "
                            "(trajectory_id, step, outcome, censored, q_z, weight, conf_<name>, "
                            "raw_<name>, unc_<name>)")
        elif col not in df.columns:
            problems.append(f"{opt} {target}={col}: the file has no column {show_id(col)}")
        elif target in df.columns and target != col and target not in dict(mapping).values():
            problems.append(f"{opt} {target}={col}: the file already has a column {show_id(target)}")
        elif col in rename and rename[col] != target:  # one column, two targets: refuse, never pick one
            problems.append(f"{opt}: column {show_id(col)} is mapped twice ({show_id(rename[col])}, "
                            f"{show_id(target)}); map each column once")
        elif target in rename.values() and rename.get(col) != target:
            problems.append(f"{opt}: {show_id(target)} is given two columns; map it once")
        else:
            rename[col] = target
    if problems:
        raise LogFormatError(name, problems)
    out = df.rename(columns=rename)
    out.attrs = dict(df.attrs)
    out.attrs["notes"] = list(df.attrs.get("notes", [])) + [
        "columns mapped: " + ", ".join(f"{show_id(c)} as {show_id(t)}" for c, t in rename.items() if c != t)]
    return out


def read_forecasts_table(source, name: str | None, limits: Limits, read=None):
    """A sidecar forecasts table (``trajectory_id, step, conf_*/raw_*/unc_*``) as a raw frame."""
    raw, name = read_source(source, name, limits, read)
    fmt = format_of(name, "a forecasts table")
    return read_table(raw, name, fmt, limits.max_rows, limits.max_cells, limits.max_bytes,
                      max_nodes=limits.max_json_nodes), name


def guarded(reader, name: str, kind: str, *args, **kwargs):
    """Run a harness reader; a field of an unexpected type deep in a damaged or hostile file
    becomes a clear LogFormatError (never a traceback or "unexpected failure")."""
    try:
        return reader(*args, **kwargs)
    except (LogFormatError, OSError, MemoryError):
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError, RecursionError) as exc:
        raise LogFormatError(name, [f"the file has the structure of a {kind} log, but a field holds a value "
                                    f"of an unexpected type ({type(exc).__name__}); it may be damaged"]) from None


def _tau2_files(files: list, name: str | None, options: ReadOptions, limits: Limits):
    """A tau2-bench folder layout given as several files (e.g. uploaded together)."""
    files = [(bytes(b), str(n)) for b, n in files]
    if len(files) == 1:
        raise ValueError("pass a single file as bytes with a name, not as a list")
    index = [f for f in files if f[1].rsplit("/", 1)[-1] == "results.json"]
    if len(index) != 1:
        raise LogFormatError(name or f"{len(files)} files", [
            f"{len(files)} files were given, and several files are read together only as a tau2-bench folder "
            f"layout: results.json with its simulation files ({len(index) or 'none'} of them named "
            "results.json). For one table or harness log, give that file alone"])
    label = name or "tau2-bench results"
    total = sum(len(b) for b, _ in files)
    if total > limits.max_bytes:
        raise LogFormatError(label, [f"the files are larger together than the "
                                     f"{limits.max_bytes // 2**20:,} MB this installation reads"])
    parts = [(n.rsplit("/", 1)[-1], b) for b, n in files if n != index[0][1]]
    frame, reading = read_tau2_parts(index[0][0], parts, options, limits, label)
    return frame, reading, label


def _read_dataset(source, options: ReadOptions, limits: Limits, read, roots, sample=None):
    """A dataset's files read into one raw frame; rows are located as "FILE row N". Above the
    row limit, with ``sample=(n_runs, seed)``, a random sample of its runs (reading["sample"])."""
    ds = open_dataset(source, roots)
    label = ds.label
    too_big = ds.n_bytes > limits.max_bytes if ds.n_rows is None else ds.n_rows > limits.max_rows
    if sample and too_big:
        from tpsviz.io.dataset.sample import sample_runs  # (DuckDB, imported only when a dataset is sampled)

        frame, info = sample_runs(ds, sample[0], sample[1], limits.max_rows, options.mapping)
        frame.attrs["notes"] = list(ds.notes)
        unsampled = (ds.n_rows or 0) - info["rows_total"]
        if unsampled > 0:  # rows without an id (or one stored as bytes that are not UTF-8) form no run
            frame.attrs["notes"].append(f"{unsampled:,} of {ds.n_rows:,} step rows have no trajectory id (or one "
                                        "that is not text) and belong to no run, so none of them can be "
                                        "sampled; scoring all runs refuses the dataset until they have one.")
        frame = apply_mapping(frame, options.mapping, label)
        return frame, {"format": ds.fmt, "dataset": {"files": ds.n_files, "skipped": ds.skipped,
                                                     "bytes": ds.n_bytes},
                       "sample": info, "options": options.describe()}, label
    if ds.n_rows is not None and ds.n_rows > limits.max_rows:
        raise LogFormatError(label, [f"{ds.n_rows:,} rows in {ds.n_files} files, more than the {limits.max_rows:,} "
                                     "read into memory (TPSVIZ_MAX_ROWS); score it out of core with "
                                     f"{setting('out_of_core')}"])
    ids = [col for target, col in options.mapping if target == "trajectory_id"]
    frames, rows, notes = [], 0, list(ds.notes)
    said = separator_note(SEPARATORS.get(ds.delimiter, ""))  # each file's, said once for all by ds.notes
    for f in ds.files:
        rel = ds.file_label(f)
        raw, _ = read_source(f, rel, limits, read)
        part = read_table(raw, rel, ds.fmt, limits.max_rows - rows, limits.max_cells, limits.max_bytes,
                          text_columns=ids, max_nodes=limits.max_json_nodes)
        del raw
        _spell_ids(part, ids)
        rows += len(part)
        prefix = part.attrs.get("where_prefix", "row")
        part["_where"] = [f"{show_id(rel, 60)} {prefix} {n}" for n in part["_where"]]
        # a file's own notes (e.g. nested columns left out), each said once for all the files
        notes += [n for n in part.attrs.get("notes", []) if n not in notes and n != said]
        frames.append(part)
    frame = pd.concat(frames, ignore_index=True)
    frame.attrs["notes"] = notes
    frame = apply_mapping(frame, options.mapping, label)
    reading = {"format": ds.fmt, "dataset": {"files": ds.n_files, "skipped": ds.skipped, "bytes": ds.n_bytes},
               "options": options.describe()}
    return frame, reading, label


def _spell_ids(part, mapped: list) -> None:
    """A file's ids stored as booleans or timestamps, as text spelled by their own type before the
    files are joined (pandas would make true 1 beside integers, and spell a timestamp among text
    by its str), as the out-of-core engine spells them per file (docs/formats.md, "Trajectory ids")."""
    col = next((c for c in part.columns if c in mapped or (not mapped and canonical_name(c) == "trajectory_id")), None)
    if col is not None and (pd.api.types.is_bool_dtype(part[col]) or pd.api.types.is_datetime64_any_dtype(part[col])):
        part[col] = id_text(part[col]).astype(object).where(part[col].notna(), None)


def load(source, name: str | None = None, fmt: str | None = None, limits: Limits | None = None,
         options: ReadOptions | None = None, forecasts=None, read=None, roots=None,
         sample: tuple[int, int] | None = None, *, format: str | None = None, run_by: str | None = None,
         step_spans=None, outcome: str | None = None, outcomes=None, censor_when=None) -> TrajectoryData:
    """Read and validate a trajectory log of any supported format.

    Parameters
    ----------
    source : str, PathLike, bytes, binary file-like, list of (bytes, name), DataFrame or pyarrow Table
        The log. A DataFrame or Table is in the long format (``options.mapping`` renames other
        columns) and is never modified. A path is opened read-only (a regular file of at most ``limits.max_bytes``,
        a tau2-bench results folder, or a dataset: another folder or a glob pattern of
        Parquet/CSV/TSV files with the same columns, :func:`tpsviz.io.dataset.open_dataset`);
        bytes / file objects need ``name``; a list of (bytes, name) is a tau2-bench folder's
        files (``results.json`` and the simulations).
    name : str, optional
        File name used for the format (by extension) and in messages.
    fmt : str, optional
        Force a format: ``csv``, ``tsv``, ``parquet``, ``jsonl``, ``tau2``, ``tau-bench``,
        ``inspect``, ``otlp``, ``openinference`` or ``langfuse`` (default: detected from the
        content). ``format=`` is the same.
    limits : tpsviz.io.files.Limits, optional
        Largest file and number of rows read (default: from ``TPSVIZ_MAX_FILE_MB`` and
        ``TPSVIZ_MAX_ROWS``).
    options : tpsviz.io.harness.runs.ReadOptions, optional
        Success threshold, treatment of termination reasons, scorer, forecast fields, column
        mapping and percent columns (docs/harness.md).
    forecasts : str, PathLike or (bytes, name), optional
        A sidecar table ``trajectory_id, step, conf_*/raw_*/unc_*`` joined on (trajectory_id,
        step).
    read : callable, optional
        ``read(path, max_bytes, label) -> bytes`` for every file read from a path (default
        :func:`tpsviz.io.files.read_file`).
    roots : tpsviz.io.files.DataRoots, optional
        For a dataset on a shared server: its folder, pattern and files must lie under these.
    sample : (int, int), optional
        ``(n_runs, seed)``: a dataset with more rows than ``limits.max_rows`` (CSV files, whose
        rows are not counted ahead: more bytes than ``limits.max_bytes``) is read as a seeded random sample of that many whole
        runs (:func:`tpsviz.io.dataset.sample.sample_runs`) instead of being refused;
        ``reading["sample"]`` then says how many runs and rows of how many.
    run_by, step_spans, outcome, censor_when : optional
        Trace files (docs/traces.md): the attribute grouping traces into runs; the rules naming
        the step spans (``"name=chat*"``, ``"ATTRIBUTE=VALUE"``); the score or attribute holding the
        outcome; ``"ATTRIBUTE=VALUE"`` marking a run without an outcome as censored. They set
        ``options.traces`` (:class:`tpsviz.io.traces.options.TraceOptions`).
    outcomes : str, PathLike or (bytes, name), optional
        Trace files: a table ``trajectory_id, outcome[, censored]`` giving the runs' outcomes.

    Returns
    -------
    TrajectoryData
        ``reading`` records how the file was read (format, treatment table with counts, what
        was dropped, forecast sources).

    Raises
    ------
    LogFormatError
        For every defect, naming the file, row or run and column or field.
    tpsviz.io.files.FileRefused
        (an ``OSError``) for a path that is missing, not a regular file or too large.
    """
    limits = limits or limits_from_env()
    options = _with_trace_options(options or ReadOptions(), fmt or format, run_by, step_spans, outcome, censor_when)
    table = read_outcomes_table(outcomes, limits, read) if outcomes is not None else None
    frame, reading, name = _read_frame(source, name, options, limits, read, roots, sample, table)
    if forecasts is not None:
        frame, reading = _join_forecasts(frame, reading, forecasts, limits, read)
    if not any(str(c).startswith(("conf_", "raw_", "unc_")) for c in frame.columns):
        # a log without any forecast loads with zero predictors: the references give it a yardstick
        # (tpsviz.forecasts.references; docs/forecasts.md)
        reading = {**reading, "notes": list(reading.get("notes", [])) + [no_forecast_note(reading["format"])]}
    notes = list(reading.get("notes", []))
    frame.attrs["notes"] = notes + list(frame.attrs.get("notes", []))
    try:
        data = from_frame(frame, source=name, percent=options.percent)
    except LogFormatError as e:
        raise _named_as_given(e, options.mapping) from None
    data.reading = reading
    return data


def no_forecast_note(fmt: str) -> str:
    """The note of a log that holds no per-step forecast: where one comes from.

    Parameters
    ----------
    fmt : str
        The log's format (``tau-bench``, ``csv`` …).

    Returns
    -------
    str
    """
    return text(f"this {fmt} log holds no per-step forecast, so only reference forecasters computed from its "
                f"outcomes can be scored; a forecast comes from a numeric field of the agent's messages "
                f"({setting('conf', 'verbal=metadata.confidence')}), a table trajectory_id, step, conf_<name> "
                f"({setting('forecasts')}), or a column conf_<name> of a table; token log-probabilities, when the log "
                "has them, are used as raw signals automatically (docs/forecasts.md)")


def _with_trace_options(options: ReadOptions, fmt, run_by, step_spans, outcome, censor_when) -> ReadOptions:
    """``options`` with the format and the trace options given to :func:`load` as keywords."""
    if fmt and fmt != "auto":
        options = replace(options, fmt=fmt)
    given = {k: v for k, v in (("run_by", run_by), ("outcome", outcome),
                               ("step_spans", parse_rules(step_spans, "step_spans") if step_spans else None),
                               ("censor_when", parse_rules(censor_when, "censor_when") if censor_when else None))
             if v is not None}
    return replace(options, traces=replace(options.traces, **given)) if given else options


def read_outcomes_table(source, limits: Limits, read=None):
    """An outcomes table (``trajectory_id, outcome[, censored]``) as read, with its name; or a Phoenix
    evaluations table (span or trace ids with a label or score, docs/traces.md) read as the
    evaluations' scores (a :class:`~tpsviz.io.traces.spans.TraceFile`), with its name."""
    raw, name = read_source(source, None, limits, read)
    fmt = format_of(name, "an outcomes table")
    if is_evaluations_table(table_columns(raw, name, fmt)):  # (Phoenix saves its ids as the index)
        return read_openinference_evaluations(raw, name, max_nodes=limits.max_json_nodes, max_spans=limits.max_rows,
                                              max_bytes=limits.max_bytes), name
    return read_table(raw, name, fmt, limits.max_rows, limits.max_cells, limits.max_bytes,
                      text_columns=["trajectory_id"], max_nodes=limits.max_json_nodes), name


def _refuse_outcomes(table_name: str, kind: str) -> None:
    raise LogFormatError(table_name, [f"an outcomes table ({setting('outcomes')}) applies to trace files "
                                      f"(OTLP, OpenInference, Langfuse), not to a {kind} log"])


def _read_frame(source, name: str | None, options: ReadOptions, limits: Limits, read, roots, sample,
                outcomes=None):
    """The raw long frame of any source :func:`load` takes, how it was read, and its name."""
    kind = options.fmt if options.fmt not in (None, "auto") else None
    if is_frame(source):
        if outcomes is not None:
            _refuse_outcomes(outcomes[1], "DataFrame")
        return _frame_given(source, name, options)
    several = isinstance(source, list) or is_dataset_spec(source) or (
        isinstance(source, (str, os.PathLike)) and Path(source).is_dir())
    if outcomes is not None and (several or kind not in (None,) + TRACE_FORMATS):
        _refuse_outcomes(outcomes[1], kind or "folder or dataset")
    if is_dataset_spec(source) and kind in (None, "csv", "tsv", "parquet"):
        return _read_dataset(source, options, limits, read, roots, sample)
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        name = name or Path(source).name
        if kind not in (None, "tau2") or not (Path(source) / "results.json").is_file():
            raise LogFormatError(name, ["is a folder; the only folder tpsviz reads is a tau2-bench "
                                        "results folder (results.json with simulations/)"])
        frame, reading = guarded(read_tau2_dir, name, "tau2", Path(source), options, limits, label=name,
                                  read=read)
        return frame, reading, name
    if isinstance(source, list):
        return guarded(_tau2_files, name or "tau2-bench results", "tau2", source, name, options, limits)
    raw, name = read_source(source, name, limits, read)
    parsed = None
    if kind is None:
        kind, parsed = detect_format(raw, name, limits.max_json_nodes)
    if outcomes is not None and kind not in TRACE_FORMATS:
        _refuse_outcomes(outcomes[1], kind)
    if kind not in READERS:
        raise LogFormatError(name, [f"unknown format {kind!r}"])
    frame, reading = READERS[kind](raw, name, kind, options, limits, parsed, outcomes)
    return frame, reading, name


def _table_reader(raw, name, kind, options, limits, parsed, outcomes):
    return _read_table_log(raw, name, kind, options, limits)


def _harness_reader(raw, name, kind, options, limits, parsed, outcomes):
    return guarded(read_harness, name, kind, raw, name, kind, options, limits, parsed)


def _trace_reader(raw, name, kind, options, limits, parsed, outcomes):
    return guarded(read_traces, name, kind, raw, name, kind, options, limits, parsed, outcomes)


#: the one reader registry: format → ``reader(raw, name, format, options, limits, parsed, outcomes)``
#: returning (long frame, reading record). A new format is a reader here and a rule in
#: :func:`tpsviz.io.harness.detect_format` (docs/architecture.md, "Where a new thing goes").
READERS = {**{f: _table_reader for f in TABLE_FORMATS},
           **{f: _harness_reader for f in (*HARNESS_FORMATS, "tau2-index")},
           **{f: _trace_reader for f in TRACE_FORMATS}}


def is_frame(source) -> bool:
    """Whether ``source`` is a table already in memory: a pandas DataFrame or a pyarrow Table (told
    by its type's module, so pyarrow is not imported for the question)."""
    return isinstance(source, pd.DataFrame) or (
        type(source).__module__.startswith("pyarrow") and hasattr(source, "to_pandas"))


def _frame_given(source, name: str | None, options: ReadOptions):
    """A DataFrame or pyarrow Table in the long format (with ``options.mapping`` for other column
    names) as a raw frame; the caller's table is never modified (a shallow copy, copy-on-write)."""
    name = str(name or "<DataFrame>")
    df = source if isinstance(source, pd.DataFrame) else source.to_pandas()
    df = df.copy(deep=False)
    df.attrs = {}
    df.columns = [str(c) for c in df.columns]
    frame = _note_unused(apply_mapping(df, options.mapping, name), options, "in-memory")
    return frame, {"format": "dataframe", "options": options.describe()}, name


def _read_table_log(raw: bytes, name: str, kind: str, options: ReadOptions, limits: Limits):
    """A table file's raw frame with the column mapping applied, and a note naming the harness
    options given that a table does not use."""
    ids = [col for target, col in options.mapping if target == "trajectory_id"]
    frame = apply_mapping(read_table(raw, name, kind, limits.max_rows, limits.max_cells, limits.max_bytes,
                                     text_columns=ids, max_nodes=limits.max_json_nodes), options.mapping, name)
    return _note_unused(frame, options, kind.upper()), {"format": kind, "options": options.describe()}


def _note_unused(frame, options: ReadOptions, what: str):
    """``frame`` with a note naming the harness options given that a table does not use: never let
    a user believe one was applied."""
    unused = [setting(name) for name, given in (("treat", options.treat), ("conf", options.conf),
                                                ("scorer", options.scorer),
                                                ("success_threshold", options.success_threshold is not None))
              if given]
    if unused:
        frame.attrs["notes"] = list(frame.attrs.get("notes", [])) + [text(
            f"{', '.join(unused)} appl{'ies' if len(unused) == 1 else 'y'} to harness logs only "
            f"(tau2-bench, tau-bench, Inspect AI): ignored for this {what} table.")]
    return frame


def _join_forecasts(frame, reading: dict, forecasts, limits: Limits, read):
    """The frame with a sidecar forecasts table joined on (trajectory_id, step), and the reading
    record naming the table as the source of its columns."""
    side, side_name = read_forecasts_table(forecasts, None, limits, read)
    frame, side_notes = join_sidecar(frame, side, side_name, reading.get("dropped_ids", ()))
    reading = {**reading, "forecasts": {**reading.get("forecasts", {}),
                                        **{c: f"table {side_name}" for c in side.columns
                                           if str(c).startswith(("conf_", "raw_", "unc_"))}}}
    frame.attrs["notes"] = list(frame.attrs.get("notes", [])) + side_notes
    return frame, reading


def _named_as_given(error: LogFormatError, mapping) -> LogFormatError:
    """``error`` with each mapped column also named as the file names it: a problem with
    "column 'conf_p'" of ``--map conf_p=p`` says "column 'conf_p' (the file's 'p')"."""
    renamed = [(show_id(target), show_id(col)) for target, col in mapping if str(target) != str(col)]
    if not renamed:
        return error
    problems = []
    for problem in error.problems:
        problem = getattr(problem, "template", problem)  # (a problem naming a setting keeps its marker)
        for target, col in renamed:
            problem = problem.replace(f"column {target}", f"column {target} (the file's {col})")
        problems.append(problem)
    return LogFormatError(error.source, problems)
