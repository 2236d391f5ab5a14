"""Datasets: a folder or glob of Parquet (or CSV/TSV) files with the same columns, read as one log.

Evaluation teams keep months of runs as folders of Parquet files. :func:`open_dataset` turns a
folder (searched recursively, so Hive-style ``date=…/part-0.parquet`` layouts work) or a glob
pattern (``logs/2026-*/*.parquet``) into a :class:`Dataset`: the sorted list of its files,
each checked to be a regular file (and, on a shared server, to lie under the data roots with
symbolic links resolved), all of one format and with the same column names. Nothing is read
but each file's footer (Parquet) or first line (CSV): the rows stay on disk for the
out-of-core engine (:mod:`tpsviz.engines`), or are read into memory by :func:`tpsviz.load`.

Files whose name starts with ``.`` or ``_`` (``_SUCCESS``, ``.crc``) and files of other types
are skipped, and the dataset says how many (``skipped``). See docs/formats.md, "Datasets".
"""

from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import DataRoots, FileRefused, PathRefused
from tpsviz.core.schema import SEPARATORS, refuse_duplicate_columns, separator_note, show_id, sniff_separator
import csv
import pyarrow.parquet as pq

__all__ = ["Dataset", "open_dataset", "is_dataset_spec", "DATASET_FORMATS", "MAX_FILES"]

#: file types a dataset may hold, by extension
DATASET_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv"}
#: most files one dataset may list (a guard against a pattern that matches a whole disk)
MAX_FILES = 100_000
_GLOB_CHARS = set("*?[")


@dataclass(frozen=True)
class Dataset:
    """A set of files read as one long-format log.

    Attributes
    ----------
    label : str
        What the user gave (a folder or a pattern), for messages.
    files : tuple of Path
        The files, real paths, sorted by path.
    fmt : str
        ``parquet``, ``csv`` or ``tsv``.
    columns : tuple of str
        The column names every file has (in the first file's order).
    n_bytes : int
        Total size on disk.
    n_rows : int or None
        Total rows from the Parquet footers (None for CSV: unknown before reading).
    skipped : int
        Files under a folder that were not read (hidden, ``_``-prefixed or another type).
    uniform : bool
        Whether every file stores the same columns in the same order and types (Parquet
        schemas equal); if not, the out-of-core engine reads each column in the widest type
        over the files (``union_by_name``).
    delimiter : str
        CSV/TSV: the separator the files use ("," "\\t" ";" or "|", found as
        :func:`tpsviz.load` finds it); with ";", numbers are written with decimal commas.
    durations : tuple of str
        Parquet: columns some file stores as Arrow durations. pyarrow writes them as plain
        64-bit integers with the Arrow type in the file's metadata, so DuckDB would read numbers
        where :func:`tpsviz.load` reads durations (and refuses them as a log's values).
    file_layouts : tuple of (Path, tuple of str, tuple of str)
        Parquet files that are not uniform: each file with its column names and their Arrow
        types; empty otherwise.
    """

    label: str
    files: tuple
    fmt: str
    columns: tuple
    n_bytes: int
    n_rows: int | None
    skipped: int = 0
    notes: list = field(default_factory=list, compare=False)
    uniform: bool = True
    delimiter: str = ","
    durations: tuple = ()
    file_layouts: tuple = field(default=(), compare=False)

    def types_of(self, column: str) -> dict:
        """The Arrow type each of the files stores ``column`` in, by file (from
        ``file_layouts``; empty when the files are uniform or not Parquet)."""
        known = {f: dict(zip(cols, types)).get(column, "") for f, cols, types in self.file_layouts}
        return {f: known[f] for f in self.files if f in known}

    @property
    def n_files(self) -> int:
        """Number of files."""
        return len(self.files)

    def file_label(self, path) -> str:
        """A file's name relative to the dataset's common folder (for messages)."""
        base = os.path.commonpath([str(f.parent) for f in self.files]) if self.files else ""
        try:
            return str(Path(path).relative_to(base))
        except ValueError:
            return Path(path).name


def is_dataset_spec(source) -> bool:
    """True when ``source`` names a dataset: a glob pattern, or a folder that is not a
    tau2-bench results folder (one holding ``results.json``)."""
    if not isinstance(source, (str, os.PathLike)):
        return False
    text = os.fspath(source)
    p = Path(text)
    if any(ch in _GLOB_CHARS for ch in text):
        return not p.is_file()  # a file named "run[1].csv" is that file
    return p.is_dir() and not (p / "results.json").is_file()


def _candidates(spec: str, roots: DataRoots | None) -> tuple[list[str], str, bool]:
    """Paths a folder or pattern stands for (unchecked), how to name it, and whether it is a folder."""
    text = str(spec).strip()
    if not text or "\x00" in text:
        raise PathRefused("dataset") if roots is not None and roots.enabled else FileRefused(
            "the dataset path is empty")
    if roots is not None and roots.enabled:
        text = roots.expand(text)  # a path by its root's name, as pages show it (logs:/runs/*.csv)
    p = Path(text).expanduser()
    if roots is not None and roots.enabled:
        if ".." in p.parts:  # a pattern never climbs out of where it starts
            raise PathRefused("dataset")
        if not p.is_absolute():
            p = roots.roots[0] / p
    text = str(p)
    if any(ch in _GLOB_CHARS for ch in text) and not p.is_file():
        if roots is not None and roots.enabled:
            # the folder the pattern starts from must itself lie under a root: a pattern never
            # tells whether files exist elsewhere (every match is checked again below)
            fixed = []
            for part in p.parts:
                if any(ch in _GLOB_CHARS for ch in part):
                    break
                fixed.append(part)
            start = Path(os.path.realpath(Path(*fixed)))
            if not any(start == r or r in start.parents for r in roots.roots):
                raise PathRefused("dataset")
        return sorted(glob.iglob(text, recursive=True))[: 4 * MAX_FILES + 1], str(spec), False
    if roots is not None and roots.enabled:
        real = roots.resolve(text, "dataset", allow_dir=True)
    else:
        real = Path(os.path.realpath(text))
        if not (real.is_dir() or real.is_file()):
            raise FileRefused(f"{Path(text).name}: no such file or folder")
    if real.is_file():  # one file is a dataset of one file
        return [str(real)], str(spec), False
    found = []
    for dirpath, dirnames, filenames in os.walk(real):  # symbolic links to folders are not followed
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")) or "=" in d)
        found.extend(os.path.join(dirpath, f) for f in sorted(filenames))
        if len(found) > 4 * MAX_FILES:
            break
    return found, str(spec), True


def _kind(path: str) -> str | None:
    name = os.path.basename(path)
    if name.startswith((".", "_")):
        return None
    return DATASET_FORMATS.get(os.path.splitext(name)[1].lower())


def _regular(path: str, roots: DataRoots | None, label: str) -> Path:
    """The real path of a regular file (under the roots when they are on)."""
    if roots is not None and roots.enabled:
        return roots.resolve(path, label)
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode
    except OSError:
        raise FileRefused(f"{label}: cannot be opened") from None
    if not stat.S_ISREG(mode):
        raise FileRefused(f"{label}: is not a regular file")
    return real


def _columns(path: Path, fmt: str, label: str) -> tuple[tuple, int | None, tuple | str]:
    """Column names, rows (Parquet; None for text) and the layout: the column types (Parquet) or
    the separator (CSV/TSV), read from a file's footer or first line."""
    if fmt == "parquet":

        try:
            meta = pq.read_metadata(path)
            schema = meta.schema.to_arrow_schema()
            cols = tuple(schema.names)
        except Exception:  # pyarrow raises several types for a damaged footer
            raise LogFormatError(label, ["is not a readable Parquet file (its footer cannot be "
                                         "read); it may be damaged or still being written"]) from None
        refuse_duplicate_columns(list(cols), label)
        return cols, int(meta.num_rows), tuple(str(t) for t in schema.types)
    try:
        with open(path, "rb") as fh:
            head = fh.readline(1 << 20)
    except OSError:
        raise FileRefused(f"{label}: cannot be read") from None
    if not head.strip():
        raise LogFormatError(label, ["the file is empty (no header line)"])
    try:
        line = head.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise LogFormatError(label, ["the header line is not UTF-8 text"]) from None

    sep, _ = sniff_separator(line, "\t" if fmt == "tsv" else ",")  # as tpsviz.load reads the file
    cols = tuple(c.strip() for c in next(csv.reader([line], delimiter=sep)))
    refuse_duplicate_columns(list(cols), label)  # (DuckDB would rename the second one)
    return cols, None, sep


def open_dataset(spec, roots: DataRoots | None = None) -> Dataset:
    """The files a folder or glob pattern names, checked to form one log.

    Parameters
    ----------
    spec : str or PathLike
        A folder (searched recursively), a pattern (``*``, ``?``, ``[…]``; ``**`` spans
        folders) or one file.
    roots : tpsviz.io.files.DataRoots, optional
        On a shared server: the folder, the pattern's start and every file must lie under a
        root once symbolic links are resolved; a relative spec starts at the first root, and a
        spec with ``..`` is refused. Refusals are the one :class:`~tpsviz.io.files.PathRefused`
        message (no oracle on the server's files).

    Returns
    -------
    Dataset

    Raises
    ------
    LogFormatError
        No data file, files of several types, or files whose columns differ (the message
        names the first such file and the columns it lacks or adds).
    tpsviz.io.files.PathRefused, tpsviz.io.files.FileRefused
        For a spec or file that may not or cannot be opened.
    """
    paths, label, folder = _candidates(os.fspath(spec), roots)
    data, skipped = _data_files(paths, label, folder)
    fmt = data[0][1]
    files = []
    for p, _ in data:
        real = _regular(p, roots, label)
        if real not in files:
            files.append(real)
    files.sort()
    columns, n_rows, n_bytes, per_file = _read_headers(files, fmt, label)
    layouts = {(cols, layout) for _, cols, layout in per_file}
    seps = {layout for _, _, layout in per_file} if fmt != "parquet" else set()
    if len(seps) > 1:
        raise LogFormatError(label, ["the files separate their columns differently (" + ", ".join(
            sorted(SEPARATORS[x] for x in seps)) + "); every file of a dataset needs the same separator"])
    delimiter = seps.pop() if seps else ","
    durations = tuple(sorted({c for cols, types in layouts if fmt == "parquet"
                              for c, t in zip(cols, types) if t.startswith("duration")}))
    notes = []
    if delimiter != ("\t" if fmt == "tsv" else ",") and fmt != "parquet":
        notes.append(separator_note(SEPARATORS[delimiter], several=True))
    if skipped:
        notes.append(f"{skipped} file(s) in the dataset's folders were skipped (hidden, starting with "
                     "_ or not .parquet/.pq/.csv/.tsv).")
    mixed = fmt == "parquet" and len(layouts) > 1  # (each file's types: the ids' spelling depends on them)
    return Dataset(label=str(label), files=tuple(files), fmt=fmt, columns=tuple(columns),
                   n_bytes=n_bytes, n_rows=n_rows, skipped=skipped, notes=notes, uniform=len(layouts) == 1,
                   delimiter=delimiter, durations=durations,
                   file_layouts=tuple(per_file) if mixed else ())


def _data_files(paths: list[str], label: str, folder: bool) -> tuple[list, int]:
    """The data files among ``paths`` with their format, all of one format, and how many paths
    were skipped (hidden, ``_``-prefixed or of another type)."""
    kinds = [(p, _kind(p)) for p in paths]
    data = [(p, k) for p, k in kinds if k is not None]
    if not data:
        if folder:
            raise LogFormatError(label, ["is a folder with no Parquet, CSV or TSV file (read as a dataset) and "
                                         "no results.json (read as a tau2-bench results folder)"])
        raise LogFormatError(label, ["matches no Parquet, CSV or TSV file (names ending .parquet, .pq, "
                                     ".csv or .tsv; names starting with . or _ are skipped)"])
    if len(data) > MAX_FILES:
        raise LogFormatError(label, [f"matches more than {MAX_FILES:,} files; point it at a narrower "
                                     "folder or pattern"])
    fmts = sorted({k for _, k in data})
    if len(fmts) > 1:
        raise LogFormatError(label, [f"holds files of several types ({', '.join(fmts)}); a dataset is "
                                     "one type: give a pattern such as '*.parquet'"])
    return data, len(kinds) - len(data)


def _read_headers(files: list[Path], fmt: str, label: str) -> tuple:
    """(the first file's columns, total rows or None, total bytes, (file, columns, layout) of every
    file) from each file's footer or first line (:func:`_columns`), checked to have the same
    columns."""
    base = os.path.commonpath([str(f.parent) for f in files])

    def rel(f: Path) -> str:
        return show_id(str(f.relative_to(base)), 80)

    columns, n_rows, n_bytes, per_file = None, 0, 0, []
    for f in files:
        cols, rows, layout = _columns(f, fmt, f"{label}: {rel(f)}")
        per_file.append((f, cols, layout))
        n_bytes += os.stat(f).st_size
        n_rows = None if (rows is None or n_rows is None) else n_rows + rows
        if columns is None:
            columns = cols
            first = f
        elif set(cols) != set(columns):
            lacks = [c for c in columns if c not in cols]
            adds = [c for c in cols if c not in columns]
            what = "; ".join(x for x in (
                f"lacks {', '.join(show_id(c, 40) for c in lacks[:5])}" if lacks else "",
                f"adds {', '.join(show_id(c, 40) for c in adds[:5])}" if adds else "") if x)
            raise LogFormatError(label, [f"the files do not have the same columns: {rel(f)} {what} "
                                         f"(compared with {rel(first)}); every file of a dataset needs "
                                         "the same columns"])
    return columns, n_rows, n_bytes, per_file
