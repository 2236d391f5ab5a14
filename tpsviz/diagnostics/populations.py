"""Censored and complete runs as two populations, and the q_Z band (docs/theory.md §3).

What the Censoring page shows and the CLI can print: how the runs a step budget cut off differ
from the runs that finished (:func:`censoring_summary`, :func:`forecasts_by_population`), and how
far any model of q_Z could move the score (:func:`qz_band`: the censored score is linear in q_Z,
so its values at q_Z = 0 and 1 bound every exact score), and whether the exact and the simple
score of the Monte-Carlo audit differ beyond their interval (:func:`differs_beyond_ci`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData

__all__ = ["censoring_summary", "differs_beyond_ci", "forecasts_by_population", "qz_band"]


def censoring_summary(data: TrajectoryData) -> dict:
    """Counts and means of the censored and the complete runs.

    Returns
    -------
    dict
        ``n_runs``, ``n_censored``, ``n_complete``, ``mean_length`` (observed steps of every run),
        ``mean_length_censored``, ``mean_length_complete`` (observed steps; NaN without such
        runs), ``length_ratio`` (censored / complete), ``success_rate`` (of the complete runs),
        ``n_censored_with_qz`` (censored runs with a q_z value).
    """
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    length = t["length"].to_numpy(dtype=float)
    outcome = t["outcome"].to_numpy(dtype=float)

    def mean(v: np.ndarray) -> float:
        return float(v.mean()) if v.size else np.nan

    lc, lk = mean(length[cens]), mean(length[~cens])
    return {"n_runs": int(cens.size), "n_censored": int(cens.sum()), "n_complete": int((~cens).sum()),
            "mean_length": mean(length), "mean_length_censored": lc, "mean_length_complete": lk,
            "length_ratio": lc / lk if np.isfinite(lc) and np.isfinite(lk) and lk > 0 else np.nan,
            "success_rate": mean(outcome[~cens]),
            "n_censored_with_qz": int((cens & t["q_z"].notna().to_numpy()).sum())}


def forecasts_by_population(data: TrajectoryData, predictors: list[str]) -> pd.DataFrame:
    """Mean forecast of each predictor over the complete and over the censored runs.

    Returns
    -------
    DataFrame
        One row per (predictor, population) with runs: ``predictor``, ``runs`` ("complete" or
        "censored"), ``mean_all`` (mean F over every step with a forecast), ``mean_last`` (at each
        run's last observed step), ``n_runs`` (runs of the population). NaN where a predictor
        has no forecast there.
    """
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    codes = data.steps["traj"].to_numpy()
    last = data.steps["t"].to_numpy() == t["length"].to_numpy()[codes]
    rows = []
    for name in predictors:
        f = data.forecasts(name)
        for label, m in (("complete", ~cens[codes]), ("censored", cens[codes])):
            if not m.any():
                continue
            a, b = f[m], f[m & last]
            a, b = a[np.isfinite(a)], b[np.isfinite(b)]
            rows.append({"predictor": name, "runs": label,
                         "mean_all": float(a.mean()) if a.size else np.nan,
                         "mean_last": float(b.mean()) if b.size else np.nan,
                         "n_runs": int(np.unique(codes[m]).size)})
    return pd.DataFrame(rows, columns=["predictor", "runs", "mean_all", "mean_last", "n_runs"])


def qz_band(at_zero: pd.Series, at_one: pd.Series, grid: int = 11, n_censored: int | None = None) -> pd.DataFrame:
    """Mean TPS of every predictor if every censored run had the same q_Z, for q_Z on a grid.

    The censored score is linear in q_Z (S_cen = (1 − q)·S(F, 0) + q·S(F, 1)), so the mean TPS
    at any q_Z follows exactly from its values at q_Z = 0 (the simple mode) and 1 (upper).

    Parameters
    ----------
    at_zero, at_one : Series
        Mean TPS per predictor (index) under the simple and the upper mode.
    grid : int
        Points from 0 to 1.
    n_censored : int, optional
        The log's censored runs. With none, no score depends on q_Z: the band is flat at the simple
        mode's mean exactly (the two modes' means, summed apart, can differ in their last digits,
        which drew a zigzag of rounding errors).

    Returns
    -------
    DataFrame
        ``predictor``, ``q_z``, ``tps_mean`` (−∞ inside the band when an end is −∞).
    """
    rows = []
    for name in at_zero.index:
        lo = float(at_zero[name])
        hi = lo if n_censored == 0 else float(at_one[name])
        for q in np.linspace(0.0, 1.0, grid):
            with np.errstate(invalid="ignore"):  # an end of −∞ (ε = 0) stays −∞ inside the band
                v = lo if q == 0.0 or lo == hi else hi if q == 1.0 else (1 - q) * lo + q * hi  # (1−q)·x + q·x ≠ x in floats
            rows.append({"predictor": name, "q_z": float(q), "tps_mean": float(v)})
    return pd.DataFrame(rows, columns=["predictor", "q_z", "tps_mean"])


def differs_beyond_ci(ci_low, ci_high) -> np.ndarray:
    """Whether each difference is clear of zero: its interval lies wholly above or below 0.

    The Censoring page's audit table asks this of the exact − simple difference of each
    predictor (``tpsviz.diagnostics.audit.mc_audit``: ``delta_ci_low``, ``delta_ci_high``). An
    interval with an undefined (NaN) or infinite lower end never counts as clear.

    Parameters
    ----------
    ci_low, ci_high : array_like
        The ends of each interval.

    Returns
    -------
    ndarray of bool
        True where ``ci_low`` is finite and ``ci_low > 0`` or ``ci_high < 0``.
    """
    lo, hi = np.asarray(ci_low, dtype=float), np.asarray(ci_high, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.isfinite(lo) & ((lo > 0) | (hi < 0))
