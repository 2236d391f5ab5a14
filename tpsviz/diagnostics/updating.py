"""Rational updating: does a forecast move as much as the uncertainty it resolves?

A truthful success probability F_t = P(Y = 1 | what is known at step t) is a martingale, so its
increments are orthogonal and, summed along a run, their squares match the variance they
resolve (docs/theory.md, "Rational updating"):

    E[ Σ_t (F_{t+1} − F_t)² ] = E[ F_1(1 − F_1) − F_end(1 − F_end) ].

A finished run's path ends with one more point, its outcome Y (so F_end(1 − F_end) = 0); a
censored run's path ends at its last forecast, which a step budget (a stopping time) does not
bias. The **excess movement** of run i is

    X_i = Σ_t (F_{t+1} − F_t)² − [F_1(1 − F_1) − F_end(1 − F_end)],

zero in expectation for a truthful trace, positive when the forecast moves more than the
information justifies (over-reaction) and negative when it moves less (under-reaction). It needs
no binning and no outcome model. Averaged over runs with its standard error across runs, z =
mean / SE tests it. Steps without a forecast are skipped (the path joins the forecasts given).

The **drift** E[F_{t+1} − F_t | F_t] is zero too: :func:`drift_table` gives it by forecast bin
and by step, with intervals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.clusters import run_clusters
from tpsviz.core.inference import mean_se, normal_quantile
from tpsviz.core.data import TrajectoryData

__all__ = ["excess_movement", "movement_per_run", "drift_table"]


def _paths(data: TrajectoryData, name: str):
    """Forecasts present for predictor ``name`` in run order, their run codes, and each run's
    outcome (NaN when censored)."""
    f = data.steps[f"conf_{name}"].to_numpy(dtype=float)
    codes = data.steps["traj"].to_numpy()
    keep = ~np.isnan(f)
    t = data.trajectories
    y = np.where(t["censored"].to_numpy(dtype=bool), np.nan, t["outcome"].to_numpy(dtype=float))
    return f[keep], codes[keep], y


def movement_per_run(f: np.ndarray, codes: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    """Quadratic variation, resolved uncertainty and excess movement of every run.

    Parameters
    ----------
    f : ndarray
        Forecasts, grouped by run and in step order within a run (missing ones removed).
    codes : ndarray of int
        Run code of each forecast (0 … n_runs − 1), non-decreasing.
    y : ndarray
        Outcome per run code: 1/0, NaN for a censored run.

    Returns
    -------
    DataFrame
        One row per run code with at least one forecast: ``run`` (code), ``n_forecasts``,
        ``quadratic_variation`` Σ (F_{t+1} − F_t)² including the final jump to Y of a finished
        run, ``resolved`` F_1(1 − F_1) − F_end(1 − F_end), and ``excess`` = their difference.
    """
    f = np.asarray(f, dtype=float)
    codes = np.asarray(codes)
    n = y.size
    if f.size == 0:
        return pd.DataFrame(columns=["run", "n_forecasts", "quadratic_variation", "resolved", "excess"])
    start = np.r_[True, codes[1:] != codes[:-1]]
    end = np.r_[codes[1:] != codes[:-1], True]
    same = ~start[1:]
    d2 = np.diff(f) ** 2
    qv = np.bincount(codes[1:][same], weights=d2[same], minlength=n)
    runs = codes[start]
    first, last = f[start], f[end]
    yr = y[runs]
    done = ~np.isnan(yr)
    qv_r = qv[runs] + np.where(done, (np.where(done, yr, 0.0) - last) ** 2, 0.0)
    resolved = first * (1 - first) - np.where(done, 0.0, last * (1 - last))
    return pd.DataFrame({"run": runs, "n_forecasts": np.bincount(codes, minlength=n)[runs],
                         "quadratic_variation": qv_r, "resolved": resolved, "excess": qv_r - resolved})


def excess_movement(data: TrajectoryData, predictors: list[str] | None = None,
                    cluster_by: str = "auto") -> pd.DataFrame:
    """Mean excess movement per run of every predictor, with its SE across runs and z.

    Parameters
    ----------
    data : TrajectoryData
    predictors : list of str, optional
        Default: all.
    cluster_by : str
        The unit of the SE (:func:`tpsviz.core.clusters.run_clusters`: by task where runs repeat
        tasks, docs/theory.md §6.1).

    Returns
    -------
    DataFrame
        Indexed by predictor: ``value`` (mean excess movement per run; 0 for a truthful trace,
        > 0 over-reaction, < 0 under-reaction), ``se``, ``z`` = value / se, ``n_runs`` (runs
        with a forecast), ``n_censored``, ``quadratic_variation`` and ``resolved`` (their
        means).
    """
    rows = []
    groups = run_clusters(data, cluster_by).groups()
    for name in predictors or data.predictors:
        f, codes, y = _paths(data, name)
        per = movement_per_run(f, codes, y)
        x = per["excess"].to_numpy(dtype=float)
        m = x.size
        value = float(x.mean()) if m else np.nan
        se = mean_se(x, None if groups is None else groups[per["run"].to_numpy(dtype=int)])
        with np.errstate(invalid="ignore", divide="ignore"):
            z = value / se if se and np.isfinite(se) else np.nan
        rows.append({"predictor": name, "value": value, "se": se, "z": z, "n_runs": m,
                     "n_censored": int(np.isnan(y[per["run"].to_numpy(dtype=int)]).sum()) if m else 0,
                     "quadratic_variation": float(per["quadratic_variation"].mean()) if m else np.nan,
                     "resolved": float(per["resolved"].mean()) if m else np.nan})
    cols = ["value", "se", "z", "n_runs", "n_censored", "quadratic_variation", "resolved"]
    return pd.DataFrame(rows, columns=["predictor", *cols]).set_index("predictor")


def drift_table(data: TrajectoryData, name: str, by: str = "bin", n_bins: int = 10,
                level: float = 0.95, max_step: int | None = None) -> pd.DataFrame:
    """Mean next move E[F_{t+1} − F_t] of a predictor, by forecast bin or by step, with
    normal intervals across moves.

    A finished run's last move is to its outcome Y; a censored run's last forecast has no next
    move. For a truthful forecast every row is 0 within its interval (moves are martingale
    increments: uncorrelated, so the SE of their mean is the usual one).

    Parameters
    ----------
    data : TrajectoryData
    name : str
        Predictor.
    by : {"bin", "step"}
        Group by the bin of F_t (``n_bins`` equal-width bins) or by the forecast's position t
        in its run (1 = first forecast).
    n_bins : int
    level : float
    max_step : int, optional
        Steps above this are pooled into the last row (by step).

    Returns
    -------
    DataFrame
        ``group`` (bin lower edge or step), ``n`` moves, ``mean``, ``se``, ``ci_low``,
        ``ci_high``.
    """
    if by not in ("bin", "step"):
        raise ValueError(f"by must be 'bin' or 'step', got {by!r}")
    f, codes, y = _paths(data, name)
    if f.size == 0:
        return pd.DataFrame(columns=["group", "n", "mean", "se", "ci_low", "ci_high"])
    end = np.r_[codes[1:] != codes[:-1], True]
    nxt = np.r_[f[1:], np.nan]
    nxt = np.where(end, y[codes], nxt)  # a finished run's last move goes to Y; censored: NaN
    move = nxt - f
    ok = ~np.isnan(move)
    if by == "bin":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        g = np.clip(np.searchsorted(edges, f, side="right") - 1, 0, n_bins - 1)
        label = edges[:-1]
    else:
        start = np.r_[True, codes[1:] != codes[:-1]]
        first_at = np.maximum.accumulate(np.where(start, np.arange(f.size), 0))
        g = np.arange(f.size) - first_at  # 0-based position among the run's forecasts
        if max_step:
            g = np.minimum(g, int(max_step) - 1)
        label = np.arange(int(g.max()) + 1) + 1
    k = label.size
    n = np.bincount(g[ok], minlength=k).astype(float)
    s = np.bincount(g[ok], weights=move[ok], minlength=k)
    s2 = np.bincount(g[ok], weights=move[ok] ** 2, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / n
        var = (s2 - n * mean ** 2) / (n - 1)
        se = np.sqrt(np.maximum(var, 0.0) / n)
    zq = normal_quantile(level)
    out = pd.DataFrame({"group": label, "n": n.astype(np.int64), "mean": mean, "se": se,
                        "ci_low": mean - zq * se, "ci_high": mean + zq * se})
    return out[out["n"] > 0].reset_index(drop=True)
