"""The OTLP JSON reader: spans exported by OpenTelemetry (an OTLP exporter, the collector's file
exporter), one ``{"resourceSpans": [...]}`` document or JSON Lines of such batches
(docs/traces.md).

Layout: ``resourceSpans[] → scopeSpans[] → spans[]``, every attribute a ``{key, value}`` whose value
is an OTLP ``AnyValue``: ``stringValue``, ``boolValue``, ``intValue`` (a string or a number),
``doubleValue``, ``bytesValue`` (base64), ``arrayValue {values}``, ``kvlistValue {values}`` — the
key-value lists flattened to dotted keys (``a.b``), arrays of scalars kept as tuples, arrays of
structures flattened by index (``a.0.b``). The lowerCamelCase keys of the OTLP JSON mapping and the
snake_case keys of the protobuf field names are both read; trace and span ids are read as hex (the
OTLP JSON rule) or base64 (protobuf's own JSON mapping, e.g. ``MessageToJson``). Resource
attributes go to the trace's attributes; the span status becomes ``otel.status_code``
(``OK``/``ERROR``/``UNSET``).

A span is a model call (``kind="model"``) when ``gen_ai.operation.name`` is ``chat``,
``text_completion`` or ``generate_content`` (or its ``openinference.span.kind`` is ``LLM``), a tool
call when it is ``execute_tool`` (``TOOL``); its messages are read by
:mod:`tpsviz.io.traces.genai`, or, on a span that has none of those (an OpenInference instrumentor
exporting by OTLP), from its ``llm.input_messages.*`` and ``llm.output_messages.*`` attributes
(:func:`tpsviz.io.traces.openinference.openinference_messages`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import no_lone_surrogates
from tpsviz.io.files import Limits
from tpsviz.io.harness import check_nodes
from tpsviz.io.traces.genai import MESSAGE_ATTRIBUTES, BadMessages, genai_messages, token_logprobs
from tpsviz.io.traces.openinference import openinference_kind, openinference_messages
from tpsviz.io.traces.spans import Span, TraceFile
from tpsviz.io.traces.values import Tally

__all__ = ["read_otlp", "any_value", "flatten", "otlp_id", "MODEL_OPERATIONS", "TOOL_OPERATIONS",
           "MAX_ATTRIBUTE_CHARS", "MAX_MESSAGE_CHARS", "MAX_SPAN_ATTRIBUTES"]

MODEL_OPERATIONS = ("chat", "text_completion", "generate_content")
TOOL_OPERATIONS = ("execute_tool",)
#: a text attribute longer than this is cut (with a count in the notes)
MAX_ATTRIBUTE_CHARS = 10_000
#: a message attribute (gen_ai.input.messages …) longer than this is not read (counted)
MAX_MESSAGE_CHARS = 20_000_000
#: flattened attributes kept per span (the rest counted)
MAX_SPAN_ATTRIBUTES = 2_000
_MAX_DEPTH = 32
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_INT = re.compile(r"^-?[0-9]{1,20}$")
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET", "STATUS_CODE_OK": "OK",
           "STATUS_CODE_ERROR": "ERROR"}


class BadValue(ValueError):
    """An attribute value of no OTLP kind (counted, never echoed)."""


def _get(obj: dict, camel: str):
    """A field by its OTLP JSON name (lowerCamelCase) or its protobuf name (snake_case)."""
    v = obj.get(camel)
    if v is None:
        v = obj.get(re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel))
    return v


def any_value(v, depth: int = 0):
    """An OTLP ``AnyValue`` as a Python value: str, bool, int, float, list, dict (key-value list),
    None (an empty value); bytes as their base64 text.

    Raises
    ------
    BadValue
        A value of no OTLP kind, an ``intValue`` that is no integer, nesting deeper than 32.
    """
    if not isinstance(v, dict) or depth > _MAX_DEPTH:
        raise BadValue("kind")
    if not v:
        return None
    for key in ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue",
                "bytesValue"):
        x = _get(v, key)
        if x is None:
            continue
        if key == "stringValue" and isinstance(x, str):
            return x
        if key == "boolValue" and isinstance(x, bool):
            return x
        if key == "intValue" and not isinstance(x, bool) and (
                isinstance(x, int) or (isinstance(x, str) and _INT.match(x.strip()))):
            return int(x)
        if key == "doubleValue" and not isinstance(x, bool) and isinstance(x, (int, float, str)):
            try:
                return float(x)  # (protobuf JSON writes "NaN", "Infinity" as strings)
            except ValueError:
                raise BadValue("double") from None
        if key == "bytesValue" and isinstance(x, str):
            return x
        if key == "arrayValue" and isinstance(x, dict):
            return [any_value(e, depth + 1) for e in _list(x.get("values"))]
        if key == "kvlistValue" and isinstance(x, dict):
            return {str(kv.get("key")): any_value(kv.get("value") or {}, depth + 1)
                    for kv in _list(x.get("values")) if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
        raise BadValue("kind")
    raise BadValue("kind")


def _list(x) -> list:
    if x is None:
        return []
    if not isinstance(x, list):
        raise BadValue("list")
    return x


def flatten(key: str, value, out: dict) -> None:
    """``value`` under ``key`` in ``out`` with dotted keys: a dict's items as ``key.k``, a list of
    scalars as a tuple, a list holding structures item by item as ``key.0``, ``key.1`` …"""
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(f"{key}.{k}", v, out)
    elif isinstance(value, list):
        if all(not isinstance(e, (dict, list)) for e in value):
            out[key] = tuple(value)
        else:
            for i, v in enumerate(value):
                flatten(f"{key}.{i}", v, out)
    else:
        out[key] = value


def otlp_id(v, n_bytes: int) -> str | None:
    """A trace id (16 bytes) or span id (8 bytes) as lower-case hex, read from hex (OTLP JSON) or
    base64 (protobuf's JSON mapping); None when it is neither, or all zeros (no id)."""
    if not isinstance(v, str) or not v:
        return None
    if len(v) == 2 * n_bytes and _HEX.match(v):
        out = v.lower()
    else:
        try:
            b = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(b) != n_bytes:
            return None
        out = b.hex()
    return None if set(out) == {"0"} else out


def _attributes(items, counts: Tally) -> dict:
    """An OTLP attribute list as structures by key (bad values left out and counted)."""
    out = {}
    for kv in _list(items):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            counts.add("attribute(s) without a key were left out")
            continue
        try:
            out[kv["key"]] = any_value(kv.get("value") or {})
        except (BadValue, RecursionError):
            counts.add("attribute value(s) of no OTLP value kind were left out")
    return out


def _flat(structured: dict, counts: Tally) -> dict:
    """Attributes flattened to dotted keys, texts cut to :data:`MAX_ATTRIBUTE_CHARS`, at most
    :data:`MAX_SPAN_ATTRIBUTES` kept."""
    flat: dict = {}
    for k, v in structured.items():
        if k not in MESSAGE_ATTRIBUTES:
            flatten(k, v, flat)
    if len(flat) > MAX_SPAN_ATTRIBUTES:
        counts.add(f"attribute(s) beyond {MAX_SPAN_ATTRIBUTES:,} on a span were left out",
                   len(flat) - MAX_SPAN_ATTRIBUTES)
        flat = dict(list(flat.items())[:MAX_SPAN_ATTRIBUTES])
    for k, v in flat.items():
        if isinstance(v, str) and len(v) > MAX_ATTRIBUTE_CHARS:
            flat[k] = v[:MAX_ATTRIBUTE_CHARS] + "…"
            counts.add(f"attribute text(s) longer than {MAX_ATTRIBUTE_CHARS:,} characters were cut")
        elif isinstance(v, float) and not math.isfinite(v):
            flat[k] = None
    return flat


def _time(v) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, str) and _INT.match(v.strip()):
        v = int(v)
    if isinstance(v, int) and v > 0:
        return v / 1e9
    return None


def _kind(attrs: dict) -> str:
    op = attrs.get("gen_ai.operation.name")
    if op in MODEL_OPERATIONS:
        return "model"
    if op in TOOL_OPERATIONS:
        return "tool"
    return openinference_kind(attrs)  # OpenInference spans sent as OTLP (openinference.span.kind)


def _tool_message(attrs: dict) -> tuple:
    """A tool span's result as one ``tool`` message (its call as the agent asked it is in the
    model's output)."""
    if attrs.get("gen_ai.tool.call.result") is None and attrs.get("gen_ai.tool.name") is None:
        return ()
    result = attrs.get("gen_ai.tool.call.result")
    m = {"role": "tool", "name": str(attrs.get("gen_ai.tool.name") or "tool"),
         "content": result if isinstance(result, str) else json.dumps(result, default=str)}
    if attrs.get("gen_ai.tool.call.id") is not None:
        m["tool_call_id"] = str(attrs["gen_ai.tool.call.id"])
    return (m,)


def _too_long(values) -> bool:
    """Whether a message text among ``values`` is longer than :data:`MAX_MESSAGE_CHARS`."""
    return any(isinstance(v, str) and len(v) > MAX_MESSAGE_CHARS for v in values)


def _messages(structured: dict, events: list, counts: Tally) -> tuple[tuple, tuple]:
    too_long = f"span(s) hold messages longer than {MAX_MESSAGE_CHARS:,} characters: not read"
    if _too_long(structured.get(k) for k in MESSAGE_ATTRIBUTES):
        counts.add(too_long)
        return (), ()
    try:
        inputs, outputs = genai_messages(structured, events)
    except (BadMessages, RecursionError):
        counts.add("span(s) hold a message attribute that is neither JSON messages nor text: not read")
        return (), ()
    if inputs or outputs:
        return inputs, outputs
    # an OpenInference instrumentor exporting by OTLP: llm.input_messages.<i>.message.* attributes
    if _too_long(v for k, v in structured.items() if k.startswith(("llm.input_messages.", "llm.output_messages."))):
        counts.add(too_long)
        return (), ()
    return openinference_messages(structured)


def _span(raw: dict, where: str, counts: Tally) -> Span | None:
    """One OTLP span, or None (counted) when it has no usable ids or start time."""
    trace_id, span_id = otlp_id(_get(raw, "traceId"), 16), otlp_id(_get(raw, "spanId"), 8)
    start = _time(_get(raw, "startTimeUnixNano"))
    if trace_id is None or span_id is None:
        counts.add("span(s) without a valid trace or span id were left out")
        return None
    if start is None:
        counts.add("span(s) without a start time were left out")
        return None
    parent_raw = _get(raw, "parentSpanId")
    parent = otlp_id(parent_raw, 8)
    if parent is None and parent_raw not in (None, ""):
        counts.add("span(s) have a parent id that is not one (read as roots)")
    structured = _attributes(_get(raw, "attributes"), counts)
    events = []
    for ev in _list(_get(raw, "events")):
        if isinstance(ev, dict) and isinstance(ev.get("name"), str):
            events.append((ev["name"], _attributes(ev.get("attributes"), counts)))
    attrs = _flat(structured, counts)
    status = _get(raw, "status")
    code = _STATUS.get(status.get("code"), "UNSET") if isinstance(status, dict) else "UNSET"
    attrs.setdefault("otel.status_code", code)
    kind = _kind(attrs)
    inputs, outputs = _messages(structured, events, counts) if kind == "model" else ((), ())
    if kind == "tool":
        outputs = _tool_message(attrs)
    name = raw.get("name")
    return Span(trace_id=trace_id, span_id=span_id, parent_id=parent, name=name if isinstance(name, str) else "",
                start=start, end=_time(_get(raw, "endTimeUnixNano")), attributes=attrs, kind=kind,
                input_messages=inputs, output_messages=outputs, where=where,
                logprobs=token_logprobs(structured) if kind == "model" else ())


def _batches(raw: bytes, name: str, limits: Limits, parsed) -> list:
    """(label, batch) of every ``{"resourceSpans": …}`` document: the whole file, or each line."""
    if isinstance(parsed, dict):
        return [("", parsed)]
    check_nodes(raw, name, limits.max_json_nodes)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LogFormatError(name, ["the file is not valid UTF-8 text"]) from None
    try:
        return [("", no_lone_surrogates(json.loads(text), raw))]
    except json.JSONDecodeError:
        pass
    except (RecursionError, ValueError):
        raise LogFormatError(name, ["the JSON is nested too deeply or holds a number too long to read"]) from None
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f"line {i}, ", no_lone_surrogates(json.loads(line), raw)))
        except json.JSONDecodeError as exc:
            raise LogFormatError(name, [f"line {i}: not valid JSON ({exc.msg}); OTLP JSON is one "
                                        "{\"resourceSpans\": […]} document or one per line"]) from None
        except (RecursionError, ValueError):
            raise LogFormatError(name, [f"line {i}: nested too deeply or a number too long to read"]) from None
    return out


def read_otlp(raw: bytes, name: str, limits: Limits, parsed=None) -> TraceFile:
    """The spans of an OTLP JSON file.

    Parameters
    ----------
    raw : bytes
        The file: one ``{"resourceSpans": […]}`` document, or JSON Lines of them.
    name : str
        File name for messages.
    limits : tpsviz.io.files.Limits
        ``max_json_nodes`` bounds the JSON parsed, ``max_rows`` the spans read.
    parsed : dict, optional
        The document already parsed (format detection).

    Returns
    -------
    TraceFile
        ``source="otlp"``; resource attributes as the trace attributes; notes on every span or
        attribute left out or cut, by count.

    Raises
    ------
    LogFormatError
        Not OTLP JSON, more spans than ``limits.max_rows``, no span at all; never quoting a value.
    """
    out, counts, n_seen = TraceFile(source="otlp"), Tally(), set()
    for label, batch in _batches(raw, name, limits, parsed):
        resources = _get(batch, "resourceSpans") if isinstance(batch, dict) else None
        if not isinstance(resources, list):
            raise LogFormatError(name, [f"{label or 'the document'}: no resourceSpans list; OTLP JSON is "
                                        "{\"resourceSpans\": [{\"resource\", \"scopeSpans\": [{\"spans\"}]}]}"])
        for r, res in enumerate(resources, 1):
            try:
                _resource(res, f"{label}resource {r}", out, counts, n_seen, limits.max_rows, name)
            except BadValue:
                raise LogFormatError(name, [f"{label}resource {r}: a list field holds another kind of value"]) from None
    if not out.spans:
        raise LogFormatError(name, ["no span with a trace id, span id and start time was found"])
    out.notes += counts.notes()
    return out


def _resource(res, where: str, out: TraceFile, counts: Tally, seen: set, max_spans: int, name: str) -> None:
    """The spans of one ``resourceSpans`` entry into ``out`` (its resource attributes onto their traces)."""
    if not isinstance(res, dict):
        counts.add("resourceSpans entries that are not objects were left out")
        return
    resource = _get(res, "resource")
    res_attrs = _flat(_attributes(resource.get("attributes"), counts), counts) if isinstance(resource, dict) else {}
    scopes = _get(res, "scopeSpans")
    if scopes is None:
        scopes = _get(res, "instrumentationLibrarySpans")  # (OTLP before 0.15)
    for s, scope in enumerate(_list(scopes), 1):
        if not isinstance(scope, dict):
            continue
        for k, raw in enumerate(_list(scope.get("spans")), 1):
            if not isinstance(raw, dict):
                counts.add("spans that are not objects were left out")
                continue
            try:
                span = _span(raw, f"{where}, scope {s}, span {k}", counts)
            except BadValue:
                counts.add("span(s) with a list field holding another kind of value were left out")
                continue
            if span is None:
                continue
            if (span.trace_id, span.span_id) in seen:
                counts.add("span(s) appear twice (same trace and span id): the later copies were left out")
                continue
            seen.add((span.trace_id, span.span_id))
            if len(out.spans) >= max_spans:
                raise LogFormatError(name, [f"the file holds more than {max_spans:,} spans, more than this "
                                            "installation reads (TPSVIZ_MAX_ROWS)"])
            out.spans.append(span)
            attrs = out.trace_attributes.setdefault(span.trace_id, {})
            for key, v in res_attrs.items():
                attrs.setdefault(key, v)
