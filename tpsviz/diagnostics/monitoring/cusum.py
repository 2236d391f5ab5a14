"""A CUSUM alarm on the degradation of one predictor's per-run score (docs/theory.md §11).

A one-sided lower CUSUM on a monitored per-run value (:func:`tpsviz.diagnostics.monitoring.monitor.monitor`
watches D_i = TPS_i − TPS_ref,i), standardised with μ₀, σ₀ of the in-control part (the first runs)
and capped at ±3 (:data:`Z_CAP`): S_i = max(0, S_{i−1} − z_i − k), k = shift/2 (shift in units of
σ₀). The threshold h gives one false alarm per ``target_arl`` runs on streams resampled from the
in-control runs that also re-estimate μ₀ and σ₀; the false-alarm rate is then measured on fresh such
streams with the same restart-after-alarm rule as the real stream, and reported with the alarms
the in-control part itself raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["Alarm", "cusum_alarm", "cusum_path", "MIN_ALARM_RUNS", "Z_CAP", "N_SIM"]

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
