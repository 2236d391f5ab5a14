"""Trajectory-bootstrap uncertainty of the metrics of :mod:`tpsviz.diagnostics.metrics`.

Inference resamples whole trajectories (``tpsviz.core.inference.bootstrap_weights``): a replicate
gives every row the resampling count of its trajectory as a weight, so AUROC of a replicate is
a weighted AUROC. A *statistic* evaluates one metric on many weight vectors at once: T-ECE, and
AUROC/AUPRC to first order (large logs), are a few sums over trajectories, replicated by one
product with the resampling counts; exact AUROC/AUPRC share one sort of the rows. ``bootstrap_metric``
and ``paired_metric_difference`` evaluate every replicate without materialising the resampled data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpsviz.core.inference import DEFAULT_SEED, Estimate, bootstrap_sums, bootstrap_weights, group_sums
from tpsviz.diagnostics.metrics import (
    METRICS, bin_edges, bin_index, check_rows, metric_point, trajectory_codes, value_groups)

__all__ = [
    "PairedMetric",
    "metric_replicates",
    "metric_statistic",
    "replicate_statistics",
    "MeanStat",
    "replicate_summary",
    "bootstrap_metric",
    "paired_metric_difference",
    "LINEAR_MIN_CELLS",
    "LINEAR_MIN_TRAJECTORIES",
]

# the dense (trajectory × distinct value) path of the AUROC/AUPRC bootstraps is used up to this
# size, and while its arithmetic (trajectories × values) stays within _DENSE_PER_ROW per row:
# a BLAS product costs ~100× less per element than the per-replicate row pass it replaces
_DENSE_CELLS = 8_000_000
_DENSE_PER_ROW = 100


def _use_dense(k: int, n: int, rows: int) -> bool:
    """Dense path for k distinct values, n trajectories and ``rows`` rows?"""
    return 2 * k * n <= _DENSE_CELLS and k * n <= _DENSE_PER_ROW * rows


def _ap_rows(tp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Average precision of each row of cumulative (tp, fp) counts over decreasing thresholds."""
    step = np.diff(tp, axis=1, prepend=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        ap = np.einsum("ij,ij->i", step, precision) / tp[:, -1]
    return np.where(tp[:, -1] > 0, ap, np.nan)


def _row_slices(m: int, width: int, cells: int = 1 << 22) -> list[tuple[int, int]]:
    """Slices of m replicates such that each slice × width stays within ``cells``."""
    step = max(1, cells // max(width, 1))
    return [(r0, min(r0 + step, m)) for r0 in range(0, m, step)]


# --------------------------------------------------------------------------- bootstrap
class _AurocStat:
    """Weighted AUROC of many trajectory-weight vectors, sharing one sort.

    Dense path (few distinct values): per-value positive/negative weights are one matrix
    product of the weights with a (trajectory × value) count table. Row path: with rows
    sorted by (p, y), U = Σ_pos rw_i C_i − (W_1² + Σ_pos rw_i²)/2 − ½ Σ_ties P_k N_k, with
    C_i the inclusive cumulative weight; every quantity is an integer, so it is exact
    (the weights must be integer resampling counts).
    """

    def __init__(self, p, y, g, n):
        order = np.lexsort((y, p))
        ps, ys, gs = p[order], y[order], g[order]
        new = np.empty(ps.size, dtype=bool)
        new[0] = True
        np.not_equal(ps[1:], ps[:-1], out=new[1:])
        key = np.cumsum(new) - 1
        k = int(key[-1]) + 1
        pos = ys == 1
        self.npos = np.bincount(gs[pos], minlength=n).astype(float)
        self.nneg = np.bincount(gs[~pos], minlength=n).astype(float)
        self.dense = None
        if _use_dense(k, n, p.size):
            table = np.zeros((n, 2 * k))
            np.add.at(table, (gs, key + k * (~pos)), 1.0)
            self.dense, self.k = table, k
            return
        self.gs, self.posi = gs, pos.astype(np.int64)
        npk = np.bincount(key, weights=pos, minlength=k)
        nnk = np.bincount(key, minlength=k) - npk
        mixed = ((npk > 0) & (nnk > 0))[key]
        self.tie_g, self.tie_pos = gs[mixed], pos[mixed].astype(np.int64)
        tie_key = key[mixed]  # non-decreasing: rows are sorted by forecast
        self.tie_start = np.flatnonzero(np.r_[True, tie_key[1:] != tie_key[:-1]])

    def __call__(self, wc: np.ndarray) -> np.ndarray:
        w1, w0 = wc @ self.npos, wc @ self.nneg
        if self.dense is not None:
            pn = wc @ self.dense
            pos, neg = pn[:, : self.k], pn[:, self.k:]
            below = np.cumsum(neg, axis=1) - neg
            u = np.einsum("ij,ij->i", pos, below + 0.5 * neg)
        else:
            u = np.empty(wc.shape[0])
            sq = (wc * wc) @ self.npos
            # bootstrap counts are integers: exact integer sums; a few replicates at a time
            w_int = wc.astype(np.int64)
            for r0, r1 in _row_slices(wc.shape[0], self.gs.size):
                rw = w_int[r0:r1].take(self.gs, axis=1)
                c = np.cumsum(rw, axis=1)
                c *= rw
                u[r0:r1] = c @ self.posi
                if self.tie_g.size:
                    tw = w_int[r0:r1].take(self.tie_g, axis=1)
                    pk = np.add.reduceat(tw * self.tie_pos, self.tie_start, axis=1)
                    nk = np.add.reduceat(tw * (1 - self.tie_pos), self.tie_start, axis=1)
                    u[r0:r1] -= 0.5 * np.einsum("ij,ij->i", pk, nk)
            u -= 0.5 * (w1 * w1 + sq)
        with np.errstate(invalid="ignore", divide="ignore"):
            return u / (w1 * w0)


class _AurocLinearStat:
    """First-order (influence-function) AUROC replicates for large logs.

    With trajectory resampling counts c, AUROC(c) = A + Σ_a (c_a - 1) ψ_a + O(1/n), where
    ψ_a = Σ_{i in a, y=1} V10_i / n1 + Σ_{j in a, y=0} V01_j / n0 - A (n1_a / n1 + n0_a / n0)
    and V10, V01 are the DeLong placement values (share of the other class ranked below,
    ties ½). Σ_a ψ_a = 0, so a replicate is A + c·ψ: one matrix product, like TPS. Its
    variance is the clustered DeLong variance; the quadratic term left out is O(1/n).
    """

    def __init__(self, p, y, g, n):
        pos = y == 1
        pp, pn = np.sort(p[pos]), np.sort(p[~pos])
        n1, n0 = pp.size, pn.size
        self.a = np.nan
        self.psi = np.zeros(n)
        if n1 == 0 or n0 == 0:
            return
        # placement of each positive among negatives, and of each negative among positives
        v10 = (np.searchsorted(pn, p[pos], "left") + np.searchsorted(pn, p[pos], "right")) / (2 * n0)
        v01 = (2 * n1 - np.searchsorted(pp, p[~pos], "left")
               - np.searchsorted(pp, p[~pos], "right")) / (2 * n1)
        self.a = float(v10.mean())
        n1a = np.bincount(g[pos], minlength=n)
        n0a = np.bincount(g[~pos], minlength=n)
        self.psi = (np.bincount(g[pos], weights=v10, minlength=n) / n1
                    + np.bincount(g[~pos], weights=v01, minlength=n) / n0
                    - self.a * (n1a / n1 + n0a / n0))

    def columns(self) -> np.ndarray:
        """Per-trajectory values whose replicated sums give the replicates."""
        return self.psi[:, None]

    def from_sums(self, sums: np.ndarray) -> np.ndarray:
        """Replicates from the replicated sums c·ψ: A + (c − 1)·ψ."""
        return self.a + sums[:, 0] - self.psi.sum()


class _AuprcLinearStat:
    """First-order (influence-function) average-precision replicates for large logs.

    AP = (1/n1) Σ_{i: y=1} Prec_i with Prec_i = TP_i / D_i, TP_i and FP_i the positives and
    negatives with forecast >= p_i, D_i = TP_i + FP_i. For trajectory weights c,
    ∂AP/∂c_a = (1/n1) Σ_{r in a} [y_r (Prec_r + Σ_{i: p_i <= p_r} FP_i/D_i² - AP)
    - (1 - y_r) Σ_{i: p_i <= p_r} TP_i/D_i²]. AP is scale-free in c, so Σ_a ψ_a = 0 and a
    replicate is AP + c·ψ, as for TPS.
    """

    def __init__(self, p, y, g, n):
        pos = y == 1
        pp = np.sort(p[pos])
        pn = np.sort(p[~pos])
        n1, n0 = pp.size, pn.size
        self.a = np.nan
        self.psi = np.zeros(n)
        if n1 == 0:
            return
        tp = n1 - np.searchsorted(pp, pp, "left")
        fp = n0 - np.searchsorted(pn, pp, "left")
        d = (tp + fp).astype(float)
        prec = tp / d
        self.a = float(prec.mean())
        cum_a = np.r_[0.0, np.cumsum(fp / d**2)]
        cum_b = np.r_[0.0, np.cumsum(tp / d**2)]
        k = np.searchsorted(pp, p, "right")  # positives with p_i <= p_r
        own = np.zeros(p.size)
        own[pos] = n1 - np.searchsorted(pp, p[pos], "left")
        own[pos] = own[pos] / (own[pos] + n0 - np.searchsorted(pn, p[pos], "left"))
        row = np.where(pos, own + cum_a[k] - self.a, -cum_b[k]) / n1
        self.psi = np.bincount(g, weights=row, minlength=n)

    columns = _AurocLinearStat.columns
    from_sums = _AurocLinearStat.from_sums


class _AuprcStat:
    """Weighted average precision per weight vector (rows sorted once by decreasing p).

    Dense path (few distinct values, as for AUROC): the weighted positives and negatives at
    each distinct forecast are one matrix product of the weights with a (trajectory × value)
    count table, for all replicates of a chunk at once. Row path: one replicate at a time.
    """

    def __init__(self, p, y, g, n):
        order, key, k = value_groups(-p)
        self.gs, self.ys, self.key, self.k = g[order], y[order], key, k
        self.last = np.flatnonzero(np.r_[key[1:] != key[:-1], True])
        self.dense = None
        if _use_dense(k, n, p.size):
            table = np.zeros((n, 2 * k))
            np.add.at(table, (self.gs, key + k * (self.ys != 1)), 1.0)
            self.dense = table

    def __call__(self, wc: np.ndarray) -> np.ndarray:
        if self.dense is not None:
            pn = wc @ self.dense
            return _ap_rows(np.cumsum(pn[:, : self.k], axis=1), np.cumsum(pn[:, self.k:], axis=1))
        out = np.empty(wc.shape[0])
        for r0, r1 in _row_slices(wc.shape[0], self.gs.size):
            rw = wc[r0:r1].take(self.gs, axis=1)
            every = np.cumsum(rw, axis=1)[:, self.last]
            rw *= self.ys
            tp = np.cumsum(rw, axis=1)[:, self.last]
            out[r0:r1] = _ap_rows(tp, every - tp)
        return out


class _TeceStat:
    """Weighted T-ECE per weight vector; bins fixed at the full-sample edges."""

    def __init__(self, p, y, g, n, n_bins, strategy):
        b = bin_index(p, bin_edges(p, n_bins, strategy))
        self.gap = np.bincount(g * n_bins + b, weights=p - y,
                               minlength=n * n_bins).reshape(n, n_bins)
        self.count = np.bincount(g, minlength=n).astype(float)

    def columns(self) -> np.ndarray:
        """Per-trajectory bin sums of F − Y, and row counts."""
        return np.column_stack([self.gap, self.count])

    def from_sums(self, sums: np.ndarray) -> np.ndarray:
        """T-ECE of each replicate from its weighted bin sums and row count."""
        return np.abs(sums[:, :-1]).sum(axis=1) / sums[:, -1]


# method="auto" uses first-order AUROC/AUPRC replicates when recomputing the metric in every
# replicate would touch more than LINEAR_MIN_CELLS (rows × replicates) and there are at least
# LINEAR_MIN_TRAJECTORIES runs (the size at which the tests check them against exact ones)
LINEAR_MIN_CELLS = 50_000_000
LINEAR_MIN_TRAJECTORIES = 3000


def _statistic(metric, p, y, g, n, n_bins, strategy, method="auto", n_boot=0):
    if metric == "tece":
        return _TeceStat(p, y, g, n, n_bins, strategy)
    if metric not in ("auroc", "auprc"):
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if method not in ("auto", "exact", "linear"):
        raise ValueError(f"method must be 'auto', 'exact' or 'linear', got {method!r}")
    large = p.size * n_boot > LINEAR_MIN_CELLS and n >= LINEAR_MIN_TRAJECTORIES
    linear = method == "linear" or (method == "auto" and large)
    exact_cls, linear_cls = {"auroc": (_AurocStat, _AurocLinearStat),
                             "auprc": (_AuprcStat, _AuprcLinearStat)}[metric]
    return (linear_cls if linear else exact_cls)(p, y, g, n)


class MeanStat:
    """The mean over trajectories of one value per trajectory, as a bootstrap statistic; with
    ``groups`` (the unit 0 … K−1 of every trajectory, e.g. its task) the units are the groups."""

    def __init__(self, values, groups: np.ndarray | None = None):
        self.values = np.asarray(values, dtype=float)
        self.groups = groups

    def columns(self) -> np.ndarray:
        """The per-unit sums of the values (and, by group, the trajectories of each group)."""
        if self.groups is None:
            return self.values[:, None]
        return group_sums(np.column_stack([self.values, np.ones(self.values.size)]), self.groups)

    def from_sums(self, sums: np.ndarray) -> np.ndarray:
        """Replicates of the mean from the replicated sums of the values."""
        return sums[:, 0] / (self.values.size if self.groups is None else sums[:, 1])


def metric_statistic(metric: str, p, y, groups, n_boot: int, n_bins: int = 10,
                     strategy: str = "uniform", method: str = "auto"):
    """A bootstrap statistic of a metric, for :func:`replicate_statistics`.

    Returns
    -------
    stat : object
        Evaluates the metric on resampled trajectories.
    n : int
        Number of trajectories (distinct codes of ``groups``).
    """
    pv, yv, _ = check_rows(p, y)
    g, n = trajectory_codes(groups, yv.size)
    return _statistic(metric, pv, yv, g, n, n_bins, strategy, method, int(n_boot)), n


def replicate_statistics(stats: list, n: int, n_boot: int, seed: int) -> list[np.ndarray]:
    """Bootstrap replicates of several statistics of the same n trajectories, all at once.

    Every statistic made of a few sums over trajectories (T-ECE, first-order AUROC/AUPRC,
    :class:`MeanStat`) is replicated through one product with the resampling counts; the
    others (exact AUROC/AUPRC) are recomputed with the counts as row weights. All use the
    replicates of ``bootstrap_weights(n, n_boot, seed)``.

    Returns
    -------
    list of ndarray
        One array of n_boot replicates per statistic (NaN where undefined).
    """
    n_boot = max(int(n_boot), 0)
    res = [np.full(n_boot, np.nan) for _ in stats]
    if n_boot == 0:
        return res
    summed = [i for i, st in enumerate(stats) if hasattr(st, "from_sums")]
    if summed:
        cols = [stats[i].columns() for i in summed]
        sums = bootstrap_sums(np.hstack(cols), n_boot, seed)
        edges = np.cumsum([0] + [c.shape[1] for c in cols])
        with np.errstate(invalid="ignore", divide="ignore"):
            for i, a, b in zip(summed, edges[:-1], edges[1:]):
                res[i] = stats[i].from_sums(sums[:, a:b])
    direct = [i for i in range(len(stats)) if i not in summed]
    if direct:
        r0 = 0
        for wc in bootstrap_weights(n, n_boot, seed):
            for i in direct:
                res[i][r0:r0 + wc.shape[0]] = stats[i](wc)
            r0 += wc.shape[0]
    return res


def metric_replicates(metric: str, forecasts, y, groups, n_boot: int = 2000,
                      seed: int = DEFAULT_SEED, n_bins: int = 10,
                      strategy: str = "uniform", method: str = "auto") -> np.ndarray:
    """Bootstrap replicates of a metric, resampling whole trajectories.

    Parameters
    ----------
    metric : {"auroc", "auprc", "tece"}
    forecasts : array_like or sequence of array_like
        One forecast array, or several (predictors on the same rows): all are evaluated on
        the same replicates (a paired bootstrap).
    y, groups : array_like
        Outcomes and trajectory codes per row. Trajectories are the distinct codes in
        increasing order; with codes 0..n-1 all present, replicate r draws the same
        trajectories as ``bootstrap_weights(n, n_boot, seed)`` does anywhere else.
    n_boot : int
        Number of replicates.
    seed : int
        Seed of the replicates.
    n_bins, strategy
        T-ECE binning; bin edges are fixed at the full-sample edges in every replicate.
    method : {"auto", "exact", "linear"}
        AUROC and AUPRC. ``exact`` recomputes the weighted AUROC in every replicate (cost grows
        with rows × replicates); ``linear`` uses the first-order expansion in the resampling
        counts (clustered DeLong; one matrix product for all replicates); ``auto`` is
        ``linear`` when rows × replicates exceed ``LINEAR_MIN_CELLS`` and there are at least
        ``LINEAR_MIN_TRAJECTORIES`` runs: the neglected term is O(1/n) against an SD of
        O(1/√n).

    Returns
    -------
    ndarray
        Shape (n_boot,) for one forecast array, (n_predictors, n_boot) for several. NaN for
        a replicate where the metric is undefined (e.g. one class only).
    """
    single = np.ndim(forecasts) == 1 or np.isscalar(forecasts)
    arrays = [forecasts] if single else list(forecasts)
    checked = [check_rows(f, y)[:2] for f in arrays]
    yv = checked[0][1]
    g, n = trajectory_codes(groups, yv.size)
    n_boot = int(n_boot)
    stats = [_statistic(metric, pv, yv, g, n, n_bins, strategy, method, n_boot)
             for pv, _ in checked]
    res = np.array(replicate_statistics(stats, n, n_boot, seed)).reshape(len(stats), -1)
    return res[0] if single else res


def bootstrap_metric(metric: str, p, y, groups, n_boot: int = 2000, seed: int = DEFAULT_SEED,
                     level: float = 0.95, n_bins: int = 10,
                     strategy: str = "uniform") -> Estimate:
    """A metric with its trajectory-bootstrap uncertainty.

    Returns
    -------
    Estimate
        ``mean`` is the point estimate on the data, ``se`` the standard deviation of the
        bootstrap replicates, ``ci_low``/``ci_high`` their percentile interval, ``n`` the
        number of trajectories.
    """
    p, yv, _ = check_rows(p, y)
    point = metric_point(metric, p, yv, n_bins, strategy)
    reps = metric_replicates(metric, p, yv, groups, n_boot, seed, n_bins, strategy)
    n = trajectory_codes(groups, yv.size)[1]
    return Estimate(point, *replicate_summary(reps, level), n=n, level=level)


def replicate_summary(reps: np.ndarray, level: float) -> tuple[float, float, float]:
    """(SD, percentile CI low, high) of the finite bootstrap replicates (NaN if < 2)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    reps = reps[np.isfinite(reps)]
    if reps.size < 2:
        return np.nan, np.nan, np.nan
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return float(reps.std(ddof=1)), float(lo), float(hi)


@dataclass(frozen=True)
class PairedMetric:
    """Difference of a metric between two predictors on the same runs (A − B).

    Attributes
    ----------
    metric : str
    delta : float
        metric(A) − metric(B) on the data.
    se : float
        Standard deviation of the paired bootstrap replicates of the difference.
    z : float
        delta / se (NaN when se is 0 or undefined).
    ci_low, ci_high : float
        Percentile interval of the replicated differences.
    n : int
        Number of trajectories.
    n_boot : int
    level : float
    """

    metric: str
    delta: float
    se: float
    z: float
    ci_low: float
    ci_high: float
    n: int
    n_boot: int
    level: float = 0.95


def paired_metric_difference(metric: str, p_a, p_b, y, groups, n_boot: int = 2000,
                             seed: int = DEFAULT_SEED, level: float = 0.95, n_bins: int = 10,
                             strategy: str = "uniform") -> PairedMetric:
    """Paired trajectory bootstrap of metric(A) − metric(B) on the same rows.

    Both predictors are evaluated on identical replicates, so what the runs have in common
    cancels out of the SE.

    Parameters
    ----------
    metric : {"auroc", "auprc", "tece"}
    p_a, p_b : array_like
        Forecasts of predictors A and B on the same rows.
    y, groups : array_like
        Outcomes and trajectory codes per row.
    n_boot, seed, level, n_bins, strategy
        As in :func:`bootstrap_metric`.

    Returns
    -------
    PairedMetric
    """
    pa, yv, _ = check_rows(p_a, y)
    pb, _, _ = check_rows(p_b, yv)
    delta = metric_point(metric, pa, yv, n_bins, strategy) - metric_point(metric, pb, yv, n_bins,
                                                                          strategy)
    reps = metric_replicates(metric, [pa, pb], yv, groups, n_boot, seed, n_bins, strategy)
    se, lo, hi = replicate_summary(reps[0] - reps[1], level)
    z = delta / se if np.isfinite(se) and se > 0 else np.nan
    n = trajectory_codes(groups, yv.size)[1]
    return PairedMetric(metric, float(delta), se, float(z), lo, hi, n, int(n_boot), level)
