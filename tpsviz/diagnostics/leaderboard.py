"""The usual metrics, the base-rate reference and skill, per predictor of a log (docs/theory.md §5–§6).

This module turns a :class:`~tpsviz.core.data.TrajectoryData` into the tables the dashboard, the CLI
and the report show next to TPS. It is the single place these numbers are computed:

- :func:`metric_table`: AUROC/AUPRC pooled over (trajectory, step) pairs and at the final
  step, trajectory ECE (equal-width and equal-mass bins) pooled and final, and scalarised
  log/Brier scores of Φ(F_1:T) for Φ ∈ {last, mean, min}; each with a cluster-bootstrap CI
  that resamples trajectories.
- :func:`base_rate_reference`: TPS of the constant forecast equal to the success rate,
  scored under the *same* settings, and :func:`skill_table`: skill = 1 − TPS/TPS_ref.
- :func:`leaderboard`: TPS summary + reference + skill + metrics in one frame.

Rank and binned metrics need an outcome, so they use the complete runs (censored runs have
Y unobserved). ``pseudo_labels=True`` instead scores censored runs as failures (Y = 0), the
label the simple censored score uses; the table says which labels were used.

Orientation: TPS and the scalarised scores are rewards (higher is better, 0 is perfect); AUROC
and AUPRC are higher-is-better rank metrics; T-ECE is an error (lower is better).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from tpsviz.core.cancel import checkpoint
from tpsviz.core.clusters import run_clusters
from tpsviz.core.inference import bootstrap_sums, group_sums, mean_estimate
from tpsviz.core.data import TrajectoryData
from tpsviz.diagnostics.metric_bootstrap import (
    MeanStat, metric_statistic, replicate_statistics, replicate_summary)
from tpsviz.diagnostics.metrics import metric_point, scalarised_score
from tpsviz.core.censoring import default_censoring, mode_labels
from tpsviz.core.tps import ScoreSettings, TPSResult, compute_tps, no_predictor_message
from tpsviz.diagnostics.skill_rate import RateRefit, rate_refit, skill_replicates

__all__ = ["METRIC_INFO", "LABELS", "metric_table", "BaseRateReference", "base_rate_reference",
           "skill_table", "leaderboard", "labelled_rows", "final_rows", "run_labels"]

#: one-line definition of every metric column of :func:`metric_table` (for hover texts)
METRIC_INFO: dict[str, str] = {
    "auroc": "AUROC pooled over all (trajectory, step) pairs: P(F on a success > F on a "
             "failure), ties ½; higher is better, 0.5 = no discrimination; blind to calibration",
    "auprc": "average precision pooled over all (trajectory, step) pairs; higher is better, "
             "the success rate = no discrimination; blind to calibration",
    "auroc_final": "AUROC of the final forecast of each run",
    "tece_pooled": "trajectory ECE, equal-width bins, pooled over (trajectory, step) pairs: "
                   "Σ_k (n_k/n)|mean F − mean Y| in bin k; lower is better; blind to resolution",
    "tece_final": "trajectory ECE of the final forecast of each run, equal-width bins",
    "tece_pooled_mass": "trajectory ECE pooled over steps, equal-mass (quantile) bins",
    "tece_final_mass": "trajectory ECE of the final forecast, equal-mass (quantile) bins",
}
for _s, _sname in (("log", "log score (nats)"), ("brier", "half Brier score −½(Φ−Y)²")):
    for _phi, _pname in (("last", "final forecast"), ("mean", "mean forecast"),
                         ("min", "minimum forecast")):
        METRIC_INFO[f"scal_{_s}_{_phi}"] = (
            f"{_sname} of the {_pname} of each run (scalarised, reward: higher is better, 0 is "
            f"perfect); proper only for this one number, not for the trace")

_SCAL = {"log": (0.0, 0.0), "brier": (1.0, 1.0)}

#: what the outcome labels of the metrics were
LABELS = {False: "observed outcomes (complete runs only)",
          True: "pseudo-labels (censored runs counted as failures)"}


# --------------------------------------------------------------------------- row selection
def labelled_rows(data: TrajectoryData, pseudo_labels: bool = False):
    """Rows that carry an outcome label, and the label of every step row.

    Parameters
    ----------
    data : TrajectoryData
    pseudo_labels : bool
        False: only complete runs are labelled (Y observed). True: censored runs are
        labelled Y = 0 (censoring counted as failure).

    Returns
    -------
    mask : ndarray of bool
        Step rows with a label.
    y : ndarray of float
        Label per step row (NaN where unlabelled).
    """
    codes = data.steps["traj"].to_numpy()
    out = data.trajectories["outcome"].to_numpy(dtype=float)
    if pseudo_labels:
        out = np.where(data.trajectories["censored"].to_numpy(), 0.0, out)
    y = out[codes]
    return ~np.isnan(y), y


def final_rows(codes: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Of the step rows ``idx`` (sorted by trajectory then step), the last one of each run."""
    if idx.size == 0:
        return idx
    g = codes[idx]
    return idx[np.r_[g[1:] != g[:-1], True]]


def _metric_point(metric: str, p, y, n_bins: int, strategy: str) -> float:
    """:func:`~tpsviz.diagnostics.metrics.metric_point`, NaN where the metric is undefined."""
    try:
        return metric_point(metric, p, y, n_bins, strategy)
    except ValueError:
        return np.nan


# --------------------------------------------------------------------------- metric table
def metric_table(data: TrajectoryData, settings: ScoreSettings | None = None,
                 predictors: list[str] | None = None, n_bins: int = 10,
                 pseudo_labels: bool = False, n_boot: int | None = None,
                 seed: int | None = None) -> pd.DataFrame:
    """The usual metrics of every predictor, each with a trajectory-bootstrap CI.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings, optional
        Supplies ε (forecasts are clipped to [ε, 1−ε] for the scalarised log score), the
        confidence level and the default ``n_boot`` and ``seed``. The censoring mode does not
        matter: the metrics use labelled runs only (see ``pseudo_labels``).
    predictors : list of str, optional
        Default: every predictor of ``data``.
    n_bins : int
        Number of T-ECE bins (equal-width for ``tece_*``, equal-mass for ``tece_*_mass``).
    pseudo_labels : bool
        False (default): complete runs only, Y observed. True: censored runs are included
        with the pseudo-label Y = 0 (censoring = failure); the ``labels`` column says so.
    n_boot : int, optional
        Bootstrap replicates (default ``settings.n_boot``); 0 gives point estimates only.
    seed : int, optional
        Bootstrap seed (default ``settings.seed``). Every metric uses the same replicates.

    Returns
    -------
    DataFrame
        One row per predictor (index). For every metric m of :data:`METRIC_INFO`: ``m``
        (point estimate on the data), ``m_se`` (sd of the bootstrap replicates or, for the
        scalarised scores, sd/√n over runs), ``m_ci_low``, ``m_ci_high`` (percentile
        interval, resampling trajectories, or tasks with their runs when ``settings.cluster_by``
        clusters them: ``attrs["se"]`` says which). Then ``n_trajectories`` and ``n_steps``
        (labelled runs and rows with a forecast), ``n_unlabelled`` (censored runs left out;
        0 with pseudo-labels), ``n_pseudo`` (censored runs labelled 0) and ``labels``.
        A metric undefined on the data (e.g. one outcome class only) is NaN.
    """
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    n_boot = int(settings.n_boot if n_boot is None else n_boot)
    seed = settings.seed if seed is None else seed
    names = list(data.predictors if predictors is None else predictors)
    if not data.predictors:
        raise ValueError(no_predictor_message(data))
    unknown = [p for p in names if p not in data.predictors]
    if unknown:
        raise ValueError(f"unknown predictor(s) {unknown}; the log has {data.predictors}")
    labelled, y_all = labelled_rows(data, pseudo_labels)
    codes = data.steps["traj"].to_numpy()
    cens = data.trajectories["censored"].to_numpy()
    clusters = run_clusters(data, settings.cluster_by)
    rows = []
    for name in names:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        p_all = data.forecasts(name)
        idx = np.flatnonzero(labelled & ~np.isnan(p_all))
        rec: dict = {"predictor": name}
        if idx.size == 0:
            rows.append(rec | {"n_trajectories": 0, "n_steps": 0})
            continue
        runs = np.unique(codes[idx])
        rec.update(_predictor_metrics(p_all, y_all, codes, idx, runs, settings, n_bins, n_boot, seed,
                                      clusters.groups()))
        rec.update({
            "n_trajectories": int(runs.size), "n_steps": int(idx.size),
            "n_unlabelled": 0 if pseudo_labels else int(cens.sum()),
            "n_pseudo": int(cens[runs].sum()) if pseudo_labels else 0,
        })
        rows.append(rec)
    out = _with_every_column(pd.DataFrame(rows).set_index("predictor"))
    out["labels"] = LABELS[bool(pseudo_labels)]
    out["n_bins"] = int(n_bins)
    out.attrs["se"] = clusters.to_json()
    return out


def _with_every_column(out: pd.DataFrame) -> pd.DataFrame:
    """The metric table with every column even where a predictor (or the log) has no labelled run:
    metrics NaN, counts 0."""
    for col in _METRIC_COLUMNS:
        for c in (col, f"{col}_se", f"{col}_ci_low", f"{col}_ci_high"):
            if c not in out:
                out[c] = np.nan
    for c in ("n_unlabelled", "n_pseudo"):
        out[c] = out[c].fillna(0).astype(int) if c in out else 0
    return out


_METRIC_COLUMNS = (["auroc", "auprc", "auroc_final", "tece_pooled", "tece_final", "tece_pooled_mass",
                    "tece_final_mass"] + [f"scal_{s}_{phi}" for s in _SCAL for phi in ("last", "mean", "min")])


def _predictor_metrics(p_all, y_all, codes, idx, runs, settings: ScoreSettings, n_bins: int, n_boot: int,
                       seed, cluster: np.ndarray | None = None) -> dict:
    """Every metric of one predictor on its labelled rows ``idx`` (of the runs ``runs``), with SE and CI
    (columns ``m``, ``m_se``, ``m_ci_low``, ``m_ci_high``); all bootstraps share one set of replicates,
    which resample the clusters of ``cluster`` (one code per run of the log; None: by run)."""
    p, y, g = p_all[idx], y_all[idx], codes[idx]
    fin = final_rows(codes, idx)
    pf, yf = p_all[fin], y_all[fin]
    # the bootstrap's units (tasks, or runs): 0 … K−1 for every labelled run, and for every row
    units, unit_of_run = np.unique(runs if cluster is None else cluster[runs], return_inverse=True)
    unit_of_run = unit_of_run.ravel()
    u, uf = unit_of_run[np.searchsorted(runs, g)], unit_of_run[np.searchsorted(runs, codes[fin])]
    specs = [("auroc", "auroc", p, y, u, "uniform"), ("auprc", "auprc", p, y, u, "uniform"),
             ("auroc_final", "auroc", pf, yf, uf, "uniform"),
             ("tece_pooled", "tece", p, y, u, "uniform"),
             ("tece_final", "tece", pf, yf, uf, "uniform"),
             ("tece_pooled_mass", "tece", p, y, u, "quantile"),
             ("tece_final_mass", "tece", pf, yf, uf, "quantile")]
    point, se, boot = {}, {}, {}  # boot: column -> statistic to replicate
    for col, metric, pv, yv, gv, strategy in specs:
        point[col] = _metric_point(metric, pv, yv, n_bins, strategy)
        if n_boot > 0 and np.isfinite(point[col]) and units.size >= 2:
            boot[col] = metric_statistic(metric, pv, yv, gv, n_boot, n_bins, strategy)[0]
    eps = float(settings.eps)
    pc = np.clip(p, eps, 1.0 - eps) if eps > 0 else p
    for sname, (a, b) in _SCAL.items():
        for phi in ("last", "mean", "min"):
            col = f"scal_{sname}_{phi}"
            with np.errstate(divide="ignore"):
                v = scalarised_score(pc, y, g, phi, a, b)
            by_unit = None if cluster is None else unit_of_run
            e = mean_estimate(v, n_boot=0, level=settings.level, groups=by_unit)
            point[col], se[col] = e.mean, e.se  # SE: sd / sqrt(n) over runs, or clustered
            if n_boot > 0 and units.size >= 2 and np.isfinite(v).all():
                boot[col] = MeanStat(v, by_unit)
    reps = dict(zip(boot, replicate_statistics(list(boot.values()), units.size, n_boot, seed)))
    rec = {}
    for col in point:
        sd, lo, hi = replicate_summary(reps[col], settings.level) if col in reps else (np.nan,) * 3
        rec.update({col: point[col], f"{col}_se": se.get(col, sd), f"{col}_ci_low": lo, f"{col}_ci_high": hi})
    return rec


# --------------------------------------------------------------------------- base rate & skill
RATE_RULES = {
    "complete": "success rate among the complete runs (the runs complete-case scores)",
    "simple": "share of all runs that finished with success, censored runs counting as "
              "failures: P(Δ=1, Y=1), the constant the simple censored score elicits",
    "exact": "expected success rate of all runs: complete runs count Y, censored runs count "
             "the q_Z used for scoring",
    "upper": "share of runs that succeeded or were censored (q_Z = 1 for censored runs)",
}


@dataclass
class BaseRateReference:
    """TPS of the constant forecast F_t ≡ r, scored like the predictors.

    Attributes
    ----------
    rate : float
        The constant r.
    rule : str
        How r was chosen (depends on the censoring mode, see :func:`base_rate_reference`).
    name : str
        The predictor name the reference was scored under.
    summary : Series
        Its row of :attr:`TPSResult.summary` (``tps_mean``, ``tps_se``, CI, n …).
    per_trajectory : Series
        TPS_ref,i per trajectory (index ``trajectory_id``; NaN = not scored).
    result : TPSResult
        The full result (the data with the reference added as a predictor).
    """

    rate: float
    rule: str
    name: str
    summary: pd.Series
    per_trajectory: pd.Series
    result: TPSResult


def _reference_name(data: TrajectoryData) -> str:
    name = "constant forecast (base rate)"
    while name in data.predictors:
        name += "'"
    return name


def run_labels(data: TrajectoryData, settings: ScoreSettings, q_z=None) -> np.ndarray:
    """The label ℓ_i each run is scored against under ``settings.censoring``
    (:func:`tpsviz.core.censoring.mode_labels`: Y of a complete run; a censored run's 0 (simple),
    1 (upper), q_Z (exact) or NaN (complete-case leaves them out)).

    Returns
    -------
    ndarray
        One float per trajectory, in the order of ``data.trajectories``.
    """
    return mode_labels(data, settings.censoring, q_z)


def reference_rate(data: TrajectoryData, settings: ScoreSettings, q_z=None) -> tuple[float, str]:
    """The success rate r of the base-rate reference under ``settings.censoring``.

    r is the mean outcome the scoring mode itself assumes, r = (Σ_complete Y_i +
    Σ_censored q_Z,i) / n_scored, with q_Z = 0 (simple), 1 (upper), the q_Z used for
    scoring (exact) or censored runs left out (complete). For each mode this is the best
    constant *trajectory-level* forecast under the score's own labels (for the simple score
    it is P(Δ=1, Y=1), the constant version of the pseudo-label target m_t). Note that the
    best constant under TPS with uniform weights would weight runs by their length; we keep
    the run-level rate, the number a stakeholder calls "the success rate".
    """
    vals = run_labels(data, settings, q_z)
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        raise ValueError("no run to score: every run is censored and complete-case leaves "
                         "censored runs out; choose another censoring mode (simple, exact or "
                         "upper)")
    return float(vals.mean()), RATE_RULES[settings.censoring]


def base_rate_reference(data: TrajectoryData, settings: ScoreSettings | None = None,
                        q_z=None, rate: float | None = None) -> BaseRateReference:
    """TPS of the constant success-rate forecast under the same settings as the predictors.

    The constant is added to the data as a predictor (:meth:`TrajectoryData.with_predictor`)
    and scored by :func:`~tpsviz.core.tps.compute_tps`, so schedule, censoring mode, q_Z, ε and
    bootstrap are exactly those of the predictors. The rate follows the censoring mode
    (:func:`reference_rate`): complete-case uses the success rate among complete runs;
    simple uses P(Δ=1, Y=1) (censored = failure, the constant the simple score rewards);
    exact uses complete outcomes and the q_Z of censored runs; upper counts censored runs as
    successes.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings, optional
    q_z : array_like or Series, optional
        q_Z estimates for exact mode (as in :func:`compute_tps`).
    rate : float, optional
        Override the constant (e.g. a rate from a previous benchmark).

    Returns
    -------
    BaseRateReference
    """
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    if rate is None:
        rate, rule = reference_rate(data, settings, q_z)
    else:
        rate = float(rate)
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"the reference rate must be in [0, 1], got {rate}")
        rule = "given by the user"
    name = _reference_name(data)
    ref_data = data.with_predictor(name, np.full(data.n_steps, rate))
    res = compute_tps(ref_data, settings, [name], q_z=q_z)
    per = res.tps_matrix()[name].reindex(data.trajectories["trajectory_id"])
    return BaseRateReference(rate, rule, name, res.summary.loc[name], per, res)


def tps_matrix_for(data: TrajectoryData, settings: ScoreSettings, names: list[str], q_z=None,
                   result: TPSResult | None = None) -> pd.DataFrame:
    """Per-trajectory TPS (trajectory × predictor) of ``names``, reusing ``result`` when given.

    Raises
    ------
    ValueError
        If ``result`` was scored under other settings or lacks one of ``names``.
    """
    if result is None:
        return compute_tps(data, replace(settings, n_boot=0), names, q_z=q_z).tps_matrix()
    same = dict(n_boot=0, seed=0, cluster_by="run", interval="percentile")  # (none changes a run's TPS)
    if replace(result.settings, **same) != replace(settings, **same):
        raise ValueError("the TPS result passed was computed under other settings")
    missing = [n for n in names if n not in result.summary.index]
    if missing:
        raise ValueError(f"the TPS result passed has no predictor {missing}")
    return result.tps_matrix()[names]


def _reference_on_rows(data: TrajectoryData, settings: ScoreSettings, ref: BaseRateReference,
                       name: str, q_z) -> np.ndarray:
    """TPS_ref,i on the (run, step) rows where ``name`` has a forecast.

    TPS sums over the steps a predictor forecasts: against a reference scored on every step, a
    predictor that leaves steps empty would gain skill by saying less (adversarial pass 5, F3).
    A predictor with a forecast on every row shares the reference of the whole log.
    """
    p = data.forecasts(name)
    if not np.isnan(p).any():
        return ref.per_trajectory.to_numpy(dtype=float)
    own = data.with_predictor(ref.name, np.where(np.isnan(p), np.nan, ref.rate))
    res = compute_tps(own, replace(settings, n_boot=0), [ref.name], q_z=q_z)
    return res.tps_matrix()[ref.name].reindex(data.trajectories["trajectory_id"]).to_numpy(dtype=float)


def skill_table(data: TrajectoryData, settings: ScoreSettings | None = None,
                predictors: list[str] | None = None, q_z=None, rate: float | None = None,
                n_boot: int | None = None, seed: int | None = None,
                result: TPSResult | None = None,
                reference: BaseRateReference | None = None) -> pd.DataFrame:
    """Skill = 1 − TPS/TPS_ref of every predictor against the base-rate reference.

    Both means run over the same trajectories (those where the predictor was scored) and the
    same steps: a predictor with missing forecasts is compared with the reference scored on its
    own (run, step) rows, so leaving steps empty never buys skill. Skill > 0: better than the
    constant success rate; 1: perfect; < 0: worse than knowing only the rate.

    Parameters
    ----------
    data, settings, predictors, q_z, rate
        As in :func:`base_rate_reference` and :func:`compute_tps`.
    n_boot, seed : int, optional
        Paired trajectory bootstrap of the skill ratio (default from ``settings``); it resamples
        tasks when ``settings.cluster_by`` clusters the runs (``attrs["se"]`` says which).
    result : TPSResult, optional
        The predictors' TPS already computed under the same settings (and ``q_z``); saves
        scoring the log again.
    reference : BaseRateReference, optional
        :func:`base_rate_reference` of the same log, settings, ``q_z`` and ``rate``, already
        computed (it does not depend on the predictors); saves scoring it again.

    Returns
    -------
    DataFrame
        Index predictor; ``tps_mean``, ``tps_ref`` (mean reference TPS on the same runs),
        ``skill``, ``skill_se``, ``skill_ci_low``, ``skill_ci_high``, ``ref_rate``,
        ``ref_rule``, ``n_trajectories``, ``skill_note`` (why skill is undefined, or "").
    """
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    n_boot = int(settings.n_boot if n_boot is None else n_boot)
    seed = settings.seed if seed is None else seed
    names = list(data.predictors if predictors is None else predictors)
    ref = reference or base_rate_reference(data, replace(settings, n_boot=0), q_z, rate)
    mat = tps_matrix_for(data, settings, names, q_z, result).reindex(
        data.trajectories["trajectory_id"])
    values = {}
    for name in names:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        values[name] = (mat[name].to_numpy(dtype=float), _reference_on_rows(data, settings, ref, name, q_z))
    clusters = run_clusters(data, settings.cluster_by)
    refit = rate_refit(data, settings, names, q_z) if rate is None and reference is None or (
        reference is not None and reference.rule != "given by the user") else None
    out = skill_from_runs(values, ref.rate, ref.rule, settings.level, n_boot, seed, clusters.groups(), refit)
    out.attrs["se"] = clusters.to_json()
    return out


def skill_from_runs(values: dict, rate: float, rule: str, level: float, n_boot: int,
                    seed: int, groups: np.ndarray | None = None, refit: RateRefit | None = None) -> pd.DataFrame:
    """The skill table from per-run TPS of each predictor and of the reference on its rows.

    Parameters
    ----------
    values : dict
        Predictor name -> (TPS_i, TPS_ref,i), one value per run in one fixed run order (NaN:
        not scored). The bootstrap resamples runs in that order, so the same order gives the
        same intervals.
    rate, rule : float, str
        The reference rate and how it was chosen.
    level : float
        Confidence level.
    n_boot, seed : int
        Paired trajectory bootstrap of the skill ratio.
    groups : ndarray of int, optional
        A group per run (0 … G − 1): the bootstrap then resamples the G groups of runs, with
        the runs' sums per group: the tasks runs repeat (:func:`tpsviz.core.clusters.run_clusters`),
        or random groups for millions of runs (:func:`tpsviz.engines.runsums.run_groups`). Point
        estimates are from the runs; no SE from fewer than 2 groups.
    refit : RateRefit, optional
        Re-estimate the reference rate in every replicate (:mod:`tpsviz.diagnostics.skill_rate`);
        without it the replicates hold ``rate`` fixed.

    Returns
    -------
    DataFrame
        As :func:`skill_table`.
    """
    # a reference rate of exactly 0 or 1 is (up to ε) a perfect forecast on these labels:
    # TPS_ref ≈ 0 and the ratio TPS/TPS_ref is meaningless, so skill is left undefined
    degenerate = rate in (0.0, 1.0)
    note = (f"skill undefined: the base rate is {rate:g} (every scored run counts as "
            f"{'a success' if rate == 1.0 else 'a failure'}), so the constant forecast (base rate) is "
            "already perfect" if degenerate else "")
    stats = {}
    for name, (v, r) in values.items():
        ok = ~np.isnan(v) & ~np.isnan(r)
        m = int(ok.sum())
        every = m == ok.size  # (then the runs' values themselves, not copies: millions of runs)
        vo, ro = (v, r) if every else (v[ok], r[ok])
        mp = float(vo.mean()) if m else np.nan
        mr = float(ro.mean()) if m else np.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            sk = 1.0 - mp / mr if m and mr != 0 and not degenerate else np.nan
        units = m if groups is None or not m else (
            int(groups.max()) + 1 if every else int(np.count_nonzero(np.bincount(groups[ok]))))
        boot = n_boot > 0 and units >= 2 and np.isfinite(sk) and np.isfinite(vo).all() and np.isfinite(ro).all()
        stats[name] = (v, ok, m, mp, mr, sk, r, boot)
    boot_names = [k for k, st in stats.items() if st[-1]]
    reps_of = skill_replicates(stats, boot_names, rate, n_boot, seed, groups, None if degenerate else refit)
    rows = []
    a = (1 - level) / 2
    for name in values:
        v, ok, m, mp, mr, sk, _, boot = stats[name]
        se = lo = hi = np.nan
        if boot:
            reps = reps_of[name]
            reps = reps[np.isfinite(reps)]
            if reps.size >= 2:
                se = float(reps.std(ddof=1))
                lo, hi = (float(x) for x in np.quantile(reps, [a, 1 - a]))
        rows.append({"predictor": name, "tps_mean": mp, "tps_ref": mr, "skill": sk,
                     "skill_se": se, "skill_ci_low": lo, "skill_ci_high": hi,
                     "ref_rate": rate, "ref_rule": rule, "n_trajectories": m,
                     "skill_note": note})
    return pd.DataFrame(rows).set_index("predictor")


def leaderboard(data: TrajectoryData, settings: ScoreSettings | None = None,
                predictors: list[str] | None = None, q_z=None, n_bins: int = 10,
                pseudo_labels: bool = False, n_boot: int | None = None,
                seed: int | None = None, metrics: bool = True) -> pd.DataFrame:
    """TPS summary, base-rate reference, skill and the usual metrics, one row per predictor.

    Parameters
    ----------
    data, settings, predictors, q_z
        As in :func:`compute_tps`.
    n_bins, pseudo_labels
        As in :func:`metric_table`.
    n_boot, seed : int, optional
        Bootstrap replicates and seed for every CI (default from ``settings``).
    metrics : bool
        False leaves the metric columns out (faster).

    Returns
    -------
    DataFrame
        The columns of :attr:`TPSResult.summary`, then ``tps_ref``, ``skill`` (+ se/CI),
        ``ref_rate``, ``ref_rule``, then the columns of :func:`metric_table` (with
        ``metric_`` prefixed to its n/labels columns). Sorted by ``tps_mean``, best first.
    """
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    if n_boot is not None or seed is not None:
        settings = replace(settings, n_boot=settings.n_boot if n_boot is None else int(n_boot),
                           seed=settings.seed if seed is None else seed)
    names = list(data.predictors if predictors is None else predictors)
    summary = compute_tps(data, settings, names, q_z=q_z).summary
    sk = skill_table(data, settings, names, q_z=q_z)
    out = summary.join(sk.drop(columns=["tps_mean", "n_trajectories"]))
    if metrics:
        mt = metric_table(data, settings, names, n_bins=n_bins, pseudo_labels=pseudo_labels)
        mt = mt.rename(columns={c: f"metric_{c}" for c in
                                ("n_trajectories", "n_steps", "n_unlabelled", "n_pseudo",
                                 "labels", "n_bins")})
        out = out.join(mt)
    return out.sort_values("tps_mean", ascending=False)
