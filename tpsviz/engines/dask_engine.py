"""The cluster engine: the DuckDB engine's per-trajectory aggregation as a map-reduce with
``dask.distributed`` (docs/architecture.md, "Engines").

Map: every partition (a group of the dataset's files) is read on a worker by a sandboxed DuckDB
(:func:`tpsviz.io.dataset.duckdb_source.connect`) into partial aggregates per (run, block of 64 step
numbers), the grid counts of the pooled metrics and, when a check fails, the diagnosis. Reduce:
on the client, partials of the same (run, block) — a run may span partitions — are combined
(sums, minima, maxima, the bit-OR of the step bitmaps, the last forecast by step) and the runs are
checked and turned into :class:`~tpsviz.engines.runsums.RunSums` exactly as the DuckDB engine does.
The bootstrap is a Poisson bootstrap with weights hashed from (trajectory id, replicate)
(:mod:`tpsviz.engines.poisson`), summed over chunks of runs on the workers: the intervals do not
depend on the cluster's shape.

A cluster is given by ``scheduler`` (``tcp://HOST:PORT``); otherwise a ``LocalCluster`` of
``n_workers`` single-threaded processes is started and closed again. Position-based schedules
(linear, front, back) need every run numbered 1..T here: a window over (run, step) cannot span
partitions (use the DuckDB engine otherwise). :class:`DaskEngine` is the ``dask`` implementation of
:class:`~tpsviz.engines.interface.Engine`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tpsviz.core.errors import LogFormatError
from tpsviz.core.scores import TABLE_MIN
from tpsviz.core.tps import ScoreSettings
from tpsviz.core.wording import setting
from tpsviz.engines import duck
from tpsviz.engines.interface import EngineBase
from tpsviz.engines.pooled import PARTIAL, exact_sql, grid_sql, labelled_sql, pooled_from
from tpsviz.engines.poisson import (
    intervals_from_sums, poisson_intervals, poisson_sums, prepared_values, run_hashes)
from tpsviz.engines.runs import Runs
from tpsviz.engines.runsums import RunSums
from tpsviz.engines.sql import block_sql, checked_rows_sql, combine_sql, diagnose, per_run_sql, register_scores
from tpsviz.io.dataset import Dataset
from tpsviz.io.dataset.duckdb_source import strip_ids
from tpsviz.io.tables.run_ids import merged_ids_note

__all__ = ["sums_dask", "cluster", "poisson_intervals_on", "DaskEngine", "POISSON_WORDS"]

#: how the Dask engine's TPS intervals are computed (its :attr:`DaskEngine.intervals`)
POISSON_WORDS = "Poisson bootstrap, weights hashed from (trajectory id, replicate)"


class cluster:
    """A ``dask.distributed`` client: on ``scheduler`` when given, else on a new LocalCluster
    (closed on exit). Use as a context manager."""

    def __init__(self, scheduler: str | None = None, n_workers: int = 2):
        self.scheduler, self.n_workers = scheduler, n_workers
        self._cluster = self.client = None

    def __enter__(self):
        from dask.distributed import Client, LocalCluster  # (dask: only for the cluster engine)

        if self.scheduler:
            self.client = Client(self.scheduler)
        else:
            self._cluster = LocalCluster(n_workers=self.n_workers, threads_per_worker=1, processes=True,
                                         dashboard_address=None)
            self.client = Client(self._cluster)
        return self.client

    def __exit__(self, *exc):
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def _part(files: tuple, ds: Dataset, mapping, percent, types):
    """The sandboxed DuckDB of one partition (:func:`tpsviz.engines.duck.opened`), on a worker."""
    return duck.opened(dataclasses.replace(ds, files=tuple(files)), mapping, threads=1, percent=percent, types=types)


def _partition(files: tuple, ds: Dataset, settings: ScoreSettings, mapping, n_rows: int, percent=(),
               types=None) -> dict:
    """Map step, on a worker: partial aggregates of the partition's files."""
    with _part(files, ds, mapping, percent, types) as (con, source, plan):
        lookup = register_scores(con, settings, n_rows)
        rows_sql = checked_rows_sql(plan, source, settings, positional=False, lookup=lookup)
        blocks = con.sql(rows_sql + block_sql(plan, settings)).to_arrow_table()
        nbad = int(blocks.column("nbad").to_numpy().sum())
        nfuzz = int(blocks.column("nfuzz").to_numpy().sum()) if "nfuzz" in blocks.column_names else 0
        diag = diagnose(con, plan, rows_sql) if nbad or nfuzz else {}
        # no counts from a partition with a defect: the client refuses the dataset from its diagnosis,
        # and a forecast out of range (1e300, infinity) has no grid cell (a cast error)
        grid = con.sql(grid_sql(plan, rows_sql)).df() if not nbad else None
        return {"blocks": blocks, "diag": diag, "grid": grid, "conf": plan.conf, "notes": plan.notes,
                "id_type": plan.types.get("trajectory_id", "")}


def _exact(files: tuple, ds: Dataset, settings: ScoreSettings, mapping, need: list, partial=None,
           percent=(), types=None) -> pd.DataFrame:
    """Map step, on a worker: distinct-value counts of the predictors ``need`` (with those of
    the unlabelled rows of the ``partial`` runs, as :func:`_partial_grid`)."""
    with _part(files, ds, mapping, percent, types) as (con, source, plan):
        # scores are not read here: a closed form stands in so no UDF is needed
        rows_sql = checked_rows_sql(plan, source, dataclasses.replace(settings, alpha=0.0, beta=0.0),
                                    positional=False)
        out = con.sql(exact_sql(plan, rows_sql, need)).df()
        if partial is None:
            return out
        con.register(PARTIAL, partial)
        more = con.sql(exact_sql(plan, labelled_sql(plan, source, True, partial=True), need)).df()
        return pd.concat([out, more], ignore_index=True)


def _partial_grid(files: tuple, ds: Dataset, mapping, partial, percent=(), types=None) -> pd.DataFrame:
    """Map step, on a worker: the grid counts of the rows without an outcome of the runs that
    give it on some rows only (``partial``: their ids and outcomes), labelled with their run's
    outcome (the map step leaves them out: a run may span partitions)."""
    with _part(files, ds, mapping, percent, types) as (con, source, plan):
        con.register(PARTIAL, partial)
        return con.sql(grid_sql(plan, labelled_sql(plan, source, True, partial=True))).df()


def _combine_diag(diags: list[dict]) -> dict:
    """The partitions' diagnoses as one: counts added, the smallest example run kept."""
    out: dict = {}
    for d in diags:
        for key, val in d.items():
            if key.startswith("ex_"):
                if val is not None and (out.get(key) is None or str(val) < str(out[key])):
                    out[key] = val
            else:
                out[key] = int(out.get(key) or 0) + int(val or 0)
    return out


def sums_dask(ds: Dataset, settings: ScoreSettings, mapping=(), client=None, scheduler: str | None = None,
              files_per_partition: int = 1, percent=()) -> RunSums:
    """Per-trajectory sums of a dataset by a map-reduce on a Dask cluster.

    Parameters
    ----------
    ds : Dataset
    settings : ScoreSettings
    mapping : sequence of (target, column), optional
    client : dask.distributed.Client, optional
        A client to use (default: one on ``scheduler`` or a new 2-worker LocalCluster).
    scheduler : str, optional
        ``tcp://HOST:PORT`` of an existing cluster.
    files_per_partition : int
        Files read by one task.
    percent : iterable of str, optional
        Predictors given in percent, as :func:`tpsviz.engines.duck.sums_duckdb`.

    Returns
    -------
    RunSums
        As :func:`tpsviz.engines.duck.sums_duckdb`, with ``engine`` "dask".
    """
    if client is None:
        with cluster(scheduler) as c:
            return sums_dask(ds, settings, mapping, client=c, files_per_partition=files_per_partition,
                             percent=percent)
    groups = [tuple(ds.files[i:i + files_per_partition]) for i in range(0, ds.n_files, files_per_partition)]
    n_rows = ds.n_rows if ds.n_rows is not None else TABLE_MIN  # CSV: the table for any log of a cluster's size
    percent = tuple(percent)
    # the header is checked here, from the footers (on a worker a refusal is also logged there,
    # with its traceback); files of different types: every partition reads each column in the
    # dataset's type
    with duck.opened(ds, mapping, percent=percent) as (con, _, full):
        types, typed_notes = (None if ds.uniform else full.stored), duck.typed_ids_notes(con, ds, full)
    on_parts = dict(ds=ds, mapping=tuple(mapping), percent=percent, types=types, pure=False)
    parts = client.gather(client.map(_partition, groups, settings=settings, n_rows=n_rows, **on_parts))
    plan, runs, merged_ids = _reduce(ds, settings, parts)
    diag = _combine_diag([p["diag"] for p in parts])
    problems = duck.check_rows(ds, plan, runs, diag)
    if problems:
        raise LogFormatError(ds.label, problems)
    notes = list(dict.fromkeys([*ds.notes, *(n for p in parts for n in p["notes"])]))
    if merged_ids:
        notes.append(merged_ids_note(merged_ids))
    notes += typed_notes
    irregular = duck.numbering_note(runs, notes)
    if irregular and settings.schedule.name in ("linear", "front", "back"):
        raise LogFormatError(ds.label, [
            f"schedule {settings.schedule.spec} weighs each row's position in its run, and "
            f"{irregular} run(s) are not numbered 1..T: positions need a window over whole runs, "
            f"which the Dask engine does not compute across partitions; use {setting('out_of_core')}"])
    for k, col in enumerate(plan.conf):
        fz = int(diag.get(f"fuzz{k}") or 0)
        if fz:
            notes.append(f"{col}: {fz} value(s) within 1e-9 outside [0, 1] (float rounding) were set to 0 or 1.")
    grid = pd.concat([p["grid"] for p in parts], ignore_index=True)

    def pooled(n_lab: int, partial) -> dict:
        def exact(need):
            fut = client.map(_exact, groups, settings=settings, need=need, partial=partial, **on_parts)
            return pd.concat(client.gather(fut), ignore_index=True)
        counts = grid
        if partial is not None and plan.conf:
            fut = client.map(_partial_grid, groups, partial=partial, **on_parts)
            counts = pd.concat([grid, *client.gather(fut)], ignore_index=True)
        return pooled_from(counts, len(plan.conf), n_lab, exact)

    return duck.to_sums(ds, plan, settings, runs, notes, pooled, "dask")


def _reduce(ds: Dataset, settings: ScoreSettings, parts: list) -> tuple:
    """Reduce step, on the client: the partitions' partials of the same (run, block) combined and
    summed per run, in the order of the ids; (plan of the partials, runs, stored ids that were one
    run once stripped of whitespace)."""
    import duckdb  # (here, not at the top: the core's start-up stays without DuckDB)

    # blocks are grouped by the id as stored; stripped here (as tpsviz.load), ids that differ only
    # by surrounding whitespace combine as one run, as blocks of one run from two partitions do
    partials = pa.concat_tables([p["blocks"] for p in parts], promote_options="permissive")
    stored = partials.column("tid")
    ids, changed = strip_ids(stored)
    merged_ids = 0
    if changed:
        merged_ids = pc.count_distinct(stored).as_py() - pc.count_distinct(ids).as_py()
        partials = partials.set_column(partials.column_names.index("tid"), "tid", ids)
    con = duckdb.connect(config={"enable_external_access": False, "threads": 2})
    try:
        con.register("partials", partials)
        plan = _PlanView(parts[0]["conf"], parts[0]["blocks"].column_names, parts[0]["id_type"])
        runs = Runs.sorted_by_id(con.sql(per_run_sql(plan, settings, f"({combine_sql(plan, settings, 'partials')})"))
                                 .to_arrow_table())
    finally:
        con.close()
    return plan, runs, merged_ids


class _PlanView:
    """The parts of a plan the reduce needs (column presence and predictors), from the partials."""

    def __init__(self, conf: list, partial_columns: list, id_type: str = ""):
        self.conf = list(conf)
        self.signals: list = []
        self.types = {"trajectory_id": id_type}
        present = set(partial_columns)
        self.col = {name: name for name, key in (("censored", "cmin"), ("q_z", "qmin")) if key in present}
        self.col["trajectory_id"] = "trajectory_id"


def _poisson_chunk(values: np.ndarray, ids, seed: int, n_boot: int) -> np.ndarray:
    """Map step: Σ_i c_ib · values[i] of one chunk of runs (replicates × columns)."""
    sums, _ = poisson_sums(values, run_hashes(ids, seed), n_boot)
    return sums


def poisson_intervals_on(client, values: np.ndarray, valid: np.ndarray, ids, n_boot: int, seed: int,
                         level: float, chunk: int = 200_000) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tpsviz.engines.poisson.poisson_intervals`, with the weights drawn and summed on the
    cluster's workers chunk by chunk of runs (the result does not depend on the chunks).

    Parameters
    ----------
    client : dask.distributed.Client
    values, valid, ids, n_boot, seed, level
        As :func:`tpsviz.engines.poisson.poisson_intervals`.
    chunk : int
        Runs a task.

    Returns
    -------
    low, high : ndarray
    """
    n, k = values.shape
    if n_boot <= 0 or n < 2:
        return np.full(k, np.nan), np.full(k, np.nan)
    v, finite = prepared_values(values, valid)
    x = np.hstack([v, valid.astype(float)])
    ids = np.asarray(ids, dtype=object)
    futs = [client.submit(_poisson_chunk, x[i:i + chunk], ids[i:i + chunk], seed, n_boot, pure=False)
            for i in range(0, n, chunk)]
    return intervals_from_sums(sum(client.gather(futs)), finite, valid, level)


class DaskEngine(EngineBase):
    """The ``dask`` engine: a dataset scored by a map-reduce on a Dask cluster (:func:`sums_dask`),
    its TPS intervals by the Poisson bootstrap (:attr:`intervals`).

    Open (a context manager), it holds a client: ``client`` if given, else one on ``scheduler``
    or on a new LocalCluster of ``n_workers`` processes, closed again on leaving.

    Parameters
    ----------
    scheduler : str, optional
        ``tcp://HOST:PORT`` of an existing cluster.
    client : dask.distributed.Client, optional
        A client to use (it is not closed on leaving).
    n_workers : int
        Workers of the local cluster.
    """

    name = "dask"

    def __init__(self, scheduler: str | None = None, client=None, n_workers: int = 2):
        self.scheduler, self.client, self.n_workers = scheduler, client, n_workers
        self._cluster = None

    def __enter__(self):
        if self.client is None:
            self._cluster = cluster(self.scheduler, self.n_workers)
            self.client = self._cluster.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._cluster is not None:
            self._cluster.__exit__(*exc)
            self._cluster = self.client = None

    def runsums(self, source: Dataset, settings: ScoreSettings, *, mapping=(), percent=(),
                counts: bool = True) -> RunSums:
        """:func:`sums_dask` on the engine's client (the pooled counts are always counted, in the
        same map step; see :meth:`tpsviz.engines.interface.Engine.runsums`)."""
        return sums_dask(source, settings, mapping, client=self.client, scheduler=self.scheduler, percent=percent)

    @property
    def intervals(self):
        """The Poisson bootstrap of :func:`poisson_intervals_on` on the engine's client (on this
        process without one), as ``score_from_sums`` takes it."""
        client = self.client

        def intervals(values, valid, ids, st):
            if client is None:
                return poisson_intervals(values, valid, ids, st.n_boot, st.seed, st.level)
            return poisson_intervals_on(client, values, valid, ids, st.n_boot, st.seed, st.level)
        intervals.words = POISSON_WORDS
        return intervals

    def describe(self, why: str, intervals: bool = True) -> str:
        """``dask, map-reduce on`` the cluster ``(why)``, with its bootstrap if ``intervals``."""
        where = (f"scheduler {self.scheduler}" if self.scheduler
                 else f"a local cluster of {self.n_workers} worker processes")
        return f"dask, map-reduce on {where} ({why})" + (f"; CIs: {POISSON_WORDS}" if intervals else "")
