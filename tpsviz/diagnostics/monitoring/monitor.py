"""Monitoring a deployed agent over time: TPS and skill in sliding windows, and a CUSUM alarm.

A log is put in *monitoring order*: by a timestamp (or any sortable) run-level column, or else by
the order in which runs first appear in the file. Then:

* **Windows.** Consecutive windows of ``window`` runs, moved by ``stride`` runs. In each, the mean
  per-run TPS with a normal interval (mean ± z·SE over the window's runs, which are independent),
  the skill against the constant success rate *of that window* (so a change of the success rate
  alone does not read as a change of skill) with a delta-method interval, the success rate and the
  mean forecast. docs/theory.md §11.
* **Alarm.** A one-sided lower CUSUM on D_i = TPS_i − TPS_ref,i, one predictor's per-run TPS minus
  that of the in-control success rate r₀ on the same rows (:mod:`tpsviz.diagnostics.monitoring.cusum` sets its
  threshold and measures its false-alarm rate). docs/theory.md §11.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.scores import beta_score, clip_forecasts
from tpsviz.core.tps import ScoreSettings, compute_tps
from tpsviz.diagnostics.monitoring.cusum import MIN_ALARM_RUNS, Alarm, cusum_alarm
from tpsviz.diagnostics.monitoring.order import log_time_column, order_columns, order_sentence, run_order

__all__ = ["MonitorResult", "monitor", "run_order", "order_columns", "log_time_column", "order_sentence",
           "default_baseline", "runs_after_needed", "window_table"]

@dataclass
class MonitorResult:
    """TPS and skill over time, and the alarm.

    Attributes
    ----------
    order : str
        The monitoring order in words ("order of the time column 'ts'", "order of first appearance in the
        file").
    runs : DataFrame
        One row per run in monitoring order: ``position``, ``trajectory_id``, ``key`` (the order
        value), ``censored``, ``label`` (Y, or the q_Z the censoring mode uses), then ``tps_<name>``
        per predictor (NaN: not scored).
    windows : DataFrame
        :func:`window_table` of every predictor (long: a ``predictor`` column).
    alarm : Alarm or None
    n_excluded : int
        Runs left out because their order value is missing or unreadable.
    settings : ScoreSettings
    window, stride : int
    notes : list of str
    """

    order: str
    runs: pd.DataFrame
    windows: pd.DataFrame
    alarm: Alarm | None
    n_excluded: int
    settings: ScoreSettings
    window: int
    stride: int
    notes: list[str] = field(default_factory=list)


def _labels(per: pd.DataFrame, data: TrajectoryData) -> np.ndarray:
    """Per run: Y for a complete run, the q_Z the censoring mode scored a censored run with."""
    t = data.trajectories
    a = t["outcome"].to_numpy(dtype=float).copy()
    if len(per):
        q = per.groupby("traj")["q_z_used"].first()
        cens = t["censored"].to_numpy()
        codes = q.index.to_numpy()
        a[codes[cens[codes]]] = q.to_numpy()[cens[codes]]
    return a


def window_table(tps: np.ndarray, ref_weight: np.ndarray, label: np.ndarray, mean_forecast: np.ndarray,
                 window: int, stride: int, settings: ScoreSettings) -> pd.DataFrame:
    """Sliding-window TPS, skill, success rate and mean forecast of one predictor.

    Parameters
    ----------
    tps : ndarray
        Per-run TPS_i in monitoring order (NaN: the run is not scored).
    ref_weight : ndarray
        W_i = Σ_t w_t over the run's scored rows (the reference is scored on the same rows).
    label : ndarray
        a_i: Y_i for a complete run, the q_Z used for a censored one.
    mean_forecast : ndarray
        The mean of the run's forecasts.
    window, stride : int
        Runs per window (counted over all runs in order, scored or not) and the move between windows.
    settings : ScoreSettings
        α, β, ε and the confidence level.

    Returns
    -------
    DataFrame
        One row per window: ``window`` (0-based), ``first`` / ``last`` (positions), ``n_runs``
        (scored), ``tps_mean``, ``tps_se``, ``tps_ci_low``, ``tps_ci_high``, ``rate`` (mean a_i: the
        window's constant reference r), ``skill`` = 1 − mean TPS / mean TPS_ref with TPS_ref,i =
        W_i [a_i S(r, 1) + (1 − a_i) S(r, 0)], ``skill_se`` (delta method, r taken as known),
        ``skill_ci_low``, ``skill_ci_high``, ``mean_forecast``.
    """
    from scipy.stats import norm  # (scipy: imported when needed, never at `import tpsviz`)

    n = tps.size
    z = float(norm.ppf(0.5 + settings.level / 2))
    starts = _window_starts(n, window, stride)
    ends = np.minimum(starts + window, n)
    # every window's sums from prefix sums of the per-run terms (one pass, however many windows):
    # TPS_ref,i = s1(r)·u_i + s0(r)·v_i with u_i = W_i a_i, v_i = W_i (1 − a_i)
    ok = np.isfinite(tps)
    x = np.where(ok, tps, 0.0)
    u = np.where(ok, ref_weight * label, 0.0)
    v = np.where(ok, ref_weight * (1.0 - label), 0.0)
    f_ok = ok & np.isfinite(mean_forecast)
    terms = np.column_stack([ok, x, x * x, np.where(ok, label, 0.0), u, v, x * u, x * v, u * u, u * v, v * v,
                             f_ok, np.where(f_ok, mean_forecast, 0.0)]).astype(float)
    prefix = np.vstack([np.zeros(terms.shape[1]), np.cumsum(terms, axis=0)])
    S = prefix[ends] - prefix[starts]
    m, sx, sxx, sa, su, sv, sxu, sxv, suu, suv, svv, nf, sf = S.T
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(m > 0, sx / m, np.nan)
        se = np.where(m > 1, np.sqrt(np.maximum(sxx - m * mean * mean, 0.0) / (m - 1) / m), np.nan)
        rate = np.where(m > 0, sa / m, np.nan)
        s1, s0 = _reference_scores(rate, settings)
        ref_mean = (s1 * su + s0 * sv) / m
        ratio = mean / ref_mean
        # Σ (x − R·ref)² (the residuals have mean 0: R = mean / mean ref)
        ss = sxx - 2 * ratio * (s1 * sxu + s0 * sxv) + ratio ** 2 * (s1 * s1 * suu + 2 * s1 * s0 * suv + s0 * s0 * svv)
        defined = (m > 1) & (rate > 0) & (rate < 1) & (ref_mean != 0)
        skill = np.where(defined, 1.0 - ratio, np.nan)
        sk_se = np.where(defined, np.sqrt(np.maximum(ss, 0.0) / (m - 1)) / (np.abs(ref_mean) * np.sqrt(m)), np.nan)
        mean_f = np.where(nf > 0, sf / nf, np.nan)
    return pd.DataFrame({"window": np.arange(starts.size), "first": starts, "last": ends - 1,
                         "n_runs": m.astype(np.int64), "tps_mean": mean, "tps_se": se, "tps_ci_low": mean - z * se,
                         "tps_ci_high": mean + z * se, "rate": rate, "skill": skill, "skill_se": sk_se,
                         "skill_ci_low": skill - z * sk_se, "skill_ci_high": skill + z * sk_se, "mean_forecast": mean_f})


def _window_starts(n: int, window: int, stride: int) -> np.ndarray:
    """First positions of the windows: every ``stride`` runs, the last window ending at the last run."""
    if n <= window:
        return np.array([0])
    starts = np.arange(0, n - window + 1, stride)
    if starts[-1] != n - window:
        starts = np.append(starts, n - window)
    return starts

def monitor(data: TrajectoryData, settings: ScoreSettings | None = None, by: str | None = None,
            window: int = 100, stride: int | None = None, predictors: list[str] | None = None,
            alarm_on: str | None = None, baseline: int | None = None, shift: float = 0.5,
            target_arl: float = 1000.0, q_z=None, result=None) -> MonitorResult:
    """TPS and skill over time in sliding windows, and a CUSUM alarm on degradation.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings, optional
        α, β, schedule, censoring, ε and level of the per-run TPS (the bootstrap is not used).
    by : str, optional
        Run-level column giving the order (a timestamp); default the order in the file.
    window : int
        Runs per window (≥ 2).
    stride : int, optional
        Runs between window starts (default window // 4, at least 1).
    predictors : list of str, optional
        Default: all.
    alarm_on : str, optional
        Predictor the alarm watches (default the first of ``predictors``); "" for no alarm.
    baseline : int, optional
        In-control runs at the start (default :func:`default_baseline`).
    shift, target_arl : float
        As in :func:`cusum_alarm`.
    q_z : array_like or Series, optional
        q_Z estimates for exact censoring (as in :func:`~tpsviz.core.tps.compute_tps`).
    result : TPSResult, optional
        TPS already computed on ``data`` under the same settings for these predictors (its
        per-run TPS reused, e.g. an Evaluation's ``points``).

    Returns
    -------
    MonitorResult
    """
    settings = settings or ScoreSettings()
    window, stride, names = _checked_arguments(data, window, stride, predictors, shift, target_arl)
    codes, key, words, n_excluded = run_order(data, by)
    if result is None:
        result = compute_tps(data, replace(settings, n_boot=0), names, q_z=q_z)
    per = result.per_trajectory
    per = per[per["predictor"].isin(names)]
    label = _labels(per, data)
    runs = pd.DataFrame({"position": np.arange(codes.size),
                         "trajectory_id": data.trajectories["trajectory_id"].to_numpy()[codes],
                         "key": key.to_numpy(), "censored": data.trajectories["censored"].to_numpy()[codes],
                         "label": label[codes]})
    tables, weights = [], {}
    for name in names:
        tps, wsum, mean_forecast = _runs_in_order(data, per, name, codes)
        runs[f"tps_{name}"] = tps
        weights[name] = wsum
        tab = window_table(tps, wsum, label[codes], mean_forecast, window, stride, settings)
        tab.insert(0, "predictor", name)
        tab["key_first"] = runs["key"].to_numpy()[tab["first"].to_numpy()]
        tab["key_last"] = runs["key"].to_numpy()[tab["last"].to_numpy()]
        tables.append(tab)
    notes = []
    if n_excluded:
        notes.append(f"{n_excluded:,} run(s) have no usable value in column {by!r} and are left out.")
    if codes.size < window:
        notes.append(f"only {codes.size:,} runs: one window of fewer than {window} runs.")
    alarm = None
    target = names[0] if alarm_on is None else alarm_on
    if target:
        if target not in names:
            raise ValueError(f"the alarm watches a predictor that is not monitored: {target!r}")
        alarm = _alarm(runs, weights[target], target, baseline, window, shift, target_arl, settings)
    return MonitorResult(words, runs, pd.concat(tables, ignore_index=True), alarm, n_excluded, settings,
                         window, stride, notes)


def _checked_arguments(data: TrajectoryData, window, stride, predictors, shift, target_arl):
    """(window, stride, predictors) of :func:`monitor`, checked; a ValueError says what is wrong."""
    window = int(window)
    if window < 2:
        raise ValueError(f"the window must hold at least 2 runs, got {window}")
    stride = max(1, window // 4) if stride is None else int(stride)
    if stride < 1:
        raise ValueError(f"the stride must be at least 1 run, got {stride}")
    if not (shift > 0 and np.isfinite(shift)):
        raise ValueError(f"the shift to detect must be a positive number of SDs, got {shift!r}")
    if not (target_arl >= 10 and np.isfinite(target_arl)):
        raise ValueError(f"the in-control run length to a false alarm must be at least 10 runs, got {target_arl!r}")
    names = list(predictors) if predictors else list(data.predictors)
    unknown = [n for n in names if n not in data.predictors]
    if unknown:
        raise ValueError(f"no predictor {', '.join(map(repr, unknown))} in this log")
    return window, stride, names


def _runs_in_order(data: TrajectoryData, per: pd.DataFrame, name: str, codes: np.ndarray):
    """One predictor's TPS_i, weight sum W_i and mean forecast of every run, in monitoring order
    (``codes``; NaN where the run is not scored)."""
    p = per[per["predictor"] == name]
    tps = np.full(data.n_trajectories, np.nan)
    wsum = np.full(data.n_trajectories, np.nan)
    tps[p["traj"].to_numpy()] = p["tps"].to_numpy()
    wsum[p["traj"].to_numpy()] = p["weight_sum"].to_numpy()
    f = data.forecasts(name)
    mf = pd.Series(f).groupby(data.steps["traj"].to_numpy()).mean().reindex(range(data.n_trajectories))
    return tps[codes], wsum[codes], mf.to_numpy()[codes]


def default_baseline(n_scored: int, window: int) -> int:
    """In-control runs by default: a quarter of the scored runs, at least one window and at least
    :data:`MIN_ALARM_RUNS`, at most all."""
    return min(n_scored, max(window, n_scored // 4, MIN_ALARM_RUNS))


def runs_after_needed(window: int) -> int:
    """Scored runs needed after the in-control part before the alarm can tell anything: one window,
    and at least :data:`MIN_ALARM_RUNS` (as many as the in-control part needs at least).

    With fewer, :func:`monitor` sets no alarm up and says why (``Alarm.reason``): a CUSUM over a
    handful of runs would read "no alarm" whatever happened.
    """
    return max(int(window), MIN_ALARM_RUNS)


def _reference_scores(rate, settings: ScoreSettings):
    """S(r, 1) and S(r, 0) of the constant forecast r (a number or an array; NaN stays NaN), clipped to
    [ε, 1 − ε] as the predictors are."""
    r = np.atleast_1d(np.asarray(rate, dtype=float))
    s1, s0 = np.full(r.shape, np.nan), np.full(r.shape, np.nan)
    ok = np.isfinite(r)
    if ok.any():
        rc, _ = clip_forecasts(r[ok], settings.eps)
        s1[ok] = beta_score(rc, 1, settings.alpha, settings.beta)
        s0[ok] = beta_score(rc, 0, settings.alpha, settings.beta)
    if np.ndim(rate) == 0:
        return float(s1[0]), float(s0[0])
    return s1, s0


def _alarm(runs: pd.DataFrame, wsum: np.ndarray, name: str, baseline: int | None, window: int, shift: float,
           target_arl: float, settings: ScoreSettings) -> Alarm:
    """The CUSUM alarm of one predictor over its scored runs in monitoring order.

    The monitored value is D_i = TPS_i − TPS_ref,i: the run's TPS minus that of the constant in-control
    success rate r₀ on the same rows, W_i [a_i S(r₀, 1) + (1 − a_i) S(r₀, 0)]. Both sum over the same
    steps, so most of the spread that comes from run length and task difficulty cancels; a drop of the
    success rate alone raises D (the constant r₀ gets worse), so it does not read as degradation.
    """
    tps = runs[f"tps_{name}"].to_numpy()
    ok = np.isfinite(tps)
    scored = runs[ok].reset_index(drop=True)
    n = len(scored)
    if baseline is None:
        baseline = default_baseline(n, window)
    baseline = int(baseline)
    if baseline < 1 or baseline > n:
        return Alarm(name, reason=f"the in-control part must be between 1 and {n:,} scored runs, got {baseline:,}")
    need = runs_after_needed(window)
    if baseline >= MIN_ALARM_RUNS and n - baseline < need:
        return Alarm(name, n_baseline=baseline, shift=shift, target_arl=target_arl,
                     reason=f"{n - baseline:,} scored run(s) follow the {baseline:,} in-control runs; at least "
                            f"{need:,} (one window, and at least {MIN_ALARM_RUNS}) are needed to tell a change")
    label, w = scored["label"].to_numpy(), wsum[ok]
    r0 = float(label[:baseline].mean())
    if not 0.0 < r0 < 1.0:
        return Alarm(name, n_baseline=baseline, shift=shift, target_arl=target_arl,
                     reason=f"every in-control run counts as a {'success' if r0 == 1 else 'failure'}")
    s1, s0 = _reference_scores(r0, settings)
    d = tps[ok] - w * (label * s1 + (1.0 - label) * s0)
    out = cusum_alarm(d, baseline, shift, target_arl, settings.seed)
    if "reason" in out:
        return Alarm(name, n_baseline=baseline, shift=shift, target_arl=target_arl, reason=out["reason"])
    pos, starts = out["alarms"], out["starts"]
    table = pd.DataFrame({"position": scored["position"].to_numpy()[pos],
                          "trajectory_id": scored["trajectory_id"].to_numpy()[pos],
                          "key": scored["key"].to_numpy()[pos],
                          "start_position": scored["position"].to_numpy()[starts],
                          "start_key": scored["key"].to_numpy()[starts],
                          "in_control": pos < baseline})
    stat = np.full(len(runs), np.nan)
    stat[ok] = out["statistic"]
    return Alarm(name, baseline, out["mu0"], out["sd0"], shift, out["h"], target_arl, out["false_alarm_rate"],
                 out["false_alarm_se"], int((pos < baseline).sum()), stat, table, rate0=r0,
                 chance_alarms=out["chance_alarms"], count_p=out["count_p"])
