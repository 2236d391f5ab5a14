"""One BLAS thread while tpsviz's own threads compute.

OpenBLAS runs a large product (and a dot product of more than 10,000 values) on threads of its
own, which then wait for the next call by spinning on a core for a while. Where tpsviz runs two
threads of its own, those OpenBLAS threads compete with them for the same cores (measured on these
2-core machines: docs/architecture.md, "Scale", "The verdict's null draws"). The bootstrap's
products (``counts.py``) take this limit; the verdict's null loops avoid BLAS instead
(``verdict._dot``).

:func:`one_blas_thread` limits BLAS to one thread while any caller is inside it (threadpoolctl, which
scikit-learn installs). The limit is process-wide, so it is counted: it is set by the first thread
to enter and lifted by the last to leave, whatever the order in which concurrent callers (two
sessions of the dashboard) come and go.

Seen once and not understood: in a process that had run the verdict's thread pool, OpenBLAS kept
two threads when a thread other than the main one asked it for one (``openblas_set_num_threads``
called, ``openblas_get_num_threads`` still 2). The limit is then not applied; nothing else changes.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from collections.abc import Iterator

__all__ = ["one_blas_thread"]

_LOCK = threading.Lock()
_STATE = {"users": 0, "limiter": None}


def _limit():
    """A threadpoolctl limiter holding at one thread every BLAS library loaded now (numpy's, and
    scipy's own once scipy is imported; 1.3 ms to find them), or None without threadpoolctl."""
    try:
        from threadpoolctl import ThreadpoolController  # (only when the bootstrap limits BLAS threads)
    except ImportError:  # pragma: no cover - installed with scikit-learn
        return None
    return ThreadpoolController().limit(limits=1, user_api="blas")


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Within the block (of any thread), BLAS uses one thread; the limit before is restored once
    no thread is inside such a block any more."""
    with _LOCK:
        if _STATE["users"] == 0:
            _STATE["limiter"] = _limit()
        _STATE["users"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["users"] -= 1
            if _STATE["users"] == 0 and _STATE["limiter"] is not None:
                _STATE["limiter"].restore_original_limits()
                _STATE["limiter"] = None
