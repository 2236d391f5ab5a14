"""Engines: where per-trajectory sums are computed (docs/architecture.md, "Engines").

``memory``  the loaded log, by numpy (:mod:`tpsviz.engines.memory`);
``duckdb``  a dataset of Parquet/CSV files, out of core (:mod:`tpsviz.engines.duck`).

Every engine returns :class:`~tpsviz.engines.runsums.RunSums`; :func:`score_from_sums` turns
them into TPS, skill and metrics the same way for all.
"""

from tpsviz.engines.runsums import DatasetScore, PooledCounts, RunSums, score_from_sums

__all__ = ["RunSums", "PooledCounts", "DatasetScore", "score_from_sums"]
