"""Which run and which step a row of a long frame belongs to (docs/formats.md, "Trajectory ids").

Run ids are read as text without surrounding spaces, spelled as every engine spells them
(:func:`id_text`); step numbers are whole numbers from 0 to 2^53, each once per run; the rows are
then sorted by (run, step) (:func:`code_runs`). Shared by the binary, multi-class and continuous
readers and by the out-of-core engines (the notes and the message on durations).
"""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd

from tpsviz.io.tables.cells import is_missing, parse_numeric, row_examples

__all__ = ["MAX_STEP", "DURATION_IDS", "trajectory_ids", "id_text", "merged_ids_note", "typed_ids_note",
           "step_numbers", "code_runs"]

MAX_STEP = 2 ** 53   # largest step index kept exactly (an int64 and a float64 agree below it)


def trajectory_ids(df: pd.DataFrame, where, notes: list[str], problems: list[str]):
    """Run ids as text without surrounding spaces (as ``str.strip``).

    Parameters
    ----------
    df : DataFrame
        From :func:`tpsviz.io.tables.header.prepared_frame`.
    where : Series-like
        Its row locations.
    notes, problems : list of str
        Receive a note when ids were joined (spaces, 7 and "7"), and the rows without an id.

    Returns
    -------
    tid : Series of str
    missing : Series of bool
        Rows without an id.
    """
    tid_missing = is_missing(df["trajectory_id"])
    if tid_missing.any():
        problems.append(f"column 'trajectory_id': empty at {row_examples(where[tid_missing])}")
    raw_tid = id_text(df["trajectory_id"])
    if raw_tid is None:
        problems.append(DURATION_IDS)
        raw_tid = df["trajectory_id"].astype(str)
    tid = raw_tid.str.strip()
    merged = raw_tid.nunique() - tid.nunique()
    if merged > 0:  # ids are read without surrounding spaces: say when that joins two spellings
        notes.append(merged_ids_note(merged))
    col = df["trajectory_id"]
    if col.dtype == object and pd.api.types.infer_dtype(col, skipna=True).startswith("mixed"):
        typed = col.map(lambda v: (type(v).__name__, str(v))).nunique()
        if typed > raw_tid.nunique():  # 7 and "7", true and "True" (JSON): one run once read as text
            notes.append(typed_ids_note(typed - raw_tid.nunique()))

    return tid, tid_missing


DURATION_IDS = ("column 'trajectory_id' holds durations, which do not name runs; store the ids as text or "
                "whole numbers")


def id_text(col: pd.Series) -> pd.Series | None:
    """Stored ids as text, spelled as every engine spells them (docs/formats.md, "Trajectory ids"):
    as ``str`` does, except timestamps, which read as DuckDB writes them: ``YYYY-MM-DD HH:MM:SS``
    and the fraction of a second without trailing zeros, a time-zone-aware one as its instant in
    UTC followed by ``+00:00`` (pandas spells a column's timestamps to the precision of its most
    precise value, and in the column's own time zone, which the files do not always keep).
    None for durations, which name no run (Parquet ``duration`` and ``INTERVAL``).

    Parameters
    ----------
    col : Series
        The ``trajectory_id`` column as read.

    Returns
    -------
    Series of str, or None
    """
    if pd.api.types.is_timedelta64_dtype(col.dtype):
        return None
    if isinstance(col.dtype, pd.DatetimeTZDtype):
        return _timestamp_text(col.dt.tz_convert("UTC").dt.tz_localize(None)) + "+00:00"
    if pd.api.types.is_datetime64_dtype(col.dtype):
        return _timestamp_text(col)
    if col.dtype == object:  # (a Parquet INTERVAL reads as pyarrow's MonthDayNano values)
        first = np.flatnonzero(col.notna().to_numpy())[:1]
        if len(first) and type(col.iloc[first[0]]).__name__ in ("MonthDayNano", "timedelta", "Timedelta"):
            return None
        if pd.api.types.infer_dtype(col, skipna=True) in ("datetime", "datetime64", "mixed"):
            return col.map(lambda v: _one_timestamp(v) if isinstance(v, datetime.datetime) else v).astype(str)
    return col.astype(str)


def _one_timestamp(v: datetime.datetime) -> str:
    """One timestamp (among other values) spelled as :func:`_timestamp_text` spells a column's."""
    zoned = v.tzinfo is not None and v.utcoffset() is not None
    if zoned:
        v = v.astimezone(datetime.timezone.utc)
    ns = v.microsecond * 1000 + int(getattr(v, "nanosecond", 0))
    fraction = f".{ns:09d}".rstrip("0") if ns else ""
    return (f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}{fraction}"
            + ("+00:00" if zoned else ""))


def _timestamp_text(col: pd.Series) -> pd.Series:
    """Naive timestamps spelled as DuckDB's CAST to VARCHAR spells them (NaT as "NaT")."""
    text = pd.Series(np.datetime_as_string(col.to_numpy()), index=col.index).str.replace("T", " ", n=1)
    # (a fraction of a second loses its trailing zeros, and its point when nothing is left)
    return text.str.replace(r"(\.\d*?)0+$", r"\1", regex=True).str.replace(r"\.$", "", regex=True)


def merged_ids_note(merged: int) -> str:
    """The note on stored ids that became one run once stripped of surrounding whitespace."""
    return (f"trajectory ids are read without surrounding spaces: {merged} id(s) that differ from another only "
            "by them were read as the same run.")


def typed_ids_note(joined: int) -> str:
    """The note on ids written both as a number and as text, read as one run."""
    return (f"trajectory ids are read as text: {joined} id(s) written as a number or true/false and as text "
            "(e.g. 7 and \"7\") were read as the same run.")


def step_numbers(df: pd.DataFrame, tid: pd.Series, tid_missing, where, problems: list[str]) -> pd.Series:
    """Step numbers: whole numbers from 0 to 2^53, each once per run.

    Parameters
    ----------
    df : DataFrame
        From :func:`tpsviz.io.tables.header.prepared_frame`.
    tid, tid_missing : Series
        From :func:`trajectory_ids`.
    where : Series-like
        Row locations.
    problems : list of str
        Receives the rows with a bad step, or the repeated (trajectory_id, step) rows.

    Returns
    -------
    Series of float
    """
    step, step_bad = parse_numeric(df["step"])
    step_missing = step.isna() & ~step_bad
    non_int = step.notna() & ~((step == np.floor(step)) & (step >= 0) & (step < MAX_STEP))
    if step_bad.any() or non_int.any() or step_missing.any():
        m = step_bad | non_int | step_missing
        problems.append("column 'step': every row needs a whole number from 0 to 2^53; not so "
                        f"at {row_examples(where[m])}")
    else:
        key = pd.DataFrame({"t": tid, "s": step})
        dup = key.duplicated(keep=False) & ~tid_missing
        if dup.any():
            problems.append("duplicate (trajectory_id, step): the same step appears twice in a "
                            f"run at {row_examples(where[dup])}")

    return step


def code_runs(tid: pd.Series, step: pd.Series):
    """The rows sorted by (run, step).

    Parameters
    ----------
    tid : Series of str
        Run id of each row.
    step : Series
        Step number of each row.

    Returns
    -------
    codes : ndarray of int
        Run code (0 … n − 1, in id order) of each row, in sorted order.
    uniques : Index
        The run ids, sorted.
    order : ndarray of int
        The sort: row ``order[i]`` is the i-th of the sorted rows.
    """
    codes_unsorted, uniques = pd.factorize(tid, sort=True)
    order = np.lexsort((step.to_numpy(), codes_unsorted))
    return codes_unsorted[order], uniques, order
