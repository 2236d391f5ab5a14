"""The Trajectory Proper Score of a log: settings, per-step weights, scoring (docs/theory.md §3–§4).

    TPS(F_1:T, Y) = Σ_t w_t S(F_t, Y)                                  complete run
    TPS_cen(q_Z)  = Σ_{t<=Z} w_t [q_Z S(F_t, 1) + (1 - q_Z) S(F_t, 0)]   censored at Z

The censoring modes and each run's label by mode are in :mod:`tpsviz.core.censoring`; the
per-trajectory sums TPS is computed from in :mod:`tpsviz.core.trajectory_sums`; the
artificial-censoring check, which scores logs with :func:`compute_tps`, in
:mod:`tpsviz.core.artificial_censoring`.

Scores are rewards in the beta family's units (nats for the log score): higher is better,
0 is perfect.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from tpsviz.core.cancel import checkpoint
from tpsviz.core.clusters import Clusters, check_cluster_by, run_clusters
from tpsviz.core.censoring import (
    CENSORING_LABELS, CENSORING_MODES, default_censoring, labels_for_runs, qz_per_trajectory)
from tpsviz.core.data import TrajectoryData
from tpsviz.core.inference import DEFAULT_SEED, INTERVALS, column_mean_intervals, mean_se
from tpsviz.core.schedules import Schedule
from tpsviz.core.scores import family_name, score_unit, validate_alpha_beta
from tpsviz.core.trajectory_sums import (
    RowScores, RunLabels, RunRows, contributions, scored_runs, trajectory_sums, where_or_self)
from tpsviz.core.weights import MAX_WEIGHT, check_weights, step_weights  # (their home until they grew apart)

__all__ = ["ScoreSettings", "TPSResult", "compute_tps", "settings_words", "step_weights", "check_weights",
           "MAX_WEIGHT", "summary_row", "summary_of_runs", "no_predictor_message"]


@dataclass(frozen=True)
class ScoreSettings:
    """Everything that changes a TPS verdict.

    Parameters
    ----------
    alpha, beta : float
        Beta-family parameters (> -1). (0, 0) = log score.
    schedule : Schedule
        Weight schedule w_t.
    censoring : str
        One of ``CENSORING_MODES``.
    eps : float
        Forecasts are clipped to [ε, 1-ε] before scoring; ε = 0 disables clipping.
    n_boot : int
        Bootstrap replicates for CIs (0 = no bootstrap).
    level : float
        Confidence level.
    seed : int
        Bootstrap seed.
    cluster_by : str
        The unit of every SE and bootstrap (docs/theory.md §6.1): ``"auto"`` (default: the task
        column when runs repeat tasks, else the run), ``"run"``, or a run-level metadata column
        (:func:`tpsviz.core.clusters.run_clusters`).
    interval : str
        The bootstrap interval of a mean (TPS, paired and unpaired differences): ``"studentized"``
        (default, the bootstrap-t) or ``"percentile"`` (:mod:`tpsviz.core.inference`).
    """

    alpha: float = 0.0
    beta: float = 0.0
    schedule: Schedule = field(default_factory=Schedule)
    censoring: str = "simple"
    eps: float = 1e-6
    n_boot: int = 2000
    level: float = 0.95
    seed: int = DEFAULT_SEED
    cluster_by: str = "auto"
    interval: str = "studentized"

    def __post_init__(self) -> None:
        validate_alpha_beta(self.alpha, self.beta)
        check_cluster_by(self.cluster_by)
        if self.interval not in INTERVALS:
            raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {self.interval!r}")
        if self.censoring not in CENSORING_MODES:
            raise ValueError(f"censoring must be one of {', '.join(CENSORING_MODES)}, "
                             f"got {self.censoring!r}")
        if not (0.0 <= float(self.eps) < 0.5):
            raise ValueError(f"eps must be in [0, 0.5), got {self.eps!r}")
        if not (0.0 < self.level < 1.0):
            raise ValueError(f"level must be in (0, 1), got {self.level!r}")
        if int(self.n_boot) < 0:
            raise ValueError("n_boot must be >= 0")

    def describe(self) -> dict:
        """Plain dict of the settings (for JSON output and report captions)."""
        return {
            "alpha": self.alpha, "beta": self.beta, "schedule": self.schedule.spec,
            "schedule_verdict": self.schedule.verdict.status, "censoring": self.censoring,
            "eps": self.eps, "n_boot": self.n_boot, "level": self.level, "seed": self.seed,
            "cluster_by": self.cluster_by, "interval": self.interval,
        }


def settings_words(settings: ScoreSettings, censoring: str | None = None) -> dict:
    """The settings in words, the same in every output (the dashboard's banner, the report, a PNG's
    caption, the CLI's header).

    Parameters
    ----------
    settings : ScoreSettings
    censoring : str, optional
        The censoring mode in words when the caller knows more (the q_Z source of exact mode);
        default :data:`CENSORING_LABELS`.

    Returns
    -------
    dict
        ``score`` ("log (α=0, β=0)"), ``unit``, ``direction``, ``schedule`` (spec and formula),
        ``formula``, ``schedule_status``, ``schedule_reason``, ``censoring``, ``eps``, ``bootstrap``.
    """
    s, v = settings.schedule, settings.schedule.verdict
    return {
        "score": f"{family_name(settings.alpha, settings.beta)} (α={settings.alpha:g}, β={settings.beta:g})",
        "unit": score_unit(settings.alpha, settings.beta),
        "direction": "higher is better, 0 is perfect",
        "schedule": f"{s.spec}: {s.formula}",
        "formula": s.formula,
        "schedule_status": v.status,
        "schedule_reason": v.reason,
        "censoring": censoring or CENSORING_LABELS[settings.censoring],
        "eps": f"{settings.eps:g}" + (" (clipping off)" if settings.eps == 0 else ""),
        "bootstrap": (f"{settings.n_boot} replicates over {_units(settings)}, seed {settings.seed}" if settings.n_boot
                      else "off (intervals: mean ± z·SE)"),
    }


def _units(settings: ScoreSettings) -> str:
    """What a bootstrap replicate resamples under the settings' cluster choice, in words."""
    by = settings.cluster_by
    return ("trajectories" if by == "run" else "trajectories (tasks where runs repeat them)" if by == "auto"
            else f"tasks (column {by})")


@dataclass
class TPSResult:
    """TPS of every predictor under one :class:`ScoreSettings`.

    Attributes
    ----------
    settings : ScoreSettings
    summary : DataFrame
        One row per predictor (index): ``tps_mean`` (nats per trajectory), ``tps_se``,
        ``tps_ci_low``, ``tps_ci_high``, ``tps_step_mean`` (Σ TPS_i / Σ w_t: a display
        normalisation per weighted step), ``n_trajectories``, ``n_censored``, ``n_steps``
        (scored), ``n_missing`` (steps without a forecast), ``n_clipped``,
        ``n_qz_fallback`` (always 0: exact mode refuses a censored run without q_Z),
        ``n_excluded_censored`` (complete-case), ``n_no_forecast`` (runs with no forecast).
        ``tps_se`` and the CI are clustered by task when :attr:`clusters` is.
    per_trajectory : DataFrame
        Long: ``trajectory_id``, ``traj``, ``predictor``, ``tps``, ``censored``,
        ``n_scored``, ``weight_sum``, ``q_z_used`` (NaN for complete runs).
    """

    settings: ScoreSettings
    summary: pd.DataFrame
    _data: TrajectoryData = field(repr=False)
    _weights: np.ndarray | None = field(repr=False)  # w_t for every step row (None: not yet)
    _scores: dict[str, "_RowScoresOnLog"] = field(repr=False)  # per predictor: row_scores, when asked for
    # per predictor: (TPS of every run, scored runs), run codes as positions; kept so that per-run
    # matrices, intervals and splits need no pass over the long frame's text column
    _runs: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    # per predictor: (rows scored, Σ w_t, censored, q_Z used) of every run: the long frame's other columns
    _run_columns: dict[str, tuple] = field(default_factory=dict, repr=False)
    _per_trajectory: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    #: the unit of the SEs and intervals (:func:`tpsviz.core.clusters.run_clusters` of the log)
    clusters: Clusters | None = field(default=None, repr=False, compare=False)

    @property
    def per_trajectory(self) -> pd.DataFrame:
        """The long frame (see the class's Attributes), built when first asked for: a page that
        shows the summary, the matrices or the intervals never needs it (an α nudge of the
        dashboard rebuilds every result; docs/deployment.md)."""
        if self._per_trajectory is None:
            self._per_trajectory = _long_frame(self._data, list(self.summary.index), self._runs,
                                               self._run_columns)
        return self._per_trajectory

    def tps_matrix(self) -> pd.DataFrame:
        """Per-trajectory TPS as a wide frame (trajectory × predictor; NaN = not scored)."""
        names = list(self.summary.index)
        if len(self.per_trajectory) == 0:
            return pd.DataFrame(columns=names, index=pd.Index([], name="trajectory_id"), dtype=float)
        values, valid = self._run_matrix(names)
        runs = np.flatnonzero(valid.any(axis=1))  # runs scored by some predictor
        ids = self._data.trajectory_ids[runs]
        order = np.argsort(ids, kind="stable")  # sorted by id, as a pivot table is
        wide = np.where(valid[runs], values[runs], np.nan)[order]
        # a predictor that scored no run (no forecast at all, or all runs out of scope) is a
        # column of NaN, not missing
        return pd.DataFrame(wide, index=pd.Index(ids[order], name="trajectory_id"),
                            columns=pd.Index(names, name="predictor"))

    def _run_matrix(self, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(per-run TPS, scored) as run × predictor arrays (run codes as rows)."""
        if not names:
            n = self._data.n_trajectories
            return np.zeros((n, 0)), np.zeros((n, 0), dtype=bool)
        values = np.column_stack([np.where(self._runs[n][1], self._runs[n][0], 0.0) for n in names])
        return values, np.column_stack([self._runs[n][1] for n in names])

    def row_scores(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A predictor's score and clipped forecast on every step row of the log.

        Parameters
        ----------
        name : str
            One of the result's predictors.

        Returns
        -------
        scores : ndarray of float
            S(F_t, Y), or the censored expected score, per step row; NaN where not scored
            (missing forecast, out of scope).
        forecasts : ndarray of float
            The forecast as clipped for scoring; NaN where missing or out of scope.

        Notes
        -----
        Formed from the predictor's row scores at each call (read the arrays only: where every
        row is in scope they are the ones the result keeps).
        """
        return self._scores[name]()

    def step_contributions(self, predictors: list[str] | None = None) -> pd.DataFrame:
        """Per-step contributions w_t·S as a long frame.

        Columns: ``trajectory_id``, ``step``, ``t``, ``predictor``, ``forecast`` (as clipped
        for scoring), ``weight``, ``score`` (S or the censored expected score), ``contribution``.
        Rows that were not scored (missing forecast, out of scope) are left out.
        """
        steps = self._data.steps
        if self._weights is None:
            self._weights = step_weights(self._data, self.settings.schedule)
        frames = []
        for name in predictors or list(self.summary.index):
            s, pclip = self.row_scores(name)
            ok = ~np.isnan(s)
            w = self._weights[ok]
            sc = s[ok]
            frames.append(pd.DataFrame({
                "trajectory_id": steps["trajectory_id"].to_numpy()[ok],
                "step": steps["step"].to_numpy()[ok],
                "t": steps["t"].to_numpy()[ok],
                "predictor": name,
                "forecast": pclip[ok],
                "weight": w,
                "score": sc,
                "contribution": contributions(w, sc),  # (the terms the run's sums add up)
            }))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def with_intervals(self, n_boot: int, seed: int | None = None, level: float | None = None) -> "TPSResult":
        """The same result with bootstrap CIs of n_boot replicates (``settings.interval``, by trajectory or cluster).

        The CIs are those :func:`compute_tps` gives with ``n_boot`` replicates (same seed, same
        resamples), computed from the per-trajectory TPS alone: a point result (``n_boot=0``)
        can be shown first and its intervals added without scoring the log again.
        """
        settings = replace(self.settings, n_boot=int(n_boot),
                           seed=self.settings.seed if seed is None else seed,
                           level=self.settings.level if level is None else level)
        names = list(self.summary.index)
        values, valid = self._run_matrix(names)
        summary = self.summary.copy()
        if names:
            groups = None if self.clusters is None else self.clusters.groups()
            lo, hi = column_mean_intervals(values, valid, settings.n_boot, settings.level, settings.seed, groups,
                                           settings.interval)
            summary["tps_ci_low"], summary["tps_ci_high"] = lo, hi
        return TPSResult(settings, summary, self._data, self._weights, self._scores, self._runs,
                         self._run_columns, self._per_trajectory, self.clusters)

    def only(self, names: list[str]) -> "TPSResult":
        """The same result restricted to some of its predictors (the inverse of :meth:`combine`)."""
        names = list(names)
        return TPSResult(self.settings, self.summary.loc[names], self._data, self._weights,
                         {n: self._scores[n] for n in names}, {n: self._runs[n] for n in names},
                         {n: self._run_columns[n] for n in names}, clusters=self.clusters)

    @classmethod
    def combine(cls, parts: list["TPSResult"]) -> "TPSResult":
        """One result from results of other predictors on the same log and settings.

        Scoring each predictor on its own gives the same numbers as scoring them together (the
        bootstrap draws its resamples from the seed alone), so a dashboard can cache results per
        predictor and combine them: deselecting a predictor then recomputes nothing.
        """
        if not parts:
            raise ValueError("no results to combine")
        first = parts[0]
        if any(p.settings != first.settings or not _same_rows(p._data, first._data) for p in parts):
            raise ValueError("results combine only on the same log and settings")
        weights = next((p._weights for p in parts if p._weights is not None), None)
        return cls(settings=first.settings,
                   summary=pd.concat([p.summary for p in parts]),
                   _data=first._data, _weights=weights,
                   _scores={k: v for p in parts for k, v in p._scores.items()},
                   _runs={k: v for p in parts for k, v in p._runs.items()},
                   _run_columns={k: v for p in parts for k, v in p._run_columns.items()},
                   clusters=first.clusters)


def _same_rows(a: TrajectoryData, b: TrajectoryData) -> bool:
    """Whether two logs are one log's rows (the same object, or copies selecting other predictors of the
    same step and run tables: a result reads the rows, never the selection)."""
    return a is b or (a.steps is b.steps and a.trajectories is b.trajectories)


def no_predictor_message(data) -> str:
    """What to do with a log that has no probability column: raw signals, or no forecast at all."""
    if not data.signals:
        return ("the log has no forecast to score (no conf_<name> column, no raw signal): add its reference "
                "forecasters first, tpsviz.forecasts.references.add_references(data, settings), or join a "
                "forecasts table (docs/forecasts.md)")
    sig = ", ".join(data.signals)
    return ("the log has no probability column (conf_<name>) to score, only raw signals "
            f"({sig}): turn them into probabilities first, e.g. "
            "tpsviz.add_all_recalibrated(data, 'platt') (cross-fitted by trajectory)")


def compute_tps(
    data: TrajectoryData,
    settings: ScoreSettings | None = None,
    predictors: list[str] | None = None,
    q_z=None,
) -> TPSResult:
    """Score every predictor of a trajectory log with the Trajectory Proper Score.

    This is the in-memory engine's scoring: the one behind ``tpsviz score --engine memory``,
    :func:`tpsviz.evaluate` and the dashboard. It computes each run's sums A1, A0, W with
    :func:`tpsviz.core.trajectory_sums.trajectory_sums` (the function the engines' in-memory
    :class:`~tpsviz.engines.runsums.RunSums` come from too), then TPS_i = ℓ_i·A1_i + (1 − ℓ_i)·A0_i
    with :func:`tpsviz.core.trajectory_sums.tps_from_sums` (the combination the out-of-core engines'
    :func:`~tpsviz.engines.runsums.score_from_sums` uses), and the summary with
    :func:`summary_of_runs`. The per-step contributions (:meth:`TPSResult.step_contributions`) are
    the row terms w_t·S those sums add up. The reference implementation the tests hold it to is a
    plain loop over runs and steps with scores by numerical integration (``brute_tps`` in
    ``tests/test_tps.py``); the out-of-core engines are tested against this function.

    Parameters
    ----------
    data : TrajectoryData
        A validated log (see :func:`tpsviz.load`).
    settings : ScoreSettings, optional
        α, β, schedule, censoring mode, ε and bootstrap settings. Defaults: log score,
        uniform weights, censoring from :func:`tpsviz.core.censoring.default_censoring`.
    predictors : list of str, optional
        Subset of ``data.predictors`` to score (default: all).
    q_z : array_like or Series, optional
        q_Z estimates per trajectory for ``exact`` mode (e.g. from Monte-Carlo rollouts),
        overriding the log's ``q_z`` column; every censored run needs one
        (:class:`tpsviz.core.censoring.MissingQz`).

    Returns
    -------
    TPSResult
    """
    if settings is None:
        settings = ScoreSettings(censoring=default_censoring(data))
    names = list(predictors) if predictors is not None else list(data.predictors)
    if not data.predictors:
        raise ValueError(no_predictor_message(data))
    unknown = [p for p in names if p not in data.predictors]
    if unknown:
        raise ValueError(f"unknown predictor(s) {unknown}; the log has {data.predictors}")
    scope = _Scope.of(data, settings, q_z)
    rows, columns, scores, runs = [], {}, {}, {}
    for name in names:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        row, columns[name], scores[name], tps, valid = _score_predictor(data, settings, scope, name)
        rows.append(row)
        runs[name] = (tps, valid)
    summary = pd.DataFrame(rows).set_index("predictor")
    # weights for every step row (the scope rows' weights were enough for the scores)
    w_rows = None if (scope.rows.w is None or scope.rows.rows_in is not None) else scope.rows.w
    result = TPSResult(settings, summary, data, w_rows, scores, runs, columns, clusters=scope.clusters)
    return result.with_intervals(settings.n_boot) if names else result


@dataclass
class _Scope:
    """The runs a score covers under a censoring mode: their labels, q_Z, rows and weights."""

    cens_t: np.ndarray          # censored, per run
    q_t: np.ndarray             # q_Z used, per run (NaN for complete runs)
    fallback_t: np.ndarray      # censored runs scored with q_Z = 0 for want of q_Z (none: exact mode refuses)
    label: np.ndarray           # ℓ per run under the mode (NaN: left out)
    labels: RunLabels           # the same, worked out once for every predictor
    complete_case: bool
    in_scope_t: np.ndarray      # runs scored (complete-case leaves the censored ones out)
    length: np.ndarray          # rows per run
    rows: RunRows               # the rows of the runs in scope and the branches each needs
    clusters: Clusters | None = None  # the unit of the SEs (settings.cluster_by)

    @classmethod
    def of(cls, data: TrajectoryData, settings: ScoreSettings, q_z) -> "_Scope":
        traj = data.trajectories
        cens_t = traj["censored"].to_numpy()
        q_t, fallback_t = qz_per_trajectory(data, settings.censoring, q_z)
        label = labels_for_runs(traj["outcome"].to_numpy(dtype=float), cens_t, q_t, settings.censoring)[0]
        complete_case = settings.censoring == "complete"
        in_scope_t = ~cens_t if complete_case else np.ones(len(traj), bool)
        rows = RunRows.of(data, label > 0, label < 1, settings.schedule)  # (ℓ = NaN: neither)
        return cls(cens_t, q_t, fallback_t, label, RunLabels.of(label), complete_case, in_scope_t,
                   traj["length"].to_numpy(), rows, run_clusters(data, settings.cluster_by))


@dataclass(frozen=True)
class _RowScoresOnLog:
    """One predictor's row scores, formed on the log's rows when asked for (:meth:`TPSResult.row_scores`,
    :meth:`TPSResult.step_contributions`): the sums do not need them, and the expected scores of
    censored runs' rows (exact mode) or the copy onto every row of the log (complete-case) cost a
    pass over the rows that a page showing the summary never reads.

    It keeps what the result held before, the row scores S and the clipped forecasts, with what
    finds the rest again (:meth:`~tpsviz.core.trajectory_sums.RowScores.again`: the log, ℓ per run,
    the settings); a cache that counts a result's memory by its fields (the dashboard's) counts the
    same arrays as before."""

    s: np.ndarray                 # RowScores.s and .forecast of trajectory_sums
    forecast: np.ndarray
    data: TrajectoryData          # (the result's own log)
    label: np.ndarray             # ℓ per run
    settings: ScoreSettings

    def __call__(self) -> tuple[np.ndarray, np.ndarray]:
        st = self.settings
        rows = RunRows.of(self.data, self.label > 0, self.label < 1, st.schedule)  # (as _Scope.of)
        return RowScores.again(self.s, self.forecast, rows, st.alpha, st.beta).on_log(rows, self.label)


def _score_predictor(data: TrajectoryData, settings: ScoreSettings, sc: _Scope, name: str):
    """One predictor's summary row, per-run columns, row scores, per-run TPS and valid runs: the
    per-trajectory sums (:func:`tpsviz.core.trajectory_sums.trajectory_sums`), then TPS_i from them."""
    p_all = data.forecasts(name)
    sums = trajectory_sums(p_all, sc.rows, settings.alpha, settings.beta, settings.eps, last=False,
                           keep_rows=True)
    tps, n_scored = scored_runs(sums.a1, sums.a0, sums.n_present, sc.labels, sc.in_scope_t)
    score = _RowScoresOnLog(sums.rows.s, sums.rows.forecast, data, sc.label, settings)
    columns = (n_scored, sums.wsum, sc.cens_t, sc.q_t)  # of every run: the long frame is built when asked for
    row = summary_of_runs(name, tps, n_scored, sums.wsum, sums.n_clipped, sc.length, sc.in_scope_t, sc.cens_t,
                          sc.fallback_t, sc.complete_case, sc.clusters.groups())
    return row, columns, score, tps, n_scored > 0


def _long_frame(data: TrajectoryData, names: list[str], runs: dict, columns: dict) -> pd.DataFrame:
    """:attr:`TPSResult.per_trajectory`: one block of rows per predictor (its scored runs, in run
    order), in the order of ``names``."""
    frames = []
    for name in names:
        tps, valid = runs[name]
        n_scored, wsum, cens_t, q_t = columns[name]
        sel = slice(None) if bool(valid.all()) else valid
        frames.append(pd.DataFrame({
            "trajectory_id": data.trajectory_ids[sel],
            "traj": np.arange(valid.size)[sel],
            "predictor": name,
            "tps": tps[sel],
            "censored": cens_t[sel],
            "n_scored": n_scored[sel],
            "weight_sum": wsum[sel],
            "q_z_used": q_t[sel],
        }))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def summary_row(name: str, tps: np.ndarray, wsum: np.ndarray, cens: np.ndarray, fallback: np.ndarray,
                n_steps: int, n_missing: int, n_clipped: int, n_excluded_censored: int,
                n_no_forecast: int, groups: np.ndarray | None = None) -> dict:
    """One predictor's row of :attr:`TPSResult.summary` from its scored runs (no intervals yet).

    Parameters
    ----------
    name : str
    tps, wsum : ndarray
        TPS_i and Σ w_t of the scored runs.
    cens, fallback : ndarray of bool
        Of the scored runs: censored; censored and scored with q_Z = 0 for want of q_Z.
    n_steps, n_missing, n_clipped, n_excluded_censored, n_no_forecast : int
        Counts over the rows and runs in scope.
    groups : ndarray of int, optional
        The cluster of each scored run: the SE is then clustered (:func:`tpsviz.core.inference.mean_se`).
    """
    n = int(tps.size)
    mean = float(tps.mean()) if n else np.nan
    se = mean_se(tps, groups)
    wtot = float(wsum.sum())
    return {
        "predictor": name,
        "tps_mean": mean,
        "tps_se": se,
        "tps_ci_low": np.nan,
        "tps_ci_high": np.nan,
        "tps_step_mean": float(tps.sum() / wtot) if wtot > 0 else np.nan,
        "n_trajectories": n,
        "n_censored": int(cens.sum()),
        "n_steps": int(n_steps),
        "n_missing": int(n_missing),
        "n_clipped": int(n_clipped),
        "n_qz_fallback": int(fallback.sum()),
        "n_excluded_censored": int(n_excluded_censored),
        "n_no_forecast": int(n_no_forecast),
    }


def summary_of_runs(name: str, tps: np.ndarray, n_scored: np.ndarray, wsum: np.ndarray, n_clipped: np.ndarray,
                    length: np.ndarray, in_scope: np.ndarray, cens: np.ndarray, fallback: np.ndarray,
                    complete_case: bool, groups: np.ndarray | None = None) -> dict:
    """:func:`summary_row` from the arrays of every run: what :func:`compute_tps` and the engines'
    :func:`tpsviz.engines.runsums.score_from_sums` both report.

    Parameters
    ----------
    name : str
    tps : ndarray
        TPS_i of every run, NaN where not scored (:func:`tpsviz.core.trajectory_sums.scored_runs`).
    n_scored : ndarray of int
        Steps scored per run (0: not scored).
    wsum, n_clipped : ndarray
        Σ w_t over the steps with a forecast, and the steps clipped, per run.
    length : ndarray of int
        Steps per run.
    in_scope : ndarray of bool
        Runs the censoring mode scores.
    cens, fallback : ndarray of bool
        Per run: censored; censored and scored with q_Z = 0 for want of q_Z.
    complete_case : bool
        Complete-case mode (the censored runs are counted as left out).
    groups : ndarray of int, optional
        The cluster of every run (the SE is then clustered).
    """
    valid = n_scored > 0
    scored = slice(None) if valid.all() else valid  # (a slice: views, not copies)
    n_steps = int(n_scored.sum())
    return summary_row(name, tps[scored], wsum[scored], cens[scored], fallback[scored], n_steps=n_steps,
                       n_missing=int((length * in_scope).sum()) - n_steps,
                       n_clipped=int(where_or_self(in_scope, n_clipped, 0).sum()),
                       n_excluded_censored=int(cens.sum()) if complete_case else 0,
                       n_no_forecast=int((in_scope & (n_scored == 0)).sum()),
                       groups=None if groups is None else groups[scored])
