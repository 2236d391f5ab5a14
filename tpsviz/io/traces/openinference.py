"""OpenInference spans (Arize Phoenix): the span table Phoenix exports, its evaluations, and the
reading of OpenInference attributes wherever they are found (issue 36; docs/traces.md).

- **Span table.** ``px.Client().get_spans_dataframe()`` (or ``client.spans.get_spans_dataframe``)
  saved as Parquet, CSV or JSON Lines: one row per span with ``context.trace_id``,
  ``context.span_id``, ``parent_id``, ``name``, ``span_kind``, ``start_time``, ``end_time``,
  ``status_code`` and ``attributes.*`` columns. Phoenix keeps lists of messages nested
  (``attributes.llm.input_messages`` holds ``[{"message.role": …, "message.content": …}]``);
  they are flattened back to the OpenTelemetry keys (``llm.input_messages.0.message.role``), so a
  table written either way reads the same.
- **Kind.** ``LLM`` spans are model calls (``model``), ``TOOL`` spans tool calls (``tool``), the
  rest ``other``.
- **Messages.** ``llm.input_messages.N.message.*`` and ``llm.output_messages.N.message.*``:
  ``role``, ``content`` (or the texts of ``contents``), ``tool_calls`` (``tool_call.id``,
  ``tool_call.function.name``, ``tool_call.function.arguments``), ``tool_call_id``, ``name``.
- **Token log-probabilities.** OpenInference (semantic conventions 0.1.42) names no attribute for
  them; an instrumented OpenAI call keeps the raw response in ``output.value``, whose
  ``choices.0.logprobs.content`` is read when present into :attr:`Span.logprobs`.
- **Evaluations.** Phoenix's evaluations table (``SpanEvaluations``/``TraceEvaluations``, or the
  span annotations table): ``context.span_id`` (or ``context.trace_id``), ``label``, ``score``,
  ``explanation``; :func:`add_evaluations` attaches them to the spans' traces.
"""

from __future__ import annotations

import json
import re

from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import DEFAULT_MAX_FILE_MB, DEFAULT_MAX_JSON_NODES, DEFAULT_MAX_ROWS, MB
from tpsviz.io.traces.spans import Span, TraceFile, TraceScore
from tpsviz.io.traces.table import nested_cell, span_table
from tpsviz.io.traces.values import Tally, content_text, epoch_seconds, flatten_into, scalar

__all__ = ["read_openinference", "read_openinference_evaluations", "add_evaluations",
           "openinference_kind", "openinference_messages", "openinference_logprobs", "is_evaluations_table",
           "openinference_scores", "SPAN_KIND"]

#: the attribute holding the OpenInference span kind
SPAN_KIND = "openinference.span.kind"
_KINDS = {"LLM": "model", "TOOL": "tool"}
_MESSAGE = re.compile(r"llm\.(input|output)_messages\.(\d+)\.(.+)")
_TOOL_CALL = re.compile(r"message\.tool_calls\.(\d+)\.(.+)")
_CONTENTS = re.compile(r"message\.contents\.(\d+)\.message_content\.(text|type)")
_SCORE = re.compile(r"(trace\.|session\.)?(annotations|evaluations)\.(\d+)\.(annotation|evaluation)\.(name|score|label)")
_TRACE_ID = ("context.trace_id", "trace_id")
_SPAN_ID = ("context.span_id", "span_id")
_PARENT_ID = ("parent_id", "context.parent_id", "parent_span_id")


def openinference_kind(attributes: dict, span_kind=None) -> str:
    """The kind of a span from its OpenInference span kind.

    Parameters
    ----------
    attributes : dict
        Flattened attributes; ``openinference.span.kind`` is read when ``span_kind`` is None.
    span_kind : str, optional
        The kind as a table column gives it (Phoenix's ``span_kind``).

    Returns
    -------
    str
        ``model`` for ``LLM``, ``tool`` for ``TOOL``, else ``other`` (one of
        :data:`tpsviz.io.traces.spans.SPAN_KINDS`).
    """
    kind = span_kind if isinstance(span_kind, str) and span_kind.strip() else attributes.get(SPAN_KIND)
    return _KINDS.get(kind.strip().upper(), "other") if isinstance(kind, str) else "other"


def openinference_messages(attributes: dict) -> tuple[tuple, tuple]:
    """The input and output messages of a span's OpenInference attributes.

    Parameters
    ----------
    attributes : dict
        Flattened attributes (``llm.input_messages.0.message.role`` …), as OTLP spans carry
        them and as :func:`read_openinference` reads a span table.

    Returns
    -------
    input_messages, output_messages : tuple of dict
        In index order, each ``{"role", "content"}`` (content as text: ``message.content``, or the
        texts of ``message.contents``) with ``tool_calls`` (list of ``{"id", "name",
        "arguments"}``), ``tool_call_id`` and ``name`` where recorded. A message with neither
        role, content nor tool calls is left out.
    """
    found: dict = {"input": {}, "output": {}}
    for key, value in attributes.items():
        m = _MESSAGE.fullmatch(key)
        if m:
            found[m.group(1)].setdefault(int(m.group(2)), {})[m.group(3)] = value
    return _messages(found["input"]), _messages(found["output"])


def _messages(by_index: dict) -> tuple:
    out = []
    for i in sorted(by_index):
        fields = by_index[i]
        msg = {"role": _text(fields.get("message.role")), "content": _content(fields)}
        calls: dict = {}
        for key, value in fields.items():
            m = _TOOL_CALL.fullmatch(key)
            if m:
                calls.setdefault(int(m.group(1)), {})[m.group(2)] = value
        if calls:
            msg["tool_calls"] = [{"id": _text(c.get("tool_call.id")),
                                  "name": _text(c.get("tool_call.function.name")),
                                  "arguments": _text(c.get("tool_call.function.arguments"))}
                                 for _, c in sorted(calls.items())]
        elif fields.get("message.function_call_name") is not None:
            msg["tool_calls"] = [{"id": "", "name": _text(fields.get("message.function_call_name")),
                                  "arguments": _text(fields.get("message.function_call_arguments_json"))}]
        for key, field in (("tool_call_id", "message.tool_call_id"), ("name", "message.name")):
            if fields.get(field) is not None:
                msg[key] = _text(fields[field])
        if msg["role"] or msg["content"] or msg.get("tool_calls"):
            out.append(msg)
    return tuple(out)


def _text(value) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else content_text(value)


def _content(fields: dict) -> str:
    if fields.get("message.content") is not None:
        return _text(fields["message.content"])
    parts: dict = {}
    for key, value in fields.items():
        m = _CONTENTS.fullmatch(key)
        if m:
            parts.setdefault(int(m.group(1)), {})[m.group(2)] = value
    texts = [p["text"] for _, p in sorted(parts.items())
             if isinstance(p.get("text"), str) and p.get("type") in (None, "text")]
    return "\n\n".join(texts)


def openinference_logprobs(attributes: dict):
    """Token log-probabilities of a model call, where its raw response holds them.

    OpenInference defines no attribute for them; an instrumented OpenAI chat call keeps the
    response as JSON in ``output.value``, with ``choices.0.logprobs.content`` when log-probabilities
    were requested.

    Parameters
    ----------
    attributes : dict
        Flattened attributes.

    Returns
    -------
    list of dict or None
        ``[{"logprob": …, "top_logprobs": [...]}, …]`` as the response gives them, or None.
    """
    flat = attributes.get("output.value.choices.0.logprobs.content")
    if isinstance(flat, (list, tuple)) and flat:
        return list(flat)
    if any(k.startswith("output.value.choices.0.logprobs.content.") for k in attributes):
        return _indexed(attributes, "output.value.choices.0.logprobs.content.")
    raw = attributes.get("output.value")
    if not isinstance(raw, str) or '"logprobs"' not in raw:
        return None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    choices = doc.get("choices") if isinstance(doc, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    logprobs = first.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return content if isinstance(content, list) and content else None


def _indexed(attributes: dict, prefix: str) -> list | None:
    tokens: dict = {}
    for key, value in attributes.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix):].partition(".")
            if index.isdigit() and rest in ("logprob", "token"):
                tokens.setdefault(int(index), {})[rest] = value
    return [tokens[i] for i in sorted(tokens)] or None


def openinference_scores(attributes: dict, trace_id: str, span_id: str, where: str = "") -> list:
    """Annotations and evaluations a span carries in its attributes (``annotations.N.annotation.*``,
    ``evaluations.N.evaluation.*``, and their ``trace.``-level forms), as scores.

    Parameters
    ----------
    attributes : dict
        Flattened attributes.
    trace_id, span_id : str
        The span's identifiers; a ``trace.``-level score is attached to the whole trace.
    where : str
        The span's location, for messages.

    Returns
    -------
    list of TraceScore
        The score where it is a number, else the label; entries with neither are left out.
    """
    found: dict = {}
    for key, value in attributes.items():
        m = _SCORE.fullmatch(key)
        if m and m.group(1) != "session.":
            found.setdefault((m.group(1) or "", m.group(2), int(m.group(3))), {})[m.group(5)] = value
    scores = []
    for (level, _, _), fields in sorted(found.items()):
        value = score_value(fields.get("score"), fields.get("label"))
        if isinstance(fields.get("name"), str) and value is not None:
            scores.append(TraceScore(trace_id, None if level else span_id, fields["name"], value, where))
    return scores


def score_value(score, label):
    """An evaluation's value: its score when it is a finite number, else its label (text), else
    None."""
    score = scalar(score)
    if isinstance(score, (int, float)) and not isinstance(score, bool) and score == score:
        return float(score) if abs(score) != float("inf") else None
    if isinstance(score, bool):
        return score
    label = scalar(label)
    return label if isinstance(label, (str, bool)) and label != "" else None


def _first(record: dict, names: tuple):
    for n in names:
        v = scalar(record.get(n))
        if v is not None and v != "":
            return v
    return None


def _span_of(record: dict, where: str, tally: Tally, text: bool = False) -> Span | None:
    """One row of the span table as a Span, or None (counted in ``tally``) when it cannot be one;
    ``text``: the cells are CSV text (:func:`tpsviz.io.traces.table.nested_cell`)."""
    trace_id, span_id = _first(record, _TRACE_ID), _first(record, _SPAN_ID)
    if trace_id is None or span_id is None:
        tally.add("row(s) without context.trace_id or context.span_id were skipped")
        return None
    start = epoch_seconds(record.get("start_time"))
    if start is None:
        tally.add("span(s) without a readable start_time were skipped")
        return None
    attributes: dict = {}
    for column, value in record.items():
        if column.startswith("attributes."):
            if text:
                value, failed = nested_cell(value)
                if failed:
                    tally.add("CSV cell(s) of nested values could not be read (save the table as Parquet or "
                              "JSON Lines to keep them)")
            flatten_into(attributes, column[len("attributes."):], value, tally)
        elif column == "attributes" and isinstance(value, dict):
            flatten_into(attributes, "", value, tally)
    for column in ("status_code", "status_message"):
        if scalar(record.get(column)) not in (None, ""):
            flatten_into(attributes, column, record[column], tally)
    kind = openinference_kind(attributes, scalar(record.get("span_kind")))
    inputs, outputs = openinference_messages(attributes)
    logprobs = (openinference_logprobs(attributes) or ()) if kind == "model" else ()
    parent = _first(record, _PARENT_ID)
    name = scalar(record.get("name"))
    return Span(str(trace_id), str(span_id), None if parent is None else str(parent),
                "" if name is None else str(name), start, epoch_seconds(record.get("end_time")),
                attributes, kind, inputs, outputs, where, logprobs=tuple(logprobs))


def read_openinference(raw: bytes, name: str, *, max_nodes: int = DEFAULT_MAX_JSON_NODES,
                       max_spans: int = DEFAULT_MAX_ROWS,
                       max_bytes: int = DEFAULT_MAX_FILE_MB * MB) -> TraceFile:
    """The spans of a Phoenix span table (Parquet, CSV or JSON Lines).

    Parameters
    ----------
    raw : bytes
        The file's content.
    name : str
        File name for messages; its extension tells CSV from JSON Lines (Parquet is told by its
        content).
    max_nodes : int
        JSON values parsed at most (``TPSVIZ_MAX_JSON_NODES``).
    max_spans : int
        Rows (spans) read at most (``TPSVIZ_MAX_ROWS``).
    max_bytes : int
        A Parquet file may decode to at most this many bytes.

    Returns
    -------
    TraceFile
        ``source="openinference"``; rows without ids or a readable start time, and repeated span
        ids, are skipped and counted in ``notes``. Annotations carried in the attributes
        (``annotations.N.annotation.*``) are ``scores``.

    Raises
    ------
    LogFormatError
        The file cannot be read as a table, lacks the ``context.trace_id``, ``context.span_id`` or
        ``start_time`` column, holds more than ``max_spans`` rows, or no span could be read.
    """
    table = span_table(raw, name, max_spans=max_spans, max_nodes=max_nodes, max_bytes=max_bytes)
    columns = set(table.columns)
    missing = [names[0] for names in (_TRACE_ID, _SPAN_ID, ("start_time",))
               if not any(n in columns for n in names)]
    if missing:
        raise LogFormatError(name, [f"not a Phoenix span table: no column {', '.join(missing)} (export it with "
                                    "px.Client().get_spans_dataframe())"])
    tally = Tally()
    traces = TraceFile("openinference")
    seen: set = set()
    text = table.fmt in ("csv", "tsv")
    for where, record in table.rows:
        span = _span_of(record, where, tally, text)
        if span is None:
            continue
        if (span.trace_id, span.span_id) in seen:
            tally.add("row(s) repeating a span id already read were skipped")
            continue
        seen.add((span.trace_id, span.span_id))
        traces.spans.append(span)
        traces.scores.extend(openinference_scores(span.attributes, span.trace_id, span.span_id, where))
    if not traces.spans:
        raise LogFormatError(name, ["no span could be read: " + ("; ".join(tally.notes()) or "the table is empty")])
    traces.notes.extend(tally.notes())
    return traces


def is_evaluations_table(columns) -> bool:
    """Whether a table's columns are those of a Phoenix evaluations or annotations table (span or
    trace ids with a label or score, no ``trajectory_id``), not an outcomes table.

    Parameters
    ----------
    columns : iterable of str

    Returns
    -------
    bool
    """
    cols = {str(c) for c in columns}
    ids = cols & ({"context.span_id", "span_id"} | set(_TRACE_ID))
    return "trajectory_id" not in cols and bool(ids) and bool(cols & {"score", "label", "result.score",
                                                                       "result.label"})


def read_openinference_evaluations(raw: bytes, name: str, *, max_nodes: int = DEFAULT_MAX_JSON_NODES,
                                   max_spans: int = DEFAULT_MAX_ROWS,
                                   max_bytes: int = DEFAULT_MAX_FILE_MB * MB) -> TraceFile:
    """The evaluations of a Phoenix evaluations table, as scores.

    Reads ``SpanEvaluations``/``TraceEvaluations`` as Phoenix saves them (Parquet with the
    evaluation's name in the file's ``arize`` metadata) or as a table (``context.span_id`` or
    ``context.trace_id``, ``label``, ``score``, ``explanation``, and the name in an ``eval_name``
    or ``name`` column), and the span annotations table (``span_id``, ``annotation_name``,
    ``result.label``, ``result.score``). A table without a name column is named by the file's
    stem (``correctness.csv`` → ``correctness``).

    Parameters
    ----------
    raw : bytes
    name : str
        File name for messages.
    max_nodes, max_spans, max_bytes : int
        As for :func:`read_openinference`.

    Returns
    -------
    TraceFile
        ``spans`` empty, ``scores`` one per row: the score where it is a number, else the label.
        A span's evaluation has ``trace_id`` ``""`` when the table does not give it:
        :func:`add_evaluations` takes it from the spans. Rows with neither are counted in
        ``notes``.

    Raises
    ------
    LogFormatError
        No span or trace id column, no score or label column, or no row could be read.
    """
    table = span_table(raw, name, max_spans=max_spans, max_nodes=max_nodes, max_bytes=max_bytes)
    columns = set(table.columns)
    span_col = next((c for c in ("context.span_id", "span_id") if c in columns), None)
    trace_col = next((c for c in _TRACE_ID if c in columns), None)
    score_col = next((c for c in ("score", "result.score") if c in columns), None)
    label_col = next((c for c in ("label", "result.label") if c in columns), None)
    problems = []
    if span_col is None and trace_col is None:
        problems.append("not an evaluations table: no column context.span_id or context.trace_id")
    if score_col is None and label_col is None:
        problems.append("not an evaluations table: no column score or label")
    if any(c in columns for c in ("document_position", "position")):
        problems.append("a table of document evaluations (one row per retrieved document) holds no span or "
                        "trace outcome; export span or trace evaluations")
    if problems:
        raise LogFormatError(name, problems)
    default = table.eval_name or re.sub(r"\.[^.]*$", "", name.replace("\\", "/").rsplit("/", 1)[-1])
    tally = Tally()
    out = TraceFile("openinference")
    text = table.fmt in ("csv", "tsv")
    for where, record in table.rows:
        score = record.get(score_col)
        value = score_value(nested_cell(score)[0] if text else score, record.get(label_col))
        span_id = _first(record, (span_col,)) if span_col else None
        trace_id = _first(record, (trace_col,)) if trace_col else None
        if value is None or (span_id is None and trace_id is None):
            tally.add("evaluation row(s) without an id, a score or a label were skipped")
            continue
        eval_name = _first(record, ("eval_name", "annotation_name", "name")) or default
        out.scores.append(TraceScore("" if trace_id is None else str(trace_id),
                                     None if span_id is None else str(span_id), str(eval_name), value, where))
    if not out.scores:
        raise LogFormatError(name, ["no evaluation could be read: " + ("; ".join(tally.notes()) or "the table is empty")])
    out.notes.extend(tally.notes())
    return out


def add_evaluations(traces: TraceFile, evaluations: TraceFile) -> TraceFile:
    """``traces`` with the scores of ``evaluations`` attached, each span's evaluation given its
    span's trace id.

    Parameters
    ----------
    traces : TraceFile
        The spans (any source).
    evaluations : TraceFile
        From :func:`read_openinference_evaluations`.

    Returns
    -------
    TraceFile
        A new TraceFile: the spans, the scores of both, the notes of both; evaluations of spans
        (or traces) not in ``traces`` are left out and counted in its notes.
    """
    trace_of = {s.span_id: s.trace_id for s in traces.spans}
    trace_ids = set(trace_of.values())
    kept, unknown = [], 0
    for sc in evaluations.scores:
        trace_id = sc.trace_id or trace_of.get(sc.span_id, "")
        if trace_id not in trace_ids or (sc.span_id is not None and sc.span_id not in trace_of):
            unknown += 1
            continue
        kept.append(TraceScore(trace_id, sc.span_id, sc.name, sc.value, sc.where))
    notes = list(traces.notes) + list(evaluations.notes)
    if unknown:
        notes.append(f"{unknown:,} evaluation(s) of spans or traces not in the span table were left out")
    return TraceFile(traces.source, list(traces.spans), list(traces.scores) + kept,
                     dict(traces.trace_attributes), notes)
