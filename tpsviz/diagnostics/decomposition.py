"""CORP score decomposition: miscalibration, discrimination, uncertainty.

Dimitriadis, Gneiting & Jordan (2021, PNAS), "Stable reliability diagrams for probabilistic
classifiers": recalibrate the forecasts by isotonic regression (pool-adjacent-violators, PAV,
tied forecasts pooled into one value), then for any proper score with loss L = −S

    L̄(F)  = MCB − DSC + UNC,
    UNC   = L̄(ȳ)                 loss of the constant forecast at the base rate,
    MCB   = L̄(F) − L̄(F̂)          what recalibration would gain (miscalibration),
    DSC   = UNC − L̄(F̂)           what the recalibrated forecast gains over the base rate,

with F̂ the PAV recalibration. The PAV fit minimises every proper score among increasing
maps of F at once, so MCB >= 0 and DSC >= 0 for every member (α, β) of the beta family.
``mean_score`` = mean S(F, Y) = −(MCB − DSC + UNC) in the reward orientation of the package.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.scores import beta_score, clip_forecasts, validate_alpha_beta
from tpsviz.core.checks import forecasts_and_outcomes
from tpsviz.diagnostics.selection import scope_rows, scoped_forecasts, steps_with_rows

__all__ = ["pav", "decompose", "decompose_by_step", "decompose_scope"]


def _check(p, y) -> tuple[np.ndarray, np.ndarray]:
    return forecasts_and_outcomes(p, y, "to decompose")


def pav_unique(values, weights) -> np.ndarray:
    """Weighted increasing isotonic regression of ``values`` (already in forecast order).

    Parameters
    ----------
    values : ndarray
        Mean outcome at each distinct forecast, in increasing order of the forecast.
    weights : ndarray
        Number of rows (or total weight) at each distinct forecast.

    Returns
    -------
    ndarray
        The PAV solution, in [0, 1].
    """
    # (scikit-learn: ~2.5 s to import, only when a model is fitted)
    from sklearn.isotonic import isotonic_regression

    return isotonic_regression(values, sample_weight=weights, y_min=0.0, y_max=1.0,
                               increasing=True)


def pav(p, y) -> np.ndarray:
    """CORP (PAV) recalibration of each forecast, ties pooled.

    Parameters
    ----------
    p : array_like
        Forecasts in [0, 1].
    y : array_like
        Outcomes 0/1.

    Returns
    -------
    ndarray
        F̂_i: the isotonic fit of y on p at p_i. Rows with equal p get the same value; a
        block whose outcomes are all 1 (all 0) is recalibrated to exactly 1 (0).
    """
    p, y = _check(p, y)
    xs, inv, counts = np.unique(p, return_inverse=True, return_counts=True)
    means = np.bincount(inv, weights=y, minlength=xs.size) / counts
    return pav_unique(means, counts.astype(float))[inv]


def _clamp(v: float, scale: float) -> float:
    """Set rounding-level negatives (|v| <= 1e-12·scale) to 0; keep real negatives visible."""
    return 0.0 if -1e-12 * scale <= v < 0 else v


def decompose(p, y, alpha: float = 0.0, beta: float = 0.0) -> dict:
    """CORP decomposition of the mean beta-family score.

    Parameters
    ----------
    p : array_like
        Forecasts in [0, 1]. For unbounded members (α <= 0 or β <= 0) clip them first
        (``tpsviz.core.scores.clip_forecasts``): a forecast of exactly 0 or 1 that is wrong has
        infinite loss, and then MCB is infinite.
    y : array_like
        Outcomes 0/1.
    alpha, beta : float
        Beta-family parameters ((0, 0) log score in nats, (1, 1) half the Brier score).

    Returns
    -------
    dict
        ``mcb``, ``dsc``, ``unc`` (all >= 0, in loss units of the chosen score),
        ``mean_score`` (= mean S(p, y) = −(mcb − dsc + unc), reward orientation) and ``n``.

    Examples
    --------
    >>> d = decompose([.4, .3, .2, .1, .5, .9], [0, 0, 0, 1, 1, 1], 0, 0)
    >>> round(d["mcb"], 7), round(d["dsc"], 7), round(d["unc"], 7)
    (0.3237327, 0.3182571, 0.6931472)
    """
    alpha, beta = validate_alpha_beta(alpha, beta)
    p, y = _check(p, y)
    loss_f = -float(np.mean(beta_score(p, y, alpha, beta)))
    loss_r = -float(np.mean(beta_score(pav(p, y), y, alpha, beta)))
    unc = -float(np.mean(beta_score(np.full(y.shape, y.mean()), y, alpha, beta)))
    scale = 1.0 + abs(unc) + (abs(loss_f) if np.isfinite(loss_f) else 0.0)
    mcb = _clamp(loss_f - loss_r, scale) if np.isfinite(loss_f) else np.inf
    dsc = _clamp(unc - loss_r, scale)
    return {"mcb": mcb, "dsc": dsc, "unc": unc, "mean_score": -loss_f, "n": int(p.size)}


def decompose_by_step(p, y, step, alpha: float = 0.0, beta: float = 0.0) -> pd.DataFrame:
    """CORP decomposition separately at each step t.

    Parameters
    ----------
    p, y : array_like
        Forecasts and outcomes per (trajectory, step) row.
    step : array_like
        Step index of each row.
    alpha, beta : float
        Beta-family parameters.

    Returns
    -------
    pandas.DataFrame
        One row per step, in increasing order, with columns ``step``, ``n`` (rows at that
        step), ``mcb``, ``dsc``, ``unc``, ``mean_score``. Where MCB is large the forecasts at
        that step are miscalibrated; where DSC is large they discriminate.
    """
    p, y = _check(p, y)
    step = np.asarray(step).ravel()
    if step.size != p.size:
        raise ValueError(f"step has {step.size} values for {p.size} rows")
    rows = []
    for t in np.unique(step):
        m = step == t
        d = decompose(p[m], y[m], alpha, beta)
        rows.append({"step": t, "n": d["n"], "mcb": d["mcb"], "dsc": d["dsc"],
                     "unc": d["unc"], "mean_score": d["mean_score"]})
    return pd.DataFrame(rows, columns=["step", "n", "mcb", "dsc", "unc", "mean_score"])


def decompose_scope(data, predictors: list[str], alpha: float, beta: float, eps: float,
                    scope: str = "all", step: int | None = None, pseudo: bool = False,
                    by_step: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """CORP decomposition of several predictors on one scope of a log, pooled and by step.

    Parameters
    ----------
    data : TrajectoryData
    predictors : list of str
    alpha, beta : float
        The beta-family score S_{α,β} decomposed.
    eps : float
        Forecasts are clipped to [ε, 1−ε] first, as for scoring.
    scope, step, pseudo
        The step rows used (:func:`tpsviz.diagnostics.selection.scope_rows`).
    by_step : bool
        Also decompose each step t with at least ``selection.STEP_MIN_ROWS`` rows.

    Returns
    -------
    pooled : DataFrame
        One row per predictor with at least 2 rows in scope: ``predictor`` and the columns of
        :func:`decompose`.
    steps : DataFrame
        :func:`decompose_by_step` of every predictor with a ``predictor`` column (empty
        without ``by_step``).
    """

    keep, y, _ = scope_rows(data, scope, step, pseudo)
    t = data.steps["t"].to_numpy()
    rows, steps = [], []
    for name, ok in scoped_forecasts(data, predictors, keep):
        pc, _ = clip_forecasts(data.forecasts(name)[ok], eps)
        rows.append({"predictor": name, **decompose(pc, y[ok], alpha, beta)})
        if by_step:
            m = steps_with_rows(t[ok])
            if m.sum():
                steps.append(decompose_by_step(pc[m], y[ok][m], t[ok][m], alpha, beta).assign(predictor=name))
    return pd.DataFrame(rows), (pd.concat(steps, ignore_index=True) if steps else pd.DataFrame())
