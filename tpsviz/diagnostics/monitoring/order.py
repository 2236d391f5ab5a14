"""The order runs are monitored in (docs/theory.md §11): the log's own time where it records one.

- :func:`log_time_column`: the column of the log's own time, by name (:data:`TIME_COLUMNS`: the
  readers write ``start_time``, a table may have ``timestamp``), among the columns whose values read
  as date-times or numbers (:func:`order_columns`); None when the log records no time.
- :func:`run_order`: the runs in the order of a column (each run at its earliest value when the
  column has a value per step), or in the order of the file.
- :func:`order_sentence`: which order was used, in words ("runs ordered by start_time (recorded by
  the log)", "runs in file order: the log records no time").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.schema import show_id

__all__ = ["TIME_COLUMNS", "log_time_column", "order_sentence", "run_order", "order_columns"]

#: names of a run's time, most preferred first (compared in lower case): the start of a run (the
#: harness and trace readers write ``start_time``, tpsviz.io.harness.times), a table's timestamp,
#: then other usual names, then the end of a run
TIME_COLUMNS = ("start_time", "timestamp", "started_at", "start", "created_at", "datetime", "time", "date", "ts",
                "end_time", "completed_at", "ended_at")


def log_time_column(data: TrajectoryData) -> str | None:
    """The column of the log's own time, if it records one.

    Parameters
    ----------
    data : TrajectoryData

    Returns
    -------
    str or None
        The first name of :data:`TIME_COLUMNS` (in lower case) that is one of :func:`order_columns`
        (run-level columns before step-level ones); None when no such column exists.
    """
    usable = order_columns(data)
    by_name = {}
    for c in usable:
        by_name.setdefault(str(c).lower(), c)
    return next((by_name[n] for n in TIME_COLUMNS if n in by_name), None)


def order_sentence(data: TrajectoryData, by: str | None) -> str:
    """Which order runs are monitored in, and where it comes from, in words.

    Parameters
    ----------
    data : TrajectoryData
    by : str or None
        The column runs are ordered by (None: the order of the file).

    Returns
    -------
    str
        ``runs ordered by start_time (recorded by the log)`` for the log's own time
        (:func:`log_time_column`), ``runs ordered by the column 'x'`` for another column,
        ``runs in file order: the log records no time`` (or ``…: chosen; the log records time in
        start_time``) without one.
    """
    own = log_time_column(data)
    step = by is not None and by in data.step_metadata_columns and by not in data.metadata_columns
    each = " (each run at its earliest value)" if step else ""
    if by is not None and by == own:
        return f"runs ordered by {str(by)[:40]} (recorded by the log){each}"
    if by is not None:
        return f"runs ordered by the column {show_id(by)}{each}"
    order = ("runs in file order" if "file_order" in data.trajectories
             else "runs in trajectory id order (the file order is not known)")
    if own is None:
        return f"{order}: the log records no time"
    return f"{order}, as chosen (the log records time in {str(own)[:40]})"


def run_order(data: TrajectoryData, by: str | None = None) -> tuple[np.ndarray, pd.Series, str, int]:
    """The runs of ``data`` in monitoring order.

    Parameters
    ----------
    data : TrajectoryData
    by : str, optional
        A column of numbers, or of date-times in ISO 8601 or another form pandas reads: run-level
        (``data.metadata_columns``), or step-level (``data.step_metadata_columns``, e.g. a timestamp
        per step: a run then stands at its earliest readable value). Default: the order in which runs
        first appear in the file.

    Returns
    -------
    codes : ndarray of int
        Run codes (rows of ``data.trajectories``) in monitoring order; runs without a usable order
        value are left out.
    key : Series
        The order value of each of those runs (timestamps as UTC date-times; in file order the run
        number 1, 2, …).
    words : str
        The order in words.
    n_excluded : int
        Runs left out for a missing or unreadable order value.

    Raises
    ------
    ValueError
        If ``by`` is not a metadata column, or no run has a usable value.
    """
    t = data.trajectories
    rank = t["file_order"].to_numpy() if "file_order" in t else np.arange(len(t))
    if by is None:
        codes = np.argsort(rank, kind="stable")
        words = ("order of first appearance in the file" if "file_order" in t
                 else "trajectory id order (the file order is not known)")
        return codes, pd.Series(np.arange(1, len(codes) + 1), name="run"), words, 0
    step_level = by in data.step_metadata_columns
    if by not in data.metadata_columns and not step_level:
        usable = data.metadata_columns + data.step_metadata_columns
        raise ValueError(f"no metadata column {by!r} to order runs by" + (
            f"; the log has {', '.join(map(repr, usable[:12]))}" if usable else "; this log has no metadata column"))
    if step_level:  # a value per step: the run's earliest readable one
        values, kind = _order_values(data.steps[by])
        key = values.groupby(data.steps["traj"].to_numpy()).min().reindex(range(len(t)))
    else:
        key, kind = _order_values(t[by])
    usable = key.notna().to_numpy()
    if not usable.any():
        raise ValueError(f"column {by!r}: no run has a value that reads as a number or a date-time")
    idx = np.flatnonzero(usable)
    k = key.iloc[idx]
    sort_key = k.to_numpy(dtype="datetime64[ns]").astype(np.int64) if kind == "time" else k.to_numpy(dtype=float)
    codes = idx[np.lexsort((rank[idx], sort_key))]
    words = (f"order of the {'time' if kind == 'time' else 'number'} column {by!r}"
             + (" (each run at its earliest value)" if step_level else ""))
    return codes, key.iloc[codes].reset_index(drop=True).rename(by), words, int((~usable).sum())


def order_columns(data: TrajectoryData, probe: int = 200) -> list[str]:
    """Metadata columns runs can be ordered by (run-level first, then step-level): those whose first
    ``probe`` non-empty values read as numbers or date-times at least half of the time."""
    out = []
    for frame, cols in ((data.trajectories, data.metadata_columns), (data.steps, data.step_metadata_columns)):
        for c in cols:
            head = frame[c].dropna().head(probe)
            if len(head) and _order_values(head)[0].notna().mean() >= 0.5:
                out.append(c)
    return out


def _order_values(raw: pd.Series) -> tuple[pd.Series, str]:
    """Numbers if the column holds numbers, else UTC date-times (NaN/NaT where unreadable)."""
    if pd.api.types.is_datetime64_any_dtype(raw):
        return pd.to_datetime(raw, utc=True), "time"
    if pd.api.types.is_bool_dtype(raw):
        return pd.Series(np.nan, index=raw.index), "number"
    num = pd.to_numeric(raw, errors="coerce")
    if num.notna().sum() >= max(1, raw.notna().sum() // 2):
        return num.astype(float).where(np.isfinite(num.astype(float))), "number"
    text = raw.astype("string")
    with np.errstate(all="ignore"):
        when = pd.to_datetime(text, errors="coerce", utc=True, format="mixed")
    return when, "time"


