"""The out-of-core engine: per-trajectory sums of a dataset computed by DuckDB over its files.

Only per-trajectory rows and histogram-sized counts come back to Python; the step rows stay
on disk (docs/architecture.md, "Engines"). DuckDB runs sandboxed: it may open only the
dataset's files and a private spill folder, with extensions off and the configuration locked,
and every file path and column name enters the SQL quoted.

Scores: the log score (α = β = 0), half the Brier score (α = β = 1) and the boosting score
(α = β = −½) are closed forms in SQL, written as :mod:`tpsviz.core._fast.kernels` evaluates them
(ln(1 − p) and √(p/(1 − p)) straight from p below p = 1e-4); every other (α, β) is scored as :func:`tpsviz.beta_score` scores the whole log: from
``TABLE_MIN`` rows by its verified table, evaluated in SQL (:mod:`tpsviz.engines.scoretable`),
else, and on the rows the table does not cover, by a vectorised Arrow UDF calling it
(:func:`register_scores`); so every engine gives every row the same value.

Validation follows :func:`tpsviz.load` on the rules that decide a score (ids, whole step numbers
once per run, outcomes 1/0/empty and constant per run, forecasts in [0, 1], the ``censored``,
``q_z`` and ``weight`` columns); a defect is a :class:`~tpsviz.core.errors.LogFormatError` naming the
column, the number of rows and an example run. One case is refused here that the in-memory
reader accepts: raw signals (``raw_``/``unc_`` need a cross-fitted recalibration over the rows);
the message says to use ``--engine memory``. An outcome given on some rows of a run only is used
for the whole run, with the in-memory reader's note.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
from contextlib import contextmanager

import numpy as np
import pandas as pd

from tpsviz.io.dataset import Dataset
from tpsviz.core.errors import LogFormatError
from tpsviz.io.cells import FALSE_TOKENS, TRUE_TOKENS
from tpsviz.io.header import check_header
from tpsviz.io.longform import partial_outcome_note, percent_hint, percent_note
from tpsviz.io.run_ids import DURATION_IDS, MAX_STEP, merged_ids_note, typed_ids_note
from tpsviz.core.schema import RESERVED, WHITESPACE, canonical_name, nested_column, show_id
from tpsviz.core.scores import TABLE_MIN, beta_score
from tpsviz.io.tables import MISSING
from tpsviz.core.tps import MAX_WEIGHT, ScoreSettings
from tpsviz.engines.runsums import PooledCounts, RunSums
from tpsviz.engines import pages

__all__ = ["sums_duckdb", "GRID", "EXACT_ROWS"]

#: equal-width cells of the grid the pooled AUROC/AUPRC fall back to (at 20M rows the bound is
#: below 1e-5; 2^20 cells cost 2 s more for a bound near 1e-7). A multiple of 10: each of the
#: T-ECE's ten bins is a whole number of cells, so one count per cell serves both. At most 2^16:
#: a cell is then a USMALLINT, whose range DuckDB knows, and the count per cell a perfect-hash
#: aggregate (an array indexed by the cell; see connect).
GRID = 65_530
#: labelled rows up to which the rank metrics are always counted on the distinct values (above it a
#: hash table of every distinct forecast costs GBs: measured 80 s and 6 GB at 15M rows)
EXACT_ROWS = 2_000_000
_SMALL_P = 1e-4  # as tpsviz.core._fast.kernels: ln(1 - p) by its series below this
#: a row's bit in its run's bitmap of step numbers mod 64 (bit-ORed: distinct steps = bits set)
STEP_BIT = "CAST(1 AS UBIGINT) << CAST(step & 63 AS UBIGINT)"


def _q(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def _lit(text: str) -> str:
    """A quoted SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def _f(x: float) -> str:
    """A float as an exact SQL DOUBLE literal."""
    return f"CAST({float(x)!r} AS DOUBLE)"


def connect(ds: Dataset, threads: int | None = None, memory_limit: str | None = None):
    """A DuckDB connection that may read the dataset's files and nothing else.

    Returns the connection and its private spill folder (remove it when done).
    """
    import duckdb

    spill = tempfile.mkdtemp(prefix="tpsviz-duckdb-")
    config = {"threads": int(threads or os.cpu_count() or 1),
              "memory_limit": memory_limit or os.environ.get("TPSVIZ_DUCKDB_MEMORY", "2GB"),
              "temp_directory": spill, "preserve_insertion_order": False,
              "autoinstall_known_extensions": False, "autoload_known_extensions": False,
              # a GROUP BY on integers of a known range up to 2^17 values uses an array (the default
              # stops at 2^12): the grid's counts per USMALLINT cell (grid_sql) took 20–30% less
              # time at 20M rows. In the config, not a SET: cursors of the connection have it too.
              "perfect_ht_threshold": 17}
    con = duckdb.connect(config=config)
    con.execute("SET enable_progress_bar = false")  # a session option (not allowed in config)
    files = [str(f) for f in ds.files]
    con.execute(f"SET allowed_paths = [{', '.join(_lit(f) for f in files)}]")
    con.execute(f"SET allowed_directories = [{_lit(spill)}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con, spill


def _source(ds: Dataset, extra: str = "") -> str:
    """The table function reading the dataset's files (``extra``: more options, e.g.
    ``, filename = true``)."""
    files = "[" + ", ".join(_lit(str(f)) for f in ds.files) + "]"
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
    return (f"read_csv({files}, header = true, all_varchar = true, delim = {_lit(ds.delimiter)}, quote = '\"', "
            f"union_by_name = true, hive_partitioning = false{extra})")


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
    """:func:`_source`, or, where the files are not uniform and some store the ids (column
    ``col``) as booleans, zone-aware timestamps or bytes, the files grouped by the ids' type,
    each group's ids spelled as text by :func:`id_text` and the groups unioned by name. Read as
    one union, DuckDB would cast such ids to text first ("true", the session's zone), unlike
    :func:`tpsviz.load` (docs/formats.md, "Trajectory ids")."""
    per_file = ds.types_of(col)
    if not any(_spelled_type(t) for t in per_file.values()):
        return _source(ds, extra)
    groups: dict = {}
    for f, t in per_file.items():
        groups.setdefault(t, []).append(f)
    ident = _q(col)
    parts = [f"SELECT * REPLACE ({id_text(ident, _spelled_type(t) or 'ANY')} AS {ident}) "
             f"FROM {_source(dataclasses.replace(ds, files=tuple(files), uniform=False), extra)}"
             for t, files in groups.items()]
    return "(" + " UNION ALL BY NAME ".join(parts) + ")"


def _missing_text(col: str) -> str:
    tokens = ", ".join(_lit(m) for m in sorted(MISSING))
    return f"(lower(trim({col})) IN ({tokens}))"


# DuckDB type names, matched whole: INTERVAL contains "INT" and DOUBLE[] "DOUBLE", and neither is a number
_FLOAT_TYPES = re.compile(r"DOUBLE|FLOAT|REAL")
_INTEGER_TYPES = re.compile(r"U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|INT[1248]?")
_BIGINT_TYPES = re.compile(r"U?(TINYINT|SMALLINT|INTEGER)|BIGINT|INT[1248]?")  # every value fits a BIGINT
_DECIMAL_TYPES = re.compile(r"(DECIMAL|NUMERIC)(\(\d+,\s*\d+\))?")


def is_integer(typ: str, bigint: bool = False) -> bool:
    """Whether a DuckDB column type is an integer type (not a list of them, not INTERVAL); with
    ``bigint``, one whose every value casts to BIGINT (not UBIGINT, HUGEINT, UHUGEINT)."""
    return bool((_BIGINT_TYPES if bigint else _INTEGER_TYPES).fullmatch(typ.strip().upper()))


def is_nested(typ: str) -> bool:
    """Whether a DuckDB column type holds several values per row (a list, array, struct, map or union)."""
    t = typ.strip().upper()
    return t.endswith("]") or t.startswith(("STRUCT", "MAP", "UNION"))


def id_text(col: str, typ: str) -> str:
    """The trajectory id of column expression ``col`` (of DuckDB type ``typ``) as text. Bytes
    (BLOB) are decoded as UTF-8, as :func:`tpsviz.load` reads them; bytes that are not UTF-8 give
    NULL, a row without an id (a cast would spell them as escapes instead: ``\\xE8``)."""
    t = typ.strip().upper()
    if t == "VARCHAR":
        return col
    if t == "BLOB":
        return f"TRY(decode({col}))"
    # (spelled as tpsviz.io.run_ids.id_text spells them in memory, docs/formats.md "Trajectory ids":
    # a boolean as Python's str; a time-zone-aware timestamp as its instant in UTC, whatever the
    # session's time zone, which a plain CAST would use)
    if t == "BOOLEAN":
        return f"CASE WHEN {col} THEN 'True' WHEN NOT {col} THEN 'False' END"
    if "TIME ZONE" in t or t.startswith("TIMESTAMPTZ"):
        return f"(CAST(timezone('UTC', {col}) AS VARCHAR) || '+00:00')"
    return f"CAST({col} AS VARCHAR)"


def refuse_duration_ids(ds: Dataset, col: str, typ: str) -> None:
    """Refuse an id column of durations (Parquet ``INTERVAL``, or pyarrow's ``duration``, which
    DuckDB reads as integers), as :func:`tpsviz.load` does."""
    if typ.strip().upper() == "INTERVAL" or col in ds.durations:
        raise LogFormatError(ds.label, [DURATION_IDS.replace("'trajectory_id'", show_id(col))])


def stripped_id(text: str) -> str:
    """Id expression ``text`` without surrounding whitespace, as Python's ``str.strip`` (the
    characters of :data:`tpsviz.core.schema.WHITESPACE`; DuckDB's ``trim`` removes spaces only). The
    regular expression runs only on ids whose first or last character is whitespace."""
    codes = ", ".join(str(ord(c)) for c in WHITESPACE)
    ws = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE) + "]"
    return (f"(CASE WHEN unicode({text}) IN ({codes}) OR unicode(right({text}, 1)) IN ({codes}) "
            f"THEN regexp_replace({text}, {_lit(f'^{ws}+|{ws}+$')}, '', 'g') ELSE {text} END)")


def _stored_as(typ: str) -> str:
    """How :func:`_number` reads a column of this DuckDB type: "float", "exact" (integers,
    decimals, booleans) or "text" (anything else: cast to text and parsed, so a date, an
    interval or bytes is "not a number", as :func:`tpsviz.load` says)."""
    t = typ.strip().upper()
    if t == "BOOLEAN" or is_integer(t) or _DECIMAL_TYPES.fullmatch(t):
        return "exact"
    return "float" if _FLOAT_TYPES.fullmatch(t) else "text"


def _number(col: str, typ: str, decimal_comma: bool = False) -> tuple[str, str]:
    """(value as DOUBLE or NULL, condition of a present value that is not a number). With
    ``decimal_comma`` (a semicolon-separated file), text such as "0,7" reads as 0.7, as
    :func:`tpsviz.load` reads it."""
    kind = _stored_as(typ)
    if kind == "float":  # a stored NaN is a missing value, as tpsviz.load reads it
        return f"CASE WHEN isnan({col}) THEN NULL ELSE CAST({col} AS DOUBLE) END", "FALSE"
    if kind == "exact":
        return f"CAST({col} AS DOUBLE)", "FALSE"
    text = f"CAST({col} AS VARCHAR)"
    if decimal_comma:
        text = f"CASE WHEN regexp_full_match({text}, '\\s*-?\\d+,\\d+\\s*') THEN replace({text}, ',', '.') ELSE {text} END"
    cast = f"TRY_CAST(trim({text}) AS DOUBLE)"
    val = f"CASE WHEN {text} IS NULL OR {_missing_text(text)} THEN NULL ELSE {cast} END"
    # DuckDB's cast reads more than tpsviz.load's pandas.to_numeric does: digit separators
    # ("1_000"), NaN spellings other than the missing token "nan" ("-nan", "nan(1)") and "+-1".
    # Those are not numbers here either, so both engines refuse the same cells.
    bad = (f"({text} IS NOT NULL AND NOT {_missing_text(text)} AND ({cast} IS NULL OR isnan({cast}) "
           f"OR contains({text}, '_') OR contains({text}, '+-')))")  # (a cast that worked has "+-" only at the start)
    return val, bad


def nan_free(typ: str) -> bool:
    """Whether :func:`_number`'s value of a column of this type is never NaN (a stored NaN of a
    float column is read as NULL there; a text cell such as "-nan" casts to NaN)."""
    return _stored_as(typ) != "text"


def _boolean(col: str, typ: str) -> tuple[str, str]:
    """(1.0/0.0/NULL, condition of a present value that is not true/false/1/0)."""
    if typ.upper() == "BOOLEAN":
        return f"CAST({col} AS DOUBLE)", "FALSE"
    text = f"lower(trim(CAST({col} AS VARCHAR)))"
    t = ", ".join(_lit(v) for v in sorted(TRUE_TOKENS))
    f = ", ".join(_lit(v) for v in sorted(FALSE_TOKENS))
    val = f"CASE WHEN {text} IN ({t}) THEN 1.0 WHEN {text} IN ({f}) THEN 0.0 ELSE NULL END"
    bad = f"({col} IS NOT NULL AND NOT {_missing_text(f'CAST({col} AS VARCHAR)')} AND {val} IS NULL)"
    return val, bad


def _outcome(col: str, typ: str, decimal_comma: bool = False) -> tuple[str, str]:
    """(1.0/0.0/NULL, condition of a present value that is neither): a number, or where a text cell
    is not a number, a true/false word (as ``tpsviz.io.longform``'s outcomes: "true", "yes", …)."""
    num, num_bad = _number(col, typ, decimal_comma)
    if num_bad == "FALSE":  # a number or boolean column
        return num, num_bad
    word, word_bad = _boolean(col, typ)
    return f"CASE WHEN {num_bad} THEN {word} ELSE {num} END", f"(({num_bad}) AND ({word_bad}))"


def _score_sql(p: str, branch: int, alpha: float, beta: float) -> str | None:
    """S(p, branch) in SQL where a closed form is exact, else None."""
    if (alpha, beta) == (0.0, 0.0):
        if branch == 1:
            return f"ln({p})"
        series = f"-({p} * (1.0 + {p} * (0.5 + {p} * ({_f(1 / 3)} + {p} * (0.25 + {p} * 0.2)))))"
        return f"CASE WHEN {p} < {_f(_SMALL_P)} THEN {series} ELSE ln(1.0 - {p}) END"
    if (alpha, beta) == (1.0, 1.0):
        d = f"(1.0 - {p})" if branch == 1 else p
        return f"(-0.5 * ({d} * {d}))"
    if (alpha, beta) == (-0.5, -0.5):  # boosting: −2 √((1 − x)/x), x = p or 1 − p (p = 0 or 1: −∞ or −0)
        if branch == 1:
            return f"(-2.0 * sqrt((1.0 - {p}) / {p}))"
        x = f"(1.0 - {p})"
        return (f"CASE WHEN {p} < {_f(_SMALL_P)} THEN -2.0 * sqrt({p} / (1.0 - {p})) "
                f"ELSE -2.0 * sqrt((1.0 - {x}) / {x}) END")
    return None


def register_scores(con, settings: ScoreSettings, n_rows: int):
    """What a general (α, β) is scored by on ``con``: the UDFs ``tps_s1``/``tps_s0`` and, for a log
    of ``n_rows`` ≥ TABLE_MIN rows (where :func:`tpsviz.beta_score` uses its verified table on the
    whole log), that table in SQL, returned as a :class:`~tpsviz.engines.scoretable.Lookup` (the
    UDF then scores only the rows off the table). None for the closed forms, or with no table."""
    if _score_sql("p", 1, settings.alpha, settings.beta) is not None:  # a closed form
        return None
    table = n_rows >= TABLE_MIN
    _register_udf(con, settings.alpha, settings.beta, table)
    if not table:
        return None
    from tpsviz.engines.scoretable import register

    return register(con, settings.alpha, settings.beta)


def _register_udf(con, alpha: float, beta: float, table: bool) -> None:
    """``tps_s1(p)`` and ``tps_s0(p)``: S(p, 1) and S(p, 0) by :func:`tpsviz.beta_score`."""
    import duckdb
    import pyarrow as pa

    def make(branch: int):
        def f(p):
            x = p.to_numpy(zero_copy_only=False)
            out = np.full(x.shape, np.nan)
            ok = ~np.isnan(x)
            out[ok] = beta_score(x[ok], branch, alpha, beta, table)
            return pa.array(out, mask=~ok)
        return f

    for branch in (1, 0):
        con.create_function(f"tps_s{branch}", make(branch), [duckdb.sqltype("DOUBLE")],
                            duckdb.sqltype("DOUBLE"), type="arrow", side_effects=False)


class _Plan:
    """The column expressions of one dataset."""

    def __init__(self, ds: Dataset, types: dict, mapping=(), percent=()):
        canon = {}
        for c in types:
            canon.setdefault(canonical_name(c), c)
        for target, col in mapping:
            if col not in types:
                raise LogFormatError(ds.label, [f"--map {target}={col}: the files have no column {show_id(col)}"])
            canon[str(target)] = col
        self.col = canon
        self.stored = dict(types)  # the files' column types, by their own names
        conf, sig, self.percent = check_header(list(canon), percent, ds.label)
        if not conf:
            raise LogFormatError(ds.label, [
                "the dataset has raw signals only (" + ", ".join(show_id(s, 40) for s in sig[:5]) + "); "
                "turning them into probabilities needs a cross-fitted recalibration over the step rows, "
                "which the out-of-core engine does not do: use --engine memory (--recalibrate)"])
        self.conf = conf
        self.signals = sig
        self.types = {k: types[v] for k, v in canon.items()}
        self.decimal_comma = ds.fmt != "parquet" and ds.delimiter == ";"  # (tables: ";" files use them)
        nested = [nested_column(canon[k], t) for k, t in self.types.items()
                  if is_nested(t) and (k in RESERVED or k in conf)]
        # (durations read as what they are, as tpsviz.load reads them: not a number)
        nested += [f"column {show_id(canon[k])} must hold numbers; it holds durations" for k in canon
                   if canon[k] in ds.durations and k != "trajectory_id" and (k in RESERVED or k in conf or k in sig)]
        if nested:
            raise LogFormatError(ds.label, nested[:5])
        if "trajectory_id" in canon:
            refuse_duration_ids(ds, canon["trajectory_id"], self.types["trajectory_id"])
        self.read = [c for c in types if c in {canon[k] for k in canon if k in RESERVED or k in conf or k in sig}]
        unused = [c for c, t in types.items() if is_nested(t) and c not in self.read]
        # (the words of tables._read_parquet, which leaves such columns out of a file read in memory)
        self.notes = [f"{len(unused)} column(s) of nested type (lists, structs, maps) were left out: "
                      + ", ".join(show_id(c) for c in unused[:5])] if unused else []
        if self.percent:
            self.notes.append(percent_note([c for c in conf if c in self.percent]))

    def expr(self, name: str, kind: str = "number") -> tuple[str, str]:
        if name not in self.col:
            return "NULL", "FALSE"
        col = _q(self.col[name])
        if kind == "bool":
            return _boolean(col, self.types[name])
        value, bad = (_outcome if kind == "outcome" else _number)(col, self.types[name], self.decimal_comma)
        if name in self.percent:  # a predictor given in percent (--percent)
            value = f"(({value}) / 100.0)"
        return value, bad


def weight_sql(settings: ScoreSettings, positional: bool) -> str | None:
    """w_t of a row in SQL (from ``step``, or from its position ``t`` in the run), or None where
    every row weighs 1 (uniform, per-length and endpoint: their per-run factor comes later)."""
    sch = settings.schedule
    t = "CAST(t AS DOUBLE)" if positional else "CAST(step AS DOUBLE)"
    if sch.name == "linear":
        return t
    if sch.name == "front":
        return f"pow({_f(sch.gamma or 1.0)}, {t} - 1.0)"
    if sch.name == "back":
        return f"pow({_f(sch.gamma or 1.0)}, {_f(float(sch.horizon or 0))} - {t})"
    if sch.name == "column":
        return "wcol"
    return None


def _rows_sql(plan: _Plan, source: str, settings: ScoreSettings, positional: bool,
              lookup=None) -> tuple[str, list]:
    """The step rows with every value parsed, flagged and scored (one SELECT); ``lookup``: the
    verified table of a general (α, β) in SQL (:func:`register_scores`)."""
    step, step_bad = plan.expr("step")
    y, y_bad = plan.expr("outcome", "outcome")
    cens, cens_bad = plan.expr("censored", "bool")
    q, q_bad = plan.expr("q_z")
    wcol, w_bad = plan.expr("weight")
    # the id as stored (runs are grouped by it, and the ids stripped afterwards on far fewer
    # values: onepass.strip_ids); an id that is all whitespace counts as none
    tid = id_text(_q(plan.col["trajectory_id"]), plan.types["trajectory_id"])
    parsed = [f"{tid} AS tid", f"{step} AS step_d", f"{y} AS y", f"{cens} AS c", f"{q} AS q",
              f"{wcol} AS wcol",
              f"({step_bad}) AS bad_step_text", f"({y_bad}) AS bad_y_text",
              f"({cens_bad}) AS bad_c", f"({q_bad}) AS bad_q_text", f"({w_bad}) AS bad_w_text"]
    for k, name in enumerate(plan.conf):
        v, bad = plan.expr(name)
        parsed += [f"{v} AS praw{k}", f"({bad}) AS bad_ptext{k}"]
    eps = float(settings.eps)
    weight = weight_sql(settings, positional)
    cols = ["tid", "step", "y", "c", "q", "bad_tid", "bad_step", "bad_y", "bad_c", "bad_q", "bad_w",
            "w"]
    scored, clip_pc = [], []
    for k in range(len(plan.conf)):
        p = f"p{k}"
        # clipped to [ε, 1 − ε], to [0, 1] where ε = 0: a forecast outside [0, 1] is refused
        # afterwards (bad_p), but the score may be computed on its row first, and beta_score
        # refuses it (a Python error out of the Arrow UDF, not the message naming the row)
        pc = f"CASE WHEN {p} < {_f(eps)} THEN {_f(eps)} WHEN {p} > {_f(1.0 - eps)} THEN {_f(1.0 - eps)} ELSE {p} END"
        terms = []
        for branch, need in ((1, "(y IS NULL OR y = 1.0)"), (0, "(y IS NULL OR y = 0.0)")):
            if lookup is not None:
                s = lookup.score(k, branch)
            else:
                s = _score_sql("pc", branch, settings.alpha, settings.beta) or f"tps_s{branch}(pc)"
                s = s.replace("pc", f"pc{k}")
            val = s if weight is None else f"CASE WHEN w = 0 THEN 0.0 ELSE w * ({s}) END"
            terms.append(f"CASE WHEN {p} IS NOT NULL AND {need} THEN {val} END AS s{branch}_{k}")
        clip_pc.append(f"{pc} AS pc{k}")
        cols += [p, f"pc{k}", f"s1_{k}", f"s0_{k}", f"bad_p{k}", f"fuzz{k}", f"clip{k}"]
        scored.append(", ".join(terms))
    flags = [
        f"(tid IS NULL OR {stripped_id('tid')} = '') AS bad_tid",
        f"(bad_step_text OR step_d IS NULL OR step_d <> floor(step_d) OR step_d < 0 OR step_d >= {_f(MAX_STEP)}) AS bad_step",
        "(bad_y_text OR (y IS NOT NULL AND y <> 0.0 AND y <> 1.0)) AS bad_y",
        "(bad_q_text OR (q IS NOT NULL AND (isnan(q) OR q < 0.0 OR q > 1.0))) AS bad_q",
        "(bad_w_text OR (wcol IS NOT NULL AND (isnan(wcol) OR isinf(wcol) OR wcol < 0.0))) AS bad_w",
    ]
    for k in range(len(plan.conf)):
        r = f"praw{k}"
        flags += [
            f"CASE WHEN {r} IS NULL OR isnan({r}) THEN NULL WHEN {r} < 0.0 AND {r} >= -1e-9 THEN 0.0 "
            f"WHEN {r} > 1.0 AND {r} <= {_f(1 + 1e-9)} THEN 1.0 ELSE {r} END AS p{k}",
            f"(bad_ptext{k} OR ({r} IS NOT NULL AND NOT isnan({r}) AND ({r} < -1e-9 OR {r} > {_f(1 + 1e-9)}))) AS bad_p{k}",
            f"({r} IS NOT NULL AND (({r} < 0.0 AND {r} >= -1e-9) OR ({r} > 1.0 AND {r} <= {_f(1 + 1e-9)}))) AS fuzz{k}",
        ]
    step_int = "CASE WHEN bad_step THEN 0 ELSE CAST(step_d AS BIGINT) END AS step"
    t_col = ", row_number() OVER (PARTITION BY tid ORDER BY step) AS t" if positional else ""
    clip = [f"({p} IS NOT NULL AND ({p} < {_f(eps)} OR {p} > {_f(1.0 - eps)})) AS clip{k}"
            if eps > 0 else f"FALSE AS clip{k}" for k, p in ((k, f"p{k}") for k in range(len(plan.conf)))]
    sql = f"""
WITH parsed AS (SELECT {', '.join(parsed)} FROM {source}),
flagged AS (SELECT *, {', '.join(flags)} FROM parsed),
stepped AS (SELECT *, {step_int} FROM flagged),
timed AS (SELECT *{t_col} FROM stepped),
weighted AS (SELECT *, {weight or '1.0'} AS w, {', '.join(clip + clip_pc)} FROM timed),
{_scored_cte(lookup, len(plan.conf), scored)}
"""
    return sql, cols


def _scored_cte(lookup, n_conf: int, scored: list[str]) -> str:
    """The ``scored`` CTE of :func:`_rows_sql` over ``weighted``: with a ``lookup``, each forecast's
    place on the table's grid and its interval's coefficients are joined first."""
    source = "weighted" if lookup is None else f"({lookup.located('weighted', n_conf)})"
    return f"scored AS NOT MATERIALIZED (SELECT *, {', '.join(scored)} FROM {source})"


_STRING_TYPES = ("string", "large_string", "string_view")  # Arrow type names the ids arrive as


class _Runs:
    """The per-run result as numpy columns in the order of the runs' ids (nulls as NaN); absent
    columns read as a default.

    The table's rows may come in any order: ``_Runs.sorted_by_id`` finds the permutation that
    sorts them by id, and each column is put in that order as it is converted, by one gather
    into a fresh array. Sorting the whole table instead (an ``ORDER BY`` or a take) copies every
    column once more, which at millions of runs costs more than the sort
    (docs/architecture.md, "Scale"). Each column is converted once (the checks read some of
    them several times).
    """

    def __init__(self, table, order: np.ndarray | None = None):
        self.n_rows = table.num_rows
        self._t = table
        self._order = order  # None: the table is sorted by id already
        self._num: dict = {}
        self._scratch: dict = {}  # one array per dtype, reused by every column's gather
        self._ids = None
        self.merged_ids = 0  # stored ids that were one run once stripped of whitespace
        self.ids_changed = False  # whether stripping whitespace changed an id

    @staticmethod
    def id_order(ids) -> np.ndarray:
        """The permutation that sorts ``ids`` (the bytes of UTF-8: the order of Python's ``str``,
        as an ``ORDER BY`` in DuckDB)."""
        import pyarrow.compute as pc

        return pc.sort_indices(ids).to_numpy().astype(np.intp, copy=False)

    @classmethod
    def sorted_by_id(cls, table, order: np.ndarray | None = None) -> "_Runs":
        """Runs of ``table`` (any order) in the order of their ids; ``order``: that permutation,
        if already found (:meth:`id_order` of the table's ``tid``)."""
        return cls(table, cls.id_order(table.column("tid")) if order is None else order)

    def __contains__(self, name: str) -> bool:
        return name in self._t.column_names

    def _column(self, name: str, dtype, scratch: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Column ``name`` as ``dtype``, in the order of the ids. ``scratch``: an array of
        ``n_rows`` of ``dtype`` the column may be converted into before its gather; ``out``: the
        array to fill (a fresh one if None)."""
        col = self._t.column(name)
        if col.type == "bool":  # (with nulls, a bool column converts to Python objects)
            col = col.cast("double")
        dtype = np.dtype(dtype)
        if out is None:
            out = pages.empty(self.n_rows, dtype)
        if col.num_chunks == 1 and not col.null_count and col.type.to_pandas_dtype() == dtype:
            flat = col.chunk(0).to_numpy()  # (the Arrow buffer itself: no copy before the gather)
        else:
            flat = out if self._order is None or scratch is None else scratch
            at = 0
            for chunk in col.chunks:  # a chunk's nulls come as NaN (the column is float where it has any)
                flat[at:at + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
                at += len(chunk)
        if self._order is None:
            if flat is not out:
                out[:] = flat
            return out
        # (mode="clip": numpy buffers the output of take in its default mode, which is one more copy)
        return np.take(flat, self._order, out=out, mode="clip")

    def _buf(self, dtype) -> np.ndarray | None:
        """The scratch array of ``dtype`` the columns are converted into before their gather."""
        if self._order is None:
            return None
        dtype = np.dtype(dtype)
        if dtype not in self._scratch:
            self._scratch[dtype] = pages.empty(self.n_rows, dtype)
        return self._scratch[dtype]

    @staticmethod
    def _todo(table) -> list:
        """(key, name, dtype) of every column but the ids: counts (integers without a null) as
        int64 under the key (name, "count"), the others as float under their name."""
        import pyarrow as pa

        todo = []
        for name in table.column_names:
            if name == "tid":
                continue
            whole = pa.types.is_integer(table.schema.field(name).type) and not table.column(name).null_count
            todo.append(((name, "count") if whole else name, name, np.int64 if whole else float))
        return todo

    @classmethod
    def reserve(cls, table) -> dict:
        """The memory of every column's copy in id order, mapped now (:func:`pages.empty`), for
        :meth:`prefetch`: :func:`tpsviz.engines.onepass.run_pass` maps it while the ids sort,
        on the core the sort leaves idle."""
        return {key: pages.empty(table.num_rows, dtype) for key, _, dtype in cls._todo(table)}

    def prefetch(self, reserved: dict | None = None) -> None:
        """Convert every column but the ids at once, two at a time (:meth:`num` and
        :meth:`count` then return them), into the arrays ``reserved`` where given
        (:meth:`reserve`). A gather into the ids' order waits on memory, one cache miss a run,
        and numpy releases the GIL while it gathers: two threads take about half the time of
        one (docs/architecture.md, "Scale")."""
        import threading
        from concurrent.futures import ThreadPoolExecutor

        reserved = reserved or {}
        todo = [item for item in self._todo(self._t) if item[1] not in self._num and (item[1], "count") not in self._num]
        if not todo:
            return
        scratch = threading.local()  # (one array a thread, reused by its columns' gathers)

        def convert(item):
            key, name, dtype = item
            bufs = scratch.__dict__.setdefault("bufs", {})
            buf = bufs.get(np.dtype(dtype))
            if buf is None:
                buf = bufs[np.dtype(dtype)] = pages.empty(self.n_rows, dtype)
            return key, self._column(name, dtype, buf, reserved.get(key))

        with ThreadPoolExecutor(max_workers=2) as pool:
            ids = pool.submit(self.sorted_ids)  # (the ids' gather too: Arrow's take releases the GIL as well)
            for key, values in pool.map(convert, todo):
                self._num[key] = values
            ids.result()

    def num(self, name: str, default: float = np.nan) -> np.ndarray:
        """Column ``name`` as float; an absent one reads as ``default`` everywhere (a read-only
        view of one number: a fresh array costs a page fault per 4 KB)."""
        if name not in self._t.column_names:
            return np.broadcast_to(np.float64(default), (self.n_rows,))
        if name not in self._num:
            whole = self._num.get((name, "count"))  # (prefetched as counts)
            self._num[name] = _filled(self.n_rows, whole) if whole is not None else self._column(name, float, self._buf(float))
        return self._num[name]

    def count(self, name: str) -> np.ndarray:
        """A column of counts (never null: ``count()``) as int64."""
        key = (name, "count")
        if key not in self._num:
            self._num[key] = self._column(name, np.int64, self._buf(np.int64))
        return self._num[key]

    def sorted_ids(self):
        """The ids (an Arrow array) in the order of the runs."""
        if self._ids is None:
            tid = self._t.column("tid")
            self._ids = tid if self._order is None else tid.take(self._order)
        return self._ids

    def ids(self) -> pd.Series:
        """The ids as a pandas string column (the Arrow buffers, not one Python str per run:
        0.7 s less at 4.3M runs)."""
        string = pd.Series(dtype="str").dtype
        return self.sorted_ids().to_pandas(types_mapper=lambda t: string if t in _STRING_TYPES else None)

    def first_id(self, mask: np.ndarray) -> str:
        return str(self.sorted_ids()[int(np.flatnonzero(mask)[0])].as_py())


def _flags(plan: _Plan) -> list[str]:
    return ["bad_tid", "bad_step", "bad_y", "bad_c", "bad_q", "bad_w"] + [f"bad_p{k}" for k in range(len(plan.conf))]


def _aggregates(plan: _Plan, settings: ScoreSettings) -> list[tuple[str, str, str]]:
    """(name, aggregate over step rows, aggregate over partial rows of that name) of everything a
    run needs; only what the settings and columns need. The second form combines partial results
    (of blocks, or of partitions on a cluster), so the same list serves every level."""
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


def _block_sql(plan: _Plan, settings: ScoreSettings) -> str:
    """Partial aggregates per (run, block of 64 step numbers), from the ``scored`` rows."""
    aggs = ", ".join(f"{inner} AS {name}" for name, inner, _ in _aggregates(plan, settings))
    return f"SELECT tid, step >> 6 AS blk, {aggs} FROM scored GROUP BY tid, blk"


def _combine_sql(plan: _Plan, settings: ScoreSettings, relation: str) -> str:
    """Partials of the same (run, block) from several partitions combined into one row each."""
    aggs = ", ".join(f"{comb} AS {name}" for name, _, comb in _aggregates(plan, settings))
    return f"SELECT tid, blk, {aggs} FROM {relation} GROUP BY tid, blk"


def _per_run_sql(plan: _Plan, settings: ScoreSettings, relation: str) -> str:
    """One row per run (in no order: :meth:`_Runs.sorted_by_id`), from one row per (run, block):
    distinct steps are the bits set in each block, summed."""
    aggs = ", ".join(("sum(bit_count(bits)) AS nd" if name == "bits" else f"{comb} AS {name}")
                     for name, _, comb in _aggregates(plan, settings))
    return f"SELECT tid, {aggs} FROM {relation} GROUP BY tid"


def _diagnose(con, plan: _Plan, rows_sql: str) -> dict:
    """Rows failing each check, with an example run (one more pass, only when a check failed)."""
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


def _check_rows(ds: Dataset, plan: _Plan, runs: _Runs, diag: dict | None) -> list[str]:
    """Problems found by the row and per-run checks (empty when the dataset is sound)."""
    problems = []

    def where(mask, what: str) -> None:
        m = np.asarray(mask, dtype=bool)
        if m.any():
            problems.append(f"{what}: {int(m.sum()):,} run(s), e.g. trajectory {show_id(runs.first_id(m), 40)}")

    if diag:
        blob = plan.types.get("trajectory_id", "").upper() == "BLOB"
        texts = {"bad_tid": "column 'trajectory_id': every row needs an id"
                            + (", as UTF-8 text (the column holds bytes)" if blob else ""),
                 "bad_step": "column 'step': every row needs a whole number from 0 to 2^53",
                 "bad_y": "column 'outcome' must be 1 (success), 0 (failure) or empty (censored)",
                 "bad_c": "column 'censored' must be true/false or 1/0",
                 "bad_q": "column 'q_z' (continuation success probability) must be in [0, 1] or empty",
                 "bad_w": "column 'weight': weights must be finite numbers >= 0"}
        texts.update({f"bad_p{k}": f"column {show_id(name)}: probabilities must be in [0, 1]"
                      for k, name in enumerate(plan.conf)})
        texts.update({f"bad_ptext{k}": f"column {show_id(name)} must hold numbers (probabilities in [0, 1])"
                      for k, name in enumerate(plan.conf)})
        hints = {f"bad_p{k}": percent_hint(name) for k, name in enumerate(plan.conf)
                 if not int(diag.get(f"over{k}") or 0)}  # (a value outside [0, 1], none outside [0, 100])
        for flag, text in texts.items():
            count = int(diag.get(flag) or 0)
            if count:
                ex = diag.get(f"ex_{flag}") if flag != "bad_tid" else None  # (a blank id names no run)
                at = f", e.g. in trajectory {show_id(ex, 40)}" if ex else ""
                problems.append(f"{text}; not so on {count:,} row(s){at}{hints.get(flag, '')}")
        if problems:
            return problems
    n = runs.num("n")
    where(runs.num("nd") != n, "duplicate (trajectory_id, step): the same step appears twice in a run")
    where((runs.num("yn") > 0) & (runs.num("ymin") != runs.num("ymax")),
          "column 'outcome' changes within a run; it must be constant within a run")
    where((runs.num("cn", 0) > 0) & (runs.num("cmin") != runs.num("cmax")),
          "column 'censored' changes within a run; it must be constant within a run")
    qmin = runs.num("qmin")
    where(~np.isnan(qmin) & (qmin != runs.num("qmax")),
          "column 'q_z' changes within a run; it must be constant within a run")
    return problems


def sums_duckdb(ds: Dataset, settings: ScoreSettings, mapping=(), threads: int | None = None,
                memory_limit: str | None = None, percent=(), counts: bool = True) -> RunSums:
    """Per-trajectory sums A1, A0, W of every predictor of a dataset, out of core.

    Parameters
    ----------
    ds : Dataset
        From :func:`tpsviz.io.dataset.open_dataset`.
    settings : ScoreSettings
        α, β, ε and the schedule.
    mapping : sequence of (target, column), optional
        Columns of other names read as long-format columns (``--map``).
    threads : int, optional
        DuckDB threads (default: the machine's cores).
    memory_limit : str, optional
        DuckDB's memory limit (default ``TPSVIZ_DUCKDB_MEMORY`` or 2GB); above it, DuckDB spills
        to a private temporary folder.
    percent : iterable of str, optional
        Predictors given in percent (0–100), as ``conf_<name>`` or ``<name>``: divided by 100
        (``--percent``).
    counts : bool
        Whether to count the pooled AUROC/AUPRC/T-ECE counts (a second pass over the outcome and
        forecast columns); without them ``pooled`` is empty (enough for per-run TPS:
        :func:`tpsviz.engines.runsums.tps_of_runs`).

    Returns
    -------
    RunSums

    Raises
    ------
    LogFormatError
        For every defect, naming the column, the number of rows or runs and an example run.
    """
    with opened(ds, mapping, threads, percent=percent, memory_limit=memory_limit) as (con, source, plan):
        return _sums(con, ds, settings, source, plan, counts)


def numbering_note(runs: _Runs, notes: list) -> int:
    """Runs whose steps are not numbered 1..T (noted; the position-based schedules then need a
    window over each run)."""
    irregular = int(((runs.num("smin") != 1) | (runs.num("smax") != runs.count("n"))).sum())
    if irregular:
        notes.append(f"{irregular} run(s) have steps that are not numbered 1, 2, …, T (a gap, a step 0 "
                     "or a late start); steps keep their order, and the weight schedules use each row's "
                     "position t = 1 … T in its run.")
    return irregular


def open_plan(ds: Dataset, mapping=(), threads: int | None = None, memory_limit: str | None = None, percent=(),
              types: dict | None = None):
    """A sandboxed connection on the dataset, its spill folder, its source expression and plan.

    ``types`` (a part of a larger dataset, e.g. a Dask partition): the larger dataset's column
    types (:attr:`_Plan.stored`), each column of these files read in that type, so that every
    part reads a value as the whole dataset does (ids stored as 4 in one file and 4.0 in
    another both read "4.0")."""
    con, spill = connect(ds, threads, memory_limit)
    try:
        part = types is not None
        source = _source(ds)
        if not part:
            types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {source})").fetchall())
        plan = _Plan(ds, types, mapping, percent)
        tid = plan.col["trajectory_id"]
        spelled = id_source(ds, tid)
        if spelled != source:  # (the ids come as text, spelled per file: id_source)
            source, types = spelled, {**types, tid: "VARCHAR"}
            plan.types["trajectory_id"] = "VARCHAR"
        if not part:
            return con, spill, source, plan
        # only the columns the log uses (never nested: the plan refuses those), each cast
        cols = ", ".join(f"CAST({_q(c)} AS {types[c]}) AS {_q(c)}" for c in plan.read)
        return con, spill, f"(SELECT {cols} FROM {source})", plan
    except BaseException:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
        raise


@contextmanager
def opened(ds: Dataset, mapping=(), threads: int | None = None, percent=(), types: dict | None = None,
           memory_limit: str | None = None):
    """:func:`open_plan` as a context: yields (connection, source, plan); closes the connection
    and removes the spill folder on leaving. A file DuckDB cannot read is named by
    :func:`tpsviz.io.file_errors.reading`, never quoted."""
    from tpsviz.io.file_errors import reading

    with reading(ds):
        con, spill, source, plan = open_plan(ds, mapping, threads, memory_limit, percent=percent, types=types)
        try:
            yield con, source, plan
        finally:
            con.close()
            shutil.rmtree(spill, ignore_errors=True)


def _sums(con, ds: Dataset, settings: ScoreSettings, source: str, plan: _Plan, counts: bool = True) -> RunSums:
    n_rows = ds.n_rows if ds.n_rows is not None else int(con.execute(f"SELECT count(*) FROM {source}").fetchall()[0][0])
    lookup = register_scores(con, settings, n_rows)
    if settings.schedule.name == "column" and "weight" not in plan.col:
        raise LogFormatError(ds.label, ["schedule 'column' needs a 'weight' column; the dataset has none"])
    from tpsviz.engines import (
        onepass)  # the main pass reads the rules from per-run extremes (onepass's docstring)

    runs = onepass.run_pass(con, plan, source, settings, lookup=lookup)
    rows_sql, _ = _rows_sql(plan, source, settings, positional=False)
    checks = _diagnose(con, plan, rows_sql) if onepass.defects(plan, runs) else {}
    problems = _check_rows(ds, plan, runs, checks)
    if problems:
        raise LogFormatError(ds.label, problems)
    notes = list(ds.notes) + plan.notes
    if runs.merged_ids:
        notes.append(merged_ids_note(runs.merged_ids))
    notes += typed_ids_notes(con, ds, plan)
    if numbering_note(runs, notes):
        if settings.schedule.name in ("linear", "front", "back"):
            offsets = onepass.consecutive_offsets(con, runs)
            # (the first pass's runs freed first: at 100M rows both at once took the peak to 4.9 GB)
            runs = None
            runs = onepass.run_pass(con, plan, source, settings, positional=True, lookup=lookup, offsets=offsets)
    for k, col in enumerate(plan.conf):
        fz = int(checks.get(f"fuzz{k}") or 0)
        if fz:
            notes.append(f"{col}: {fz} value(s) within 1e-9 outside [0, 1] (float rounding) were set to 0 or 1.")
    parsed = onepass.labelled_sql(plan, source, onepass.flagged(runs))  # validated: outcome and forecasts suffice

    def pooled(n_lab: int, partial) -> dict:
        if not counts:
            return {}
        if partial is None:
            return _pooled(con, plan, [parsed], n_lab)
        con.register("tpsviz_partial", partial)  # the unlabelled rows of runs with a partial outcome
        return _pooled(con, plan, [parsed, onepass.labelled_sql(plan, source, True, partial=True)], n_lab)

    return to_sums(ds, plan, settings, runs, notes, pooled, "duckdb")


def typed_ids_notes(con, ds: Dataset, plan: _Plan) -> list[str]:
    """The note of :func:`tpsviz.io.run_ids.typed_ids_note` when some Parquet files store the ids
    as numbers and others as text, and ids of both read as one run (only for files whose
    schemas differ: one more read of the id column)."""
    if ds.uniform or ds.fmt != "parquet":
        return []
    col = _q(plan.col["trajectory_id"])
    kinds: dict = {"text": [], "number": []}
    for f in ds.files:
        typ = con.execute(f"SELECT column_type FROM (DESCRIBE SELECT {col} FROM read_parquet([{_lit(str(f))}]))"
                          ).fetchall()[0][0]
        if typ.strip().upper() == "VARCHAR":
            kinds["text"].append(f)
        elif is_integer(typ) or _FLOAT_TYPES.fullmatch(typ.strip().upper()):
            kinds["number"].append(f)
    if not kinds["text"] or not kinds["number"]:
        return []
    ids = {k: f"SELECT DISTINCT CAST({col} AS VARCHAR) FROM read_parquet([{', '.join(_lit(str(f)) for f in fs)}], "
              "union_by_name = true)" for k, fs in kinds.items()}
    joined = int(con.execute(f"SELECT count(*) FROM ({ids['text']} INTERSECT {ids['number']})").fetchall()[0][0])
    return [typed_ids_note(joined)] if joined else []


def _more(mask: np.ndarray) -> str:
    """The words " and N more" after the first run named (nothing when it is the only one)."""
    more = int(mask.sum()) - 1
    return f" and {more:,} more" if more else ""


def _filled(n: int, values) -> np.ndarray:
    """A fresh float array of ``n`` set to ``values`` (its memory mapped at once: :mod:`pages`)."""
    out = pages.empty(n, float)
    out[...] = values
    return out


def to_sums(ds, plan, settings, runs: _Runs, notes, pooled, engine: str) -> RunSums:
    """:class:`RunSums` from the per-run rows (checks of whole runs, notes, schedules applied);
    ``pooled(n_labelled_rows, partial)`` gives the pooled-metric counts; ``partial`` is None, or
    an Arrow table (``tid``, ``y``) of the runs whose outcome is given on some rows only."""
    import pyarrow as pa

    n = runs.count("n")
    y = runs.num("ymin")
    yn = runs.num("yn")
    marked = runs.num("cn", 0) > 0
    censored = np.where(marked, runs.num("cmin") == 1.0, yn == 0)
    problems = []
    partial = (yn > 0) & (yn < n)
    if partial.any():
        notes.append(partial_outcome_note(int(partial.sum())))
    both = censored & (yn > 0)
    if both.any():
        problems.append(f"trajectory {show_id(runs.first_id(both), 40)}{_more(both)}: "
                        "column 'censored' is true while 'outcome' is present; a censored run has no observed outcome")
    neither = ~censored & (yn == 0)
    if neither.any():
        problems.append(f"trajectory {show_id(runs.first_id(neither), 40)}{_more(neither)}: "
                        "'outcome' is empty but column 'censored' says the run finished")
    sch = settings.schedule
    wnull = runs.num("wnull", 0)
    if sch.name == "column" and wnull.any():  # (the words of tpsviz.core.tps.step_weights)
        problems.append(f"schedule 'column': the 'weight' column is empty on {int(wnull.sum()):,} row(s), e.g. in "
                        f"trajectory {show_id(runs.first_id(wnull > 0), 40)}; give every row a weight")
    if problems:
        raise LogFormatError(ds.label, problems)
    _check_schedule(settings, runs)
    qz = runs.num("qmin") if "qmin" in runs else _filled(runs.n_rows, np.nan)  # (a column of the frame)
    ignored_q = ~np.isnan(qz) & ~censored
    if ignored_q.any():
        notes.append(f"{int(ignored_q.sum())} complete trajectories carry a q_z value; q_z is only used for "
                     "censored runs, so it was ignored there.")
        qz = np.where(censored, qz, np.nan)
    a1, a0, wsum, n_present, n_clipped, last = {}, {}, {}, {}, {}, {}
    for k, col in enumerate(plan.conf):
        name = col[len("conf_"):]
        npres = runs.count(f"np_{k}")
        s1, s0 = runs.num(f"a1_{k}"), runs.num(f"a0_{k}")
        w = runs.num(f"w_{k}") if f"w_{k}" in runs else _filled(runs.n_rows, npres)
        if sch.name == "per-length":
            s1, s0, w = s1 / n, s0 / n, npres / n
        elif sch.name == "endpoint":  # w = 1 on the last row only, which may lack a forecast
            pres = runs.num(f"ep_{k}", 0.0) == 1.0
            s1 = np.where(pres, runs.num(f"e1_{k}"), 0.0)
            s0 = np.where(pres, runs.num(f"e0_{k}"), 0.0)
            w = pres.astype(float)
        a1[name], a0[name], wsum[name] = s1, s0, w
        n_present[name] = npres
        n_clipped[name] = runs.count(f"cl_{k}") if f"cl_{k}" in runs else np.zeros(runs.n_rows, np.int64)
        last[name] = runs.num(f"last_{k}")
        miss = int(n.sum()) - int(npres.sum())
        if miss == int(n.sum()):
            notes.append(f"{col}: the column holds no forecast at all; the predictor is listed but cannot be scored.")
        elif miss:
            notes.append(f"{col}: {miss} step(s) have no forecast; they are left out of that predictor's score.")
    if plan.signals:
        notes.append("raw signals (" + ", ".join(show_id(s, 40) for s in plan.signals[:5]) + ") were not scored: "
                     "their recalibration needs the step rows (use --engine memory --recalibrate).")
    # a1 and a0 hold S(p, 1) and S(p, 0) of the rows without an outcome too (the pass's CASE): a run
    # whose outcome is given on some rows only is scored whole; its unlabelled rows join the
    # pooled counts by their run's outcome
    partial_runs = pa.table({"tid": runs.sorted_ids().filter(pa.array(partial)), "y": y[partial]}) if partial.any() else None
    pooled = pooled(int(np.sum(n[~censored])), partial_runs)
    outcome = _filled(runs.n_rows, y)
    outcome[censored] = np.nan
    runs_frame = pd.DataFrame({"trajectory_id": runs.ids(), "length": n,
                               "outcome": outcome, "censored": censored, "q_z": qz},
                              copy=False)  # (the arrays as they are, not stacked into one block: a copy)
    names = [c[len("conf_"):] for c in plan.conf]
    return RunSums(ds.label, engine, settings, runs_frame, names, a1, a0, wsum, n_present, n_clipped, last,
                   {names[k]: v for k, v in pooled.items()}, int(n.sum()), notes)


def _check_schedule(settings: ScoreSettings, runs: _Runs) -> None:
    """The weight checks of :func:`tpsviz.core.tps.check_weights`, from per-run extremes."""
    sch = settings.schedule
    if sch.name in ("uniform", "per-length", "endpoint"):
        return
    total = int(runs.num("n").sum())
    zero, inf = int(runs.num("wzero", 0).sum()), int(runs.num("winf", 0).sum())
    if sch.name in ("linear", "front", "back") and (zero or inf):
        what = []
        if zero:
            what.append(f"underflow to 0 on {zero:,} of {total:,} step rows")
        if inf:
            what.append(f"overflow to infinity on {inf:,} of {total:,} step rows")
        raise ValueError(f"schedule {sch.spec}: the weights {' and '.join(what)} in floating point, so the "
                         "score would not be strictly proper (and could read as a perfect 0); choose γ closer "
                         "to 1 or a smaller budget H")
    big = float(np.nanmax(runs.num("wmax")))
    if sch.name == "column" and not big > 0:
        raise ValueError("schedule 'column': every weight in the 'weight' column is 0, so nothing would be "
                         "scored; give positive weights")
    if big > MAX_WEIGHT:
        raise ValueError(f"schedule {sch.spec}: weights up to {big:.3g} would overflow when a run's scores are "
                         f"summed; keep weights below {MAX_WEIGHT:.0e} (only their ratios matter)")


def _cell(p: str, c: str, grid: int) -> str:
    """The grid cell of forecast ``p`` from ``c`` = :func:`_floor_cell`: moved to the neighbouring
    cell where the rounding of grid·p puts ``p`` on the wrong side of a T-ECE bin edge k/10 (as
    :func:`tpsviz.diagnostics.metrics.bin_index` sees it), so that cell // (grid / 10) is always the row's
    T-ECE bin. Only rows in a bin's first or last cell pay for the comparison."""
    per = grid // 10
    return (f"CASE WHEN {c} % {per} = 0 AND {p} < CAST({c} // {per} AS DOUBLE) / 10.0 THEN {c} - 1 "
            f"WHEN {c} % {per} = {per - 1} AND {c} < {grid - 1} AND {p} >= CAST({c} // {per} + 1 AS DOUBLE) / 10.0 "
            f"THEN {c} + 1 ELSE {c} END")


def _floor_cell(p: str, grid: int) -> str:
    """floor(grid·p) for a forecast ``p`` in [0, 1], with p = 1 in the last cell."""
    return f"least(CAST(floor({p} * {grid}.0) AS BIGINT), {grid - 1})"


def grid_sql(plan: _Plan, rows_sql: str) -> str:
    """Over the labelled rows of each predictor k: per grid cell, the counts of Y = 1 and Y = 0,
    Σ (F − Y) and the cell's smallest and largest forecast. Cells nest in the T-ECE's ten bins
    (:func:`_cell`), so the bins are sums of cells.

    One GROUP BY per predictor: measured at 20M rows and 3 predictors 1.2 s (0.40 s a predictor)
    against 1.9 s for GROUPING SETS ((cell), (T-ECE bin)) and 5.2 s for one GROUP BY over the rows
    unpivoted to (k, p). The cell is a USMALLINT so that DuckDB counts into an array (a perfect-hash
    aggregate, :func:`connect`): 20–30% less time than a hash table of BIGINT cells.
    """
    if GRID % 10 or GRID > 2 ** 16:
        raise ValueError(f"GRID must be a multiple of 10 (the T-ECE bins) and at most 2^16, not {GRID}")
    parts = []
    for k in range(len(plan.conf)):
        p = f"p{k}"
        parts.append(f"""SELECT {k} AS k, cell, sum(y) AS pos, count(*) - sum(y) AS neg, sum({p} - y) AS gap,
       min({p}) AS pmin, max({p}) AS pmax
FROM (SELECT y, {p}, CAST({_cell(p, "c", GRID)} AS USMALLINT) AS cell FROM (SELECT y, {p}, {_floor_cell(p, GRID)} AS c FROM scored
      WHERE y IS NOT NULL AND {p} IS NOT NULL AND NOT isnan({p})))
GROUP BY cell""")
    return rows_sql + "\nUNION ALL\n".join(parts)


def exact_sql(plan: _Plan, rows_sql: str, need: list) -> str:
    """Counts per (predictor, distinct forecast) of the predictors in ``need``."""
    return rows_sql + "\nUNION ALL\n".join(
        f"SELECT {k} AS k, p{k} AS p, sum(y) AS pos, count(*) - sum(y) AS neg FROM scored "
        f"WHERE y IS NOT NULL AND p{k} IS NOT NULL AND NOT isnan(p{k}) GROUP BY p{k}" for k in need)


def pooled_from(grid: pd.DataFrame, n_predictors: int, n_labelled_max: int, exact, combine: bool = True) -> dict:
    """PooledCounts per predictor from :func:`grid_sql` rows; with ``combine``, rows of several
    partitions (the same cell more than once) are combined first. ``exact(need)`` returns the
    distinct-value counts of the predictors ``need`` when some grid cell holds several forecasts
    and the labelled rows are few enough to count them."""
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


def _pooled(con, plan: _Plan, rows_sqls: list, n_labelled_max: int) -> dict:
    """Counts for the pooled AUROC/AUPRC (distinct values, or grid cells) and T-ECE bins, over
    the rows of every ``WITH scored`` in ``rows_sqls`` (their counts add up)."""
    if not plan.conf:
        return {}

    def counts(sql_of) -> pd.DataFrame:
        return pd.concat([con.sql(sql_of(rows)).df() for rows in rows_sqls], ignore_index=True)

    return pooled_from(counts(lambda rows: grid_sql(plan, rows)), len(plan.conf), n_labelled_max,
                       lambda need: counts(lambda rows: exact_sql(plan, rows, need)), combine=len(rows_sqls) > 1)


def id_column(types: dict, mapping, label: str) -> str:
    """The column holding the trajectory ids (``--map trajectory_id=COL`` or its canonical name)."""
    for target, col in mapping:
        if target == "trajectory_id":
            if col not in types:
                raise LogFormatError(label, [f"--map trajectory_id={show_id(col)}: the files have no such column"])
            return col
    col = next((c for c in types if canonical_name(c) == "trajectory_id"), None)
    if col is None:
        raise LogFormatError(label, ["missing required column 'trajectory_id'"])
    return col
