"""DuckDB over a dataset's files: the sandboxed connection, SQL quoting, the relation that reads
the files, and the trajectory ids as :func:`tpsviz.load` reads them (docs/architecture.md,
"Engines"; docs/formats.md, "Trajectory ids").

What reading a sample of runs (:mod:`tpsviz.io.dataset.sample`) and the out-of-core engines
(:mod:`tpsviz.engines`) share. DuckDB runs sandboxed: it may open only the dataset's files and
a private spill folder, with extensions off and the configuration locked, and every file path,
column name and value enters the SQL quoted (:func:`quote_name`, :func:`quote_text`,
:func:`sql_double`).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import WHITESPACE, canonical_name, show_id
from tpsviz.core.wording import setting
from tpsviz.io.dataset import Dataset
from tpsviz.io.tables.run_ids import DURATION_IDS

__all__ = ["quote_name", "quote_text", "sql_double", "connect", "column_types", "dataset_source",
           "id_source", "id_text", "id_column", "refuse_duration_ids", "stripped_id", "strip_ids",
           "strip_run_ids"]

# the characters str.strip removes (tpsviz.core.schema.WHITESPACE), as a class of RE2
_SPACE = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE) + "]"


def quote_name(name: str) -> str:
    """A quoted SQL identifier.

    Parameters
    ----------
    name : str
        A column or relation name, as the files spell it.

    Returns
    -------
    str
        ``name`` in double quotes, inner double quotes doubled.
    """
    return '"' + str(name).replace('"', '""') + '"'


def quote_text(text: str) -> str:
    """A quoted SQL string literal.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        ``text`` in single quotes, inner single quotes doubled.
    """
    return "'" + str(text).replace("'", "''") + "'"


def sql_double(x: float) -> str:
    """A float as an exact SQL DOUBLE literal (its ``repr`` round-trips).

    Parameters
    ----------
    x : float

    Returns
    -------
    str
        ``CAST(<repr> AS DOUBLE)``.
    """
    return f"CAST({float(x)!r} AS DOUBLE)"


def connect(ds: Dataset, threads: int | None = None, memory_limit: str | None = None):
    """A DuckDB connection that may read the dataset's files and nothing else.

    Parameters
    ----------
    ds : Dataset
        The files the connection may open.
    threads : int, optional
        DuckDB threads (default: the machine's cores).
    memory_limit : str, optional
        DuckDB's memory limit (default ``TPSVIZ_DUCKDB_MEMORY`` or 2GB); above it DuckDB spills
        to the private folder.

    Returns
    -------
    con : duckdb.DuckDBPyConnection
    spill : str
        The connection's private spill folder (remove it when done).
    """
    import duckdb  # (here, not at the top: the core's start-up stays without DuckDB)

    spill = tempfile.mkdtemp(prefix="tpsviz-duckdb-")
    config = {"threads": int(threads or os.cpu_count() or 1),
              "memory_limit": memory_limit or os.environ.get("TPSVIZ_DUCKDB_MEMORY", "2GB"),
              "temp_directory": spill, "preserve_insertion_order": False,
              "autoinstall_known_extensions": False, "autoload_known_extensions": False,
              # a GROUP BY on integers of a known range up to 2^17 values uses an array (the default
              # stops at 2^12): the grid's counts per USMALLINT cell (engines.pooled.grid_sql) took
              # 20–30% less time at 20M rows. In the config, not a SET: cursors of the connection
              # have it too.
              "perfect_ht_threshold": 17}
    con = duckdb.connect(config=config)
    con.execute("SET enable_progress_bar = false")  # a session option (not allowed in config)
    files = [str(f) for f in ds.files]
    con.execute(f"SET allowed_paths = [{', '.join(quote_text(f) for f in files)}]")
    con.execute(f"SET allowed_directories = [{quote_text(spill)}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con, spill


def column_types(con, source: str) -> dict:
    """The DuckDB type of every column of relation ``source``, by column name.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    source : str
        A relation, e.g. :func:`dataset_source`.

    Returns
    -------
    dict
        Column name to DuckDB type name, in the relation's order.
    """
    return dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {source})").fetchall())


def dataset_source(ds: Dataset, extra: str = "") -> str:
    """The table function reading the dataset's files.

    Parameters
    ----------
    ds : Dataset
    extra : str
        More options of the table function, e.g. ``", filename = true"``.

    Returns
    -------
    str
        ``read_parquet(…)`` or ``read_csv(…)`` over every file.
    """
    files = "[" + ", ".join(quote_text(str(f)) for f in ds.files) + "]"
    if ds.fmt == "parquet":
        # Parquet writers leave NaN out of a float column's min/max, and without can_have_nan
        # DuckDB 2.0 reads those statistics as "no NaN here" and folds isnan(x) to false, so a
        # stored NaN would pass as a number (duckdb/duckdb#25521). Measured cost: none (main pass
        # at 20M rows 2.88 s with it, 2.95 s without).
        # Files whose schemas differ (ds.uniform) are read with union_by_name: each column in the
        # widest type over the files (BIGINT in one file and DOUBLE in the next read as DOUBLE; a
        # column all NULL in one file takes the others' type). Without it DuckDB casts every file
        # to the first file's types: doubles became 0 or 1 where the first file stored integers.
        # Not for uniform files: it cost ~5% at 100M rows. hive_partitioning off: folder names
        # (outcome=1/) are not columns, as tpsviz.load reads them.
        union = "" if ds.uniform else ", union_by_name = true"
        return f"read_parquet({files}, can_have_nan = true, hive_partitioning = false{union}{extra})"
    return (f"read_csv({files}, header = true, all_varchar = true, delim = {quote_text(ds.delimiter)}, "
            f"quote = '\"', union_by_name = true, hive_partitioning = false{extra})")


def _spelled_type(arrow_type: str) -> str | None:
    """The DuckDB type :func:`id_text` spells an id of this Arrow type by, where a cast of the
    files' union to text would spell it otherwise (None: a cast spells it as tpsviz does)."""
    if arrow_type == "bool":
        return "BOOLEAN"
    if arrow_type.startswith("timestamp[") and "tz=" in arrow_type:
        return "TIMESTAMP WITH TIME ZONE"
    if arrow_type in ("binary", "large_binary"):
        return "BLOB"
    return None


def id_source(ds: Dataset, col: str, extra: str = "") -> str:
    """The relation of the dataset's rows with its ids readable as :func:`tpsviz.load` reads them.

    :func:`dataset_source`, or, where the files are not uniform and some store the ids (column
    ``col``) as booleans, zone-aware timestamps or bytes, the files grouped by the ids' type,
    each group's ids spelled as text by :func:`id_text` and the groups unioned by name. Read as
    one union, DuckDB would cast such ids to text first ("true", the session's zone), unlike
    :func:`tpsviz.load` (docs/formats.md, "Trajectory ids").

    Parameters
    ----------
    ds : Dataset
    col : str
        The id column, as the files name it.
    extra : str
        More options of the table function (:func:`dataset_source`).

    Returns
    -------
    str
        A relation (a table function or a parenthesised query).
    """
    per_file = ds.types_of(col)
    if not any(_spelled_type(t) for t in per_file.values()):
        return dataset_source(ds, extra)
    groups: dict = {}
    for f, t in per_file.items():
        groups.setdefault(t, []).append(f)
    ident = quote_name(col)
    parts = [f"SELECT * REPLACE ({id_text(ident, _spelled_type(t) or 'ANY')} AS {ident}) "
             f"FROM {dataset_source(dataclasses.replace(ds, files=tuple(files), uniform=False), extra)}"
             for t, files in groups.items()]
    return "(" + " UNION ALL BY NAME ".join(parts) + ")"


def id_text(col: str, typ: str) -> str:
    """The trajectory id of column expression ``col`` as text, spelled as :func:`tpsviz.load`
    spells it.

    Bytes (BLOB) are decoded as UTF-8; bytes that are not UTF-8 give NULL, a row without an id (a
    cast would spell them as escapes instead: ``\\xE8``).

    Parameters
    ----------
    col : str
        A (quoted) column expression.
    typ : str
        Its DuckDB type.

    Returns
    -------
    str
        An SQL expression of type VARCHAR.
    """
    t = typ.strip().upper()
    if t == "VARCHAR":
        return col
    if t == "BLOB":
        return f"TRY(decode({col}))"
    # (spelled as tpsviz.io.tables.longform.id_text spells them in memory, docs/formats.md "Trajectory ids":
    # a boolean as Python's str; a time-zone-aware timestamp as its instant in UTC, whatever the
    # session's time zone, which a plain CAST would use)
    if t == "BOOLEAN":
        return f"CASE WHEN {col} THEN 'True' WHEN NOT {col} THEN 'False' END"
    if "TIME ZONE" in t or t.startswith("TIMESTAMPTZ"):
        return f"(CAST(timezone('UTC', {col}) AS VARCHAR) || '+00:00')"
    return f"CAST({col} AS VARCHAR)"


def refuse_duration_ids(ds: Dataset, col: str, typ: str) -> None:
    """Refuse an id column of durations, as :func:`tpsviz.load` does.

    Parameters
    ----------
    ds : Dataset
    col : str
        The id column.
    typ : str
        Its DuckDB type: Parquet ``INTERVAL``; pyarrow's ``duration``, which DuckDB reads as
        integers, is known from ``ds.durations``.

    Raises
    ------
    LogFormatError
        When the ids are durations.
    """
    if typ.strip().upper() == "INTERVAL" or col in ds.durations:
        raise LogFormatError(ds.label, [DURATION_IDS.replace("'trajectory_id'", show_id(col))])


def id_column(types: dict, mapping, label: str) -> str:
    """The column holding the trajectory ids (``--map trajectory_id=COL`` or its canonical name).

    Parameters
    ----------
    types : dict
        The files' columns (:func:`column_types`).
    mapping : sequence of (target, column)
        ``--map`` pairs.
    label : str
        The dataset, for messages.

    Returns
    -------
    str

    Raises
    ------
    LogFormatError
        When there is no such column.
    """
    for target, col in mapping:
        if target == "trajectory_id":
            if col not in types:
                raise LogFormatError(label, [f"{setting('map')} trajectory_id={show_id(col)}: the files have no "
                                             "such column"])
            return col
    col = next((c for c in types if canonical_name(c) == "trajectory_id"), None)
    if col is None:
        raise LogFormatError(label, ["missing required column 'trajectory_id'"])
    return col


def stripped_id(text: str) -> str:
    """Id expression ``text`` without surrounding whitespace, as Python's ``str.strip``.

    The characters of :data:`tpsviz.core.schema.WHITESPACE` (DuckDB's ``trim`` removes spaces
    only). The regular expression runs only on ids whose first or last character is whitespace.

    Parameters
    ----------
    text : str
        An SQL expression of type VARCHAR.

    Returns
    -------
    str
        An SQL expression of type VARCHAR.
    """
    codes = ", ".join(str(ord(c)) for c in WHITESPACE)
    return (f"(CASE WHEN unicode({text}) IN ({codes}) OR unicode(right({text}, 1)) IN ({codes}) "
            f"THEN regexp_replace({text}, {quote_text(f'^{_SPACE}+|{_SPACE}+$')}, '', 'g') ELSE {text} END)")


def _maybe_padded(ids: pa.Array) -> np.ndarray:
    """Positions of the ids that start or end with whitespace, by one regular expression over
    the Arrow array: its answer is a bitmap. (The first and last characters as new arrays of
    strings took 0.2–1.7 s at 4.3M runs on this VM, with the hour: fresh memory; this takes
    0.16–0.19 s, 2026-12-03.)"""
    hit = pc.match_substring_regex(ids, f"^{_SPACE}|{_SPACE}$").fill_null(False)
    return pc.indices_nonzero(hit).to_numpy().astype(np.intp)


def strip_ids(ids) -> tuple[pa.Array, bool]:
    """Ids stripped of surrounding whitespace, as ``str.strip``.

    Only ids that start or end with whitespace (:func:`_maybe_padded`) are touched.

    Parameters
    ----------
    ids : pyarrow.Array or pyarrow.ChunkedArray
        Ids as text.

    Returns
    -------
    ids : pyarrow.Array
        The stripped ids (the array given, combined, when none changed).
    changed : bool
        Whether any id changed.
    """
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    at = _maybe_padded(ids)
    if not at.size:
        return ids, False
    texts = ids.take(pa.array(at)).to_pylist()
    hit = [i for i, v in enumerate(texts) if v is not None and v != v.strip()]
    if not hit:
        return ids, False
    values = ids.to_numpy(zero_copy_only=False).copy()
    values[at[hit]] = [texts[i].strip() for i in hit]
    return pa.array(values, type=pa.string()), True


def strip_run_ids(ids) -> tuple[pa.Array, bool, bool]:
    """The ids of distinct runs stripped (:func:`strip_ids`), and what stripping did to them.

    Parameters
    ----------
    ids : pyarrow.Array or pyarrow.ChunkedArray
        One id per run, distinct as stored.

    Returns
    -------
    ids : pyarrow.Array
        The stripped ids.
    merged : bool
        Whether two runs now share an id (they are one run).
    changed : bool
        Whether any id changed.
    """
    out, changed = strip_ids(ids)
    return out, changed and len(pc.unique(out)) < len(out), changed
