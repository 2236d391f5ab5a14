"""Validating a long-format frame into a :class:`TrajectoryData` (docs/formats.md).

One row per (trajectory, step). Every defect is collected and raised together as a
:class:`LogFormatError` naming rows (lines), trajectories and columns, never cell values.
Column names are matched to the long format regardless of case, with a note.

:func:`from_frame` prepares the frame and checks its header (:mod:`tpsviz.io.tables.header`), reads run
ids and steps (:mod:`tpsviz.io.tables.run_ids`) and cells (:mod:`tpsviz.io.tables.cells`), then checks the values
and builds the steps and runs frames here. The per-run labels (:func:`per_run_constant`,
:func:`run_censoring`) are shared with the multi-class and continuous readers (docs/multiclass.md,
docs/continuous.md); the notes and hints with the out-of-core engines.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import RESERVED, show_id
from tpsviz.core.wording import setting
from tpsviz.io.tables.cells import id_examples, parse_boolean, parse_numeric, rounding_into_unit, row_examples
from tpsviz.io.tables.header import check_header, prepared_frame
from tpsviz.io.tables.run_ids import code_runs, step_numbers, trajectory_ids

__all__ = ["from_frame", "per_run_constant", "run_censoring", "partial_outcome_note", "percent_note",
           "percent_hint"]


def from_frame(df: pd.DataFrame, source: str = "<frame>", percent=()) -> TrajectoryData:
    """Validate a long-format frame (one row per (trajectory, step)) into a :class:`TrajectoryData`.

    Parameters
    ----------
    df : DataFrame
        Columns as in docs/formats.md. Values may be strings (as read from CSV) or typed. An optional
        ``_where`` column gives each row's location for messages (default "row N").
    source : str
        Name used in messages.
    percent : iterable of str
        Predictors given in percent (0–100), as ``conf_<name>`` or ``<name>``: divided by 100.

    Returns
    -------
    TrajectoryData

    Raises
    ------
    LogFormatError
    """
    notes: list[str] = list(df.attrs.get("notes", []))
    df, where = prepared_frame(df, source, notes)
    cols = [c for c in df.columns if c != "_where"]
    conf_cols, sig_cols, percent_cols = check_header(cols, percent, source, require_forecast=False)
    problems: list[str] = []
    tid, tid_missing = trajectory_ids(df, where, notes, problems)
    step = step_numbers(df, tid, tid_missing, where, problems)
    outcome = _outcomes(df, where, problems)
    values = _value_columns(df, cols, conf_cols, sig_cols, percent_cols, where, notes, problems)
    qz = values.pop("q_z")
    cens = values.pop("censored")
    if problems:
        raise LogFormatError(source, problems)
    codes, uniques, order = code_runs(tid, step)
    outcome_t, censored, qz_t = _run_labels(outcome, cens, qz, codes, uniques, order, notes, source)
    steps, starts, lengths = _steps_frame(tid, step, codes, order, values, notes)
    traj = pd.DataFrame({
        "trajectory_id": np.asarray(uniques, dtype=object).astype(str),
        "outcome": outcome_t,
        "censored": censored.astype(bool),
        "q_z": qz_t,
        "length": lengths.astype(np.int64),
        "last_step": steps["step"].to_numpy()[starts + lengths - 1],
        "file_order": _file_order(order, codes, len(uniques)),
    })
    _metadata(df, cols, values, codes, order, len(uniques), steps, traj, notes)
    _forecast_notes(steps, conf_cols, notes)
    predictors = [c[len("conf_"):] for c in conf_cols]
    signals = {c: (1 if c.startswith("raw_") else -1) for c in sig_cols}
    return TrajectoryData(steps, traj, predictors, signals, source, notes)


def per_run_constant(values: pd.Series, codes: np.ndarray, n: int):
    """A value that must be constant within each run (outcome, censored, q_Z).

    Parameters
    ----------
    values : Series of float
        One value per row (NaN where missing).
    codes : ndarray of int
        Run code of each row (0 … n − 1), aligned with ``values``.
    n : int
        Number of runs.

    Returns
    -------
    value : ndarray of float
        The run's value (its smallest present value; NaN where none is present).
    conflict : ndarray of bool
        Runs whose present values differ.
    """
    present = values.notna().to_numpy()
    first = pd.Series(values.to_numpy()[present]).groupby(codes[present]).agg(["min", "max"])
    out = np.full(n, np.nan)
    conflict = np.zeros(n, dtype=bool)
    out[first.index.to_numpy()] = first["min"].to_numpy()
    conflict[first.index.to_numpy()] = (first["min"] != first["max"]).to_numpy()
    return out, conflict


def _outcomes(df: pd.DataFrame, where, problems: list[str]) -> pd.Series:
    """Outcomes: 1, 0 (also true/false) or empty (censored)."""
    outcome, out_bad = parse_numeric(df["outcome"])
    if pd.api.types.is_bool_dtype(df["outcome"]) is False and out_bad.any():
        # accept true/false words too
        ob, ob_bad = parse_boolean(df["outcome"])
        outcome = outcome.where(~out_bad, ob)
        out_bad = out_bad & ob_bad
    not01 = outcome.notna() & ~outcome.isin([0.0, 1.0])
    if out_bad.any() or not01.any():
        m = out_bad | not01
        problems.append("column 'outcome' must be 1 (success), 0 (failure) or empty (censored); "
                        f"not so at {row_examples(where[m])}")

    return outcome


def percent_note(cols: list[str]) -> str:
    """The note on the predictors read in percent."""
    return f"{', '.join(cols)}: read as percentages (divided by 100)."


def percent_hint(col: str) -> str:
    """The words added to the message on forecasts outside [0, 1] when every value of ``col``
    lies in [0, 100]."""
    return f" (they look like percentages (0–100): say so with {setting('percent', col[len('conf_'):])})"


def _value_columns(df, cols, conf_cols, sig_cols, percent_cols, where, notes, problems) -> dict:
    """Forecasts in [0, 1], finite signals, weights ≥ 0, and the ``q_z`` and ``censored`` columns
    (all NaN when absent), as numbers by column name."""
    values: dict[str, pd.Series] = {}
    if percent_cols:
        notes.append(percent_note([c for c in conf_cols if c in percent_cols]))
    for c in conf_cols:
        num, bad = parse_numeric(df[c])
        if c in percent_cols:
            num = num / 100.0
        if bad.any():
            problems.append(f"column {show_id(c)}: not a number at {row_examples(where[bad])}")
        num = rounding_into_unit(num, c, notes)
        out = num.notna() & ((num < 0) | (num > 1))
        if out.any():
            hint = (percent_hint(c) if bool(((num >= 0) & (num <= 100)).where(num.notna(), True).all())
                    and float(num.max()) > 1 else "")
            problems.append(f"column {show_id(c)}: probabilities must be in [0, 1]; not so at "
                            f"{row_examples(where[out])}{hint}")
        values[c] = num
    for c in sig_cols:
        num, bad = parse_numeric(df[c])
        inf = num.notna() & ~np.isfinite(num)
        if bad.any() or inf.any():
            m = bad | inf
            problems.append(f"column {show_id(c)}: not a finite number at {row_examples(where[m])}")
        values[c] = num
    if "weight" in cols:
        wnum, wbad = parse_numeric(df["weight"])
        wneg = wnum.notna() & (~np.isfinite(wnum) | (wnum < 0))
        if wbad.any() or wneg.any():
            m = wbad | wneg
            problems.append("column 'weight': weights must be finite numbers >= 0; not so at "
                            f"{row_examples(where[m])}")
        values["weight"] = wnum
    if "q_z" in cols:
        qz, qbad = parse_numeric(df["q_z"])
        qout = qz.notna() & ((qz < 0) | (qz > 1))
        if qbad.any() or qout.any():
            m = qbad | qout
            problems.append("column 'q_z' (continuation success probability) must be in [0, 1] "
                            f"or empty; not so at {row_examples(where[m])}")
    else:
        qz = pd.Series(np.nan, index=df.index)
    if "censored" in cols:
        cens, cbad = parse_boolean(df["censored"])
        if cbad.any():
            problems.append("column 'censored' must be true/false or 1/0; not so at "
                            f"{row_examples(where[cbad])}")
    else:
        cens = pd.Series(np.nan, index=df.index)
    values["q_z"], values["censored"] = qz, cens
    return values


def _run_labels(outcome, cens, qz, codes, uniques, order, notes: list[str], source: str):
    """Per run: the outcome, whether it was censored, and q_Z (censored runs only)."""
    n = len(uniques)
    problems: list[str] = []

    def per_traj(series: pd.Series, label: str):
        vals, conflict = per_run_constant(series.iloc[order].reset_index(drop=True), codes, n)
        if conflict.any():
            problems.append(f"column {label!r} changes within trajectory "
                            f"{id_examples(uniques, conflict)}; it must be constant within a run")
        return vals

    outcome_t = per_traj(outcome, "outcome")
    cens_t = per_traj(cens, "censored")
    qz_t = per_traj(qz, "q_z")
    if problems:
        raise LogFormatError(source, problems)

    censored = run_censoring(outcome.iloc[order].isna().to_numpy(), outcome_t, cens_t, codes, uniques, notes,
                             problems, "trajectory", "give the outcome (1/0) or mark it censored")
    if problems:
        raise LogFormatError(source, problems)
    qz_complete = ~np.isnan(qz_t) & ~censored
    if qz_complete.any():
        notes.append(f"{int(qz_complete.sum())} complete trajectories carry a q_z value; q_z is "
                     "only used for censored runs, so it was ignored there.")
        qz_t = np.where(censored, qz_t, np.nan)

    return outcome_t, censored, qz_t


def run_censoring(row_missing: np.ndarray, outcome_t: np.ndarray, cens_t: np.ndarray, codes: np.ndarray, uniques,
                  notes: list[str], problems: list[str], noun: str, fix: str) -> np.ndarray:
    """Which runs are censored, from their outcome and the optional ``censored`` column (shared by the
    binary, multi-class and continuous readers).

    Parameters
    ----------
    row_missing : ndarray of bool
        Rows (sorted by run) whose ``outcome`` cell is empty.
    outcome_t, cens_t : ndarray of float
        Per run: the outcome (NaN: none given) and the ``censored`` flag (1/0, NaN: not given).
    codes, uniques
        Run code of every sorted row, and the run ids (for messages).
    notes, problems : list of str
        Appended to: a note when some runs give the outcome on some rows only; a problem when the
        flag and the outcome disagree.
    noun, fix : str
        How a run is called in messages ("trajectory", "run") and what to do when the outcome is empty
        on a run marked finished.

    Returns
    -------
    ndarray of bool
        Censored per run: the flag where given, else "no outcome".
    """
    partial = pd.Series(row_missing).groupby(codes).any().to_numpy() & ~np.isnan(outcome_t)
    if partial.any():
        notes.append(partial_outcome_note(int(partial.sum())))
    censored = np.where(~np.isnan(cens_t), cens_t == 1.0, np.isnan(outcome_t))
    both = censored & ~np.isnan(outcome_t)
    if both.any():
        problems.append(f"{noun} {id_examples(uniques, both)}: column 'censored' is true while 'outcome' is present; a "
                        "censored run has no observed outcome")
    neither = ~censored & np.isnan(outcome_t)
    if neither.any():
        problems.append(f"{noun} {id_examples(uniques, neither)}: 'outcome' is empty but column 'censored' says the run "
                        f"finished; {fix}")
    return censored


def partial_outcome_note(runs: int) -> str:
    """The note on runs that give the outcome on some rows only."""
    return f"{runs} run(s) give 'outcome' on some rows only; the value given was used for the whole run."


def _steps_frame(tid, step, codes, order, values: dict, notes: list[str]):
    """The steps frame (sorted by run and step, with the position t = 1 … T of every row), the
    first row of every run and the run lengths."""
    steps = pd.DataFrame({
        "trajectory_id": tid.to_numpy()[order],
        "step": step.to_numpy()[order].astype(np.int64),
        "traj": codes.astype(np.int64),
    })
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    lengths = np.diff(np.r_[starts, len(codes)])
    steps["t"] = np.arange(len(codes)) - np.repeat(starts, lengths) + 1
    renumbered = np.unique(codes[steps["step"].to_numpy() != steps["t"].to_numpy()]).size
    if renumbered:  # the schedules weigh the position t = 1 … T of a row in its run, not its step value
        notes.append(f"{renumbered} run(s) have steps that are not numbered 1, 2, …, T (a gap, a step 0 "
                     "or a late start); steps keep their order, and the weight schedules use each row's "
                     "position t = 1 … T in its run.")
    for c, v in values.items():
        steps[c] = v.to_numpy()[order]
    return steps, starts, lengths


def _file_order(order: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """Each run's rank by its first row in the file (0 = the run that appears first): the run order
    of a log without a timestamp (tpsviz.diagnostics.monitoring.monitor)."""
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, codes, order.astype(np.int64))
    return np.argsort(np.argsort(first, kind="stable"), kind="stable").astype(np.int64)


def _metadata(df, cols, values, codes, order, n, steps, traj, notes: list[str]) -> None:
    """Every other column: on the runs frame when constant within each run, else on the steps."""
    meta_cols = [c for c in cols if c not in RESERVED and c not in values]
    internal = {"t", "traj", "length", "last_step", "file_order"}  # columns tpsviz adds to the frames
    taken, meta_names = set(meta_cols), {}
    for c in meta_cols:  # t → t_log (t_log_2 … when the log has a t_log too)
        name, k = c, 2
        if c in internal:
            name = f"{c}_log"
            while name in taken:
                name, k = f"{c}_log_{k}", k + 1
            taken.add(name)
        meta_names[c] = name
    moved = [c for c, m in meta_names.items() if c != m]
    if moved:
        notes.append("metadata column(s) " + ", ".join(f"{show_id(c)} kept as {show_id(meta_names[c])}"
                                                       for c in moved)
                     + " (the name is used by tpsviz itself).")
    for c in meta_cols:
        col = df[c].iloc[order].reset_index(drop=True)
        try:
            nun = col.groupby(codes).nunique(dropna=False)
        except TypeError:  # unhashable (lists/dicts from JSON): keep as text at step level
            steps[meta_names[c]] = col.astype(str).to_numpy()
            continue
        if (nun <= 1).all():
            traj[meta_names[c]] = col.groupby(codes).first().reindex(range(n)).to_numpy()
        else:
            steps[meta_names[c]] = col.to_numpy()


def _forecast_notes(steps: pd.DataFrame, conf_cols: list[str], notes: list[str]) -> None:
    """Say which predictors have missing forecasts (or none at all)."""
    for c in conf_cols:
        miss = int(steps[c].isna().sum())
        if miss == len(steps):
            notes.append(f"{c}: the column holds no forecast at all; the predictor is listed but "
                         "cannot be scored.")
        elif miss:
            notes.append(f"{c}: {miss} step(s) have no forecast; they are left out of that "
                         "predictor's score (and counted).")
