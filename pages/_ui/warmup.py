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

__all__ = ["start", "skip_repl_check"]

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


def skip_repl_check() -> None:
    """Mark Streamlit's once-per-process "are we in a REPL?" check as done, before any element.

    At the first element a process draws, Streamlit decides whether to warn that the app should be
    started with ``streamlit run`` (``streamlit.delta_generator._maybe_print_use_warning``). Its
    ``env_util.is_repl()`` calls ``inspect.stack()``, which looks up the source file of every loaded
    module: with the libraries this app loads, 0.9 s (21,600 ``lstat`` calls) inside the first view
    after a server start (measured 2026-12-01 on the 100M-row dataset). The app always runs under
    ``streamlit run``, where that warning is never shown. The flag is private: a Streamlit without
    it only loses the saving.
    """
    from streamlit import delta_generator

    if hasattr(delta_generator, "_use_warning_has_been_displayed"):
        delta_generator._use_warning_has_been_displayed = True
