"""Calibration of continuous predictive distributions: the probability integral transform (PIT).

If Y ~ F_t then PIT = F_t(Y) is uniform on [0, 1] (randomised where F_t jumps). A histogram of
the PIT values reads the miscalibration: U-shaped (edge bins heavy) when the forecasts are too
narrow, a hump when too wide, piled to one side when biased (docs/continuous.md, "PIT").

``gaussian``  PIT = Φ((y − μ)/σ).
``quantile``  the predictive CDF interpolated linearly between the points (q_j, τ_j). Below the
              lowest quantile the CDF is only known to rise from 0 to τ_1 somewhere, so the PIT
              is a uniform draw in [0, τ_1]; above the highest, a uniform draw in [τ_m, 1]; where
              several quantiles equal y, a uniform draw between their levels. Under calibration
              P(PIT in [τ_j, τ_{j+1}]) = τ_{j+1} − τ_j exactly; within such a cell the PIT is
              uniform only as far as the predictive is linear there.
``ensemble``  the randomised rank PIT ((#members < y) + U (#members = y + 1)) / (m + 1), uniform
              when y and the m members are exchangeable.

The U are drawn from a seeded generator, one per step row in row order, so a PIT value does not
depend on which other predictors or rows are scored.

Step rows of one run are dependent (the forecasts of a run share its one outcome), so a χ²
test over all rows is anti-conservative. The uniformity test uses one PIT per run, that of its
last scored step; runs are independent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.io.kinds.continuous import ensemble_batches
from tpsviz.core.inference import DEFAULT_SEED

__all__ = ["pit_values", "pit_histogram", "pit_reading", "last_scored_rows", "PIT_ALPHA"]

#: below this p-value of the χ² test the CLI describes the histogram's shape
PIT_ALPHA = 0.01


def pit_values(log, name: str, seed: int = DEFAULT_SEED) -> np.ndarray:
    """The PIT F_t(Y) of every step row for predictor ``name``.

    Parameters
    ----------
    log : ContinuousLog
    name : str
    seed : int
        Seed of the uniform draws that randomise the quantile tails, ties and the ensemble rank.

    Returns
    -------
    ndarray
        One value in [0, 1] per row of ``log.steps``; NaN where the row has no forecast or its run
        is censored.
    """
    form = log.form(name)
    y = log.row_outcome()
    ok = log.present(name) & ~np.isnan(y)
    u = np.random.default_rng(seed).random(y.size)
    out = np.full(y.shape, np.nan)
    if not ok.any():
        return out
    if form == "gaussian":
        from scipy.special import ndtr  # (scipy: imported when needed, never at `import tpsviz`)

        mu, sigma = log.gaussian(name)
        out[ok] = ndtr((y[ok] - mu[ok]) / sigma[ok])
    elif form == "quantile":
        levels, q = log.quantiles(name)
        out[ok] = _quantile_pit(y[ok], q[ok], levels, u[ok])
    else:
        for part, x in ensemble_batches(log.samples(name), np.flatnonzero(ok)):
            below = (x < y[part, None]).sum(axis=1)
            equal = (x == y[part, None]).sum(axis=1)
            out[part] = (below + u[part] * (equal + 1)) / (x.shape[1] + 1)
    return out


def _quantile_pit(y: np.ndarray, q: np.ndarray, levels: np.ndarray, u: np.ndarray) -> np.ndarray:
    """PIT of y under the CDF through (q_j, τ_j), linear between, randomised in the tails and at ties."""
    m = levels.size
    lt = (q < y[:, None]).sum(axis=1)   # quantiles strictly below y
    le = (q <= y[:, None]).sum(axis=1)  # quantiles at or below y
    lo = np.empty(y.shape)
    hi = np.empty(y.shape)
    tie = le > lt
    lo[tie], hi[tie] = levels[lt[tie]], levels[le[tie] - 1]
    below, above = ~tie & (lt == 0), ~tie & (lt == m)
    lo[below], hi[below] = 0.0, levels[0]
    lo[above], hi[above] = levels[-1], 1.0
    inner = ~tie & ~below & ~above
    if inner.any():
        r = np.flatnonzero(inner)
        j = lt[r] - 1  # q_j < y < q_{j+1}
        qa, qb = q[r, j], q[r, j + 1]
        x = levels[j] + (levels[j + 1] - levels[j]) * (y[r] - qa) / (qb - qa)
        lo[r] = hi[r] = x
    return lo + u * (hi - lo)


def last_scored_rows(log, pit: np.ndarray) -> np.ndarray:
    """Row index of the last step with a finite PIT in each run (one per run that has one)."""
    idx = np.flatnonzero(~np.isnan(pit))
    if idx.size == 0:
        return idx
    codes = log.steps["traj"].to_numpy()[idx]
    return idx[np.r_[codes[1:] != codes[:-1], True]]


def pit_reading(pit: np.ndarray, p_value: float, alpha: float = PIT_ALPHA) -> dict:
    """The shape of a PIT sample in words, from its mean and variance (a reading, not a test).

    Parameters
    ----------
    pit : ndarray
        Independent PIT values (one per run).
    p_value : float
        The uniformity test's p-value: at or above ``alpha`` the reading is "consistent with
        uniform".
    alpha : float

    Returns
    -------
    dict
        ``reading`` (words), ``bias_z`` = (mean − ½)/√(1/(12n)) (positive: outcomes above the
        forecasts, i.e. forecasts biased low) and ``spread_z`` = (variance − 1/12)/√(1/(180n))
        (positive: U-shaped, the forecasts too narrow; negative: a hump, too wide), both standard
        normal under uniformity for large n.
    """
    pit = np.asarray(pit, dtype=float)
    n = pit.size
    if n < 2:
        return {"reading": "too few runs to read", "bias_z": np.nan, "spread_z": np.nan}
    bias_z = float((pit.mean() - 0.5) / np.sqrt(1.0 / (12.0 * n)))
    spread_z = float((pit.var() - 1.0 / 12.0) / np.sqrt(1.0 / (180.0 * n)))
    if not (p_value < alpha):
        return {"reading": "consistent with uniform", "bias_z": bias_z, "spread_z": spread_z}
    words = {
        "bias": ("biased low (outcomes mostly above the forecast)" if bias_z > 0
                 else "biased high (outcomes mostly below the forecast)"),
        "spread": "too narrow (U-shaped)" if spread_z > 0 else "too wide (hump)",
    }
    parts = sorted((("bias", abs(bias_z)), ("spread", abs(spread_z))), key=lambda kv: -kv[1])
    top = parts[0][1]
    shown = [words[k] for k, z in parts if z > 3 and z >= top / 2]
    return {"reading": " and ".join(shown) if shown else "not uniform (no simple shape)",
            "bias_z": bias_z, "spread_z": spread_z}


def pit_histogram(log, name: str, n_bins: int = 10, seed: int = DEFAULT_SEED,
                  which: str = "all") -> tuple[pd.DataFrame, dict]:
    """PIT histogram of predictor ``name`` and a χ² test of uniformity on one PIT per run.

    Parameters
    ----------
    log : ContinuousLog
    name : str
    n_bins : int
        Equal-width bins on [0, 1] (2 to 100).
    seed : int
        As in :func:`pit_values`.
    which : {"all", "last"}
        Histogram of every scored row, or of the last scored step of each run. The test always
        uses the last scored step of each run.

    Returns
    -------
    table : DataFrame
        ``bin_low``, ``bin_high``, ``count``, ``expected`` (the count under uniformity).
    test : dict
        ``statistic`` (Pearson χ²), ``df``, ``p_value``, ``n_runs`` (PITs tested), ``n_rows`` (rows
        with a PIT), ``on`` (what was tested), ``alpha``, ``reading``, ``bias_z``, ``spread_z``
        (:func:`pit_reading`) and ``approximate`` (True when fewer than 5 runs per bin are expected).
    """
    from scipy.stats import chi2  # (scipy: imported when needed, never at `import tpsviz`)

    n_bins = int(n_bins)
    if not 2 <= n_bins <= 100:
        raise ValueError(f"n_bins must be between 2 and 100, got {n_bins}")
    if which not in ("all", "last"):
        raise ValueError(f"which must be 'all' or 'last', got {which!r}")
    pit = pit_values(log, name, seed)
    last = last_scored_rows(log, pit)
    shown = pit[~np.isnan(pit)] if which == "all" else pit[last]
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    table = pd.DataFrame({"bin_low": edges[:-1], "bin_high": edges[1:],
                          "count": np.histogram(shown, bins=edges)[0].astype(np.int64),
                          "expected": shown.size / n_bins})
    tested = pit[last]
    n = tested.size
    if n:
        c = np.histogram(tested, bins=edges)[0]
        e = n / n_bins
        stat = float(((c - e) ** 2 / e).sum())
        p = float(chi2.sf(stat, n_bins - 1))
    else:
        stat = p = np.nan
    test = {"statistic": stat, "df": n_bins - 1, "p_value": p, "n_runs": int(n),
            "n_rows": int((~np.isnan(pit)).sum()), "on": "the last scored step of each run (one PIT per run)",
            "alpha": PIT_ALPHA, "approximate": bool(n < 5 * n_bins)}
    test.update(pit_reading(tested, p) if n else {"reading": "no scored run", "bias_z": np.nan,
                                                   "spread_z": np.nan})
    return table, test
