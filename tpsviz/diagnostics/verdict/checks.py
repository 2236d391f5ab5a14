"""The checks a verdict is decided on, on one predictor's labelled step rows (docs/theory.md §8).

:func:`verdict_rows` gathers the rows (forecast, label ℓ under the censoring mode, run code) and
:func:`row_statistics` computes calibration in the large (the bias F − ℓ with a standard error
clustered by run), the calibration slope of the logistic fit of ℓ on logit F, whether the forecasts
separate the outcomes, and the CORP tests (:mod:`tpsviz.diagnostics.corp_nulls`) on every run or,
in a large log, on a seeded subset of :data:`MAX_TEST_RUNS` runs. The AUROC the sentence quotes
beside the discrimination test is taken on the same rows and labels (:func:`label_auroc`), and
also on the complete runs alone, the rows the leaderboard's AUROC uses (docs/theory.md §8).
"""

from __future__ import annotations

import numpy as np

from tpsviz.core.data import TrajectoryData
from tpsviz.core.inference import DEFAULT_SEED, bootstrap_sums, moment_columns, replicate_means
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics.corp_nulls import corp_tests
from tpsviz.diagnostics.leaderboard import run_labels
from tpsviz.diagnostics.metrics import auroc

__all__ = ["MIN_RUNS", "MIN_CLASS", "MAX_TEST_RUNS", "LOGIT_CLIP", "BIAS_BOOT", "z_value", "bias_test",
           "calibration_slope", "verdict_rows",
           "label_auroc", "row_statistics"]

#: a verdict needs this many labelled runs …
MIN_RUNS = 20
#: … and this many of each outcome (expected counts for soft labels)
MIN_CLASS = 5
#: the CORP tests (MCB, DSC) of a log with more runs use a seeded random subset of this many runs
#: (their power is ample there; the bias and the slope always use every run)
MAX_TEST_RUNS = 20_000
#: forecasts are kept in [c, 1 − c] for the logit of the calibration slope
LOGIT_CLIP = 1e-4
#: replicates of the studentized bootstrap of the bias (:func:`bias_test`): its tests run at (1 − level)/6
#: per tail, 0.83% at level 0.95, which 2,000 replicates resolve with about 17 beyond it
BIAS_BOOT = 2000


def z_value(level: float) -> float:
    """Two-sided normal critical value at ``level`` (1.95996… at 0.95).

    Parameters
    ----------
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    float
    """
    from scipy.special import ndtri  # (0.1 s to import: when a verdict is made, not at start-up)

    return float(ndtri(0.5 + level / 2))


def _clustered_bias(p: np.ndarray, lab: np.ndarray, runs: np.ndarray) -> tuple[float, float]:
    """mean(p − ℓ) over rows and its SE with run clusters (CR1 small-sample factor)."""
    d = p - lab
    n = d.size
    bias = float(d.mean())
    g = np.bincount(runs, weights=d - bias)
    k = g.size
    if k < 2:
        return bias, np.nan
    return bias, float(np.sqrt(k / (k - 1) * np.sum(g ** 2)) / n)


def bias_test(p: np.ndarray, lab: np.ndarray, runs: np.ndarray, n_boot: int = BIAS_BOOT,
              seed: int = DEFAULT_SEED) -> float:
    """Two-sided p-value of "no bias" from the studentized bootstrap of the bias (the bootstrap-t).

    The bias b̄ = Σ_k D_k / Σ_k n_k (D_k: run k's sum of F_t − ℓ over its n_k rows) and its clustered SE
    are rebuilt in every replicate from the runs' resampled sums (:func:`tpsviz.core.inference.moment_columns`);
    t* = (b̄* − b̄)/SE* estimates the law of (b̄ − bias)/SE, so with z = b̄/SE the p-value is
    2·min(P*(t* ≥ z), P*(t* ≤ z)) (each tail counted as (1 + k)/(B + 1)). Where a few long runs carry the
    bias (a heavy-tailed D_k), the normal z rejects a truthful forecast too often on one side
    (docs/validation.md); the bootstrap-t follows the skew.

    Parameters
    ----------
    p, lab : ndarray
        Forecast and label of every row.
    runs : ndarray of int
        Run code of every row, 0 … K−1.
    n_boot, seed : int
        Replicates (by run) and their seed.

    Returns
    -------
    float
        NaN with fewer than 2 runs or an SE of 0.
    """
    d = p - lab
    k = int(runs.max()) + 1 if runs.size else 0
    dk = np.bincount(runs, weights=d, minlength=k)
    nk = np.bincount(runs, minlength=k).astype(float)
    if k < 2:
        return np.nan
    m, se = replicate_means(moment_columns(dk, nk).sum(axis=0)[None, :], k)
    if not (np.isfinite(se[0]) and se[0] > 0):
        return np.nan
    m_reps, se_reps = replicate_means(bootstrap_sums(moment_columns(dk, nk, m[0]), n_boot, seed), k, m[0])
    ok = np.isfinite(m_reps) & np.isfinite(se_reps) & (se_reps > 0)
    t = (m_reps[ok] - m[0]) / se_reps[ok]
    z = m[0] / se[0]
    tail = min(np.count_nonzero(t >= z), np.count_nonzero(t <= z))
    return float(min(1.0, 2 * (1 + tail) / (t.size + 1)))


def _expit(eta: np.ndarray) -> np.ndarray:
    """1 / (1 + e^−η) without an overflow warning for a large −η (a separating fit goes there)."""
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-eta))


def calibration_slope(p, lab, runs) -> tuple[float, float, float]:
    """Logistic calibration fit logit P(ℓ = 1) = a + b·logit F, by Newton's method.

    Parameters
    ----------
    p : ndarray
        Forecasts F_t (clipped to [LOGIT_CLIP, 1 − LOGIT_CLIP] for the logit).
    lab : ndarray
        Labels ℓ in [0, 1] (soft labels are fitted as a quasi-likelihood).
    runs : ndarray of int
        Run code of every row, 0 … k−1 (for the clustered sandwich variance).

    Returns
    -------
    a, b, se_b : float
        Intercept, slope and the SE of the slope, clustered by run. NaN when the slope is not
        identified (a constant forecast) or the fit diverges (forecasts separate outcomes).
    """
    x = np.log(np.clip(p, LOGIT_CLIP, 1 - LOGIT_CLIP)) - np.log1p(-np.clip(p, LOGIT_CLIP,
                                                                          1 - LOGIT_CLIP))
    if x.size < 3 or np.ptp(x) < 1e-9:
        return np.nan, np.nan, np.nan
    X = np.column_stack([np.ones_like(x), x])
    theta = np.zeros(2)
    for _ in range(100):
        eta = X @ theta
        mu = _expit(eta)
        grad = X.T @ (lab - mu)
        H = (X * (mu * (1 - mu))[:, None]).T @ X
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            return np.nan, np.nan, np.nan
        theta = theta + step
        if not np.all(np.isfinite(theta)) or abs(theta[1]) > 1e3:
            return np.nan, np.nan, np.nan
        if np.max(np.abs(step)) < 1e-10:
            break
    else:
        return np.nan, np.nan, np.nan
    mu = _expit(X @ theta)
    H = (X * (mu * (1 - mu))[:, None]).T @ X
    scores = X * (lab - mu)[:, None]
    per_run = np.column_stack([np.bincount(runs, weights=scores[:, j]) for j in range(2)])
    k = per_run.shape[0]
    meat = k / max(k - 1, 1) * per_run.T @ per_run
    hinv = np.linalg.inv(H)
    cov = hinv @ meat @ hinv
    return float(theta[0]), float(theta[1]), float(np.sqrt(max(cov[1, 1], 0.0)))


def verdict_rows(data: TrajectoryData, settings: ScoreSettings, q_z, name: str):
    """The step rows of one predictor that have a forecast and a label, and their runs.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
        Its censoring mode sets the labels ℓ (:func:`tpsviz.diagnostics.leaderboard.run_labels`).
    q_z : array_like or Series, optional
        q_Z estimates for exact mode.
    name : str
        The predictor.

    Returns
    -------
    p, lab : ndarray
        Forecast and label of every kept row.
    runs : ndarray of int
        Run code of every kept row, 0 … k−1.
    last_p, run_lab : ndarray
        Last forecast and label of each run.
    observed : ndarray
        Each run's observed outcome (NaN where none was seen: a censored run).
    """
    lab_run = run_labels(data, settings, q_z)
    codes = data.steps["traj"].to_numpy()
    p = data.forecasts(name)
    lab = lab_run[codes]
    keep = np.flatnonzero(~np.isnan(p) & ~np.isnan(lab))
    p, lab, c = p[keep], lab[keep], codes[keep]
    uniq, runs = np.unique(c, return_inverse=True)
    last = np.r_[np.flatnonzero(runs[1:] != runs[:-1]), runs.size - 1] if runs.size else runs
    observed = data.trajectories["outcome"].to_numpy(dtype=float)[uniq]  # NaN: no outcome seen
    return p, lab, runs, p[last], lab[last], observed


def label_auroc(p, lab) -> float:
    """AUROC of forecasts against labels ℓ in [0, 1], pooled over the rows given.

    A soft label (exact mode: a censored run counted at q_Z) enters as a success of weight ℓ and a
    failure of weight 1 − ℓ, so AUROC = Σ_i Σ_j ℓ_i (1 − ℓ_j) (1{F_i > F_j} + ½ 1{F_i = F_j}) / (Σ ℓ · Σ (1 − ℓ))
    over all pairs of rows; with 0/1 labels this is the usual AUROC.

    Parameters
    ----------
    p : ndarray
        Forecasts in [0, 1].
    lab : ndarray
        Labels in [0, 1], one per row.

    Returns
    -------
    float
        NaN when there is no row, or no weight on one of the two outcomes.
    """
    p, lab = np.asarray(p, dtype=float), np.asarray(lab, dtype=float)
    soft = (lab > 0) & (lab < 1)
    if soft.any():
        p, w = np.r_[p, p], np.r_[lab, 1.0 - lab]
        lab = np.r_[np.ones(lab.size), np.zeros(lab.size)]
        keep = w > 0
        p, lab, w = p[keep], lab[keep], w[keep]
    else:
        w = None
    if p.size == 0 or np.all(lab == lab[0]):
        return np.nan
    return auroc(p, lab, w)


def _separation(p, lab) -> int:
    """+1 if every success is forecast above every failure, −1 if below, else 0 (0/1 labels only)."""
    if not np.all((lab == 0) | (lab == 1)):
        return 0
    hi, lo = p[lab == 1], p[lab == 0]
    if hi.size == 0 or lo.size == 0:
        return 0
    if hi.min() > lo.max():
        return 1
    return -1 if hi.max() < lo.min() else 0


def row_statistics(p, lab, runs, last_p, run_lab, observed, level, rng, n_null) -> dict:
    """Every statistic a verdict is decided on but the skill, from :func:`verdict_rows`.

    Parameters
    ----------
    p, lab, runs, last_p, run_lab, observed
        As :func:`verdict_rows` returns them.
    level : float
        Confidence level of the slope's interval and the tests.
    rng : numpy.random.Generator
        Draws the subset of runs of the CORP tests (in a large log) and their nulls.
    n_null : int
        Replicates of each null at most.

    Returns
    -------
    dict
        The counts, rates, ``bias``, ``bias_se``, ``bias_p`` (:func:`bias_test`), ``slope`` (+ ``_se``, ``_ci_low``, ``_ci_high``),
        ``separation``, the CORP statistics and p-values, ``n_test_runs``, and ``auroc`` (on these
        rows and labels) with ``auroc_complete`` (on the rows of the runs whose outcome was observed)
        (see :class:`tpsviz.diagnostics.verdict.Verdict`).
    """
    n_runs = int(run_lab.size)
    seen = observed[~np.isnan(observed)]
    s = {"n_runs": n_runs, "n_rows": int(p.size), "n_success": float(run_lab.sum()),
         "n_failure": float(n_runs - run_lab.sum()),
         "run_rate": float(run_lab.mean()) if n_runs else np.nan,
         # runs whose outcome was actually observed: a verdict needs evidence, not only q_Z labels
         "n_observed": int(seen.size), "n_observed_success": int(seen.sum())}
    nan = np.nan
    s.update(forecast_min=float(p.min()) if p.size else nan, forecast_max=float(p.max()) if p.size else nan,
             mean_forecast=float(p.mean()) if p.size else nan,
             success_rate=float(lab.mean()) if p.size else nan)
    y_seen = observed[runs]  # each row's observed outcome (NaN: its run was cut off): the leaderboard's rows
    seen_rows = ~np.isnan(y_seen)
    a = label_auroc(p, lab)  # (0.25 s on 1.4M rows: the second only where runs were cut off)
    s.update(auroc=a, auroc_complete=a if seen_rows.all() else label_auroc(p[seen_rows], y_seen[seen_rows]))
    if n_runs < 2:
        s.update(bias=nan, bias_se=nan, bias_p=nan, slope=nan, slope_se=nan, slope_ci_low=nan,
                 slope_ci_high=nan, separation=0, mcb=nan, mcb_p=nan, dsc=nan, dsc_p=nan, unc=nan, dsc_rev_p=nan,
                 n_test_runs=n_runs)
        return s
    s["bias"], s["bias_se"] = _clustered_bias(p, lab, runs)
    # the studentized bootstrap's p-value of the bias; a log of more runs than the CORP tests take is
    # judged by the normal z (its mean is no longer carried by a few runs)
    s["bias_p"] = bias_test(p, lab, runs) if n_runs <= MAX_TEST_RUNS else np.nan
    _, b, se = calibration_slope(p, lab, runs)
    z = z_value(level)
    s.update(slope=b, slope_se=se, slope_ci_low=b - z * se, slope_ci_high=b + z * se,
             separation=_separation(p, lab))
    if n_runs > MAX_TEST_RUNS:  # the CORP tests on a seeded random subset of runs (stated in n_test_runs)
        keep_runs = np.zeros(n_runs, dtype=bool)
        keep_runs[rng.choice(n_runs, MAX_TEST_RUNS, replace=False)] = True
        rows = keep_runs[runs]
        new_code = np.cumsum(keep_runs) - 1
        s.update(corp_tests(p[rows], lab[rows], new_code[runs[rows]], last_p[keep_runs], run_lab[keep_runs],
                        rng, n_null, level))
    else:
        s.update(corp_tests(p, lab, runs, last_p, run_lab, rng, n_null, level))
    s["n_test_runs"] = min(n_runs, MAX_TEST_RUNS)
    return s
