"""Continuous outcomes: the Trajectory Proper Score with the CRPS (docs/continuous.md).

When the outcome Y of a run is a number (a final reward or cost) a predictor reports at every
step t a predictive distribution F_t of Y. It is scored with the continuous ranked probability
score (Matheson & Winkler 1976; Gneiting & Raftery 2007)

    CRPS(F, y) = ∫ (F(x) − 1{x ≥ y})² dx = E|X − y| − ½ E|X − X'|,    X, X' ~ F independent,

a loss in the outcome's units, strictly proper for distributions with a finite mean. The
trajectory score of run i is the reward

    TPS_i = −Σ_t w_t CRPS(F_t, Y_i)          (higher is better, 0 is perfect),

strictly proper for the whole trace when every w_t > 0 is fixed by t (docs/theory.md, schedules).
How each form is scored (through ``scoringrules``):

``gaussian``  the closed form of N(μ, σ²) (``sr.crps_normal``), exact.
``quantile``  ``sr.crps_quantile``: (2/m) Σ_j ρ_{τ_j}(y − q_j) with the pinball loss
              ρ_τ(u) = u (τ − 1{u < 0}), the quantile-score approximation of
              CRPS(F, y) = 2 ∫_0^1 ρ_τ(y − F⁻¹(τ)) dτ by an equal-weight sum over the m given
              levels. It is proper for the quantiles it names, not the CRPS of a distribution:
              compare it with other forms on the same runs only, as an approximation.
``ensemble``  the fair estimator (Ferro 2014), (1/m) Σ_i |x_i − y| − Σ_{i≠j} |x_i − x_j| /
              (2m(m − 1)), unbiased for the CRPS of the distribution the m members are drawn
              from (the plain "nrg" estimator, the CRPS of the empirical distribution, adds
              E|X − X'|/(2m) in expectation and so penalises small ensembles). It is computed
              as ``sr.crps_ensemble(..., estimator="pwm")``, the probability-weighted-moment
              form, algebraically identical to ``"fair"`` in O(m log m) time and O(m) memory
              (``"fair"`` itself builds an m × m matrix per row). It is ≥ 0 (triangle inequality).

Censored runs have no outcome: they are left out (complete case), counted and said.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tpsviz.outcomes.continuous_pit import pit_histogram, pit_reading, pit_values
from tpsviz.io.kinds.continuous_forms import FORMS, MAX_MEMBERS
from tpsviz.io.kinds import is_continuous
from tpsviz.io.kinds.continuous import ContinuousLog, continuous_from_frame, ensemble_batches, read_continuous
from tpsviz.core.inference import DEFAULT_SEED, column_mean_intervals
from tpsviz.core.schedules import Schedule
from tpsviz.core.schema import show_id
from tpsviz.core.tps import check_weights

__all__ = ["ContinuousLog", "ContinuousResult", "is_continuous", "read_continuous", "continuous_from_frame",
           "crps_rows", "tps_crps", "schedule_reason", "pit_values", "pit_histogram", "pit_reading", "FORMS", "MAX_MEMBERS",
           "ESTIMATORS"]

#: how each form's CRPS is computed, in words (for captions and the CLI's JSON)
ESTIMATORS = {
    "gaussian": "closed form of the normal distribution (scoringrules.crps_normal)",
    "quantile": "2 x mean pinball loss over the given levels (scoringrules.crps_quantile), "
                "an approximation of the CRPS",
    "ensemble": "fair estimator, unbiased for the members' distribution (scoringrules.crps_ensemble, "
                "estimator='pwm', identical to 'fair')",
}


def crps_rows(log: ContinuousLog, name: str) -> np.ndarray:
    """CRPS(F_t, Y) of every step row for predictor ``name`` (a loss: lower is better, 0 is perfect).

    Parameters
    ----------
    log : ContinuousLog
    name : str
        A predictor of ``log``.

    Returns
    -------
    ndarray
        One value per row of ``log.steps``, in the outcome's units; NaN for rows without a
        forecast and for every row of a censored run.
    """
    import scoringrules as sr  # (only for continuous outcomes)

    form = log.form(name)
    y = log.row_outcome()
    ok = log.present(name) & ~np.isnan(y)
    out = np.full(y.shape, np.nan)
    if not ok.any():
        return out
    if form == "gaussian":
        mu, sigma = log.gaussian(name)
        with np.errstate(over="ignore", under="ignore"):  # φ(ω) of a huge ω is 0, as it should be
            out[ok] = sr.crps_normal(y[ok], mu[ok], sigma[ok], backend="numpy")
    elif form == "quantile":
        levels, q = log.quantiles(name)
        out[ok] = sr.crps_quantile(y[ok], q[ok], levels, backend="numpy")
    else:
        for part, x in ensemble_batches(log.samples(name), np.flatnonzero(ok)):
            out[part] = sr.crps_ensemble(y[part], x, estimator="pwm", backend="numpy")
    return out


@dataclass
class ContinuousResult:
    """TPS-CRPS of the predictors of a :class:`ContinuousLog`.

    Attributes
    ----------
    summary : DataFrame
        One row per predictor (index): ``tps_mean`` (mean over runs of −Σ_t w_t CRPS_t, in the
        outcome's units; higher is better, 0 is perfect), ``tps_se``, ``tps_ci_low``,
        ``tps_ci_high`` (percentile bootstrap over runs), ``crps_step_mean`` (Σ w CRPS / Σ w over
        the scored rows: the mean CRPS per weighted step, positive, lower is better), ``form``,
        ``n_runs`` (runs scored), ``n_excluded_censored``, ``n_steps`` (rows scored),
        ``n_missing`` (rows of complete runs without a forecast), ``n_no_forecast`` (complete
        runs without a forecast at any step of positive weight, left out).
    per_run : DataFrame
        Long: ``trajectory_id``, ``traj``, ``predictor``, ``tps``, ``crps_mean`` (the run's
        weighted mean CRPS), ``n_scored``, ``weight_sum``.
    settings : dict
        Schedule (spec, formula, verdict), bootstrap, level, seed, censoring, units, estimators.
    notes : list of str
        What was left out and why; when forms differ, what is comparable.
    step_crps : dict
        Predictor → CRPS of every step row (:func:`crps_rows`).
    weights : ndarray
        w_t of every step row.
    """

    summary: pd.DataFrame
    per_run: pd.DataFrame
    settings: dict
    notes: list[str] = field(default_factory=list)
    step_crps: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    weights: np.ndarray | None = field(default=None, repr=False)


def schedule_reason(schedule: Schedule) -> str:
    """The schedule's propriety verdict explained for a predictive distribution of a number."""
    status = schedule.verdict.status
    if status == "strictly proper":
        return ("Every weight is positive and fixed by the step index alone, so reporting the true predictive "
                "distribution of the outcome at every step maximises the expected score.")
    if status == "not proper":
        return ("The weight 1/T depends on the run's realised length, which is not known at step t; when the "
                "length correlates with the outcome, a distribution tilted by the length scores better than the "
                "true predictive distribution.")
    return schedule.verdict.reason


def _weights(log: ContinuousLog, schedule: Schedule) -> np.ndarray:
    if schedule.name == "column":
        raise ValueError("schedule 'column' (weights from a 'weight' column) is not available for continuous "
                         "logs; choose uniform, linear, front:G, back:G:H, endpoint or per-length")
    codes = log.steps["traj"].to_numpy()
    length = log.trajectories["length"].to_numpy()[codes]
    w = np.asarray(schedule.weights(log.steps["t"].to_numpy(), length, None), dtype=float)
    check_weights(schedule, w)
    return w


def tps_crps(log: ContinuousLog, schedule: Schedule = Schedule(), n_boot: int = 2000, level: float = 0.95,
             seed: int = DEFAULT_SEED, predictors: list[str] | None = None) -> ContinuousResult:
    """Score every predictor with TPS_i = −Σ_t w_t CRPS(F_t, Y_i), complete runs only.

    Parameters
    ----------
    log : ContinuousLog
    schedule : Schedule, optional
        Weights w_t = ``schedule.weights(t, T, None)`` (default uniform), checked by
        :func:`tpsviz.core.tps.check_weights`. ``column`` is not available.
    n_boot : int
        Bootstrap replicates over runs (0: no CI).
    level : float
        Confidence level of the CIs.
    seed : int
        Bootstrap seed (the same replicates for every predictor).
    predictors : list of str, optional
        Subset of ``log.predictors`` (default all).

    Returns
    -------
    ContinuousResult

    Notes
    -----
    A run's rows without a forecast are left out of its sum (counted as ``n_missing``); a
    complete run without a forecast at any step of positive weight (for ``endpoint``: at its last
    step) is left out of that predictor's mean, not scored a perfect 0. Censored runs have
    no outcome and are left out (complete case): when censoring depends on how a run goes, the
    runs scored are not the population.
    """
    schedule = schedule or Schedule()
    if int(n_boot) != n_boot or n_boot < 0:
        raise ValueError(f"n_boot must be an integer >= 0, got {n_boot!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    names = list(log.predictors) if predictors is None else list(predictors)
    for n in names:
        log.form(n)
    w = _weights(log, schedule)
    traj = log.trajectories
    complete_t = ~traj["censored"].to_numpy(dtype=bool)
    complete_rows = complete_t[log.steps["traj"].to_numpy()]
    runs = np.flatnonzero(complete_t)
    n_cens = int(len(traj) - runs.size)
    rows, frames, step_crps = [], [], {}
    values = np.zeros((runs.size, len(names)))
    valid = np.zeros((runs.size, len(names)), dtype=bool)
    for j, name in enumerate(names):
        crps = crps_rows(log, name)
        step_crps[name] = crps
        run = _run_scores(log, crps, w, complete_t)
        values[:, j], valid[:, j] = run["tps"][runs], run["ok"][runs]
        sel = np.flatnonzero(run["ok"])
        frames.append(_per_run_frame(traj, name, sel, run))
        rows.append(_summary_row(log, name, run["tps"][sel], run["wsum"][sel]) | {
            "n_excluded_censored": n_cens,
            "n_steps": int((~np.isnan(crps)).sum()),
            "n_missing": int((complete_rows & ~log.present(name)).sum()),
            "n_no_forecast": int(runs.size - sel.size),
        })
    summary = pd.DataFrame(rows, columns=_SUMMARY_COLUMNS).set_index("predictor")
    lo, hi = column_mean_intervals(values, valid, int(n_boot), level, seed, interval="percentile")
    summary["tps_ci_low"], summary["tps_ci_high"] = lo, hi
    per_run = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["trajectory_id", "traj", "predictor", "tps", "crps_mean", "n_scored", "weight_sum"])
    notes = list(log.notes) + _notes(log, summary, n_cens, schedule)
    settings = _settings(log, schedule, names, n_boot, level, seed)
    return ContinuousResult(summary, per_run, settings, notes, step_crps, w)


_SUMMARY_COLUMNS = ["predictor", "tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "crps_step_mean", "form",
                    "n_runs", "n_excluded_censored", "n_steps", "n_missing", "n_no_forecast"]


def _settings(log: ContinuousLog, schedule: Schedule, names: list[str], n_boot, level, seed) -> dict:
    """The settings a :class:`ContinuousResult` states (schedule, bootstrap, censoring, score, estimators)."""
    v = schedule.verdict
    return {
        "schedule": schedule.spec, "formula": schedule.formula, "schedule_verdict": v.status,
        "schedule_reason": schedule_reason(schedule), "n_boot": int(n_boot), "level": level, "seed": seed,
        "censoring": "complete-case (censored runs have no outcome and are left out)",
        "score": "TPS-CRPS = -sum_t w_t CRPS(F_t, Y) per run",
        "unit": "the outcome's units", "direction": "higher is better, 0 is perfect",
        "estimators": {log.predictors[n]: ESTIMATORS[log.predictors[n]] for n in names},
    }


def _run_scores(log: ContinuousLog, crps: np.ndarray, w: np.ndarray, complete_t: np.ndarray) -> dict:
    """Per run of the log, from one predictor's step CRPS: ``tps`` = −Σ_t w_t CRPS, ``n_scored`` (rows with
    a forecast), ``wsum`` (their weights) and ``ok`` (complete and some forecast carries weight)."""
    codes = log.steps["traj"].to_numpy()
    n_traj = len(log.trajectories)
    scored = ~np.isnan(crps)
    contrib = np.where(scored & (w != 0), w * np.where(scored, crps, 0.0), 0.0)
    tps = 0.0 - np.bincount(codes, weights=contrib, minlength=n_traj)  # 0.0 - x: no -0.0
    n_scored = np.bincount(codes, weights=scored.astype(float), minlength=n_traj).astype(np.int64)
    wsum = np.bincount(codes, weights=np.where(scored, w, 0.0), minlength=n_traj)
    # a run is scored when some forecast carries weight (endpoint: the last step has one)
    return {"tps": tps, "n_scored": n_scored, "wsum": wsum, "ok": complete_t & (wsum > 0)}


def _per_run_frame(traj: pd.DataFrame, name: str, sel: np.ndarray, run: dict) -> pd.DataFrame:
    """The per-run rows of one predictor's scored runs ``sel`` (:func:`_run_scores`)."""
    tps, wsum = run["tps"][sel], run["wsum"][sel]
    with np.errstate(invalid="ignore", divide="ignore"):
        run_mean = np.where(wsum > 0, 0.0 - tps / wsum, np.nan)
    return pd.DataFrame({"trajectory_id": traj["trajectory_id"].to_numpy()[sel], "traj": sel, "predictor": name,
                         "tps": tps, "crps_mean": run_mean, "n_scored": run["n_scored"][sel], "weight_sum": wsum})


def _summary_row(log: ContinuousLog, name: str, tps: np.ndarray, wsum: np.ndarray) -> dict:
    """Mean TPS with its SE over the scored runs and Σ CRPS / Σ w_t (intervals filled in later)."""
    k = tps.size
    wtot = float(wsum.sum())
    return {"predictor": name, "tps_mean": float(tps.mean()) if k else np.nan,
            "tps_se": float(tps.std(ddof=1) / np.sqrt(k)) if k >= 2 else np.nan,
            "tps_ci_low": np.nan, "tps_ci_high": np.nan,
            "crps_step_mean": float(0.0 - tps.sum() / wtot) if wtot > 0 else np.nan,
            "form": log.predictors[name], "n_runs": int(k)}


def _notes(log: ContinuousLog, summary: pd.DataFrame, n_cens: int, schedule: Schedule) -> list[str]:
    notes = []
    if n_cens:
        notes.append(f"{n_cens:,} of {log.n_runs:,} runs are censored (no outcome) and were left out "
                     "(complete case); if censoring depends on how runs go, the runs scored are not the whole "
                     "population.")
    if not schedule.verdict.is_strictly_proper:
        notes.append(f"schedule {schedule.spec}: {schedule.verdict.status}. {schedule_reason(schedule)}")
    forms = summary["form"].unique()
    if len(forms) > 1:
        groups = "; ".join(f"{f}: {', '.join(show_id(n) for n in summary.index[summary['form'] == f])}"
                           for f in FORMS if f in forms)
        notes.append(f"the predictors come in different forms ({groups}); their scores are comparable only on "
                     "the same runs and steps, and a quantile forecast's score is the pinball-loss "
                     "approximation of the CRPS over its levels.")
    if len(summary) > 1 and (summary["n_steps"].nunique() > 1 or summary["n_runs"].nunique() > 1):
        notes.append("the predictors are not scored on the same runs and steps (see n_runs, n_steps): "
                     "compare their scores with care.")
    no = summary.index[summary["n_no_forecast"] > 0]
    for n in no:
        notes.append(f"predictor {show_id(n)}: {int(summary.loc[n, 'n_no_forecast']):,} complete run(s) have "
                     "no forecast at a step of positive weight and were left out of its mean.")
    return notes
