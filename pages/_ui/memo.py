"""The dashboard's result cache: shared by sessions, bounded in bytes and in idle time.

``@memo(max_entries=…)`` replaces ``st.cache_resource`` for everything the pages compute
(docs/architecture.md, "Caching"). What it adds for a server shared by a team
(docs/deployment.md):

- **A byte budget** (``TPSVIZ_CACHE_MB``, default 2048) over all cached results: the least
  recently used entries go first. A result larger than the whole budget is returned but not
  kept. Sizes are estimated from the arrays and frames a result holds; a loaded log referenced
  by a derived result is counted once, where it is cached itself.
- **An idle lifetime** (``TPSVIZ_CACHE_TTL_S``, default 1800 s): a sweeper thread drops
  entries (and the bootstrap's kept resampling counts) not used for that long, so an idle
  server gives its memory back.
- **Exceptions are never cached** (a ``MemoryError`` or a vanished file must not poison a key
  for every later user), and one computation runs per key at a time (others wait for it and
  take its value). A key's lock is released and forgotten on every exit path, also when a
  Streamlit rerun or stop (a ``BaseException``) ends the computation; a waiting session then
  computes the result itself. A session waiting for another's computation stops waiting once it
  no longer needs the result (``tpsviz.core.cancel``). ``cached.hold`` takes the locks of several
  keys at once, for a result computed jointly and kept key by key (``results.py``).
- **A log no session uses leaves at once** (:func:`release`, called by ``sources_in_use.py``
  when a session replaces or removes its log): every entry whose key mentions it is dropped,
  without waiting for the idle lifetime.
- **Arguments whose name starts with ``_`` are not part of the key** (as with Streamlit's
  caches): they carry big objects that the other arguments already identify.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import inspect
import os
import threading
import time
import weakref
from collections import OrderedDict
from contextlib import ExitStack, contextmanager
from dataclasses import fields, is_dataclass

import numpy as np
import pandas as pd

from tpsviz.core import resample
from tpsviz.core.cancel import checkpoint
from tpsviz.core.data import TrajectoryData

__all__ = ["memo", "clear_all", "stats", "approx_bytes", "configure", "release", "keys"]

_LOCK = threading.RLock()
_ENTRIES: "OrderedDict[tuple, _Entry]" = OrderedDict()
_BY_FUNC: "dict[str, OrderedDict[tuple, None]]" = {}   # each function's keys, least recently used first
_BYTES = [0]                                           # Σ size of the entries (kept as entries come and go)
_KEY_LOCKS: "dict[tuple, _KeyLock]" = {}           # keys being computed (or waited for) → their lock
_CONFIG = {"budget": None, "ttl": None}
_SWEEPER: threading.Thread | None = None
_SWEEP_EVERY = 30.0


class _Entry:
    __slots__ = ("value", "size", "used", "func")

    def __init__(self, value, size: int, func: str):
        self.value = value
        self.size = size
        self.used = time.monotonic()
        self.func = func


class _KeyLock:
    """The lock of one key and how many threads hold it or wait for it (its entry in
    ``_KEY_LOCKS`` is removed by the last of them)."""

    __slots__ = ("lock", "users")

    def __init__(self):
        self.lock = threading.Lock()
        self.users = 0


_WAIT_POLL_S = 0.25   # a waiting session checks this often whether it still needs the result


@contextmanager
def _key_lock(key: tuple):
    """Hold the lock of one key: one computation per key at a time (docs/architecture.md, "Caching").

    The key's entry in ``_KEY_LOCKS`` is shared by every thread computing or waiting for the key
    and removed by the last one to leave, on every exit path: a computation that raises (an
    ``Exception``, or a Streamlit rerun or stop, which derive from ``BaseException``) releases
    the lock and leaves nothing behind, and the next waiter computes the result itself. While
    waiting, the thread passes :func:`tpsviz.core.cancel.checkpoint`, so a session that no longer
    needs the result (its user moved a widget, its tab closed) stops waiting.

    Parameters
    ----------
    key : tuple
        The cache key.
    """
    with _LOCK:
        kl = _KEY_LOCKS.get(key)
        if kl is None:
            kl = _KEY_LOCKS[key] = _KeyLock()
        kl.users += 1
    try:
        while not kl.lock.acquire(timeout=_WAIT_POLL_S):
            checkpoint()
        try:
            yield
        finally:
            kl.lock.release()
    finally:
        with _LOCK:
            kl.users -= 1
            if kl.users == 0:
                del _KEY_LOCKS[key]


def _env_number(name: str, default: float) -> float:
    try:
        v = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return v if v > 0 else default


def budget_bytes() -> int:
    """The byte budget of all cached results."""
    if _CONFIG["budget"] is not None:
        return int(_CONFIG["budget"])
    return int(_env_number("TPSVIZ_CACHE_MB", 2048) * 2 ** 20)


def ttl_seconds() -> float:
    """How long an unused entry is kept."""
    if _CONFIG["ttl"] is not None:
        return float(_CONFIG["ttl"])
    return _env_number("TPSVIZ_CACHE_TTL_S", 1800.0)


def configure(budget: int | None = None, ttl: float | None = None) -> None:
    """Override the budget (bytes) and idle lifetime (seconds); ``None`` restores the
    environment's values. Used by tests and benchmarks."""
    _CONFIG["budget"] = budget
    _CONFIG["ttl"] = ttl


_COUNTED: dict = {}  # id → weak reference of every TrajectoryData already counted in an entry


def _is_text(dtype) -> bool:
    return dtype == object or pd.api.types.is_string_dtype(dtype)


def approx_bytes(obj, _seen: set | None = None, _depth: int = 0) -> int:
    """An estimate of the memory an object holds: arrays exactly, frames from their shape (8 bytes
    a cell, 64 more a text cell), containers and dataclasses by their parts. A
    :class:`tpsviz.core.data.TrajectoryData` is counted once: by the first entry holding it at the top
    level or in a top-level tuple; inside deeper results it is shared, not counted again. An object
    with an ``approx_bytes()`` method is counted as it says."""
    seen = _seen if _seen is not None else set()
    if id(obj) in seen or _depth > 6:
        return 0
    seen.add(id(obj))
    own = getattr(type(obj), "approx_bytes", None)
    if callable(own):  # an object that states its own share (results.JointPart)
        return int(obj.approx_bytes())
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, pd.Series):
        return 8 * (len(obj) + 1) + (64 * len(obj) if _is_text(obj.dtype) else 0)
    if isinstance(obj, pd.DataFrame):
        # 8 bytes a cell and an index entry, 64 more for a text cell: an upper estimate of the
        # numbers (bool and int32 take less) that costs no pass over the data (was ~1 ms a frame)
        n, k = obj.shape
        return 8 * n * (k + 1) + 64 * n * sum(1 for dt in obj.dtypes if _is_text(dt))
    if isinstance(obj, (bytes, bytearray, str)):
        return len(obj)
    if isinstance(obj, TrajectoryData):
        # a log is counted once, by the first entry that holds it at the top (a loaded log, or the
        # filtered / recalibrated copy _prepared returns in a tuple); deeper (inside a TPSResult) or
        # again, it is shared, not new memory
        ref = _COUNTED.get(id(obj))
        if _depth > 1 or (ref is not None and ref() is obj):
            return 0
        _COUNTED[id(obj)] = weakref.ref(obj)
        if len(_COUNTED) > 256:  # forget logs that are gone
            for k in [k for k, r in _COUNTED.items() if r() is None]:
                del _COUNTED[k]
    if isinstance(obj, dict):
        return 64 + sum(approx_bytes(k, seen, _depth + 1) + approx_bytes(v, seen, _depth + 1)
                        for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return 64 + sum(approx_bytes(v, seen, _depth + 1) for v in obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        return 64 + sum(approx_bytes(getattr(obj, f.name, None), seen, _depth + 1)
                        for f in fields(obj))
    if hasattr(obj, "__dict__"):
        return 64 + sum(approx_bytes(v, seen, _depth + 1) for v in vars(obj).values())
    return 64


def _put_locked(key: tuple, entry: "_Entry") -> None:
    _drop_locked(key)
    _ENTRIES[key] = entry
    _BY_FUNC.setdefault(entry.func, OrderedDict())[key] = None
    _BYTES[0] += entry.size


def _drop_locked(key: tuple) -> None:
    old = _ENTRIES.pop(key, None)
    if old is not None:
        _BY_FUNC[old.func].pop(key, None)
        _BYTES[0] -= old.size


def _touch_locked(key: tuple, e: "_Entry") -> None:
    e.used = time.monotonic()
    _ENTRIES.move_to_end(key)
    _BY_FUNC[e.func].move_to_end(key)


def _keep_locked(key: tuple, entry: "_Entry", max_entries: int, budget: int) -> None:
    """Keep an entry (unless larger than the whole budget), then trim its function and the budget."""
    if entry.size > budget:
        return
    _put_locked(key, entry)
    mine = _BY_FUNC[entry.func]
    while len(mine) > max_entries:
        _drop_locked(next(iter(mine)))
    _evict_locked(budget)


def _evict_locked(budget: int) -> None:
    while _BYTES[0] > budget and _ENTRIES:
        _drop_locked(next(iter(_ENTRIES)))


def sweep(now: float | None = None) -> int:
    """Drop entries idle for longer than the lifetime; returns how many were dropped."""
    now = time.monotonic() if now is None else now
    ttl = ttl_seconds()
    with _LOCK:
        old = [k for k, e in _ENTRIES.items() if now - e.used > ttl]
        for k in old:
            _drop_locked(k)
    freed = resample.forget_replay(ttl)
    if old or freed:
        give_back()
    return len(old)


def _strings(part, depth: int = 0):
    """The strings in a key: in tuples, lists, sets, dict keys and values and dataclass fields
    (an ``Analysis``), nested up to 8 deep."""
    if isinstance(part, str):
        yield part
    elif depth > 8:
        return
    elif isinstance(part, (tuple, list, set, frozenset)):
        for p in part:
            yield from _strings(p, depth + 1)
    elif isinstance(part, dict):
        for k, v in part.items():
            yield from _strings(k, depth + 1)
            yield from _strings(v, depth + 1)
    elif is_dataclass(part) and not isinstance(part, type):
        for f in fields(part):
            yield from _strings(getattr(part, f.name, None), depth + 1)


def release(mentions) -> int:
    """Drop at once every entry whose key mentions what ``mentions`` looks for (a log no session
    uses any more: ``sources_in_use.py``), then give the freed memory back (:func:`give_back`).

    Parameters
    ----------
    mentions : callable
        ``mentions(text) -> bool`` for each string of a key (the log's key, a result key made
        from it, the ``repr`` of a key a part of an Evaluation is kept under).

    Returns
    -------
    int
        How many entries were dropped.
    """
    with _LOCK:
        gone = [k for k in _ENTRIES if any(mentions(s) for s in _strings(k))]
        for k in gone:
            _drop_locked(k)
    if gone:
        give_back()
    return len(gone)


def keys() -> list:
    """The keys of the cached entries, least recently used first (for tests and benchmarks)."""
    with _LOCK:
        return list(_ENTRIES)


def give_back() -> None:
    """Return freed memory to the operating system (glibc keeps freed heap pages otherwise)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _sweeper_loop() -> None:
    while True:
        time.sleep(_SWEEP_EVERY)
        try:
            sweep()
        except Exception:  # pragma: no cover - the sweeper must never die
            pass


def _ensure_sweeper() -> None:
    global _SWEEPER
    if _SWEEPER is None or not _SWEEPER.is_alive():
        _SWEEPER = threading.Thread(target=_sweeper_loop, name="tpsviz-cache-sweeper", daemon=True)
        _SWEEPER.start()


def clear_all() -> None:
    """Forget every cached result (and the bootstrap's kept counts)."""
    with _LOCK:
        _ENTRIES.clear()
        _BY_FUNC.clear()
        _BYTES[0] = 0
    resample.forget_replay(0)


def stats() -> dict:
    """Entries, bytes held and the budget (for tests and the deployment notes)."""
    with _LOCK:
        return {"entries": len(_ENTRIES), "bytes": _BYTES[0],
                "budget": budget_bytes(), "ttl": ttl_seconds()}


def memo(max_entries: int = 16, spinner: str | None = None):
    """Decorator: cache a function's results in the shared, bounded cache.

    The decorated function also has ``has(*args)`` (is the result cached?), ``store(value, *args)``
    (keep a value computed elsewhere), ``hold(calls)`` (hold the locks of several keys) and
    ``clear()`` (forget this function's results).

    Parameters
    ----------
    max_entries : int
        Most results kept for this function.
    spinner : str, optional
        Text shown (``st.spinner``) while a result is computed.
    """

    def wrap(fn):
        key_of = _key_maker(fn)
        qual = f"{fn.__module__}.{fn.__qualname__}"

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            key = key_of(*args, **kwargs)
            _ensure_sweeper()
            e = _lookup(key)
            if e is not None:
                return e.value
            with _key_lock(key):  # one computation per key; released on every exit path
                e = _lookup(key)   # computed by another session while this one waited?
                if e is not None:
                    return e.value
                value = _compute(fn, args, kwargs, spinner)
                # only a value is kept: an exception has left the block above (never cached)
                entry = _Entry(value, approx_bytes(value), qual)
                with _LOCK:
                    _keep_locked(key, entry, max_entries, budget_bytes())
                return value

        def has(*args, **kwargs) -> bool:
            """Is the result for these arguments cached (without computing it)?"""
            key = key_of(*args, **kwargs)
            with _LOCK:
                return key in _ENTRIES

        def store(value, *args, **kwargs) -> None:
            """Keep ``value`` as the result for these arguments (computed elsewhere, e.g. jointly)."""
            key = key_of(*args, **kwargs)
            entry = _Entry(value, approx_bytes(value), qual)
            with _LOCK:
                _keep_locked(key, entry, max_entries, budget_bytes())

        cached.clear = lambda: _clear_func(qual)
        cached.has = has
        cached.store = store
        cached.hold = functools.partial(_hold, key_of)
        return cached

    return wrap


def _key_maker(fn):
    """``key_of(*args, **kwargs)``: the cache key of a call of ``fn`` (its qualified name and the
    arguments whose name does not start with ``_``)."""
    sig = inspect.signature(fn)
    keyed = [p for p in sig.parameters if not p.startswith("_")]
    qual = f"{fn.__module__}.{fn.__qualname__}"

    def key_of(*args, **kwargs) -> tuple:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return (qual,) + tuple(bound.arguments[p] for p in keyed)

    return key_of


def _lookup(key: tuple):
    """The cached entry of a key (marked as used), or None."""
    with _LOCK:
        e = _ENTRIES.get(key)
        if e is not None:
            _touch_locked(key, e)
        return e


def _compute(fn, args: tuple, kwargs: dict, spinner: str | None):
    """``fn(*args, **kwargs)``, under ``st.spinner(spinner)`` when a text is given."""
    if not spinner:
        return fn(*args, **kwargs)
    import streamlit as st  # (the cache itself runs without Streamlit: tests and benchmarks)

    with st.spinner(spinner):
        return fn(*args, **kwargs)


@contextmanager
def _hold(key_of, calls):
    """Hold the locks of several keys, e.g. to compute them together and ``store`` them one by
    one (results.py). Locks are taken in the order given, so every caller must give the same order
    (results.py: by predictor name): then two threads holding overlapping sets cannot wait for each
    other. Do not call the cached function for a held key in the same thread (the lock is not
    re-entrant); re-check with ``has`` after acquiring, another thread may have computed a key
    meanwhile.

    Parameters
    ----------
    key_of : callable
        The cached function's key maker (:func:`_key_maker`).
    calls : iterable of tuple
        The positional arguments of each call whose key is held (each key once).
    """
    with ExitStack() as stack:
        for call_args in calls:
            stack.enter_context(_key_lock(key_of(*call_args)))
        yield


def _clear_func(qual: str) -> None:
    with _LOCK:
        for k in list(_BY_FUNC.get(qual, ())):
            _drop_locked(k)
