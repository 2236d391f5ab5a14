"""Importing the libraries the first view needs in the background, once per server process.

The first view of a session computes the verdicts, which import scikit-learn's isotonic kernel and
scipy.stats (about 1 s on these machines). Imported in a daemon thread when the first session starts,
they load while that session reads its log (DuckDB and the readers release the GIL), instead of after
it. Nothing here is needed for the app to start: a failed import is left for the code that needs it
to report.
"""

from __future__ import annotations

import importlib
import threading

__all__ = ["start"]

MODULES = ("scipy.stats", "sklearn.isotonic", "sklearn._isotonic")
_STARTED = threading.Event()


def _load() -> None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # pragma: no cover - reported where the module is used
            pass


def start() -> None:
    """Start the background imports (the first call in the process only)."""
    if _STARTED.is_set():
        return
    _STARTED.set()
    threading.Thread(target=_load, name="tpsviz-warmup", daemon=True).start()
