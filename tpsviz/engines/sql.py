"""The SQL of the DuckDB engine (docs/architecture.md, "Engines"): every query it runs over a
dataset's rows, written from a :class:`~tpsviz.engines.plan.Plan`.

- **Scores**: the log score (α = β = 0), half the Brier score (α = β = 1) and the boosting score
  (α = β = −½) are closed forms (:func:`score_sql`), written as :mod:`tpsviz.core._fast.kernels`
  evaluates them (ln(1 − p) and √(p/(1 − p)) straight from p below p = 1e-4); every other
  (α, β) is scored as :func:`tpsviz.beta_score` scores the whole log: from ``TABLE_MIN`` rows by
  its verified table evaluated in SQL (:mod:`tpsviz.engines.scoretable`), else, and on the rows
  the table does not cover, by an Arrow UDF calling it (:func:`register_scores`); so every
  engine gives every row the same value.
- **The main pass** (:func:`pass_sql`, run by :func:`tpsviz.engines.onepass.run_pass`): one
  GROUP BY over the files giving each run's sums and the extremes that show a defect.
- **The checked rows** (:func:`checked_rows_sql`): every row parsed, flagged against every rule
  and scored; what a diagnosis (:func:`diagnose`) and the Dask engine's partial aggregates per
  (run, block of 64 step numbers) (:func:`block_sql`, :func:`combine_sql`, :func:`per_run_sql`)
  read.

The pooled metrics' counts have their own module (:mod:`tpsviz.engines.pooled`).
"""

from __future__ import annotations

from tpsviz.core.scores import TABLE_MIN
from tpsviz.core.tps import ScoreSettings
from tpsviz.engines.plan import Plan, is_integer, nan_free
from tpsviz.engines.scoretable import Lookup, register, register_udf
from tpsviz.io.dataset.duckdb_source import id_text, quote_name, sql_double, stripped_id
from tpsviz.io.tables.run_ids import MAX_STEP

__all__ = ["score_sql", "register_scores", "weight_sql", "id_sql", "rows_sql", "pass_aggregates", "pass_sql",
           "long_runs_sql", "checked_rows_sql", "partial_aggregates", "block_sql", "combine_sql",
           "per_run_sql", "diagnose", "STEP_BIT", "OFFSETS", "LONG_RUNS"]

_SMALL_P = 1e-4  # as tpsviz.core._fast.kernels: ln(1 - p) by its series below this
#: a row's bit in its run's bitmap of step numbers mod 64 (bit-ORed: distinct steps = bits set)
STEP_BIT = "CAST(1 AS UBIGINT) << CAST(step & 63 AS UBIGINT)"
#: the relation (tid, s0) of runs whose steps are consecutive but do not start at 1 (pass_sql)
OFFSETS = "tpsviz_offsets"
#: the relation (tid) of runs spanning 64 step numbers or more (long_runs_sql)
LONG_RUNS = "tpsviz_long_runs"


def score_sql(p: str, branch: int, alpha: float, beta: float) -> str | None:
    """S(p, branch) in SQL where a closed form is exact.

    Parameters
    ----------
    p : str
        The forecast, an SQL expression (clipped to [ε, 1 − ε] already).
    branch : int
        1 for S(p, 1), 0 for S(p, 0).
    alpha, beta : float
        The score.

    Returns
    -------
    str or None
        None where no closed form is exact (:func:`register_scores` then).
    """
    if (alpha, beta) == (0.0, 0.0):
        if branch == 1:
            return f"ln({p})"
        series = f"-({p} * (1.0 + {p} * (0.5 + {p} * ({sql_double(1 / 3)} + {p} * (0.25 + {p} * 0.2)))))"
        return f"CASE WHEN {p} < {sql_double(_SMALL_P)} THEN {series} ELSE ln(1.0 - {p}) END"
    if (alpha, beta) == (1.0, 1.0):
        d = f"(1.0 - {p})" if branch == 1 else p
        return f"(-0.5 * ({d} * {d}))"
    if (alpha, beta) == (-0.5, -0.5):  # boosting: −2 √((1 − x)/x), x = p or 1 − p (p = 0 or 1: −∞ or −0)
        if branch == 1:
            return f"(-2.0 * sqrt((1.0 - {p}) / {p}))"
        x = f"(1.0 - {p})"
        return (f"CASE WHEN {p} < {sql_double(_SMALL_P)} THEN -2.0 * sqrt({p} / (1.0 - {p})) "
                f"ELSE -2.0 * sqrt((1.0 - {x}) / {x}) END")
    return None


def register_scores(con, settings: ScoreSettings, n_rows: int) -> Lookup | None:
    """Register on ``con`` what a general (α, β) is scored by.

    The UDFs ``tps_s1``/``tps_s0`` (:func:`tpsviz.engines.scoretable.register_udf`) and, for a
    log of ``n_rows`` ≥ TABLE_MIN rows (where :func:`tpsviz.beta_score` uses its verified table
    on the whole log), that table in SQL (the UDF then scores only the rows off the table).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    settings : ScoreSettings
    n_rows : int
        Rows of the whole log (a partition of it is scored as the whole log is).

    Returns
    -------
    Lookup or None
        The table in SQL; None for the closed forms (:func:`score_sql`), or with no table.
    """
    if score_sql("p", 1, settings.alpha, settings.beta) is not None:  # a closed form
        return None
    table = n_rows >= TABLE_MIN
    register_udf(con, settings.alpha, settings.beta, table)
    if not table:
        return None
    return register(con, settings.alpha, settings.beta)


def weight_sql(settings: ScoreSettings, positional: bool) -> str | None:
    """w_t of a row in SQL, from ``step`` or from its position ``t`` in the run.

    Parameters
    ----------
    settings : ScoreSettings
        Its schedule.
    positional : bool
        Whether the rows have their position ``t`` in the run (runs not numbered 1..T).

    Returns
    -------
    str or None
        None where every row weighs 1 (uniform, per-length and endpoint: their per-run factor
        comes later); ``wcol`` (the ``weight`` column) for the column schedule.
    """
    sch = settings.schedule
    t = "CAST(t AS DOUBLE)" if positional else "CAST(step AS DOUBLE)"
    if sch.name == "linear":
        return t
    if sch.name == "front":
        return f"pow({sql_double(sch.gamma or 1.0)}, {t} - 1.0)"
    if sch.name == "back":
        return f"pow({sql_double(sch.gamma or 1.0)}, {sql_double(float(sch.horizon or 0))} - {t})"
    if sch.name == "column":
        return "wcol"
    return None


def id_sql(plan: Plan, stripped: bool) -> str:
    """The trajectory id of a row as text (:func:`tpsviz.io.dataset.duckdb_source.id_text`).

    Parameters
    ----------
    plan : Plan
    stripped : bool
        Without surrounding whitespace (:func:`tpsviz.io.dataset.duckdb_source.stripped_id`).

    Returns
    -------
    str
        An SQL expression over the dataset's columns.
    """
    col = quote_name(plan.col["trajectory_id"])
    text = id_text(col, plan.types["trajectory_id"])
    return stripped_id(text) if stripped else text


def rows_sql(plan: Plan, source: str, stripped: bool = False) -> tuple[str, bool]:
    """The parsed step rows the main pass reads.

    Parameters
    ----------
    plan : Plan
    source : str
        The relation of the dataset's rows.
    stripped : bool
        Ids without surrounding whitespace (:func:`id_sql`).

    Returns
    -------
    sql : str
        ``SELECT`` of ``tid``, ``step_d``, ``step``, ``y``, ``c``, ``q``, ``wcol``, forecasts
        ``r<k>`` as given and, where a column holds text, ``bad_text``: a value that is not a
        number.
    text : bool
        Whether ``bad_text`` is there.
    """
    step_d, step_bad = plan.expr("step")
    y, y_bad = plan.expr("outcome", "outcome")
    cens, c_bad = plan.expr("censored", "bool")
    q, q_bad = plan.expr("q_z")
    wcol, w_bad = plan.expr("weight")
    step = (f"CAST({quote_name(plan.col['step'])} AS BIGINT)" if "step" in plan.col and is_integer(plan.types["step"], bigint=True)
            else f"TRY_CAST({step_d} AS BIGINT)")
    cols = [f"{id_sql(plan, stripped)} AS tid", f"{step_d} AS step_d", f"{step} AS step", f"{y} AS y",
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


def _count_if(condition: str) -> str:
    """The rows where ``condition`` holds, as BIGINT: ``count_if`` sums into a HUGEINT (Arrow would
    return decimals), and is NULL, not 0, where ``condition`` is NULL on every row of a run.
    Faster than ``count(*) FILTER (WHERE …)``: the main pass at 100M rows took 9.06–9.26 s against
    9.41–9.86 s, alternating, 2026-12-03."""
    return f"CAST(coalesce(count_if({condition}), 0) AS BIGINT)"


def pass_aggregates(plan: Plan, settings: ScoreSettings, text: bool, lookup: Lookup | None = None) -> list[str]:
    """Everything a run needs from the main pass.

    Parameters
    ----------
    plan : Plan
    settings : ScoreSettings
    text : bool
        Whether the rows have ``bad_text`` (:func:`rows_sql`).
    lookup : Lookup, optional
        A general (α, β) scored by the verified table in SQL (:mod:`tpsviz.engines.scoretable`).

    Returns
    -------
    list of str
        ``aggregate AS name``, with the names of :func:`partial_aggregates` where they mean the
        same.
    """
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
        for branch in (1, 0):  # pc<k>: the forecast clipped to [ε, 1 − ε] (pass_sql)
            s[branch] = (lookup.score(k, branch) if lookup is not None else
                         score_sql(f"pc{k}", branch, settings.alpha, settings.beta) or f"tps_s{branch}(pc{k})")
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
            a.append(f"{_count_if(f'{r} < {sql_double(eps)} OR {r} > {sql_double(1.0 - eps)}')} AS cl_{k}")
        if weighted:
            a.append(f"sum(CASE WHEN {r} IS NOT NULL THEN w ELSE 0.0 END) AS w_{k}")
        if sch == "endpoint":  # the score on the run's last row, and whether that row has a forecast
            a += [f"arg_max_null(CASE WHEN y = 0.0 THEN NULL ELSE {s[1]} END, step) AS e1_{k}",
                  f"arg_max_null(CASE WHEN y = 1.0 THEN NULL ELSE {s[0]} END, step) AS e0_{k}",
                  f"arg_max_null({r} IS NOT NULL, step) AS ep_{k}"]
    return a


def pass_sql(plan: Plan, source: str, settings: ScoreSettings, stripped: bool, positional: bool,
             lookup: Lookup | None = None, offsets: bool = False) -> str:
    """The main pass: one GROUP BY over the rows, one row per run (in no order).

    Parameters
    ----------
    plan : Plan
    source : str
        The relation of the dataset's rows.
    settings : ScoreSettings
    stripped : bool
        Group by the id without surrounding whitespace (:func:`id_sql`).
    positional : bool
        The weights read each row's position t = 1 … T in its run: by a window over each run
        or, with ``offsets``, as step − s0, each run's s0 joined from :data:`OFFSETS`.
    lookup : Lookup, optional
        The verified table of a general (α, β) (:func:`register_scores`).
    offsets : bool
        See ``positional``.

    Returns
    -------
    str
        ``SELECT tid, <pass_aggregates> … GROUP BY tid``.
    """
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
    lo, hi = sql_double(eps), sql_double(1.0 - eps)
    clipped = "".join(f", CASE WHEN r{k} < {lo} THEN {lo} WHEN r{k} > {hi} THEN {hi} ELSE r{k} END AS pc{k}"
                      for k in range(len(plan.conf)))
    rows = f"SELECT *, {w or '1.0'} AS w{clipped} FROM ({rows})"
    if lookup is not None:  # each forecast's place on the table's grid, and its interval's coefficients
        rows = lookup.located(f"({rows})", len(plan.conf))
    # in no order: the runs are sorted by id afterwards (Runs.sorted_by_id; an ORDER BY here
    # sorts all the aggregates with the ids, measured at 4.3M runs: +2.7-3.3 s against 0.7-1.0 s)
    return f"SELECT tid, {', '.join(pass_aggregates(plan, settings, bad, lookup))} FROM ({rows}) GROUP BY tid"


def long_runs_sql(plan: Plan, source: str, stripped: bool) -> str:
    """Distinct steps of the runs in :data:`LONG_RUNS` (runs spanning 64 step numbers or more),
    counted by blocks of 64 step numbers.

    Parameters
    ----------
    plan : Plan
    source : str
        The relation of the dataset's rows.
    stripped : bool
        The ids of :data:`LONG_RUNS` are stripped of whitespace (:func:`id_sql`).

    Returns
    -------
    str
        ``SELECT tid, nd``: one row per run.
    """
    rows, _ = rows_sql(plan, source, stripped)
    return (f"SELECT tid, sum(bit_count(bits)) AS nd FROM (SELECT tid, step >> 6 AS blk, "
            f"bit_or({STEP_BIT}) AS bits FROM ({rows}) "
            f"WHERE tid IN (SELECT tid FROM {LONG_RUNS}) GROUP BY tid, blk) GROUP BY tid")


def _parsed_columns(plan: Plan) -> list[str]:
    """The ``parsed`` CTE's columns of :func:`checked_rows_sql`: each value as read, and whether
    its text is not one."""
    step, step_bad = plan.expr("step")
    y, y_bad = plan.expr("outcome", "outcome")
    cens, cens_bad = plan.expr("censored", "bool")
    q, q_bad = plan.expr("q_z")
    wcol, w_bad = plan.expr("weight")
    # the id as stored (runs are grouped by it, and the ids stripped afterwards on far fewer
    # values: tpsviz.io.dataset.duckdb_source.strip_ids); an id that is all whitespace counts as none
    tid = id_text(quote_name(plan.col["trajectory_id"]), plan.types["trajectory_id"])
    parsed = [f"{tid} AS tid", f"{step} AS step_d", f"{y} AS y", f"{cens} AS c", f"{q} AS q",
              f"{wcol} AS wcol",
              f"({step_bad}) AS bad_step_text", f"({y_bad}) AS bad_y_text",
              f"({cens_bad}) AS bad_c", f"({q_bad}) AS bad_q_text", f"({w_bad}) AS bad_w_text"]
    for k, name in enumerate(plan.conf):
        v, bad = plan.expr(name)
        parsed += [f"{v} AS praw{k}", f"({bad}) AS bad_ptext{k}"]
    return parsed


def _row_flags(plan: Plan) -> list[str]:
    """The ``flagged`` CTE's columns of :func:`checked_rows_sql`: each rule's flag, and each
    forecast ``p<k>`` with a value within 1e-9 outside [0, 1] (float rounding) set to 0 or 1."""
    flags = [
        f"(tid IS NULL OR {stripped_id('tid')} = '') AS bad_tid",
        f"(bad_step_text OR step_d IS NULL OR step_d <> floor(step_d) OR step_d < 0 OR step_d >= {sql_double(MAX_STEP)}) AS bad_step",
        "(bad_y_text OR (y IS NOT NULL AND y <> 0.0 AND y <> 1.0)) AS bad_y",
        "(bad_q_text OR (q IS NOT NULL AND (isnan(q) OR q < 0.0 OR q > 1.0))) AS bad_q",
        "(bad_w_text OR (wcol IS NOT NULL AND (isnan(wcol) OR isinf(wcol) OR wcol < 0.0))) AS bad_w",
    ]
    for k in range(len(plan.conf)):
        r = f"praw{k}"
        flags += [
            f"CASE WHEN {r} IS NULL OR isnan({r}) THEN NULL WHEN {r} < 0.0 AND {r} >= -1e-9 THEN 0.0 "
            f"WHEN {r} > 1.0 AND {r} <= {sql_double(1 + 1e-9)} THEN 1.0 ELSE {r} END AS p{k}",
            f"(bad_ptext{k} OR ({r} IS NOT NULL AND NOT isnan({r}) AND ({r} < -1e-9 OR {r} > {sql_double(1 + 1e-9)}))) AS bad_p{k}",
            f"({r} IS NOT NULL AND (({r} < 0.0 AND {r} >= -1e-9) OR ({r} > 1.0 AND {r} <= {sql_double(1 + 1e-9)}))) AS fuzz{k}",
        ]
    return flags


def checked_rows_sql(plan: Plan, source: str, settings: ScoreSettings, positional: bool,
                     lookup: Lookup | None = None) -> str:
    """The step rows with every value parsed, flagged against every rule and scored.

    What a diagnosis counts (:func:`diagnose`: how many rows, an example run) and the Dask
    engine's partial aggregates read (:func:`block_sql`); it costs several times the main pass
    (:func:`pass_sql`), which reads the rules from per-run extremes instead.

    Parameters
    ----------
    plan : Plan
    source : str
        The relation of the dataset's rows.
    settings : ScoreSettings
    positional : bool
        Each row's position ``t`` in its run, by a window over each run (for the weights).
    lookup : Lookup, optional
        The verified table of a general (α, β) in SQL (:func:`register_scores`).

    Returns
    -------
    str
        ``WITH … scored AS (…)``: a query follows that reads ``scored``.
    """
    eps = float(settings.eps)
    weight = weight_sql(settings, positional)
    scored, clip_pc = [], []
    for k in range(len(plan.conf)):
        p = f"p{k}"
        # clipped to [ε, 1 − ε], to [0, 1] where ε = 0: a forecast outside [0, 1] is refused
        # afterwards (bad_p), but the score may be computed on its row first, and beta_score
        # refuses it (a Python error out of the Arrow UDF, not the message naming the row)
        pc = f"CASE WHEN {p} < {sql_double(eps)} THEN {sql_double(eps)} WHEN {p} > {sql_double(1.0 - eps)} THEN {sql_double(1.0 - eps)} ELSE {p} END"
        terms = []
        for branch, need in ((1, "(y IS NULL OR y = 1.0)"), (0, "(y IS NULL OR y = 0.0)")):
            if lookup is not None:
                s = lookup.score(k, branch)
            else:
                s = score_sql("pc", branch, settings.alpha, settings.beta) or f"tps_s{branch}(pc)"
                s = s.replace("pc", f"pc{k}")
            val = s if weight is None else f"CASE WHEN w = 0 THEN 0.0 ELSE w * ({s}) END"
            terms.append(f"CASE WHEN {p} IS NOT NULL AND {need} THEN {val} END AS s{branch}_{k}")
        clip_pc.append(f"{pc} AS pc{k}")
        scored.append(", ".join(terms))
    step_int = "CASE WHEN bad_step THEN 0 ELSE CAST(step_d AS BIGINT) END AS step"
    t_col = ", row_number() OVER (PARTITION BY tid ORDER BY step) AS t" if positional else ""
    clip = [f"({p} IS NOT NULL AND ({p} < {sql_double(eps)} OR {p} > {sql_double(1.0 - eps)})) AS clip{k}"
            if eps > 0 else f"FALSE AS clip{k}" for k, p in ((k, f"p{k}") for k in range(len(plan.conf)))]
    return f"""
WITH parsed AS (SELECT {', '.join(_parsed_columns(plan))} FROM {source}),
flagged AS (SELECT *, {', '.join(_row_flags(plan))} FROM parsed),
stepped AS (SELECT *, {step_int} FROM flagged),
timed AS (SELECT *{t_col} FROM stepped),
weighted AS (SELECT *, {weight or '1.0'} AS w, {', '.join(clip + clip_pc)} FROM timed),
{_scored_cte(lookup, len(plan.conf), scored)}
"""


def _scored_cte(lookup, n_conf: int, scored: list[str]) -> str:
    """The ``scored`` CTE of :func:`checked_rows_sql` over ``weighted``: with a ``lookup``, each
    forecast's place on the table's grid and its interval's coefficients are joined first."""
    source = "weighted" if lookup is None else f"({lookup.located('weighted', n_conf)})"
    return f"scored AS NOT MATERIALIZED (SELECT *, {', '.join(scored)} FROM {source})"


def _flags(plan: Plan) -> list[str]:
    """The names of :func:`checked_rows_sql`'s flags of a broken rule."""
    return ["bad_tid", "bad_step", "bad_y", "bad_c", "bad_q", "bad_w"] + [f"bad_p{k}" for k in range(len(plan.conf))]


def partial_aggregates(plan: Plan, settings: ScoreSettings) -> list[tuple[str, str, str]]:
    """Everything a run needs, as aggregates that combine: only what the settings and columns need.

    Parameters
    ----------
    plan : Plan
    settings : ScoreSettings

    Returns
    -------
    list of (name, over rows, over partials)
        The aggregate over the ``scored`` rows of :func:`checked_rows_sql`, and the aggregate
        that combines partial results of that name (of blocks, or of partitions on a cluster), so
        the same list serves every level.
    """
    sch = settings.schedule.name
    a = [("n", "count(*)", "sum(n)"), ("smin", "min(step)", "min(smin)"), ("smax", "max(step)", "max(smax)"),
         ("bits", f"bit_or({STEP_BIT})", "bit_or(bits)"),
         ("ymin", "min(y)", "min(ymin)"), ("ymax", "max(y)", "max(ymax)"), ("yn", "count(y)", "sum(yn)"),
         ("nbad", "count(*) FILTER (WHERE " + " OR ".join(_flags(plan)) + ")", "sum(nbad)")]
    if "censored" in plan.col:
        a += [("cmin", "min(c)", "min(cmin)"), ("cmax", "max(c)", "max(cmax)"), ("cn", "count(c)", "sum(cn)")]
    if "q_z" in plan.col:
        a += [("qmin", "min(q)", "min(qmin)"), ("qmax", "max(q)", "max(qmax)")]
    if sch == "column":
        a.append(("wnull", "count(*) FILTER (WHERE wcol IS NULL)", "sum(wnull)"))
    if sch in ("column", "linear", "front", "back"):
        a += [("wmax", "max(w)", "max(wmax)"), ("wzero", "count(*) FILTER (WHERE w = 0)", "sum(wzero)"),
              ("winf", "count(*) FILTER (WHERE isinf(w))", "sum(winf)")]
    if plan.conf:
        a.append(("nfuzz", "count(*) FILTER (WHERE " + " OR ".join(f"fuzz{k}" for k in range(len(plan.conf)))
                  + ")", "sum(nfuzz)"))
    for k in range(len(plan.conf)):
        a += [(f"a1_{k}", f"sum(s1_{k})", f"sum(a1_{k})"), (f"a0_{k}", f"sum(s0_{k})", f"sum(a0_{k})"),
              (f"np_{k}", f"count(p{k})", f"sum(np_{k})"),
              (f"last_{k}", f"arg_max(p{k}, step) FILTER (WHERE p{k} IS NOT NULL)", f"arg_max(last_{k}, lstep_{k})"),
              (f"lstep_{k}", f"max(step) FILTER (WHERE p{k} IS NOT NULL)", f"max(lstep_{k})")]
        if settings.eps > 0:
            a.append((f"cl_{k}", f"count(*) FILTER (WHERE clip{k})", f"sum(cl_{k})"))
        if sch not in ("uniform", "per-length", "endpoint"):
            a.append((f"w_{k}", f"sum(CASE WHEN p{k} IS NOT NULL THEN w ELSE 0.0 END)", f"sum(w_{k})"))
        if sch == "endpoint":  # the score on the run's last row, and whether that row has a forecast
            a += [(f"e1_{k}", f"arg_max_null(s1_{k}, step)", f"arg_max_null(e1_{k}, smax)"),
                  (f"e0_{k}", f"arg_max_null(s0_{k}, step)", f"arg_max_null(e0_{k}, smax)"),
                  (f"ep_{k}", f"arg_max_null(p{k} IS NOT NULL, step)", f"arg_max_null(ep_{k}, smax)")]
    return a


def block_sql(plan: Plan, settings: ScoreSettings) -> str:
    """Partial aggregates per (run, block of 64 step numbers), from the ``scored`` rows.

    Parameters
    ----------
    plan : Plan
    settings : ScoreSettings

    Returns
    -------
    str
        A ``SELECT`` to follow :func:`checked_rows_sql`.
    """
    aggs = ", ".join(f"{inner} AS {name}" for name, inner, _ in partial_aggregates(plan, settings))
    return f"SELECT tid, step >> 6 AS blk, {aggs} FROM scored GROUP BY tid, blk"


def combine_sql(plan: Plan, settings: ScoreSettings, relation: str) -> str:
    """Partials of the same (run, block) from several partitions combined into one row each.

    Parameters
    ----------
    plan : Plan
    settings : ScoreSettings
    relation : str
        The partials (:func:`block_sql`'s rows of every partition).

    Returns
    -------
    str
    """
    aggs = ", ".join(f"{comb} AS {name}" for name, _, comb in partial_aggregates(plan, settings))
    return f"SELECT tid, blk, {aggs} FROM {relation} GROUP BY tid, blk"


def per_run_sql(plan: Plan, settings: ScoreSettings, relation: str) -> str:
    """One row per run (in no order: :meth:`tpsviz.engines.runs.Runs.sorted_by_id`) from one row
    per (run, block): distinct steps are the bits set in each block, summed.

    Parameters
    ----------
    plan : Plan
    settings : ScoreSettings
    relation : str
        One row per (run, block) (:func:`combine_sql`).

    Returns
    -------
    str
    """
    aggs = ", ".join(("sum(bit_count(bits)) AS nd" if name == "bits" else f"{comb} AS {name}")
                     for name, _, comb in partial_aggregates(plan, settings))
    return f"SELECT tid, {aggs} FROM {relation} GROUP BY tid"


def diagnose(con, plan: Plan, rows_sql: str) -> dict:
    """Rows failing each check, with an example run (one more pass, only when a check failed).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    plan : Plan
    rows_sql : str
        :func:`checked_rows_sql` of the rows.

    Returns
    -------
    dict
        Per flag (``bad_step``, ``bad_p0``, ``fuzz0`` …) the rows and, under ``ex_<flag>``, the
        smallest id among them; ``over<k>``: forecasts outside [0, 100].
    """
    parts = []
    conds = {f: f for f in _flags(plan) + [f"fuzz{k}" for k in range(len(plan.conf))]}
    for k in range(len(plan.conf)):  # a forecast that is not a number, apart from one outside [0, 1]
        conds[f"bad_ptext{k}"] = f"bad_ptext{k}"
        conds[f"bad_p{k}"] = f"bad_p{k} AND NOT coalesce(bad_ptext{k}, FALSE)"
    for f, cond in conds.items():
        parts += [f"count(*) FILTER (WHERE {cond}) AS {f}", f"min(tid) FILTER (WHERE {cond}) AS ex_{f}"]
    for k in range(len(plan.conf)):  # forecasts outside [0, 100]: none, and the message hints at percentages
        parts.append(f"count(*) FILTER (WHERE NOT isnan(praw{k}) AND (praw{k} < 0.0 OR praw{k} > 100.0)) AS over{k}")
    row = con.sql(rows_sql + f"SELECT {', '.join(parts)} FROM scored").fetchall()[0]
    names = [p.rsplit(" AS ", 1)[1] for p in parts]
    return dict(zip(names, row))
