"""Telling a trace file from its content (docs/traces.md): OTLP JSON, an OpenInference span table
(Phoenix's export), a Langfuse export. :func:`tpsviz.io.harness.detect_format` asks here first, so
this module imports nothing of the readers.
"""

from __future__ import annotations

import io
import re

__all__ = ["TRACE_FORMATS", "sniff_trace_format", "trace_format_of"]

TRACE_FORMATS = ("otlp", "openinference", "langfuse")

_OTLP_HEAD = re.compile(rb'^\s*\{\s*"(resourceSpans|resource_spans)"\s*:')
_SNIFF_BYTES = 65_536


def trace_format_of(obj) -> str | None:
    """The trace format of a parsed JSON document, or None.

    Parameters
    ----------
    obj : object
        The parsed JSON.

    Returns
    -------
    str or None
        ``otlp`` (an object with ``resourceSpans``), ``langfuse`` (a trace with ``observations``,
        a list of traces, observations or scores, or the public API's ``{"data": [...]}``),
        ``openinference`` (a list of spans with ``context.trace_id`` and ``span_kind``).
    """
    if isinstance(obj, dict):
        if "resourceSpans" in obj or "resource_spans" in obj:
            return "otlp"
        if "observations" in obj or (isinstance(obj.get("data"), list) and obj["data"]
                                     and isinstance(obj["data"][0], dict) and _langfuse_keys(obj["data"][0])):
            return "langfuse"
        return None
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        first = obj[0]
        if _langfuse_keys(first):
            return "langfuse"
        if _openinference_keys(first):
            return "openinference"
    return None


def _langfuse_keys(record: dict) -> bool:
    """A Langfuse trace (with ``observations``), or an observation or score of the public API
    (``traceId`` with ``startTime`` and ``type``, or with ``dataType``)."""
    return "observations" in record or ("traceId" in record and (
        ("startTime" in record and "type" in record) or "dataType" in record))


def _openinference_keys(record: dict) -> bool:
    ctx = record.get("context")
    return "context.trace_id" in record or (isinstance(ctx, dict) and "trace_id" in ctx and "span_kind" in record)


def sniff_trace_format(raw: bytes, name: str) -> str | None:
    """The trace format of a file from its first bytes, without parsing it whole: OTLP JSON (or
    JSON Lines of batches) opening with ``{"resourceSpans"``; a JSON Lines Langfuse export whose
    first record has ``observations``; an OpenInference span table (CSV/TSV header, JSON Lines
    record or Parquet schema with ``context.trace_id``). None when it is none of them.

    Parameters
    ----------
    raw : bytes
    name : str
        The file name (its extension tells Parquet from text).

    Returns
    -------
    str or None
    """
    if raw[:4] == b"PAR1":
        return "openinference" if "context.trace_id" in _parquet_columns(raw) else None
    head = raw[:_SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    if _OTLP_HEAD.match(head):
        return "otlp"
    first = head.split(b"\n", 1)[0]
    if first[:1] == b"{":
        if b'"observations"' in first and (b'"traceId"' in first or b'"id"' in first):
            return "langfuse"
        if b'"traceId"' in first and ((b'"startTime"' in first and b'"type"' in first) or b'"dataType"' in first):
            return "langfuse"  # an observation or a score of the public API, one a line
        if b'"context.trace_id"' in first or (b'"context"' in first and b'"trace_id"' in first
                                              and b'"span_kind"' in first):
            return "openinference"
        return None
    if first[:1] not in (b"[", b"") and b"context.trace_id" in first and b"span_kind" in first:
        return "openinference"  # a CSV/TSV header
    return None


def _parquet_columns(raw: bytes) -> list:
    """The column names of a Parquet file's schema (its footer only), or [] when unreadable."""
    import pyarrow.parquet as pq  # (pyarrow: imported only for a Parquet file)

    try:
        return list(pq.read_schema(io.BytesIO(raw)).names)
    except Exception:  # any unreadable footer: not ours to judge here, the table reader says why
        return []
