"""Is X better than Y? Success, steps, cost and duration of two sets of runs, with or without forecasts
(docs/theory.md §7.1).

The two sides are two groups of one log (a metadata column: model, agent, prompt) or two logs combined
by :func:`tpsviz.diagnostics.combine.combine_logs` (the column naming each run's log). For each measure
recorded per run (success Y of the complete runs, steps, cost and duration where the log has them) the
difference b − a of the sides' means comes with its SE:

- **paired by task** (:func:`paired_difference`) where the two sides ran the same tasks: per task k the
  mean of each side's runs, d_k = mean_b,k − mean_a,k over the K tasks of both sides, Δ = mean_k d_k,
  SE = sd(d)/√K;
- **unpaired** otherwise (:func:`unpaired_difference`): Δ = mean_b − mean_a, SE = √(se_a² + se_b²), each
  side's se the cluster-robust SE of its mean by task (:func:`tpsviz.core.inference.mean_se`: runs of one
  task are not independent), or sd/√n where no task repeats.

Task ids that merely coincide are not the same tasks: two logs read by different harness readers
(tau-bench and tau2-bench both number their airline tasks from 0), or of different domains, are never
paired (:func:`same_task_set`). :func:`success_sentence` says the result in one sentence and calls a
winner only at |Δ/SE| ≥ 2 (:data:`tpsviz.diagnostics.claims.Z_CLEAR`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.clusters import run_clusters, task_column, text_values
from tpsviz.core.data import TrajectoryData
from tpsviz.core.inference import mean_se
from tpsviz.core.schema import clean_text, show_id
from tpsviz.diagnostics.claims import Z_CLEAR, is_clear

__all__ = ["unpaired_difference", "paired_difference", "same_task_set", "run_measures", "versus_runs",
           "success_sentence", "measure_words", "COST_COLUMNS", "DURATION_COLUMNS", "VERSUS_COLUMNS",
           "AUTO_MIN_TASKS"]

#: run-level columns read as the cost of a run (the first present in both sides, any case)
COST_COLUMNS = ("cost", "total_cost", "agent_cost", "cost_usd")
#: run-level columns read as the duration of a run, in seconds
DURATION_COLUMNS = ("duration", "duration_s", "duration_seconds", "elapsed_s", "latency_s")
#: ``pair_on="auto"`` pairs by task only when at least this many tasks appear in both sides
AUTO_MIN_TASKS = 10
#: the columns of :func:`versus_runs`' table, in order
VERSUS_COLUMNS = ["measure", "column", "mean_a", "mean_b", "delta", "se", "z", "paired", "n_pairs", "n_a", "n_b",
                  "n_missing"]


def _z(delta: float, se: float) -> float:
    """Δ/SE; NaN when the SE is missing, 0 or at rounding level."""
    tiny = 1e-12 * max(1.0, abs(delta)) if np.isfinite(delta) else np.inf
    return float(delta / se) if np.isfinite(se) and se > tiny else np.nan


def _codes(tasks) -> np.ndarray | None:
    """Cluster codes of task labels (a run without a task its own cluster); None: by run."""
    if tasks is None:
        return None
    codes, uniques = pd.factorize(pd.Series(text_values(tasks), dtype=object), sort=False)
    codes = codes.astype(np.int64)
    lone = codes < 0
    codes[lone] = len(uniques) + np.arange(int(lone.sum()))
    return codes


def unpaired_difference(xa, xb, tasks_a=None, tasks_b=None) -> dict:
    """b − a of the means of one value per run, the two sides being different runs.

    Each side's SE is that of its mean, clustered by task when ``tasks_*`` is given
    (SE² = K/(K−1) · Σ_k e_k² / n², e_k the sum of (x_i − mean) over task k's runs; a run without a task
    is a task of its own), and the SE of the difference is √(se_a² + se_b²): the sides are independent.

    Parameters
    ----------
    xa, xb : array_like of float
        One value per run of side a and side b (NaN: not recorded, left out and counted).
    tasks_a, tasks_b : array_like, optional
        The task of every run (None or blank: no task); None: SE by run.

    Returns
    -------
    dict
        ``mean_a``, ``mean_b``, ``delta`` (= mean_b − mean_a), ``se``, ``z`` (Δ/SE, NaN when the SE is
        0 or missing), ``paired`` (False), ``n_pairs`` (0), ``n_a``, ``n_b`` (values used),
        ``n_missing`` (NaN values left out).
    """
    sides = []
    for x, tasks in ((xa, tasks_a), (xb, tasks_b)):
        x = np.asarray(x, dtype=float)
        ok = ~np.isnan(x)
        codes = _codes(np.asarray(tasks, dtype=object)[ok]) if tasks is not None else None
        mean = float(x[ok].mean()) if ok.any() else np.nan
        sides.append((mean, mean_se(x[ok], codes) if ok.sum() >= 2 else np.nan, int(ok.sum()), int((~ok).sum())))
    (ma, sa, na, ka), (mb, sb, nb, kb) = sides
    delta, se = mb - ma, float(np.hypot(sa, sb))
    return {"mean_a": ma, "mean_b": mb, "delta": delta, "se": se, "z": _z(delta, se), "paired": False,
            "n_pairs": 0, "n_a": na, "n_b": nb, "n_missing": ka + kb}


def paired_difference(xa, tasks_a, xb, tasks_b) -> dict:
    """b − a paired by task: the mean of each side's runs per task, differences over the tasks of both.

    d_k = mean_b,k − mean_a,k over the K tasks where both sides have a value; Δ = mean_k d_k,
    SE = sd(d) / √K (ddof 1). Each task weighs the same whatever its number of runs; ``mean_a`` and
    ``mean_b`` are the task-weighted means over those K tasks, so that Δ = mean_b − mean_a.

    Parameters
    ----------
    xa, xb : array_like of float
        One value per run (NaN: not recorded).
    tasks_a, tasks_b : array_like
        The task of every run; runs without a task, or whose task the other side lacks, are left out.

    Returns
    -------
    dict
        As :func:`unpaired_difference`, with ``paired`` True, ``n_pairs`` = K, ``n_a``/``n_b`` the runs
        of the paired tasks and ``n_missing`` every value left out (missing, no task, unpaired task).
    """
    means = []
    for x, tasks in ((xa, tasks_a), (xb, tasks_b)):
        x = np.asarray(x, dtype=float)
        t = text_values(np.asarray(tasks, dtype=object))
        ok = ~np.isnan(x) & np.array([v is not None for v in t], dtype=bool)
        f = pd.DataFrame({"task": t[ok], "x": x[ok]}).groupby("task")["x"].agg(["mean", "size"])
        means.append((f, x.size))
    (fa, na_all), (fb, nb_all) = means
    common = fa.index.intersection(fb.index)
    a, b = fa.loc[common], fb.loc[common]
    k = len(common)
    d = (b["mean"] - a["mean"]).to_numpy(dtype=float)
    delta = float(d.mean()) if k else np.nan
    se = float(d.std(ddof=1) / np.sqrt(k)) if k >= 2 else np.nan
    n_a, n_b = int(a["size"].sum()), int(b["size"].sum())
    return {"mean_a": float(a["mean"].mean()) if k else np.nan, "mean_b": float(b["mean"].mean()) if k else np.nan,
            "delta": delta, "se": se, "z": _z(delta, se), "paired": True, "n_pairs": k, "n_a": n_a, "n_b": n_b,
            "n_missing": na_all + nb_all - n_a - n_b}


def same_task_set(data: TrajectoryData, by: str, a: str, b: str, labels) -> tuple[bool, str]:
    """Whether sides ``a`` and ``b`` of ``by`` can have run the same tasks (so that a task id means one
    task in both), and why not.

    Two groups of one log share the log's task set. Two logs combined by
    :func:`tpsviz.diagnostics.combine.combine_logs` (``by`` is its column) share it only when one reader
    read both (the same harness format) and, where a ``domain`` column is recorded, their domains agree:
    tau-bench and tau2-bench number their airline tasks from 0, but task 0 is not the same task.

    Parameters
    ----------
    data : TrajectoryData
    by : str
        The column naming the side of each run.
    a, b : str
        The two sides' labels.
    labels : array_like
        The side of every run (:func:`tpsviz.diagnostics.groups.group_labels`).

    Returns
    -------
    (bool, str)
        True and "" when pairing by task may be considered; False and the reason in words.
    """
    reading = data.reading if isinstance(data.reading, dict) else {}
    logs = reading.get("logs") if reading.get("format") == "combined" else None
    labels = np.asarray(labels, dtype=object)
    if isinstance(logs, dict) and a in logs and b in logs:
        fa, fb = ((logs[s] or {}).get("format") for s in (a, b))
        if fa != fb:
            return False, (f"the two logs come from different harnesses ({clean_text(str(fa), 30)}, "
                           f"{clean_text(str(fb), 30)}): task ids that coincide are not the same tasks")
    dom = next((c for c in data.metadata_columns if str(c).lower() == "domain" and c != by), None)
    if dom is not None:
        vals = text_values(data.trajectories[dom])
        da, db = ({v for v in vals[labels == s] if v is not None} for s in (a, b))
        if da and db and not da & db:
            return False, (f"the two sides ran different domains ({', '.join(sorted(clean_text(v, 30) for v in da))} "
                           f"against {', '.join(sorted(clean_text(v, 30) for v in db))}): their tasks differ")
    return True, ""


def _named(cols, names) -> str | None:
    """The first column of ``names`` present in ``cols`` (exact spelling first, then any case)."""
    exact = next((c for c in names if c in cols), None)
    if exact is not None:
        return exact
    low = {str(c).lower(): c for c in cols}
    return next((low[c] for c in names if c in low), None)


def run_measures(data: TrajectoryData) -> pd.DataFrame:
    """What is compared of every run: success (Y of a complete run, NaN for a censored one), steps (the
    run's length), cost and duration where a run-level column records them (:data:`COST_COLUMNS`,
    :data:`DURATION_COLUMNS`, numbers only).

    Returns
    -------
    DataFrame
        One row per run (code order); columns ``success``, ``steps`` and, where recorded, ``cost``,
        ``duration``. ``attrs["columns"]``: the log's column behind each measure.
    """
    t = data.trajectories
    out = pd.DataFrame({"success": np.where(t["censored"].to_numpy(dtype=bool), np.nan,
                                            t["outcome"].to_numpy(dtype=float)),
                        "steps": t["length"].to_numpy(dtype=float)})
    columns = {"success": "outcome", "steps": "length"}
    for measure, names in (("cost", COST_COLUMNS), ("duration", DURATION_COLUMNS)):
        col = _named(data.metadata_columns, names)
        if col is None:
            continue
        values = pd.to_numeric(t[col], errors="coerce").to_numpy(dtype=float)
        if np.isfinite(values).any():
            out[measure] = np.where(np.isfinite(values), values, np.nan)
            columns[measure] = col
    out.attrs["columns"] = columns
    return out


def _pair_column(data: TrajectoryData, by: str, keeps, pair_on, same: tuple[bool, str]):
    """(task column to pair on or None, the pairing in words)."""
    if pair_on is None or (isinstance(pair_on, str) and pair_on.lower() == "none"):
        return None, "unpaired (pairing not asked for)"
    auto = pair_on == "auto"
    column = task_column(data, exclude=(by,)) if auto else pair_on
    if column is None:
        return None, "unpaired: the log names no task to pair on"
    if column not in data.metadata_columns or column == by:
        raise ValueError(f"cannot pair on {show_id(column)}: not a run-level column other than the sides' own")
    if not same[0]:
        return None, f"unpaired: {same[1]}"
    tasks = text_values(data.trajectories[column])
    common = len({t for t in tasks[keeps[0]] if t is not None} & {t for t in tasks[keeps[1]] if t is not None})
    need = AUTO_MIN_TASKS if auto else 2
    if common < need:
        return None, (f"unpaired: only {common} task(s) of {show_id(column)} appear in both sides "
                      f"(pairing needs {need})")
    return column, f"paired by task ({show_id(column)}, {common} tasks in both sides)"


def versus_runs(data: TrajectoryData, by: str, a: str, b: str, labels, pair_on="auto",
                cluster_by: str = "auto") -> pd.DataFrame:
    """Side b − side a of success, steps, cost and duration, each with its SE (see the module).

    Parameters
    ----------
    data : TrajectoryData
        A log with or without forecasts.
    by : str
        The column naming each run's side.
    a, b : str
        The baseline side and the candidate side.
    labels : array_like
        The side of every run.
    pair_on : str or None
        ``"auto"`` (the log's task column, with at least :data:`AUTO_MIN_TASKS` tasks in both sides, and
        never across different task sets: :func:`same_task_set`), a column (at least 2 common tasks), or
        None/``"none"``: unpaired.
    cluster_by : str
        The unpaired SE's cluster, as :func:`tpsviz.core.clusters.run_clusters` (``"auto"``, ``"run"``, a
        column).

    Returns
    -------
    DataFrame
        One row per measure, :data:`VERSUS_COLUMNS`. ``attrs``: ``a``, ``b``, ``pairing`` (words),
        ``pair_on`` (the column or None), ``same_tasks`` (bool), ``why_not_same`` (words or ""),
        ``clusters`` (the unpaired SE's unit: ``unit`` "task" or "run", ``column``, ``tasks`` per side),
        ``n_censored`` (``{a: k, b: k}``, runs left out of success).
    """
    labels = np.asarray(labels, dtype=object)
    keeps = [labels == a, labels == b]
    if not keeps[0].any() or not keeps[1].any():
        raise ValueError(f"side {show_id(a if not keeps[0].any() else b)} has no run")
    same = same_task_set(data, by, a, b, labels)
    column, pairing = _pair_column(data, by, keeps, pair_on, same)
    clusters = run_clusters(data, cluster_by if cluster_by != by else "auto", exclude=(by,))
    tasks = text_values(data.trajectories[clusters.column]) if clusters.clustered else None
    # (each side's SE is clustered over its own runs only: a task id never joins runs of the two sides)
    pair_tasks = text_values(data.trajectories[column]) if column is not None else None
    measures = run_measures(data)
    rows = []
    for m in measures.columns:
        x = measures[m].to_numpy(dtype=float)
        xa, xb = x[keeps[0]], x[keeps[1]]
        if column is not None:
            rec = paired_difference(xa, pair_tasks[keeps[0]], xb, pair_tasks[keeps[1]])
        else:
            rec = unpaired_difference(xa, xb, None if tasks is None else tasks[keeps[0]],
                                      None if tasks is None else tasks[keeps[1]])
        if rec["n_a"] == 0 and rec["n_b"] == 0:
            continue
        rows.append({"measure": m, "column": measures.attrs["columns"][m]} | rec)
    out = pd.DataFrame(rows, columns=VERSUS_COLUMNS)
    cen = data.trajectories["censored"].to_numpy(dtype=bool)
    unit = {"unit": "task" if clusters.clustered else "run", "column": clusters.column,
            "tasks": {s: len({t for t in text_values(data.trajectories[clusters.column])[k] if t is not None})
                      for s, k in ((a, keeps[0]), (b, keeps[1]))} if clusters.clustered else None}
    if column is None:
        pairing += "; " + ("each side's SE clustered by task" if clusters.clustered else "SE by run")
    out.attrs.update(a=a, b=b, pairing=pairing, pair_on=column, same_tasks=same[0], why_not_same=same[1],
                     clusters=unit, n_censored={a: int(cen[keeps[0]].sum()), b: int(cen[keeps[1]].sum())})
    return out


def _how(row, attrs) -> str:
    """The SE's method in a few words: "paired by task, 50 tasks", "unpaired, clustered by task"."""
    if bool(row["paired"]):
        return f"paired by task, {int(row['n_pairs'])} tasks"
    clustered = (attrs.get("clusters") or {}).get("unit") == "task"
    return "unpaired, clustered by task" if clustered else "unpaired, by run"


def _no_z(row) -> str:
    """Why Δ/SE is missing, in words."""
    if np.isfinite(row["se"]):
        return "the SE is 0 (the same difference everywhere), so the data cannot say how sure it is"
    return "too few runs (or paired tasks) for an SE"


def success_sentence(table: pd.DataFrame, names: dict | None = None) -> str:
    """The success comparison of :func:`versus_runs` in one plain sentence.

    A side is said to succeed more often only when |Δ/SE| ≥ 2 (:data:`tpsviz.diagnostics.claims.Z_CLEAR`),
    e.g. "candidate succeeds more often: 52.0% against 38.5% (baseline), Δ = +13.5 points (SE 4.9, unpaired,
    clustered by task)", Δ the winner's rate minus the other's; otherwise "no clear difference in success:
    a 38.5% against b 41.0%, Δ = +2.5 points (…)", Δ = b − a.

    Parameters
    ----------
    table : DataFrame
        :func:`versus_runs`' result.
    names : dict, optional
        Words for the sides' labels (default: the labels).

    Returns
    -------
    str
    """
    at = table.attrs
    a, b = at["a"], at["b"]
    names = names or {}
    na, nb = names.get(a, a), names.get(b, b)
    rows = table[table["measure"] == "success"]
    if not len(rows) or not np.isfinite(rows.iloc[0]["mean_a"]) or not np.isfinite(rows.iloc[0]["mean_b"]):
        return f"success cannot be compared: {na if rows.empty or not rows.iloc[0]['n_a'] else nb} has no complete run"
    r = rows.iloc[0]
    pa, pb, d, se = 100 * r["mean_a"], 100 * r["mean_b"], 100 * r["delta"], 100 * r["se"]
    how = f"{f'SE {se:.1f}' if np.isfinite(se) else 'SE not available'}, {_how(r, at)}"
    left = sum(int(v) for v in (at.get("n_censored") or {}).values())
    how += f"; {left} censored run{'s' if left != 1 else ''} left out" if left else ""
    if not np.isfinite(r["z"]):  # no SE to judge by: say so, call no winner
        return (f"success: {na} {pa:.1f}% against {nb} {pb:.1f}%, Δ = {d:+.1f} points ({how}); no winner called: "
                f"{_no_z(r)}")
    if is_clear(r["z"]):
        win, lose, pw, pl = (nb, na, pb, pa) if r["delta"] > 0 else (na, nb, pa, pb)
        return f"{win} succeeds more often: {pw:.1f}% against {pl:.1f}% ({lose}), Δ = {abs(d):+.1f} points ({how})"
    return (f"no clear difference in success: {na} {pa:.1f}% against {nb} {pb:.1f}%, Δ = {d:+.1f} points "
            f"({how}; |Δ/SE| = {abs(float(r['z'])) if np.isfinite(r['z']) else float('nan'):.1f} < {Z_CLEAR:g})")


_UNITS = {"steps": ("steps", ".1f"), "cost": ("", ".4g"), "duration": ("s", ".1f")}


def measure_words(row, names: dict, a: str, b: str) -> str:
    """One measure other than success (steps, cost, duration) of :func:`versus_runs` in words: the two means
    and Δ = b − a with its SE, "clearly more/fewer" only at |Δ/SE| ≥ 2."""
    unit, spec = _UNITS.get(row["measure"], ("", ".4g"))
    na, nb = names.get(a, a), names.get(b, b)

    def v(x):
        return f"{x:{spec}}{(' ' + unit) if unit else ''}" if np.isfinite(x) else "—"

    if not (int(row["n_a"]) and int(row["n_b"])):  # one side does not record it: nothing to compare
        only, mean = (nb, row["mean_b"]) if int(row["n_b"]) else (na, row["mean_a"])
        return f"{row['measure']}: recorded by {only} only ({v(mean)} per run); not compared"
    se = f"SE {row['se']:{spec}}" if np.isfinite(row["se"]) else "SE not available"
    said = (f"{nb} clearly {'higher' if row['delta'] > 0 else 'lower'}" if is_clear(row["z"])
            else "no clear difference" if np.isfinite(row["z"]) else f"no judgement: {_no_z(row)}")
    return (f"{row['measure']}: {na} {v(row['mean_a'])}, {nb} {v(row['mean_b'])} per run, "
            f"Δ = {row['delta']:+{spec}} ({se}); {said}")
