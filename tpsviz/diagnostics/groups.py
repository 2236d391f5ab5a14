"""Model X vs model Y: TPS and skill by group of runs, and the difference between two groups
(docs/theory.md §7).

A *group* is the set of runs sharing a value of a trajectory-level metadata column (model,
agent, prompt, task family) or, after :func:`combine_logs`, the log a run came from.

- :func:`group_table`: the leaderboard split by group: mean TPS_i with SE and CI, and
  skill = 1 − TPS/TPS_ref against each group's *own* base-rate reference.
- :func:`group_difference`: group b − group a (candidate − baseline) of mean TPS and of skill,
  with SE, z = Δ/SE and a CI; unpaired across different runs, or paired by task when the same
  tasks appear in both groups.
- :func:`tpsviz.diagnostics.combine.combine_logs`: a baseline log and a candidate log as one log
  with a column naming the log of each run, so that the two functions above compare them.

The arithmetic of a difference (unpaired or paired by task) is :mod:`tpsviz.diagnostics.group_inference`.

Scores are rewards (higher is better, 0 is perfect, nats for the log score); a positive Δ means
group b is better than group a. The unit of inference is the trajectory (or, paired, the task).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from tpsviz.core.cancel import checkpoint
from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import SettingError
from tpsviz.core.schema import clean_text, show_id
from tpsviz.core.wording import setting
from tpsviz.core.censoring import default_censoring
from tpsviz.core.clusters import TASK_COLUMNS, Clusters, run_clusters, task_column, text_values
from tpsviz.core.tps import ScoreSettings, compute_tps, no_predictor_message
from tpsviz.diagnostics.claims import is_clear, z_text
from tpsviz.diagnostics.group_inference import DIFF_COLUMNS, difference_by_task, difference_unpaired
from tpsviz.diagnostics.leaderboard import base_rate_reference, skill_table

__all__ = ["group_columns", "group_labels", "group_order", "group_table", "group_difference", "default_base", "why_missing",
           "difference_words", "MISSING_LABEL", "MAX_GROUPS", "AUTO_MIN_TASKS", "TASK_COLUMNS"]

#: the group of the runs whose grouping value is missing (NaN, None or blank text)
MISSING_LABEL = "(missing)"
#: most groups a column may have
MAX_GROUPS = 50
#: ``pair_on="auto"`` pairs by task only when at least this many tasks appear in both groups
AUTO_MIN_TASKS = 10
_LABEL_CHARS = 60
_TABLE_COLUMNS = ["n_runs", "n_complete", "n_censored", "success_rate", "n_scored", "tps_mean",
                  "tps_se", "tps_ci_low", "tps_ci_high", "tps_ref", "skill", "skill_se",
                  "skill_ci_low", "skill_ci_high", "ref_rate", "skill_note", "seed"]


# --------------------------------------------------------------------------- group labels
def _meta_column(data: TrajectoryData, column, role: str) -> None:
    """Refuse a column that is not trajectory-level metadata (naming the ones there are)."""
    if column in data.metadata_columns:
        return
    if column in data.step_metadata_columns:
        raise ValueError(f"{role} column {show_id(column)} changes within runs (step-level); "
                         "use a column that is constant within each run")
    cols = data.metadata_columns
    have = (", ".join(show_id(c) for c in cols[:20]) + (f" and {len(cols) - 20} more"
                                                         if len(cols) > 20 else "")
            if cols else "none")
    raise ValueError(f"unknown {role} column {show_id(column)}; the log's trajectory-level "
                     f"metadata columns are: {have}")


def group_labels(data: TrajectoryData, by: str) -> pd.Series:
    """The group label of every run: the cleaned text of its value in column ``by``.

    Values are compared as text (``str``), so 3 and "3" are one group. The label is that text
    with control characters removed and cut to 60 characters (:func:`tpsviz.core.schema.clean_text`);
    values whose labels would coincide get " #2", " #3", … so that distinct values stay
    distinct groups. A missing value (NaN, None, blank text) is the group ``"(missing)"``.

    Returns
    -------
    Series
        One label per trajectory, in code order (index = trajectory code).

    Raises
    ------
    ValueError
        If ``by`` is not a trajectory-level metadata column.
    """
    _meta_column(data, by, "grouping")
    text = text_values(data.trajectories[by])
    taken = {MISSING_LABEL}
    label_of = {}
    for value in sorted({t for t in text if t is not None}):
        base = clean_text(value, _LABEL_CHARS) or "(blank)"
        label, k = base, 1
        while label in taken:
            k += 1
            label = f"{base} #{k}"
        taken.add(label)
        label_of[value] = label
    return pd.Series([MISSING_LABEL if t is None else label_of[t] for t in text], dtype=object)


def group_order(labels: pd.Series, by: str) -> list[str]:
    """The groups of :func:`group_labels`' labels, sorted (``"(missing)"`` last).

    Raises
    ------
    ValueError
        With one group only, or more than :data:`MAX_GROUPS`.
    """
    groups = sorted(set(labels) - {MISSING_LABEL}) + (
        [MISSING_LABEL] if (labels == MISSING_LABEL).any() else [])
    if len(groups) == 1:
        raise ValueError(f"column {show_id(by)} has a single group ({show_id(groups[0])}) over "
                         "all runs; a comparison needs at least two groups")
    if len(groups) > MAX_GROUPS:
        raise ValueError(f"column {show_id(by)} has {len(groups)} groups; at most {MAX_GROUPS} "
                         "can be compared (group by a coarser column or filter the log first)")
    return groups


def _resolve(data: TrajectoryData, settings, predictors, n_boot, seed, by: str):
    """Settings decided on the whole log (so every group is scored alike), the predictors, and the
    clusters of the whole log (``settings.cluster_by`` then names their column, or ``"run"``, so that
    every group's SE has the same unit)."""
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    settings = replace(settings, n_boot=settings.n_boot if n_boot is None else int(n_boot),
                       seed=settings.seed if seed is None else int(seed))
    if settings.cluster_by == by:
        raise SettingError(f"{setting('cluster_by')} {show_id(by)} is the grouping column; within a group it has "
                           "one value, so it cannot be the task: choose another column, 'auto' or 'run'")
    clusters = run_clusters(data, settings.cluster_by, exclude=(by,))
    settings = replace(settings, cluster_by=clusters.column or "run")
    if not data.predictors:
        raise ValueError(no_predictor_message(data))
    names = list(data.predictors if predictors is None else predictors)
    unknown = [p for p in names if p not in data.predictors]
    if unknown or not names:
        raise ValueError(f"unknown predictor(s) {', '.join(show_id(p) for p in unknown)}; "
                         f"the log has {', '.join(show_id(p) for p in data.predictors)}"
                         if unknown else "no predictor to score: the list of predictors is empty")
    return settings, names, clusters


def _subset_qz(q_z, keep: np.ndarray):
    """q_Z for a subset: a Series (by trajectory id) as it is, an array restricted to ``keep``."""
    if q_z is None or isinstance(q_z, pd.Series):
        return q_z
    arr = np.asarray(q_z, dtype=float)
    if arr.shape != keep.shape:
        raise ValueError("q_z must have one value per trajectory (or be a Series indexed by "
                         "trajectory_id)")
    return arr[keep]


def _in_scope(sub: TrajectoryData, settings: ScoreSettings) -> bool:
    """Whether the group has a run to score (complete-case scores no censored run)."""
    return settings.censoring != "complete" or not bool(sub.trajectories["censored"].all())


# --------------------------------------------------------------------------- group table
def _group_rows(sub: TrajectoryData, settings: ScoreSettings, names: list[str], q_z) -> pd.DataFrame:
    """TPS summary and skill of every predictor on one group's runs (own reference)."""
    tps = compute_tps(sub, settings, names, q_z=q_z)
    out = tps.summary[["tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "n_trajectories"]]
    out = out.rename(columns={"n_trajectories": "n_scored"})
    if _in_scope(sub, settings):
        sk = skill_table(sub, settings, names, q_z=q_z, result=tps)
        out = out.join(sk[["tps_ref", "skill", "skill_se", "skill_ci_low", "skill_ci_high",
                           "ref_rate", "skill_note"]])
    else:
        out = out.assign(tps_ref=np.nan, skill=np.nan, skill_se=np.nan, skill_ci_low=np.nan,
                         skill_ci_high=np.nan, ref_rate=np.nan,
                         skill_note="skill undefined: every run of this group is censored and "
                                    "complete-case scores none")
    t = sub.trajectories
    done = t.loc[~t["censored"], "outcome"]
    return out.assign(n_runs=len(t), n_complete=len(done), n_censored=int(t["censored"].sum()),
                      success_rate=float(done.mean()) if len(done) else np.nan,
                      seed=settings.seed)


def group_table(data: TrajectoryData, by: str, settings: ScoreSettings | None = None,
                predictors: list[str] | None = None, q_z=None, n_boot: int | None = None,
                seed: int | None = None, min_runs: int = 2) -> pd.DataFrame:
    """The leaderboard split by the groups of a metadata column.

    Every group g is scored on its own runs (:meth:`TrajectoryData.subset`) with the same
    settings: mean TPS_i over its runs with SE = sd/√n_g and a percentile CI resampling its
    runs, and skill_g = 1 − TPS_g / TPS_ref,g (:func:`tpsviz.diagnostics.leaderboard.skill_table`).

    The reference of each group is the constant forecast equal to *that group's own* success
    rate (scored under the same settings), not the rate of the whole log: TPS_ref,g is what a
    forecaster knowing only group g's success rate would get, so skill_g measures what the
    forecasts add beyond that rate. Against a common reference, a model that succeeds more
    often would look more honest only because its outcomes are easier to forecast.

    Parameters
    ----------
    data : TrajectoryData
    by : str
        A trajectory-level metadata column (``data.metadata_columns``). Missing values (NaN,
        None, blank text) form their own group ``"(missing)"``, so no run is dropped.
    settings : ScoreSettings, optional
        As in :func:`tpsviz.compute_tps`; the default censoring mode is decided on the whole
        log (:func:`tpsviz.core.tps.default_censoring`), the same for every group.
    predictors : list of str, optional
        Default: every predictor.
    q_z : array_like or Series, optional
        q_Z for exact mode: one value per run of ``data`` or a Series by trajectory id.
    n_boot, seed : int, optional
        Bootstrap replicates and seed (default from ``settings``). Group number k (in the
        table's order, counting every group) is resampled with seed + k, so that two groups
        never share replicates; :func:`group_difference` uses the same seeds.
    min_runs : int
        Groups with fewer runs are left out of the table and listed, with their run counts, in
        ``attrs["small_groups"]`` (default 2: one run has no SE).

    Returns
    -------
    DataFrame
        Index (``group``, ``predictor``). Columns: ``n_runs`` (runs in the group),
        ``n_complete``, ``n_censored``, ``success_rate`` (mean Y over the group's complete
        runs), ``n_scored`` (runs scored for this predictor), ``tps_mean``, ``tps_se``,
        ``tps_ci_low``, ``tps_ci_high``, ``tps_ref``, ``skill``, ``skill_se``,
        ``skill_ci_low``, ``skill_ci_high``, ``ref_rate`` (the group's own rate),
        ``skill_note`` (why skill is undefined, or ""), ``seed``. ``attrs``: ``by``,
        ``groups`` (every group and its run count), ``small_groups``, ``settings``.

    Raises
    ------
    ValueError
        Unknown or step-level column, a column with one group only, more than
        :data:`MAX_GROUPS` groups, or no group with ``min_runs`` runs.
    """
    settings, names, clusters = _resolve(data, settings, predictors, n_boot, seed, by)
    labels = group_labels(data, by)
    groups = group_order(labels, by)
    counts = {g: int((labels == g).sum()) for g in groups}
    small = {g: n for g, n in counts.items() if n < min_runs}
    if len(small) == len(groups):
        raise ValueError(f"no group of column {show_id(by)} has {min_runs} runs or more")
    frames = []
    for k, g in enumerate(groups):
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        if g in small:
            continue
        keep = (labels == g).to_numpy()
        rows = _group_rows(data.subset(keep), replace(settings, seed=settings.seed + k), names,
                           _subset_qz(q_z, keep))
        frames.append(rows.assign(group=g).reset_index())
    out = pd.concat(frames, ignore_index=True).set_index(["group", "predictor"])[_TABLE_COLUMNS]
    out.attrs.update(by=by, groups=counts, small_groups=small, settings=settings.describe(),
                     se=clusters.to_json())
    return out


# --------------------------------------------------------------------------- two groups
def _pairing(data: TrajectoryData, labels: pd.Series, by: str, a: str, b: str, pair_on):
    """The task column to pair on (or None) and a sentence saying which was used and why."""
    if pair_on is None or (isinstance(pair_on, str) and pair_on.lower() == "none"):
        return None, "unpaired: different runs, independent samples (pair_on not given)"
    auto = isinstance(pair_on, str) and pair_on == "auto"
    if auto:
        pair_on = task_column(data, exclude=(by,))
        if pair_on is None:
            return None, f"unpaired: no task column ({', '.join(TASK_COLUMNS)}) to pair on"
    _meta_column(data, pair_on, "pairing")
    if pair_on == by:
        raise ValueError("pair_on must differ from the grouping column")
    tasks = text_values(data.trajectories[pair_on])
    common = len(set(tasks[(labels == a).to_numpy()]) & set(tasks[(labels == b).to_numpy()])
                 - {None})
    need = AUTO_MIN_TASKS if auto else 2
    if common < need:
        if auto:
            return None, (f"unpaired: only {common} task(s) of column {show_id(pair_on)} appear "
                          f"in both groups (pairing needs {AUTO_MIN_TASKS})")
        raise ValueError(f"only {common} task(s) of column {show_id(pair_on)} appear in both "
                         "groups; pairing needs at least 2 (pair_on=None compares unpaired)")
    return pair_on, (f"paired by task (column {show_id(pair_on)}): per task the mean TPS_i of "
                     f"each group's runs, then differences over the {common} tasks in both groups")


def _run_values(data: TrajectoryData, keep: np.ndarray, settings: ScoreSettings,
                names: list[str], q_z):
    """One group's TPS_i per predictor (trajectory × predictor, NaN = not scored), TPS_ref,i of
    its own base-rate reference and whether that reference is degenerate (rate 0 or 1)."""
    sub = data.subset(keep)
    qz = _subset_qz(q_z, keep)
    quiet = replace(settings, n_boot=0)
    ids = sub.trajectories["trajectory_id"]
    mat = compute_tps(sub, quiet, names, q_z=qz).tps_matrix().reindex(ids)
    if not _in_scope(sub, settings):
        return mat, np.full(len(ids), np.nan), True
    ref = base_rate_reference(sub, quiet, qz)
    return mat, ref.per_trajectory.to_numpy(dtype=float), ref.rate in (0.0, 1.0)



def _check_group(groups: list[str], label, role: str) -> None:
    if label not in groups:
        shown = ", ".join(show_id(g) for g in groups[:10]) + (
            f" and {len(groups) - 10} more" if len(groups) > 10 else "")
        raise ValueError(f"group {role} {show_id(label)} is not a group of this column; the "
                         f"groups are: {shown}")


def group_difference(data: TrajectoryData, by: str, a: str, b: str,
                     settings: ScoreSettings | None = None, predictors: list[str] | None = None,
                     q_z=None, pair_on: str | None = None, n_boot: int | None = None,
                     seed: int | None = None) -> pd.DataFrame:
    """Group b − group a (candidate − baseline) of mean TPS and of skill, per predictor.

    Unpaired (``pair_on=None``, different runs): Δ TPS = mean_b − mean_a of TPS_i with
    SE = √(se_a² + se_b²) (independent samples, se_g = sd_g/√n_g); Δ skill = skill_b − skill_a
    with skill_g = 1 − Σ_i TPS_i / Σ_i TPS_ref,i over group g's runs against its own base-rate
    reference (see :func:`group_table` for why), its SE the sd of the differences of two
    independent trajectory bootstraps (runs resampled within each group, seeds as in
    :func:`group_table`). The CIs are percentiles of those replicate differences. Where runs
    repeat tasks (``settings.cluster_by``, :func:`tpsviz.core.clusters.run_clusters`; a
    ``pair_on`` column when ``cluster_by`` is ``"auto"``), se_g is clustered by task and each
    bootstrap resamples the group's tasks with all their runs (docs/theory.md §6.1).

    Paired by task (``pair_on`` names a task column): per task k and group g, the mean
    TPS_i (and TPS_ref,i) of the group's scored runs on that task; d_k = mean_b,k − mean_a,k
    over the K tasks present in both groups; Δ TPS = mean_k d_k, SE = sd(d)/√K; skill_g =
    1 − Σ_k mean_g,k / Σ_k ref_g,k; CIs and the skill SE from one bootstrap resampling tasks
    (the same tasks for both groups, seed as given). Each task weighs the same, whatever its number of runs.
    Runs whose task appears in one group only, or have no task, are left out and counted.

    Parameters
    ----------
    data : TrajectoryData
    by : str
        Grouping column, as in :func:`group_table`.
    a, b : str
        Group labels (as in :func:`group_labels`): a is the baseline, b the candidate.
    settings, predictors, q_z, n_boot, seed
        As in :func:`group_table`.
    pair_on : str, optional
        None: unpaired. A metadata column (e.g. a task id): paired by task; at least 2 tasks
        must appear in both groups. ``"auto"``: the log's task column
        (:func:`tpsviz.core.clusters.task_column`: the one its reader recorded, else task,
        task_id or task_name, any case) when at least :data:`AUTO_MIN_TASKS` tasks appear in
        both groups, else unpaired. ``attrs["pairing"]`` says which was used and why.

    Returns
    -------
    DataFrame
        Index predictor. ``tps_a``, ``tps_b`` (the means compared), ``tps_delta``, ``tps_se``,
        ``tps_z`` = Δ/SE, ``tps_ci_low``, ``tps_ci_high``; the same for skill (``skill_a`` …
        ``skill_ci_high``); ``paired``; ``n_pairs`` (tasks paired, 0 unpaired), ``n_a``,
        ``n_b`` (scored runs used), ``n_left_out`` (scored runs whose task is in one group
        only), ``n_no_task`` (scored runs without a task). ``attrs``: ``by``, ``a``, ``b``,
        ``paired``, ``pair_on``, ``pairing``, ``settings``, ``se`` (the unit of the SE,
        :meth:`tpsviz.core.clusters.Clusters.to_json`, over the runs of both groups).
    """
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    if pair_on in data.metadata_columns and pair_on != by and settings.cluster_by == "auto":
        settings = replace(settings, cluster_by=pair_on)  # the task named for pairing is the cluster too
    settings, names, clusters = _resolve(data, settings, predictors, n_boot, seed, by)
    labels = group_labels(data, by)
    groups = group_order(labels, by)
    for label, role in ((a, "a"), (b, "b")):
        _check_group(groups, label, role)
    if a == b:
        raise ValueError("groups a and b are the same group")
    column, pairing = _pairing(data, labels, by, a, b, pair_on)
    keeps = [(labels == g).to_numpy() for g in (a, b)]
    if column is not None:  # the unit is the task already: the one of the pairing
        clusters = run_clusters(data, column)
    both = clusters.of(keeps[0] | keeps[1])
    if column is None and clusters.clustered:
        pairing += f"; each group's {both.words()}"
    seeds = (settings.seed + groups.index(a), settings.seed + groups.index(b))
    rows = _difference_rows(data, settings, names, q_z, keeps, column, seeds, clusters)
    out = pd.DataFrame.from_dict(rows, orient="index")[DIFF_COLUMNS]
    out.index.name = "predictor"
    out.attrs.update(by=by, a=a, b=b, paired=column is not None, pair_on=column,
                     pairing=pairing, settings=settings.describe(), se=both.to_json())
    return out


def _difference_rows(data: TrajectoryData, settings: ScoreSettings, names: list[str], q_z, keeps, column,
                     seeds, clusters: Clusters) -> dict:
    """One :data:`DIFF_COLUMNS` row per predictor: group b − group a, paired on ``column`` or unpaired
    (each group's runs clustered by ``clusters``)."""
    (mat_a, ra, deg_a), (mat_b, rb, deg_b) = (
        _run_values(data, keep, settings, names, q_z) for keep in keeps)
    if column is not None:
        tasks = text_values(data.trajectories[column])
        tasks_a, tasks_b = tasks[keeps[0]], tasks[keeps[1]]
    units = tuple(clusters.of(keep).groups() for keep in keeps)
    rows = {}
    for name in names:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        va, vb = mat_a[name].to_numpy(dtype=float), mat_b[name].to_numpy(dtype=float)
        if column is None:
            rows[name] = difference_unpaired(va, ra, deg_a, vb, rb, deg_b, settings.n_boot, seeds,
                                             settings.level, units)
        else:
            rows[name] = difference_by_task(va, ra, deg_a, tasks_a, vb, rb, deg_b, tasks_b,
                                            settings.n_boot, settings.seed, settings.level)
    return rows


# --------------------------------------------------------------------------- reading the results
def default_base(table: pd.DataFrame) -> str:
    """The base group a comparison should use by default: the group with the most scored runs
    among those whose skill is defined for every predictor (else the group with the most runs),
    so that the differences can be computed (a base group whose runs are all censored, or all
    successes, has no skill)."""
    runs = table.groupby(level="group", sort=False)["n_scored"].sum()
    ok = table["skill"].notna().groupby(level="group", sort=False).all()
    pool = runs[ok.reindex(runs.index).fillna(False).to_numpy()]
    return str((pool if len(pool) else runs).idxmax())


def group_columns(data: TrajectoryData) -> list[str]:
    """Run-level metadata columns with 2 to :data:`MAX_GROUPS` distinct values (missing counts as
    one): the columns a log's runs can be split by (``--by``)."""
    t = data.trajectories
    return [c for c in data.metadata_columns if 2 <= t[c].nunique(dropna=False) <= MAX_GROUPS]


def why_missing(row: pd.Series, a: str, b: str) -> dict:
    """Why the TPS or skill difference of a :func:`group_difference` row is missing.

    Returns
    -------
    dict
        ``{"tps": reason, "skill": reason}`` for the missing ones (empty when both are there).
    """
    out = {}
    for what in ("tps", "skill"):
        if np.isfinite(row.get(f"{what}_z", np.nan)):
            continue
        if int(row.get("n_a", 0)) == 0 or int(row.get("n_b", 0)) == 0:
            side = a if int(row.get("n_a", 0)) == 0 else b
            out[what] = f"no run of group {show_id(side)} has a forecast of this predictor"
        elif what == "skill" and not np.isfinite(row.get("skill_a", np.nan)):
            out[what] = (f"skill is undefined in group {show_id(a)} (every run censored, or one "
                         "outcome only)")
        elif what == "skill" and not np.isfinite(row.get("skill_b", np.nan)):
            out[what] = (f"skill is undefined in group {show_id(b)} (every run censored, or one "
                         "outcome only)")
        elif min(int(row.get("n_a", 0)), int(row.get("n_b", 0))) < 2 or \
                (row.get("paired") and int(row.get("n_pairs", 0)) < 2):
            out[what] = "too few runs (or paired tasks) for a standard error"
        else:
            out[what] = "the standard error is 0 or not finite"
    return out


def difference_words(row: pd.Series, a: str, b: str, show_z: bool = True) -> str:
    """Group b − group a of one :func:`group_difference` row in words: "TPS clearly lower (Δ/SE =
    −7.2); skill not clearly different (Δ/SE = +0.9)", conditioned on Δ/SE (tpsviz.diagnostics.claims), or
    "n/a (why)" (:func:`why_missing`). ``show_z=False`` leaves the Δ/SE out (a table that shows it)."""
    why = why_missing(row, a, b)
    parts = []
    for what, key in (("TPS", "tps"), ("skill", "skill")):
        z = row.get(f"{key}_z", np.nan)
        if key in why:
            parts.append(f"{what} n/a ({why[key]})")
            continue
        said = (f"clearly {'higher' if z > 0 else 'lower'}" if is_clear(z) else "not clearly different")
        parts.append(f"{what} {said}" + (f" ({z_text(z)})" if show_z else ""))
    return "; ".join(parts)
