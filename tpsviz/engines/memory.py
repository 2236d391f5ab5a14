"""The in-memory engine: per-trajectory sums (:class:`~tpsviz.engines.runsums.RunSums`) of a
log loaded by :func:`tpsviz.load`, by numpy over its step rows (:class:`MemoryEngine`, the
``memory`` implementation of :class:`~tpsviz.engines.interface.Engine`).

It is the oracle the out-of-core engines are tested against (``tests/test_engines.py``,
``tests/test_engine_parity.py``, ``tests/test_engines_interface.py``). ``tpsviz score --engine
memory`` does not go through it: that path scores the loaded log with
:func:`tpsviz.compute_tps`, which also gives what needs the step rows (verdicts, caveats, the
per-step table); the tests hold the two to the same numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.scores import TABLE_MIN, beta_score
from tpsviz.core.tps import ScoreSettings, step_weights
from tpsviz.diagnostics.metrics import bin_edges, bin_index
from tpsviz.engines.interface import EngineBase
from tpsviz.engines.runsums import PooledCounts, RunSums
from tpsviz.io.dataset import Dataset
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.io.loading import load

__all__ = ["sums_in_memory", "MemoryEngine"]


def _by_run(values: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(codes, weights=values, minlength=n)


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
    n = len(t)
    codes = data.steps["traj"].to_numpy()
    cens = t["censored"].to_numpy(dtype=bool)
    y_run = t["outcome"].to_numpy(dtype=float)
    y_row = y_run[codes]
    need1 = (cens | (y_run == 1.0))[codes]
    need0 = (cens | (y_run == 0.0))[codes]
    w = (None if settings.schedule.name == "uniform" else step_weights(data, settings.schedule))
    table = data.n_steps >= TABLE_MIN
    eps = float(settings.eps)
    a1, a0, wsum, n_present, n_clipped, last, pooled = {}, {}, {}, {}, {}, {}, {}
    for name in data.predictors:
        p = data.forecasts(name)
        present = ~np.isnan(p)
        pc = np.clip(p, eps, 1.0 - eps) if eps > 0 else p
        clipped = present & ((p < eps) | (p > 1.0 - eps)) if eps > 0 else np.zeros(p.shape, bool)
        sums = {}
        for branch, need in ((1, need1), (0, need0)):
            rows = present & need
            s = np.zeros(p.shape)
            s[rows] = beta_score(pc[rows], branch, settings.alpha, settings.beta, table)
            if w is not None:
                with np.errstate(invalid="ignore"):
                    s = np.where(w == 0, 0.0, w * s)  # w = 0 with S = -inf contributes 0
            sums[branch] = np.where(np.bincount(codes, weights=rows, minlength=n) > 0,
                                    _by_run(s, codes, n), np.nan)
        a1[name], a0[name] = sums[1], sums[0]
        wsum[name] = _by_run(present.astype(float) if w is None else np.where(present, w, 0.0), codes, n)
        n_present[name] = np.bincount(codes, weights=present, minlength=n).astype(np.int64)
        n_clipped[name] = np.bincount(codes, weights=clipped, minlength=n).astype(np.int64)
        idx = np.flatnonzero(present)
        fin = idx[np.r_[codes[idx][1:] != codes[idx][:-1], True]] if idx.size else idx
        last[name] = np.full(n, np.nan)
        last[name][codes[fin]] = p[fin]
        lab = present & ~np.isnan(y_row)
        pooled[name] = pooled_counts(p[lab], y_row[lab])
    runs = pd.DataFrame({"trajectory_id": t["trajectory_id"].to_numpy(), "length": t["length"].to_numpy(),
                         "outcome": y_run, "censored": cens,
                         "q_z": t["q_z"].to_numpy(dtype=float)})
    return RunSums(data.source, "memory", settings, runs, list(data.predictors), a1, a0, wsum,
                   n_present, n_clipped, last, pooled, data.n_steps, list(data.notes))


class MemoryEngine(EngineBase):
    """The ``memory`` engine: a log read into memory (:func:`tpsviz.load`, within
    ``TPSVIZ_MAX_ROWS``) and summed by numpy (:func:`sums_in_memory`); the oracle of the others."""

    name = "memory"

    def runsums(self, source, settings: ScoreSettings, *, mapping=(), percent=(), counts: bool = True) -> RunSums:
        """:func:`sums_in_memory` of ``source``: a loaded log, or a dataset (or any path
        :func:`tpsviz.load` reads) read with ``mapping`` and ``percent`` first (see
        :meth:`tpsviz.engines.interface.Engine.runsums`; the pooled counts are always counted)."""
        if not isinstance(source, TrajectoryData):
            spec = source.label if isinstance(source, Dataset) else source  # (the folder or pattern given)
            source = load(spec, options=ReadOptions(mapping=tuple(mapping), percent=tuple(percent)))
        return sums_in_memory(source, settings)
