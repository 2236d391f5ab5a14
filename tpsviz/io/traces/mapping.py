"""One mapping of every trace source onto runs and steps (docs/traces.md).

A :class:`tpsviz.io.traces.spans.TraceFile` (OTLP, OpenInference, Langfuse) becomes a
:class:`tpsviz.io.harness.runs.HarnessLog`, the shared run model of the harness readers, so the
treatment table, the forecast fields, the token log-probabilities and the row caps apply unchanged:

- **run**: one per trace, or one per value of the ``run_by`` attribute (several traces);
- **step** t: the t-th step span of the run by start time — the reader's model calls, or the spans
  the ``step_spans`` rules name; tool spans are never steps, their results are the context of the
  next step (the replay's transcript);
- **outcome**: from the outcomes table, else from the score, evaluation or attribute ``outcome``
  names; a run without one is censored when ``censor_when`` matches it, else dropped (counted);
- **metadata**: ``model`` (``gen_ai.request.model``, ``gen_ai.response.model``,
  ``llm.model_name`` or ``model`` of the first step), ``start_time`` (the run's earliest span start,
  ISO 8601 UTC) and ``duration_s`` (its latest span end minus that start, where ends are recorded;
  :mod:`tpsviz.io.harness.times`); runs come in order of their start, and the monitoring orders them
  by ``start_time``.

The termination reasons of the treatment table: ``scored`` (outcome), ``censored`` (the outcomes
table says so), ``limit`` (``censor_when`` matched: censored), ``no outcome`` and ``unreadable
outcome`` (dropped).
"""

from __future__ import annotations

import fnmatch
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone

from tpsviz.core.schema import show_id
from tpsviz.io.harness.runs import HarnessLog, ReadOptions, Run
from tpsviz.io.traces.spans import Span, TraceFile

__all__ = ["trace_log", "outcome_value", "parent_notes", "mapping_words", "TRACE_TREATMENT", "MODEL_KEYS"]

TRACE_TREATMENT = {"scored": "outcome", "censored": "censored", "limit": "censored",
                   "no outcome": "dropped", "unreadable outcome": "dropped"}
_REASON_HELP = {
    "scored": "the run's outcome was read (outcome table, score, evaluation or attribute)",
    "censored": "the outcomes table marks the run censored",
    "limit": "no outcome, and the run matches censor_when (it ended on a limit)",
    "no outcome": "no outcome was found for the run",
    "unreadable outcome": "the outcome's value is not 0/1, true/false or a number",
}
#: attributes that name the model of a step, first found wins
MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name", "model")
_TRUE = {"true", "yes", "pass", "passed", "success", "succeeded", "correct", "c", "1"}
_FALSE = {"false", "no", "fail", "failed", "failure", "incorrect", "i", "0"}


def outcome_value(v, threshold: float) -> float | None:
    """A recorded outcome as 1/0: a boolean, 0/1 or a number (success iff ≥ ``threshold``), or a
    text of one of those (``true``/``false``, ``pass``/``fail``, ``"0.8"``); None otherwise.

    Parameters
    ----------
    v : object
    threshold : float

    Returns
    -------
    float or None
    """
    if isinstance(v, tuple) and len(v) == 1:
        v = v[0]
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE or s in _FALSE:
            return 1.0 if s in _TRUE else 0.0
        try:
            v = float(s)
        except ValueError:
            return None
    if isinstance(v, (int, float)) and math.isfinite(v):
        return 1.0 if v >= threshold else 0.0
    return None


def parent_notes(spans: list) -> list[str]:
    """Notes on parent links that do not form a tree: spans whose parent is not in their trace
    (read as roots), and loops (a span its own ancestor). Steps are ordered by start time, so
    neither changes the mapping; both are counted, never a failure."""
    ids = {(s.trace_id, s.span_id): s.parent_id for s in spans}
    unknown = sum(1 for s in spans if s.parent_id is not None and (s.trace_id, s.parent_id) not in ids)
    in_loop, state = set(), {}
    for key in ids:
        path, cur = [], key
        while cur is not None and cur in ids and cur not in state:
            state[cur] = "open"
            path.append(cur)
            parent = ids[cur]
            cur = (cur[0], parent) if parent is not None else None
        if cur is not None and state.get(cur) == "open":  # walked back into this path: a loop
            in_loop.update(path[path.index(cur):])
        for k in path:
            state[k] = "done"
    notes = []
    if unknown:
        notes.append(f"{unknown:,} span(s) name a parent span that is not in the file; read as roots")
    if in_loop:
        notes.append(f"{len(in_loop):,} span(s) are their own ancestors (their parent links form a loop); "
                     "steps are ordered by start time, so the loop changes nothing")
    return notes


def _matches(span: Span, rules: tuple) -> bool:
    for key, value in rules:
        if key == "name":
            if fnmatch.fnmatchcase(span.name, value):
                return True
            continue
        v = span.attributes.get(key)
        if isinstance(v, tuple):
            if value in (_as_text(x) for x in v):
                return True
        elif v is not None and _as_text(v) == value:
            return True
    return False


def _as_text(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _is_step(span: Span, rules: tuple) -> bool:
    if span.kind == "tool":
        return False
    return _matches(span, rules) if rules else span.kind == "model"


@dataclass
class _Index:
    """The trace file by trace: spans in start order, scores by name."""

    spans: dict = field(default_factory=dict)          # trace id -> [Span] by start
    trace_scores: dict = field(default_factory=dict)   # (trace id, name) -> [value]
    span_scores: dict = field(default_factory=dict)    # (trace id, name) -> [(start, value)]


def _index(tf: TraceFile) -> _Index:
    idx = _Index()
    for order, s in enumerate(tf.spans):
        idx.spans.setdefault(s.trace_id, []).append((s.start, order, s))
    for tid, items in idx.spans.items():
        items.sort(key=lambda x: (x[0], x[1]))
        idx.spans[tid] = [s for _, _, s in items]
    starts = {(s.trace_id, s.span_id): s.start for s in tf.spans}
    for sc in tf.scores:
        if sc.span_id is None:
            idx.trace_scores.setdefault((sc.trace_id, sc.name), []).append(sc.value)
        else:
            at = starts.get((sc.trace_id, sc.span_id), -math.inf)
            idx.span_scores.setdefault((sc.trace_id, sc.name), []).append((at, sc.value))
    return idx


def _run_keys(tf: TraceFile, idx: _Index, run_by: str | None, notes: list) -> dict:
    """Run key -> its trace ids, runs in order of their first start."""
    groups: dict = {}
    missing = several = 0
    for tid, spans in idx.spans.items():
        key = tid
        if run_by:
            values = [tf.trace_attributes.get(tid, {}).get(run_by)] + [s.attributes.get(run_by) for s in spans]
            values = [_as_text(v) for v in values if v is not None and not isinstance(v, tuple)]
            if values:
                key = values[0]
                several += len(set(values)) > 1
            else:
                missing += 1
        groups.setdefault(key, []).append(tid)
    if run_by and missing:
        notes.append(f"{missing:,} trace(s) have no attribute {show_id(run_by)}: each is a run of its own")
    if several:
        notes.append(f"{several:,} trace(s) hold several values of {show_id(run_by)}: the first by start time "
                     "groups them")
    first = {key: min(idx.spans[t][0].start for t in tids) for key, tids in groups.items()}
    return {key: sorted(groups[key], key=lambda t: idx.spans[t][0].start)
            for key in sorted(groups, key=lambda k: (first[k], k))}


def _recorded_outcome(tf: TraceFile, idx: _Index, tids: list, name: str):
    """The values of ``name`` for a run: its trace-level scores, else span-level scores, else trace
    attributes, else span attributes; the latest of the first kind found, and whether they differ."""
    kinds = [[v for t in tids for v in idx.trace_scores.get((t, name), [])],
             [v for _, v in sorted((x for t in tids for x in idx.span_scores.get((t, name), [])),
                                   key=lambda x: x[0])],
             [tf.trace_attributes.get(t, {}).get(name) for t in tids],
             [s.attributes.get(name) for t in tids for s in idx.spans[t]]]
    for values in kinds:
        values = [v for v in values if v is not None]
        if values:
            return values[-1], len({repr(v) for v in values}) > 1
    return None, False


def _censor(tf: TraceFile, idx: _Index, tids: list, rules: tuple) -> bool:
    for t in tids:
        attrs = tf.trace_attributes.get(t, {})
        probe = Span(t, "", None, "", 0.0, None, attrs)
        if rules and (_matches(probe, rules) or any(_matches(s, rules) for s in idx.spans[t])):
            return True
    return False


def _step_message(span: Span) -> dict:
    """A step span as the agent's message: its attributes (the forecast fields ``conf`` reads,
    by their dotted names) and its output's text and tool calls (the replay renders only those)."""
    texts, calls = [], []
    for m in span.output_messages:
        if m.get("content"):
            texts.append(str(m["content"]))
        calls += list(m.get("tool_calls") or [])
    msg = dict(span.attributes)
    msg.update({"span.name": span.name, "role": "assistant", "content": "\n".join(texts)})
    if calls:
        msg["tool_calls"] = calls
    return msg


def _context(inputs: list) -> list:
    """Input messages as context: an earlier agent message recorded in a model call's input is not
    one of the run's steps, so it is kept under another role."""
    return [{**m, "role": "assistant (context)"} if m.get("role") == "assistant" else m for m in inputs]


def _transcript(spans: list, steps: list, step_msgs: list) -> list:
    """The run's messages in order: for each step, what its model call was given that the
    transcript does not hold yet (a call given the whole history adds its new messages only), the
    results of the tool spans before it (unless that input holds tool results), and its output."""
    out, prev, pending = [], None, []
    at = {id(s): m for s, m in zip(steps, step_msgs)}
    for s in spans:
        if s.kind == "tool":
            pending += list(s.output_messages)
            continue
        if id(s) not in at:
            continue
        inputs = list(s.input_messages)
        grows = prev is not None and len(inputs) > len(prev) and \
            [m.get("role") for m in inputs[:len(prev)]] == [m.get("role") for m in prev]
        new = inputs[len(prev) + 1:] if grows else inputs
        if not any(m.get("role") == "tool" for m in new):
            out += pending
        out += _context(new)
        out.append(at[id(s)])
        prev, pending = inputs, []
    return out


def _metadata(steps: list, spans: list) -> dict:
    model = next((s.attributes[k] for s in steps for k in MODEL_KEYS
                  if isinstance(s.attributes.get(k), str) and s.attributes[k]), None)
    start = min(s.start for s in spans)
    stamp = datetime.fromtimestamp(start, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    ends = [s.end for s in spans if s.end is not None and math.isfinite(s.end)]
    out = {"start_time": stamp}
    if ends and max(ends) >= start:
        out["duration_s"] = max(ends) - start
    if model is not None:
        out["model"] = model
    return out


def mapping_words(options: ReadOptions, outcomes_table: str | None = None) -> dict:
    """The mapping in words, for the reader's notes and the JSON ``settings`` (``reading["mapping"]``).

    Parameters
    ----------
    options : ReadOptions
    outcomes_table : str, optional
        The outcomes table's name, when one is given.

    Returns
    -------
    dict
        ``run``, ``step``, ``outcome``, ``censored``, ``forecasts``, ``metadata``: one sentence each.
    """
    t = options.traces
    rules = ", ".join(f"{k}={v}" for k, v in t.step_spans)
    outcome = []
    if outcomes_table:
        outcome.append(f"the outcomes table {outcomes_table}")
    if t.outcome:
        outcome.append(f"the score, evaluation or attribute {t.outcome!r} (0/1, true/false, or success iff "
                       f">= {options.threshold:g})")
    return {
        "run": f"one run per value of the attribute {t.run_by!r} (traces without it: one run each)"
               if t.run_by else "one run per trace",
        "step": "the t-th " + (f"span matching {rules}" if rules else "model call (the reader's model spans)")
                + " of the run by start time; tool spans are context, never steps",
        "outcome": ", else ".join(outcome) if outcome else "none named: every run lacks an outcome",
        "censored": (f"a run without an outcome that has {' or '.join(f'{k}={v}' for k, v in t.censor_when)}"
                     if t.censor_when else "none by attribute") + "; other runs without an outcome are dropped",
        "forecasts": ("step-span attributes " + ", ".join(f"{n}={p}" for n, p in options.conf) if options.conf
                      else "no attribute named") + "; token log-probabilities where the spans hold them",
        "metadata": "model from " + " / ".join(MODEL_KEYS) + " of the first step; start_time = the run's earliest span start, "
                    "duration_s = its latest span end minus that start",
    }


def trace_log(tf: TraceFile, options: ReadOptions, outcomes: dict | None = None,
              outcomes_table: str | None = None) -> HarnessLog:
    """The runs of a trace file (the shared run model of the harness readers).

    Parameters
    ----------
    tf : TraceFile
        What a trace reader returned.
    options : ReadOptions
        ``options.traces`` (:class:`tpsviz.io.traces.options.TraceOptions`) sets the mapping;
        ``success_threshold`` reads numeric outcomes; ``transcripts`` keeps each run's messages.
    outcomes : dict, optional
        The outcomes table: run id -> (outcome 0/1 or None, censored).
    outcomes_table : str, optional
        Its name, for notes.

    Returns
    -------
    HarnessLog
        ``format`` is the trace source; reasons ``scored``, ``censored``, ``limit``, ``no outcome``,
        ``unreadable outcome`` (:data:`TRACE_TREATMENT`); metadata ``model``, ``start_time`` and
        ``duration_s``.
    """
    t = options.traces
    notes = list(tf.notes) + parent_notes(tf.spans)
    idx = _index(tf)
    groups = _run_keys(tf, idx, t.run_by, notes)
    runs, differ, tool_spans, skipped = [], 0, 0, Counter()
    outcomes = outcomes or {}
    for key, tids in groups.items():
        spans = sorted((s for tid in tids for s in idx.spans[tid]), key=lambda s: s.start)
        steps = [s for s in spans if _is_step(s, t.step_spans)]
        tool_spans += sum(s.kind == "tool" for s in spans)
        if t.step_spans:
            step_ids = {id(s) for s in steps}
            skipped["model"] += sum(s.kind == "model" and id(s) not in step_ids for s in spans)
        reason, outcome, several = _outcome_of(tf, idx, tids, key, options, outcomes)
        differ += several
        msgs = [_step_message(s) for s in steps]
        where = f"trace {key[:16]}" if len(tids) == 1 and key == tids[0] else f"run {show_id(key)} ({len(tids)} trace(s))"
        runs.append(Run(trajectory_id=key, reason=reason, outcome=outcome, steps=msgs,
                        logprobs=[list(s.logprobs) or None for s in steps], metadata=_metadata(steps, spans),
                        where=where, messages=_transcript(spans, steps, msgs) if options.transcripts else None))
    _mapping_notes(notes, runs, outcomes, differ, tool_spans, skipped, t.outcome)
    return HarnessLog(format=tf.source, runs=runs, default_treatment=dict(TRACE_TREATMENT), notes=notes,
                      reason_help=dict(_REASON_HELP))


def _outcome_of(tf: TraceFile, idx: _Index, tids: list, key: str, options: ReadOptions, outcomes: dict):
    """(reason, outcome, whether the recorded values differ) of one run."""
    if key in outcomes:
        outcome, censored = outcomes[key]
        if censored:
            return "censored", None, False
        if outcome is not None:
            return "scored", float(outcome), False
    t = options.traces
    if t.outcome:
        value, several = _recorded_outcome(tf, idx, tids, t.outcome)
        if value is not None:
            outcome = outcome_value(value, options.threshold)
            return ("scored", outcome, several) if outcome is not None else ("unreadable outcome", None, several)
    if _censor(tf, idx, tids, t.censor_when):
        return "limit", None, False
    return "no outcome", None, False


def _mapping_notes(notes: list, runs: list, outcomes: dict, differ: int, tool_spans: int, skipped: Counter,
                   outcome_name: str | None) -> None:
    n_steps = sum(len(r.steps) for r in runs)
    notes.append(f"{len(runs):,} run(s), {n_steps:,} step span(s); {tool_spans:,} tool span(s) kept as context")
    if skipped["model"]:
        notes.append(f"{skipped['model']:,} model-call span(s) do not match the step rule and are not steps")
    if outcomes:
        unmatched = len(set(outcomes) - {r.trajectory_id for r in runs})
        if unmatched:
            notes.append(f"{unmatched:,} run id(s) of the outcomes table match no run of the file")
    if differ:
        notes.append(f"{differ:,} run(s) record several different values of {show_id(outcome_name)}: the latest is used")
