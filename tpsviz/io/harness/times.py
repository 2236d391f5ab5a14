"""A run's time and cost where the log records them (issue 46, point 4; docs/harness.md "Time").

Every reader names them alike, as run-level metadata:

- ``start_time``: when the run started, as the log writes it (ISO 8601 text: tau2-bench's
  ``start_time``, Inspect's ``started_at`` or its first event's time, a trace's earliest span
  start). ``monitor`` and the Monitoring page order runs by it by default.
- ``end_time``: when it ended, as written (tau2-bench's ``end_time``, else its ``timestamp``).
- ``duration_s``: the run's duration in seconds, as recorded (tau2-bench's ``duration``,
  Inspect's ``total_time``), else end − start when both read as date-times.
- ``cost``: what the agent's model calls cost, as recorded (tau2-bench's ``agent_cost``, the sum of
  Inspect's per-model ``total_cost``).

A value the log does not record is left out (the column is then empty for that run), never guessed.
"""

from __future__ import annotations

import math
from datetime import datetime

__all__ = ["time_metadata", "seconds_between", "TIME_FIELDS"]

#: the metadata names of a run's time and cost, in the order they are written
TIME_FIELDS = ("start_time", "end_time", "duration_s", "cost")


def _number(v) -> float | None:
    """A finite number that is not a boolean, as a float; else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _when(v) -> datetime | None:
    """An ISO 8601 text as a date-time (a trailing ``Z`` is UTC); None when it is not one."""
    if not isinstance(v, str) or not v.strip() or len(v) > 64:
        return None
    text = v.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def seconds_between(start, end) -> float | None:
    """Seconds from ``start`` to ``end``, two ISO 8601 texts.

    Parameters
    ----------
    start, end : str
        Date-times as a log writes them (``2025-07-29T22:42:15.699352``, ``…+00:00``, ``…Z``).

    Returns
    -------
    float or None
        ``end − start`` in seconds; None when either does not read as a date-time, when one has a
        time zone and the other has none (their difference is not known), or when end is before
        start.
    """
    a, b = _when(start), _when(end)
    if a is None or b is None or (a.tzinfo is None) != (b.tzinfo is None):
        return None
    s = (b - a).total_seconds()
    return s if s >= 0 else None


def time_metadata(start=None, end=None, duration=None, cost=None) -> dict:
    """A run's :data:`TIME_FIELDS` from the values its log records.

    Parameters
    ----------
    start, end : str, optional
        The run's start and end as the log writes them; kept as text when non-empty text.
    duration : float, optional
        The recorded duration in seconds; when missing (or not a finite number ≥ 0), end − start
        (:func:`seconds_between`) where both read as date-times.
    cost : float, optional
        The recorded cost of the agent's model calls (a finite number ≥ 0).

    Returns
    -------
    dict
        Only the fields with a value: ``start_time``, ``end_time`` (str), ``duration_s``, ``cost``
        (float).
    """
    out: dict = {}
    if isinstance(start, str) and start.strip():
        out["start_time"] = start.strip()
    if isinstance(end, str) and end.strip():
        out["end_time"] = end.strip()
    d = _number(duration)
    if d is None or d < 0:
        d = seconds_between(start, end)
    if d is not None:
        out["duration_s"] = d
    c = _number(cost)
    if c is not None and c >= 0:
        out["cost"] = c
    return out
