"""The unit of inference of a log: runs, or the tasks they repeat (docs/theory.md §6.1).

Runs that repeat a task (trials, epochs, the same task id several times) are not independent: an
easy task gives all its runs high scores. An SE over runs then treats correlated runs as
independent and is too small; the unit is the task (the cluster), not the run (Miller 2024,
"Adding Error Bars to Evals", arXiv 2411.00640).

- :func:`task_column`: the run-level column that names the task (the one a harness reader recorded,
  else ``task``/``task_id``/``task_name``); the reference ``ref:task`` and the pairing of groups by
  task use the same column.
- :func:`run_clusters`: the cluster of every run under a choice ``"auto"``, ``"run"`` or a column,
  as :class:`Clusters` (codes 0..K−1, the column, K, and words for the SE that uses them).
- :func:`text_values`: a column's values as labels (text without surrounding spaces; None when
  missing or blank), the one reading of a task's (or a group's) value.

The arithmetic of a clustered SE and bootstrap is :mod:`tpsviz.core.inference`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import SettingError
from tpsviz.core.schema import show_id
from tpsviz.core.wording import setting

__all__ = ["TASK_COLUMNS", "CLUSTER_CHOICES", "Clusters", "task_column", "text_values", "run_clusters",
           "by_run", "check_cluster_by"]

#: metadata columns taken as the task, in this order (any case), when the reader names none
TASK_COLUMNS = ("task", "task_id", "task_name")
#: the choices besides a column name: ``auto`` (the task column when a task has ≥ 2 runs), ``run``
CLUSTER_CHOICES = ("auto", "run")


def task_column(data: TrajectoryData, exclude=()) -> str | None:
    """The run-level metadata column that names the task.

    The column the reader recorded (``reading["task_column"]``: tau-bench and tau2-bench
    ``task_id``, Inspect AI ``sample_id`` across epochs), else the first of :data:`TASK_COLUMNS`
    the log has (the exact spelling first, then any case); None without one.

    Parameters
    ----------
    data : TrajectoryData
    exclude : collection of str
        Columns not to take (e.g. the column runs are grouped by).

    Returns
    -------
    str or None
    """
    cols = [c for c in data.metadata_columns if c not in set(exclude)]
    named = data.reading.get("task_column") if isinstance(data.reading, dict) else None
    if named in cols:
        return named
    exact = next((c for c in TASK_COLUMNS if c in cols), None)
    if exact is not None:
        return exact
    low = {str(c).lower(): c for c in cols}
    return next((low[c] for c in TASK_COLUMNS if c in low), None)


def text_values(col) -> np.ndarray:
    """Every value as text without surrounding spaces, None where it is missing (NaN, None) or blank.

    3 and "3" are one task, and so are "X" and "X " (trajectory ids are stripped alike).

    Parameters
    ----------
    col : Series or array_like

    Returns
    -------
    ndarray of object
    """
    s = pd.Series(col, dtype=object) if not isinstance(col, pd.Series) else col
    missing = s.isna().to_numpy()
    text = s.astype(str).str.strip().to_numpy(dtype=object)
    text[missing | (text == "")] = None
    return text


@dataclass(frozen=True, eq=False)
class Clusters:
    """The cluster of every run of a log: the units an SE or a bootstrap treats as independent.

    Attributes
    ----------
    codes : ndarray of int
        One code per run (in the log's run order), 0 … K−1, numbered by first appearance.
    column : str or None
        The task column; None when every run is its own cluster (the SE by run).
    without_task : ndarray of bool or None
        Per run: no task value, so a cluster of its own (None: none such).
    reason : str
        Why this unit (``"auto: …"``, ``"asked for"``).
    """

    codes: np.ndarray
    column: str | None = None
    without_task: np.ndarray | None = None
    reason: str = ""

    @property
    def unit(self) -> str:
        """``"task"`` or ``"run"``."""
        return "run" if self.column is None else "task"

    @property
    def clustered(self) -> bool:
        """Whether runs are grouped into tasks (else every run is its own unit)."""
        return self.column is not None

    @property
    def n_runs(self) -> int:
        """Runs."""
        return int(self.codes.size)

    @property
    def n_clusters(self) -> int:
        """K, the clusters (tasks, and runs without a task)."""
        return int(self.codes.max()) + 1 if self.codes.size else 0

    @property
    def n_without_task(self) -> int:
        """Runs without a task value (each a cluster of its own)."""
        return 0 if self.without_task is None else int(self.without_task.sum())

    @property
    def n_tasks(self) -> int:
        """The tasks: clusters that are not a run without a task."""
        return self.n_clusters - self.n_without_task

    def groups(self) -> np.ndarray | None:
        """The codes for :mod:`tpsviz.core.inference` (None by run: the plain path, the same numbers)."""
        return self.codes if self.clustered else None

    def of(self, keep) -> "Clusters":
        """The clusters of the runs where the boolean array ``keep`` is True, numbered 0 … K'−1 again."""
        keep = np.asarray(keep, dtype=bool)
        if keep.all():
            return self
        sub = self.codes[keep]
        if not self.clustered:
            return by_run(sub.size, self.reason)
        _, first, codes = np.unique(sub, return_index=True, return_inverse=True)
        rank = np.empty(first.size, dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(first.size)  # numbered by first appearance
        lone = None if self.without_task is None else self.without_task[keep]
        return Clusters(rank[codes.ravel()], self.column, lone, self.reason)

    def to_json(self) -> dict:
        """``{"unit", "column", "clusters", "runs", "runs_without_task", "reason"}``."""
        return {"unit": self.unit, "column": self.column, "clusters": self.n_clusters, "runs": self.n_runs,
                "runs_without_task": self.n_without_task, "reason": self.reason}

    def words(self) -> str:
        """The SE in words: ``"SE clustered by task (50 tasks)"`` or ``"SE by run"``."""
        if not self.clustered:
            return "SE by run"
        lone = (f"; {self.n_without_task:,} run{'s' if self.n_without_task != 1 else ''} without a task "
                "count as tasks of their own") if self.n_without_task else ""
        return f"SE clustered by task ({self.n_tasks:,} task{'s' if self.n_tasks != 1 else ''}{lone})"

    def line(self) -> str:
        """:meth:`words` with the column and why: ``"SE clustered by task (50 tasks; column 'task_id';
        auto: runs repeat tasks)"``, ``"SE by run (auto: the log names no task)"``."""
        why = "; ".join(x for x in ((f"column {show_id(self.column)}" if self.clustered else ""), self.reason) if x)
        words = self.words()
        if not why:
            return words
        return f"{words[:-1]}; {why})" if words.endswith(")") else f"{words} ({why})"

    def bootstrap_words(self) -> str:
        """What a bootstrap replicate resamples: ``"tasks"`` or ``"trajectories"``."""
        return "tasks" if self.clustered else "trajectories"


def by_run(n: int, reason: str = "") -> Clusters:
    """Every run its own cluster (the SE by run)."""
    return Clusters(np.arange(int(n)), None, None, reason)


def check_cluster_by(by) -> str:
    """Refuse a cluster choice that is not ``"auto"``, ``"run"`` or a column name (non-empty text)."""
    if not isinstance(by, str) or not by.strip():
        raise SettingError(f"{setting('cluster_by')} must be 'auto', 'run' or a run-level column's name, got {by!r}")
    return by


def _codes(text: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(codes, runs without a task, tasks): the codes of task labels by first appearance, a run without
    one (None) a code of its own after the tasks'."""
    codes, uniques = pd.factorize(text, sort=False)  # (None: code −1)
    codes = codes.astype(np.int64)
    lone = codes < 0
    codes[lone] = len(uniques) + np.arange(int(lone.sum()))
    return codes, lone, len(uniques)


def run_clusters(data: TrajectoryData, by: str = "auto", exclude=()) -> Clusters:
    """The cluster of every run of ``data``.

    Parameters
    ----------
    data : TrajectoryData
    by : str
        ``"auto"``: the task column (:func:`task_column`) when some task has 2 runs or more, else
        by run; ``"run"``: by run; a column name: that run-level metadata column.
    exclude : collection of str
        Columns ``"auto"`` does not take (the column runs are grouped by: within a group it is one
        value, so it cannot be the task).

    Returns
    -------
    Clusters
        Runs without a task value are each a cluster of their own (counted in ``n_without_task``).

    Raises
    ------
    ValueError
        For a column that is not run-level metadata of the log.
    """
    by = check_cluster_by(by)
    n = data.n_trajectories
    if by == "run":
        return by_run(n, "asked for")
    column = task_column(data, exclude) if by == "auto" else by
    if by != "auto" and column not in data.metadata_columns:
        cols = data.metadata_columns
        have = ", ".join(show_id(c) for c in cols[:20]) if cols else "none"
        raise SettingError(f"{setting('cluster_by')} {show_id(column)} is not a run-level metadata column "
                           f"of the log (they are: {have}); give one of them, 'auto' or 'run'")
    if column is None:
        return by_run(n, "auto: the log names no task")
    codes, lone, tasks = _codes(text_values(data.trajectories[column]))
    if by == "auto":
        if tasks == n - int(lone.sum()):
            return by_run(n, f"auto: no task of {show_id(column)} has 2 runs or more")
        if tasks + int(lone.sum()) < 2:
            return by_run(n, f"auto: {show_id(column)} names one task only")
    return Clusters(codes, column, lone if lone.any() else None,
                    "auto: runs repeat tasks" if by == "auto" else "asked for")
