"""Deferral decisions: what a confidence threshold is worth when the agent hands off below it.

Policy π_τ: run the agent, and at the first step whose forecast F_t falls below τ, stop and hand
the task to a person (docs/theory.md, "Deferral"). With a utility table — value of a success, cost
of a failure, cost of a hand-off, cost per step run — run i is worth

    u_i(τ) = −handoff − per_step · t_i(τ)          if F_t < τ first at position t_i(τ)
           = success · Y_i − failure · (1 − Y_i) − per_step · T_i    otherwise,

where T_i is the run's length. A censored run that is not handed off ran out of budget without
delivering: it counts as a failure (``censored="failure"``, the simple censored reading) or is
left out (``"exclude"``). The expected utility U(τ) = mean_i u_i(τ) over a grid of τ, the best τ
(a range when U is flat at its maximum) with a bootstrap CI over runs, and the risk–coverage curve
(coverage: share of runs not handed off; risk: failure rate among them) with its area (AURC: the
failure rate among the runs kept, averaged over coverage) follow. τ = 0 never hands off; τ = 1 hands off
at the first forecast below 1.

The same τ are the thresholds of the Murphy diagram (:mod:`tpsviz.diagnostics.murphy`): the elementary score
at threshold τ prices exactly the decision "act iff F ≥ τ".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tpsviz.core.inference import DEFAULT_SEED, bootstrap_sums
from tpsviz.core.data import TrajectoryData

__all__ = ["Utility", "DeferralResult", "deferral", "run_utilities", "best_mask", "TIE_TOL"]

TIE_TOL = 1e-12
"""Relative tolerance under which two mean utilities count as equal (the same runs summed in another
order differ in the last bits)."""


@dataclass(frozen=True)
class Utility:
    """A utility table (all in the same unit, e.g. dollars or minutes of a person's time).

    Parameters
    ----------
    success : float
        Value of a run the agent completes successfully.
    failure : float
        Cost of a run the agent completes wrongly (or, when censored, does not complete).
    handoff : float
        Cost of handing a task to a person.
    per_step : float
        Cost of each step the agent runs.
    """

    success: float = 1.0
    failure: float = 1.0
    handoff: float = 0.3
    per_step: float = 0.0

    def __post_init__(self):
        for k in ("success", "failure", "handoff", "per_step"):
            v = getattr(self, k)
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"utility {k} must be a finite number >= 0 (costs are given as positive "
                                 f"amounts), got {v!r}")


@dataclass
class DeferralResult:
    """Output of :func:`deferral`.

    Attributes
    ----------
    curve : DataFrame
        Per τ: ``tau``, ``utility`` (mean per run), ``ci_low``, ``ci_high`` (pointwise bootstrap),
        ``coverage``, ``risk``, ``handoff_rate``, ``best`` (the mean utility equals the maximum).
    best_tau, best_utility : float
        The τ of the largest mean utility (the smallest such τ on ties) and that utility.
    best_tau_ci : (float, float)
        Percentile bootstrap interval of the best τ (runs resampled). A replicate whose curve has
        several best τ (a plateau) counts with its whole range: the lower end is the (1 − level)/2
        quantile of the replicates' smallest best τ, the upper end the (1 + level)/2 quantile of
        their largest best τ.
    best_utility_ci : (float, float)
    best_tau_high : float
        (A property.) The largest τ of the grid whose mean utility equals the maximum (within
        ``TIE_TOL`` · (1 + |max|)); ``best_tau`` (also ``best_tau_low``) is the smallest, and the two
        are equal when the best τ is unique. The curve's ``best`` column marks every such τ.
    aurc : float
        Area under the risk–coverage curve: the failure rate among the runs kept, averaged over
        coverage (lower is better).
    n_runs, n_excluded : int
    utility : Utility
    """

    curve: pd.DataFrame
    best_tau: float
    best_utility: float
    best_tau_ci: tuple
    best_utility_ci: tuple
    aurc: float
    n_runs: int
    n_excluded: int
    utility: Utility

    @property
    def best_tau_high(self) -> float:
        """The largest best τ (the curve's ``best`` rows); ``best_tau`` when it is unique."""
        return float(self.curve.loc[self.curve["best"], "tau"].max())

    @property
    def best_tau_low(self) -> float:
        """The smallest best τ: ``best_tau`` itself."""
        return self.best_tau

    def best_tau_label(self) -> str:
        """The best τ as text, for tables and the CLI.

        Returns
        -------
        str
            "0.35" when the best τ is unique; "0.00–0.50, flat" when every τ of the grid between
            the smallest and the largest best τ is best; "0.00–0.20 or 0.61–1.00, tie" when the
            best τ form separate ranges (at most three shown).
        """
        c = self.curve.sort_values("tau")
        taus, best = c["tau"].to_numpy(), c["best"].to_numpy(dtype=bool)
        pieces, start = [], None
        for i in range(taus.size):
            if best[i] and start is None:
                start = i
            if start is not None and (i == taus.size - 1 or not best[i + 1]):
                lo, hi = taus[start], taus[i]
                pieces.append(f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}")
                start = None
        if len(pieces) == 1:
            return pieces[0] if self.best_tau_low == self.best_tau_high else pieces[0] + ", flat"
        shown = " or ".join(pieces[:3]) + (" or …" if len(pieces) > 3 else "")
        return shown + ", tie"


def run_utilities(data: TrajectoryData, name: str, utility: Utility, thresholds: np.ndarray,
                  censored: str = "failure") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_i(τ) for every run and threshold, whether each run is handed off, and whether it failed.

    Returns
    -------
    u : ndarray (runs × thresholds)
    handed : ndarray of bool (runs × thresholds)
    failed : ndarray of bool (runs): outcome 0, or censored (``censored="failure"``)
    Runs left out (``censored="exclude"``, or no forecast at all: they are never handed off and
    keep their completed value) are not in the arrays when excluded.
    """
    if censored not in ("failure", "exclude"):
        raise ValueError(f"censored must be 'failure' or 'exclude', got {censored!r}")
    t = data.trajectories
    n = len(t)
    cens = t["censored"].to_numpy(dtype=bool)
    y = np.where(cens, 0.0, t["outcome"].to_numpy(dtype=float))
    length = t["length"].to_numpy(dtype=float)
    keep = ~cens if censored == "exclude" else np.ones(n, dtype=bool)
    f = data.steps[f"conf_{name}"].to_numpy(dtype=float)
    codes = data.steps["traj"].to_numpy()
    pos = data.steps["t"].to_numpy(dtype=float)
    present = ~np.isnan(f)
    f, codes, pos = f[present], codes[present], pos[present]
    # running minimum along each run: the hand-off happens at the first t with min(F_1..F_t) < τ
    runmin = pd.Series(f).groupby(codes).cummin().to_numpy()
    completed = utility.success * y - utility.failure * (1.0 - y) - utility.per_step * length
    thr = np.asarray(thresholds, dtype=float)
    u = np.tile(completed[:, None], (1, thr.size))
    handed = np.zeros((n, thr.size), dtype=bool)
    big = np.iinfo(np.int64).max
    idx = np.arange(f.size)
    starts = np.r_[0, np.flatnonzero(codes[1:] != codes[:-1]) + 1] if f.size else np.zeros(0, int)
    runs = codes[starts]
    for j, tau in enumerate(thr):
        first = np.where(runmin < tau, idx, big)
        hit = np.minimum.reduceat(first, starts) if f.size else np.zeros(0, np.int64)
        some = hit != big
        r = runs[some]
        u[r, j] = -utility.handoff - utility.per_step * pos[hit[some]]
        handed[r, j] = True
    failed = (y == 0.0)
    return u[keep], handed[keep], failed[keep]


def _aurc(coverage: np.ndarray, risk: np.ndarray) -> float:
    """Area under risk against coverage over [0, 1] (trapezoids through the reached points, the
    curve started at coverage 0 with the risk of the smallest coverage reached)."""
    ok = ~np.isnan(risk)
    if not ok.any():
        return float("nan")
    df = pd.DataFrame({"c": coverage[ok], "r": risk[ok]}).groupby("c", as_index=False)["r"].mean()
    c, r = df["c"].to_numpy(), df["r"].to_numpy()
    c, r = np.r_[0.0, c], np.r_[r[0], r]
    return float(np.sum(np.diff(c) * (r[1:] + r[:-1]) / 2))


def best_mask(values: np.ndarray) -> np.ndarray:
    """Which entries equal the maximum along the last axis, within ``TIE_TOL`` · (1 + |max|).

    Parameters
    ----------
    values : ndarray
        Mean utilities over τ: shape (k,), or (replicates, k).

    Returns
    -------
    ndarray of bool
        Same shape as ``values``.
    """
    values = np.asarray(values, dtype=float)
    top = values.max(axis=-1, keepdims=True)
    return values >= top - TIE_TOL * (1.0 + np.abs(top))


def deferral(data: TrajectoryData, name: str, utility: Utility = Utility(), thresholds=None,
             censored: str = "failure", n_boot: int = 1000, level: float = 0.95,
             seed: int = DEFAULT_SEED) -> DeferralResult:
    """The value of the hand-off policy "stop when F_t < τ" over τ, for one predictor.

    Parameters
    ----------
    data : TrajectoryData
    name : str
        Predictor.
    utility : Utility
    thresholds : array_like, optional
        τ values (default 0, 0.01, …, 1).
    censored : {"failure", "exclude"}
        A censored run not handed off: a failure (default) or left out.
    n_boot, level, seed
        Bootstrap over runs for the CIs (0: no CIs).

    Returns
    -------
    DeferralResult

    Notes
    -----
    The mean utility is a step function of τ, often flat at its maximum (no run changes hands
    between two thresholds). Every τ of that plateau is equally best: the result gives its ends
    (``best_tau_low``, ``best_tau_high``) and ``best_tau`` is the smallest. The bootstrap keeps the
    ties too: its interval runs from the lower quantile of each replicate's smallest best τ to the
    upper quantile of each replicate's largest, so a plateau is never cut to its first point.
    """
    thr = np.round(np.linspace(0.0, 1.0, 101), 10) if thresholds is None else np.asarray(thresholds, float)
    u, handed, failed = run_utilities(data, name, utility, thr, censored)
    n = u.shape[0]
    if n == 0:
        raise ValueError("no run to decide on (every run is censored and censored runs are excluded)")
    mean = u.mean(axis=0)
    auto = ~handed
    coverage = auto.mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        risk = (auto & failed[:, None]).sum(axis=0) / auto.sum(axis=0)
    is_best = best_mask(mean)
    j = int(np.argmax(is_best))  # the first best τ of the grid (its smallest)
    lo = hi = np.full(thr.size, np.nan)
    tau_ci = util_ci = (np.nan, np.nan)
    if n_boot > 0 and n >= 2:
        reps = bootstrap_sums(u, n_boot, seed) / n
        a = (1 - level) / 2
        lo, hi = np.quantile(reps, [a, 1 - a], axis=0)
        # ties: each replicate contributes its smallest best τ to the lower end and its largest to the upper
        rep_best = best_mask(reps)
        rep_low = np.where(rep_best, thr, np.inf).min(axis=1)
        rep_high = np.where(rep_best, thr, -np.inf).max(axis=1)
        tau_ci = (float(np.quantile(rep_low, a, method="inverted_cdf")),  # grid values
                  float(np.quantile(rep_high, 1 - a, method="inverted_cdf")))
        util_ci = (float(lo[j]), float(hi[j]))
    curve = pd.DataFrame({"tau": thr, "utility": mean, "ci_low": lo, "ci_high": hi, "coverage": coverage,
                          "risk": risk, "handoff_rate": 1.0 - coverage, "best": is_best})
    n_all = data.n_trajectories
    return DeferralResult(curve, float(thr[j]), float(mean[j]), tau_ci, util_ci, _aurc(coverage, risk), n,
                          n_all - n, utility)
