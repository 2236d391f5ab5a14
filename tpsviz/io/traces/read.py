"""Reading a trace file into the long format (docs/traces.md): the table of trace readers, the
outcomes table, and :func:`read_traces`, which :func:`tpsviz.load` calls for ``otlp``,
``openinference`` and ``langfuse``.

Every reader is called as ``reader(raw, name, limits, parsed)`` and returns a
:class:`tpsviz.io.traces.spans.TraceFile`; :func:`tpsviz.io.traces.mapping.trace_log` maps it onto
runs and :func:`tpsviz.io.harness.runs.runs_to_frame` writes the step rows, as for a harness log.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import canonical_name, show_id
from tpsviz.core.wording import setting
from tpsviz.io.files import Limits
from tpsviz.io.harness.runs import HarnessLog, ReadOptions, runs_to_frame
from tpsviz.io.traces.detect import TRACE_FORMATS
from tpsviz.io.traces.mapping import mapping_words, trace_log
from tpsviz.io.traces.langfuse import read_langfuse
from tpsviz.io.traces.openinference import add_evaluations, read_openinference
from tpsviz.io.traces.otlp import read_otlp
from tpsviz.io.traces.spans import TraceFile

__all__ = ["TRACE_READERS", "TRACE_FORMATS", "read_traces", "read_trace_log", "trace_reader", "outcomes_from_frame"]

def _openinference(raw: bytes, name: str, limits: Limits, parsed=None) -> TraceFile:
    """:func:`read_openinference` under the installation's limits (it parses the file itself)."""
    return read_openinference(raw, name, max_nodes=limits.max_json_nodes, max_spans=limits.max_rows,
                              max_bytes=limits.max_bytes)


def _langfuse(raw: bytes, name: str, limits: Limits, parsed=None) -> TraceFile:
    """:func:`read_langfuse` under the installation's limits (it parses the file itself)."""
    return read_langfuse(raw, name, max_nodes=limits.max_json_nodes, max_spans=limits.max_rows)


#: format -> reader(raw: bytes, name: str, limits: Limits, parsed=None) -> TraceFile
TRACE_READERS = {"otlp": read_otlp, "openinference": _openinference, "langfuse": _langfuse}


def trace_reader(fmt: str, name: str):
    """The reader of a trace format.

    Raises
    ------
    LogFormatError
        For a trace format whose reader this version does not have.
    """
    reader = TRACE_READERS.get(fmt)
    if reader is None:
        raise LogFormatError(name, [f"is read as a {fmt} trace file, but this version of tpsviz has no "
                                    f"{fmt} reader yet (it reads {', '.join(sorted(TRACE_READERS))})"])
    return reader


def read_traces(raw: bytes, name: str, fmt: str, options: ReadOptions, limits: Limits, parsed=None,
                outcomes=None) -> tuple[pd.DataFrame, dict]:
    """(long frame, reading record) of a trace file.

    Parameters
    ----------
    raw : bytes
    name : str
        File name for messages.
    fmt : str
        One of :data:`TRACE_FORMATS`.
    options : ReadOptions
        ``options.traces`` sets the mapping; ``conf``, ``treat``, ``success_threshold`` apply as
        for a harness log.
    limits : Limits
    parsed : object, optional
        The JSON already parsed by format detection.
    outcomes : (DataFrame or TraceFile, str), optional
        The outcomes table as read, with its name (:func:`outcomes_from_frame` checks it); or a
        Phoenix evaluations table read as scores, attached to the spans (its only evaluation is
        the outcome when ``options`` names none).

    Returns
    -------
    frame : DataFrame
    reading : dict
        The harness readers' record, with ``mapping`` (the mapping in words) and ``traces``
        (spans, traces, runs read).
    """
    log, options, table_name, spans = read_trace_log(raw, name, fmt, options, limits, parsed, outcomes)
    frame, reading = runs_to_frame(log, options, name, limits.max_rows)
    words = mapping_words(options, table_name)
    reading["forecasts"] = {col: src.replace("message field ", "step-span attribute ", 1)
                            for col, src in reading["forecasts"].items()}
    reading["mapping"] = words
    reading["traces"] = {"spans": spans[0], "traces": spans[1], "runs": len(log.runs)}
    reading["notes"] = ["mapping: " + "; ".join(f"{k}: {v}" for k, v in words.items())] + reading["notes"]
    return frame, reading


def read_trace_log(raw: bytes, name: str, fmt: str, options: ReadOptions, limits: Limits, parsed=None,
                   outcomes=None) -> tuple[HarnessLog, ReadOptions, str | None, tuple]:
    """The runs of a trace file (the shared run model, before the treatment table): what
    :func:`read_traces` writes as step rows, and what the replay reads the transcripts of.

    Parameters
    ----------
    raw, name, fmt, options, limits, parsed, outcomes
        As for :func:`read_traces`.

    Returns
    -------
    log : HarnessLog
    options : ReadOptions
        ``options``, with the outcome named by an evaluations table's only evaluation.
    table_name : str or None
        The outcomes table's name.
    counts : (int, int)
        Spans and traces read.

    Raises
    ------
    LogFormatError
        A file the reader refuses, or one read with no outcome named.
    """
    tf = trace_reader(fmt, name)(raw, name, limits, parsed)
    if outcomes is not None and isinstance(outcomes[0], TraceFile):  # Phoenix evaluations: scores
        tf, options = _with_evaluations(tf, outcomes[0], outcomes[1], options)
        outcomes = None
    table, table_name = (outcomes_from_frame(*outcomes) if outcomes is not None else (None, None))
    if not options.traces.outcome and table is None and not options.treat:
        raise LogFormatError(name, [
            f"a trace file names no outcome by itself: name the score or attribute that holds it "
            f"({setting('outcome', 'NAME')}), or give a table trajectory_id, outcome[, censored] "
            f"({setting('outcomes')}); runs that ended on a limit are censored with {setting('censor_when')}"])
    log = trace_log(tf, options, table, table_name)
    return log, options, table_name, (len(tf.spans), len({s.trace_id for s in tf.spans}))


def _with_evaluations(tf: TraceFile, evaluations: TraceFile, name: str, options: ReadOptions):
    """The spans with a Phoenix evaluations table's scores attached; without a named outcome, the
    table's only evaluation is the outcome (said in a note)."""
    tf = add_evaluations(tf, evaluations)
    names = sorted({sc.name for sc in evaluations.scores})
    if not options.traces.outcome and len(names) == 1:
        options = replace(options, traces=replace(options.traces, outcome=names[0]))
        tf.notes.append(f"outcome: the evaluation {show_id(names[0], 60)} of {show_id(name, 60)}, its only one")
    elif not options.traces.outcome and names:
        raise LogFormatError(name, [f"holds {len(names)} evaluations ("
                                    + ", ".join(show_id(n, 40) for n in names[:10])
                                    + f"); name the one that is the outcome ({setting('outcome', 'NAME')})"])
    return tf, options


def outcomes_from_frame(frame: pd.DataFrame, name: str) -> tuple[dict, str]:
    """An outcomes table ``trajectory_id, outcome[, censored]`` as run id -> (outcome, censored).

    Parameters
    ----------
    frame : DataFrame
        The table as :func:`tpsviz.io.tables.read_table` read it.
    name : str
        Its name, for messages.

    Returns
    -------
    table : dict
        Run id -> (1.0/0.0 or None, censored).
    name : str

    Raises
    ------
    LogFormatError
        Missing columns, an outcome other than 0/1 or empty (empty and not censored: the
        table gives that run no outcome), a censored
        value that is not true/false, a run listed twice; rows named by their line.
    """
    frame = frame.rename(columns={c: canonical_name(c) for c in frame.columns})
    missing = [c for c in ("trajectory_id", "outcome") if c not in frame.columns]
    if missing:
        raise LogFormatError(name, [f"an outcomes table needs columns trajectory_id and outcome[, censored]; "
                                    f"missing: {', '.join(missing)}"])
    where = frame["_where"].tolist() if "_where" in frame else list(range(2, len(frame) + 2))
    prefix = frame.attrs.get("where_prefix", "line")
    ids = frame["trajectory_id"].astype(str).str.strip().tolist()
    outcome = pd.to_numeric(frame["outcome"], errors="coerce").to_numpy(dtype=float)
    censored = _flags(frame["censored"]) if "censored" in frame else np.isnan(outcome)
    problems, out = [], {}
    for i, (tid, y, c) in enumerate(zip(ids, outcome, censored)):
        if c is None:
            problems.append(f"{prefix} {where[i]}: column 'censored' must be true/false")
        elif not c and not (y == 0.0 or y == 1.0 or math.isnan(y)):
            problems.append(f"{prefix} {where[i]}: column 'outcome' must be 0 or 1, or empty")
        elif tid in out:
            problems.append(f"{prefix} {where[i]}: run {show_id(tid)} is listed twice")
        else:
            out[tid] = (None if c or math.isnan(y) else float(y), bool(c))
        if len(problems) >= 5:
            break
    if problems:
        raise LogFormatError(name, problems)
    return out, name


def _flags(col: pd.Series) -> list:
    """A censored column as True/False, None where unreadable (empty is False)."""
    words = {"true": True, "1": True, "1.0": True, "yes": True, "false": False, "0": False, "0.0": False,
             "no": False, "": False, "nan": False, "none": False}
    return [v if isinstance(v, bool) else words.get(str(v).strip().lower()) for v in col.tolist()]
