"""Which runs and which step rows an analysis looks at (docs/architecture.md, "Analysis").

The dashboard and the CLI narrow a log the same way:

- **run filters** keep the runs whose metadata match (:func:`filter_mask`);
- a **scope** picks the step rows a reliability diagram or a CORP decomposition uses: every
  labelled row, the final forecast of each run, or one step t (:func:`scope_rows`);
- **by-step** views keep only the steps with enough rows to say anything (:func:`steps_with_rows`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.diagnostics.leaderboard import labelled_rows
from tpsviz.core.cancel import checkpoint

__all__ = ["SCOPES", "STEP_MIN_ROWS", "filter_mask", "scope_rows", "steps_with_rows", "scoped_forecasts"]

#: scopes of :func:`scope_rows`
SCOPES = ("all", "final", "step")
#: a step enters a by-step view only with at least this many rows
STEP_MIN_ROWS = 30


def filter_mask(data: TrajectoryData, filters: tuple) -> np.ndarray:
    """Runs kept by metadata filters.

    Parameters
    ----------
    data : TrajectoryData
    filters : tuple of (column, kind, values)
        ``kind`` ``"in"``: the column's value (as text) is one of ``values``; ``"range"``: the
        numeric value lies in ``[values[0], values[1]]`` (a value that is not a number is
        dropped). A filter on a column the log does not have keeps every run.

    Returns
    -------
    ndarray of bool
        One entry per trajectory (``data.trajectories`` order).
    """
    keep = np.ones(data.n_trajectories, dtype=bool)
    t = data.trajectories
    for col, kind, values in filters:
        if col not in t:
            continue
        if kind == "in":
            keep &= t[col].astype(str).isin(values).to_numpy()
        elif kind == "range":
            v = pd.to_numeric(t[col], errors="coerce").to_numpy()
            keep &= (v >= values[0]) & (v <= values[1])
    return keep


def scope_rows(data: TrajectoryData, scope: str = "all", step: int | None = None,
               pseudo: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step rows in a scope, with their outcome labels and run codes.

    Parameters
    ----------
    data : TrajectoryData
    scope : {"all", "final", "step"}
        Every labelled row, the last observed step of each run, or step ``t == step``.
    step : int, optional
        The step t of scope ``"step"``.
    pseudo : bool
        False: only complete runs are labelled. True: a censored run counts as a failure.

    Returns
    -------
    keep : ndarray of bool
        Step rows in the scope that carry a label.
    y : ndarray of float
        Label of every step row (NaN where unlabelled).
    codes : ndarray of int
        Run code (``traj``) of every step row.
    """

    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    keep, y = labelled_rows(data, pseudo)
    codes = data.steps["traj"].to_numpy()
    t = data.steps["t"].to_numpy()
    if scope == "step" and step is not None:
        keep &= t == int(step)
    elif scope == "final":
        keep &= t == data.trajectories["length"].to_numpy()[codes]
    return keep, y, codes


def steps_with_rows(t: np.ndarray, min_rows: int = STEP_MIN_ROWS) -> np.ndarray:
    """Mask of the rows whose step t has at least ``min_rows`` rows (by-step views)."""
    t = np.asarray(t, dtype=np.int64)
    if t.size == 0:
        return np.zeros(0, dtype=bool)
    counts = np.bincount(t)
    return counts[t] >= min_rows


def scoped_forecasts(data: TrajectoryData, predictors: list[str], keep: np.ndarray, min_rows: int = 2):
    """Yield ``(name, ok)`` for each predictor with at least ``min_rows`` forecasts in the rows
    ``keep`` (``ok``: those rows with a forecast), stopping when nobody waits (tpsviz.core.cancel)."""

    for name in predictors:
        checkpoint()
        ok = keep & np.isfinite(data.forecasts(name))
        if ok.sum() >= min_rows:
            yield name, ok
