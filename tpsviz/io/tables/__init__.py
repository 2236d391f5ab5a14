"""Reading table files into a raw long frame (values as read; ``_where`` locates each row).

Formats: CSV, TSV, Parquet and JSON Lines (flat rows, or nested: one trajectory per line with
a ``steps`` list). The row cap is checked before a file is parsed (line count, Parquet
metadata), so a small compressed file cannot expand into memory. Messages name lines, rows
and columns, never values (docs/formats.md, "Messages").
"""

from __future__ import annotations

import codecs
import csv
import io as _io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import (
    MAX_META_CHARS, PREFIXES, canonical_name, is_log_column, nested_column, no_lone_surrogates,
    refuse_duplicate_columns, separator_note, show_id, sniff_separator)
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.compute as pc

__all__ = ["FORMATS", "read_table", "table_columns", "MISSING"]

FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
           ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
MISSING = {"", "na", "n/a", "nan", "null", "none"}
_NA_VALUES = sorted(MISSING | {m.upper() for m in MISSING} | {m.title() for m in MISSING})


def _decode(raw: bytes, name: str) -> str:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise LogFormatError(name, ["the file is UTF-16 encoded; save it as UTF-8 and load it again"])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise LogFormatError(
            name,
            [f"line {line}: the file is not valid UTF-8 text (offset {exc.start}); save it as "
             "UTF-8 and load it again"],
        ) from None


def _sniff_binary(raw: bytes, name: str, claimed: str) -> None:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        _decode(raw, name)  # raises the UTF-16 message
    if raw[:4] == b"PAR1":
        raise LogFormatError(name, [f"the file is named as {claimed} but its content is Parquet; "
                                    "rename it to .parquet"])
    if raw[:4] == b"PK\x03\x04":
        raise LogFormatError(name, [f"the file is named as {claimed} but is a zip archive"])
    if b"\x00" in raw[:4096]:
        raise LogFormatError(name, [f"the file is named as {claimed} but contains binary data, "
                                    "not text"])


def _too_many_rows(name: str, n: int, max_rows: int, what: str = "data rows") -> LogFormatError:
    return LogFormatError(name, [
        f"the file has {n:,} {what}, more than the {max_rows:,} this installation reads "
        "(TPSVIZ_MAX_ROWS); split the log or raise the limit"])


def _too_many_cells(name: str, n_rows: int, n_cols: int, max_cells: int) -> LogFormatError:
    return LogFormatError(name, [
        f"the file has {n_rows:,} rows × {n_cols:,} columns = {n_rows * n_cols:,} cells, more than the "
        f"{max_cells:,} this installation reads (TPSVIZ_MAX_CELLS); drop unused columns or raise the limit"])


#: columns a table log may have: every column costs per-column work in validation, and a
#: trajectory log has a handful of required columns, some predictors and some metadata
MAX_COLUMNS = 1_000
#: predictor and signal columns (conf_/raw_/unc_) a log may have: each is scored, bootstrapped and tested
MAX_PREDICTORS = 64
#: the header line of a CSV/TSV is read whole up to this size
MAX_HEADER_BYTES = 4 * 2**20


def _too_wide(n_columns: int, name: str) -> None:
    if n_columns > MAX_COLUMNS:
        raise LogFormatError(name, [f"the file has {n_columns:,} columns, more than the {MAX_COLUMNS:,} a "
                                    "trajectory log may have; keep the columns the analysis needs"])


def read_decimal_commas(df: pd.DataFrame, skip=()) -> None:
    """Text cells written with a decimal comma ("0,6", as in semicolon-separated files) rewritten
    with a point, in place; other text is left as it is. ``skip``: columns to leave alone (ids)."""
    for col in df.columns:
        if col in skip or not (df[col].dtype == object or pd.api.types.is_string_dtype(df[col])):
            continue
        txt = df[col].astype("string")
        comma = txt.str.fullmatch(r"\s*-?\d+,\d+\s*").fillna(False).astype(bool)
        if comma.any():
            df[col] = txt.where(~comma, txt.str.replace(",", ".", regex=False)).astype(object)


def _read_delimited(raw: bytes, name: str, sep: str, max_rows: int, max_cells: int,
                    text_columns=()) -> pd.DataFrame:
    kind = "CSV" if sep == "," else "TSV"
    _sniff_binary(raw, name, kind)
    start = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    head = raw[start:start + 1_000_000]  # slices of the head only: a large file is not copied
    notes = []
    if b"\r" in head and b"\n" not in head:  # carriage returns alone end the lines (old Mac files)
        raw = raw.replace(b"\r", b"\n")
        head = raw[start:start + 1_000_000]
        notes.append("the lines end with carriage returns only; they were read as line ends.")
    if not head.strip() and not raw[start:].strip():
        raise LogFormatError(name, ["the file is empty"])
    body = raw[start:].lstrip()
    end = body.find(b"\n", 0, MAX_HEADER_BYTES)
    if end < 0 and len(body) > MAX_HEADER_BYTES:
        raise LogFormatError(name, [f"line 1: the header is longer than {MAX_HEADER_BYTES // 2**20} MB; a log "
                                    f"has at most {MAX_COLUMNS:,} columns"])
    first_raw = (body if end < 0 else body[:end]).rstrip(b"\r")  # the whole header, never a cut one
    first = _decode(first_raw, name)
    if first.startswith(("{", "[")):
        raise LogFormatError(name, [f"the file is named as {kind} but looks like JSON; rename it "
                                    "to .jsonl (one JSON object per line)"])
    sep, label = sniff_separator(first, sep)
    if label:
        notes.append(separator_note(label))
    try:
        header = [h.strip() for h in next(csv.reader([first], delimiter=sep), [])]
    except csv.Error:
        raise LogFormatError(name, [f"line 1: the header is not a well-formed {kind} line"]) from None
    refuse_duplicate_columns(header, name)
    _too_wide(len(header), name)
    # a file may end its lines with LF, CRLF or CR alone, even mixed: count every break the parser
    # splits on (a CRLF is one), so the caps hold before parsing
    breaks = raw.count(b"\n", start) + raw.count(b"\r", start) - raw.count(b"\r\n", start)
    n_lines = breaks + (0 if raw.endswith((b"\n", b"\r")) else 1) - 1
    if n_lines > max_rows:
        raise _too_many_rows(name, n_lines, max_rows, "lines")
    if n_lines * max(len(header), 1) > max_cells:
        raise _too_many_cells(name, n_lines, len(header), max_cells)
    text_cols = {h: str for h in header if canonical_name(h) == "trajectory_id" or h in text_columns}
    try:
        df = pd.read_csv(_io.BytesIO(raw), sep=sep, dtype=text_cols, keep_default_na=False,
                         na_values=_NA_VALUES, skipinitialspace=True, encoding="utf-8-sig",
                         decimal="," if sep == ";" else ".")  # ";" files use decimal commas
    except UnicodeDecodeError:
        _decode(raw, name)  # locates the bad byte and raises
        raise LogFormatError(name, ["the file is not valid UTF-8 text"]) from None
    except pd.errors.ParserError as exc:
        raise LogFormatError(name, [f"not a well-formed {kind} file: {_parser_words(str(exc))}".strip()]) from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) > max_rows:
        raise _too_many_rows(name, len(df), max_rows)
    if sep == ";":  # a column mixing "0,6" and "0.3" stays text: read its decimal commas too
        read_decimal_commas(df)
    df["_where"] = np.arange(2, len(df) + 2)
    df.attrs["where_prefix"] = "line"
    df.attrs["notes"] = notes
    return df


def _fixed_bytes(t) -> int:
    """Bytes per value once decoded, for an Arrow type whose values all have one width (numbers,
    dates, fixed_size_binary …, also behind a dictionary); 0 for strings, binaries and nested types."""

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_nested(t):
        return 0
    try:
        return t.bit_width // 8
    except ValueError:  # variable-width types have no bit width
        return 0


def _log_bytes_as_text(table, name: str):
    """Log columns stored as bytes (a Parquet BYTE_ARRAY without the UTF-8 annotation, or
    fixed-size bytes) decoded as UTF-8 text, as the DuckDB engine decodes an id
    (:func:`tpsviz.engines.duck.id_text`). Bytes that are not UTF-8 are refused, naming the
    column: read some other way, two ids could become one, or a value could not be shown."""

    problems = []
    for i, field in enumerate(table.schema):
        typ = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if not is_log_column(field.name) or not (pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
                                                 or pa.types.is_fixed_size_binary(typ)):
            continue
        try:
            text = table.column(i).cast(typ).cast(pa.large_binary()).cast(pa.large_string())  # checks UTF-8
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            problems.append(f"column {show_id(field.name)} holds bytes that are not UTF-8 text; store its "
                            "values as text or numbers")
            continue
        table = table.set_column(i, field.name, text)
    if problems:
        raise LogFormatError(name, problems)
    return table


def _parser_words(message: str) -> str:
    """pandas' parser error in the words of the out-of-core engine
    (:mod:`tpsviz.io.file_errors`), without the parser's own jargon ("C error")."""
    detail = message.split("\n")[0].replace("Error tokenizing data. C error: ", "")
    fields = re.fullmatch(r"Expected (\d+) fields in line (\d+), saw (\d+)", detail)
    if fields:
        expected, line, found = (int(g) for g in fields.groups())
        return f"line {line} has {found} fields, more than the header's {expected}"
    quote = re.fullmatch(r"EOF inside string starting at row (\d+)", detail)
    if quote:
        return f"a quoted field that starts on line {int(quote.group(1)) + 1} is not closed"
    return detail


def _read_parquet(raw: bytes, name: str, max_rows: int, max_cells: int, max_bytes: int) -> pd.DataFrame:
    """A Parquet file's rows, once its metadata shows they fit the caps (rows, cells, decoded bytes)."""
    if not raw:
        raise LogFormatError(name, ["the file is empty"])
    if raw[:4] != b"PAR1":
        raise LogFormatError(name, [f"the file is named as Parquet but is not a Parquet file{_text_hint(raw)}"])
    pf, n_rows, header, texts, expanded = _parquet_metadata(raw, name)
    refuse_duplicate_columns(header, name)
    _too_wide(len(header), name)
    if n_rows > max_rows:
        raise _too_many_rows(name, n_rows, max_rows)
    if n_rows * max(len(header), 1) > max_cells:
        raise _too_many_cells(name, n_rows, len(header), max_cells)
    # fixed-width columns decode to rows × width bytes whatever their size on disk (a dictionary-
    # encoded fixed_size_binary column of 1 MB values is a few KB in the file)
    fixed = sum(n_rows * _fixed_bytes(f.type) for f in pf.schema_arrow)
    # decoded columns may take as much memory as the largest file read (pandas then holds ~2–3 ×
    # that at its peak): a few KB of Parquet must not ask for more than a CSV at the cap would
    if max(expanded, fixed) > max_bytes:  # the columns' decoded size, from the file's own metadata
        raise LogFormatError(name, [f"the Parquet file expands to {max(expanded, fixed) / 2**20:,.0f} MB, more "
                                    f"than the {max_bytes // 2**20:,} MB this installation reads "
                                    "(TPSVIZ_MAX_FILE_MB)"])
    try:
        df = _parquet_frame(raw, pf, header, texts, name, max_bytes)
    except LogFormatError:
        raise
    except Exception:
        raise LogFormatError(name, ["the Parquet file cannot be read (it is damaged or uses a "
                                    "type tpsviz cannot read)"]) from None
    notes = df.attrs.get("notes", [])
    df.columns = [str(c).strip() for c in df.columns]
    df = df.reset_index(drop=True)
    df["_where"] = np.arange(1, len(df) + 1)
    df.attrs["where_prefix"] = "row"
    df.attrs["notes"] = notes
    return df


def _text_hint(raw: bytes) -> str:
    """What a file named as Parquet looks like when its head is text ("" when it is not)."""
    try:
        head = raw[:200].decode("utf-8")
    except UnicodeDecodeError:
        return ""
    if head.lstrip().startswith("{"):
        return " (it looks like JSON Lines: rename it to .jsonl)"
    if "," in head:
        return " (it looks like CSV text: rename it to .csv)"
    return ""


def _is_text(t) -> bool:
    """An Arrow string or binary type (not one behind a dictionary)."""
    import pyarrow as pa  # (pyarrow: imported when a Parquet file is read)

    return pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t)


def _parquet_metadata(raw: bytes, name: str):
    """The Parquet file opened on its metadata: the file, its rows, column names, text columns and
    the uncompressed size of its row groups."""
    import pyarrow.parquet as pq  # (pyarrow: imported when a Parquet file is read)

    try:
        pf = pq.ParquetFile(_io.BytesIO(raw))
        n_rows = int(pf.metadata.num_rows)
        header = list(pf.schema_arrow.names)
        texts = [f.name for f in pf.schema_arrow if _is_text(f.type)]
        expanded = sum(int(pf.metadata.row_group(i).total_byte_size) for i in range(pf.metadata.num_row_groups))
    except Exception:  # pyarrow raises several types for damaged files
        raise LogFormatError(name, ["the Parquet file cannot be read (it is damaged or "
                                    "truncated)"]) from None
    return pf, n_rows, header, texts, expanded


def _parquet_frame(raw: bytes, pf, header: list, texts: list, name: str, max_bytes: int) -> pd.DataFrame:
    """The Parquet file's columns as a frame: nested columns left out (with a note), text columns
    decoded only once their decoded size is known to fit ``max_bytes``."""
    import pyarrow as pa  # (pyarrow: imported when a Parquet file is read)

    nested = [f.name for f in pf.schema_arrow if pa.types.is_nested(f.type)]
    needed = [f for f in pf.schema_arrow if f.name in nested and is_log_column(f.name)]
    if needed:  # (left out, it would read as a missing column: say what it holds)
        raise LogFormatError(name, [nested_column(f.name, str(f.type)) for f in needed[:5]])
    keep = [n for n in header if n not in nested]
    # nested columns (lists, structs, maps) hold no single value per row: never decoded; text columns
    # stay dictionary-encoded until their decoded size is known: one long value repeated on every
    # row is tiny on disk and huge once decoded
    table = pq.ParquetFile(_io.BytesIO(raw), read_dictionary=texts).read(columns=keep)
    dense = _decoded_text_bytes(table)
    if dense > max_bytes:
        raise LogFormatError(name, [f"the Parquet file's text columns expand to {dense / 2**20:,.0f} MB, more "
                                    f"than the {max_bytes // 2**20:,} MB this installation reads "
                                    "(TPSVIZ_MAX_FILE_MB)"])
    table = _log_bytes_as_text(table, name)
    df = table.to_pandas()
    if nested:
        df.attrs["notes"] = [f"{len(nested)} column(s) of nested type (lists, structs, maps) were left out: "
                             + ", ".join(show_id(c) for c in nested[:5])]
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype(object)
    return df


def _decoded_text_bytes(table) -> int:
    """An upper bound on the bytes the text columns of an Arrow table take once decoded: per chunk,
    its rows times its longest value."""
    import pyarrow as pa  # (pyarrow: imported when a Parquet file is read)

    dense = 0
    for col in [f.name for f in table.schema
                if _is_text(f.type.value_type if pa.types.is_dictionary(f.type) else f.type)]:
        for ch in table.column(col).chunks:
            values = ch.dictionary if pa.types.is_dictionary(ch.type) else ch
            longest = pc.max(pc.binary_length(values)).as_py() if len(values) else 0
            dense += (longest or 0) * len(ch)
    return dense


def _flatten_nested(records: list[tuple[int, dict]], name: str, max_rows: int,
                    max_cells: int) -> pd.DataFrame:
    n_rows = sum(len(r.get("steps")) for _, r in records if isinstance(r.get("steps"), list))
    if n_rows > max_rows:
        raise _too_many_rows(name, n_rows, max_rows, "steps")
    # every step row copies its trajectory's fields: count the cells that flattening makes
    cells = 0
    for _, r in records:
        steps = r.get("steps")
        if isinstance(steps, list):
            width = len(r)
            cells += sum(width + (sum(len(v) if isinstance(v, dict) else 1 for v in st.values())
                                  if isinstance(st, dict) else 1) for st in steps)
        if cells > max_cells:
            raise _too_many_cells(name, n_rows, cells // max(n_rows, 1), max_cells)
    _nested_width(records, name)
    problems: list[str] = []
    rows: list[dict] = []
    seen: dict[str, int] = {}
    groups = set(PREFIXES.values())
    for line, rec in records:
        tid = rec.get("trajectory_id")
        where = f"line {line}"
        if tid is None or str(tid).strip() == "":
            problems.append(f"{where}: the trajectory has no 'trajectory_id'")
            continue
        tid = str(tid)
        if tid in seen:
            problems.append(f"{where}: trajectory {show_id(tid)} already appeared on line {seen[tid]}")
            continue
        seen[tid] = line
        steps = rec.get("steps")
        if not isinstance(steps, list):
            problems.append(f"{where} (trajectory {show_id(tid)}): 'steps' must be a list of step "
                            "objects")
            continue
        top = {k: _cut(v) for k, v in rec.items() if k != "steps"}
        for j, st in enumerate(steps, start=1):
            swhere = f"{where}, step entry {j} (trajectory {show_id(tid)})"
            if not isinstance(st, dict):
                problems.append(f"{swhere}: each step must be a JSON object")
                continue
            row = dict(top)
            bad = False
            for key, val in st.items():
                if key in groups:
                    if not isinstance(val, dict):
                        problems.append(f"{swhere}: '{key}' must be an object of name: value")
                        bad = True
                        continue
                    for pname, pval in val.items():
                        row[f"{key}_{pname}"] = pval
                elif key in ("outcome", "censored", "q_z", "trajectory_id"):
                    if key in top and top[key] != val:
                        problems.append(f"{swhere}: '{key}' differs from the trajectory's value")
                        bad = True
                    row[key] = val
                else:
                    row[key] = val
            if bad:
                continue
            row["_where"] = f"{where}, step entry {j}"
            rows.append(row)
    if problems:
        raise LogFormatError(name, problems)
    return pd.DataFrame(rows)


def _nested_width(records: list[tuple[int, dict]], name: str) -> None:
    """Refuse a nested log whose records name more columns (or predictors) than a log may have,
    before a row is built: every distinct key of a run, a step or a conf/raw/unc object becomes a
    column of every row (adversarial pass 7: a 1 MB file with a new key per run took minutes and
    GBs to build, then was accepted or refused)."""
    groups = set(PREFIXES.values())
    columns: set[str] = set()
    forecasts: set[str] = set()
    for _, rec in records:
        columns.update(k for k in rec if k != "steps")
        steps = rec.get("steps")
        for st in steps if isinstance(steps, list) else ():
            if not isinstance(st, dict):
                continue
            for key, val in st.items():
                if key in groups and isinstance(val, dict):
                    forecasts.update(f"{key}_{p}" for p in val)
                else:
                    columns.add(key)
        if len(forecasts) > MAX_PREDICTORS:
            raise LogFormatError(name, [f"the steps name more than {MAX_PREDICTORS} predictors and signals "
                                        "(conf/raw/unc entries), more than tpsviz scores at once; split the log "
                                        "or drop fields"])
        if len(columns) + len(forecasts) > MAX_COLUMNS:
            raise LogFormatError(name, [f"the records name more than {MAX_COLUMNS:,} distinct fields (of runs, "
                                        f"steps and conf/raw/unc objects), more than the {MAX_COLUMNS:,} columns "
                                        "a trajectory log may have; keep the fields the analysis needs"])


def _cut(v):
    """A trajectory-level text copied onto every step row, cut to MAX_META_CHARS."""
    return v[:MAX_META_CHARS] + "…" if isinstance(v, str) and len(v) > MAX_META_CHARS else v


def _json_line(line: str, i: int, name: str):
    try:
        return no_lone_surrogates(json.loads(line), line.encode("utf-8", "surrogatepass"))
    except json.JSONDecodeError as exc:
        hint = ""
        if i == 1 and "," in line and not line.lstrip().startswith(("{", "[")):
            hint = " (the file looks like CSV: rename it to .csv)"
        elif "\r" in line.strip():
            hint = (" (records separated by carriage returns only: JSON Lines needs a line feed "
                    "after each record)")
        raise LogFormatError(name, [f"line {i}: not valid JSON ({exc.msg}){hint}"]) from None
    except RecursionError:
        raise LogFormatError(name, [f"line {i}: the JSON is nested too deeply to be a log"]) from None
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() digits (4,300)
        raise LogFormatError(name, [f"line {i}: the JSON holds a number too long to read"]) from None


def _read_jsonl(raw: bytes, name: str, max_rows: int, max_cells: int,
                max_nodes: int = 10_000_000) -> pd.DataFrame:
    _sniff_binary(raw, name, "JSON Lines")
    # objects and lists cost ~60 bytes each once parsed, whatever their size in the file ("{}" is 2
    # bytes): bound them, and the values between commas, before parsing (braces inside texts are
    # counted too, which only errs on the safe side)
    containers = raw.count(b"{") + raw.count(b"[")
    if containers > max_nodes:
        raise LogFormatError(name, [f"the file holds more than {max_nodes:,} JSON objects and lists "
                                    "(TPSVIZ_MAX_JSON_NODES); a log has about one per row"])
    if raw.count(b",") > max_cells:
        raise LogFormatError(name, [f"the file holds more than {max_cells:,} JSON values "
                                    "(TPSVIZ_MAX_CELLS)"])
    text = _decode(raw, name)
    if not text.strip():
        raise LogFormatError(name, ["the file is empty"])
    # JSON Lines separates records by "\n" only (a "\r\n" ending leaves a "\r" that json ignores).
    # str.splitlines would also split on \r, \x1e, \x85, U+2028 … which the row count below would
    # not see: a file of "{}\r" records would pass the row cap as one line.
    n_lines = text.count("\n") + 1
    if n_lines > max_rows + 1:
        raise _too_many_rows(name, n_lines, max_rows, "lines")
    records: list[tuple[int, dict]] = []
    cells = 0
    for i, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        obj = _json_line(line, i, name)
        if not isinstance(obj, dict):
            raise LogFormatError(name, [f"line {i}: each line must be one JSON object, got "
                                        f"{type(obj).__name__}"])
        records.append((i, obj))
        cells += len(obj)
        if cells > max_cells:  # checked while parsing: memory stays bounded by the cap
            raise _too_many_cells(name, len(records), cells // len(records), max_cells)
    nested = ["steps" in r for _, r in records]
    if any(nested):
        if not all(nested):
            first_flat = next(line for (line, _), n in zip(records, nested) if not n)
            raise LogFormatError(name, [
                f"line {first_flat}: inconsistent records: some lines are nested trajectories "
                "(with a 'steps' list) and others are flat step rows; use one layout per file"])
        return _flatten_nested(records, name, max_rows, max_cells)
    keys: set = set()
    for _, r in records:
        keys.update(r)
        if len(keys) > MAX_COLUMNS:
            _too_wide(len(keys), name)
    df = pd.DataFrame([r for _, r in records])
    df["_where"] = np.array([line for line, _ in records])
    df.attrs["where_prefix"] = "line"
    return df


def format_of(name: str, what: str, raw: bytes | None = None) -> str:
    """The table format of a file by its extension (``FORMATS``); with ``raw``, a file without a known
    extension is recognised by its first bytes (Parquet's magic, a JSON object). Otherwise a
    LogFormatError naming ``what`` the file should be (e.g. "a multi-class log")."""
    suffix = Path(name).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None and raw is not None:
        head = raw[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
        fmt = "parquet" if raw[:4] == b"PAR1" else "jsonl" if head[:1] == b"{" else None
    if fmt is None:
        raise LogFormatError(name, [f"unknown file type {show_id(suffix or '(none)')} for {what}; use .csv, .tsv, "
                                    ".parquet or .jsonl"])
    return fmt


def read_table(raw: bytes, name: str, fmt: str, max_rows: int, max_cells: int = 100_000_000,
               max_bytes: int = 1 << 30, text_columns=(), max_nodes: int = 10_000_000) -> pd.DataFrame:
    """Parse the bytes of a table file into a raw long frame.

    Parameters
    ----------
    raw : bytes
        The file's content.
    name : str
        File name for messages.
    fmt : {"csv", "tsv", "parquet", "jsonl"}
        The format.
    max_rows : int
        Largest number of rows (steps) accepted; checked before parsing.
    max_cells : int
        Largest number of cells (rows × columns) accepted; checked before parsing.
    max_bytes : int
        A Parquet file may expand to at most 4 × this (its metadata's uncompressed size).
    text_columns : iterable of str
        CSV/TSV columns read as text as they are (e.g. a column mapped to ``trajectory_id``:
        "01" and "1" stay two runs).

    Returns
    -------
    DataFrame
        Columns as read plus ``_where`` (row locations; ``attrs["where_prefix"]`` says
        "line" or "row").

    Raises
    ------
    LogFormatError
    """
    if len(raw) == 0:
        raise LogFormatError(name, ["the file is empty"])
    if fmt in ("csv", "tsv"):
        return _read_delimited(raw, name, "," if fmt == "csv" else "\t", max_rows, max_cells, tuple(text_columns))
    if fmt == "parquet":
        return _read_parquet(raw, name, max_rows, max_cells, max_bytes)
    if fmt == "jsonl":
        return _read_jsonl(raw, name, max_rows, max_cells, max_nodes)
    raise ValueError(f"unknown format {fmt!r}")


def table_columns(raw: bytes, name: str, fmt: str) -> list[str]:
    """The column names of a table file, read cheaply (header line, Parquet schema, keys of the
    first JSON lines) — for offering a column mapping. Empty when they cannot be read."""
    try:
        if fmt == "parquet":

            return [str(c) for c in pq.ParquetFile(_io.BytesIO(raw)).schema_arrow.names]
        if fmt == "jsonl":
            keys: dict = {}
            for line in raw[:1_000_000].decode("utf-8-sig", "replace").splitlines()[:50]:
                try:
                    obj = json.loads(line)
                except (json.JSONDecodeError, RecursionError):
                    continue
                if isinstance(obj, dict):
                    keys.update(dict.fromkeys(map(str, obj)))
            return list(keys)
        first = raw[:1_000_000].decode("utf-8-sig", "replace").lstrip().split("\n", 1)[0].rstrip("\r")
        sep = "\t" if fmt == "tsv" else ","
        if sep not in first:
            sep = next((s for s in (";", "\t", "|") if s in first), sep)
        return [h.strip() for h in next(csv.reader([first], delimiter=sep), [])]
    except Exception:  # a header that cannot be read offers no mapping
        return []
