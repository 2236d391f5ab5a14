"""The usual metrics TPS is compared with: AUROC, AUPRC, the trajectory ECE and scalarised scores.

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
Their trajectory-bootstrap uncertainty is :mod:`tpsviz.diagnostics.metric_bootstrap`.
"""

from __future__ import annotations

import numpy as np

from tpsviz.core.checks import forecasts_and_outcomes
from tpsviz.core.scores import beta_score

__all__ = [
    "METRICS",
    "auroc",
    "auprc",
    "tece",
    "bin_edges",
    "bin_index",
    "scalarised_score",
    "metric_point",
    "check_rows",
    "trajectory_codes",
    "value_groups",
]

METRICS = ("auroc", "auprc", "tece")
_STRATEGIES = ("uniform", "quantile")


# --------------------------------------------------------------------------- validation
def check_rows(p, y, sample_weight=None):
    """Forecasts, outcomes and optional row weights, flattened and checked.

    Parameters
    ----------
    p, y : array_like
        Forecasts in [0, 1] and 0/1 outcomes, one per row
        (:func:`tpsviz.core.checks.forecasts_and_outcomes`).
    sample_weight : array_like, optional
        One finite non-negative weight per row.

    Returns
    -------
    p, y : ndarray
    w : ndarray or None
        The weights, None when not given.

    Raises
    ------
    ValueError
        On mismatched lengths, empty input, values out of range or bad weights.
    """
    p, y = forecasts_and_outcomes(p, y, "to evaluate")
    if sample_weight is None:
        return p, y, None
    w = np.asarray(sample_weight, dtype=float).ravel()
    if w.shape != p.shape:
        raise ValueError(f"sample_weight has {w.size} values for {p.size} rows")
    if not (np.isfinite(w).all() and (w >= 0).all()):
        raise ValueError("sample_weight must be finite and non-negative")
    return p, y, w


def trajectory_codes(groups, n_rows: int) -> tuple[np.ndarray, int]:
    """Re-code trajectory codes to 0..n-1 in increasing order of the original codes.

    Parameters
    ----------
    groups : array_like of int
        The trajectory code of every row.
    n_rows : int
        The number of rows ``groups`` must have.

    Returns
    -------
    codes : ndarray of intp
        0..n-1 per row (``groups`` itself when it is already such codes in order).
    n : int
        Number of distinct trajectories.

    Raises
    ------
    ValueError
        If ``groups`` has the wrong length or is not integer.
    """
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
def value_groups(p: np.ndarray):
    """The distinct values of ``p``, from one stable sort.

    Parameters
    ----------
    p : ndarray
        Values, at least one.

    Returns
    -------
    order : ndarray of int
        Stable sort order of ``p``.
    key : ndarray of int
        Index of each sorted row's distinct value, 0 … k−1, non-decreasing.
    k : int
        Number of distinct values.
    """
    order = np.argsort(p, kind="stable")
    ps = p[order]
    new = np.empty(ps.size, dtype=bool)
    new[0] = True
    np.not_equal(ps[1:], ps[:-1], out=new[1:])
    key = np.cumsum(new) - 1
    return order, key, int(key[-1]) + 1


def _class_weights(order: np.ndarray, key: np.ndarray, k: int, y: np.ndarray, w: np.ndarray | None):
    """Σ w·y and Σ w·(1 − y) at each of the k distinct values (:func:`value_groups`). Unweighted,
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
    p, y, w = check_rows(p, y, sample_weight)
    order, key, k = value_groups(p)
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
    p, y, w = check_rows(p, y, sample_weight)
    order, key, k = value_groups(-p)
    pos, neg = _class_weights(order, key, k, y, w)
    tp, fp = np.cumsum(pos), np.cumsum(neg)
    if tp[-1] <= 0:
        raise ValueError("average precision is undefined: no positive outcome")
    return _ap_from_counts(tp, fp)


def _ap_from_counts(tp: np.ndarray, fp: np.ndarray) -> float:
    """Average precision from cumulative (tp, fp) counts over decreasing thresholds."""
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
    p, y, w = check_rows(p, y, sample_weight)
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
    p, y, _ = check_rows(p, y)
    g, n = trajectory_codes(groups, p.size)
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



def metric_point(metric: str, p, y, n_bins: int = 10, strategy: str = "uniform") -> float:
    """One metric on the data, by name.

    Parameters
    ----------
    metric : {"auroc", "auprc", "tece"}
        Any other name is taken as "tece".
    p, y : array_like
        Forecasts in [0, 1] and 0/1 outcomes, one per row.
    n_bins, strategy
        T-ECE binning (see :func:`tece`).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Where the metric is undefined (AUROC with one outcome class, AUPRC without a positive).
    """
    if metric == "auroc":
        return auroc(p, y)
    if metric == "auprc":
        return auprc(p, y)
    return tece(p, y, n_bins, strategy)
