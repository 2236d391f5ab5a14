"""The usual metrics TPS is compared with, and their trajectory-bootstrap uncertainty.

All functions work on arrays of (trajectory, step) rows: forecasts ``p`` in [0, 1], outcomes
``y`` in {0, 1}, and, where the trajectory matters, ``groups``: one integer trajectory code per
row. Rows are pooled over steps unless the caller passes a subset (e.g. the final step of each
run for the "final" variants).

- ``auroc``: area under the ROC curve, P(F_pos > F_neg) + ½ P(F_pos = F_neg), ties pooled.
- ``auprc``: average precision Σ_k (R_k − R_{k−1}) P_k over the distinct thresholds, as
  scikit-learn's ``average_precision_score``.
- ``tece``: trajectory ECE, Σ_k (n_k / n) |mean F_k − mean Y_k| over bins of F.
- ``scalarised_score``: the beta-family score S_{α,β}(Φ(F_1:T), Y) of one scalar per run.

Both rank metrics are invariant under increasing transforms of F and the ECE is blind to
resolution inside a bin (docs/theory.md §5): that is why the product shows them next to TPS.

Inference resamples whole trajectories (``tpsviz.core.inference.bootstrap_weights``): a replicate
gives every row the resampling count of its trajectory as a weight, so AUROC of a replicate is
a weighted AUROC. ``bootstrap_metric`` and ``paired_metric_difference`` evaluate every
replicate without materialising the resampled data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpsviz.core.inference import DEFAULT_SEED, Estimate, bootstrap_sums, bootstrap_weights
from tpsviz.core.scores import beta_score
from tpsviz.core.checks import forecasts_and_outcomes

__all__ = [
    "METRICS",
    "PairedMetric",
    "auroc",
    "auprc",
    "tece",
    "bin_edges",
    "bin_index",
    "scalarised_score",
    "metric_replicates",
    "metric_statistic",
    "replicate_statistics",
    "MeanStat",
    "replicate_summary",
    "bootstrap_metric",
    "paired_metric_difference",
]

METRICS = ("auroc", "auprc", "tece")
_STRATEGIES = ("uniform", "quantile")
# the dense (trajectory × distinct value) path of the AUROC/AUPRC bootstraps is used up to this
# size, and while its arithmetic (trajectories × values) stays within _DENSE_PER_ROW per row:
# a BLAS product costs ~100× less per element than the per-replicate row pass it replaces
_DENSE_CELLS = 8_000_000
_DENSE_PER_ROW = 100


def _use_dense(k: int, n: int, rows: int) -> bool:
    """Dense path for k distinct values, n trajectories and ``rows`` rows?"""
    return 2 * k * n <= _DENSE_CELLS and k * n <= _DENSE_PER_ROW * rows


# --------------------------------------------------------------------------- validation
def _check_xy(p, y, sample_weight=None):
    p, y = forecasts_and_outcomes(p, y, "to evaluate")
    if sample_weight is None:
        return p, y, None
    w = np.asarray(sample_weight, dtype=float).ravel()
    if w.shape != p.shape:
        raise ValueError(f"sample_weight has {w.size} values for {p.size} rows")
    if not (np.isfinite(w).all() and (w >= 0).all()):
        raise ValueError("sample_weight must be finite and non-negative")
    return p, y, w


def _check_groups(groups, n_rows: int) -> tuple[np.ndarray, int]:
    """Re-code trajectory codes to 0..n-1 in increasing order of the original codes."""
    g = np.asarray(groups).ravel()
    if g.size != n_rows:
        raise ValueError(f"groups has {g.size} values for {n_rows} rows")
    if not np.issubdtype(g.dtype, np.integer):
        raise ValueError("groups must be integer trajectory codes")
    if g.size and g[0] == 0:  # already codes 0..n-1 in order (as TrajectoryData has them)
        step = np.diff(g)
        if ((step == 0) | (step == 1)).all():
            return g.astype(np.intp, copy=False), int(g[-1]) + 1
    codes, inv = np.unique(g, return_inverse=True)
    return inv.astype(np.intp), codes.size


# --------------------------------------------------------------------------- rank metrics
def _value_groups(p: np.ndarray):
    """Sort order, index of each sorted row's distinct value, number of distinct values."""
    order = np.argsort(p, kind="stable")
    ps = p[order]
    new = np.empty(ps.size, dtype=bool)
    new[0] = True
    np.not_equal(ps[1:], ps[:-1], out=new[1:])
    key = np.cumsum(new) - 1
    return order, key, int(key[-1]) + 1


def _class_weights(order: np.ndarray, key: np.ndarray, k: int, y: np.ndarray, w: np.ndarray | None):
    """Σ w·y and Σ w·(1 − y) at each of the k distinct values (:func:`_value_groups`). Unweighted,
    the negatives are the rows less the positives: whole numbers, exact in floats, so the same
    counts with two arrays of n fewer (at millions of rows each costs more than the sums)."""
    ys = y[order]
    if w is None:
        pos = np.bincount(key, weights=ys, minlength=k)
        return pos, np.bincount(key, minlength=k) - pos
    ws = w[order]
    return np.bincount(key, weights=ws * ys, minlength=k), np.bincount(key, weights=ws * (1.0 - ys), minlength=k)


def auroc(p, y, sample_weight=None) -> float:
    """Area under the ROC curve, ties between the classes counted ½.

    AUROC = Σ_{i: y_i=1} Σ_{j: y_j=0} w_i w_j (1{p_i > p_j} + ½ 1{p_i = p_j}) / (W_1 W_0).

    Parameters
    ----------
    p : array_like
        Forecasts (any score that ranks; here probabilities in [0, 1]).
    y : array_like
        Outcomes 0/1.
    sample_weight : array_like, optional
        Non-negative row weights (integer weights equal repeating rows).

    Returns
    -------
    float
        In [0, 1]; 0.5 for an uninformative ranking.

    Raises
    ------
    ValueError
        If both classes are not present (with positive weight).
    """
    p, y, w = _check_xy(p, y, sample_weight)
    order, key, k = _value_groups(p)
    pos, neg = _class_weights(order, key, k, y, w)
    w1, w0 = pos.sum(), neg.sum()
    if w1 <= 0 or w0 <= 0:
        raise ValueError("AUROC is undefined: outcomes contain only one class")
    below = np.cumsum(neg) - neg
    return float(pos @ (below + 0.5 * neg) / (w1 * w0))


def auprc(p, y, sample_weight=None) -> float:
    """Average precision, the step-wise area under the precision–recall curve.

    AP = Σ_k (R_k − R_{k−1}) P_k over the distinct forecast values taken as thresholds in
    decreasing order (no interpolation), as ``sklearn.metrics.average_precision_score``.

    Parameters
    ----------
    p, y, sample_weight
        As in :func:`auroc`.

    Returns
    -------
    float
        In [0, 1]; the base rate for an uninformative ranking.

    Raises
    ------
    ValueError
        If there is no positive outcome.
    """
    p, y, w = _check_xy(p, y, sample_weight)
    order, key, k = _value_groups(-p)
    pos, neg = _class_weights(order, key, k, y, w)
    tp, fp = np.cumsum(pos), np.cumsum(neg)
    if tp[-1] <= 0:
        raise ValueError("average precision is undefined: no positive outcome")
    return _ap_from_counts(tp, fp)


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


def _ap_from_counts(tp: np.ndarray, fp: np.ndarray) -> float:
    recall_step = np.diff(tp, prepend=0.0) / tp[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
    return float(recall_step @ precision)


# --------------------------------------------------------------------------- binned calibration
def bin_edges(p, n_bins: int = 10, strategy: str = "uniform") -> np.ndarray:
    """Edges of the forecast bins used by the T-ECE and the reliability diagram.

    Parameters
    ----------
    p : array_like
        Forecasts in [0, 1] (only used by the quantile strategy).
    n_bins : int
        Number of bins, >= 1.
    strategy : {"uniform", "quantile"}
        "uniform": equal-width bins on [0, 1]; "quantile": equal-mass bins at the empirical
        quantiles of ``p`` (repeated values can make some bins empty).

    Returns
    -------
    ndarray
        ``n_bins + 1`` non-decreasing edges from 0 (or min p) to 1 (or max p).
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    if strategy == "uniform":
        # k / n_bins exactly (np.linspace gives 0.7000000000000001 for k=7, n=10, which
        # would put a forecast of 0.7 into the bin below)
        return np.arange(int(n_bins) + 1) / int(n_bins)
    if strategy == "quantile":
        p = np.asarray(p, dtype=float).ravel()
        if p.size == 0:
            raise ValueError("no forecasts to take quantiles of")
        return np.quantile(p, np.linspace(0.0, 1.0, int(n_bins) + 1))
    raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")


def bin_index(p, edges: np.ndarray) -> np.ndarray:
    """Bin of each forecast: bin k holds edges[k] <= p < edges[k+1]; the last bin is closed."""
    k = len(edges) - 1
    return np.clip(np.searchsorted(edges, p, side="right") - 1, 0, k - 1)


def tece(p, y, n_bins: int = 10, strategy: str = "uniform", sample_weight=None) -> float:
    """Trajectory expected calibration error over (trajectory, step) rows.

    T-ECE = Σ_k (n_k / n) |mean_k F − mean_k Y| = Σ_k |Σ_{i in k} (F_i − Y_i)| / n.

    Parameters
    ----------
    p, y : array_like
        Forecasts in [0, 1] and 0/1 outcomes, one per row.
    n_bins : int
        Number of bins (>= 1).
    strategy : {"uniform", "quantile"}
        Equal-width or equal-mass bins (see :func:`bin_edges`).
    sample_weight : array_like, optional
        Row weights (n_k and the means become weighted).

    Returns
    -------
    float
        In [0, 1]; 0 means every bin's mean forecast equals its outcome rate (which does not
        mean the forecasts are informative, docs/theory.md §5).
    """
    p, y, w = _check_xy(p, y, sample_weight)
    w = np.ones_like(p) if w is None else w
    edges = bin_edges(p, n_bins, strategy)
    b = bin_index(p, edges)
    gap = np.bincount(b, weights=w * (p - y), minlength=n_bins)
    return float(np.abs(gap).sum() / w.sum())


# --------------------------------------------------------------------------- scalarised scores
def scalarised_score(p, y, groups, phi: str = "last", alpha: float = 0.0,
                     beta: float = 0.0) -> np.ndarray:
    """Beta-family score of one scalar summary Φ(F_1:T) per trajectory.

    Parameters
    ----------
    p, y : array_like
        Forecasts and 0/1 outcomes per row; y must be constant within a trajectory.
    groups : array_like of int
        Trajectory code of each row. Rows are assumed sorted by step within a trajectory
        (only ``phi="last"`` depends on the order).
    phi : {"last", "mean", "min"}
        The summary: final forecast, mean forecast, or minimum forecast of the run.
    alpha, beta : float
        Beta-family parameters ((0, 0) log score, (1, 1) half Brier).

    Returns
    -------
    ndarray
        S_{α,β}(Φ(F_1:T_i), Y_i) for each trajectory, in increasing order of the codes.
        Strictly proper only for the scalar Φ, not for the trace (docs/theory.md §5).
    """
    p, y, _ = _check_xy(p, y)
    g, n = _check_groups(groups, p.size)
    counts = np.bincount(g, minlength=n)
    y_sum = np.bincount(g, weights=y, minlength=n)
    if not np.all((y_sum == 0) | (y_sum == counts)):
        raise ValueError("the outcome must be constant within each trajectory")
    if phi == "last":
        last = np.full(n, -1)
        np.maximum.at(last, g, np.arange(g.size))
        f = p[last]
    elif phi == "mean":
        f = np.bincount(g, weights=p, minlength=n) / counts
    elif phi == "min":
        f = np.full(n, np.inf)
        np.minimum.at(f, g, p)
    else:
        raise ValueError(f"phi must be 'last', 'mean' or 'min', got {phi!r}")
    return beta_score(np.clip(f, 0.0, 1.0), (y_sum > 0).astype(float), alpha, beta)


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
        order, key, k = _value_groups(-p)
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


def _point(metric, p, y, n_bins, strategy) -> float:
    if metric == "auroc":
        return auroc(p, y)
    if metric == "auprc":
        return auprc(p, y)
    return tece(p, y, n_bins, strategy)


class MeanStat:
    """The mean over trajectories of one value per trajectory, as a bootstrap statistic."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=float)

    def columns(self) -> np.ndarray:
        return self.values[:, None]

    def from_sums(self, sums: np.ndarray) -> np.ndarray:
        return sums[:, 0] / self.values.size


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
    pv, yv, _ = _check_xy(p, y)
    g, n = _check_groups(groups, yv.size)
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
    checked = [_check_xy(f, y)[:2] for f in arrays]
    yv = checked[0][1]
    g, n = _check_groups(groups, yv.size)
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
    p, yv, _ = _check_xy(p, y)
    point = _point(metric, p, yv, n_bins, strategy)
    reps = metric_replicates(metric, p, yv, groups, n_boot, seed, n_bins, strategy)
    n = _check_groups(groups, yv.size)[1]
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
    pa, yv, _ = _check_xy(p_a, y)
    pb, _, _ = _check_xy(p_b, yv)
    delta = _point(metric, pa, yv, n_bins, strategy) - _point(metric, pb, yv, n_bins, strategy)
    reps = metric_replicates(metric, [pa, pb], yv, groups, n_boot, seed, n_bins, strategy)
    se, lo, hi = replicate_summary(reps[0] - reps[1], level)
    z = delta / se if np.isfinite(se) and se > 0 else np.nan
    n = _check_groups(groups, yv.size)[1]
    return PairedMetric(metric, float(delta), se, float(z), lo, hi, n, int(n_boot), level)
