"""Murphy diagrams: mean elementary loss against the decision threshold.

For a decision "act iff F >= c" with cost ratio c, the elementary loss is
ℓ_c(F, Y) = (1−c)·1{Y=1, F<c} + c·1{Y=0, F>=c} (Ehm, Gneiting, Jordan & Krüger 2016).
Every beta-family score is a mixture of them (Schervish 1989):
−S_{α,β}(F, Y) = ∫_0^1 ℓ_c(F, Y) ω_{α,β}(c) dc, so the ω-weighted area under the Murphy
curve is the mean loss: the α/β sliders choose which thresholds count.

:func:`murphy_diagram` gives what the Scoring rule lab draws for a log: every predictor's curve
over the steps of complete runs, and the check that each ω-weighted area equals minus the mean
score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tpsviz.core.checks import forecasts_and_outcomes
from tpsviz.core.data import TrajectoryData
from tpsviz.core.scores import beta_score, beta_score_pair, validate_alpha_beta
from tpsviz.diagnostics.leaderboard import labelled_rows

__all__ = ["MurphyCurve", "MurphyDiagram", "murphy_curve", "murphy_diagram", "murphy_integral"]


@dataclass(frozen=True)
class MurphyCurve:
    """Mean elementary loss of one predictor on a threshold grid.

    Attributes
    ----------
    thresholds : ndarray
        Decision thresholds c in (0, 1).
    mean_loss : ndarray
        (1/n) Σ_i ℓ_c(F_i, Y_i) at each threshold (lower is better).
    forecasts_pos, forecasts_neg : ndarray
        Sorted forecasts of the rows with Y = 1 and Y = 0: the curve is exactly
        (1/n)[(1−c)·#{pos < c} + c·#{neg >= c}], which :func:`murphy_integral` integrates.
    """

    thresholds: np.ndarray
    mean_loss: np.ndarray
    forecasts_pos: np.ndarray
    forecasts_neg: np.ndarray

    @property
    def n(self) -> int:
        return int(self.forecasts_pos.size + self.forecasts_neg.size)

    def to_frame(self) -> pd.DataFrame:
        """Columns ``threshold`` and ``mean_loss``, one row per grid point."""
        return pd.DataFrame({"threshold": self.thresholds, "mean_loss": self.mean_loss})


def _pos_below(sorted_pos: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.searchsorted(sorted_pos, c, side="left")  # #{F < c}


def _neg_at_or_above(sorted_neg: np.ndarray, c: np.ndarray) -> np.ndarray:
    return sorted_neg.size - np.searchsorted(sorted_neg, c, side="left")  # #{F >= c}


def murphy_curve(p, y, thresholds=None) -> MurphyCurve:
    """Mean elementary loss ℓ_c against the threshold c.

    Parameters
    ----------
    p : array_like
        Forecasts in [0, 1].
    y : array_like
        Outcomes 0/1.
    thresholds : array_like, optional
        Thresholds in (0, 1); default 999 equally spaced points 0.001, …, 0.999.

    Returns
    -------
    MurphyCurve
    """
    p, y = forecasts_and_outcomes(p, y, "for a Murphy curve")
    c = np.linspace(0.001, 0.999, 999) if thresholds is None else np.asarray(thresholds, float)
    if c.ndim != 1 or not ((c > 0) & (c < 1)).all():
        raise ValueError("thresholds must be a 1-d array of values in (0, 1)")
    pos, neg = np.sort(p[y == 1]), np.sort(p[y == 0])
    loss = ((1 - c) * _pos_below(pos, c) + c * _neg_at_or_above(neg, c)) / p.size
    return MurphyCurve(c, loss, pos, neg)


def murphy_integral(curve: MurphyCurve, alpha: float = 0.0, beta: float = 0.0) -> float:
    """Exact ∫_0^1 mean ℓ_c · ω_{α,β}(c) dc of a Murphy curve.

    Between consecutive distinct forecast values x_k < x_{k+1} the curve is
    (1/n)[(1−c)·A_k + c·B_k] with constant counts A_k = #{Y=1, F <= x_k} and
    B_k = #{Y=0, F >= x_{k+1}}; each piece is integrated in closed form with
    G_1(x) = ∫_x^1 (1−c) ω dc = −S(x, 1) and G_0(x) = ∫_0^x c ω dc = −S(x, 0)
    (incomplete beta functions), so no grid is involved.

    Parameters
    ----------
    curve : MurphyCurve
        From :func:`murphy_curve` (the grid does not matter).
    alpha, beta : float
        Beta-family parameters of the weight ω.

    Returns
    -------
    float
        The mean loss −mean S_{α,β}(F, Y) (>= 0; inf for an unbounded score when a forecast
        of exactly 0 or 1 was wrong).
    """
    alpha, beta = validate_alpha_beta(alpha, beta)
    pos, neg = curve.forecasts_pos, curve.forecasts_neg
    knots = np.unique(np.concatenate([[0.0, 1.0], pos, neg]))
    s1, s0 = beta_score_pair(knots, alpha, beta)
    g1, g0 = -s1, -s0
    a = np.searchsorted(pos, knots[:-1], side="right")  # #{pos <= x_k}
    b = _neg_at_or_above(neg, knots[1:])  # #{neg >= x_{k+1}}
    with np.errstate(invalid="ignore"):
        part_a = np.where(a > 0, a * (g1[:-1] - g1[1:]), 0.0)
        part_b = np.where(b > 0, b * (g0[1:] - g0[:-1]), 0.0)
    return float((part_a.sum() + part_b.sum()) / curve.n)


@dataclass(frozen=True)
class MurphyDiagram:
    """The Murphy curves of several predictors on one log, and their integral check.

    Attributes
    ----------
    thresholds : ndarray
        The grid the curves are drawn on.
    curves : DataFrame
        ``predictor``, ``c`` (threshold), ``loss`` (mean elementary loss): one row per predictor
        and grid point.
    checks : DataFrame
        One row per predictor: ``predictor``, ``integral`` (the exact ω-weighted area under its
        curve, :func:`murphy_integral`), ``mean_score`` (mean S_{α,β}(F, Y) per step; equals
        −``integral``), ``n_steps`` (labelled steps with a forecast).
    """

    thresholds: np.ndarray
    curves: pd.DataFrame
    checks: pd.DataFrame


def murphy_diagram(data: TrajectoryData, predictors, alpha: float = 0.0, beta: float = 0.0,
                   thresholds=None) -> MurphyDiagram:
    """Murphy curves of each predictor over the steps of complete runs, with the integral check.

    The forecasts are taken as logged (not clipped to [ε, 1 − ε]). A predictor with fewer than
    two labelled steps with a forecast is left out of both tables.

    Parameters
    ----------
    data : TrajectoryData
    predictors : iterable of str
    alpha, beta : float
        Beta-family parameters of the score and of its threshold weight ω.
    thresholds : array_like, optional
        The grid of the curves in (0, 1); default 250 points from 0.002 to 0.998.

    Returns
    -------
    MurphyDiagram

    Raises
    ------
    ValueError
        If α or β lies outside the beta family (:func:`tpsviz.core.scores.validate_alpha_beta`).
        Nothing else is raised for valid parameters: the integral of an unbounded score is +inf
        (and the mean score −inf) when a forecast of exactly 0 or 1 was wrong.
    """
    alpha, beta = validate_alpha_beta(alpha, beta)
    c = np.linspace(0.002, 0.998, 250) if thresholds is None else np.asarray(thresholds, float)
    labelled, y = labelled_rows(data)
    frames, checks = [], []
    for name in predictors:
        p = data.forecasts(name)
        ok = labelled & np.isfinite(p)
        if ok.sum() < 2:
            continue
        frames.append(pd.DataFrame({"predictor": name, "c": c, "loss": murphy_curve(p[ok], y[ok], c).mean_loss}))
        checks.append({"predictor": name, "integral": murphy_integral(murphy_curve(p[ok], y[ok]), alpha, beta),
                       "mean_score": float(np.mean(beta_score(p[ok], y[ok], alpha, beta))),
                       "n_steps": int(ok.sum())})
    curves = (pd.concat(frames, ignore_index=True) if frames
              else pd.DataFrame({"predictor": pd.Series(dtype=object), "c": pd.Series(dtype=float),
                                 "loss": pd.Series(dtype=float)}))
    return MurphyDiagram(c, curves, pd.DataFrame(checks, columns=["predictor", "integral", "mean_score", "n_steps"]))
