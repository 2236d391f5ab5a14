"""The DuckDB engine's main pass: one GROUP BY over the files gives every run's sums and the
extremes that show a defect (docs/architecture.md, "Engines").

:func:`tpsviz.engines.duck._rows_sql` flags every row against every rule, which is what a
diagnosis needs (how many rows, an example run) but costs several times the score itself. This
pass reads each rule from per-run extremes instead: the smallest and largest step, outcome,
q_Z and weight of a run, counts of missing values, and one count of rows with a missing or
fractional step or a forecast outside [0, 1]. A sound dataset then costs
little more than its scores; a defective one is diagnosed row by row afterwards
(:func:`tpsviz.engines.duck._diagnose`), with the same messages.

- **Ids** are grouped as stored and stripped of surrounding whitespace (Python's ``str.strip``,
  as :func:`tpsviz.load`) afterwards, on one value per run. In the rare dataset where two stored
  ids strip to the same id, the pass runs again grouped by the stripped id.
- **Duplicate steps**: the steps of a run spanning fewer than 64 step numbers are distinct iff
  the bitmap of (step mod 64) has one bit per row. Runs spanning more are counted by blocks of
  64 step numbers in a second query that reads only their ids and steps.
- Runs come back sorted by id, as every engine keeps them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tpsviz.io.run_ids import MAX_STEP
from tpsviz.core.schema import WHITESPACE
from tpsviz.core.tps import ScoreSettings
from tpsviz.engines.duck import (
    STEP_BIT, _Plan, _Runs, _f, _q, _score_sql, id_text, is_integer, nan_free, stripped_id,
    weight_sql)
from tpsviz.engines.scoretable import Lookup

__all__ = ["run_pass", "rows_sql", "labelled_sql", "defects", "flagged", "strip_ids"]

_FUZZ = 1e-9  # forecasts this far outside [0, 1] are float rounding, set to 0 or 1 (as tpsviz.load)
OFFSETS = "tpsviz_offsets"  # (tid, s0): runs whose steps are consecutive but do not start at 1


def _id_sql(plan: _Plan, stripped: bool) -> str:
    col = _q(plan.col["trajectory_id"])
    text = id_text(col, plan.types["trajectory_id"])
    return stripped_id(text) if stripped else text


def rows_sql(plan: _Plan, source: str, stripped: bool = False) -> tuple[str, bool]:
    """``SELECT`` of the parsed step rows (``tid``, ``step_d``, ``step``, ``y``, ``c``, ``q``,
    ``wcol``, forecasts ``r<k>`` as given and, where a column holds text, ``bad_text``: a value
    that is not a number), and whether ``bad_text`` is there."""
    step_d, step_bad = plan.expr("step")
    y, y_bad = plan.expr("outcome", "outcome")
    cens, c_bad = plan.expr("censored", "bool")
    q, q_bad = plan.expr("q_z")
    wcol, w_bad = plan.expr("weight")
    step = (f"CAST({_q(plan.col['step'])} AS BIGINT)" if "step" in plan.col and is_integer(plan.types["step"], bigint=True)
            else f"TRY_CAST({step_d} AS BIGINT)")
    cols = [f"{_id_sql(plan, stripped)} AS tid", f"{step_d} AS step_d", f"{step} AS step", f"{y} AS y",
            f"{cens} AS c", f"{q} AS q", f"{wcol} AS wcol"]
    bad = [b for b in (step_bad, y_bad, c_bad, q_bad, w_bad) if b != "FALSE"]
    for k, name in enumerate(plan.conf):
        v, b = plan.expr(name)
        # (a numeric column's value is NaN-free already: no second isnan on every row)
        cols.append(f"{v} AS r{k}" if nan_free(plan.types[name]) else f"CASE WHEN isnan({v}) THEN NULL ELSE {v} END AS r{k}")
        if b != "FALSE":
            bad.append(b)
    if bad:
        cols.append(f"({' OR '.join(f'({b})' for b in bad)}) AS bad_text")
    return f"SELECT {', '.join(cols)} FROM {source}", bool(bad)


def labelled_sql(plan: _Plan, source: str, clamp: bool, partial: bool = False) -> str:
    """``WITH scored AS NOT MATERIALIZED (…)``: the outcome ``y`` and the forecasts ``p<k>`` of every row, for the
    pooled counts (:func:`tpsviz.engines.duck.grid_sql`) of a dataset already validated. With
    ``clamp`` (the pass saw a forecast rounding outside [0, 1]: :func:`flagged`), every forecast
    is set into [0, 1] (a no-op on the others); NaN forecasts are left to the counts' filter.
    Not materialized: each predictor's count reads its own columns
    (measured at 100M rows and 3 predictors: 8.7 s, 10.5 s materialized, 11 s on the rows of
    :func:`rows_sql`).

    With ``partial``: only the rows without an outcome of the runs that give it on some rows
    only, each labelled with its run's outcome from the registered table ``tpsviz_partial``
    (``tid``, ``y``), as :func:`tpsviz.load` labels them; their counts add to those of the
    other rows (docs/formats.md, "Long format")."""
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
    rows = f"SELECT {_id_sql(plan, stripped=True)} AS tid, {', '.join(cols)} FROM {source}"
    forecasts = "".join(f", r.p{k}" for k in range(len(plan.conf)))
    return (f"WITH scored AS NOT MATERIALIZED (SELECT part.y AS y{forecasts} FROM ({rows}) r "
            "JOIN tpsviz_partial part ON r.tid = part.tid WHERE r.y IS NULL)\n")


def _count_if(condition: str) -> str:
    """The rows where ``condition`` holds, as BIGINT: ``count_if`` sums into a HUGEINT (Arrow would
    return decimals), and is NULL, not 0, where ``condition`` is NULL on every row of a run.
    Faster than ``count(*) FILTER (WHERE …)``: the main pass at 100M rows took 9.06–9.26 s against
    9.41–9.86 s, alternating, 2026-12-03."""
    return f"CAST(coalesce(count_if({condition}), 0) AS BIGINT)"


def _aggregates(plan: _Plan, settings: ScoreSettings, text: bool, lookup: Lookup | None = None) -> list[str]:
    """Everything a run needs, as ``aggregate AS name`` (the names of duck._aggregates where
    they mean the same). With ``lookup``, a general (α, β) is scored by the verified table in
    SQL (:mod:`tpsviz.engines.scoretable`)."""
    sch = settings.schedule.name
    # one count of rows that break a rule no other aggregate shows (a missing or fractional step, a
    # forecast outside [0, 1], be it by rounding): fewer aggregate states, a faster pass at 100M rows
    flag = ["step_d IS NULL"]
    if "step" in plan.col and not is_integer(plan.types["step"]):
        flag.append("step_d <> floor(step_d)")
    flag += [f"r{k} < 0.0 OR r{k} > 1.0" for k in range(len(plan.conf))]
    a = ["count(*) AS n", "min(step_d) AS smin", "max(step_d) AS smax", f"bit_count(bit_or({STEP_BIT})) AS nd",
         "min(y) AS ymin", "max(y) AS ymax", "count(y) AS yn", f"{_count_if(' OR '.join(flag))} AS nflag"]
    if text:
        a.append(f"{_count_if('bad_text')} AS nbad")
    if "censored" in plan.col:
        a += ["min(c) AS cmin", "max(c) AS cmax", "count(c) AS cn"]
    if "q_z" in plan.col:
        a += ["min(q) AS qmin", "max(q) AS qmax", "count(q) AS qn"]
    if "weight" in plan.col:
        a += ["min(wcol) AS wcmin", "max(wcol) AS wcmax", "count(wcol) AS wn"]
    if sch == "column":
        a.append(f"{_count_if('wcol IS NULL')} AS wnull")
    if sch in ("column", "linear", "front", "back"):
        a += ["max(w) AS wmax", f"{_count_if('w = 0')} AS wzero", f"{_count_if('isinf(w)')} AS winf"]
    weighted = sch in ("column", "linear", "front", "back")
    eps = float(settings.eps)
    for k in range(len(plan.conf)):
        r = f"r{k}"  # (as given: a forecast outside [0, 1] is flagged above and counts the same set into it)
        s = {}
        for branch in (1, 0):  # pc<k>: the forecast clipped to [ε, 1 − ε] (_pass_sql)
            s[branch] = (lookup.score(k, branch) if lookup is not None else
                         _score_sql(f"pc{k}", branch, settings.alpha, settings.beta) or f"tps_s{branch}(pc{k})")
            if weighted:  # (a zero weight's term is 0, also where ε = 0 makes the score −∞)
                s[branch] = f"CASE WHEN w = 0 THEN 0.0 ELSE w * ({s[branch]}) END"
        # S(p, 1) on rows of runs that succeeded or were censored, S(p, 0) on those that failed or
        # were censored; a missing forecast scores NULL, which sum() leaves out. An outcome other
        # than 0, 1 or empty is refused afterwards (defects), so "not 0" reads as "1 or empty".
        # (Spelled "p IS NOT NULL AND (y IS NULL OR y = 1)", the pass took 2.9 s against 2.2 s at 20M
        # rows, best of 5.)
        a += [f"sum(CASE WHEN y = 0.0 THEN NULL ELSE {s[1]} END) AS a1_{k}",
              f"sum(CASE WHEN y = 1.0 THEN NULL ELSE {s[0]} END) AS a0_{k}",
              f"count({r}) AS np_{k}",
              # (arg_max skips the rows where {r} is NULL; run_pass sets the last forecast into [0, 1])
              f"arg_max({r}, step) AS last_{k}"]
        if eps > 0:
            a.append(f"{_count_if(f'{r} < {_f(eps)} OR {r} > {_f(1.0 - eps)}')} AS cl_{k}")
        if weighted:
            a.append(f"sum(CASE WHEN {r} IS NOT NULL THEN w ELSE 0.0 END) AS w_{k}")
        if sch == "endpoint":  # the score on the run's last row, and whether that row has a forecast
            a += [f"arg_max_null(CASE WHEN y = 0.0 THEN NULL ELSE {s[1]} END, step) AS e1_{k}",
                  f"arg_max_null(CASE WHEN y = 1.0 THEN NULL ELSE {s[0]} END, step) AS e0_{k}",
                  f"arg_max_null({r} IS NOT NULL, step) AS ep_{k}"]
    return a


def _pass_sql(plan: _Plan, source: str, settings: ScoreSettings, stripped: bool, positional: bool,
              lookup: Lookup | None = None, offsets: bool = False) -> str:
    rows, bad = rows_sql(plan, source, stripped)
    if positional and offsets:  # runs of consecutive steps: t = step − (first step − 1), by a join
        rows = (f"SELECT r.*, r.step - coalesce(o.s0, 0) AS t FROM ({rows}) r "
                f"LEFT JOIN {OFFSETS} o ON o.tid = r.tid")
    elif positional:
        rows = f"SELECT *, row_number() OVER (PARTITION BY tid ORDER BY step) AS t FROM ({rows})"
    w = weight_sql(settings, positional)
    eps = float(settings.eps)
    # each forecast clipped to [ε, 1 − ε] (to [0, 1] where ε = 0, which sets a forecast rounding
    # outside it into it, as tpsviz.load) once, as a column the scores read, straight from the
    # value given (clamping first is one projection more: 4.2–4.7 s of CPU against 4.7–5.4 s for
    # the pass at 20M rows, medians of 4–5 runs; at 100M rows no difference showed through the
    # noise); by a CASE, not least/greatest, which skip a NULL (least(1 − ε, NULL) is 1 − ε): a
    # missing forecast stays NULL
    lo, hi = _f(eps), _f(1.0 - eps)
    clipped = "".join(f", CASE WHEN r{k} < {lo} THEN {lo} WHEN r{k} > {hi} THEN {hi} ELSE r{k} END AS pc{k}"
                      for k in range(len(plan.conf)))
    rows = f"SELECT *, {w or '1.0'} AS w{clipped} FROM ({rows})"
    if lookup is not None:  # each forecast's place on the table's grid, and its interval's coefficients
        rows = lookup.located(f"({rows})", len(plan.conf))
    # in no order: the runs are sorted by id afterwards (_Runs.sorted_by_id; an ORDER BY here
    # sorts all the aggregates with the ids, measured at 4.3M runs: +2.7-3.3 s against 0.7-1.0 s)
    return f"SELECT tid, {', '.join(_aggregates(plan, settings, bad, lookup))} FROM ({rows}) GROUP BY tid"


# the characters str.strip removes (tpsviz.core.schema.WHITESPACE), as a class of RE2
_SPACE = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE) + "]"


def _maybe_padded(ids: pa.Array) -> np.ndarray:
    """Positions of the ids that start or end with whitespace, by one regular expression over
    the Arrow array: its answer is a bitmap. (The first and last characters as new arrays of
    strings took 0.2–1.7 s at 4.3M runs on this VM, with the hour: fresh memory; this takes
    0.16–0.19 s, 2026-12-03.)"""
    hit = pc.match_substring_regex(ids, f"^{_SPACE}|{_SPACE}$").fill_null(False)
    return pc.indices_nonzero(hit).to_numpy().astype(np.intp)


def strip_ids(ids) -> tuple[pa.Array, bool]:
    """Ids (an Arrow string array) stripped of surrounding whitespace, as ``str.strip``, and
    whether any id changed. Only ids that start or end with whitespace (:func:`_maybe_padded`)
    are touched."""
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


def _strip(ids: pa.Array) -> tuple[pa.Array, bool, bool]:
    """Ids of distinct runs stripped (:func:`strip_ids`), whether two runs now share an id, and
    whether any id changed."""
    out, changed = strip_ids(ids)
    return out, changed and len(pc.unique(out)) < len(out), changed


def _distinct_long(con, plan: _Plan, source: str, stripped: bool, ids: pa.Array) -> dict:
    """Distinct steps of the runs ``ids`` (runs spanning 64 step numbers or more), by blocks."""
    con.register("tpsviz_long_runs", pa.table({"tid": ids}))
    try:
        rows, _ = rows_sql(plan, source, stripped)
        sql = (f"SELECT tid, sum(bit_count(bits)) AS nd FROM (SELECT tid, step >> 6 AS blk, "
               f"bit_or({STEP_BIT}) AS bits FROM ({rows}) "
               f"WHERE tid IN (SELECT tid FROM tpsviz_long_runs) GROUP BY tid, blk) GROUP BY tid")
        return dict(con.sql(sql).fetchall())
    finally:
        con.unregister("tpsviz_long_runs")


def run_pass(con, plan: _Plan, source: str, settings: ScoreSettings, positional: bool = False,
             lookup: Lookup | None = None, offsets: bool = False) -> _Runs:
    """One row per run, in the order of the (stripped) ids: counts, extremes and sums (see the
    module).

    ``nd`` holds each run's distinct steps; ``tid`` the stripped id. ``lookup``: the verified
    table of a general (α, β), registered on ``con`` (:func:`tpsviz.engines.scoretable.register`).
    ``positional``: the weight schedules read each row's position t = 1 … T in its run, by a
    window over each run or, with ``offsets``, as step − s0 with each run's s0 from the relation
    ``tpsviz_offsets`` (:func:`consecutive_offsets`).
    """
    from concurrent.futures import ThreadPoolExecutor

    stripped = False
    table = con.sql(_pass_sql(plan, source, settings, stripped, positional, lookup, offsets)).to_arrow_table()
    # the ids sorted while they are checked for whitespace and the memory of the sorted columns
    # is mapped: the sort takes one core, 0.8–1.0 s at 4.3M runs
    with ThreadPoolExecutor(max_workers=1) as pool:
        order = pool.submit(_Runs.id_order, table.column("tid"))
        ids, merged, changed = _strip(table.column("tid"))
        reserved = _Runs.reserve(table)
        order = order.result()
    stored = table.num_rows
    if merged:  # two stored ids are one run: group by the stripped id
        stripped, reserved = True, {}  # (fewer runs: the memory is mapped again)
        table = con.sql(_pass_sql(plan, source, settings, stripped, positional, lookup, offsets)).to_arrow_table()
    elif changed:
        table = table.set_column(table.column_names.index("tid"), "tid", ids)
    runs = _Runs.sorted_by_id(table, None if changed else order)  # (stripped ids may sort otherwise)
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


def consecutive_offsets(con, runs: _Runs) -> bool:
    """Whether every run's steps are consecutive (a run of n rows spans n step numbers), so that
    a row's position in its run is its step − s0, with s0 = its run's first step − 1; if so,
    register s0 of the runs where it is not 0 as ``tpsviz_offsets`` (tid, s0) for
    :func:`run_pass` (``offsets``). A join on 4.3M runs instead of a window over 100M rows:
    measured with steps from 0 and a linear schedule, 50.1 s against 79.8 s for ``tpsviz score``
    at 100M rows (2026-12-03). Not with ids changed by stripping whitespace (the pass groups by
    the stored id), nor where a run has a gap: the window then."""
    smin, smax, n = runs.num("smin"), runs.num("smax"), runs.count("n")
    if runs.ids_changed or not bool(np.all(smax - smin + 1 == n)):
        return False
    moved = smin != 1
    con.register(OFFSETS, pa.table({"tid": runs.sorted_ids().filter(pa.array(moved)),
                                    "s0": (smin[moved] - 1).astype(np.int64)}))
    return True


def defects(plan: _Plan, runs: _Runs) -> bool:
    """Whether a rule is broken or a forecast was rounding outside [0, 1] somewhere (the rows are
    then counted by :func:`tpsviz.engines.duck._diagnose`)."""
    ids = runs._t.column("tid")
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


def flagged(runs: _Runs) -> bool:
    """Whether some row has a missing or fractional step, or a forecast outside [0, 1] (by
    rounding, or a defect)."""
    return bool(runs.num("nflag", 0).sum())
