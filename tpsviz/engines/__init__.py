"""Engines: where per-trajectory sums are computed (docs/architecture.md, "Engines").

``memory``  a log read into memory, by numpy (:mod:`tpsviz.engines.memory`): the sums of
            :func:`tpsviz.core.trajectory_sums.trajectory_sums`, which :func:`tpsviz.compute_tps`
            scores from;
``duckdb``  a dataset of Parquet/CSV files, out of core (:mod:`tpsviz.engines.duck`);
``dask``    the same as a map-reduce on a Dask cluster (:mod:`tpsviz.engines.dask_engine`).

Each implements :class:`~tpsviz.engines.interface.Engine` (:func:`get_engine` gives one by name)
and returns :class:`~tpsviz.engines.runsums.RunSums`;
:func:`~tpsviz.engines.runsums.score_from_sums` turns them into TPS, skill and metrics the same
way for all. This module imports no engine until one is asked for, so that choosing an engine
costs the command line nothing.
"""

from __future__ import annotations

__all__ = ["get_engine", "ENGINE_NAMES", "OUT_OF_CORE"]

#: every engine, by name
ENGINE_NAMES = ("memory", "duckdb", "dask")
#: the engines that read a dataset's files where they are, not into memory
OUT_OF_CORE = ("duckdb", "dask")


def get_engine(name: str, *, scheduler: str | None = None, client=None):
    """The engine called ``name`` (an :class:`~tpsviz.engines.interface.Engine`; open it with
    ``with`` before use).

    Parameters
    ----------
    name : str
        One of :data:`ENGINE_NAMES`.
    scheduler : str, optional
        Dask: ``tcp://HOST:PORT`` of an existing cluster (default: a local cluster of 2 worker
        processes while the engine is open). The other engines take no cluster.
    client : dask.distributed.Client, optional
        Dask: a client to use instead.

    Returns
    -------
    Engine

    Raises
    ------
    ValueError
        For an unknown name.
    """
    # (each engine's module imported when asked for: DuckDB's and Dask's stay out of tpsviz's start-up)
    if name == "memory":
        from tpsviz.engines.memory import MemoryEngine

        return MemoryEngine()
    if name == "duckdb":
        from tpsviz.engines.duck import DuckDBEngine

        return DuckDBEngine()
    if name == "dask":
        from tpsviz.engines.dask_engine import DaskEngine

        return DaskEngine(scheduler=scheduler, client=client)
    raise ValueError(f"unknown engine {name!r}: one of {', '.join(ENGINE_NAMES)}")
