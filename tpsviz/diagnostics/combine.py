"""Two logs as one, to compare them as two groups of runs (docs/theory.md §7).

:func:`combine_logs` joins a baseline log and a candidate log with a run-level column naming the
log of each run, so that :func:`tpsviz.diagnostics.groups.group_table` and
:func:`~tpsviz.diagnostics.groups.group_difference` compare them; :func:`free_column` finds a name
for that column that neither log uses.
"""

from __future__ import annotations

import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.schema import clean_text, show_id
from tpsviz.core.wording import Text
from tpsviz.io.files import limits_from_env

__all__ = ["combine_logs", "free_column"]

_CORE_STEP = ("trajectory_id", "step", "traj", "t")
_FIXED_TRAJ = ("trajectory_id", "outcome", "censored", "q_z", "length", "last_step", "file_order")


def free_column(baseline: TrajectoryData, candidate: TrajectoryData, column: str = "log") -> str:
    """``column``, or ``column_2``, ``column_3`` … : the first name neither log uses (so that a log
    with a metadata column called ``log`` can still be compared)."""
    taken = set(baseline.metadata_columns) | set(candidate.metadata_columns) | \
        set(baseline.steps.columns) | set(candidate.steps.columns)
    name, k = column, 1
    while name in taken:
        k += 1
        name = f"{column}_{k}"
    return name


def _check_combine(logs, names, column) -> None:
    if len(names) != 2 or not all(isinstance(n, str) for n in names):
        raise ValueError("names must be two texts, e.g. ('baseline', 'candidate')")
    for n in names:
        if not n.strip() or "/" in n or clean_text(n) != n or len(n) > 40:
            raise ValueError(f"log name {show_id(n)} must be a short non-empty text without "
                             "'/' or control characters")
    if names[0] == names[1]:
        raise ValueError("the two logs need different names")
    reserved = set(_CORE_STEP) | set(_FIXED_TRAJ) | {"weight"}
    if (not isinstance(column, str) or not column.strip() or column in reserved
            or column.startswith(("conf_", "raw_", "unc_"))):
        raise ValueError(f"column {show_id(column)} cannot name the log: it is empty or a name "
                         "of the log format")
    for n, d in zip(names, logs):
        if column in d.metadata_columns or column in d.steps.columns:
            raise ValueError(f"the {show_id(n)} log already has a column {show_id(column)}; "
                             "choose another column=")


def _log_part(data: TrajectoryData, name: str, keep_cols: list[str], to_steps: set,
              offset: int, column: str):
    """One log's steps and trajectories: ids prefixed ``name/``, codes shifted by ``offset``,
    the trajectory-level columns in ``to_steps`` copied onto the steps."""
    codes = data.steps["traj"].to_numpy()
    steps = data.steps[[c for c in keep_cols if c in data.steps.columns]].copy()
    for c in to_steps & set(data.metadata_columns):
        steps[c] = data.trajectories[c].to_numpy()[codes]
    steps["trajectory_id"] = name + "/" + data.steps["trajectory_id"].astype(str)
    steps["traj"] = codes + offset
    traj = data.trajectories.drop(columns=list(to_steps & set(data.metadata_columns)))
    traj = traj.assign(trajectory_id=name + "/" + traj["trajectory_id"].astype(str))
    traj[column] = name
    return steps, traj


def _combined_notes(logs, names, column: str, preds: list, signals: dict, weight: bool) -> list[str]:
    """Both logs' notes prefixed with their names, then what combining did and left out."""
    # each note's template kept (a Text): every front end words the settings it names its own way
    notes = [Text(f"{n}: {getattr(note, 'template', note)}") for n, d in zip(names, logs) for note in d.notes]
    notes.append(f"two logs combined, column {show_id(column)} names each run's log; trajectory "
                 f"ids are prefixed with it ({show_id(names[0] + '/…')}, "
                 f"{show_id(names[1] + '/…')}) so that ids of the two logs stay distinct.")
    for n, d in zip(names, logs):
        only = [p for p in d.predictors if p not in preds] + [s for s in d.signals
                                                              if s not in signals]
        if only:
            notes.append(f"left out, in the {show_id(n)} log only: "
                         f"{', '.join(show_id(p) for p in only)}.")
    if not weight and any("weight" in d.steps.columns for d in logs):
        notes.append("the 'weight' column is in one log only and was left out.")
    return notes


def combine_logs(baseline: TrajectoryData, candidate: TrajectoryData,
                 names: tuple[str, str] = ("baseline", "candidate"),
                 column: str = "log", max_rows: int | None = None,
                 allow_no_predictor: bool = False) -> TrajectoryData:
    """Two logs as one, with a trajectory-level column naming the log of each run.

    ``group_table(combined, column)`` and ``group_difference(combined, column, names[0],
    names[1])`` then compare the two logs (candidate − baseline); with a task column in both
    logs the comparison can be paired by task.

    - Every trajectory id is prefixed with its log's name (``baseline/t1``, ``candidate/t1``),
      so ids that occur in both logs stay distinct runs; names may not contain "/".
    - Only the predictors (``conf_<name>``) and signals present in *both* logs are kept: a
      predictor of one log only could not be compared. The ones left out are named in
      ``notes``. A ``weight`` column is kept only when both logs have one.
    - Metadata columns of either log are kept (missing, hence group ``"(missing)"``, for the
      other log's runs); a column that changes within runs in one log is step-level in both.
    - ``notes`` holds the notes of both logs prefixed with their names; ``reading`` is
      ``{"format": "combined", "logs": {name: reading}}``; ``source`` names both sources.

    Parameters
    ----------
    baseline, candidate : TrajectoryData
    names : tuple of str
        Names of the two logs (the group labels), different, without "/".
    column : str
        Name of the new metadata column; not a column of either log.
    allow_no_predictor : bool
        Return the two logs' runs even when they share no predictor or signal (the comparison of
        success, steps, cost and duration needs none: :mod:`tpsviz.diagnostics.versus_runs`).
    max_rows : int, optional
        Most step rows of the combined log (default ``TPSVIZ_MAX_ROWS``, the largest log this
        installation reads: two logs at the cap would make one of twice the cap).

    Returns
    -------
    TrajectoryData

    Raises
    ------
    ValueError
        Bad names or column, no predictor or signal common to both logs (unless
        ``allow_no_predictor``), or more than
        ``max_rows`` step rows together.
    """
    logs = (baseline, candidate)
    _check_combine(logs, names, column)
    cap = limits_from_env().max_rows if max_rows is None else int(max_rows)
    if baseline.n_steps + candidate.n_steps > cap:
        raise ValueError(f"the two logs have {baseline.n_steps + candidate.n_steps:,} step rows together, more "
                         f"than the {cap:,} of the largest log this installation reads (TPSVIZ_MAX_ROWS); "
                         "compare smaller logs (filter them first) or raise the limit")
    preds = [p for p in baseline.predictors if p in candidate.predictors]
    signals = {s: d for s, d in baseline.signals.items() if s in candidate.signals}
    if not preds and not signals and not allow_no_predictor:
        raise ValueError("the two logs have no predictor (conf_<name>) or signal in common")
    weight = ["weight"] if all("weight" in d.steps.columns for d in logs) else []
    notes = _combined_notes(logs, names, column, preds, signals, bool(weight))
    step_meta = list(dict.fromkeys(c for d in logs for c in d.step_metadata_columns))
    keep_cols = list(_CORE_STEP) + [f"conf_{p}" for p in preds] + list(signals) + weight + step_meta
    to_steps = set(step_meta)
    part_b = _log_part(baseline, names[0], keep_cols, to_steps, 0, column)
    part_c = _log_part(candidate, names[1], keep_cols, to_steps, baseline.n_trajectories, column)
    steps = pd.concat([part_b[0], part_c[0]], ignore_index=True)
    traj = pd.concat([part_b[1], part_c[1]], ignore_index=True)
    source = f"{names[0]}: {baseline.source} + {names[1]}: {candidate.source}"
    reading = {"format": "combined", "logs": {n: d.reading for n, d in zip(names, logs)}}
    return TrajectoryData(steps, traj, preds, signals, source, notes, reading)
