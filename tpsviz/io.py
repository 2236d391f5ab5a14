"""Loading trajectory logs (docs/formats.md): :func:`load` and the types it returns.

Formats: long CSV/TSV, Parquet, JSON Lines (one object per (trajectory, step) row), and nested
JSON Lines (one trajectory per line with a ``steps`` list). The user's file is only ever read;
paths are opened as regular files of bounded size (:mod:`tpsviz.files`) and the row cap is
checked before parsing. Every defect raises :class:`LogFormatError` naming the file, the row
(line) or trajectory and the column, never a value the file holds.
"""

from __future__ import annotations

import os
from pathlib import Path

from .data import TrajectoryData
from .errors import LogFormatError
from .files import Limits, limits_from_env, read_file
from .longform import from_frame
from .tables import FORMATS, read_table

__all__ = ["TrajectoryData", "LogFormatError", "load", "from_frame", "FORMATS", "read_source"]


def read_source(source, name: str | None = None, limits: Limits | None = None) -> tuple[bytes, str]:
    """The bytes and display name of a path, bytes or binary file object (size-limited).

    Raises
    ------
    tpsviz.files.FileRefused
        For a path that is not a readable regular file, or one above ``limits.max_bytes``.
    LogFormatError
        For bytes or a file object above the size limit.
    """
    limits = limits or limits_from_env()
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = name or path.name or str(path)
        return read_file(path, limits.max_bytes, label=name), str(name)
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
    else:
        raw = source.read(limits.max_bytes + 1)
        name = name or getattr(source, "name", None)
    name = str(name or "<upload>")
    if len(raw) > limits.max_bytes:
        raise LogFormatError(name, [f"the file is larger than the {limits.max_bytes // 2**20:,} MB "
                                    "this installation reads (TPSVIZ_MAX_FILE_MB)"])
    return raw, name


def load(source, name: str | None = None, fmt: str | None = None,
         limits: Limits | None = None) -> TrajectoryData:
    """Read and validate a trajectory log.

    Parameters
    ----------
    source : str, PathLike, bytes or binary file-like
        The log. A path is opened read-only (a regular file, at most ``limits.max_bytes``);
        bytes / file objects need ``name``.
    name : str, optional
        File name used for the format (by extension) and in messages.
    fmt : {"csv", "tsv", "parquet", "jsonl"}, optional
        Override the format implied by the name.
    limits : tpsviz.files.Limits, optional
        Largest file and number of rows read (default: from ``TPSVIZ_MAX_FILE_MB`` and
        ``TPSVIZ_MAX_ROWS``).

    Returns
    -------
    TrajectoryData

    Raises
    ------
    LogFormatError
        For every defect, naming the file, row or trajectory and column.
    tpsviz.files.FileRefused
        (an ``OSError``) for a path that is missing, not a regular file or too large.
    """
    limits = limits or limits_from_env()
    raw, name = read_source(source, name, limits)
    if fmt is None:
        ext = Path(name).suffix.lower()
        fmt = FORMATS.get(ext)
        if fmt is None:
            raise LogFormatError(name, [f"unknown file type '{ext or '(none)'}'; use .csv, .tsv, "
                                        ".parquet or .jsonl"])
    df = read_table(raw, name, fmt, limits.max_rows)
    del raw
    return from_frame(df, source=name)
