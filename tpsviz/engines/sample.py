"""A seeded random sample of whole runs of a dataset too large to read into memory.

The dashboard opens such a dataset on a sample (docs/architecture.md, "Engines": the views that
need step rows read a stated sample; the headline table can still be scored on all runs out of
core). Runs are drawn without replacement from the dataset's distinct (stripped) trajectory ids
in sorted order with ``numpy.random.default_rng(seed)``, so the same dataset and seed give the
same sample whatever the file order; every row of a drawn run is read. The sample stops early
when its rows would pass ``max_rows``.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..dataset import Dataset
from ..schema import show_id
from .duck import _lit, _q, _source, connect, id_column
from .onepass import _strip

__all__ = ["sample_runs"]


def sample_runs(ds: Dataset, n_runs: int, seed: int = 0, max_rows: int | None = None, mapping=(),
                threads: int | None = None, memory_limit: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The step rows of a seeded random sample of the runs of a dataset.

    Parameters
    ----------
    ds : Dataset
        From :func:`tpsviz.dataset.open_dataset`.
    n_runs : int
        Runs to draw (all of them when the dataset has fewer).
    seed : int
        Seed of the draw.
    max_rows : int, optional
        Most step rows read: runs are taken in draw order while their rows fit.
    mapping : sequence of (target, column), optional
        ``--map`` pairs (only the trajectory id's is used here).
    threads, memory_limit : optional
        As :func:`tpsviz.engines.duck.connect`.

    Returns
    -------
    frame : DataFrame
        The rows as stored (the raw frame :func:`tpsviz.from_frame` validates), with ``_where``
        naming each row's file (and row, for Parquet).
    info : dict
        ``runs_sampled``, ``runs_total``, ``rows_sampled``, ``rows_total``, ``seed`` and
        ``stopped_by_rows`` (the draw stopped at ``max_rows``).
    """
    con, spill = connect(ds, threads, memory_limit)
    try:
        source = _source(ds)
        types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {source})").fetchall())
        col = id_column(types, mapping, ds.label)
        raw = f"CAST({_q(col)} AS VARCHAR)"
        per_id = con.sql(f"SELECT {raw} AS raw, count(*) AS n FROM {source} WHERE {raw} IS NOT NULL "
                         f"GROUP BY raw ORDER BY raw").to_arrow_table()
        stripped, _, changed = _strip(per_id.column("raw"))
        runs = pa.table({"id": stripped, "n_sum": per_id.column("n")})
        if changed:  # ids stored with surrounding whitespace: one run per stripped id, in its order
            runs = runs.group_by("id").aggregate([("n_sum", "sum")]).select(["id", "n_sum_sum"])
            runs = runs.rename_columns(["id", "n_sum"])
            runs = runs.take(pc.sort_indices(runs.column("id")))
        total_runs, total_rows = runs.num_rows, int(pc.sum(per_id.column("n")).as_py() or 0)
        order = np.random.default_rng(seed).permutation(total_runs)[:max(int(n_runs), 0)]
        sizes = np.asarray(runs.column("n_sum").to_numpy())[order]
        keep = order if max_rows is None else order[np.cumsum(sizes) <= max_rows]
        picked = pc.is_in(stripped, runs.column("id").take(pa.array(keep, type=pa.int64())))
        con.register("tpsviz_sample_ids", pa.table({"raw": per_id.column("raw").filter(picked)}))
        # where each row comes from, under column names the files cannot already use
        fcol = next(f"_tpsviz_file{i or ''}" for i in range(len(types) + 1) if f"_tpsviz_file{i or ''}" not in types)
        rows_numbered = ds.fmt == "parquet" and "file_row_number" not in types
        src = _source(ds, f", filename = {_lit(fcol)}" + (", file_row_number = true" if rows_numbered else ""))
        frame = con.sql(f"SELECT * FROM {src} WHERE {raw} IN (SELECT raw FROM tpsviz_sample_ids)").to_arrow_table().to_pandas()
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    names = frame.pop(fcol).astype("category")
    files = names.cat.rename_categories([show_id(ds.file_label(f), 60) for f in names.cat.categories]).astype(str)
    if rows_numbered:
        frame["_where"] = files + " row " + (frame.pop("file_row_number") + 1).astype(str)
    else:
        frame["_where"] = files + " (a sampled run)"
    info = {"runs_sampled": int(len(keep)), "runs_total": int(total_runs), "rows_sampled": int(len(frame)),
            "rows_total": total_rows, "seed": int(seed), "stopped_by_rows": bool(len(keep) < len(order))}
    return frame, info
