"""Paired comparisons of predictors on the same runs, and the censoring-mode shift (docs/theory.md §6).

- :func:`compare`: every predictor against a baseline, Δ = predictor − baseline, with its SE
  and Δ/SE. TPS: analytically from the per-run differences TPS_i(A) − TPS_i(B) over the runs
  both were scored on (plus a bootstrap CI, studentized by default); AUROC and T-ECE: paired trajectory
  bootstrap (both predictors evaluated on identical resamples of complete runs).
- :func:`z_matrix`: Δ/SE for all ordered pairs (row − column).
- :func:`censoring_shift`: how mean TPS moves when the scoring population and the censored
  score change, e.g. complete-case → simple, with a bootstrap CI resampling trajectories.

Orientation: a positive ``tps_delta`` or ``auroc_delta`` means the predictor is better than the
baseline; a positive ``tece_delta`` means it is *worse* calibrated (ECE is an error).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from tpsviz.core.cancel import checkpoint
from tpsviz.core.clusters import run_clusters
from tpsviz.diagnostics.leaderboard import labelled_rows, tps_matrix_for
from tpsviz.core.inference import bootstrap_sums, group_sums, paired_difference
from tpsviz.core.data import TrajectoryData
from tpsviz.diagnostics.metric_bootstrap import metric_replicates, paired_metric_difference
from tpsviz.diagnostics.metrics import metric_point
from tpsviz.core.censoring import default_censoring
from tpsviz.core.tps import ScoreSettings, compute_tps

__all__ = ["compare", "z_matrix", "censoring_shift", "COMPARE_METRICS"]

COMPARE_METRICS = ("auroc", "tece")


def _resolve(data: TrajectoryData, settings, n_boot, seed):
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    n_boot = int(settings.n_boot if n_boot is None else n_boot)
    seed = settings.seed if seed is None else seed
    return settings, n_boot, seed


def _matrix_groups(data: TrajectoryData, clusters, index) -> np.ndarray | None:
    """The cluster of every row of a TPS matrix (index: the trajectory ids of the runs in scope, e.g. the
    complete runs alone in complete-case mode), or None when the clusters are the runs."""
    groups = clusters.groups()
    if groups is None:
        return None
    return pd.Series(groups, index=data.trajectories["trajectory_id"].to_numpy()).reindex(index).to_numpy()


def _check_names(data: TrajectoryData, names) -> None:
    unknown = [p for p in names if p not in data.predictors]
    if unknown:
        raise ValueError(f"unknown predictor(s) {', '.join(map(repr, unknown))}; the log has "
                         f"{', '.join(data.predictors)}")


def _row_units(data: TrajectoryData, rows: np.ndarray, groups: np.ndarray | None) -> np.ndarray:
    """The bootstrap unit of each selected step row: its run, or its run's cluster (``groups``)."""
    g = data.steps["traj"].to_numpy()[rows]
    return g if groups is None else groups[g]


def _paired_metric(metric, data, a, b, labelled, y, n_boot, seed, level, n_bins, groups=None):
    """(delta, se, z, ci_low, ci_high, n) of metric(a) − metric(b) on shared labelled rows (bootstrap units:
    runs, or the clusters ``groups`` of the runs; n counts runs)."""
    pa, pb = data.forecasts(a), data.forecasts(b)
    rows = labelled & ~np.isnan(pa) & ~np.isnan(pb)
    n = int(np.unique(data.steps["traj"].to_numpy()[rows]).size)
    g = _row_units(data, rows, groups)
    nan = (np.nan,) * 5
    if n == 0:
        return nan + (0,)
    try:
        if n_boot <= 0 or np.unique(g).size < 2:
            d = (metric_point(metric, pa[rows], y[rows], n_bins, "uniform")
                 - metric_point(metric, pb[rows], y[rows], n_bins, "uniform"))
            return (float(d), np.nan, np.nan, np.nan, np.nan, n)
        r = paired_metric_difference(metric, pa[rows], pb[rows], y[rows], g, n_boot=n_boot,
                                     seed=seed, level=level, n_bins=n_bins)
    except ValueError:  # one outcome class only: the metric is undefined
        return nan + (n,)
    return (r.delta, r.se, r.z, r.ci_low, r.ci_high, n)


def compare(data: TrajectoryData, settings: ScoreSettings | None = None,
            baseline: str | None = None, predictors: list[str] | None = None,
            n_boot: int | None = None, seed: int | None = None, q_z=None,
            n_bins: int = 10, metrics=COMPARE_METRICS, result=None) -> pd.DataFrame:
    """Every predictor against a baseline on the same runs: Δ, SE and Δ/SE.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings, optional
        Scoring settings of TPS (α, β, schedule, censoring, ε, level).
    baseline : str
        The predictor every other one is compared with.
    predictors : list of str, optional
        Predictors to compare (default: every predictor except the baseline).
    n_boot, seed : int, optional
        Replicates and seed of the paired bootstraps (default from ``settings``); with
        ``n_boot=0`` the metric SEs are NaN and the TPS SE is still analytic.
    q_z : array_like or Series, optional
        q_Z estimates for exact mode (as in :func:`compute_tps`).
    n_bins : int
        T-ECE bins (equal width).
    metrics : sequence of {"auroc", "auprc", "tece"}
        Metrics compared by paired bootstrap over complete runs.
    result : TPSResult, optional
        TPS already computed under the same settings for these predictors (reused).

    Returns
    -------
    DataFrame
        Index predictor. ``tps_delta`` = mean_i [TPS_i(pred) − TPS_i(base)] over runs both
        were scored on, ``tps_se`` = sd of the differences / √n, ``tps_z`` = Δ/SE,
        ``tps_ci_low``/``tps_ci_high`` (bootstrap: ``settings.interval``), ``n_runs``; for each metric m:
        ``m_delta``, ``m_se``, ``m_z``, ``m_ci_low``, ``m_ci_high``, ``m_n_trajectories``
        (complete runs where both forecast). The frame's ``attrs`` hold the baseline and ``se``
        (:meth:`tpsviz.core.clusters.Clusters.to_json`): the differences stay paired by run, and
        their SE and bootstraps are clustered by task when ``settings.cluster_by`` clusters the runs.
    """
    settings, n_boot, seed = _resolve(data, settings, n_boot, seed)
    if baseline is None:
        raise ValueError("compare needs a baseline predictor")
    _check_names(data, [baseline])
    names = [p for p in (data.predictors if predictors is None else predictors) if p != baseline]
    _check_names(data, names)
    mat = tps_matrix_for(data, settings, names + [baseline], q_z, result)
    base = mat[baseline].to_numpy(dtype=float)
    labelled, y = labelled_rows(data)
    clusters = run_clusters(data, settings.cluster_by)
    groups, run_groups = clusters.groups(), _matrix_groups(data, clusters, mat.index)
    rows = []
    for name in names:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        col = mat[name].to_numpy(dtype=float)
        both = ~np.isnan(col) & ~np.isnan(base)  # the runs both were scored on (−∞ is a score)
        rec = {"predictor": name}
        if both.any():
            est, z = paired_difference(col[both], base[both], n_boot=n_boot, level=settings.level, seed=seed,
                                       groups=None if run_groups is None else run_groups[both],
                                       interval=settings.interval)
            rec.update(tps_delta=est.mean, tps_se=est.se, tps_z=z, tps_ci_low=est.ci_low,
                       tps_ci_high=est.ci_high)
        else:
            rec.update(tps_delta=np.nan, tps_se=np.nan, tps_z=np.nan, tps_ci_low=np.nan,
                       tps_ci_high=np.nan)
        rec["n_runs"] = int(both.sum())
        for m in metrics:
            vals = _paired_metric(m, data, name, baseline, labelled, y, n_boot, seed,
                                  settings.level, n_bins, groups)
            rec.update(zip((f"{m}_delta", f"{m}_se", f"{m}_z", f"{m}_ci_low", f"{m}_ci_high",
                            f"{m}_n_trajectories"), vals))
        rows.append(rec)
    cols = ["tps_delta", "tps_se", "tps_z", "tps_ci_low", "tps_ci_high", "n_runs"]
    for m in metrics:
        cols += [f"{m}_delta", f"{m}_se", f"{m}_z", f"{m}_ci_low", f"{m}_ci_high",
                 f"{m}_n_trajectories"]
    out = pd.DataFrame(rows, columns=["predictor"] + cols).set_index("predictor")
    out.attrs.update(baseline=baseline, se=clusters.to_json())
    return out


def z_matrix(data: TrajectoryData, settings: ScoreSettings | None = None,
             predictors: list[str] | None = None, metric: str = "tps",
             n_boot: int | None = None, seed: int | None = None, q_z=None,
             n_bins: int = 10, result=None) -> pd.DataFrame:
    """Δ/SE of every ordered pair of predictors (entry [a, b] is for a − b).

    Parameters
    ----------
    data, settings, predictors, q_z
        As in :func:`compare`.
    metric : {"tps", "auroc", "auprc", "tece"}
        TPS: analytic SE of the per-run differences over the runs both were scored on.
        Rank/binned metrics: one paired trajectory bootstrap of all predictors at once, on the
        complete runs' rows where *every* listed predictor has a forecast.
    n_boot, seed : int, optional
        Bootstrap replicates and seed for the metrics.
    result : TPSResult, optional
        TPS already computed under the same settings (reused for ``metric="tps"``).

    Returns
    -------
    DataFrame
        Square, antisymmetric; the diagonal is NaN. SEs and bootstraps are clustered by task as in
        :func:`compare`.
    """
    settings, n_boot, seed = _resolve(data, settings, n_boot, seed)
    names = list(data.predictors if predictors is None else predictors)
    _check_names(data, names)
    k = len(names)
    z = np.full((k, k), np.nan)
    clusters = run_clusters(data, settings.cluster_by)
    groups = clusters.groups()
    if metric == "tps":
        # the runs both were scored on (a NaN is a run left out; −∞ is a score), by numpy masks: a
        # frame's dropna() per pair cost 15 times more on the demo
        frame = tps_matrix_for(data, settings, names, q_z, result)
        mat, run_groups = frame.to_numpy(dtype=float), _matrix_groups(data, clusters, frame.index)
        scored = ~np.isnan(mat)
        for i in range(k):
            for j in range(i + 1, k):
                rows = scored[:, i] & scored[:, j]
                if rows.sum() >= 2:
                    _, zz = paired_difference(mat[rows, i], mat[rows, j], n_boot=0,
                                              groups=None if run_groups is None else run_groups[rows])
                    z[i, j], z[j, i] = zz, -zz
    else:
        labelled, y = labelled_rows(data)
        rows = labelled.copy()
        for name in names:
            rows &= ~np.isnan(data.forecasts(name))
        if rows.any() and n_boot > 0:
            g = _row_units(data, rows, groups)
            ps = [data.forecasts(name)[rows] for name in names]
            try:
                points = np.array([metric_point(metric, p, y[rows], n_bins, "uniform") for p in ps])
                reps = metric_replicates(metric, ps, y[rows], g, n_boot, seed, n_bins)
            except ValueError:
                points = None
            if points is not None:
                for i in range(k):
                    for j in range(i + 1, k):
                        d = reps[i] - reps[j]
                        d = d[np.isfinite(d)]
                        se = d.std(ddof=1) if d.size >= 2 else np.nan
                        if np.isfinite(se) and se > 1e-12:
                            z[i, j] = (points[i] - points[j]) / se
                            z[j, i] = -z[i, j]
    return pd.DataFrame(z, index=pd.Index(names, name="predictor"), columns=names)


def censoring_shift(data: TrajectoryData, settings: ScoreSettings | None = None,
                    predictors: list[str] | None = None, from_mode: str = "complete",
                    to_mode: str = "simple", q_z=None, n_boot: int | None = None,
                    seed: int | None = None) -> pd.DataFrame:
    """Shift of mean TPS between two censoring modes, with a trajectory-bootstrap CI (tasks resampled
    when ``settings.cluster_by`` clusters the runs; ``attrs["se"]`` says which).

    shift = mean TPS(to_mode, over its runs) − mean TPS(from_mode, over its runs). The two
    means may run over different populations (complete-case drops the censored runs), so
    the CI comes from resampling trajectories of the whole log: in each replicate both means
    are recomputed over the resampled runs each mode scores (ratio estimators with the
    resampling counts as weights).

    Two scales are reported, because they can disagree in sign when censored runs are much
    longer than complete ones: ``shift`` per trajectory (TPS sums over steps, so long
    censored runs weigh heavily) and ``shift_step`` on the pooled per-step scale
    (Σ TPS_i / Σ_i Σ_t w_t, the display normalisation of ``tps_step_mean``).

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings, optional
        α, β, schedule, ε, level; its censoring mode is ignored (the two modes are given).
    predictors : list of str, optional
    from_mode, to_mode : str
        Censoring modes (see :data:`tpsviz.core.tps.CENSORING_MODES`).
    q_z : optional
        q_Z for exact mode.
    n_boot, seed : int, optional
        Bootstrap replicates and seed (default from ``settings``).

    Returns
    -------
    DataFrame
        Index predictor; ``tps_from``, ``tps_to``, ``shift``, ``shift_se``, ``shift_ci_low``,
        ``shift_ci_high``, ``step_from``, ``step_to``, ``shift_step``, ``shift_step_se``,
        ``shift_step_ci_low``, ``shift_step_ci_high``, ``n_from``, ``n_to`` (runs scored).
    """
    settings, n_boot, seed = _resolve(data, settings, n_boot, seed)
    names = list(data.predictors if predictors is None else predictors)
    _check_names(data, names)
    ids = data.trajectories["trajectory_id"]
    clusters = run_clusters(data, settings.cluster_by)
    res = {}
    for mode in (from_mode, to_mode):
        r = compute_tps(data, replace(settings, censoring=mode, n_boot=0), names, q_z=q_z)
        pt = r.per_trajectory
        # reindexed to every run and every predictor: one that scored no run is all NaN
        res[mode] = tuple(pt.pivot(index="trajectory_id", columns="predictor", values=v)
                          .reindex(index=ids, columns=names) for v in ("tps", "weight_sum"))
    rows = []
    for name in names:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        v_f, w_f = (x[name].to_numpy(dtype=float) for x in res[from_mode])
        v_t, w_t = (x[name].to_numpy(dtype=float) for x in res[to_mode])
        rows.append({"predictor": name} | _shift(v_f, w_f, v_t, w_t, n_boot, seed, settings.level,
                                                 clusters.groups()))
    cols = ["tps_from", "tps_to", "shift", "shift_se", "shift_ci_low", "shift_ci_high",
            "step_from", "step_to", "shift_step", "shift_step_se", "shift_step_ci_low",
            "shift_step_ci_high", "n_from", "n_to"]
    out = pd.DataFrame(rows).set_index("predictor")[cols]
    out.attrs.update(from_mode=from_mode, to_mode=to_mode, se=clusters.to_json())
    return out


def _shift(v_f, w_f, v_t, w_t, n_boot: int, seed: int, level: float, groups: np.ndarray | None = None) -> dict:
    """One predictor's shift from one censoring mode to another, per trajectory and per step, with
    bootstrap SEs and percentile CIs (runs of the whole log resampled, or their clusters ``groups``
    with all their runs; ratio estimators).

    ``v_*`` are TPS_i and ``w_*`` the weight sums Σ_t w_t of every run under each mode (NaN: the mode
    does not score the run).
    """
    ok_f, ok_t = ~np.isnan(v_f), ~np.isnan(v_t)
    vf, vt = np.where(ok_f, v_f, 0.0), np.where(ok_t, v_t, 0.0)
    wf, wt = np.where(ok_f, w_f, 0.0), np.where(ok_t, w_t, 0.0)
    mf, mt = ok_f.astype(float), ok_t.astype(float)
    rec = {"tps_from": vf.sum() / mf.sum() if mf.sum() else np.nan,
           "tps_to": vt.sum() / mt.sum() if mt.sum() else np.nan,
           "step_from": vf.sum() / wf.sum() if wf.sum() else np.nan,
           "step_to": vt.sum() / wt.sum() if wt.sum() else np.nan,
           "n_from": int(ok_f.sum()), "n_to": int(ok_t.sum())}
    rec["shift"] = rec["tps_to"] - rec["tps_from"]
    rec["shift_step"] = rec["step_to"] - rec["step_from"]
    for key in ("shift", "shift_step"):
        rec.update({f"{key}_se": np.nan, f"{key}_ci_low": np.nan, f"{key}_ci_high": np.nan})
    finite = np.isfinite(vf).all() and np.isfinite(vt).all()
    units = vf.size if groups is None else int(groups.max()) + 1 if groups.size else 0
    if n_boot > 0 and units >= 2 and finite and np.isfinite(rec["shift"]):
        x = np.column_stack([vt, mt, vf, mf, wt, wf])
        s = bootstrap_sums(x if groups is None else group_sums(x, groups), n_boot, seed)
        with np.errstate(invalid="ignore", divide="ignore"):
            r1 = s[:, 0] / s[:, 1] - s[:, 2] / s[:, 3]
            r2 = s[:, 0] / s[:, 4] - s[:, 2] / s[:, 5]
        a = (1 - level) / 2
        for key, reps in (("shift", r1), ("shift_step", r2)):
            reps = reps[np.isfinite(reps)]
            if reps.size >= 2:
                lo, hi = np.quantile(reps, [a, 1 - a])
                rec.update({f"{key}_se": float(reps.std(ddof=1)), f"{key}_ci_low": float(lo),
                            f"{key}_ci_high": float(hi)})
    return rec
