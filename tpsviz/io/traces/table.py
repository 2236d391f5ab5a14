"""Span tables as records: Parquet (nested columns kept), CSV/TSV and JSON (Lines), within the
caps of every reader (issue 36; docs/traces.md).

The long-format reader (:mod:`tpsviz.io.tables`) leaves nested Parquet columns out; a Phoenix span
table keeps its messages in such columns, so span tables are read here, row by row, as dicts.
"""

from __future__ import annotations

import ast
import io as _io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tpsviz.core.errors import LogFormatError
from tpsviz.io.traces.values import MAX_TEXT_CHARS, json_records

__all__ = ["SpanTable", "span_table", "MAX_TABLE_COLUMNS", "nested_cell"]

#: columns a span table may have (Phoenix writes one per attribute key)
MAX_TABLE_COLUMNS = 10_000
_BATCH_ROWS = 256
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)")


@dataclass
class SpanTable:
    """The rows of a span table.

    Attributes
    ----------
    rows : list of (where, dict)
        Each row's location (``"row 3"`` of a Parquet file, ``"line 4"`` of a text file,
        ``"record 2"`` of a JSON list) and its cells by column name.
    columns : list of str
    fmt : str
        ``parquet``, ``csv``, ``tsv`` or ``json``.
    eval_name : str or None
        The evaluation's name Phoenix writes in a saved evaluations file's metadata.
    """

    rows: list = field(default_factory=list)
    columns: list = field(default_factory=list)
    fmt: str = ""
    eval_name: str | None = None


def span_table(raw: bytes, name: str, *, max_spans: int, max_nodes: int, max_bytes: int) -> SpanTable:
    """The rows of a span table's bytes; the format is told by the content (Parquet's magic, a
    leading ``{`` or ``[``) and else by the extension (``.tsv`` is tab-separated, anything else
    comma-separated).

    Raises
    ------
    LogFormatError
        Empty, damaged, more than ``max_spans`` rows, more than :data:`MAX_TABLE_COLUMNS` columns,
        decoding to more than ``max_bytes`` (Parquet), or more than ``max_nodes`` JSON values.
    """
    if not raw.strip():
        raise LogFormatError(name, ["the file is empty"])
    if raw[:4] == b"PAR1":
        return _parquet(raw, name, max_spans, max_bytes)
    head = raw[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"{", b"["):
        records, _ = json_records(raw, name, max_nodes)
        if len(records) > max_spans:
            raise _too_many(name, len(records), max_spans)
        rows, columns = [], {}
        for where, rec in records:
            if not isinstance(rec, dict):
                raise LogFormatError(name, [f"{where}: each record must be a JSON object (one span)"])
            ctx = rec.get("context")
            if isinstance(ctx, dict):  # Phoenix's REST spans: {"context": {"trace_id", "span_id"}}
                rec = {**{f"context.{k}": v for k, v in ctx.items()}, **{k: v for k, v in rec.items() if k != "context"}}
            columns.update(dict.fromkeys(rec))
            if len(columns) > MAX_TABLE_COLUMNS:
                raise _too_wide(name, len(columns))
            rows.append((where, rec))
        return SpanTable(rows, list(columns), "json")
    return _delimited(raw, name, "\t" if Path(name).suffix.lower() == ".tsv" else ",", max_spans)


def _too_many(name: str, n: int, max_spans: int) -> LogFormatError:
    return LogFormatError(name, [f"the file has {n:,} rows, more than the {max_spans:,} spans this installation "
                                 "reads (TPSVIZ_MAX_ROWS); export a shorter time range"])


def _too_wide(name: str, n: int) -> LogFormatError:
    return LogFormatError(name, [f"the table has {n:,} columns, more than the {MAX_TABLE_COLUMNS:,} a span "
                                 "table may have"])


def _decoded_bytes(array) -> int:
    """Bytes an Arrow array takes once its dictionary (if any) is expanded."""
    if pa.types.is_dictionary(array.type):
        values = array.dictionary
        sizes = pc.binary_length(values) if (pa.types.is_string(values.type) or pa.types.is_binary(values.type)
                                             or pa.types.is_large_string(values.type)) else None
        if sizes is None:
            return array.nbytes
        taken = pc.take(sizes, array.indices)
        return int(pc.sum(taken).as_py() or 0) + len(array) * 8
    return array.nbytes


def _parquet(raw: bytes, name: str, max_spans: int, max_bytes: int) -> SpanTable:
    try:
        pf = pq.ParquetFile(_io.BytesIO(raw))
        n_rows = int(pf.metadata.num_rows)
        columns = [str(c) for c in pf.schema_arrow.names]
        meta = pf.schema_arrow.metadata or {}
    except Exception:  # pyarrow raises several types for damaged files
        raise LogFormatError(name, ["the Parquet file cannot be read (it is damaged or truncated)"]) from None
    if n_rows > max_spans:
        raise _too_many(name, n_rows, max_spans)
    if len(columns) > MAX_TABLE_COLUMNS:
        raise _too_wide(name, len(columns))
    table = SpanTable(columns=[c for c in columns if not c.startswith("__index_level_")], fmt="parquet",
                      eval_name=_arize_eval_name(meta))
    decoded = 0
    try:
        for batch in pf.iter_batches(batch_size=_BATCH_ROWS):
            decoded += sum(_decoded_bytes(col) for col in batch.columns)
            if decoded > max_bytes:
                raise LogFormatError(name, [f"the Parquet file decodes to more than the {max_bytes // 2**20:,} MB "
                                            "this installation reads (TPSVIZ_MAX_FILE_MB)"])
            for rec in batch.to_pylist():
                table.rows.append((f"row {len(table.rows) + 1}", rec))
    except LogFormatError:
        raise
    except Exception:
        raise LogFormatError(name, ["the Parquet file cannot be read (it is damaged or uses a type "
                                    "tpsviz cannot read)"]) from None
    return table


def _arize_eval_name(meta: dict) -> str | None:
    """The ``eval_name`` Phoenix's ``Evaluations.save`` writes in the file's ``arize`` metadata."""
    raw = meta.get(b"arize")
    if not raw:
        return None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    value = doc.get("eval_name") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def _delimited(raw: bytes, name: str, sep: str, max_spans: int) -> SpanTable:
    kind = "CSV" if sep == "," else "TSV"
    if b"\x00" in raw[:4096]:
        raise LogFormatError(name, [f"the file is named as {kind} but contains binary data, not text"])
    try:  # (pandas' C parser: no limit on a cell's length, unlike the csv module)
        df = pd.read_csv(_io.BytesIO(raw), sep=sep, dtype=str, keep_default_na=False, na_values=[""],
                         encoding="utf-8-sig", nrows=max_spans + 1)
    except UnicodeDecodeError:
        raise LogFormatError(name, ["the file is not valid UTF-8 text"]) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        detail = str(exc).split("\n")[0].replace("Error tokenizing data. C error: ", "")
        raise LogFormatError(name, [f"not a well-formed {kind} file: {detail[:200]}"]) from None
    if len(df) > max_spans:
        raise _too_many(name, len(df), max_spans)
    if df.shape[1] > MAX_TABLE_COLUMNS:
        raise _too_wide(name, df.shape[1])
    columns = [str(c).strip() for c in df.columns]
    rows = []
    # (a data row's line: the header is line 1; a cell spanning lines makes this the row's number + 1)
    for i, values in enumerate(df.itertuples(index=False, name=None), start=2):
        rows.append((f"line {i}", {c: (None if isinstance(v, float) else v) for c, v in zip(columns, values)}))
    return SpanTable(rows, columns, "tsv" if sep == "\t" else "csv")


def nested_cell(text):
    """A text cell of a CSV span table read back as the value it was written from.

    pandas writes a nested value (Phoenix's lists of messages) as its Python form
    (``[{'message.role': 'user', …}]``): read with :func:`ast.literal_eval` (literals only). Text
    that is valid JSON stays text (OpenInference keeps ``input.value`` and ``output.value`` as JSON
    text), numbers become numbers, ``true``/``false`` booleans.

    Returns
    -------
    (value, failed) : (object, bool)
        ``failed`` when the cell looks nested but cannot be read (e.g. a numpy array's form).
    """
    if not isinstance(text, str):
        return text, False
    s = text.strip()
    if re.fullmatch(r"-?(0|[1-9]\d{0,17})", s):  # (an id such as "007" stays text)
        return int(s), False
    if _NUMBER.fullmatch(s) and not re.fullmatch(r"[+-]?\d+", s):
        return float(s), False
    if s.lower() in ("true", "false"):
        return s.lower() == "true", False
    if not s or s[0] not in "[{" or len(s) > MAX_TEXT_CHARS:
        return text, False
    try:
        json.loads(s)
        return text, False
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(s), False
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return text, True
