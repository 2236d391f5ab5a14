"""Which sessions use which log: a log that no session uses any more leaves the shared cache at once.

The shared cache (``memo.py``) keeps a log and every result computed on it, for all sessions,
until its idle lifetime ends (``TPSVIZ_CACHE_TTL_S``, 30 minutes by default). When a session
replaces or removes its log (another upload, the upload removed from the box, the demo, a server
path), the old log's entries are dropped at once (``memo.release``), unless another session
still uses the same log: a team may open the same file (issue 46, point 7; docs/deployment.md,
"Memory › Uploads").

- Uploads and server paths are released; **demo logs are kept**: they are small (at most a few
  MB with their results), shared by every session and the first page of each new one.
- A log is identified by the keys of its ``Source`` (``state.py``): the log with its reading
  options (``key``), the file alone (``file_key``), the rollouts file (``rollouts_key``). An entry
  is released when one of its key's strings mentions one of them as a whole (``mentions``).
- The memory is given back (``memo.give_back``) when the entries are dropped, and again at the end
  of that run and at the start of the next: what the session's last page still held (measured:
  most of the parsed log, on a server) is let go only then (:func:`after_run`).
- Left to the idle lifetime: the log of a session that ended without replacing it, until another
  session changes its log (sessions that ended are forgotten then), and the second log of the
  Overview's "this log with a second log" (not a session's log).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable

from . import memo
from .state import Source

__all__ = ["source_keys", "mentions", "use_source", "session_id", "after_run"]

_LOCK = threading.Lock()
_USED: "dict[str, frozenset]" = {}   # session id → the keys of the log it uses (none: not listed)
_DUE: "dict[str, int]" = {}          # session id → memory give-backs still due after a release (after_run)

#: characters that continue a key: a key followed or preceded by one is another key (a longer path,
#: a tau2-bench folder of several uploads ``upload:a:b:c:d``, the rollouts key ``…:rollouts``)
_KEY_CHARS = r"[\w:./-]"


def source_keys(src: Source | None) -> frozenset:
    """The keys by which the cache knows the log of ``src``: none for a demo (kept) or no log.

    Parameters
    ----------
    src : Source or None

    Returns
    -------
    frozenset of str
    """
    if src is None or src.kind not in ("upload", "path"):
        return frozenset()
    return frozenset(k for k in (src.key, src.file_key, src.rollouts_key) if k)


def mentions(keys: Iterable[str]) -> Callable[[str], bool]:
    """``mentions(keys)(text)``: does ``text`` hold one of ``keys`` as a whole?

    A key is held as a whole when no key character (``_KEY_CHARS``) comes right before it and
    none right after it, nor a ``|`` beginning the reading options of another source key
    (``state.options_key``); a ``|rollouts=`` after it is the result key of the log
    (``loading.result_key``), which mentions it.

    Parameters
    ----------
    keys : iterable of str

    Returns
    -------
    callable
    """
    alternatives = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
    pattern = re.compile(rf"(?<!{_KEY_CHARS})(?:{alternatives})(?!{_KEY_CHARS}|\|(?!rollouts=))")
    return lambda text: pattern.search(text) is not None


def session_id() -> str | None:
    """The id of the browser session of this script run (None outside a run)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # (looked up per run: tests replace it)

    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.session_id


def _ended(sid: str) -> bool:
    """Has the browser session ``sid`` ended? (False where there is no runtime: bare mode, tests)"""
    from streamlit.runtime import Runtime

    try:
        return Runtime.exists() and not Runtime.instance().is_active_session(sid)
    except Exception:  # the runtime is shutting down
        return False


def use_source(src: Source | None) -> int:
    """Note that this run's session uses the log of ``src`` (``sidebar.render``, every run). When
    that replaces the log the session used before, the old log's cache entries are dropped at once
    unless another live session uses it; so are those of sessions that have ended meanwhile.

    Parameters
    ----------
    src : Source or None
        The session's data source in this run (None: no log yet, e.g. the upload box is empty).

    Returns
    -------
    int
        How many cache entries were dropped.
    """
    sid = session_id()
    if sid is None:
        return 0
    if _due(sid):  # the start of the run after a release
        memo.give_back()
    mine = source_keys(src)
    with _LOCK:
        before = _USED.get(sid, frozenset())
        if mine == before:
            return 0
        if mine:
            _USED[sid] = mine
        else:
            _USED.pop(sid, None)
        left = set(before)
        for other in [s for s in _USED if s != sid and _ended(s)]:
            left |= _USED.pop(other)
            _DUE.pop(other, None)
        unused = left.difference(*_USED.values())
    if not unused:
        return 0
    with _LOCK:
        _DUE[sid] = 2  # at the end of this run and at the start of the next
    # (outside the lock: a session that opens this log again meanwhile at worst recomputes it)
    return memo.release(mentions(unused))


def _due(sid: str) -> bool:
    """Is a give-back due for session ``sid`` (and one fewer from now)?"""
    with _LOCK:
        n = _DUE.pop(sid, 0)
        if n > 1:
            _DUE[sid] = n - 1
    return n > 0


def after_run() -> None:
    """At the end of a run of the app (``app.py``): give the memory back once more after a release
    in this run, now that the page drawn before it has been replaced."""
    sid = session_id()
    if sid is not None and _due(sid):
        memo.give_back()
