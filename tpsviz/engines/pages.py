"""Large arrays whose memory is mapped in one call, not one page fault at a time.

A fresh numpy array of more than a few MB gets its memory from the kernel on first touch, one
page fault per 4 KB page. On the virtual machines this project is measured on, each such fault
is a trip to the hypervisor: writing 800 MB of fresh memory took 1.9–2.2 s, while mapping the same
800 MB populated in one ``mmap`` call (``MAP_POPULATE``) and then writing it took 0.35 s
(docs/architecture.md, "Scale"). On an ordinary machine the two cost about the same, so
:func:`empty` is used where the engines fill large per-run arrays.
"""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["empty", "filled"]

MIN_BYTES = 8 << 20  # below this, numpy's own allocation (malloc reuses small blocks anyway)
_FLAGS = (getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)) if hasattr(mmap, "MAP_POPULATE") else 0


def empty(n: int, dtype=float) -> np.ndarray:
    """A writable uninitialised array of ``n`` items of ``dtype``, as ``np.empty``, whose pages
    are mapped at once where the system can (Linux ``MAP_POPULATE``); ``np.empty`` elsewhere
    and for small arrays. The memory is returned when the array (and every view of it) is gone.
    """
    dtype = np.dtype(dtype)
    nbytes = int(n) * dtype.itemsize
    if nbytes < MIN_BYTES or not _FLAGS:
        return np.empty(n, dtype)
    try:
        buf = mmap.mmap(-1, nbytes, flags=_FLAGS | mmap.MAP_POPULATE)
    except (OSError, ValueError):  # (e.g. a limit on mappings: numpy's allocation then)
        return np.empty(n, dtype)
    return np.frombuffer(buf, dtype=dtype, count=n)


def filled(n: int, values) -> np.ndarray:
    """A fresh float array of ``n`` set to ``values``, its memory mapped at once (:func:`empty`).

    Parameters
    ----------
    n : int
        Items.
    values : float or array_like
        What every item is set to (broadcast).

    Returns
    -------
    ndarray
    """
    out = empty(n, float)
    out[...] = values
    return out
