"""A seeded random sample of whole runs of a dataset too large to read into memory.

The dashboard opens such a dataset on a sample (docs/architecture.md, "Engines": the views that
need step rows read a stated sample; the headline table can still be scored on all runs out of
core). The sample is the ``n_runs`` distinct (stripped) trajectory ids with the smallest
``hash(id, seed)`` (DuckDB's 64-bit hash; ties by id): a seeded simple random sample without
replacement that depends only on the ids and the seed, not on the file order, and that DuckDB finds
with a top-n over the distinct ids instead of a sort. Every row of a drawn run is read. The sample
stops early when its rows would pass ``max_rows`` (runs taken in hash order).
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tpsviz.core.schema import WHITESPACE, show_id
from tpsviz.io.dataset import Dataset
from tpsviz.io.dataset.duckdb_source import (
    column_types, connect, dataset_source, id_column, id_source, id_text, quote_name, quote_text,
    refuse_duration_ids, strip_run_ids)
from tpsviz.io.file_errors import reading
from tpsviz.io.tables import read_decimal_commas

__all__ = ["sample_runs"]


def sample_runs(ds: Dataset, n_runs: int, seed: int = 0, max_rows: int | None = None, mapping=(),
                threads: int | None = None, memory_limit: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The step rows of a seeded random sample of the runs of a dataset.

    Parameters
    ----------
    ds : Dataset
        From :func:`tpsviz.io.dataset.open_dataset`.
    n_runs : int
        Runs to draw (all of them when the dataset has fewer).
    seed : int
        Seed of the draw.
    max_rows : int, optional
        Most step rows read: runs are taken in draw order while their rows fit.
    mapping : sequence of (target, column), optional
        ``--map`` pairs (only the trajectory id's is used here).
    threads, memory_limit : optional
        As :func:`tpsviz.io.dataset.duckdb_source.connect`.

    Returns
    -------
    frame : DataFrame
        The rows as stored (the raw frame :func:`tpsviz.from_frame` validates), with ``_where``
        naming each row's file (and row, for Parquet).
    info : dict
        ``runs_sampled``, ``runs_total``, ``rows_sampled``, ``rows_total``, ``seed`` and
        ``stopped_by_rows`` (the draw stopped at ``max_rows``).
    """
    with reading(ds):  # (DuckDB's errors on the files in tpsviz's words, never a line)
        return _draw(ds, n_runs, seed, max_rows, mapping, threads, memory_limit)


def _draw(ds: Dataset, n_runs: int, seed: int, max_rows, mapping, threads, memory_limit):
    """:func:`sample_runs` inside the reader of DuckDB's errors."""
    con, spill = connect(ds, threads, memory_limit)
    try:
        source = dataset_source(ds)
        types = column_types(con, source)
        col = id_column(types, mapping, ds.label)
        refuse_duration_ids(ds, col, types[col])
        spelled = id_source(ds, col)  # (ids spelled per file where the files store them in other types)
        if spelled != source:
            source, types[col] = spelled, "VARCHAR"
        raw = id_text(quote_name(col), types[col])
        con.execute(f"CREATE TEMP TABLE tpsviz_ids AS SELECT {raw} AS raw, count(*) AS n FROM {source} "
                    f"WHERE {raw} IS NOT NULL GROUP BY raw")
        ends = ", ".join(quote_text(c) for c in WHITESPACE)  # an id that starts or ends with one is stripped
        n_raw, total_rows, n_spaced = con.execute(
            f"SELECT count(*), coalesce(sum(n), 0), count(*) FILTER (WHERE left(raw, 1) IN ({ends}) "
            f"OR right(raw, 1) IN ({ends})) FROM tpsviz_ids").fetchall()[0]
        if n_spaced:  # ids stored with surrounding whitespace: one run per stripped id (rare)
            per_id = con.sql("SELECT raw, n FROM tpsviz_ids").to_arrow_table()
            stripped = strip_run_ids(per_id.column("raw"))[0]
            con.register("tpsviz_stripped", pa.table({"raw": per_id.column("raw"), "id": stripped}))
            runs = "SELECT s.id, sum(i.n) AS n FROM tpsviz_ids i JOIN tpsviz_stripped s USING (raw) GROUP BY s.id"
            total_runs = len(pc.unique(stripped))
        else:
            runs, total_runs = "SELECT raw AS id, n FROM tpsviz_ids", int(n_raw)
        drawn = con.sql(f"SELECT id, n, hash(id, {int(seed)}) AS h FROM ({runs}) ORDER BY h, id "
                        f"LIMIT {max(int(n_runs), 0)}").to_arrow_table()
        sizes = np.asarray(drawn.column("n").to_numpy(), dtype=np.int64)
        n_keep = drawn.num_rows if max_rows is None else int(np.sum(np.cumsum(sizes) <= max_rows))
        con.register("tpsviz_drawn", pa.table({"id": drawn.column("id").slice(0, n_keep)}))
        picked = ("SELECT raw FROM tpsviz_stripped WHERE id IN (SELECT id FROM tpsviz_drawn)" if n_spaced
                  else "SELECT id AS raw FROM tpsviz_drawn")
        con.execute(f"CREATE TEMP TABLE tpsviz_sample_ids AS {picked}")
        # where each row comes from, under column names the files cannot already use
        fcol = next(f"_tpsviz_file{i or ''}" for i in range(len(types) + 1) if f"_tpsviz_file{i or ''}" not in types)
        rows_numbered = ds.fmt == "parquet" and "file_row_number" not in types
        src = id_source(ds, col, f", filename = {quote_text(fcol)}" + (", file_row_number = true" if rows_numbered else ""))
        # the drawn runs' stored ids hash to at most the largest drawn hash: that cheap filter leaves
        # the id lookup a few rows in a thousand (measured at 100M rows: 0.5 s against 1.6 s)
        below = (f"hash({raw}, {int(seed)}) <= CAST({int(pc.max(drawn.column('h').slice(0, n_keep)).as_py())} "
                 "AS UBIGINT) AND " if n_keep and not n_spaced else "")
        frame = con.sql(f"SELECT * FROM {src} WHERE {below}{raw} IN (SELECT raw FROM tpsviz_sample_ids)"
                        ).to_arrow_table().to_pandas()
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    if ds.fmt != "parquet" and ds.delimiter == ";":  # decimal commas, as tpsviz.load reads such a file
        read_decimal_commas(frame, skip=(col,))
    names = frame.pop(fcol).astype("category")
    files = names.cat.rename_categories([show_id(ds.file_label(f), 60) for f in names.cat.categories]).astype(str)
    if rows_numbered:
        frame["_where"] = files + " row " + (frame.pop("file_row_number") + 1).astype(str)
    else:
        frame["_where"] = files + " (a sampled run)"
    info = {"runs_sampled": n_keep, "runs_total": int(total_runs), "rows_sampled": int(len(frame)),
            "rows_total": int(total_rows), "seed": int(seed), "stopped_by_rows": bool(n_keep < drawn.num_rows)}
    return frame, info
