"""Inference over trajectories: the trajectory is the unit (steps within a run are dependent), or
the task when runs repeat tasks (docs/theory.md §6.1).

Means with standard errors, seeded bootstrap CIs that resample whole trajectories, and paired
differences of two predictors on the same runs. Given ``groups`` (the cluster of every run,
:func:`tpsviz.core.clusters.run_clusters`), the SE is cluster-robust (:func:`mean_se`) and the
bootstrap resamples whole clusters with all their runs.

The interval of a mean is **studentized** by default (the bootstrap-t: each replicate's
t* = (m* − m)/SE*, its SE* from the same resampled sums, and the interval
[m − t*_(1−a)·SE, m − t*_(a)·SE]). It corrects for the skew of a mean carried by a few runs (the long
runs of a heavy-tailed TPS), where the percentile interval undercovers (docs/validation.md). The
``percentile`` interval stays available: it is the out-of-core engines' only kind.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tpsviz.core import resample

__all__ = ["Estimate", "mean_estimate", "mean_se", "paired_difference", "bootstrap_weights", "group_sums",
           "bootstrap_sums", "column_mean_intervals", "percentile_intervals", "studentized_interval",
           "moment_columns", "replicate_means", "INTERVALS", "DEFAULT_SEED", "normal_quantile", "summary_interval"]

DEFAULT_SEED = 20260101
#: the bootstrap intervals of a mean: studentized (bootstrap-t, the default) or percentile
INTERVALS = ("studentized", "percentile")


def normal_quantile(level: float = 0.95) -> float:
    """z of a two-sided normal interval at ``level`` (1.95996… at 0.95)."""
    from statistics import NormalDist  # the standard library: no scipy import at start-up

    if not 0.0 < level < 1.0:
        raise ValueError(f"the level must be in (0, 1), got {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2)


def summary_interval(row, level: float = 0.95, prefix: str = "tps") -> tuple[float, float, str]:
    """(low, high, how) of an estimate in a summary row: the bootstrap CI (``<prefix>_ci_low``,
    ``<prefix>_ci_high``) when there is one (how = "bootstrap"), else ``<prefix>_mean`` ± z·SE
    (how = "se", the bootstrap off), else NaNs (how = "none")."""
    lo, hi = row.get(f"{prefix}_ci_low", np.nan), row.get(f"{prefix}_ci_high", np.nan)
    if np.isfinite(lo) and np.isfinite(hi):
        return float(lo), float(hi), "bootstrap"
    m, se = row.get(f"{prefix}_mean", np.nan), row.get(f"{prefix}_se", np.nan)
    if np.isfinite(m) and np.isfinite(se):
        z = normal_quantile(level)
        return float(m - z * se), float(m + z * se), "se"
    return np.nan, np.nan, "none"


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


def bootstrap_weights(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Yield chunks of bootstrap resampling counts, shape (chunk, n), as float64.

    Row r gives how often each of the n trajectories is drawn in replicate r (n draws with
    replacement, i.e. a multinomial draw of n from n with equal probabilities). The same
    (n, n_boot, seed) always gives the same replicates, so two predictors scored on the same
    runs are resampled identically (a paired bootstrap), and :func:`bootstrap_sums` uses
    the very same replicates. How the counts are drawn (exactly, fast) and kept for replay
    is described in :mod:`tpsviz.core.resample`.

    Parameters
    ----------
    n : int
        Number of trajectories.
    n_boot : int
        Number of bootstrap replicates.
    seed : int
        Seed of the replicates.
    """
    for counts in resample.count_blocks(n, n_boot, seed):
        yield counts.astype(np.float64)


def bootstrap_sums(x, n_boot: int, seed: int) -> np.ndarray:
    """Replicated sums over trajectories: C @ x for the resampling counts C (n_boot × n).

    Every statistic that is a function of a few sums over trajectories (a mean, a ratio of
    means, binned sums) is bootstrapped through this one product; the counts are never
    converted to float64 as a whole.

    Parameters
    ----------
    x : array_like
        Shape (n,) or (n, k), finite: one row per trajectory.
    n_boot, seed : int
        As in :func:`bootstrap_weights` (same replicates).

    Returns
    -------
    ndarray
        Shape (n_boot,) or (n_boot, k). The sums of a column of integers (counts, 0/1
        indicators of the runs a statistic covers) are exact integers.

    Notes
    -----
    The product centres each column (:func:`tpsviz.core.resample.counts_times`), which leaves
    rounding noise of order n·mean·2^-52 on every sum. For a column of integers the sum is an
    integer and is rounded to it: otherwise a replicate that draws none of a column's runs sums
    their count to ±1e-16 instead of 0, and a mean over them divides by it (a replicate of any
    size, where it should have been left out: the intervals of a predictor valid on a few runs
    went outside the range of its values).
    """
    x = np.asarray(x, dtype=np.float64)
    out = resample.counts_times(x, n_boot, seed)
    if x.size and out.size:
        whole = np.all(x == np.rint(x), axis=0)  # (NaN/inf: counts_times refuses them)
        if np.all(whole):
            np.rint(out, out=out)
        elif np.any(whole):
            out[..., whole] = np.rint(out[..., whole])
    return out


def column_mean_intervals(values: np.ndarray, valid: np.ndarray, n_boot: int, level: float,
                          seed: int, groups: np.ndarray | None = None,
                          interval: str = "studentized") -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap CIs of each column's mean over its valid rows, every column resampled with the same
    replicates (a paired trajectory bootstrap).

    Replicate b gives column j the mean  Σ_i c_bi v_ij [valid_ij] / Σ_i c_bi [valid_ij]  for the
    resampling counts c_bi of :func:`bootstrap_weights`; a replicate that draws none of a column's
    valid rows is left out of that column's quantiles. ``studentized`` (default): the bootstrap-t
    interval, each replicate's SE from the same sums (:func:`replicate_means`,
    :func:`studentized_interval`); ``percentile``: the replicates' quantiles. TPS per trajectory
    (``compute_tps``), TPS-k of a multi-class log and the CRPS-TPS of a continuous one take their
    intervals from it.

    Parameters
    ----------
    values : ndarray, shape (n, k)
        One row per trajectory, one column per predictor (anything where not valid).
    valid : ndarray of bool, shape (n, k)
        Which rows count for each column (e.g. the runs a predictor scores).
    n_boot : int
        Bootstrap replicates (0 or fewer: no interval).
    level : float
        Confidence level in (0, 1).
    seed : int
        Seed of the replicates (:func:`bootstrap_weights`).
    groups : ndarray of int, optional
        The cluster of every row, 0 … K−1 (:meth:`tpsviz.core.clusters.Clusters.groups`): a
        replicate then draws K clusters with all their rows, Σ_k c_k S_kj / Σ_k c_k N_kj with
        S and N the sums and valid counts of each cluster. None: rows are the units.
    interval : {"studentized", "percentile"}

    Returns
    -------
    low, high : ndarray, shape (k,)
        NaN for a column that has fewer than 2 valid rows (clusters) or a value on them that is
        not finite, and for every column when ``n_boot <= 0`` or there are fewer than 2 rows.
    """
    values = np.asarray(values, dtype=float)
    valid = np.asarray(valid, dtype=bool)
    n, k = values.shape
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    if n_boot <= 0 or n < 2 or k == 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    finite = np.array([np.isfinite(values[valid[:, j], j]).all() for j in range(k)])
    v = np.where(valid & np.isfinite(values), values, 0.0)
    units = valid.sum(axis=0) if groups is None else np.array([np.unique(groups[valid[:, j]]).size
                                                                for j in range(k)])
    if interval == "studentized":
        return _studentized_columns(v, valid, n_boot, level, seed, groups, finite, units)
    if groups is not None:
        sums = bootstrap_sums(group_sums(np.hstack([v, valid.astype(float)]), groups), n_boot, seed)
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = sums[:, :k] / sums[:, k:]
        return percentile_intervals(reps, finite, units, level)
    # replicated Σ c_i v_i and Σ c_i [valid_i]; a column valid on every run has Σ c_i = n
    partial = ~valid.all(axis=0)
    sums = bootstrap_sums(np.hstack([v, valid[:, partial].astype(float)]), n_boot, seed)
    den = np.full((n_boot, k), float(n))
    den[:, partial] = sums[:, k:]
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = sums[:, :k] / den
    return percentile_intervals(reps, finite, units, level)


def _studentized_columns(v, valid, n_boot, level, seed, groups, finite, units):
    """:func:`column_mean_intervals`' studentized intervals: the five moment columns of every column's
    units (runs, or clusters) bootstrapped with one set of replicates."""
    k = v.shape[1]
    sv, nv = (v, valid.astype(float)) if groups is None else (group_sums(v, groups),
                                                               group_sums(valid.astype(float), groups))
    with np.errstate(invalid="ignore", divide="ignore"):
        centers = np.where(finite, sv.sum(axis=0) / nv.sum(axis=0), 0.0)
    centers = np.where(np.isfinite(centers), centers, 0.0)
    cols = [moment_columns(sv[:, j], nv[:, j], centers[j]) for j in range(k)]
    sums = bootstrap_sums(np.hstack(cols), n_boot, seed)
    lo, hi = np.full(k, np.nan), np.full(k, np.nan)
    for j in range(k):
        if not (finite[j] and units[j] >= 2):
            continue
        m, se = replicate_means(cols[j].sum(axis=0)[None, :], int(units[j]), centers[j])
        m_reps, se_reps = replicate_means(sums[:, 5 * j:5 * j + 5], int(units[j]), centers[j])
        lo[j], hi[j] = studentized_interval(float(m[0]), float(se[0]), m_reps, se_reps, level)
    return lo, hi


def moment_columns(s, n, center: float = 0.0) -> np.ndarray:
    """The five sums a studentized bootstrap of a mean resamples, per unit (a run, or a cluster of
    runs): S, N, S², S·N, N², with S the unit's sum of values, less ``center`` each, and N its count.

    Parameters
    ----------
    s, n : array_like
        Per unit: the sum of its values and how many values it has (a run: its value and 1).
    center : float
        Subtracted from every value (the sample mean: the replicates' sums of squares then cancel less).

    Returns
    -------
    ndarray, shape (units, 5)
    """
    n = np.asarray(n, dtype=float)
    s = np.asarray(s, dtype=float) - center * n
    return np.column_stack([s, n, s * s, s * n, n * n])


def replicate_means(sums: np.ndarray, units: int, center: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and SE of every replicate from its resampled :func:`moment_columns` sums.

    With m = ΣS/ΣN, the centred sums e_k = S_k − m·N_k give
    Σ_k c_k e_k² = ΣcS² − 2m·ΣcSN + m²·ΣcN², and
    SE² = K/(K−1) · Σ_k c_k e_k² / (ΣcN)², the clustered SE of :func:`mean_se` (sd/√n by run) of the
    replicate (K: the units of the sample).

    Parameters
    ----------
    sums : ndarray, shape (replicates, 5)
        Resampled sums of S, N, S², S·N, N².
    units : int
        K, the units (runs or clusters) of the sample.
    center : float
        The ``center`` of :func:`moment_columns` (added back to the means).

    Returns
    -------
    means, ses : ndarray, shape (replicates,)
        NaN where a replicate has no value; an SE of 0 where the centred sums cancel to rounding (a
        replicate that drew one value).
    """
    ss, sn, ss2, ssn, sn2 = (sums[:, i] for i in range(5))
    with np.errstate(invalid="ignore", divide="ignore"):
        m = ss / sn
        e2 = ss2 - 2 * m * ssn + m * m * sn2
        e2 = np.where(e2 > 1e-12 * (ss2 + m * m * sn2), e2, 0.0)  # (Σ c e² ≥ 0: below rounding it is 0)
        se = np.sqrt(units / max(units - 1, 1) * e2) / sn
    return m + center, se


def studentized_interval(mean: float, se: float, mean_reps: np.ndarray, se_reps: np.ndarray,
                         level: float) -> tuple[float, float]:
    """The bootstrap-t interval [m − t*_(1−a)·SE, m − t*_(a)·SE] of a mean, a = (1 − level)/2.

    Parameters
    ----------
    mean, se : float
        The sample's estimate and its SE.
    mean_reps, se_reps : ndarray
        Every replicate's estimate and SE (:func:`replicate_means`); a replicate with an SE of 0 (one
        value drawn) or none is left out.
    level : float

    Returns
    -------
    low, high : float
        NaN without a finite SE or with fewer than 2 usable replicates.
    """
    if not (np.isfinite(mean) and np.isfinite(se)):
        return np.nan, np.nan
    ok = np.isfinite(mean_reps) & np.isfinite(se_reps) & (se_reps > 0)  # (one value drawn: no SE)
    if ok.sum() < 2:
        return np.nan, np.nan
    t = (mean_reps[ok] - mean) / se_reps[ok]
    a = (1 - level) / 2
    t_lo, t_hi = np.quantile(t, [a, 1 - a])
    return float(mean - t_hi * se), float(mean - t_lo * se)


def percentile_intervals(reps: np.ndarray, finite: np.ndarray, n_valid: np.ndarray,
                         level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of replicated means, column by column.

    Parameters
    ----------
    reps : ndarray, shape (n_boot, k)
        The replicated means (a non-finite replicate is left out of its column's quantiles).
    finite : ndarray of bool, shape (k,)
        Whether each column is finite on its valid runs.
    n_valid : ndarray of int, shape (k,)
        Each column's valid runs.
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    low, high : ndarray, shape (k,)
        NaN for a column that is not finite or has fewer than 2 valid runs.
    """
    k = reps.shape[1]
    lo = np.full(k, np.nan)
    hi = np.full(k, np.nan)
    a = (1 - level) / 2
    for j in range(k):
        if finite[j] and n_valid[j] >= 2:
            r = reps[:, j]
            r = r[np.isfinite(r)]
            lo[j], hi[j] = np.quantile(r, [a, 1 - a])
    return lo, hi


def group_sums(x, groups: np.ndarray) -> np.ndarray:
    """Column sums of ``x`` within each group: shape (G, k), G = ``groups.max() + 1``. A
    bootstrap of these rows resamples groups of trajectories.

    ``x``: one row per trajectory (n × k), or a list of k columns of n values each (at millions of
    runs, stacking the columns into one array first costs more than their sums)."""
    if isinstance(x, (list, tuple)):
        columns = [np.asarray(c, dtype=float) for c in x]
    else:
        x = np.asarray(x, dtype=float)
        columns = [x[:, j] for j in range(x.shape[1])]
    g = int(groups.max()) + 1 if groups.size else 0
    if not columns:
        return np.zeros((g, 0))
    return np.column_stack([np.bincount(groups, weights=c, minlength=g) for c in columns])


def _percentiles(reps: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def mean_se(values, groups: np.ndarray | None = None) -> float:
    """SE of the mean of one value per run, by run or clustered (docs/theory.md §6.1).

    By run: sd/√n (ddof 1). Clustered: with m the mean, e_k = Σ_{i in cluster k} (v_i − m) the
    centred sum of cluster k and K the clusters present,

        SE² = K/(K−1) · Σ_k e_k² / n²

    the cluster-robust (sandwich) variance of a mean, with the small-sample factor K/(K−1). When
    every cluster holds one run (K = n) it is exactly sd²/n: the SE by run.

    Parameters
    ----------
    values : array_like
        One value per run.
    groups : ndarray of int, optional
        The cluster of every run (non-negative codes; absent codes are no cluster). None: by run.

    Returns
    -------
    float
        NaN with fewer than 2 runs (clusters) or a mean that is not finite.
    """
    v = np.asarray(values, dtype=float)
    n = v.size
    if n < 2:
        return np.nan
    mean = float(v.mean())
    if not np.isfinite(mean):
        return np.nan
    if groups is None:
        return float(v.std(ddof=1) / np.sqrt(n))
    g = np.asarray(groups)
    e = np.bincount(g, weights=v - mean)
    k = int(np.count_nonzero(np.bincount(g)))
    if k < 2:
        return np.nan
    return float(np.sqrt(k / (k - 1) * float(e @ e)) / n)


def mean_estimate(
    values, n_boot: int = 2000, level: float = 0.95, seed: int = DEFAULT_SEED,
    groups: np.ndarray | None = None, interval: str = "studentized",
) -> Estimate:
    """Mean over trajectories with SE and a seeded bootstrap CI (studentized by default).

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
    groups : ndarray of int, optional
        The cluster of every trajectory (non-negative codes): the SE is
        clustered (:func:`mean_se`) and the bootstrap resamples whole clusters (ratio
        Σ c_k S_k / Σ c_k n_k). None: by trajectory.
    interval : {"studentized", "percentile"}
        The bootstrap-t interval (module docstring) or the replicates' percentiles.

    Returns
    -------
    Estimate
        ``n`` is the number of trajectories.
    """
    v = np.asarray(values, dtype=float)
    n = v.size
    if n == 0:
        return Estimate(np.nan, np.nan, np.nan, np.nan, 0, level)
    mean = float(v.mean())
    if n < 2:
        return Estimate(mean, np.nan, np.nan, np.nan, n, level)
    if groups is not None:  # codes 0 … K−1 (an absent code would be a cluster of no run, drawn all the same)
        groups = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
    se = mean_se(v, groups)
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    if n_boot <= 0 or not np.isfinite(mean) or not np.isfinite(se):
        return Estimate(mean, se, np.nan, np.nan, n, level)
    if interval == "studentized":
        s, c = (v, np.ones(n)) if groups is None else (group_sums(v[:, None], groups)[:, 0],
                                                       np.bincount(groups).astype(float))
        m_reps, se_reps = replicate_means(bootstrap_sums(moment_columns(s, c, mean), n_boot, seed), int(c.size),
                                          mean)
        lo, hi = studentized_interval(mean, se, m_reps, se_reps, level)
        return Estimate(mean, se, lo, hi, n, level)
    if groups is None:
        reps = bootstrap_sums(v, n_boot, seed) / n
    else:
        s = bootstrap_sums(group_sums(np.column_stack([v, np.ones(n)]), groups), n_boot, seed)
        reps = s[:, 0] / s[:, 1]
    lo, hi = _percentiles(reps[np.isfinite(reps)], level)
    return Estimate(mean, se, lo, hi, n, level)


def paired_difference(
    a, b, n_boot: int = 2000, level: float = 0.95, seed: int = DEFAULT_SEED,
    groups: np.ndarray | None = None, interval: str = "studentized",
) -> tuple[Estimate, float]:
    """Mean of the per-trajectory differences a_i - b_i, and its Δ/SE.

    Parameters
    ----------
    a, b : array_like
        Values of two predictors on the same trajectories, in the same order.
    groups : ndarray of int, optional
        The cluster of every trajectory (as in :func:`mean_estimate`): the differences stay
        paired by run, their SE and bootstrap are clustered.
    interval : {"studentized", "percentile"}
        As in :func:`mean_estimate`.

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
    est = mean_estimate(a - b, n_boot=n_boot, level=level, seed=seed, groups=groups, interval=interval)
    # an SE at rounding level (identical predictors up to float noise) gives no z
    tiny = 1e-12 * max(1.0, abs(est.mean)) if np.isfinite(est.mean) else np.inf
    z = est.mean / est.se if np.isfinite(est.se) and est.se > tiny else np.nan
    return est, float(z)
