"""DuckDB's errors reading a dataset's files, told as :func:`tpsviz.load` tells them: which file,
which line of a CSV/TSV file, what is wrong (docs/formats.md, "Messages"); a Parquet file that
DuckDB cannot decode (a damaged page behind a sound footer) is named as damaged.

DuckDB's own message quotes the offending line ("Original Line: …") and the server's path of the
file, so it is never shown. Where DuckDB cannot even find the file's dialect (its sniffer reads
the first rows and gives up on a line with the wrong number of fields or a quote left open) it
names no line; the file is then read with Python's ``csv`` module up to the first such line.
"""

from __future__ import annotations

import csv
import re
from contextlib import contextmanager
from pathlib import Path

from tpsviz.io.dataset import Dataset
from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import show_id

__all__ = ["reading", "csv_problem", "parquet_problem"]

_LINE = re.compile(r"CSV Error on Line: (\d+)")
_FIELDS = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")
_FILE = re.compile(r"^\s*file = (.+?)\s*$", re.M)
_SNIFFED = re.compile(r'Error when sniffing file "(.+?)"')
_FAILED = re.compile(r'(?:Failed to read file|reading file) "(.+?)"')
#: records read at most when looking for the line DuckDB's sniffer gave up on (it samples the
#: first 20,480 rows, so the line is among them)
SCAN_RECORDS = 100_000


def _file_of(message: str, ds: Dataset):
    """The dataset's file a DuckDB message names, or None."""
    found = _SNIFFED.search(message) or _FAILED.search(message) or _FILE.search(message)
    if found is None:
        return None
    named = found.group(1)
    return next((f for f in ds.files if str(f) == named or str(f).endswith("/" + named.lstrip("/"))), None)


def _fields(expected: int, found: int) -> str:
    return (f"has {found} fields, more than the header's {expected}" if found > expected
            else f"has {found} of the header's {expected} fields")


def first_bad_line(path: Path, delimiter: str, limit: int = SCAN_RECORDS) -> str | None:
    """What is wrong at the first line of a CSV file whose field count differs from its header's,
    or where a quoted field is not closed, or whose bytes are not UTF-8 (None: nothing found in
    the first ``limit`` records). Blank lines are skipped, as the readers skip them."""
    start = 1  # (the line the record being read starts on)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=delimiter, strict=True)
            header = None
            for row in reader:
                if header is None:
                    header = len(row)
                elif row and len(row) != header:
                    return f"line {start} {_fields(header, len(row))}"
                if reader.line_num > limit:
                    return None
                start = reader.line_num + 1
    except csv.Error as exc:
        if "end of data" in str(exc):  # (the words of tables._parser_words)
            return f"a quoted field that starts on line {start} is not closed"
        return f"line {reader.line_num}: a quote stands inside a field that is not quoted"
    except UnicodeDecodeError:
        return "the file is not valid UTF-8 text; save it as UTF-8 and load it again"
    except OSError:
        return None
    return None


def csv_problem(message: str, ds: Dataset) -> str | None:
    """The problem a DuckDB error message reports about a CSV/TSV file of ``ds``, in tpsviz's
    words (never the line's contents), or None when it is not a CSV reading error."""
    line = _LINE.search(message)
    sniffed = _SNIFFED.search(message)
    if line is None and sniffed is None:
        return None
    path = _file_of(message, ds)
    where = show_id(ds.file_label(path), 60) if path is not None else "a file of the dataset"
    if sniffed is not None:
        what = first_bad_line(path, ds.delimiter) if path is not None else None
        return f"{where}: not a well-formed CSV file: " + (
            what or "its rows and fields cannot be told apart (a quote left open, or lines with a different "
                    "number of fields than the header)")
    n = line.group(1)
    if "unicode" in message.lower() or "utf-8" in message.lower():
        return f"{where}: line {n}: the file is not valid UTF-8 text; save it as UTF-8 and load it again"
    fields = _FIELDS.search(message)
    if fields is not None:
        return f"{where}: not a well-formed CSV file: line {n} {_fields(int(fields.group(1)), int(fields.group(2)))}"
    return f"{where}: not a well-formed CSV file at line {n}"


def parquet_problem(message: str, ds: Dataset) -> str | None:
    """A Parquet file of ``ds`` that DuckDB failed to decode, in the in-memory reader's words, or
    None when the message names no file of the dataset."""
    path = _file_of(message, ds) if _FAILED.search(message) else None
    if path is None:
        return None
    return f"{show_id(ds.file_label(path), 60)}: the Parquet file cannot be read (it is damaged)"


@contextmanager
def reading(ds: Dataset):
    """Turn DuckDB's errors reading the files inside the block into a :class:`LogFormatError`
    (:func:`csv_problem`, :func:`parquet_problem`); other errors pass unchanged."""
    import duckdb  # (duckdb: only for datasets read out of core)

    try:
        yield
    except duckdb.Error as exc:
        problem = (parquet_problem if ds.fmt == "parquet" else csv_problem)(str(exc), ds)
        if problem is None:
            raise
        raise LogFormatError(ds.label, [problem]) from None
