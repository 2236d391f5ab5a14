"""The weights w_t of every step row of a log under a schedule, and the check that a schedule's
verdict can stand behind them (docs/theory.md §3)."""

from __future__ import annotations

import numpy as np

from tpsviz.core.data import TrajectoryData
from tpsviz.core.schedules import Schedule
from tpsviz.core.schema import show_id

__all__ = ["step_weights", "check_weights", "MAX_WEIGHT"]


def step_weights(data: TrajectoryData, schedule: Schedule) -> np.ndarray:
    """w_t for every step row of ``data`` under ``schedule``."""
    length = data.trajectories["length"].to_numpy()[data.steps["traj"].to_numpy()]
    column = data.steps["weight"].to_numpy(dtype=float) if "weight" in data.steps else None
    w = schedule.weights(data.steps["t"].to_numpy(), length, column)
    if schedule.name == "column" and np.isnan(w).any():
        empty = np.isnan(w)
        first = data.steps["trajectory_id"].to_numpy()[np.flatnonzero(empty)[0]]
        raise ValueError(f"schedule 'column': the 'weight' column is empty on {int(empty.sum()):,} row(s), "
                         f"e.g. in trajectory {show_id(first, 40)}; give every row a weight")
    check_weights(schedule, w)
    return w


MAX_WEIGHT = 1e150   # any weight above: a run's weighted sum of scores could overflow


def check_weights(schedule: Schedule, w: np.ndarray) -> None:
    """Refuse weights a schedule's verdict cannot stand behind (docs/theory.md, schedules).

    A schedule labelled strictly proper needs every w_t > 0 and finite: γ^(t−1) or γ^(H−t)
    can underflow to 0 or overflow to ∞ in floating point (``back:0.5:1000000``,
    ``front:1e308``), which would score every predictor a perfect 0 or NaN. A ``column``
    schedule of zeros scores nothing.
    """
    w = np.asarray(w, dtype=float)
    if w.size == 0:
        return
    if schedule.name in ("uniform", "linear", "front", "back"):
        zero = int(np.count_nonzero(w == 0))
        inf = int(np.count_nonzero(~np.isfinite(w)))
        if zero or inf:
            what = []
            if zero:
                what.append(f"underflow to 0 on {zero:,} of {w.size:,} step rows")
            if inf:
                what.append(f"overflow to infinity on {inf:,} of {w.size:,} step rows")
            raise ValueError(
                f"schedule {schedule.spec}: the weights {' and '.join(what)} in floating point, "
                "so the score would not be strictly proper (and could read as a perfect 0); "
                "choose γ closer to 1 or a smaller budget H")
    elif schedule.name == "column" and not np.any(w > 0):
        raise ValueError("schedule 'column': every weight in the 'weight' column is 0, so "
                         "nothing would be scored; give positive weights")
    big = float(np.max(w))
    if big > MAX_WEIGHT:  # Σ_t w_t S summed over a run would overflow to ±inf
        raise ValueError(f"schedule {schedule.spec}: weights up to {big:.3g} would overflow when a run's "
                         f"scores are summed; keep weights below {MAX_WEIGHT:.0e} (only their ratios matter)")
