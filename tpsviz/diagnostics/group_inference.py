"""The difference between two groups of runs, group b − group a of mean TPS and of skill (docs/theory.md §7).

The caller (:func:`tpsviz.diagnostics.groups.group_difference`) scores each group's runs; here are
the two ways to compare them, each returning one row of numbers per predictor:

- :func:`difference_unpaired`: different runs, independent samples: SE = √(se_a² + se_b²), the skill
  difference from two independent trajectory bootstraps; each group's SE and bootstrap clustered by
  task when its runs repeat tasks (docs/theory.md §6.1);
- :func:`difference_by_task`: paired by task: per task the mean TPS_i of each group's runs, then
  differences over the tasks in both groups, with one bootstrap resampling tasks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.inference import (bootstrap_sums, group_sums, mean_se, moment_columns, replicate_means,
                                   studentized_interval)
from tpsviz.diagnostics.metric_bootstrap import replicate_summary

__all__ = ["difference_unpaired", "difference_by_task", "DIFF_COLUMNS"]

#: the columns of a difference row, in order
DIFF_COLUMNS = ["tps_a", "tps_b", "tps_delta", "tps_se", "tps_z", "tps_ci_low", "tps_ci_high",
                 "skill_a", "skill_b", "skill_delta", "skill_se", "skill_z", "skill_ci_low",
                 "skill_ci_high", "paired", "n_pairs", "n_a", "n_b", "n_left_out", "n_no_task"]


def _z(delta: float, se: float) -> float:
    """Δ/SE; NaN when SE is undefined, 0 or at rounding level (as paired_difference)."""
    tiny = 1e-12 * max(1.0, abs(delta)) if np.isfinite(delta) else np.inf
    return float(delta / se) if np.isfinite(se) and se > tiny else np.nan


def _skill(tps_sum: float, ref_sum: float, degenerate: bool) -> float:
    """skill = 1 − ΣTPS/ΣTPS_ref (NaN when the reference is degenerate or sums to 0)."""
    return 1.0 - tps_sum / ref_sum if not degenerate and ref_sum != 0 else np.nan


def _group_side(v: np.ndarray, r: np.ndarray, degenerate: bool, n_boot: int, seed: int,
                groups: np.ndarray | None = None):
    """Mean TPS, its SE, skill and their bootstrap replicates for one group's runs (by run, or by the
    clusters ``groups``, codes 0 … K−1 of the group's runs)."""
    vok = ~np.isnan(v)
    ok = vok & ~np.isnan(r)
    n = int(vok.sum())
    mean = float(v[vok].mean()) if n else np.nan
    se = mean_se(v[vok], None if groups is None else groups[vok]) if n >= 2 else np.nan
    skill = _skill(float(v[ok].sum()), float(r[ok].sum()), degenerate) if ok.any() else np.nan
    reps = (np.full(max(n_boot, 0), np.nan),) * 2
    se_reps = np.full(max(n_boot, 0), np.nan)
    cols = np.column_stack([np.where(vok, v, 0.0), vok, np.where(ok, v, 0.0), np.where(ok, r, 0.0)])
    units = n if groups is None else np.unique(groups[vok]).size
    if n_boot > 0 and units >= 2 and np.isfinite(cols).all():
        per_unit = cols if groups is None else group_sums(cols, groups)
        # the mean's five moment sums (its studentized interval) and the skill's two sums, one set of replicates
        s = bootstrap_sums(np.hstack([moment_columns(per_unit[:, 0], per_unit[:, 1], mean), per_unit[:, 2:]]),
                           n_boot, seed)
        mean_reps, se_reps = replicate_means(s[:, :5], int(units), mean)
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = (mean_reps, np.full(n_boot, np.nan) if np.isnan(skill) else 1.0 - s[:, 5] / s[:, 6])
    return {"tps": mean, "se": se, "skill": skill, "n": n, "reps": reps, "se_reps": se_reps}


def _difference(side_a: dict, side_b: dict, tps_se: float, level: float) -> dict:
    """Δ = b − a of mean TPS and skill with SE, z and CI from the replicates: the TPS interval studentized
    where both sides carry their replicates' SEs (``se_reps``: t* = (Δ* − Δ)/√(se_a*² + se_b*²)), else
    percentile; the skill's percentile."""
    d_tps = side_b["tps"] - side_a["tps"]
    d_skill = side_b["skill"] - side_a["skill"]
    d_reps = side_b["reps"][0] - side_a["reps"][0]
    if "se_reps" in side_a and "se_reps" in side_b:
        t_lo, t_hi = studentized_interval(d_tps, tps_se, d_reps, np.hypot(side_a["se_reps"], side_b["se_reps"]),
                                          level)
    else:
        _, t_lo, t_hi = replicate_summary(d_reps, level)
    s_se, s_lo, s_hi = replicate_summary(side_b["reps"][1] - side_a["reps"][1], level)
    return {"tps_a": side_a["tps"], "tps_b": side_b["tps"], "tps_delta": d_tps,
            "tps_se": tps_se, "tps_z": _z(d_tps, tps_se), "tps_ci_low": t_lo,
            "tps_ci_high": t_hi, "skill_a": side_a["skill"], "skill_b": side_b["skill"],
            "skill_delta": d_skill, "skill_se": s_se, "skill_z": _z(d_skill, s_se),
            "skill_ci_low": s_lo, "skill_ci_high": s_hi}


def difference_unpaired(va, ra, deg_a, vb, rb, deg_b, n_boot: int, seeds, level: float,
                        groups=(None, None)) -> dict:
    """Group b − group a over different runs (independent samples): SE = √(se_a² + se_b²); the skill
    difference from two independent trajectory bootstraps. With ``groups``, each group's se is
    clustered (:func:`tpsviz.core.inference.mean_se`) and its bootstrap resamples whole clusters.

    Parameters
    ----------
    va, vb : ndarray
        TPS_i of every run of group a and b (NaN: not scored).
    ra, rb : ndarray
        TPS_ref,i of the group's own base-rate reference on the same runs.
    deg_a, deg_b : bool
        Whether the group's reference is degenerate (rate 0 or 1: no skill).
    n_boot : int
        Bootstrap replicates (0: no intervals, no skill SE).
    seeds : tuple of int
        The seed of each group's bootstrap.
    level : float
        Confidence level of the intervals.
    groups : tuple of (ndarray of int or None)
        The cluster of every run of group a and of group b (codes 0 … K−1 within the group;
        :meth:`tpsviz.core.clusters.Clusters.of`), or None: by run.

    Returns
    -------
    dict
        One row of :data:`DIFF_COLUMNS`.
    """
    side_a = _group_side(va, ra, deg_a, n_boot, seeds[0], groups[0])
    side_b = _group_side(vb, rb, deg_b, n_boot, seeds[1], groups[1])
    rec = _difference(side_a, side_b, float(np.hypot(side_a["se"], side_b["se"])), level)
    return rec | {"paired": False, "n_pairs": 0, "n_a": side_a["n"], "n_b": side_b["n"],
                  "n_left_out": 0, "n_no_task": 0}


def _task_means(v, r, tasks) -> tuple[pd.DataFrame, int]:
    """Per task: mean TPS_i and mean TPS_ref,i of the scored runs; and runs without a task."""
    vok = ~np.isnan(v)
    has = np.array([t is not None for t in tasks], dtype=bool)
    frame = pd.DataFrame({"task": tasks[vok & has], "v": v[vok & has], "r": r[vok & has],
                          "runs": 1})
    means = frame.groupby("task").agg(v=("v", "mean"), r=("r", "mean"), runs=("runs", "sum"))
    return means, int((vok & ~has).sum())


def difference_by_task(va, ra, deg_a, tasks_a, vb, rb, deg_b, tasks_b, n_boot, seed, level) -> dict:
    """Group b − group a paired by task: d_k = mean_b,k − mean_a,k over the K tasks in both groups;
    SE = sd(d)/√K; intervals and the skill SE from one bootstrap resampling tasks.

    Parameters
    ----------
    va, ra, deg_a, vb, rb, deg_b, n_boot, level
        As in :func:`difference_unpaired`.
    tasks_a, tasks_b : ndarray of object
        The task of every run of each group (None: no task; such runs are left out and counted).
    seed : int
        Seed of the one bootstrap (it draws the same tasks for both groups).

    Returns
    -------
    dict
        One row of :data:`DIFF_COLUMNS`.
    """
    ma, miss_a = _task_means(va, ra, tasks_a)
    mb, miss_b = _task_means(vb, rb, tasks_b)
    common = ma.index.intersection(mb.index).sort_values()
    ma, mb, k = ma.loc[common], mb.loc[common], len(common)
    d = (mb["v"] - ma["v"]).to_numpy()
    se = float(d.std(ddof=1) / np.sqrt(k)) if k >= 2 else np.nan
    sides = []
    for m, deg in ((ma, deg_a), (mb, deg_b)):
        v, r = m["v"].to_numpy(), m["r"].to_numpy()
        sides.append({"tps": float(v.mean()) if k else np.nan,
                      "skill": _skill(float(v.sum()), float(r.sum()), deg) if k else np.nan,
                      "reps": (np.full(max(n_boot, 0), np.nan),) * 2, "v": v, "r": r})
    cols = np.column_stack([s[x] for s in sides for x in ("v", "r")])
    if n_boot > 0 and k >= 2 and np.isfinite(cols).all():
        s = bootstrap_sums(cols, n_boot, seed)  # the same tasks drawn for both groups
        with np.errstate(invalid="ignore", divide="ignore"):
            for j, side in enumerate(sides):
                skill_reps = 1.0 - s[:, 2 * j] / s[:, 2 * j + 1]
                side["reps"] = (s[:, 2 * j] / k,
                                skill_reps + (np.nan if np.isnan(side["skill"]) else 0.0))
    rec = _difference(sides[0], sides[1], se, level)
    n_a, n_b = int(ma["runs"].sum()), int(mb["runs"].sum())
    scored = int((~np.isnan(va)).sum() + (~np.isnan(vb)).sum())
    return rec | {"paired": True, "n_pairs": k, "n_a": n_a, "n_b": n_b,
                  "n_left_out": scored - n_a - n_b - miss_a - miss_b, "n_no_task": miss_a + miss_b}
