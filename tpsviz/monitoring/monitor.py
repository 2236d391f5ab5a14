"""Monitoring a deployed agent over time: TPS and skill in sliding windows, and a CUSUM alarm.

A log is put in *monitoring order*: by a timestamp (or any sortable) run-level column, or else by
the order in which runs first appear in the file. Then:

* **Windows.** Consecutive windows of ``window`` runs, moved by ``stride`` runs. In each, the mean
  per-run TPS with a normal interval (mean ± z·SE over the window's runs, which are independent),
  the skill against the constant success rate *of that window* (so a change of the success rate
  alone does not read as a change of skill) with a delta-method interval, the success rate and the
  mean forecast. docs/theory.md §11.
* **Alarm.** A one-sided lower CUSUM on D_i = TPS_i − TPS_ref,i, one predictor's per-run TPS minus
  that of the in-control success rate r₀ on the same rows, standardised with μ₀, σ₀ of the in-control
  part (the first runs) and capped at ±3 (``Z_CAP``): S_i = max(0, S_{i−1} − z_i − k), k = shift/2
  (shift in units of σ₀). The
  threshold h gives one false alarm per ``target_arl`` runs on streams resampled from the in-control
  runs that also re-estimate μ₀ and σ₀; the false-alarm rate is then measured on fresh such streams
  with the same restart-after-alarm rule as the real stream, and reported with the alarms the
  in-control part itself raised. docs/theory.md §11.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.scores import beta_score, clip_forecasts
from tpsviz.core.tps import ScoreSettings, compute_tps

__all__ = ["MonitorResult", "Alarm", "monitor", "run_order", "order_columns", "default_baseline", "window_table", "cusum_alarm",
           "cusum_path", "MIN_ALARM_RUNS"]

MIN_ALARM_RUNS = 40       # fewer in-control runs than this: μ₀ and σ₀ are too rough for an alarm
#: each run's standardised value z_i is capped at ±Z_CAP before the CUSUM (winsorised CUSUM). The
#: streams that set h and measure the false-alarm rate are resampled from the in-control runs, so
#: they never hold a run worse than the worst of those; real runs can be, and with heavy-tailed
#: per-run scores one such run raised an alarm by itself. Measured on 12 shuffles of the tau2-like
#: demo (no change in them), 4 predictors: 67 alarms where the measured rate predicted 16.8
#: without the cap, 22 (against 16.7) with it (docs/theory.md §11; tests/test_monitor.py).
Z_CAP = 3.0
N_SIM = 400               # resampled in-control streams for the threshold (and as many to check it)


@dataclass
class Alarm:
    """A CUSUM alarm on degradation of one predictor's per-run TPS.

    Attributes
    ----------
    predictor : str
    n_baseline : int
        In-control runs (the first scored runs in monitoring order).
    mu0, sd0 : float
        Mean and standard deviation of the monitored D_i = TPS_i − TPS_ref,i over the in-control runs.
    shift : float
        The drop the alarm is tuned to, in units of sd0 (k = shift / 2).
    h : float
        Threshold on the CUSUM statistic.
    target_arl : float
        Asked-for average run length to a false alarm, in runs.
    false_alarm_rate : float
        False alarms per run, measured on fresh streams resampled from the in-control runs.
    false_alarm_se : float
        Its Monte-Carlo standard error.
    in_control_alarms : int
        Alarms raised inside the in-control part itself.
    statistic : ndarray
        S_i for every run in monitoring order (NaN: not scored).
    alarms : DataFrame
        One row per alarm: ``position`` (0-based among scored runs), ``trajectory_id``, ``key``,
        ``start_position`` / ``start_key`` (first run of the excursion that led to it: an estimate
        of where the change began), ``in_control`` (bool).
    reason : str
        Why no alarm could be set up ("" when it was).
    rate0 : float
        The in-control success rate r₀ of the reference.
    chance_alarms : float
        Alarms expected after the in-control part when nothing changes: the mean count over
        simulated in-control streams as long as that part.
    count_p : float
        P(as many alarms or more after the in-control part | nothing changed), from those streams:
        (1 + #{streams with ≥ the observed count}) / (1 + streams). The streams carry the error of
        estimating μ₀ and σ₀, which makes alarm counts vary more than a Poisson count of the same
        mean (on the drift demo's truthful forecast: variance 1.25 for a mean of 0.71).
    """

    predictor: str
    n_baseline: int = 0
    mu0: float = float("nan")
    sd0: float = float("nan")
    shift: float = 0.5
    h: float = float("nan")
    target_arl: float = 1000.0
    false_alarm_rate: float = float("nan")
    false_alarm_se: float = float("nan")
    in_control_alarms: int = 0
    statistic: np.ndarray = field(default_factory=lambda: np.zeros(0))
    alarms: pd.DataFrame = field(default_factory=pd.DataFrame)
    reason: str = ""
    rate0: float = float("nan")
    chance_alarms: float = float("nan")
    count_p: float = float("nan")

    def words(self) -> str:
        """One sentence: the alarm's setting and its measured false-alarm rate."""
        if self.reason:
            return f"No alarm on {self.predictor}: {self.reason}."
        return (f"CUSUM on {self.predictor}'s per-run TPS minus that of the in-control success rate "
                f"{self.rate0:.2f}, tuned to a drop of {self.shift:g} SD from the first {self.n_baseline:,} scored runs "
                f"(mean {self.mu0:.3g}, SD {self.sd0:.3g}; a run counts at most {Z_CAP:g} SD either way); "
                f"threshold h = {self.h:.2f} for "
                f"one false alarm per {self.target_arl:,.0f} in-control runs; measured on {N_SIM} resampled "
                f"in-control streams: {1000 * self.false_alarm_rate:.2f} ± {1000 * self.false_alarm_se:.2f} false "
                f"alarms per 1,000 runs; {self.in_control_alarms} alarm(s) inside the in-control part.")


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


def run_order(data: TrajectoryData, by: str | None = None) -> tuple[np.ndarray, pd.Series, str, int]:
    """The runs of ``data`` in monitoring order.

    Parameters
    ----------
    data : TrajectoryData
    by : str, optional
        A column of numbers, or of date-times in ISO 8601 or another form pandas reads: run-level
        (``data.metadata_columns``), or step-level (``data.step_metadata_columns``, e.g. a timestamp
        per step: a run then stands at its earliest readable value). Default: the order in which runs
        first appear in the file.

    Returns
    -------
    codes : ndarray of int
        Run codes (rows of ``data.trajectories``) in monitoring order; runs without a usable order
        value are left out.
    key : Series
        The order value of each of those runs (timestamps as UTC date-times; in file order the run
        number 1, 2, …).
    words : str
        The order in words.
    n_excluded : int
        Runs left out for a missing or unreadable order value.

    Raises
    ------
    ValueError
        If ``by`` is not a metadata column, or no run has a usable value.
    """
    t = data.trajectories
    rank = t["file_order"].to_numpy() if "file_order" in t else np.arange(len(t))
    if by is None:
        codes = np.argsort(rank, kind="stable")
        words = ("order of first appearance in the file" if "file_order" in t
                 else "trajectory id order (the file order is not known)")
        return codes, pd.Series(np.arange(1, len(codes) + 1), name="run"), words, 0
    step_level = by in data.step_metadata_columns
    if by not in data.metadata_columns and not step_level:
        usable = data.metadata_columns + data.step_metadata_columns
        raise ValueError(f"no metadata column {by!r} to order runs by" + (
            f"; the log has {', '.join(map(repr, usable[:12]))}" if usable else "; this log has no metadata column"))
    if step_level:  # a value per step: the run's earliest readable one
        values, kind = _order_values(data.steps[by])
        key = values.groupby(data.steps["traj"].to_numpy()).min().reindex(range(len(t)))
    else:
        key, kind = _order_values(t[by])
    usable = key.notna().to_numpy()
    if not usable.any():
        raise ValueError(f"column {by!r}: no run has a value that reads as a number or a date-time")
    idx = np.flatnonzero(usable)
    k = key.iloc[idx]
    sort_key = k.to_numpy(dtype="datetime64[ns]").astype(np.int64) if kind == "time" else k.to_numpy(dtype=float)
    codes = idx[np.lexsort((rank[idx], sort_key))]
    words = (f"order of the {'time' if kind == 'time' else 'number'} column {by!r}"
             + (" (each run at its earliest value)" if step_level else ""))
    return codes, key.iloc[codes].reset_index(drop=True).rename(by), words, int((~usable).sum())


def order_columns(data: TrajectoryData, probe: int = 200) -> list[str]:
    """Metadata columns runs can be ordered by (run-level first, then step-level): those whose first
    ``probe`` non-empty values read as numbers or date-times at least half of the time."""
    out = []
    for frame, cols in ((data.trajectories, data.metadata_columns), (data.steps, data.step_metadata_columns)):
        for c in cols:
            head = frame[c].dropna().head(probe)
            if len(head) and _order_values(head)[0].notna().mean() >= 0.5:
                out.append(c)
    return out


def _order_values(raw: pd.Series) -> tuple[pd.Series, str]:
    """Numbers if the column holds numbers, else UTC date-times (NaN/NaT where unreadable)."""
    if pd.api.types.is_datetime64_any_dtype(raw):
        return pd.to_datetime(raw, utc=True), "time"
    if pd.api.types.is_bool_dtype(raw):
        return pd.Series(np.nan, index=raw.index), "number"
    num = pd.to_numeric(raw, errors="coerce")
    if num.notna().sum() >= max(1, raw.notna().sum() // 2):
        return num.astype(float).where(np.isfinite(num.astype(float))), "number"
    text = raw.astype("string")
    with np.errstate(all="ignore"):
        when = pd.to_datetime(text, errors="coerce", utc=True, format="mixed")
    return when, "time"


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
    from scipy.stats import norm

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


def cusum_path(z: np.ndarray, k: float, h: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lower CUSUM S_i = max(0, S_{i−1} − z_i − k) of a standardised series.

    Parameters
    ----------
    z : ndarray
        Standardised values in order.
    k : float
        Reference value (half the shift to detect).
    h : float, optional
        Threshold: at S_i > h an alarm is raised and S restarts from 0. None: no restarts.

    Returns
    -------
    S : ndarray
        The statistic after each value (before any restart).
    alarms : ndarray of int
        Positions of the alarms.
    starts : ndarray of int
        For each alarm, the first position of the excursion of S above 0 that led to it (where the
        change most likely began).
    """
    s = np.empty(z.size)
    alarms, starts = [], []
    cur, begin = 0.0, 0
    for i, v in enumerate(z):
        if cur == 0.0:
            begin = i
        cur = max(0.0, cur - v - k)
        s[i] = cur
        if h is not None and cur > h:
            alarms.append(i)
            starts.append(begin)
            cur = 0.0
    return s, np.array(alarms, dtype=np.int64), np.array(starts, dtype=np.int64)


def _alarm_counts(z: np.ndarray, k: float, h: float, state: tuple | None = None) -> np.ndarray:
    """Alarms per stream (rows of ``z``) of the CUSUM with restarts: :func:`cusum_path` vectorised over streams.
    ``state`` (S, counts), updated in place, carries the streams on from an earlier chunk of runs."""
    s, count = state if state is not None else (np.zeros(z.shape[0]), np.zeros(z.shape[0]))
    for i in range(z.shape[1]):
        np.maximum(0.0, s - z[:, i] - k, out=s)
        hit = s > h
        count += hit
        s[hit] = 0.0
    return count


def _in_control_streams(base: np.ndarray, n_sim: int, length: int, rng) -> np.ndarray:
    """Standardised in-control streams that carry the error of estimating μ₀ and σ₀.

    Each stream draws its own in-control sample (a bootstrap resample of ``base``, of the same size)
    and standardises fresh draws from ``base`` with that sample's mean and SD, as the real stream is
    standardised with estimates (so h and the false-alarm rate hold on average over what the first
    runs could have been, not only for the μ₀ and σ₀ seen). Values are capped at ±:data:`Z_CAP`, as
    the real stream's are.
    """
    mu, sd = _stream_scales(base, n_sim, rng)
    return _standardised_draws(base, mu, sd, length, rng)


def _stream_scales(base: np.ndarray, n_sim: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Each stream's μ₀ and σ₀, estimated on its own bootstrap resample of ``base`` (column vectors)."""
    boot = base[rng.integers(0, base.size, size=(n_sim, base.size))]
    mu, sd = boot.mean(axis=1, keepdims=True), boot.std(axis=1, ddof=1, keepdims=True)
    return mu, np.where(sd > 0, sd, base.std(ddof=1))


def _standardised_draws(base: np.ndarray, mu: np.ndarray, sd: np.ndarray, length: int, rng) -> np.ndarray:
    """``length`` fresh draws from ``base`` per stream, standardised with the stream's μ₀, σ₀ and capped."""
    return np.clip((base[rng.integers(0, base.size, size=(mu.shape[0], length))] - mu) / sd, -Z_CAP, Z_CAP)


def _null_alarm_counts(base: np.ndarray, n_sim: int, n_runs: int, k: float, h: float, rng,
                       chunk: int = 4096) -> np.ndarray:
    """Alarms per simulated in-control stream of ``n_runs`` runs (as :func:`_in_control_streams`
    followed by :func:`_alarm_counts`, drawn ``chunk`` runs at a time so memory stays bounded)."""
    mu, sd = _stream_scales(base, n_sim, rng)
    state = (np.zeros(n_sim), np.zeros(n_sim))
    for start in range(0, n_runs, chunk):
        _alarm_counts(_standardised_draws(base, mu, sd, min(chunk, n_runs - start), rng), k, h, state)
    return state[1]


def cusum_alarm(values: np.ndarray, n_baseline: int, shift: float = 0.5, target_arl: float = 1000.0,
                seed: int = 0) -> dict:
    """Set up the lower CUSUM on the in-control part and run it over the whole series.

    Parameters
    ----------
    values : ndarray
        The monitored per-run values in monitoring order (finite). Standardised with μ₀ and σ₀,
        each is capped at ±:data:`Z_CAP` (a winsorised CUSUM: one extreme run cannot raise an
        alarm by itself).
    n_baseline : int
        The first ``n_baseline`` values are in control: μ₀, σ₀ and the resampled streams come from them.
    shift : float
        Drop to detect, in units of σ₀ (k = shift / 2).
    target_arl : float
        In-control runs per false alarm; h is chosen by bisection so that the CUSUM with restarts raises
        one false alarm per ``target_arl`` runs on resampled in-control streams that also re-estimate μ₀
        and σ₀ (:func:`_in_control_streams`); the rate is then measured on other such streams.
    seed : int

    Returns
    -------
    dict
        ``mu0``, ``sd0``, ``k``, ``h``, ``statistic``, ``alarms`` (positions), ``starts`` (first position
        of each alarm's excursion), ``false_alarm_rate`` and ``false_alarm_se`` (per run, measured with
        restarts on fresh resampled streams), ``chance_alarms`` and ``count_p`` (the mean alarm count
        after the in-control part on :data:`N_SIM` simulated in-control streams of that length, and the
        share of them with at least the observed count, +1 in numerator and denominator), or
        ``reason`` when the series cannot carry an alarm.
    """
    values = np.asarray(values, dtype=float)
    if n_baseline < MIN_ALARM_RUNS:
        return {"reason": f"the in-control part has {n_baseline} scored runs; at least {MIN_ALARM_RUNS} are needed"}
    base = values[:n_baseline]
    mu0, sd0 = float(base.mean()), float(base.std(ddof=1))
    if not np.isfinite(sd0) or sd0 <= 0:
        return {"reason": "the monitored value does not vary over the in-control part"}
    k = shift / 2.0
    rng = np.random.default_rng(seed)
    length = int(min(max(4 * target_arl, 200), 20_000))
    tune = _in_control_streams(base, N_SIM, length, rng)
    lo, hi = 0.0, 4.0 * np.log(target_arl) + 10.0
    for _ in range(25):  # false alarms per run fall as h grows: bisect for one per target_arl runs
        mid = (lo + hi) / 2
        if _alarm_counts(tune, k, mid).sum() / tune.size > 1.0 / target_arl:
            lo = mid
        else:
            hi = mid
    h = hi
    # measured false-alarm rate: the same rule (restart after an alarm) on fresh resampled streams
    counts = _alarm_counts(_in_control_streams(base, N_SIM, length, rng), k, h) / length
    stat, alarms, starts = cusum_path(np.clip((values - mu0) / sd0, -Z_CAP, Z_CAP), k, h)
    # how many alarms after the in-control part chance gives, and how often as many as seen
    n_after = values.size - n_baseline
    null = _null_alarm_counts(base, N_SIM, n_after, k, h, rng) if n_after > 0 else np.zeros(N_SIM)
    observed = int((alarms >= n_baseline).sum())
    return {"mu0": mu0, "sd0": sd0, "k": k, "h": h, "statistic": stat, "alarms": alarms, "starts": starts,
            "false_alarm_rate": float(counts.mean()), "false_alarm_se": float(counts.std(ddof=1) / np.sqrt(counts.size)),
            "chance_alarms": float(null.mean()), "count_p": float((1 + np.sum(null >= observed)) / (1 + null.size))}


def monitor(data: TrajectoryData, settings: ScoreSettings | None = None, by: str | None = None,
            window: int = 100, stride: int | None = None, predictors: list[str] | None = None,
            alarm_on: str | None = None, baseline: int | None = None, shift: float = 0.5,
            target_arl: float = 1000.0, q_z=None) -> MonitorResult:
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

    Returns
    -------
    MonitorResult
    """
    settings = settings or ScoreSettings()
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
    codes, key, words, n_excluded = run_order(data, by)
    res = compute_tps(data, replace(settings, n_boot=0), names, q_z=q_z)
    per = res.per_trajectory
    label = _labels(per, data)
    runs = pd.DataFrame({"position": np.arange(codes.size),
                         "trajectory_id": data.trajectories["trajectory_id"].to_numpy()[codes],
                         "key": key.to_numpy(), "censored": data.trajectories["censored"].to_numpy()[codes],
                         "label": label[codes]})
    tables, weights = [], {}
    for name in names:
        p = per[per["predictor"] == name]
        tps = np.full(data.n_trajectories, np.nan)
        wsum = np.full(data.n_trajectories, np.nan)
        tps[p["traj"].to_numpy()] = p["tps"].to_numpy()
        wsum[p["traj"].to_numpy()] = p["weight_sum"].to_numpy()
        f = data.forecasts(name)
        mf = pd.Series(f).groupby(data.steps["traj"].to_numpy()).mean().reindex(range(data.n_trajectories))
        runs[f"tps_{name}"] = tps[codes]
        weights[name] = wsum[codes]
        tab = window_table(tps[codes], wsum[codes], label[codes], mf.to_numpy()[codes], window, stride, settings)
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


def default_baseline(n_scored: int, window: int) -> int:
    """In-control runs by default: a quarter of the scored runs, at least one window and at least
    :data:`MIN_ALARM_RUNS`, at most all."""
    return min(n_scored, max(window, n_scored // 4, MIN_ALARM_RUNS))


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
