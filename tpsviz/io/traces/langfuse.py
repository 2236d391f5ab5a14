"""Langfuse exports: traces with their observations and scores, or observations and scores as
the public API lists them (issue 36; docs/traces.md).

A file is JSON (a list, or an object whose ``data`` is the list, or one trace) or JSON Lines (one
record a line). Each record is one of:

- a **trace** as ``GET /api/public/traces/{id}`` returns it (``id``, ``timestamp``, ``name``,
  ``userId``, ``sessionId``, ``metadata``, ``tags``, ``observations`` (objects), ``scores``);
- an **observation** as ``GET /api/public/v2/observations`` (or the UI's observations export)
  returns it: ``id``, ``traceId``, ``type``, ``parentObservationId``, ``name``, ``startTime``,
  ``endTime``, ``model`` (``providedModelName``), ``input``, ``output``, ``metadata``,
  ``usageDetails`` …, with ``traceName``, ``userId``, ``sessionId`` of its trace when present;
- a **score** as ``GET /api/public/v2/scores`` returns it: ``name``, ``dataType`` (``NUMERIC``,
  ``BOOLEAN``, ``CATEGORICAL``, ``TEXT``, ``CORRECTION``), ``value``, ``stringValue``,
  ``traceId``, ``observationId``, ``sessionId`` (or the v3 ``subject``).

Observations of type ``GENERATION`` are model calls, ``TOOL`` tool calls (Langfuse 3.100+), every
other type (``SPAN``, ``EVENT``, ``AGENT``, ``CHAIN`` …) ``other``.
"""

from __future__ import annotations

import json

from tpsviz.core.errors import LogFormatError
from tpsviz.core.wording import setting, text
from tpsviz.io.files import DEFAULT_MAX_JSON_NODES, DEFAULT_MAX_ROWS
from tpsviz.io.traces.spans import Span, TraceFile, TraceScore
from tpsviz.io.traces.values import Tally, content_text, epoch_seconds, flatten_into, json_records, scalar

__all__ = ["read_langfuse", "langfuse_messages", "langfuse_score_value", "OBSERVATION_KINDS"]

#: the span kind of each Langfuse observation type (others are ``other``)
OBSERVATION_KINDS = {"GENERATION": "model", "TOOL": "tool"}
#: trace-level fields kept as trace attributes, with the names other sources use for the same thing
_TRACE_FIELDS = {"name": ("name",), "userId": ("userId", "user.id"), "sessionId": ("sessionId", "session.id"),
                 "release": ("release",), "version": ("version",), "environment": ("environment",),
                 "tags": ("tags",)}
#: the same fields as an observation of the v2 API carries them
_OBS_TRACE_FIELDS = {"traceName": "name", "userId": "userId", "sessionId": "sessionId", "release": "release",
                     "tags": "tags", "traceTags": "tags"}
#: observation fields kept as span attributes
_OBS_FIELDS = ("type", "level", "statusMessage", "version", "environment", "modelParameters", "usageDetails",
               "usage", "costDetails", "totalCost", "promptName", "promptVersion", "metadata")


def _kind_of(record: dict) -> str | None:
    """``trace``, ``observation`` or ``score`` for a record, None when it is none of them."""
    if not isinstance(record, dict):
        return None
    if "observations" in record or ("timestamp" in record and "scores" in record):
        return "trace"
    if "startTime" in record and "type" in record:
        return "observation"
    if "dataType" in record or ("name" in record and ("value" in record or "stringValue" in record)):
        return "score"
    if "id" in record and "timestamp" in record and "type" not in record:
        return "trace"
    return None


def _maybe_json(value):
    """Input and output stored as JSON text (CSV exports, some SDKs) read as JSON."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _message(m, tally: Tally) -> dict | None:
    if not isinstance(m, dict) or not isinstance(m.get("role"), str):
        return None
    msg = {"role": m["role"], "content": content_text(m.get("content"), tally)}
    calls = m.get("tool_calls") or m.get("toolCalls")
    if isinstance(calls, list) and calls:
        msg["tool_calls"] = [_tool_call(c) for c in calls if isinstance(c, dict)]
    elif isinstance(m.get("function_call"), dict):
        msg["tool_calls"] = [_tool_call({"function": m["function_call"]})]
    for key in ("tool_call_id", "name"):
        if isinstance(m.get(key), str):
            msg[key] = m[key]
    return msg


def _tool_call(c: dict) -> dict:
    fn = c.get("function") if isinstance(c.get("function"), dict) else c
    args = fn.get("arguments", fn.get("args", fn.get("input")))
    return {"id": str(c.get("id") or ""), "name": str(fn.get("name") or ""),
            "arguments": args if isinstance(args, str) else content_text(args)}


def _message_list(value, tally: Tally) -> list | None:
    """A list of chat messages, or None when ``value`` is not one."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        return [m for m in (_message(m, tally) for m in value) if m is not None]
    return None


def langfuse_messages(observation: dict, tally: Tally | None = None) -> tuple[tuple, tuple, list | None]:
    """The messages of a Langfuse observation's ``input`` and ``output``.

    Parameters
    ----------
    observation : dict
        An observation object (``type``, ``input``, ``output``).
    tally : Tally, optional
        Counts texts that were cut.

    Returns
    -------
    input_messages, output_messages : tuple of dict
        ``input``: a list of chat messages (``{role, content, tool_calls}``, OpenAI's form) or
        ``{"messages": [...]}``. ``output``: a message, a list of them, an OpenAI response
        (``choices.0.message``) or, for a GENERATION, a text (one assistant message). Anything
        else gives no messages.
    logprobs : list or None
        Token log-probabilities where the output holds them (``choices.0.logprobs.content`` or
        ``logprobs.content``).
    """
    tally = tally if tally is not None else Tally()
    inputs = _message_list(_maybe_json(observation.get("input")), tally) or []
    out = _maybe_json(observation.get("output"))
    logprobs = None
    if isinstance(out, dict) and isinstance(out.get("choices"), list) and out["choices"]:
        first = out["choices"][0] if isinstance(out["choices"][0], dict) else {}
        logprobs = first.get("logprobs")
        out = first.get("message")
    elif isinstance(out, dict):
        logprobs = out.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else logprobs
    logprobs = content if isinstance(content, list) and content else None
    outputs = _message_list(out, tally)
    if outputs is None:
        one = _message(out, tally) if isinstance(out, dict) else None
        if one is None and isinstance(out, str) and str(observation.get("type", "")).upper() == "GENERATION":
            one = {"role": "assistant", "content": content_text(out, tally)}
        outputs = [one] if one is not None else []
    if logprobs and outputs:
        outputs[0] = dict(outputs[0], logprobs=logprobs)
    return tuple(inputs), tuple(outputs), logprobs


def langfuse_score_value(score: dict):
    """A Langfuse score's value by its ``dataType``.

    Parameters
    ----------
    score : dict
        A score object.

    Returns
    -------
    float, bool, str or None
        ``NUMERIC``: the number; ``BOOLEAN``: True/False (``value`` 1/0 or a boolean as the v3 API
        writes it, or ``stringValue``); ``CATEGORICAL`` and ``TEXT``: ``stringValue`` (v3: the
        ``value``); ``CORRECTION`` (an edited output, not a
        judgement) and values that cannot be read: None. Without ``dataType``: the number, else
        the text.
    """
    kind = str(score.get("dataType") or "").upper()
    value, text = scalar(score.get("value")), scalar(score.get("stringValue"))
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value else None
    if kind == "CORRECTION":
        return None
    if kind == "BOOLEAN":
        if isinstance(value, bool):  # (the v3 API writes a boolean)
            return value
        if number is not None:
            return number != 0
        return {"true": True, "false": False}.get(str(text).strip().lower())
    if kind in ("CATEGORICAL", "TEXT"):
        text = text if text is not None else value  # (the v3 API writes the category as the value)
        return text if isinstance(text, str) and text != "" else None
    if number is not None:
        return float(number)
    if kind != "NUMERIC" and isinstance(text, str) and text != "":
        return text
    return None


class _Reader:
    """The state of one file's reading: spans, scores, trace attributes, counts."""

    def __init__(self, name: str, max_spans: int):
        self.name, self.max_spans = name, max_spans
        self.out = TraceFile("langfuse")
        self.tally = Tally()
        self.seen: set = set()
        self.session_scores: list = []

    def trace(self, rec: dict, where: str) -> None:
        tid = scalar(rec.get("id"))
        if tid in (None, ""):
            self.tally.add("trace(s) without an id were skipped")
            return
        tid = str(tid)
        attrs = self.out.trace_attributes.setdefault(tid, {})
        for field, keys in _TRACE_FIELDS.items():
            if rec.get(field) not in (None, "", []):
                for key in keys:
                    flatten_into(attrs, key, rec[field], self.tally)
        if isinstance(rec.get("metadata"), dict):
            flatten_into(attrs, "metadata", rec["metadata"], self.tally)
        observations = rec.get("observations")
        if isinstance(observations, list):
            ids_only = sum(isinstance(o, str) for o in observations)
            self.tally.add("observation(s) were given as ids only (export each trace with "
                           "GET /api/public/traces/{id} to have them)", ids_only)
            for j, obs in enumerate(observations, start=1):
                if isinstance(obs, dict):
                    self.observation(obs, f"{where}, observation {j}", tid)
                elif not isinstance(obs, str):
                    self.tally.add("observation entries that are not objects were skipped")
        scores = rec.get("scores")
        for j, sc in enumerate(scores if isinstance(scores, list) else [], start=1):
            if isinstance(sc, dict):
                self.score(sc, f"{where}, score {j}", tid)

    def observation(self, rec: dict, where: str, trace_id: str | None = None) -> None:
        oid, tid = scalar(rec.get("id")), scalar(rec.get("traceId")) or trace_id
        if oid in (None, "") or tid in (None, ""):
            self.tally.add("observation(s) without an id or a trace id were skipped")
            return
        start = epoch_seconds(rec.get("startTime"))
        if start is None:
            self.tally.add("observation(s) without a readable startTime were skipped")
            return
        if (str(tid), str(oid)) in self.seen:
            self.tally.add("observation(s) repeating an id already read were skipped")
            return
        if len(self.out.spans) >= self.max_spans:
            raise LogFormatError(self.name, [f"the file holds more than the {self.max_spans:,} observations this "
                                             "installation reads (TPSVIZ_MAX_ROWS); export a shorter time range"])
        self.seen.add((str(tid), str(oid)))
        attrs: dict = {}
        for field in _OBS_FIELDS:
            if rec.get(field) not in (None, "", {}, []):
                flatten_into(attrs, field, rec[field], self.tally)
        model = scalar(rec.get("model")) or scalar(rec.get("providedModelName"))
        if model not in (None, ""):
            attrs["model"] = attrs["gen_ai.request.model"] = str(model)
        trace_attrs = self.out.trace_attributes.setdefault(str(tid), {})
        for field, key in _OBS_TRACE_FIELDS.items():
            if rec.get(field) not in (None, "", []) and key not in trace_attrs:
                for k in _TRACE_FIELDS[key]:
                    flatten_into(trace_attrs, k, rec[field], self.tally)
        kind = OBSERVATION_KINDS.get(str(rec.get("type") or "").upper(), "other")
        inputs, outputs, logprobs = langfuse_messages(rec, self.tally)
        parent = scalar(rec.get("parentObservationId"))
        name = scalar(rec.get("name"))
        self.out.spans.append(Span(str(tid), str(oid), None if parent in (None, "") else str(parent),
                                   "" if name is None else str(name), start, epoch_seconds(rec.get("endTime")),
                                   attrs, kind, inputs, outputs, where, logprobs=tuple(logprobs or ())))

    def score(self, rec: dict, where: str, trace_id: str | None = None) -> None:
        name = scalar(rec.get("name"))
        subject = rec.get("subject") if isinstance(rec.get("subject"), dict) else {}
        kind = subject.get("kind")
        tid = scalar(rec.get("traceId")) or (subject.get("id") if kind == "trace" else subject.get("traceId")) \
            or trace_id
        oid = scalar(rec.get("observationId")) or (subject.get("id") if kind == "observation" else None)
        session = scalar(rec.get("sessionId")) or (subject.get("id") if kind == "session" else None)
        value = langfuse_score_value(rec)
        if name in (None, "") or value is None:
            self.tally.add("score(s) without a name or a readable value (or a CORRECTION) were skipped")
        elif tid not in (None, ""):
            self.out.scores.append(TraceScore(str(tid), None if oid in (None, "") else str(oid), str(name), value, where))
        elif session not in (None, ""):
            self.session_scores.append((str(session), str(name), value, where))
        else:
            self.tally.add("score(s) of neither a trace nor a session (dataset runs) were skipped")

    def finish(self) -> TraceFile:
        """Session scores given to each trace of their session; the notes; the checks."""
        by_session: dict = {}
        for tid, attrs in self.out.trace_attributes.items():
            if attrs.get("sessionId") is not None:
                by_session.setdefault(str(attrs["sessionId"]), []).append(tid)
        for session, name, value, where in self.session_scores:
            traces = by_session.get(session, [])
            if not traces:
                self.tally.add("session score(s) of sessions without a trace in the file were skipped")
            for tid in traces:
                self.out.scores.append(TraceScore(tid, None, name, value, where))
        if self.session_scores and by_session:
            self.out.notes.append(text("a session's scores apply to each of its traces (group them into runs with "
                                       f"{setting('run_by', 'session.id')})"))
        self.out.notes.extend(self.tally.notes())
        if not self.out.spans and not self.out.scores:
            raise LogFormatError(self.name, ["no Langfuse trace, observation or score could be read"
                                             + (": " + "; ".join(self.tally.notes()) if self.tally.counts else "")])
        return self.out


def read_langfuse(raw: bytes, name: str, *, max_nodes: int = DEFAULT_MAX_JSON_NODES,
                  max_spans: int = DEFAULT_MAX_ROWS) -> TraceFile:
    """The observations and scores of a Langfuse export.

    Parameters
    ----------
    raw : bytes
        JSON (a list of records, ``{"data": [...]}`` as the API pages, or one trace) or JSON Lines.
    name : str
        File name for messages.
    max_nodes : int
        JSON values parsed at most (``TPSVIZ_MAX_JSON_NODES``).
    max_spans : int
        Observations read at most (``TPSVIZ_MAX_ROWS``).

    Returns
    -------
    TraceFile
        ``source="langfuse"``. Spans: one per observation (kind by type; ``model`` and
        ``gen_ai.request.model`` from the generation's model; the observation's ``metadata.*``,
        ``usageDetails.*``, ``level`` … as attributes). Trace attributes: ``name``, ``userId``
        (also ``user.id``), ``sessionId`` (also ``session.id``), ``tags``, ``release``,
        ``environment``, ``metadata.*``. Scores of traces and observations; a session's score is
        given to each trace of the session. Records that are none of these, observations without
        an id, trace id or start time, and repeated ids are skipped and counted in ``notes``.

    Raises
    ------
    LogFormatError
        Not JSON, more than ``max_nodes`` values or ``max_spans`` observations, or nothing read.
    """
    records, _ = json_records(raw, name, max_nodes)
    reader = _Reader(name, max_spans)
    for where, rec in records:
        kind = _kind_of(rec)
        if kind is None:
            reader.tally.add("record(s) that are neither a Langfuse trace, an observation nor a score were skipped")
        else:
            getattr(reader, kind)(rec, where)
    return reader.finish()
