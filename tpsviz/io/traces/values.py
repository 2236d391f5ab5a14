"""Values every trace reader meets: times, nested attributes, message text, JSON documents and
the counts of what was skipped (issue 36; docs/traces.md).

Used by the OpenInference and Langfuse readers (:mod:`tpsviz.io.traces.openinference`,
:mod:`tpsviz.io.traces.langfuse`). Limits hold whatever a file holds: a text is cut to
:data:`MAX_TEXT_CHARS`, a span keeps at most :data:`MAX_ATTRIBUTES` attributes, nesting deeper
than :data:`MAX_DEPTH` is not followed; each cut is counted for the reader's notes.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections import Counter

import numpy as np

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import no_lone_surrogates
from tpsviz.io.harness import check_nodes

__all__ = ["MAX_TEXT_CHARS", "MAX_ATTRIBUTES", "MAX_DEPTH", "Tally", "epoch_seconds", "flatten_into",
           "cut_text", "content_text", "parse_json_text", "json_records", "scalar"]

#: a text value (an attribute, a message's content) is cut to this many characters
MAX_TEXT_CHARS = 1_000_000
#: attributes kept per span (a record with more keeps the first ones, counted in the notes)
MAX_ATTRIBUTES = 5_000
#: nesting followed when flattening a value into dotted keys
MAX_DEPTH = 32

_ISO_Z = re.compile(r"Z$", re.IGNORECASE)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


class Tally:
    """Counts of what a reader skipped or cut, by reason, in order of first appearance;
    :meth:`notes` words them for :attr:`tpsviz.io.traces.spans.TraceFile.notes`."""

    def __init__(self):
        self.counts: Counter = Counter()

    def add(self, reason: str, n: int = 1) -> None:
        """Count ``n`` more records for ``reason`` (a phrase such as "span(s) without a start time
        were skipped")."""
        if n:
            self.counts[reason] += n

    def notes(self) -> list[str]:
        """One sentence per reason: ``"3 span(s) without a start time were skipped"``."""
        return [f"{n:,} {reason}" for reason, n in self.counts.items()]


def epoch_seconds(value) -> float | None:
    """A time as seconds since the Unix epoch (UTC), or None when it cannot be read.

    Reads datetimes (naive ones as UTC, as Phoenix and Langfuse write them), numpy/pandas
    timestamps, ISO 8601 text (``2025-01-02T03:04:05.123Z``, ``2025-01-02 03:04:05+00:00``) and
    numbers, whose unit is told by their size: nanoseconds above 1e17, microseconds above 1e14,
    milliseconds above 1e11 (pandas' ``to_json`` default), else seconds.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            return None
        return float(value.astype("datetime64[ns]").astype(np.int64)) / 1e9
    if isinstance(value, _dt.datetime):
        if value != value:  # pandas NaT
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        nanos = getattr(value, "nanosecond", 0)
        return (value - _EPOCH).total_seconds() + nanos / 1e9
    if isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value)
        if not math.isfinite(x):
            return None
        for scale, above in ((1e9, 1e17), (1e6, 1e14), (1e3, 1e11)):
            if abs(x) > above:
                return x / scale
        return x
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return epoch_seconds(float(text))
        except ValueError:
            pass
        try:
            parsed = _dt.datetime.fromisoformat(_ISO_Z.sub("+00:00", text))
        except ValueError:
            return _iso_fraction(text)
        return epoch_seconds(parsed)
    return None


def _iso_fraction(text: str) -> float | None:
    """ISO text whose fraction of a second has more than six digits (nanoseconds, as
    pandas writes them), which :func:`datetime.fromisoformat` of Python 3.10 refuses."""
    m = re.fullmatch(r"(.+?[T ]\d\d:\d\d:\d\d)\.(\d+)(Z|[+-]\d\d:?\d\d)?", text, re.IGNORECASE)
    if not m:
        return None
    zone = m.group(3) or "+00:00"
    try:
        base = _dt.datetime.fromisoformat(m.group(1) + ("+00:00" if zone.upper() == "Z" else zone))
    except ValueError:
        return None
    return (base - _EPOCH).total_seconds() + float("0." + m.group(2))


def scalar(value):
    """A value as an attribute scalar: str, bool, int, float or None (numpy scalars unwrapped,
    datetimes as ISO text, NaN as None)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # (the common case, first)
        return value
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


def cut_text(value, tally: Tally | None = None):
    """``value`` cut to :data:`MAX_TEXT_CHARS` when it is a longer text (counted in ``tally``)."""
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        if tally is not None:
            tally.add(f"text value(s) longer than {MAX_TEXT_CHARS:,} characters were cut")
        return value[:MAX_TEXT_CHARS] + "…"
    return value


def flatten_into(out: dict, key: str, value, tally: Tally, depth: int = 0) -> None:
    """Write ``value`` into ``out`` under dotted keys below ``key``.

    Objects become ``key.field``; lists of scalars become one tuple; lists holding objects become
    ``key.0.field`` … (the OpenTelemetry flattening that OpenInference uses); None and NaN are
    left out. At most :data:`MAX_ATTRIBUTES` keys in ``out``, nesting to :data:`MAX_DEPTH`,
    texts cut to :data:`MAX_TEXT_CHARS`: what is left out is counted in ``tally``.
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:  # (most values)
        if value is None or (kind is float and value != value):
            return
        if kind is str and len(value) > MAX_TEXT_CHARS:
            value = cut_text(value, tally)
        if key not in out and len(out) >= MAX_ATTRIBUTES:
            tally.add(f"attribute(s) beyond the {MAX_ATTRIBUTES:,} a span keeps were left out")
            return
        out[key] = value
        return
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            tally.add(f"value(s) nested deeper than {MAX_DEPTH} levels were left out")
            return
        for k, v in value.items():
            flatten_into(out, f"{key}.{k}" if key else str(k), v, tally, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (dict, list, tuple, np.ndarray)) for v in value):
            if depth >= MAX_DEPTH:
                tally.add(f"value(s) nested deeper than {MAX_DEPTH} levels were left out")
                return
            for i, v in enumerate(value):
                flatten_into(out, f"{key}.{i}", v, tally, depth + 1)
            return
        value = tuple(cut_text(scalar(v), tally) for v in value)
    else:
        value = cut_text(scalar(value), tally)
        if value is None:
            return
    if key not in out and len(out) >= MAX_ATTRIBUTES:
        tally.add(f"attribute(s) beyond the {MAX_ATTRIBUTES:,} a span keeps were left out")
        return
    out[key] = value


def content_text(content, tally: Tally | None = None) -> str:
    """A message's content as text: a text as it is; a list of parts (``{"type": "text", "text":
    …}``, OpenInference's ``message_content.text``) as their texts joined by blank lines; any
    other value as compact JSON. Cut to :data:`MAX_TEXT_CHARS`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return cut_text(content, tally)
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                text = part.get("text", part.get("message_content.text"))
                if isinstance(text, str):
                    texts.append(text)
        if texts:
            return cut_text("\n\n".join(texts), tally)
    try:
        return cut_text(json.dumps(content, ensure_ascii=False, default=str), tally)
    except (TypeError, ValueError, RecursionError):
        return ""


def parse_json_text(text: str, name: str, where: str):
    """One JSON value from ``text``, or a LogFormatError naming ``where`` (never the text)."""
    try:
        return no_lone_surrogates(json.loads(text), text.encode("utf-8", "surrogatepass"))
    except json.JSONDecodeError as exc:
        raise LogFormatError(name, [f"{where}: not valid JSON ({exc.msg}, line {exc.lineno})"]) from None
    except RecursionError:
        raise LogFormatError(name, [f"{where}: the JSON is nested too deeply to be a trace"]) from None
    except ValueError:  # an integer of thousands of digits
        raise LogFormatError(name, [f"{where}: the JSON holds a number too long to read"]) from None


def _decode(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise LogFormatError(name, [f"line {line}: the file is not valid UTF-8 text"]) from None


def json_records(raw: bytes, name: str, max_nodes: int) -> tuple[list, str]:
    """The top-level records of a JSON document or of JSON Lines, after the node cap.

    Returns
    -------
    records : list of (where, object)
        ``where`` locates each record: ``"record 3"`` for the items of one JSON document (a list,
        or an object's ``data`` list), ``"line 3"`` for JSON Lines; a single object is one record.
    layout : str
        ``"json"`` or ``"jsonl"``.

    Raises
    ------
    LogFormatError
        The file is empty, not UTF-8, not JSON, or holds more than ``max_nodes`` values.
    """
    check_nodes(raw, name, max_nodes)
    text = _decode(raw, name)
    body = text.strip()
    if not body:
        raise LogFormatError(name, ["the file is empty"])
    if body[0] not in "[{":
        raise LogFormatError(name, ["the file is not JSON: it should start with '[' or '{'"])
    try:
        whole = no_lone_surrogates(json.loads(body), raw)
    except json.JSONDecodeError:
        whole = None
    except RecursionError:
        raise LogFormatError(name, ["the JSON is nested too deeply to be a trace"]) from None
    except ValueError:
        raise LogFormatError(name, ["the JSON holds a number too long to read"]) from None
    if whole is not None:
        if isinstance(whole, dict) and isinstance(whole.get("data"), list):
            whole = whole["data"]
        items = whole if isinstance(whole, list) else [whole]
        return [(f"record {i}", r) for i, r in enumerate(items, start=1)], "json"
    records = []
    for i, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            records.append((f"line {i}", parse_json_text(line, name, f"line {i}")))
    return records, "jsonl"
