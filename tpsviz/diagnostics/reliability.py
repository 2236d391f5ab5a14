"""Data for reliability diagrams: binned rates with intervals, the CORP curve, histograms.

Compute only: every function returns a plain DataFrame that a plot builder draws.

- ``reliability_bins``: per forecast bin, mean forecast, observed success rate and a binomial
  confidence interval for the rate (Wilson score or Clopper–Pearson exact).
- ``corp_curve``: the CORP reliability curve (Dimitriadis, Gneiting & Jordan 2021): the PAV
  (isotonic) recalibration F̂ against F, with a consistency band: the pointwise range of PAV
  refits on outcomes simulated as Y* ~ Bernoulli(F), i.e. where the curve would lie if the
  forecasts were calibrated. A curve outside the band is evidence of miscalibration there.
- ``forecast_histogram``: how many forecasts fall in each bin (sharpness).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.checks import forecasts_and_outcomes
from tpsviz.diagnostics.decomposition import pav_unique
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.diagnostics.metrics import bin_edges, bin_index
from tpsviz.diagnostics.selection import scope_rows, scoped_forecasts

__all__ = ["wilson_interval", "clopper_pearson_interval", "reliability_bins", "corp_curve",
           "forecast_histogram", "reliability_panels"]


def _check_level(level: float) -> float:
    level = float(level)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return level


def wilson_interval(k, n, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion k/n (NaN where n = 0).

    (k + z²/2)/(n + z²) ± z/(n + z²)·sqrt(k(n−k)/n + z²/4), z the (1+level)/2 normal quantile.
    """
    level = _check_level(level)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    from scipy import special  # (here, not at import: 0.1 s that most uses of this module never need)

    z = special.ndtri((1 + level) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (k + z * z / 2) / (n + z * z)
        half = z / (n + z * z) * np.sqrt(k * (n - k) / n + z * z / 4)
        lo, hi = np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
    empty = n == 0
    return np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)


def clopper_pearson_interval(k, n, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Clopper–Pearson (exact) interval: beta quantiles, 0 at k = 0 and 1 at k = n."""
    from scipy import stats  # ~0.3 s to import: only when asked for

    level = _check_level(level)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    a = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)
        hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1)), 1.0)
    empty = n == 0
    return np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)


def reliability_bins(p, y, n_bins: int = 10, strategy: str = "uniform",
                     interval: str = "wilson", level: float = 0.95) -> pd.DataFrame:
    """Binned reliability diagram data.

    Parameters
    ----------
    p, y : array_like
        Forecasts in [0, 1] and outcomes 0/1 (pooled rows or the rows of one step).
    n_bins : int
        Number of bins (>= 1).
    strategy : {"uniform", "quantile"}
        Equal-width or equal-mass bins (same bins as the T-ECE).
    interval : {"wilson", "clopper-pearson"}
        Confidence interval for the observed rate in each bin.
    level : float
        Confidence level.

    Returns
    -------
    pandas.DataFrame
        One row per bin, empty bins included (n = 0, NaN rates): ``bin_lo``, ``bin_hi``,
        ``n``, ``mean_forecast``, ``observed_rate``, ``ci_low``, ``ci_high``. Rows treat
        steps as independent: the intervals are narrower than a trajectory-level analysis.
    """
    p, y = forecasts_and_outcomes(p, y, "to decompose")
    if interval not in ("wilson", "clopper-pearson"):
        raise ValueError(f"interval must be 'wilson' or 'clopper-pearson', got {interval!r}")
    edges = bin_edges(p, n_bins, strategy)
    b = bin_index(p, edges)
    n = np.bincount(b, minlength=n_bins)
    k = np.bincount(b, weights=y, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_f = np.bincount(b, weights=p, minlength=n_bins) / n
        rate = k / n
    fn = wilson_interval if interval == "wilson" else clopper_pearson_interval
    lo, hi = fn(k, n, level)
    return pd.DataFrame({"bin_lo": edges[:-1], "bin_hi": edges[1:], "n": n,
                         "mean_forecast": mean_f, "observed_rate": rate,
                         "ci_low": lo, "ci_high": hi})


def corp_curve(p, y, n_boot: int = 500, seed: int = DEFAULT_SEED, level: float = 0.9,
               max_points: int = 400) -> pd.DataFrame:
    """CORP reliability curve with a consistency band under the calibration hypothesis.

    Parameters
    ----------
    p, y : array_like
        Forecasts in [0, 1] and outcomes 0/1.
    n_boot : int
        Number of simulated outcome vectors Y* ~ Bernoulli(F) (0: no band).
    seed : int
        Seed of the simulation.
    level : float
        Coverage of the pointwise band (reliabilitydiag's default is 0.9).
    max_points : int
        At most this many points are returned: all distinct forecasts, or a quantile
        subset of them if there are more (every point is an observed forecast value, where
        the PAV fit is exact, not interpolated).

    Returns
    -------
    pandas.DataFrame
        Columns ``x`` (distinct forecast value), ``n`` (rows at x), ``recalibrated`` (PAV
        fit F̂ at x: draw it as a step function), ``band_low`` and ``band_high`` (pointwise
        quantiles of the simulated fits; NaN if ``n_boot`` is 0).
    """
    p, y = forecasts_and_outcomes(p, y, "to decompose")
    level = _check_level(level)
    xs, inv, counts = np.unique(p, return_inverse=True, return_counts=True)
    w = counts.astype(float)
    fit = pav_unique(np.bincount(inv, weights=y, minlength=xs.size) / w, w)
    keep = np.arange(xs.size)
    if xs.size > max_points:
        keep = np.unique(np.round(np.linspace(0, xs.size - 1, max_points)).astype(int))
    lo = hi = np.full(keep.size, np.nan)
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        sims = np.empty((int(n_boot), keep.size))
        for r in range(int(n_boot)):
            # rows sharing a forecast are exchangeable: their simulated successes are binomial
            k = rng.binomial(counts, xs)
            sims[r] = pav_unique(k / w, w)[keep]
        lo, hi = np.quantile(sims, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return pd.DataFrame({"x": xs[keep], "n": counts[keep], "recalibrated": fit[keep],
                         "band_low": lo, "band_high": hi})


def forecast_histogram(p, bins=20) -> pd.DataFrame:
    """Counts of forecasts per bin.

    Parameters
    ----------
    p : array_like
        Forecasts in [0, 1] (NaN ignored).
    bins : int or array_like
        Number of equal-width bins on [0, 1], or increasing bin edges.

    Returns
    -------
    pandas.DataFrame
        ``bin_lo``, ``bin_hi``, ``count``; each bin is [lo, hi) and the last is closed.
    """
    p = np.asarray(p, dtype=float).ravel()
    p = p[~np.isnan(p)]
    if np.ndim(bins) == 0:
        edges = bin_edges(p, int(bins), "uniform")
    else:
        edges = np.asarray(bins, dtype=float)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError("bin edges must be a strictly increasing 1-d array of length >= 2")
    counts, _ = np.histogram(p, bins=edges)
    return pd.DataFrame({"bin_lo": edges[:-1], "bin_hi": edges[1:], "count": counts})


def reliability_panels(data, predictors: list[str], scope: str = "all", step: int | None = None,
                       pseudo: bool = False, n_bins: int = 10, n_boot: int = 200,
                       seed: int = DEFAULT_SEED) -> tuple[list[dict], pd.DataFrame]:
    """Reliability diagram panels of several predictors on one scope of a log.

    Parameters
    ----------
    data : TrajectoryData
    predictors : list of str
    scope, step, pseudo
        The step rows used (:func:`tpsviz.diagnostics.selection.scope_rows`).
    n_bins : int
        Equal-width bins of :func:`reliability_bins`.
    n_boot, seed
        Consistency-band replicates of :func:`corp_curve`.

    Returns
    -------
    panels : list of dict
        Per predictor with at least 2 rows in scope: ``name``, ``bins``
        (:func:`reliability_bins`), ``corp`` (:func:`corp_curve`), ``n`` (rows), ``n_traj``
        (runs).
    histograms : DataFrame
        :func:`forecast_histogram` (20 bins) of every panel, with a ``predictor`` column.
    """

    keep, y, codes = scope_rows(data, scope, step, pseudo)
    panels, hists = [], []
    for name, ok in scoped_forecasts(data, predictors, keep):
        p = data.forecasts(name)
        panels.append({"name": name, "bins": reliability_bins(p[ok], y[ok], n_bins=n_bins),
                       "corp": corp_curve(p[ok], y[ok], n_boot=n_boot, seed=seed), "n": int(ok.sum()),
                       "n_traj": int(np.unique(codes[ok]).size)})
        hists.append(forecast_histogram(p[ok], bins=20).assign(predictor=name))
    return panels, (pd.concat(hists, ignore_index=True) if hists else pd.DataFrame())
