"""What every harness reader produces, and how runs become a long-format log (docs/harness.md).

A reader turns a harness file into :class:`Run` objects: one agent run with its termination
*reason*, the outcome the harness recorded (if it judged one), metadata, and its agent steps
(the assistant messages, in order; step t is the t-th). :func:`runs_to_frame` then applies the
**treatment table** — for each reason: ``outcome`` (use the recorded outcome), ``censored``
(outcome unknown: the run was stopped by a limit), ``failure`` (outcome 0) or ``dropped``
(left out, and counted) — takes the per-step forecasts from the messages
(:mod:`tpsviz.io.harness.forecasts`) and writes one row per (run, step).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tpsviz.core.errors import LogFormatError, SettingError
from tpsviz.core.schema import MAX_ID_CHARS, MAX_META_CHARS, show_id
from tpsviz.core.wording import setting
from tpsviz.io.harness.forecasts import logprob_signals, message_value
from tpsviz.io.traces.options import TraceOptions

__all__ = ["Run", "HarnessLog", "FoundForecast", "ReadOptions", "TREATMENTS", "runs_to_frame", "parse_treat",
           "parse_conf", "parse_mapping", "is_key", "is_number", "DEFAULT_SUCCESS_THRESHOLD"]

TREATMENTS = ("outcome", "censored", "failure", "dropped")
DEFAULT_SUCCESS_THRESHOLD = 1.0 - 1e-6   # tau2-bench's own rule: |reward − 1| ≤ 1e-6


@dataclass
class Run:
    """One agent run read from a harness log.

    Attributes
    ----------
    trajectory_id : str
    reason : str
        Why the run ended, as the harness says it (``user_stop``, ``max_steps``,
        ``message_limit``, ``error`` …); the treatment table maps it to a treatment.
    outcome : float or None
        1/0 when the harness judged the run (after the success threshold), else None.
    steps : list of dict
        The agent's (assistant) messages in order.
    logprobs : list
        For each step, its token log-probabilities (list of dicts with ``logprob`` and
        optionally ``top_logprobs``) or None.
    metadata : dict
        Run-level metadata (task, trial, model, domain, termination reason, …).
    where : str
        How to locate the run in the file for messages ("simulation 3").
    messages : list or None
        Every message of the run in order (the agent's, the user's, tool results), kept only
        when :attr:`ReadOptions.transcripts` asks for them (the replay's transcripts); ``steps``
        are the assistant messages of this list, the same objects.
    """

    trajectory_id: str
    reason: str
    outcome: float | None
    steps: list
    logprobs: list
    metadata: dict
    where: str
    messages: list | None = None


@dataclass(frozen=True)
class FoundForecast:
    """A forecast field of the agent's messages that a reader found by itself (no option named
    it), e.g. the confidence elicited during an Inspect run (docs/forecasts.md §2).

    Attributes
    ----------
    name : str
        The predictor's name (``elicited`` → column ``conf_elicited``).
    path : str
        The value's dotted path in a message (``metadata.tpsviz_confidence``).
    problem_path : str
        Where a message without a value says why (``metadata.tpsviz_confidence_problem``).
    source : str
        Where the values come from, in words (the reading record's ``forecasts``).
    """

    name: str
    path: str
    problem_path: str
    source: str


@dataclass
class HarnessLog:
    """The runs of one harness file, with the reader's defaults and the forecast fields it found;
    ``task_column`` names the metadata that identifies the task across trials or epochs
    (``reading["task_column"]``: the references' ``ref:task``, docs/forecasts.md)."""

    format: str
    runs: list
    default_treatment: dict
    notes: list = field(default_factory=list)
    reason_help: dict = field(default_factory=dict)
    found: list = field(default_factory=list)
    task_column: str | None = None


@dataclass(frozen=True)
class ReadOptions:
    """How a log is read (hashable: part of the dashboard's cache key).

    Attributes
    ----------
    fmt : str or None
        Force a format (``csv``, ``tsv``, ``parquet``, ``jsonl``, ``tau2``, ``tau-bench``,
        ``inspect``, ``otlp``, ``openinference``, ``langfuse``); None detects it from the content.
    success_threshold : float or None
        A recorded reward/score counts as success when ≥ this (default 1 − 1e-6).
    treat : tuple of (reason, treatment)
        Overrides of the treatment table.
    scorer : str or None
        Inspect AI: the scorer whose value is the outcome (default: the first).
    conf : tuple of (name, field path)
        Per-step forecasts from fields of the agent's messages, e.g. ``("verbal",
        "metadata.confidence")``; a name with a ``raw_``/``unc_`` prefix is a raw signal.
    logprob_signals : bool
        Derive raw_mean_logprob, raw_min_logprob and unc_entropy from token log-probabilities
        where the log has them.
    mapping : tuple of (long-format name, column)
        Tables: columns of other names, e.g. ``("trajectory_id", "run")``.
    percent : tuple of str
        Tables and harness fields: predictors given in percent (0–100), divided by 100.
    transcripts : bool
        Harness logs: keep every run's whole message list (:attr:`Run.messages`) for the replay
        of transcripts (:mod:`tpsviz.io.harness.transcripts`); off for scoring.
    traces : TraceOptions
        Trace files (OTLP, OpenInference, Langfuse): runs, steps, outcome and censoring from
        spans (docs/traces.md).
    """

    fmt: str | None = None
    success_threshold: float | None = None
    treat: tuple = ()
    scorer: str | None = None
    conf: tuple = ()
    logprob_signals: bool = True
    mapping: tuple = ()
    percent: tuple = ()
    transcripts: bool = False
    traces: TraceOptions = TraceOptions()

    def __post_init__(self) -> None:
        if self.success_threshold is not None and not math.isfinite(float(self.success_threshold)):
            raise ValueError("the success threshold must be a finite number")

    @property
    def threshold(self) -> float:
        return DEFAULT_SUCCESS_THRESHOLD if self.success_threshold is None else float(self.success_threshold)

    def describe(self) -> dict:
        """The options as plain values (for JSON output and notes)."""
        return {"format": self.fmt or "auto", "success_threshold": self.threshold,
                "treat": dict(self.treat), "scorer": self.scorer, "conf": dict(self.conf),
                "mapping": dict(self.mapping), "percent": list(self.percent),
                **({"traces": self.traces.describe()} if self.traces != TraceOptions() else {})}


def parse_treat(items) -> tuple:
    """``["max_steps=failure", …]`` → ``(("max_steps", "failure"), …)`` with checks."""
    out = []
    for item in items or ():
        reason, sep, treatment = str(item).partition("=")
        reason, treatment = reason.strip(), treatment.strip().lower()
        if not sep or not reason:
            raise SettingError(f"{setting('treat')} {item!r}: write it as REASON=TREATMENT, e.g. max_steps=failure")
        if treatment not in TREATMENTS:
            raise SettingError(f"{setting('treat')} {item!r}: the treatment must be one of {', '.join(TREATMENTS)}")
        out.append((reason, treatment))
    return tuple(out)


def _pairs(items, problem) -> tuple:
    """Comma-separated ``A=B`` pairs of several option values; ``problem(part)`` is the message
    for a part that is not one."""
    out = []
    for item in items or ():
        for part in str(item).split(","):
            if not part.strip():
                continue
            a, sep, b = part.partition("=")
            if not sep or not a.strip() or not b.strip():
                raise SettingError(problem(part))
            out.append((a.strip(), b.strip()))
    return tuple(out)


def parse_mapping(items) -> tuple:
    """``["trajectory_id=run,step=turn", …]`` → ``(("trajectory_id", "run"), ("step", "turn"), …)``."""
    return _pairs(items, lambda part: f"{setting('map')} {part.strip()!r}: write it as TARGET=COLUMN, "
                                      "e.g. trajectory_id=run")


#: forecast fields read from a harness log at once (each becomes a column on every step row)
MAX_CONF = 32


def parse_conf(items) -> tuple:
    """``["verbal=metadata.confidence"]`` → ``(("verbal", "metadata.confidence"),)``; at most
    :data:`MAX_CONF` pairs."""
    out = _pairs(items, lambda part: f"{setting('conf')} {part!r}: write it as NAME=FIELD, e.g. verbal=metadata.confidence")
    if len(out) > MAX_CONF:
        raise SettingError(f"{setting('conf')} names {len(out)} fields; at most {MAX_CONF} are read at once")
    return out


def is_key(v) -> bool:
    """A JSON value usable as an id or trial: a text or a whole number (not a boolean)."""
    return isinstance(v, (str, int)) and not isinstance(v, bool)


def is_number(v) -> bool:
    """A JSON value usable as a reward: a finite number (not a boolean)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _column(name: str) -> str:
    return name if name.startswith(("conf_", "raw_", "unc_")) else f"conf_{name}"


def _as_number(v) -> float:
    if isinstance(v, bool) or v is None:
        return math.nan
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip().rstrip("%")) / (100.0 if v.strip().endswith("%") else 1.0)
        except ValueError:
            return math.nan
    return math.nan


class _Columns:
    """A long frame built column by column (one list per column): a dict per step row costs ~1 KB,
    so 5M rows built as dicts peaked at 6 GB (adversarial pass 4, F5). A column a run lacks is NaN
    on its rows, as a frame built from row dicts would have it."""

    def __init__(self):
        self.data: dict[str, list] = {}
        self.n = 0

    def extend(self, cols: dict, n: int) -> None:
        for k, v in cols.items():
            col = self.data.get(k)
            if col is None:
                col = self.data[k] = [np.nan] * self.n
            col.extend(v)
        self.n += n
        for col in self.data.values():
            if len(col) < self.n:
                col.extend([np.nan] * (self.n - len(col)))


def runs_to_frame(log: HarnessLog, options: ReadOptions, name: str, max_rows: int
                  ) -> tuple[pd.DataFrame, dict]:
    """The long frame of a harness log, and the record of how it was read.

    Returns
    -------
    frame : DataFrame
        One row per (kept run, agent step): ``trajectory_id``, ``step``, ``outcome``,
        ``censored``, metadata, forecast columns; ``_where`` locates rows for messages.
    reading : dict
        ``format``, ``treatment`` (rows: reason, treatment, runs, default), ``dropped``
        (reason -> runs), ``forecasts`` (column -> source), ``notes``.
    """
    notes = list(log.notes)
    table, counts, overrides = _treatment_table(log, options, notes)
    _check_runs(log, table, name, max_rows, notes)
    conf_cols = [(_column(n), p) for n, p in options.conf]
    found = _found_columns(log, conf_cols)
    rows = _step_rows(log, table, options, conf_cols + [(c, f.path) for c, f in found],
                      {c: f.problem_path for c, f in found})
    if rows.missing_outcome:
        ex = ", ".join(f"{m.where} ({show_id(m.trajectory_id)})" for m in rows.missing_outcome[:3])
        raise LogFormatError(name, [
            f"{len(rows.missing_outcome)} run(s) ended normally but carry no reward/score to take the "
            f"outcome from: {ex}; choose a treatment for their reason "
            f"({', '.join(show_id(r) for r in sorted({m.reason for m in rows.missing_outcome})[:5])})"])
    if rows.no_steps:
        notes.append(f"{rows.no_steps} run(s) have no agent message (nothing to score) and were left out")
    if not rows.columns.n:
        raise LogFormatError(name, ["no run is left to score: " + (
            "every run is dropped by its treatment (" + ", ".join(f"{show_id(k)}: {v}" for k, v in
                                                                  list(rows.dropped.items())[:5])
            + ")" if rows.dropped else "no run has an agent message")])
    frame = pd.DataFrame(rows.columns.data)
    sources = _forecast_sources(frame, conf_cols, rows.with_logprobs, notes)
    found_counts = {}
    for col, f in found:
        sources[col] = f.source
        found_counts[col] = _found_counts(rows.found_problems.get(col, Counter()), len(frame))
        notes += _found_notes(col, f, found_counts[col])
    kept = sum(v for k, v in counts.items() if table[k] != "dropped") - len(rows.missing_outcome) - rows.no_steps
    reading = {
        "format": log.format,
        "treatment": [{"reason": k, "treatment": table[k], "runs": counts.get(k, 0),
                       "default": k not in overrides,
                       "default_treatment": log.default_treatment.get(k, "dropped"),
                       "meaning": log.reason_help.get(k, "")}
                      for k in sorted(set(counts) | set(overrides))],
        "dropped": rows.dropped,
        "dropped_ids": rows.dropped_ids,
        "runs_read": len(log.runs),
        "runs_kept": kept,
        "forecasts": sources,
        "found_forecasts": found_counts,
        "task_column": log.task_column,
        "options": options.describe(),
        "notes": notes,
    }
    frame.attrs["where_prefix"] = "row"
    return frame, reading


def _treatment_table(log: HarnessLog, options: ReadOptions, notes: list[str]):
    """The treatment of every reason (the reader's defaults, ``dropped`` for a reason it does not
    know, then the user's overrides), the runs per reason and the overrides; notes on unknown
    reasons and on overrides no run uses."""
    table = dict(log.default_treatment)
    unknown = sorted({r.reason for r in log.runs} - set(table))
    for reason in unknown:  # a reason this reader does not know: leave the runs out, say so
        table[reason] = "dropped"
    overrides = dict(options.treat)
    for reason, treatment in overrides.items():
        table[reason] = treatment
    counts: dict[str, int] = {}
    for r in log.runs:
        counts[r.reason] = counts.get(r.reason, 0) + 1
    if unknown:
        notes.append("unknown termination reason(s) " + ", ".join(show_id(u) for u in unknown)
                     + ": those runs are dropped by default (choose a treatment to keep them)")
    unused = [r for r in overrides if r not in counts]
    if unused:
        notes.append("treatment given for reason(s) that no run has: " + ", ".join(show_id(u) for u in unused))
    return table, counts, overrides


def _check_runs(log: HarnessLog, table: dict, name: str, max_rows: int, notes: list[str]) -> None:
    """Refuse run ids that are not short names and more agent steps than ``max_rows``; cut
    metadata texts longer than :data:`MAX_META_CHARS` (in place, with a note)."""
    long_ids = [r for r in log.runs if len(r.trajectory_id) > MAX_ID_CHARS]
    if long_ids:  # an id is copied onto every step row of its run
        raise LogFormatError(name, [f"{len(long_ids)} run id(s) are longer than {MAX_ID_CHARS} characters "
                                    f"(first: {long_ids[0].where}); a run id is a short name"])
    cut = 0
    for r in log.runs:
        for k, v in list(r.metadata.items()):
            if isinstance(v, str) and len(v) > MAX_META_CHARS:
                r.metadata[k] = v[:MAX_META_CHARS] + "…"
                cut += 1
    if cut:
        notes.append(f"{cut} metadata text(s) longer than {MAX_META_CHARS} characters were cut")
    total_steps = sum(len(r.steps) for r in log.runs if table[r.reason] != "dropped")
    if total_steps > max_rows:
        raise LogFormatError(name, [f"the log has {total_steps:,} agent steps, more than the "
                                    f"{max_rows:,} this installation reads (TPSVIZ_MAX_ROWS)"])


@dataclass
class _StepRows:
    """The step rows of the kept runs, and what was left out on the way."""

    columns: _Columns = field(default_factory=_Columns)
    dropped: dict = field(default_factory=dict)        # reason -> runs dropped by their treatment
    dropped_ids: list = field(default_factory=list)    # runs dropped or without an agent message
    no_steps: int = 0                                  # runs without an agent message
    missing_outcome: list = field(default_factory=list)  # runs to score whose outcome was not recorded
    with_logprobs: bool = False                        # some step has token log-probabilities
    found_problems: dict = field(default_factory=dict)  # found column -> Counter of why values are missing


def _step_rows(log: HarnessLog, table: dict, options: ReadOptions, conf_cols: list,
               problem_paths: dict) -> _StepRows:
    """One row per agent step of every run its treatment keeps; for the found forecast columns
    (``problem_paths``: column -> where a message says why it has no value), why values are missing."""
    out = _StepRows()
    for r in log.runs:
        treatment = table[r.reason]
        if treatment == "dropped":
            out.dropped[r.reason] = out.dropped.get(r.reason, 0) + 1
            out.dropped_ids.append(r.trajectory_id)
            continue
        if not r.steps:
            out.no_steps += 1
            out.dropped_ids.append(r.trajectory_id)
            continue
        if treatment == "outcome":
            if r.outcome is None:
                out.missing_outcome.append(r)
                continue
            outcome, censored = float(r.outcome), False
        elif treatment == "failure":
            outcome, censored = 0.0, False
        else:
            outcome, censored = np.nan, True
        cols, with_lp = _run_columns(r, outcome, censored, options, conf_cols)
        out.with_logprobs |= with_lp
        for col, path in conf_cols:
            if col in problem_paths:
                _count_missing(out.found_problems.setdefault(col, Counter()), cols[col], r.steps,
                               path, problem_paths[col])
        out.columns.extend(cols, len(r.steps))
    return out


def _run_columns(r: Run, outcome: float, censored: bool, options: ReadOptions, conf_cols: list):
    """A kept run's step rows as columns, and whether a step had token log-probabilities."""
    signals = [logprob_signals(lp) if options.logprob_signals else None for lp in r.logprobs]
    n = len(r.steps)
    cols = {"trajectory_id": [r.trajectory_id] * n, "step": list(range(1, n + 1)),
            "outcome": [outcome] * n, "censored": [censored] * n}
    cols.update({k: [v] * n for k, v in r.metadata.items()})
    cols["_where"] = [f"{r.where}, agent message {t}" for t in range(1, n + 1)]
    for col, path in conf_cols:
        cols[col] = [_as_number(message_value(msg, path)) for msg in r.steps]
    with_lp = False
    for t, sig in enumerate(signals):
        if sig:
            with_lp = True
            for k, v in sig.items():
                cols.setdefault(k, [np.nan] * n)[t] = v
    return cols, with_lp


def _found_columns(log: HarnessLog, conf_cols: list) -> list:
    """(column, FoundForecast) of the fields the reader found that no ``--conf`` already reads
    (under the same column name or from the same path)."""
    names, paths = {c for c, _ in conf_cols}, {p for _, p in conf_cols}
    return [(_column(f.name), f) for f in log.found if _column(f.name) not in names and f.path not in paths]


_PROBLEM = re.compile(r"^[a-z][a-z ]{0,39}$")


def _count_missing(counter: Counter, values: list, steps: list, path: str, problem_path: str) -> None:
    """Count why each step without a value has none: the problem its message states (a short
    lower-case phrase, else ``other``), ``no number`` for a value that is not one, or ``not asked``
    when the message lacks the field."""
    parent, _, key = path.rpartition(".")
    for v, msg in zip(values, steps):
        if not math.isnan(v):
            continue
        holder = message_value(msg, parent) if parent else msg
        if not isinstance(holder, dict) or key not in holder:
            counter["not asked"] += 1
            continue
        problem = message_value(msg, problem_path)
        if holder[key] is not None:
            counter["not a number"] += 1
        elif isinstance(problem, str) and _PROBLEM.match(problem):
            counter[problem] += 1
        else:
            counter["other"] += 1


def _found_counts(counter: Counter, n_steps: int) -> dict:
    """The reading record's counts of a found column: steps, steps not asked, steps whose reply
    held no usable probability by problem (most frequent first)."""
    problems = sorted(((k, v) for k, v in counter.items() if k != "not asked"), key=lambda kv: (-kv[1], kv[0]))
    return {"steps": int(n_steps), "not_asked": int(counter.get("not asked", 0)),
            "no_value": int(sum(v for _, v in problems)), "problems": dict(problems)}


def _found_notes(col: str, found: FoundForecast, counts: dict) -> list[str]:
    """The notes of a found column: how many steps' replies held no usable probability, and why;
    how many steps were not asked."""
    notes, n = [], counts["steps"]
    if counts["no_value"]:
        why = ", ".join(f"{v} {k}" for k, v in counts["problems"].items())
        notes.append(f"{col}: {counts['no_value']} of {n} steps: the reply held no usable probability "
                     f"({why}); missing values, left out of its score")
    if counts["not_asked"]:
        notes.append(f"{col}: {counts['not_asked']} of {n} steps were not asked (their message has no "
                     f"{found.path})")
    return notes


def _forecast_sources(frame: pd.DataFrame, conf_cols: list, with_lp: bool, notes: list[str]) -> dict:
    """Where each forecast column came from; a note for a message field no message of a run has."""
    sources = {col: f"message field {path}" for col, path in conf_cols}
    if with_lp:
        for col, what in (("raw_mean_logprob", "mean token log-probability of the message"),
                          ("raw_min_logprob", "minimum token log-probability of the message"),
                          ("unc_entropy", "mean entropy of the top log-probabilities per token")):
            if col in frame:
                sources[col] = what
    for col, path in conf_cols:
        n_runs_without = int(frame.groupby("trajectory_id")[col].apply(lambda s: s.isna().all()).sum())
        if n_runs_without:
            notes.append(f"{col} (from {path}): {n_runs_without} of {frame['trajectory_id'].nunique()} "
                         "runs have no value on any agent message")
    return sources
