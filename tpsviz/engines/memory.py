"""The in-memory engine: per-trajectory sums (:class:`~tpsviz.engines.runsums.RunSums`) of a
log loaded by :func:`tpsviz.load`, by numpy over its step rows (:class:`MemoryEngine`, the
``memory`` implementation of :class:`~tpsviz.engines.interface.Engine`).

The sums come from :func:`tpsviz.core.trajectory_sums.trajectory_sums`, the one function that
sums a log's step rows per run in memory. ``tpsviz score --engine memory``, :func:`tpsviz.evaluate`
and the dashboard score a loaded log with :func:`tpsviz.compute_tps`, which calls that same function
and the same combination ℓ·A1 + (1 − ℓ)·A0 as :func:`~tpsviz.engines.runsums.score_from_sums`,
and keeps what needs the step rows (verdicts, caveats, the per-step table, intervals clustered by
task). :class:`MemoryEngine` gives the same sums through the engine interface, as
:class:`RunSums` for :func:`~tpsviz.engines.runsums.score_from_sums`: what the out-of-core
engines are compared with (``tests/test_engines.py``, ``tests/test_engine_parity.py``,
``tests/test_engines_interface.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import ScoreSettings
from tpsviz.core.trajectory_sums import RunRows, trajectory_sums
from tpsviz.diagnostics.metrics import bin_edges, bin_index
from tpsviz.engines.interface import EngineBase
from tpsviz.engines.runsums import PooledCounts, RunSums
from tpsviz.io.dataset import Dataset
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.io.loading import load

__all__ = ["sums_in_memory", "MemoryEngine"]


def pooled_counts(p: np.ndarray, y: np.ndarray, n_bins: int = 10) -> PooledCounts:
    """Exact counts per distinct forecast value and the T-ECE bins of labelled rows."""
    value, inv = np.unique(p, return_inverse=True)
    pos = np.bincount(inv, weights=y, minlength=value.size)
    neg = np.bincount(inv, weights=1.0 - y, minlength=value.size)
    b = bin_index(p, bin_edges(p, n_bins))
    return PooledCounts(value, pos, neg, True, 0, np.bincount(b, weights=p - y, minlength=n_bins),
                        np.bincount(b, minlength=n_bins).astype(float), np.bincount(b, weights=y, minlength=n_bins))


def sums_in_memory(data: TrajectoryData, settings: ScoreSettings) -> RunSums:
    """Per-trajectory sums A1, A0, W of every predictor of a loaded log.

    The sums are :func:`tpsviz.core.trajectory_sums.trajectory_sums`, the function
    :func:`tpsviz.compute_tps` scores from: A1 on the runs that can end in success (Y = 1 or
    censored), A0 on those that can end in failure, as the out-of-core engines sum them. Added here:
    the pooled counts of the rank and calibration metrics.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
        α, β, ε and the schedule (the censoring mode does not enter the sums).

    Returns
    -------
    RunSums
    """
    t = data.trajectories
    codes = data.steps["traj"].to_numpy()
    cens = t["censored"].to_numpy(dtype=bool)
    y_run = t["outcome"].to_numpy(dtype=float)
    rows = RunRows.of(data, cens | (y_run == 1.0), cens | (y_run == 0.0), settings.schedule)
    y_row = y_run[codes]
    fields = {k: {} for k in ("a1", "a0", "wsum", "n_present", "n_clipped", "last")}
    pooled = {}
    for name in data.predictors:
        p = data.forecasts(name)
        sums = trajectory_sums(p, rows, settings.alpha, settings.beta, settings.eps)
        for k, v in fields.items():
            v[name] = getattr(sums, k)
        lab = ~np.isnan(p) & ~np.isnan(y_row)
        pooled[name] = pooled_counts(p[lab], y_row[lab])
    runs = pd.DataFrame({"trajectory_id": t["trajectory_id"].to_numpy(), "length": t["length"].to_numpy(),
                         "outcome": y_run, "censored": cens,
                         "q_z": t["q_z"].to_numpy(dtype=float)})
    return RunSums(data.source, "memory", settings, runs, list(data.predictors), **fields, pooled=pooled,
                   n_steps=data.n_steps, notes=list(data.notes))


class MemoryEngine(EngineBase):
    """The ``memory`` engine: a log read into memory (:func:`tpsviz.load`, within
    ``TPSVIZ_MAX_ROWS``) and summed by numpy (:func:`sums_in_memory`, the sums
    :func:`tpsviz.compute_tps` scores from); what the others are compared with."""

    name = "memory"

    def runsums(self, source, settings: ScoreSettings, *, mapping=(), percent=(), counts: bool = True) -> RunSums:
        """:func:`sums_in_memory` of ``source``: a loaded log, or a dataset (or any path
        :func:`tpsviz.load` reads) read with ``mapping`` and ``percent`` first (see
        :meth:`tpsviz.engines.interface.Engine.runsums`; the pooled counts are always counted)."""
        if not isinstance(source, TrajectoryData):
            spec = source.label if isinstance(source, Dataset) else source  # (the folder or pattern given)
            source = load(spec, options=ReadOptions(mapping=tuple(mapping), percent=tuple(percent)))
        return sums_in_memory(source, settings)
