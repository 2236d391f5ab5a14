"""A Poisson bootstrap whose weights depend on (trajectory id, replicate, seed) alone.

Each run i carries, in replicate b, a weight c_ib ~ Poisson(1) drawn from a hash of its id, the
seed and b (blake2b of the id, then splitmix64 of the hash and b, then the Poisson(1) inverse CDF).
A replicate's mean is Σ_i c_ib v_i / Σ_i c_ib. Because a weight never depends on where a run
sits — which file, partition or worker — the intervals are the same on any cluster shape and
in any row order, which a multinomial draw over positions is not. For many runs the Poisson and
the multinomial bootstrap estimate the same sampling law (the counts of a multinomial are
Poisson(1) draws conditioned on their sum n); ``tests/test_engines.py`` checks the two intervals
agree within Monte-Carlo error.
"""

from __future__ import annotations

import hashlib

import numpy as np
from scipy import stats

from tpsviz.core.inference import percentile_intervals

__all__ = ["run_hashes", "poisson_weights", "poisson_sums", "poisson_intervals", "intervals_from_sums",
           "prepared_values"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
#: Poisson(1) CDF at 0, 1, …, 19 (a weight of 20 or more has probability below 1e-19)
_CDF = stats.poisson.cdf(np.arange(20), 1.0)
# the same CDF on the 53-bit integers u53 that make u = u53 / 2^53: u ≥ CDF[j] exactly when
# u53 ≥ ceil(CDF[j] · 2^53) (scaling by a power of two is exact), so no float conversion
_THRESHOLDS = np.ceil(_CDF * 2.0 ** 53).astype(np.uint64)
# runs × replicates drawn at once: blocks of 2 MB stay in cache (at 854,540 runs and 200 replicates,
# 25–27 ns a run and replicate from 2^16 to 2^20 cells, against 63–67 ns for 2^23 cells by whole
# replicates; 2026-12-03)
_CELLS = 1 << 18


def run_hashes(ids, seed: int) -> np.ndarray:
    """A 64-bit hash of every trajectory id (as text) under a seed."""
    key = int(seed).to_bytes(8, "little", signed=False)
    return np.fromiter((int.from_bytes(hashlib.blake2b(str(i).encode("utf-8"), digest_size=8, key=key).digest(),
                                       "little") for i in ids), dtype=np.uint64, count=len(ids))


def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
        return x ^ (x >> np.uint64(31))


def poisson_weights(hashes: np.ndarray, b0: int, b1: int) -> np.ndarray:
    """Weights c_ib ~ Poisson(1) of replicates b0 … b1−1 (runs × replicates, uint8)."""
    b = np.arange(b0, b1, dtype=np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        x = _splitmix(hashes[:, None] ^ (b[None, :] * _M2))
    x >>= np.uint64(11)  # u53: the uniform u = u53 / 2^53
    return np.searchsorted(_THRESHOLDS, x, side="right").astype(np.uint8)


def poisson_sums(values: np.ndarray, hashes: np.ndarray, n_boot: int) -> tuple[np.ndarray, np.ndarray]:
    """Σ_i c_ib · values[i, j] and Σ_i c_ib for every replicate b.

    Returns
    -------
    sums : ndarray (n_boot, k)
    weight : ndarray (n_boot,)
    """
    n, k = values.shape
    sums = np.zeros((n_boot, k))
    weight = np.zeros(n_boot)
    step = max(1, min(n_boot, _CELLS // max(n, 1)))  # replicates a block
    rows = max(1, _CELLS // step)  # runs a block (the sums add up block by block)
    for b0 in range(0, n_boot, step):
        b1 = min(b0 + step, n_boot)
        for r0 in range(0, n, rows):
            c = poisson_weights(hashes[r0:r0 + rows], b0, b1).astype(np.float64)
            sums[b0:b1] += c.T @ values[r0:r0 + rows]
            weight[b0:b1] += c.sum(axis=0)
    return sums, weight


def poisson_intervals(values: np.ndarray, valid: np.ndarray, ids, n_boot: int, seed: int,
                      level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals for the mean of each column over its valid runs, Poisson-weighted.

    Parameters
    ----------
    values, valid : ndarray (runs, k)
        Per-run values and which of them count (a column's mean runs over its valid runs).
    ids : sequence
        The runs' trajectory ids (the weights follow them, not their positions).
    n_boot, seed, level
        Replicates, seed, confidence level.
    """
    n, k = values.shape
    if n_boot <= 0 or n < 2:
        return np.full(k, np.nan), np.full(k, np.nan)
    v, finite = prepared_values(values, valid)
    sums, _ = poisson_sums(np.hstack([v, valid.astype(float)]), run_hashes(ids, seed), n_boot)
    return intervals_from_sums(sums, finite, valid, level)


def prepared_values(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values a replicate sums: 0 where not valid or not finite.

    Parameters
    ----------
    values, valid : ndarray (runs, k)
        As :func:`poisson_intervals`.

    Returns
    -------
    values : ndarray (runs, k)
        A copy, 0 where not valid or not finite.
    finite : ndarray (k,)
        Which columns are finite on their valid runs (the others have no interval).
    """
    v = np.where(valid, values, 0.0)
    finite = np.isfinite(v).all(axis=0)
    v[~np.isfinite(v)] = 0.0
    return v, finite


def intervals_from_sums(sums: np.ndarray, finite: np.ndarray, valid: np.ndarray,
                        level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals from replicated (Σ c·v of k columns, Σ c·valid of the same columns)."""
    k = valid.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = sums[:, :k] / sums[:, k:]
    return percentile_intervals(reps, finite, valid.sum(axis=0), level)
