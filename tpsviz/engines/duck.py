"""The out-of-core engine: per-trajectory sums of a dataset computed by DuckDB over its files.

Only per-trajectory rows and histogram-sized counts come back to Python; the step rows stay
on disk (docs/architecture.md, "Engines"). DuckDB runs sandboxed
(:func:`tpsviz.io.dataset.duckdb_source.connect`). :func:`sums_duckdb` runs the main pass
(:func:`tpsviz.engines.onepass.run_pass`, whose SQL is :mod:`tpsviz.engines.sql`), diagnoses a
defective dataset row by row, and turns the runs into :class:`~tpsviz.engines.runsums.RunSums`
(:func:`to_sums`, which the Dask engine shares) with the pooled counts
(:mod:`tpsviz.engines.pooled`). :class:`DuckDBEngine` is the ``duckdb`` implementation of
:class:`~tpsviz.engines.interface.Engine`.

Validation follows :func:`tpsviz.load` on the rules that decide a score (ids, whole step numbers
once per run, outcomes 1/0/empty and constant per run, forecasts in [0, 1], the ``censored``,
``q_z`` and ``weight`` columns); a defect is a :class:`~tpsviz.core.errors.LogFormatError` naming the
column, the number of rows and an example run. One case is refused here that the in-memory
reader accepts: raw signals (:class:`~tpsviz.engines.plan.Plan`). An outcome given on some rows of
a run only is used for the whole run, with the in-memory reader's note.
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pyarrow as pa

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import show_id
from tpsviz.core.tps import MAX_WEIGHT, ScoreSettings
from tpsviz.core.wording import setting, text
from tpsviz.engines import onepass, pages
from tpsviz.engines.interface import EngineBase
from tpsviz.engines.plan import Plan, is_float, is_integer
from tpsviz.engines.pooled import PARTIAL, count_pooled, labelled_sql
from tpsviz.engines.runs import Runs
from tpsviz.engines.runsums import RunSums
from tpsviz.engines.sql import checked_rows_sql, diagnose, register_scores
from tpsviz.io.dataset import Dataset
from tpsviz.io.dataset.duckdb_source import column_types, connect, dataset_source, id_source, quote_name, quote_text
from tpsviz.io.file_errors import reading
from tpsviz.io.tables.longform import partial_outcome_note, percent_hint
from tpsviz.io.tables.run_ids import merged_ids_note, typed_ids_note

__all__ = ["sums_duckdb", "DuckDBEngine", "opened", "open_plan", "predictor_names", "to_sums", "check_rows",
           "numbering_note", "typed_ids_notes"]


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


def open_plan(ds: Dataset, mapping=(), threads: int | None = None, memory_limit: str | None = None, percent=(),
              types: dict | None = None):
    """A sandboxed connection on the dataset, its spill folder, its source expression and plan.

    Parameters
    ----------
    ds : Dataset
    mapping, percent : optional
        ``--map`` pairs and predictors given in percent (:class:`~tpsviz.engines.plan.Plan`).
    threads, memory_limit : optional
        As :func:`tpsviz.io.dataset.duckdb_source.connect`.
    types : dict, optional
        For a part of a larger dataset (e.g. a Dask partition): the larger dataset's column
        types (:attr:`Plan.stored`), each column of these files read in that type, so that every
        part reads a value as the whole dataset does (ids stored as 4 in one file and 4.0 in
        another both read "4.0").

    Returns
    -------
    con, spill, source, plan
        The connection, its spill folder (remove it when done), the relation of the rows and
        the :class:`~tpsviz.engines.plan.Plan`.
    """
    con, spill = connect(ds, threads, memory_limit)
    try:
        part = types is not None
        source = dataset_source(ds)
        if not part:
            types = column_types(con, source)
        plan = Plan(ds, types, mapping, percent)
        tid = plan.col["trajectory_id"]
        spelled = id_source(ds, tid)
        if spelled != source:  # (the ids come as text, spelled per file: id_source)
            source, types = spelled, {**types, tid: "VARCHAR"}
            plan.types["trajectory_id"] = "VARCHAR"
        if not part:
            return con, spill, source, plan
        # only the columns the log uses (never nested: the plan refuses those), each cast
        cols = ", ".join(f"CAST({quote_name(c)} AS {types[c]}) AS {quote_name(c)}" for c in plan.read)
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
    :func:`tpsviz.io.file_errors.reading`, never quoted.

    Parameters
    ----------
    ds, mapping, threads, percent, types, memory_limit
        As :func:`open_plan`.

    Yields
    ------
    con, source, plan
    """
    with reading(ds):
        con, spill, source, plan = open_plan(ds, mapping, threads, memory_limit, percent=percent, types=types)
        try:
            yield con, source, plan
        finally:
            con.close()
            shutil.rmtree(spill, ignore_errors=True)


def predictor_names(ds: Dataset, mapping=(), percent=()) -> list[str]:
    """The dataset's predictors, from its columns (no row is read).

    Parameters
    ----------
    ds : Dataset
    mapping, percent : optional
        As :func:`sums_duckdb`.

    Returns
    -------
    list of str
        The names after ``conf_``.

    Raises
    ------
    LogFormatError
        For a header the engine cannot score (:class:`~tpsviz.engines.plan.Plan`).
    """
    with opened(ds, mapping, percent=percent) as (_con, _source, plan):
        return [c[len("conf_"):] for c in plan.conf]


def _sums(con, ds: Dataset, settings: ScoreSettings, source: str, plan: Plan, counts: bool = True) -> RunSums:
    """:func:`sums_duckdb` on an open connection: the main pass, its checks (a diagnosis row by
    row where one fails), the notes and, for runs not numbered 1..T under a positional schedule,
    the pass again by positions."""
    n_rows = ds.n_rows if ds.n_rows is not None else int(con.execute(f"SELECT count(*) FROM {source}").fetchall()[0][0])
    lookup = register_scores(con, settings, n_rows)
    if settings.schedule.name == "column" and "weight" not in plan.col:
        raise LogFormatError(ds.label, ["schedule 'column' needs a 'weight' column; the dataset has none"])
    runs = onepass.run_pass(con, plan, source, settings, lookup=lookup)
    rows_sql = checked_rows_sql(plan, source, settings, positional=False)
    checks = diagnose(con, plan, rows_sql) if onepass.defects(plan, runs) else {}
    problems = check_rows(ds, plan, runs, checks)
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
    parsed = labelled_sql(plan, source, onepass.flagged(runs))  # validated: outcome and forecasts suffice

    def pooled(n_lab: int, partial) -> dict:
        if not counts:
            return {}
        if partial is None:
            return count_pooled(con, plan, [parsed], n_lab)
        con.register(PARTIAL, partial)  # the unlabelled rows of runs with a partial outcome
        return count_pooled(con, plan, [parsed, labelled_sql(plan, source, True, partial=True)], n_lab)

    return to_sums(ds, plan, settings, runs, notes, pooled, "duckdb")


def typed_ids_notes(con, ds: Dataset, plan: Plan) -> list[str]:
    """The note of :func:`tpsviz.io.tables.longform.typed_ids_note` when some Parquet files store the ids
    as numbers and others as text, and ids of both read as one run (only for files whose
    schemas differ: one more read of the id column).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        On the dataset (:func:`open_plan`).
    ds : Dataset
    plan : Plan

    Returns
    -------
    list of str
        The note, or nothing.
    """
    if ds.uniform or ds.fmt != "parquet":
        return []
    col = quote_name(plan.col["trajectory_id"])
    kinds: dict = {"text": [], "number": []}
    for f in ds.files:
        typ = con.execute(f"SELECT column_type FROM (DESCRIBE SELECT {col} FROM read_parquet([{quote_text(str(f))}]))"
                          ).fetchall()[0][0]
        if typ.strip().upper() == "VARCHAR":
            kinds["text"].append(f)
        elif is_integer(typ) or is_float(typ):
            kinds["number"].append(f)
    if not kinds["text"] or not kinds["number"]:
        return []
    ids = {k: f"SELECT DISTINCT CAST({col} AS VARCHAR) FROM read_parquet([{', '.join(quote_text(str(f)) for f in fs)}], "
              "union_by_name = true)" for k, fs in kinds.items()}
    joined = int(con.execute(f"SELECT count(*) FROM ({ids['text']} INTERSECT {ids['number']})").fetchall()[0][0])
    return [typed_ids_note(joined)] if joined else []


def numbering_note(runs: Runs, notes: list) -> int:
    """Runs whose steps are not numbered 1..T, noted (the position-based schedules then need each
    row's position in its run).

    Parameters
    ----------
    runs : Runs
    notes : list of str
        Where the note is added.

    Returns
    -------
    int
        The runs.
    """
    irregular = int(((runs.num("smin") != 1) | (runs.num("smax") != runs.count("n"))).sum())
    if irregular:
        notes.append(f"{irregular} run(s) have steps that are not numbered 1, 2, …, T (a gap, a step 0 "
                     "or a late start); steps keep their order, and the weight schedules use each row's "
                     "position t = 1 … T in its run.")
    return irregular


def check_rows(ds: Dataset, plan: Plan, runs: Runs, diag: dict | None) -> list[str]:
    """Problems found by the row and per-run checks.

    Parameters
    ----------
    ds : Dataset
    plan : Plan
        Or what of it the checks need (``conf``, ``types``).
    runs : Runs
    diag : dict or None
        The rows failing each check (:func:`tpsviz.engines.sql.diagnose`); empty or None when
        no check failed.

    Returns
    -------
    list of str
        Empty when the dataset is sound.
    """
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
        for flag, problem in texts.items():
            count = int(diag.get(flag) or 0)
            if count:
                ex = diag.get(f"ex_{flag}") if flag != "bad_tid" else None  # (a blank id names no run)
                at = f", e.g. in trajectory {show_id(ex, 40)}" if ex else ""
                problems.append(f"{problem}; not so on {count:,} row(s){at}{hints.get(flag, '')}")
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


def _more(mask: np.ndarray) -> str:
    """The words " and N more" after the first run named (nothing when it is the only one)."""
    more = int(mask.sum()) - 1
    return f" and {more:,} more" if more else ""


def to_sums(ds, plan, settings, runs: Runs, notes, pooled, engine: str) -> RunSums:
    """:class:`RunSums` from the per-run rows: checks of whole runs, notes, schedules applied.

    Shared by the DuckDB and the Dask engine.

    Parameters
    ----------
    ds : Dataset
    plan : Plan
        Or what of it the runs need (``conf``, ``signals``).
    settings : ScoreSettings
    runs : Runs
        One row per run (:func:`tpsviz.engines.onepass.run_pass`, or the Dask engine's reduce).
    notes : list of str
        The notes so far (more are added).
    pooled : callable
        ``pooled(n_labelled_rows, partial)``: the pooled-metric counts by predictor index;
        ``partial`` is None, or an Arrow table (``tid``, ``y``) of the runs whose outcome is
        given on some rows only.
    engine : str
        :attr:`RunSums.engine`.

    Returns
    -------
    RunSums

    Raises
    ------
    LogFormatError
        Runs whose outcome and censoring disagree; empty weights of the column schedule.
    ValueError
        Weights that underflow, overflow or are all 0 (:func:`tpsviz.core.tps.check_weights`).
    """
    n = runs.count("n")
    y = runs.num("ymin")
    yn = runs.num("yn")
    marked = runs.num("cn", 0) > 0
    censored = np.where(marked, runs.num("cmin") == 1.0, yn == 0)
    partial = (yn > 0) & (yn < n)
    if partial.any():
        notes.append(partial_outcome_note(int(partial.sum())))
    problems = _run_problems(settings, runs, censored, yn)
    if problems:
        raise LogFormatError(ds.label, problems)
    _check_schedule(settings, runs)
    qz = runs.num("qmin") if "qmin" in runs else pages.filled(runs.n_rows, np.nan)  # (a column of the frame)
    ignored_q = ~np.isnan(qz) & ~censored
    if ignored_q.any():
        notes.append(f"{int(ignored_q.sum())} complete trajectories carry a q_z value; q_z is only used for "
                     "censored runs, so it was ignored there.")
        qz = np.where(censored, qz, np.nan)
    a1, a0, wsum, n_present, n_clipped, last = _predictor_sums(plan, settings, runs, n, notes)
    if plan.signals:
        notes.append(text("raw signals (" + ", ".join(show_id(s, 40) for s in plan.signals[:5]) + ") were not "
                          f"scored: their recalibration needs the step rows (use {setting('in_memory')} with "
                          f"{setting('recalibrate')})."))
    # a1 and a0 hold S(p, 1) and S(p, 0) of the rows without an outcome too (the pass's CASE): a run
    # whose outcome is given on some rows only is scored whole; its unlabelled rows join the
    # pooled counts by their run's outcome
    partial_runs = pa.table({"tid": runs.sorted_ids().filter(pa.array(partial)), "y": y[partial]}) if partial.any() else None
    pooled = pooled(int(np.sum(n[~censored])), partial_runs)
    outcome = pages.filled(runs.n_rows, y)
    outcome[censored] = np.nan
    runs_frame = pd.DataFrame({"trajectory_id": runs.ids(), "length": n,
                               "outcome": outcome, "censored": censored, "q_z": qz},
                              copy=False)  # (the arrays as they are, not stacked into one block: a copy)
    names = [c[len("conf_"):] for c in plan.conf]
    return RunSums(ds.label, engine, settings, runs_frame, names, a1, a0, wsum, n_present, n_clipped, last,
                   {names[k]: v for k, v in pooled.items()}, int(n.sum()), notes)


def _run_problems(settings: ScoreSettings, runs: Runs, censored: np.ndarray, yn: np.ndarray) -> list[str]:
    """Runs whose censoring and outcome disagree, and rows without a weight under the column
    schedule (:func:`to_sums`)."""
    problems = []
    both = censored & (yn > 0)
    if both.any():
        problems.append(f"trajectory {show_id(runs.first_id(both), 40)}{_more(both)}: "
                        "column 'censored' is true while 'outcome' is present; a censored run has no observed outcome")
    neither = ~censored & (yn == 0)
    if neither.any():
        problems.append(f"trajectory {show_id(runs.first_id(neither), 40)}{_more(neither)}: "
                        "'outcome' is empty but column 'censored' says the run finished")
    wnull = runs.num("wnull", 0)
    if settings.schedule.name == "column" and wnull.any():  # (the words of tpsviz.core.tps.step_weights)
        problems.append(f"schedule 'column': the 'weight' column is empty on {int(wnull.sum()):,} row(s), e.g. in "
                        f"trajectory {show_id(runs.first_id(wnull > 0), 40)}; give every row a weight")
    return problems


def _predictor_sums(plan, settings: ScoreSettings, runs: Runs, n: np.ndarray, notes: list) -> tuple[dict, ...]:
    """(A1, A0, W, steps with a forecast, steps clipped, last forecast) per predictor, the
    schedule's per-run factor applied (:func:`to_sums`); notes missing forecasts."""
    sch = settings.schedule
    a1, a0, wsum, n_present, n_clipped, last = {}, {}, {}, {}, {}, {}
    for k, col in enumerate(plan.conf):
        name = col[len("conf_"):]
        npres = runs.count(f"np_{k}")
        s1, s0 = runs.num(f"a1_{k}"), runs.num(f"a0_{k}")
        w = runs.num(f"w_{k}") if f"w_{k}" in runs else pages.filled(runs.n_rows, npres)
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
    return a1, a0, wsum, n_present, n_clipped, last


def _check_schedule(settings: ScoreSettings, runs: Runs) -> None:
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


class DuckDBEngine(EngineBase):
    """The ``duckdb`` engine: a dataset scored out of core by DuckDB over its files
    (:func:`sums_duckdb`).

    Parameters
    ----------
    threads, memory_limit : optional
        As :func:`tpsviz.io.dataset.duckdb_source.connect`.
    """

    name = "duckdb"

    def __init__(self, threads: int | None = None, memory_limit: str | None = None):
        self.threads, self.memory_limit = threads, memory_limit

    def runsums(self, source: Dataset, settings: ScoreSettings, *, mapping=(), percent=(),
                counts: bool = True) -> RunSums:
        """:func:`sums_duckdb` (see :meth:`tpsviz.engines.interface.Engine.runsums`)."""
        return sums_duckdb(source, settings, mapping=mapping, threads=self.threads, memory_limit=self.memory_limit,
                           percent=percent, counts=counts)

    def describe(self, why: str, intervals: bool = True) -> str:
        """``duckdb, out of core (why)``."""
        return f"duckdb, out of core ({why})"
