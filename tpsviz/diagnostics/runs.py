"""One row per run, and one run step by step: what the Runs page shows (issue 46).

- :func:`run_table`: every run of a log with its outcome, censoring, termination reason and its
  treatment, task, model, steps, each predictor's TPS and first and last forecast, and the cost and
  duration columns the log records.
- :func:`select_runs` and :data:`PRESETS`: the table filtered, e.g. the "confident failures" (last
  forecast ≥ 0.8, the run failed) of one predictor.
- :func:`run_steps`: one run's forecasts and per-step contributions w_t·S, the terms its TPS adds up
  (:meth:`tpsviz.core.tps.TPSResult.step_contributions`, the same numbers as the Step contributions
  page).
- :func:`largest_moves`: the steps where a forecast moved most, |F_t − F_{t−1}|.
- :func:`run_facts`: what the log says about one run (outcome, reason, treatment, q_Z, cost, …).

Every function takes a loaded log (:class:`~tpsviz.core.data.TrajectoryData`) and, for the scores,
its :class:`~tpsviz.core.tps.TPSResult`; none reads a file.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import TPSResult

__all__ = ["OUTCOMES", "PRESETS", "COST_WORDS", "DURATION_WORDS", "run_table", "recorded_columns", "task_column",
           "select_runs", "sort_runs", "preset_mask", "preset_counts", "find_run", "run_steps", "largest_moves", "run_moves", "run_facts",
           "outcome_words", "tps_column", "first_column", "last_column"]

#: the outcome of a run in words: a complete run's Y, or censored (the outcome is unknown)
OUTCOMES = ("success", "failure", "censored")
#: the presets of the table of runs: (words, the outcome asked for, the bound on the last forecast)
PRESETS = {
    "confident failures": ("the last forecast is at least 0.8 and the run failed", "failure", (0.8, 1.0)),
    "doubted successes": ("the last forecast is at most 0.2 and the run succeeded", "success", (0.0, 0.2)),
}
#: metadata columns read as a run's cost or duration when their lower-case name holds one of these
COST_WORDS = ("cost",)
DURATION_WORDS = ("duration", "latency", "elapsed", "wall_time", "runtime")


def tps_column(predictor: str) -> str:
    """The table's column of a predictor's TPS of each run."""
    return f"TPS {predictor}"


def first_column(predictor: str) -> str:
    """The table's column of a predictor's first forecast in each run."""
    return f"first F {predictor}"


def last_column(predictor: str) -> str:
    """The table's column of a predictor's last forecast in each run."""
    return f"last F {predictor}"


def outcome_words(outcome: np.ndarray, censored: np.ndarray) -> np.ndarray:
    """Each run's outcome in words (:data:`OUTCOMES`).

    Parameters
    ----------
    outcome : array of float
        1.0, 0.0 or NaN.
    censored : array of bool

    Returns
    -------
    ndarray of str
    """
    outcome = np.asarray(outcome, dtype=float)
    censored = np.asarray(censored, dtype=bool)
    return np.where(censored | np.isnan(outcome), "censored", np.where(outcome == 1.0, "success", "failure"))


def task_column(data: TrajectoryData) -> str | None:
    """The metadata column naming a run's task: the reader's (``reading["task_column"]``), else
    ``task`` or ``task_id`` where the log has one; None when it has none."""
    cols = data.metadata_columns
    given = (data.reading or {}).get("task_column")
    for c in ([given] if given else []) + ["task", "task_id"]:
        if c in cols:
            return c
    return None


def recorded_columns(data: TrajectoryData) -> dict:
    """The run-level metadata columns that record a cost or a duration, as numbers.

    A column counts when its lower-case name holds a word of :data:`COST_WORDS` (cost) or
    :data:`DURATION_WORDS` (duration) and its values are numbers (missing values allowed).

    Returns
    -------
    dict
        ``{"cost": [column, …], "duration": [column, …]}``, in the log's column order.
    """
    out: dict = {"cost": [], "duration": []}
    t = data.trajectories
    for c in data.metadata_columns:
        name = str(c).lower()
        kind = ("cost" if any(w in name for w in COST_WORDS) else
                "duration" if any(w in name for w in DURATION_WORDS) else None)
        if kind and pd.api.types.is_numeric_dtype(t[c]) and not pd.api.types.is_bool_dtype(t[c]):
            out[kind].append(c)
    return out


def _treatments(data: TrajectoryData) -> dict:
    """{termination reason: its treatment} of a harness log's reading record."""
    rows = (data.reading or {}).get("treatment") or []
    return {str(r.get("reason")): str(r.get("treatment")) for r in rows if isinstance(r, dict)}


def _first_last(data: TrajectoryData, predictor: str) -> tuple[np.ndarray, np.ndarray]:
    """Each run's first and last forecast of ``predictor`` as given (NaN: none)."""
    n = len(data.trajectories)
    col = data.steps[f"conf_{predictor}"]
    by = col.groupby(data.steps["traj"].to_numpy(), sort=True)
    first = by.first().reindex(range(n)).to_numpy(dtype=float)
    last = by.last().reindex(range(n)).to_numpy(dtype=float)
    return first, last


def run_table(data: TrajectoryData, result: TPSResult, predictors: Sequence[str]) -> pd.DataFrame:
    """One row per run of ``data``: what the table of runs shows and exports.

    Parameters
    ----------
    data : TrajectoryData
        The log (after filters, with its recalibrated and reference predictors).
    result : TPSResult
        Its TPS under the current settings (:func:`tpsviz.core.tps.compute_tps`), for the
        ``predictors``.
    predictors : sequence of str

    Returns
    -------
    DataFrame
        In the log's run order. Columns: ``run`` (the id), ``outcome`` (:data:`OUTCOMES`),
        ``censored``; ``termination reason`` and ``treatment`` (harness logs), ``task`` and
        ``model`` where the log names them; ``steps`` (the run's length); per predictor
        :func:`tps_column` (NaN: not scored, e.g. a censored run under complete-case),
        :func:`first_column` and :func:`last_column` (the forecasts as given, before clipping;
        NaN: none); then the cost and duration columns of :func:`recorded_columns`, named as in
        the log.
    """
    t = data.trajectories
    ids = t["trajectory_id"].astype(str).to_numpy()
    out = {"run": ids, "outcome": outcome_words(t["outcome"].to_numpy(dtype=float), t["censored"].to_numpy()),
           "censored": t["censored"].to_numpy(dtype=bool)}
    meta = data.metadata_columns
    if "termination_reason" in meta:
        reasons = t["termination_reason"]
        out["termination reason"] = reasons.astype(object).where(reasons.notna(), None).to_numpy()
        treat = _treatments(data)
        if treat:
            out["treatment"] = np.array([treat.get(str(r)) if r is not None else None
                                         for r in out["termination reason"]], dtype=object)
    task = task_column(data)
    if task is not None:
        out["task"] = t[task].astype(object).where(t[task].notna(), None).to_numpy()
    if "model" in meta:
        out["model"] = t["model"].astype(object).where(t["model"].notna(), None).to_numpy()
    out["steps"] = t["length"].to_numpy(dtype=np.int64)
    matrix = result.tps_matrix() if len(predictors) else None
    for p in predictors:
        tps = (matrix[p].reindex(ids).to_numpy(dtype=float) if matrix is not None and p in matrix.columns
               else np.full(len(ids), np.nan))
        first, last = _first_last(data, p)
        out[tps_column(p)], out[first_column(p)], out[last_column(p)] = tps, first, last
    rec = recorded_columns(data)
    for c in rec["cost"] + rec["duration"]:
        out[str(c)] = t[c].to_numpy(dtype=float)
    return pd.DataFrame(out)


def preset_mask(table: pd.DataFrame, preset: str, predictor: str) -> np.ndarray:
    """The runs of :func:`run_table` that a preset of :data:`PRESETS` keeps for one predictor.

    Parameters
    ----------
    table : DataFrame
        :func:`run_table`'s.
    preset : str
        A key of :data:`PRESETS`.
    predictor : str

    Returns
    -------
    ndarray of bool
        "confident failures": the run failed and its last forecast is ≥ 0.8; "doubted successes":
        it succeeded and its last forecast is ≤ 0.2. A run without a forecast is never kept.
    """
    if preset not in PRESETS:
        raise ValueError(f"no preset {preset!r}: the presets are " + ", ".join(PRESETS))
    _, outcome, (lo, hi) = PRESETS[preset]
    last = table[last_column(predictor)].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        return (table["outcome"].to_numpy() == outcome) & (last >= lo) & (last <= hi)


def preset_counts(data: TrajectoryData, predictors: Sequence[str]) -> pd.DataFrame:
    """How many runs each preset of :data:`PRESETS` keeps for each predictor, from the log alone (no
    score): what a link to the presets can say before the table of runs is built.

    Parameters
    ----------
    data : TrajectoryData
    predictors : sequence of str

    Returns
    -------
    DataFrame
        Index the predictors, one column per preset: the runs :func:`preset_mask` keeps.
    """
    words = outcome_words(data.trajectories["outcome"].to_numpy(dtype=float),
                          data.trajectories["censored"].to_numpy(dtype=bool))
    rows = {}
    for name in predictors:
        last = _first_last(data, name)[1]
        with np.errstate(invalid="ignore"):
            rows[name] = {k: int(((words == outcome) & (last >= lo) & (last <= hi)).sum())
                          for k, (_, outcome, (lo, hi)) in PRESETS.items()}
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(PRESETS)).rename_axis("predictor")


def select_runs(table: pd.DataFrame, *, preset: str | None = None, predictor: str | None = None,
                choices: dict | None = None, ranges: dict | None = None) -> pd.DataFrame:
    """The rows of :func:`run_table` that pass every filter given.

    Parameters
    ----------
    table : DataFrame
    preset, predictor : str, optional
        A preset of :data:`PRESETS` for one predictor (:func:`preset_mask`).
    choices : dict, optional
        ``{column: values kept}`` for columns of categories (outcome, censored, termination
        reason, task, model); an empty collection keeps every row.
    ranges : dict, optional
        ``{column: (low, high)}`` for columns of numbers, both bounds included; a missing value
        is left out.

    Returns
    -------
    DataFrame
        The rows kept, in the table's order.
    """
    keep = np.ones(len(table), dtype=bool)
    if preset is not None:
        keep &= preset_mask(table, preset, predictor)
    for col, values in (choices or {}).items():
        values = list(values)
        if values and col in table.columns:
            keep &= table[col].isin(values).to_numpy()
    for col, (lo, hi) in (ranges or {}).items():
        if col in table.columns:
            v = table[col].to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                keep &= (v >= lo) & (v <= hi)
    return table[keep]


def sort_runs(table: pd.DataFrame, column: str, descending: bool = False) -> pd.DataFrame:
    """The table of runs sorted by one column (stable: ties keep the table's order; missing values last).

    Parameters
    ----------
    table : DataFrame
    column : str
        A column of ``table``.
    descending : bool

    Returns
    -------
    DataFrame
    """
    if column not in table.columns:
        raise ValueError(f"no column {column!r} in the table of runs")
    return table.sort_values(column, ascending=not descending, kind="stable", na_position="last",
                             key=lambda c: c if pd.api.types.is_numeric_dtype(c) else c.astype(str))


def find_run(data: TrajectoryData, run_id: str) -> int | None:
    """The code (row of ``data.trajectories``) of the run with this id, or None when there is none."""
    hits = np.flatnonzero(data.trajectories["trajectory_id"].astype(str).to_numpy() == str(run_id))
    return int(hits[0]) if len(hits) else None


def run_steps(data: TrajectoryData, result: TPSResult, run_id: str, predictors: Sequence[str]) -> pd.DataFrame:
    """One run's steps: each predictor's forecast as given and its contribution w_t·S.

    Parameters
    ----------
    data : TrajectoryData
    result : TPSResult
        Scored with ``predictors`` (its :meth:`~tpsviz.core.tps.TPSResult.step_contributions`
        are the contributions: the terms of the run's TPS).
    run_id : str
    predictors : sequence of str

    Returns
    -------
    DataFrame
        One row per step of the run, in order: ``step``, ``t`` (1-based position), and per
        predictor ``F <p>`` (NaN: no forecast) and ``w·S <p>`` (NaN: not scored, e.g. no forecast,
        or a censored run left out under complete-case).

    Raises
    ------
    KeyError
        When the log has no run with this id.
    """
    code = find_run(data, run_id)
    if code is None:
        raise KeyError(run_id)
    rows = data.steps[data.steps["traj"].to_numpy() == code]
    out = pd.DataFrame({"step": rows["step"].to_numpy(), "t": rows["t"].to_numpy()})
    contrib = result.step_contributions(list(predictors)) if len(predictors) else pd.DataFrame()
    if len(contrib):
        contrib = contrib[contrib["trajectory_id"].astype(str).to_numpy() == str(run_id)]
    for p in predictors:
        out[f"F {p}"] = rows[f"conf_{p}"].to_numpy(dtype=float)
        mine = contrib[contrib["predictor"] == p] if len(contrib) else contrib
        by_t = dict(zip(mine["t"].to_numpy(), mine["contribution"].to_numpy(dtype=float))) if len(mine) else {}
        out[f"w·S {p}"] = np.array([by_t.get(t, np.nan) for t in out["t"].to_numpy()], dtype=float)
    return out


def largest_moves(steps: Sequence, forecasts: Sequence, k: int = 3) -> pd.DataFrame:
    """The ``k`` largest moves |F_t − F_{t−1}| of one forecast along one run.

    A move is taken between consecutive steps that have a forecast (a step without one is
    skipped: the move is from the last forecast before it).

    Parameters
    ----------
    steps : sequence of int
        The run's step numbers, in order.
    forecasts : sequence of float
        F_t at each step (NaN: none).
    k : int
        Moves kept.

    Returns
    -------
    DataFrame
        Columns ``step`` (where the forecast arrived), ``from_step``, ``before``, ``after``,
        ``move`` (after − before); the largest |move| first, ties by the earlier step; moves of 0
        are left out.
    """
    s = np.asarray(steps)
    f = np.asarray(forecasts, dtype=float)
    ok = ~np.isnan(f)
    s, f = s[ok], f[ok]
    cols = ["step", "from_step", "before", "after", "move"]
    if len(f) < 2:
        return pd.DataFrame(columns=cols)
    move = np.diff(f)
    frame = pd.DataFrame({"step": s[1:], "from_step": s[:-1], "before": f[:-1], "after": f[1:], "move": move})
    frame = frame[frame["move"] != 0]
    order = np.lexsort((frame["step"].to_numpy(), -np.abs(frame["move"].to_numpy())))
    return frame.iloc[order[:max(int(k), 0)]].reset_index(drop=True)


def run_moves(steps: pd.DataFrame, predictors: Sequence[str], k: int = 3) -> pd.DataFrame:
    """:func:`largest_moves` of every predictor of one run's :func:`run_steps`, the largest first.

    Parameters
    ----------
    steps : DataFrame
        :func:`run_steps`'s.
    predictors : sequence of str
    k : int
        Moves kept per predictor.

    Returns
    -------
    DataFrame
        ``predictor`` and the columns of :func:`largest_moves`: the ``k`` largest moves of each
        predictor, all sorted by |move| (largest first; ties in the order of ``predictors``, then
        by step).
    """
    parts = [largest_moves(steps["step"], steps[f"F {p}"], k).assign(predictor=p, rank=i)
             for i, p in enumerate(predictors)]
    parts = [p for p in parts if len(p)]
    cols = ["predictor", "step", "from_step", "before", "after", "move"]
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True)
    order = np.lexsort((out["step"].to_numpy(), out["rank"].to_numpy(), -np.abs(out["move"].to_numpy(dtype=float))))
    return out.iloc[order][cols].reset_index(drop=True)


def run_facts(table: pd.DataFrame, run_id: str, result: TPSResult | None = None) -> dict | None:
    """One run's row of :func:`run_table` as a dict, with the q_Z its score used.

    Parameters
    ----------
    table : DataFrame
        :func:`run_table`'s.
    run_id : str
    result : TPSResult, optional
        Adds ``q_z used``: the q_Z of a censored run under the result's censoring mode (NaN: a
        complete run, or a censored run that mode leaves out).

    Returns
    -------
    dict or None
        None when the table has no run with this id.
    """
    rows = table[table["run"].to_numpy() == str(run_id)]
    if not len(rows):
        return None
    facts = rows.iloc[0].to_dict()
    if result is not None:
        pt = result.per_trajectory
        used = pt.loc[pt["trajectory_id"].astype(str).to_numpy() == str(run_id), "q_z_used"]
        facts["q_z used"] = float(used.iloc[0]) if len(used) else float("nan")
    return facts
