"""The Trajectory Proper Score for outcomes with k labels, TPS-k (docs/multiclass.md).

A run ends with one of k labels Y ∈ {1, …, k} (e.g. success / partial / failure); after step t a
predictor reports a probability vector P_t over the labels. With a strictly proper multi-class
score S and weights w_t known at step t,

    TPS-k(P_1:T, Y) = Σ_t w_t S(P_t, Y)                            complete run
    TPS-k_cen(q)    = Σ_{t<=Z} w_t Σ_j q_j S(P_t, j)                censored at Z, label law q

is maximised in expectation only by the truthful q_t = P(Y = · | H_t) at every step. Scores are
rewards: higher is better, 0 is perfect.

Rules (:func:`score_k`):

``log``    S(P, y) = ln P_y (nats); P_y clipped to [ε, 1] (ε = 1e-6 by default, counted).
``brier``  S(P, y) = −¼ Σ_j (P_j − 1[j = y])², a quarter of the multi-class Brier score.

With two labels both reduce exactly to the project's binary beta family with p = P[first label]:
ln P_y is the log score (α = β = 0), and −¼ [(p − y)² + ((1 − p) − (1 − y))²] = −½ (p − y)² is
``beta_score(p, y, 1, 1)`` (half the binary Brier score): hence the factor ¼
(:data:`BRIER_FACTOR`).

Censoring modes mirror the binary ones: ``complete`` leaves censored runs out (counted),
``simple`` scores a censored run as the label ``censored_label`` (binary simple = "failure"),
``exact`` scores it with its q vector from the log (``q_z__<label>`` columns).

The reading of logs lives in :mod:`tpsviz.io.kinds.multiclass` and the one-vs-rest reliability in
:mod:`tpsviz.outcomes.multiclass_reliability`; their public names are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tpsviz.core.inference import DEFAULT_SEED, column_mean_intervals
from tpsviz.io.kinds import is_multiclass
from tpsviz.io.kinds.multiclass import SUM_TOLERANCE, MulticlassLog, multiclass_from_frame, read_multiclass
from tpsviz.outcomes.multiclass_reliability import ovr_summary, reliability_ovr
from tpsviz.core.schedules import Schedule
from tpsviz.core.schema import show_id
from tpsviz.core.tps import check_weights

__all__ = ["MulticlassLog", "MulticlassResult", "is_multiclass", "read_multiclass", "multiclass_from_frame",
           "score_k", "score_matrix", "expected_score_k", "tps_k", "reliability_ovr", "ovr_summary",
           "censoring_words", "RULES", "CENSORING_MODES", "BRIER_FACTOR", "RULE_UNITS"]

RULES = ("log", "brier")
CENSORING_MODES = ("complete", "simple", "exact")
#: multiplies −Σ_j (P_j − 1[j=y])², so that two labels give the binary beta_score(p, y, 1, 1)
BRIER_FACTOR = 0.25
RULE_UNITS = {"log": "nats per run", "brier": "quarter-Brier units per run"}


def _check_rule(rule: str) -> str:
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    return rule


def _probabilities(P) -> np.ndarray:
    """P as an (n, k) float matrix of probability vectors (rows of NaN allowed: no forecast)."""
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[1] < 2:
        raise ValueError("P must be a matrix with one probability vector (k >= 2 labels) per row")
    present = ~np.isnan(P).all(axis=1)
    Q = P[present]
    if np.isnan(Q).any():
        raise ValueError("a row of P is partly empty; give every label's probability or none")
    if not ((Q >= 0) & (Q <= 1)).all():
        raise ValueError("probabilities must be in [0, 1]")
    if not (np.abs(Q.sum(axis=1) - 1.0) <= SUM_TOLERANCE).all():
        raise ValueError(f"every row of P must sum to 1 (within {SUM_TOLERANCE:g})")
    return P


def score_matrix(P, rule: str = "log", eps: float = 1e-6) -> np.ndarray:
    """S(P_i, j) for every row i and every label j: shape (n, k).

    Parameters
    ----------
    P : array_like, shape (n, k)
        Probability vectors (rows sum to 1).
    rule : {"log", "brier"}
    eps : float
        Log score only: P_j is clipped to [ε, 1] (ε = 0: ln 0 = −inf, shown honestly).

    Returns
    -------
    ndarray
        Rewards (<= 0, 0 is perfect).
    """
    P = _probabilities(P)
    _check_rule(rule)
    if rule == "log":
        with np.errstate(divide="ignore"):
            return np.log(np.maximum(P, eps) if eps > 0 else P)
    out = np.empty(P.shape)
    for j in range(P.shape[1]):
        D = P.copy()
        D[:, j] -= 1.0
        out[:, j] = -BRIER_FACTOR * (D * D).sum(axis=1)
    return out


def score_k(P, y_index, rule: str = "log", eps: float = 1e-6) -> np.ndarray:
    """Multi-class score S(P_i, y_i) of each row, a reward (higher is better, 0 is perfect).

    Parameters
    ----------
    P : array_like, shape (n, k)
        Probability vectors P_i over the k labels (rows sum to 1 within 1e-6; a row of NaN is a
        missing forecast and scores NaN).
    y_index : array_like of int, shape (n,)
        The observed label of each row, 0 … k−1.
    rule : {"log", "brier"}
        ``log``: ln P_y, P_y clipped to [ε, 1]. ``brier``: −¼ Σ_j (P_j − 1[j = y])² (¼ makes
        two labels score exactly as the binary ``beta_score(p, y, 1, 1)`` = −½ (p − y)²).
    eps : float
        Clipping of the log score (0: none).

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    >>> float(score_k([[0.5, 0.3, 0.2]], [1], "log")[0])  # ln 0.3
    -1.2039728043259361
    >>> float(score_k([[0.5, 0.3, 0.2]], [1], "brier")[0])  # -(0.25 + 0.49 + 0.04) / 4
    -0.195
    """
    P = _probabilities(P)
    _check_rule(rule)
    y = np.asarray(y_index)
    n, k = P.shape
    if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer) or ((y < 0) | (y >= k)).any():
        raise ValueError(f"y_index must hold one label index in 0 … {k - 1} per row of P")
    rows = np.arange(n)
    if rule == "log":
        py = P[rows, y]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(np.maximum(py, eps) if eps > 0 else py)
    D = P.copy()
    D[rows, y] -= 1.0
    return -BRIER_FACTOR * (D * D).sum(axis=1)


def expected_score_k(P, Q, rule: str = "log", eps: float = 1e-6) -> np.ndarray:
    """Expected score Σ_j Q_ij S(P_i, j) of each row when the label has law Q_i (censored runs).

    A label with Q_ij = 0 contributes exactly 0 (also where S = −inf).

    Parameters
    ----------
    P, Q : array_like, shape (n, k)
        Forecasts and label laws (rows sum to 1).
    rule, eps
        As in :func:`score_k`.

    Returns
    -------
    ndarray, shape (n,)
    """
    S = score_matrix(P, rule, eps)
    Q = _probabilities(Q)
    if Q.shape != S.shape:
        raise ValueError("Q must have the shape of P")
    out = np.zeros(S.shape[0])
    for j in range(S.shape[1]):  # label order, as a loop over labels would add them
        with np.errstate(invalid="ignore"):
            out = out + np.where(Q[:, j] > 0, Q[:, j] * S[:, j], 0.0)
    return out


def censoring_words(mode: str, censored_label: str | None = None, n_fallback: int = 0) -> str:
    """The censoring mode in words (CLI header, dashboard banner)."""
    if mode == "complete":
        return "complete-case (censored runs left out)"
    if mode == "simple":
        return f"simple (a censored run counts as label {show_id(censored_label)})"
    tail = (f"; {n_fallback} run(s) without one count as label {show_id(censored_label)}"
            if n_fallback else "")
    return f"exact (a censored run is scored with its q vector: Σ_j q_j S(P_t, j){tail})"


@dataclass
class MulticlassResult:
    """TPS-k of every predictor of a :class:`MulticlassLog`.

    Attributes
    ----------
    summary : DataFrame
        Indexed by predictor: ``tps_mean`` (mean TPS-k per run), ``tps_se``, ``tps_ci_low``,
        ``tps_ci_high`` (percentile bootstrap over runs), ``tps_step_mean`` (Σ TPS / Σ w_t, a
        display normalisation), ``n_runs`` (scored), ``n_censored`` (of them),
        ``n_excluded_censored`` (complete-case), ``n_no_forecast`` (runs in scope without any
        forecast), ``n_q_fallback`` (exact mode: censored runs scored as ``censored_label`` for
        want of q), ``n_steps`` (scored rows), ``n_missing`` (rows without forecast),
        ``n_clipped`` (log rule: rows whose scored probabilities were raised to ε).
    per_run : DataFrame
        ``trajectory_id``, ``predictor``, ``tps``, ``censored``, ``n_scored``, ``weight_sum``.
    settings : dict
        Rule, units, schedule (spec, formula, verdict), censoring, ε, bootstrap.
    labels : list of str
    """

    summary: pd.DataFrame
    per_run: pd.DataFrame
    settings: dict
    labels: list


def _targets(log: MulticlassLog, censoring: str, censored_label: str | None):
    """Per run: in scope, the label index to score (−1: use q), the q matrix, and the censored runs
    scored as ``censored_label`` for want of q (exact mode)."""
    traj = log.trajectories
    cens = traj["censored"].to_numpy(dtype=bool)
    y = log.outcome_index.copy()
    in_scope = ~cens if censoring == "complete" else np.ones(len(traj), dtype=bool)
    fallback = np.zeros(len(traj), dtype=bool)
    q = log.q_vectors()
    if censoring == "simple":
        y[cens] = log.labels.index(censored_label)
    elif censoring == "exact":
        no_q = log.censored_without_q()
        if no_q.any():
            if censored_label is None:
                raise ValueError(
                    f"censoring 'exact': {int(no_q.sum())} of {int(cens.sum())} censored run(s) have no q "
                    "vector (q_z__<label> columns); give censored_label to score those as that label, or "
                    "use censoring 'complete' or 'simple'")
            y[no_q] = log.labels.index(censored_label)
            fallback = no_q
    return in_scope, y, q, fallback


def tps_k(log: MulticlassLog, rule: str = "log", schedule: Schedule | None = None,
          censoring: str = "complete", censored_label: str | None = None, n_boot: int = 2000,
          level: float = 0.95, seed: int = DEFAULT_SEED, eps: float = 1e-6,
          predictors: list[str] | None = None) -> MulticlassResult:
    """Score every predictor of a multi-class log with TPS-k = Σ_t w_t S(P_t, Y).

    Parameters
    ----------
    log : MulticlassLog
    rule : {"log", "brier"}
        The multi-class score S (:func:`score_k`).
    schedule : Schedule, optional
        Weights w_t = ``schedule.weights(t, length, None)`` (default uniform), checked by
        :func:`tpsviz.core.tps.check_weights`. The ``column`` schedule is not available here.
    censoring : {"complete", "simple", "exact"}
        ``complete``: censored runs left out (counted). ``simple``: a censored run counts as label
        ``censored_label`` (required). ``exact``: a censored run scores Σ_j q_j S(P_t, j) with its
        q vector; runs without one count as ``censored_label`` if given, else it is an error.
    censored_label : str, optional
        One of ``log.labels``.
    n_boot, level, seed
        Percentile bootstrap over runs (0 replicates: no CI).
    eps : float
        Log rule: probabilities clipped to [ε, 1] (0 <= ε < 0.5; clipped rows counted).
    predictors : list of str, optional
        Subset of ``log.predictors`` (default all).

    Returns
    -------
    MulticlassResult
    """
    schedule = schedule or Schedule()
    names = _checked_arguments(log, rule, schedule, censoring, censored_label, eps, level, n_boot, predictors)
    in_scope, y_t, q_t, fallback = _targets(log, censoring, censored_label)
    codes_all = log.steps["traj"].to_numpy()
    rows_in = in_scope[codes_all]
    codes = codes_all[rows_in]
    n_runs = log.n_runs
    length = log.trajectories["length"].to_numpy()
    w = schedule.weights(log.steps["t"].to_numpy()[rows_in], length[codes], None)
    check_weights(schedule, w)
    y_rows, q_rows = y_t[codes], q_t[codes]
    cens_t = log.trajectories["censored"].to_numpy(dtype=bool)
    rows, frames, values, valids = [], [], [], []
    for name in names:
        tps, n_scored, wsum, present, n_clipped = _run_scores(log.forecasts(name)[rows_in], w, codes, n_runs,
                                                              y_rows, q_rows, rule, eps)
        valid = in_scope & (n_scored > 0)
        rows.append(_summary_row(name, tps[valid], wsum[valid]) | {
            "n_censored": int((valid & cens_t).sum()),
            "n_excluded_censored": int(cens_t.sum()) if censoring == "complete" else 0,
            "n_no_forecast": int((in_scope & (n_scored == 0)).sum()),
            "n_q_fallback": int((valid & fallback).sum()),
            "n_steps": int(present.sum()), "n_missing": int((~present).sum()), "n_clipped": n_clipped,
        })
        frames.append(pd.DataFrame({
            "trajectory_id": log.trajectories["trajectory_id"].to_numpy()[valid], "predictor": name,
            "tps": tps[valid], "censored": cens_t[valid], "n_scored": n_scored[valid], "weight_sum": wsum[valid]}))
        values.append(tps)
        valids.append(valid)
    summary = pd.DataFrame(rows, columns=_SUMMARY_COLUMNS).set_index("predictor")
    if names:
        lo, hi = column_mean_intervals(np.column_stack(values), np.column_stack(valids), int(n_boot), level, seed,
                                       interval="percentile")
        summary["tps_ci_low"], summary["tps_ci_high"] = lo, hi
    per_run = (pd.concat(frames, ignore_index=True) if frames else
               pd.DataFrame(columns=["trajectory_id", "predictor", "tps", "censored", "n_scored", "weight_sum"]))
    settings = _settings(log, rule, schedule, censoring, censored_label, int(fallback.sum()), eps, n_boot, level,
                         seed)
    return MulticlassResult(summary, per_run, settings, list(log.labels))


_SUMMARY_COLUMNS = ["predictor", "tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "tps_step_mean", "n_runs",
                    "n_censored", "n_excluded_censored", "n_no_forecast", "n_q_fallback", "n_steps", "n_missing",
                    "n_clipped"]


def _checked_arguments(log: MulticlassLog, rule, schedule: Schedule, censoring, censored_label, eps, level,
                       n_boot, predictors) -> list[str]:
    """The predictors :func:`tps_k` scores, once its arguments are checked (a ValueError says what is wrong)."""
    _check_rule(rule)
    if censoring not in CENSORING_MODES:
        raise ValueError(f"censoring must be one of {', '.join(CENSORING_MODES)}, got {censoring!r}")
    if censored_label is not None and censored_label not in log.labels:
        raise ValueError(f"censored_label {show_id(censored_label)} is not one of the labels "
                         f"({', '.join(show_id(lab) for lab in log.labels)})")
    if censoring == "simple" and censored_label is None:
        raise ValueError("censoring 'simple' needs censored_label: the label a censored run counts as "
                         f"(one of {', '.join(show_id(lab) for lab in log.labels)})")
    if not (0.0 <= float(eps) < 0.5):
        raise ValueError(f"eps must be in [0, 0.5), got {eps!r}")
    if not (0.0 < float(level) < 1.0):
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if int(n_boot) < 0:
        raise ValueError("n_boot must be >= 0")
    if schedule.name == "column":
        raise ValueError("schedule 'column' is not available for multi-class logs; use uniform, linear, "
                         "front:G, back:G:H, endpoint or per-length")
    names = list(log.predictors) if predictors is None else list(predictors)
    unknown = [p for p in names if p not in log.predictors]
    if unknown:
        raise ValueError(f"unknown predictor(s) {', '.join(show_id(p) for p in unknown)}; the log has "
                         f"{', '.join(show_id(p) for p in log.predictors)}")
    return names


def _run_scores(P: np.ndarray, w: np.ndarray, codes: np.ndarray, n_runs: int, y_rows: np.ndarray,
                q_rows: np.ndarray, rule: str, eps: float):
    """One predictor's TPS-k per run from its forecasts ``P`` on the rows in scope (run ``codes``,
    weights ``w``): (TPS, rows with a forecast, their weight sum) per run, which rows have a forecast,
    and the rows clipped to ε (:func:`_step_scores`)."""
    present = ~np.isnan(P[:, 0])
    s, n_clipped = _step_scores(P, present, y_rows, q_rows, rule, eps)
    with np.errstate(invalid="ignore"):
        contrib = np.where(present & (w != 0), w * s, 0.0)
    tps = np.bincount(codes, weights=contrib, minlength=n_runs)
    n_scored = np.bincount(codes, weights=present.astype(float), minlength=n_runs).astype(int)
    wsum = np.bincount(codes, weights=np.where(present, w, 0.0), minlength=n_runs)
    return tps, n_scored, wsum, present, n_clipped


def _step_scores(P: np.ndarray, present: np.ndarray, y_rows: np.ndarray, q_rows: np.ndarray, rule: str,
                 eps: float) -> tuple[np.ndarray, int]:
    """S(P_t, y) of every row with a forecast (the expected score under q for a censored row, whose label
    index is −1), NaN elsewhere; and the rows whose scored probabilities the log rule raised to ε."""
    expect = y_rows < 0  # censored rows scored with their q vector
    s = np.full(P.shape[0], np.nan)
    one = present & ~expect
    s[one] = score_k(P[one], y_rows[one], rule, eps)
    ex = present & expect
    if ex.any():
        s[ex] = expected_score_k(P[ex], q_rows[ex], rule, eps)
    n_clipped = 0
    if rule == "log" and eps > 0:
        used = np.zeros(P.shape, dtype=bool)
        used[np.flatnonzero(one), y_rows[one]] = True
        used[ex] = q_rows[ex] > 0
        n_clipped = int(((P < eps) & used).any(axis=1).sum())
    return s, n_clipped


def _summary_row(name: str, tps: np.ndarray, wsum: np.ndarray) -> dict:
    """Mean TPS-k with its SE over the scored runs, and Σ TPS / Σ w_t (intervals filled in later)."""
    n = tps.size
    mean = float(tps.mean()) if n else np.nan
    se = float(tps.std(ddof=1) / np.sqrt(n)) if n >= 2 and np.isfinite(mean) else np.nan
    wtot = float(wsum.sum())
    return {"predictor": name, "tps_mean": mean, "tps_se": se, "tps_ci_low": np.nan, "tps_ci_high": np.nan,
            "tps_step_mean": float(tps.sum() / wtot) if wtot > 0 else np.nan, "n_runs": n}


def _settings(log: MulticlassLog, rule: str, schedule: Schedule, censoring: str, censored_label, n_fallback: int,
              eps, n_boot, level, seed) -> dict:
    """The settings a :class:`MulticlassResult` states (rule, units, schedule, censoring, ε, bootstrap)."""
    verdict = schedule.verdict
    return {
        "rule": rule, "unit": RULE_UNITS[rule], "direction": "higher is better, 0 is perfect",
        "score": ("log score ln P_y (nats)" if rule == "log" else
                  f"Brier: -{BRIER_FACTOR:g} * sum_j (P_j - 1[j=y])^2"),
        "brier_factor": BRIER_FACTOR if rule == "brier" else None,
        "schedule": schedule.spec, "formula": schedule.formula, "schedule_verdict": verdict.status,
        "schedule_reason": verdict.reason.replace("true success probability", "true label distribution"),
        "censoring": censoring, "censored_label": censored_label,
        "censoring_words": censoring_words(censoring, censored_label, n_fallback),
        "eps": float(eps) if rule == "log" else None, "n_boot": int(n_boot), "level": float(level),
        "seed": int(seed), "labels": list(log.labels),
    }

