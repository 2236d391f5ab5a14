"""Inference over trajectories: the trajectory is the unit (steps within a run are dependent).

Means with standard errors, seeded percentile bootstrap CIs that resample whole
trajectories, and paired differences of two predictors on the same runs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from threading import Lock

import numpy as np

__all__ = ["Estimate", "mean_estimate", "paired_difference", "bootstrap_weights", "DEFAULT_SEED"]

DEFAULT_SEED = 20260101
# replicates drawn per chunk: bounds memory at chunk × n_trajectories counts
_CHUNK_CELLS = 4_000_000
# resampling counts kept for replay (uint8 cells, ≈ bytes): 100k runs × 2,000 replicates fit
_CACHE_MAX_CELLS = 450_000_000
_CACHE: OrderedDict = OrderedDict()
_CACHE_LOCK = Lock()


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its uncertainty.

    Attributes
    ----------
    mean : float
        Point estimate (mean over trajectories).
    se : float
        Standard error (sample sd / sqrt(n)); NaN when n < 2.
    ci_low, ci_high : float
        Percentile bootstrap interval resampling trajectories (NaN when n < 2).
    n : int
        Number of trajectories.
    level : float
        Confidence level of the interval.
    """

    mean: float
    se: float
    ci_low: float
    ci_high: float
    n: int
    level: float = 0.95


def _draw(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """The resampling counts (int64), chunk by chunk, straight from the generator."""
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_boot, _CHUNK_CELLS // max(n, 1)))
    done = 0
    while done < n_boot:
        m = min(chunk, n_boot - done)
        # m resamples of n indices; per-row counts by one bincount over offset indices
        idx = rng.integers(0, n, size=(m, n))
        idx += (np.arange(m) * n)[:, None]
        yield np.bincount(idx.ravel(), minlength=m * n).reshape(m, n)
        done += m


def bootstrap_weights(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Yield chunks of bootstrap resampling counts, shape (chunk, n), as float64.

    Row r gives how often each of the n trajectories is drawn in replicate r (n draws with
    replacement, i.e. a multinomial draw of n from n with equal probabilities). The same
    (n, n_boot, seed) always gives the same replicates, so two predictors scored on the same
    runs are resampled identically (a paired bootstrap).

    Drawing the counts is most of a bootstrap's cost on large logs, so the counts of recent
    (n, n_boot, seed) are kept in memory as uint8 (at most ``_CACHE_MAX_CELLS`` cells in all)
    and replayed: every later bootstrap with the same key (another statistic, a rerun after a
    setting changed) gets the identical replicates without drawing them again.

    Parameters
    ----------
    n : int
        Number of trajectories.
    n_boot : int
        Number of bootstrap replicates.
    seed : int
        Seed of ``numpy.random.default_rng``.
    """
    key = (int(n), int(n_boot), int(seed))
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
    if cached is not None:
        for counts in cached:
            yield counts.astype(np.float64)
        return
    keep = n * n_boot <= _CACHE_MAX_CELLS
    chunks = []
    for counts in _draw(n, n_boot, seed):
        if keep:
            if counts.max(initial=0) > 255:  # cannot happen in practice; never truncate
                keep = False
                chunks = []
            else:
                chunks.append(counts.astype(np.uint8))
        yield counts.astype(np.float64)
    if keep:
        with _CACHE_LOCK:
            _CACHE[key] = chunks
            total = sum(c.size for v in _CACHE.values() for c in v)
            while total > _CACHE_MAX_CELLS and len(_CACHE) > 1:
                _, old = _CACHE.popitem(last=False)
                total -= sum(c.size for c in old)


def _percentiles(reps: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def mean_estimate(
    values, n_boot: int = 2000, level: float = 0.95, seed: int = DEFAULT_SEED
) -> Estimate:
    """Mean over trajectories with SE and a seeded percentile bootstrap CI.

    Parameters
    ----------
    values : array_like
        One value per trajectory (e.g. per-trajectory TPS_i). Must be finite.
    n_boot : int
        Bootstrap replicates (0 skips the bootstrap; the CI is then NaN).
    level : float
        Confidence level in (0, 1).
    seed : int
        Bootstrap seed.

    Returns
    -------
    Estimate
    """
    v = np.asarray(values, dtype=float)
    n = v.size
    if n == 0:
        return Estimate(np.nan, np.nan, np.nan, np.nan, 0, level)
    mean = float(v.mean())
    if n < 2:
        return Estimate(mean, np.nan, np.nan, np.nan, n, level)
    se = float(v.std(ddof=1) / np.sqrt(n))
    if n_boot <= 0 or not np.isfinite(mean):
        return Estimate(mean, se, np.nan, np.nan, n, level)
    reps = np.concatenate([w @ v / n for w in bootstrap_weights(n, n_boot, seed)])
    lo, hi = _percentiles(reps, level)
    return Estimate(mean, se, lo, hi, n, level)


def paired_difference(
    a, b, n_boot: int = 2000, level: float = 0.95, seed: int = DEFAULT_SEED
) -> tuple[Estimate, float]:
    """Mean of the per-trajectory differences a_i - b_i, and its Δ/SE.

    Parameters
    ----------
    a, b : array_like
        Values of two predictors on the same trajectories, in the same order.

    Returns
    -------
    estimate : Estimate
        Mean difference, SE of the differences, bootstrap CI.
    z : float
        Δ / SE (NaN when SE is 0, at rounding level, or undefined).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired values must have the same shape (same trajectories)")
    est = mean_estimate(a - b, n_boot=n_boot, level=level, seed=seed)
    # an SE at rounding level (identical predictors up to float noise) gives no z
    tiny = 1e-12 * max(1.0, abs(est.mean)) if np.isfinite(est.mean) else np.inf
    z = est.mean / est.se if np.isfinite(est.se) and est.se > tiny else np.nan
    return est, float(z)
