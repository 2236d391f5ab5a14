"""Weight schedules w_t for the Trajectory Proper Score, each with its propriety verdict.

TPS = Σ_t w_t S(F_t, Y) is strictly proper for the whole trace F_1..F_T when every w_t > 0
and w_t is known at step t (a function of t and the history, not of the future or of the
reports). Here t is the 1-based position of a row within its trajectory (equal to the
``step`` column when steps are numbered 1, 2, … without gaps) and T is the number of rows
observed for the trajectory (for a censored run, the stopping step Z).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Schedule", "ScheduleVerdict", "parse_schedule", "SCHEDULE_NAMES", "schedule_help"]

SCHEDULE_NAMES = ("uniform", "linear", "front", "back", "endpoint", "per-length", "column")


@dataclass(frozen=True)
class ScheduleVerdict:
    """Whether a schedule keeps TPS strictly proper, and why.

    Attributes
    ----------
    status : str
        ``"strictly proper"``, ``"final forecast only"``, ``"not proper"`` or
        ``"your responsibility"`` (a user-supplied column tpsviz cannot check).
    reason : str
        One sentence a user can read next to the verdict.
    """

    status: str
    reason: str

    @property
    def is_strictly_proper(self) -> bool:
        """True when TPS under this schedule elicits the truthful q_t at every step."""
        return self.status == "strictly proper"


@dataclass(frozen=True)
class Schedule:
    """A weight schedule w_t.

    Parameters
    ----------
    name : str
        One of ``SCHEDULE_NAMES``.
    gamma : float, optional
        Geometric ratio γ > 0 for ``front`` (γ^(t-1)) and ``back`` (γ^(H-t)).
    horizon : int, optional
        Fixed step budget H >= 1 for ``back``.
    """

    name: str = "uniform"
    gamma: float | None = None
    horizon: int | None = None

    def __post_init__(self) -> None:
        if self.name not in SCHEDULE_NAMES:
            raise ValueError(
                f"unknown schedule {self.name!r}; choose one of: {', '.join(SCHEDULE_NAMES)}"
            )
        if self.name in ("front", "back"):
            if self.gamma is None or not np.isfinite(self.gamma) or self.gamma <= 0:
                raise ValueError(f"schedule {self.name!r} needs a ratio γ > 0, got {self.gamma!r}")
        if self.name == "back":
            if self.horizon is None or int(self.horizon) != self.horizon or self.horizon < 1:
                raise ValueError(
                    f"schedule 'back' needs a fixed step budget H (an integer >= 1), got {self.horizon!r}"
                )

    @property
    def spec(self) -> str:
        """The CLI spelling, e.g. ``front:0.9`` or ``back:0.9:30``."""
        if self.name == "front":
            return f"front:{self.gamma:g}"
        if self.name == "back":
            return f"back:{self.gamma:g}:{int(self.horizon)}"
        return self.name

    @property
    def formula(self) -> str:
        """The weight as a formula in t (position), T (observed length), H (budget)."""
        if self.name == "front":
            return f"w_t = {self.gamma:g}^(t-1)"
        if self.name == "back":
            return f"w_t = {self.gamma:g}^({self.horizon}-t)"
        return {
            "uniform": "w_t = 1",
            "linear": "w_t = t",
            "endpoint": "w_t = 1 at the last observed step, else 0",
            "per-length": "w_t = 1/T",
            "column": "w_t from the 'weight' column",
        }[self.name]

    @property
    def verdict(self) -> ScheduleVerdict:
        """The propriety verdict of this schedule (docs/theory.md §3)."""
        if self.name in ("uniform", "linear", "front", "back"):
            return ScheduleVerdict(
                "strictly proper",
                "Every weight is positive and fixed by the step index alone, so reporting the "
                "true success probability q_t at every step maximises the expected score.",
            )
        if self.name == "endpoint":
            return ScheduleVerdict(
                "final forecast only",
                "Only the last forecast is scored, so the score says nothing about the earlier "
                "steps: any earlier trace scores the same.",
            )
        if self.name == "per-length":
            return ScheduleVerdict(
                "not proper",
                "The weight 1/T depends on the run's realised length, which is not known at step "
                "t; when length correlates with success the best report is the length-tilted "
                "E[Y/T | H_t] / E[1/T | H_t], not q_t.",
            )
        return ScheduleVerdict(
            "your responsibility",
            "Strictly proper only if every weight is positive and fixed before the forecast at "
            "that step is made (a function of t and the history, never of the reports or the "
            "future); tpsviz cannot check this.",
        )

    def weights(
        self, t: np.ndarray, length: np.ndarray, column: np.ndarray | None = None
    ) -> np.ndarray:
        """Weights w_t for step rows.

        Parameters
        ----------
        t : ndarray of int
            1-based position of each row within its trajectory.
        length : ndarray of int
            Observed length T of each row's trajectory (same shape as ``t``).
        column : ndarray, optional
            The ``weight`` column (required for ``column``).

        Returns
        -------
        ndarray of float
        """
        t = np.asarray(t, dtype=float)
        if self.name == "uniform":
            return np.ones_like(t)
        if self.name == "linear":
            return t.copy()
        with np.errstate(over="ignore", under="ignore"):  # checked by tps.check_weights
            if self.name == "front":
                return self.gamma ** (t - 1.0)
            if self.name == "back":
                return self.gamma ** (float(self.horizon) - t)
        length = np.asarray(length, dtype=float)
        if self.name == "endpoint":
            return (t == length).astype(float)
        if self.name == "per-length":
            return 1.0 / length
        if column is None:
            raise ValueError(
                "schedule 'column' needs a numeric 'weight' column in the log; this file has none"
            )
        return np.asarray(column, dtype=float)


def parse_schedule(spec: str) -> Schedule:
    """Parse a schedule written as on the command line.

    Parameters
    ----------
    spec : str
        ``uniform``, ``linear``, ``front:G``, ``back:G:H``, ``endpoint``, ``per-length`` or
        ``column``.

    Returns
    -------
    Schedule

    Raises
    ------
    ValueError
        With a message naming the expected form.
    """
    parts = str(spec).strip().split(":")
    name = parts[0].strip().lower()
    args = parts[1:]
    expected = {"front": 1, "back": 2}.get(name, 0)
    if name not in SCHEDULE_NAMES:
        raise ValueError(
            f"unknown schedule {spec!r}; choose one of: uniform, linear, front:G, back:G:H, "
            "endpoint, per-length, column"
        )
    if len(args) != expected:
        form = {"front": "front:G (e.g. front:0.9)", "back": "back:G:H (e.g. back:0.9:30)"}.get(
            name, name
        )
        raise ValueError(f"schedule {spec!r} is malformed; write it as {form}")
    try:
        gamma = float(args[0]) if expected >= 1 else None
        horizon = None
        if expected == 2:
            h = float(args[1])
            if h != int(h):
                raise ValueError
            horizon = int(h)
    except (ValueError, OverflowError):
        raise ValueError(
            f"schedule {spec!r}: G must be a number and H an integer, e.g. back:0.9:30"
        ) from None
    return Schedule(name, gamma, horizon)


def schedule_help() -> str:
    """A short multi-line description of every schedule and its verdict (for --help and the UI)."""
    rows = [
        ("uniform", "w_t = 1", Schedule("uniform")),
        ("linear", "w_t = t", Schedule("linear")),
        ("front:G", "w_t = G^(t-1), front-loaded for G < 1", Schedule("front", 0.9)),
        ("back:G:H", "w_t = G^(H-t), back-loaded to budget H", Schedule("back", 0.9, 30)),
        ("endpoint", "w_t = 1 at the last observed step", Schedule("endpoint")),
        ("per-length", "w_t = 1/T (T = observed length)", Schedule("per-length")),
        ("column", "w_t from the log's 'weight' column", Schedule("column")),
    ]
    return "\n".join(f"  {spec:<11} {formula:<40} {s.verdict.status}" for spec, formula, s in rows)
