"""Importing what the first view needs before it needs it, once per server process.

- :func:`preload`, called by ``serve.py`` before the server opens: the app's own modules (the
  sidebar and what it imports: pandas, pyarrow, the core) and the libraries of the verdicts. Streamlit
  imports an app's modules only when its first session runs the script, so without this the first
  user's first view paid about 1 s of imports (measured 2026-12-03: the sidebar 0.42 s, scipy.stats
  with scikit-learn's isotonic kernel 0.6 s). A team's server pays it once, at start.
- :func:`start`, called by ``app.py`` (for ``streamlit run app.py``, which skips ``serve.py``):
  the verdicts' libraries in a daemon thread when the first session starts, so that they load while
  that session reads its log (DuckDB and the readers release the GIL), instead of after it.

Nothing here is needed for the app to start: a failed import is left for the code that needs it
to report.
"""

from __future__ import annotations

import gc
import importlib
import threading

__all__ = ["preload", "tune_gc", "start", "skip_repl_check"]

MODULES = ("scipy.stats", "sklearn.isotonic", "sklearn._isotonic")
#: the app's modules the first view imports (``pages._ui.sidebar`` brings the core, pandas, pyarrow
#: and plotly; the others are the first view's own)
APP_MODULES = ("pages._ui.sidebar", "pages._ui.common", "pages._ui.charts", "pages._ui.compute", "pages._ui.allruns",
               "tpsviz.diagnostics.verdict", "tpsviz.io.dataset.sample", "tpsviz.engines.duck")
_STARTED = threading.Event()


def preload() -> None:
    """Import :data:`APP_MODULES` and :data:`MODULES` now, in this thread (``serve.py``, before
    the server opens; the repository must be on ``sys.path``)."""
    _load(APP_MODULES + MODULES)


#: collect the youngest objects after this many new ones (Python's default: 700), the next
#: generations after 10 collections of the one before (as the default)
GC_THRESHOLDS = (5_000, 10, 10)


def tune_gc() -> None:
    """Keep the preloaded modules' objects out of every garbage collection, and collect young
    objects less often (``serve.py``, after :func:`preload`).

    The ~195,000 objects of the imported libraries live as long as the server; each collection of
    the oldest generation walked them all. Per α nudge of the demo (in-process, 40 nudges,
    2026-12-04): 5.2 ms in the collector with Python's defaults, 2.3 ms with the modules frozen,
    1.4 ms with the young generation's threshold at 5,000 as well (20,000: 0.9 ms, but garbage in
    reference cycles, e.g. a large log's frames, would wait longer to be freed). The memory bound
    of the caches calls ``gc.collect()`` itself when it drops entries (``memo.give_back``).
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def _load(names=MODULES) -> None:
    for name in names:
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
