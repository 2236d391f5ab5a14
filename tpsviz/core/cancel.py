"""Stopping long computations whose result nobody is waiting for any more.

A caller (the dashboard: a browser session that has closed) installs a predicate with
:func:`cancel_when`; long loops call :func:`checkpoint` (or a function from
:func:`current_check`, which carries the caller's predicate into worker threads) and raise
:class:`Cancelled` once it returns True. Without a predicate a checkpoint costs one context
lookup and never raises, so the CLI and the Python API are unaffected.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Cancelled", "cancel_when", "checkpoint", "current_check"]

_PREDICATE: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar(
    "tpsviz_cancel_predicate", default=None)


class Cancelled(RuntimeError):
    """Raised at a checkpoint when the caller no longer needs the result."""


@contextmanager
def cancel_when(predicate: Callable[[], bool]) -> Iterator[None]:
    """Within the block, checkpoints raise :class:`Cancelled` once ``predicate()`` is True.

    Parameters
    ----------
    predicate : callable
        Cheap, thread-safe, no arguments; True means "stop".
    """
    token = _PREDICATE.set(predicate)
    try:
        yield
    finally:
        _PREDICATE.reset(token)


def _never() -> None:
    return None


def current_check() -> Callable[[], None]:
    """A function that raises :class:`Cancelled` when the *calling* context's predicate says
    stop; it can be called from worker threads, which do not inherit the context."""
    predicate = _PREDICATE.get()
    if predicate is None:
        return _never

    def check() -> None:
        if predicate():
            raise Cancelled("the result is no longer needed")

    return check


def checkpoint() -> None:
    """Raise :class:`Cancelled` if the current context's predicate says stop."""
    predicate = _PREDICATE.get()
    if predicate is not None and predicate():
        raise Cancelled("the result is no longer needed")
