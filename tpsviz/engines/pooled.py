"""The pooled metrics' counts of the out-of-core engines (docs/architecture.md, "Engines"):
per predictor, positives and negatives per distinct forecast value or per cell of a grid, and the
T-ECE's ten bins' Σ (F − Y) and counts, counted by DuckDB over the labelled rows and turned into
:class:`~tpsviz.engines.runsums.PooledCounts`.

Above :data:`EXACT_ROWS` labelled rows with more than one forecast in some cell of the
:data:`GRID`-cell grid, the rank metrics come from the grid cells, with a bound on the error
(:func:`tpsviz.engines.runsums.rank_metrics`). A row near a bin edge k/10 goes to the cell on its
side of the edge (:func:`cell_sql`), so every cell lies inside one T-ECE bin and the bins are sums
of cells.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.engines.plan import Plan
from tpsviz.engines.runsums import PooledCounts
from tpsviz.engines.sql import id_sql

__all__ = ["labelled_sql", "cell_sql", "floor_cell_sql", "grid_sql", "exact_sql", "pooled_from", "count_pooled",
           "GRID", "EXACT_ROWS", "PARTIAL"]

#: equal-width cells of the grid the pooled AUROC/AUPRC fall back to (at 20M rows the bound is
#: below 1e-5; 2^20 cells cost 2 s more for a bound near 1e-7). A multiple of 10: each of the
#: T-ECE's ten bins is a whole number of cells, so one count per cell serves both. At most 2^16:
#: a cell is then a USMALLINT, whose range DuckDB knows, and the count per cell a perfect-hash
#: aggregate (an array indexed by the cell; see tpsviz.io.dataset.duckdb_source.connect).
GRID = 65_530
#: labelled rows up to which the rank metrics are always counted on the distinct values (above it a
#: hash table of every distinct forecast costs GBs: measured 80 s and 6 GB at 15M rows)
EXACT_ROWS = 2_000_000
#: the relation (tid, y) of the runs whose outcome is given on some rows only (labelled_sql)
PARTIAL = "tpsviz_partial"


def labelled_sql(plan: Plan, source: str, clamp: bool, partial: bool = False) -> str:
    """The outcome ``y`` and the forecasts ``p<k>`` of every row, for the pooled counts
    (:func:`grid_sql`, :func:`exact_sql`) of a dataset already validated.

    Not materialized: each predictor's count reads its own columns (measured at 100M rows and 3
    predictors: 8.7 s, 10.5 s materialized, 11 s on the rows of
    :func:`tpsviz.engines.sql.rows_sql`).

    Parameters
    ----------
    plan : Plan
    source : str
        The relation of the dataset's rows.
    clamp : bool
        Every forecast set into [0, 1] (a no-op on the others), where the main pass saw one
        rounding outside it (:func:`tpsviz.engines.onepass.flagged`); NaN forecasts are left to
        the counts' filter.
    partial : bool
        Only the rows without an outcome of the runs that give it on some rows only, each
        labelled with its run's outcome from the registered table :data:`PARTIAL` (``tid``,
        ``y``), as :func:`tpsviz.load` labels them; their counts add to those of the other rows
        (docs/formats.md, "Long format").

    Returns
    -------
    str
        ``WITH scored AS NOT MATERIALIZED (…)``.
    """
    y, _ = plan.expr("outcome", "outcome")
    cols = [f"{y} AS y"]
    for k, name in enumerate(plan.conf):
        r, _ = plan.expr(name)
        # (DuckDB's least/greatest skip a NULL, and order NaN above every number: least(1, NaN) is 1;
        # a missing forecast, NULL or NaN, must stay out)
        cols.append(f"CASE WHEN {r} IS NULL OR isnan({r}) THEN NULL ELSE greatest(0.0, least(1.0, {r})) END AS p{k}"
                    if clamp else f"{r} AS p{k}")
    if not partial:
        return f"WITH scored AS NOT MATERIALIZED (SELECT {', '.join(cols)} FROM {source})\n"
    # (the stripped id, as the runs' ids are; the subquery keeps the files' column names apart
    # from the table's)
    rows = f"SELECT {id_sql(plan, stripped=True)} AS tid, {', '.join(cols)} FROM {source}"
    forecasts = "".join(f", r.p{k}" for k in range(len(plan.conf)))
    return (f"WITH scored AS NOT MATERIALIZED (SELECT part.y AS y{forecasts} FROM ({rows}) r "
            f"JOIN {PARTIAL} part ON r.tid = part.tid WHERE r.y IS NULL)\n")


def cell_sql(p: str, c: str, grid: int) -> str:
    """The grid cell of a forecast, in the T-ECE bin the forecast is in.

    ``c`` (:func:`floor_cell_sql`) moved to the neighbouring cell where the rounding of grid·p
    puts ``p`` on the wrong side of a T-ECE bin edge k/10 (as
    :func:`tpsviz.diagnostics.metrics.bin_index` sees it), so that cell // (grid / 10) is always
    the row's T-ECE bin. Only rows in a bin's first or last cell pay for the comparison.

    Parameters
    ----------
    p, c : str
        SQL expressions of the forecast and of its :func:`floor_cell_sql`.
    grid : int
        Cells (a multiple of 10).

    Returns
    -------
    str
    """
    per = grid // 10
    return (f"CASE WHEN {c} % {per} = 0 AND {p} < CAST({c} // {per} AS DOUBLE) / 10.0 THEN {c} - 1 "
            f"WHEN {c} % {per} = {per - 1} AND {c} < {grid - 1} AND {p} >= CAST({c} // {per} + 1 AS DOUBLE) / 10.0 "
            f"THEN {c} + 1 ELSE {c} END")


def floor_cell_sql(p: str, grid: int) -> str:
    """floor(grid·p) for a forecast ``p`` in [0, 1], with p = 1 in the last cell.

    Parameters
    ----------
    p : str
        An SQL expression of the forecast.
    grid : int
        Cells.

    Returns
    -------
    str
    """
    return f"least(CAST(floor({p} * {grid}.0) AS BIGINT), {grid - 1})"


def grid_sql(plan: Plan, rows_sql: str) -> str:
    """Over the labelled rows of each predictor k: per grid cell, the counts of Y = 1 and Y = 0,
    Σ (F − Y) and the cell's smallest and largest forecast.

    Cells nest in the T-ECE's ten bins (:func:`cell_sql`), so the bins are sums of cells. One
    GROUP BY per predictor: measured at 20M rows and 3 predictors 1.2 s (0.40 s a predictor)
    against 1.9 s for GROUPING SETS ((cell), (T-ECE bin)) and 5.2 s for one GROUP BY over the rows
    unpivoted to (k, p). The cell is a USMALLINT so that DuckDB counts into an array (a
    perfect-hash aggregate, :func:`tpsviz.io.dataset.duckdb_source.connect`): 20–30% less time than a
    hash table of BIGINT cells.

    Parameters
    ----------
    plan : Plan
    rows_sql : str
        ``WITH scored …`` of the rows (:func:`labelled_sql`, or
        :func:`tpsviz.engines.sql.checked_rows_sql`).

    Returns
    -------
    str
        Rows ``k``, ``cell``, ``pos``, ``neg``, ``gap``, ``pmin``, ``pmax``.
    """
    if GRID % 10 or GRID > 2 ** 16:
        raise ValueError(f"GRID must be a multiple of 10 (the T-ECE bins) and at most 2^16, not {GRID}")
    parts = []
    for k in range(len(plan.conf)):
        p = f"p{k}"
        parts.append(f"""SELECT {k} AS k, cell, sum(y) AS pos, count(*) - sum(y) AS neg, sum({p} - y) AS gap,
       min({p}) AS pmin, max({p}) AS pmax
FROM (SELECT y, {p}, CAST({cell_sql(p, "c", GRID)} AS USMALLINT) AS cell FROM (SELECT y, {p}, {floor_cell_sql(p, GRID)} AS c FROM scored
      WHERE y IS NOT NULL AND {p} IS NOT NULL AND NOT isnan({p})))
GROUP BY cell""")
    return rows_sql + "\nUNION ALL\n".join(parts)


def exact_sql(plan: Plan, rows_sql: str, need: list) -> str:
    """Counts per (predictor, distinct forecast) of the predictors in ``need``.

    Parameters
    ----------
    plan : Plan
    rows_sql : str
        ``WITH scored …`` of the rows (as :func:`grid_sql`).
    need : list of int
        The predictors' indices.

    Returns
    -------
    str
        Rows ``k``, ``p``, ``pos``, ``neg``.
    """
    return rows_sql + "\nUNION ALL\n".join(
        f"SELECT {k} AS k, p{k} AS p, sum(y) AS pos, count(*) - sum(y) AS neg FROM scored "
        f"WHERE y IS NOT NULL AND p{k} IS NOT NULL AND NOT isnan(p{k}) GROUP BY p{k}" for k in need)


def pooled_from(grid: pd.DataFrame, n_predictors: int, n_labelled_max: int, exact, combine: bool = True) -> dict:
    """PooledCounts per predictor from :func:`grid_sql` rows.

    Parameters
    ----------
    grid : DataFrame
        :func:`grid_sql`'s rows.
    n_predictors : int
    n_labelled_max : int
        Labelled rows; up to :data:`EXACT_ROWS`, predictors with several forecasts in a cell are
        counted on their distinct values instead.
    exact : callable
        ``exact(need)``: :func:`exact_sql`'s rows of the predictors ``need``.
    combine : bool
        Rows of several partitions (the same cell more than once) are combined first.

    Returns
    -------
    dict
        :class:`~tpsviz.engines.runsums.PooledCounts` by predictor index.
    """
    out = {}
    cells_all = grid
    if combine:
        cells_all = grid.groupby(["k", "cell"], as_index=False).agg(
            pos=("pos", "sum"), neg=("neg", "sum"), gap=("gap", "sum"), pmin=("pmin", "min"), pmax=("pmax", "max"))
    for k in range(n_predictors):
        cells = cells_all[cells_all["k"] == k].sort_values("cell")
        at = cells["cell"].to_numpy(dtype=np.int64) // (GRID // 10)  # the T-ECE bin of each cell
        pos, neg = cells["pos"].to_numpy(dtype=float), cells["neg"].to_numpy(dtype=float)
        gap = np.bincount(at, weights=cells["gap"].to_numpy(dtype=float), minlength=10)
        nbin = np.bincount(at, weights=pos + neg, minlength=10)
        pbin = np.bincount(at, weights=pos, minlength=10)
        single = bool((cells["pmin"] == cells["pmax"]).all())
        out[k] = PooledCounts(
            cells["pmin"].to_numpy(dtype=float) if single else cells["cell"].to_numpy(dtype=float),
            pos, neg, single, 0 if single else GRID, gap, nbin, pbin)
    need = [k for k, c in out.items() if not c.exact]
    if need and n_labelled_max <= EXACT_ROWS:
        ex = exact(need)
        if combine:
            ex = ex.groupby(["k", "p"], as_index=False)[["pos", "neg"]].sum()
        ex = ex.sort_values(["k", "p"])
        for k in need:
            e = ex[ex["k"] == k]
            old = out[k]
            out[k] = PooledCounts(e["p"].to_numpy(dtype=float), e["pos"].to_numpy(dtype=float),
                                  e["neg"].to_numpy(dtype=float), True, 0, old.tece_gap, old.tece_n,
                                  old.tece_pos)
    return out


def count_pooled(con, plan: Plan, rows_sqls: list, n_labelled_max: int) -> dict:
    """Counts for the pooled AUROC/AUPRC (distinct values, or grid cells) and T-ECE bins.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    plan : Plan
    rows_sqls : list of str
        ``WITH scored …`` of rows whose counts add up (:func:`labelled_sql`).
    n_labelled_max : int
        As :func:`pooled_from`.

    Returns
    -------
    dict
        As :func:`pooled_from`.
    """
    if not plan.conf:
        return {}

    def counts(sql_of) -> pd.DataFrame:
        return pd.concat([con.sql(sql_of(rows)).df() for rows in rows_sqls], ignore_index=True)

    return pooled_from(counts(lambda rows: grid_sql(plan, rows)), len(plan.conf), n_labelled_max,
                       lambda need: counts(lambda rows: exact_sql(plan, rows, need)), combine=len(rows_sqls) > 1)
