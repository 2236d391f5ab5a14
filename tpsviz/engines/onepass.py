"""The DuckDB engine's main pass: one GROUP BY over the files gives every run's sums and the
extremes that show a defect (docs/architecture.md, "Engines").

:func:`tpsviz.engines.sql.checked_rows_sql` flags every row against every rule, which is what a
diagnosis needs (how many rows, an example run) but costs several times the score itself. This
pass (:func:`tpsviz.engines.sql.pass_sql`) reads each rule from per-run extremes instead: the
smallest and largest step, outcome, q_Z and weight of a run, counts of missing values, and one
count of rows with a missing or fractional step or a forecast outside [0, 1]. A sound dataset then
costs little more than its scores; a defective one is diagnosed row by row afterwards
(:func:`tpsviz.engines.sql.diagnose`), with the same messages.

- **Ids** are grouped as stored and stripped of surrounding whitespace (Python's ``str.strip``,
  as :func:`tpsviz.load`) afterwards, on one value per run. In the rare dataset where two stored
  ids strip to the same id, the pass runs again grouped by the stripped id.
- **Duplicate steps**: the steps of a run spanning fewer than 64 step numbers are distinct iff
  the bitmap of (step mod 64) has one bit per row. Runs spanning more are counted by blocks of
  64 step numbers in a second query that reads only their ids and steps.
- Runs come back sorted by id, as every engine keeps them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tpsviz.core.tps import ScoreSettings
from tpsviz.engines.plan import Plan
from tpsviz.engines.runs import Runs
from tpsviz.engines.scoretable import Lookup
from tpsviz.engines.sql import LONG_RUNS, OFFSETS, long_runs_sql, pass_sql
from tpsviz.io.dataset.duckdb_source import strip_run_ids
from tpsviz.io.tables.run_ids import MAX_STEP

__all__ = ["run_pass", "consecutive_offsets", "defects", "flagged"]


def _distinct_long(con, plan: Plan, source: str, stripped: bool, ids: pa.Array) -> dict:
    """Distinct steps of the runs ``ids`` (runs spanning 64 step numbers or more), by blocks."""
    con.register(LONG_RUNS, pa.table({"tid": ids}))
    try:
        return dict(con.sql(long_runs_sql(plan, source, stripped)).fetchall())
    finally:
        con.unregister(LONG_RUNS)


def run_pass(con, plan: Plan, source: str, settings: ScoreSettings, positional: bool = False,
             lookup: Lookup | None = None, offsets: bool = False) -> Runs:
    """One row per run, in the order of the (stripped) ids: counts, extremes and sums (see the
    module).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    plan : Plan
    source : str
        The relation of the dataset's rows.
    settings : ScoreSettings
    positional : bool
        The weight schedules read each row's position t = 1 … T in its run, by a window over each
        run or, with ``offsets``, as step − s0 with each run's s0 from the relation
        :data:`~tpsviz.engines.sql.OFFSETS` (:func:`consecutive_offsets`).
    lookup : Lookup, optional
        The verified table of a general (α, β), registered on ``con``
        (:func:`tpsviz.engines.sql.register_scores`).
    offsets : bool
        See ``positional``.

    Returns
    -------
    Runs
        ``nd`` holds each run's distinct steps; ``tid`` the stripped id.
    """
    stripped = False
    table = con.sql(pass_sql(plan, source, settings, stripped, positional, lookup, offsets)).to_arrow_table()
    # the ids sorted while they are checked for whitespace and the memory of the sorted columns
    # is mapped: the sort takes one core, 0.8–1.0 s at 4.3M runs
    with ThreadPoolExecutor(max_workers=1) as pool:
        order = pool.submit(Runs.id_order, table.column("tid"))
        ids, merged, changed = strip_run_ids(table.column("tid"))
        reserved = Runs.reserve(table)
        order = order.result()
    stored = table.num_rows
    if merged:  # two stored ids are one run: group by the stripped id
        stripped, reserved = True, {}  # (fewer runs: the memory is mapped again)
        table = con.sql(pass_sql(plan, source, settings, stripped, positional, lookup, offsets)).to_arrow_table()
    elif changed:
        table = table.set_column(table.column_names.index("tid"), "tid", ids)
    runs = Runs.sorted_by_id(table, None if changed else order)  # (stripped ids may sort otherwise)
    runs.prefetch(reserved)  # every column put in the ids' order at once, two at a time
    del reserved
    runs.merged_ids = stored - table.num_rows
    runs.ids_changed = changed
    if flagged(runs):  # a forecast outside [0, 1]: by rounding it is set into it (as tpsviz.load), else refused
        for k in range(len(plan.conf)):
            if f"last_{k}" in runs:
                last = runs.num(f"last_{k}")  # (in place: the column is read as set from here on)
                np.clip(last, 0.0, 1.0, out=last)
    # nd: the bits of (step mod 64) set, which counts the distinct steps of a run spanning fewer
    # than 64 step numbers; the others (and runs with no valid step: a NaN span) are counted by blocks
    nd = runs.num("nd")
    np.nan_to_num(nd, copy=False)  # (in place: the column is read as corrected from here on)
    with np.errstate(invalid="ignore"):
        long = ~(runs.num("smax") - runs.num("smin") < 64)
    if long.any():
        long_ids = runs.sorted_ids().filter(pa.array(long))
        # (by the stripped id, as the runs carry it, also where the pass grouped by the stored one)
        found = _distinct_long(con, plan, source, stripped or changed, long_ids)
        nd[long] = [found.get(x, 0) for x in long_ids.to_pylist()]
    return runs


def consecutive_offsets(con, runs: Runs) -> bool:
    """Whether every run's steps are consecutive, so that a row's position in its run is its
    step − s0, with s0 = its run's first step − 1; if so, register s0 of the runs where it is not
    0 as :data:`~tpsviz.engines.sql.OFFSETS` (tid, s0) for :func:`run_pass` (``offsets``).

    A join on 4.3M runs instead of a window over 100M rows: measured with steps from 0 and a
    linear schedule, 50.1 s against 79.8 s for ``tpsviz score`` at 100M rows (2026-12-03). Not
    with ids changed by stripping whitespace (the pass groups by the stored id), nor where a run
    has a gap: the window then.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    runs : Runs
        The main pass's runs.

    Returns
    -------
    bool
        Whether every run of ``n`` rows spans ``n`` step numbers (the offsets are registered).
    """
    smin, smax, n = runs.num("smin"), runs.num("smax"), runs.count("n")
    if runs.ids_changed or not bool(np.all(smax - smin + 1 == n)):
        return False
    moved = smin != 1
    con.register(OFFSETS, pa.table({"tid": runs.sorted_ids().filter(pa.array(moved)),
                                    "s0": (smin[moved] - 1).astype(np.int64)}))
    return True


def defects(plan: Plan, runs: Runs) -> bool:
    """Whether a rule is broken or a forecast was rounding outside [0, 1] somewhere (the rows are
    then counted by :func:`tpsviz.engines.sql.diagnose`).

    Parameters
    ----------
    plan : Plan
    runs : Runs
        The main pass's runs.

    Returns
    -------
    bool
    """
    ids = runs.table.column("tid")
    bad = bool(ids.null_count) or bool(pc.any(pc.equal(ids, "")).as_py())
    smin, smax = runs.num("smin"), runs.num("smax")
    with np.errstate(invalid="ignore"):
        bad |= bool((np.isnan(smax) | (smin < 0) | (smax >= MAX_STEP)).any())
        in01 = lambda v: (v == 0.0) | (v == 1.0)  # noqa: E731 (NaN is not)
        bad |= bool(((runs.num("yn") > 0) & ~(in01(runs.num("ymin")) & in01(runs.num("ymax")))).any())
        bad |= bool(runs.num("nbad", 0).sum())
        qmax = runs.num("qmax")
        bad |= bool(((runs.num("qn", 0) > 0) & (np.isnan(qmax) | (runs.num("qmin") < 0) | (qmax > 1))).any())
        wcmax = runs.num("wcmax")
        bad |= bool(((runs.num("wn", 0) > 0) & (np.isnan(wcmax) | np.isinf(wcmax) | (runs.num("wcmin") < 0))).any())
    return bad or flagged(runs)


def flagged(runs: Runs) -> bool:
    """Whether some row has a missing or fractional step, or a forecast outside [0, 1] (by
    rounding, or a defect).

    Parameters
    ----------
    runs : Runs
        The main pass's runs.

    Returns
    -------
    bool
    """
    return bool(runs.num("nflag", 0).sum())
