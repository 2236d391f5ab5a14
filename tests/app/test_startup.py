"""What the first view after a server start pays for once per process."""

from __future__ import annotations

from streamlit import delta_generator, env_util

from apptest_helpers import fresh


def test_the_first_view_skips_streamlits_repl_check(monkeypatch):
    """Streamlit's check whether it runs in a REPL inspects the whole stack (0.9 s with this app's
    modules loaded, pages/_ui/warmup.py); app.py marks it done before its first element, so a
    fresh process never runs it."""
    calls = []
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)  # as in a new process
    monkeypatch.setattr(env_util, "is_repl", lambda: calls.append(1) or False)
    at = fresh()
    assert at.sidebar.radio and not calls


def test_serve_preloads_the_first_views_modules_without_drawing_anything():
    """serve.py imports the app's modules before the server opens (warmup.preload): every module
    named there exists (a failed import is skipped silently, so a renamed module would quietly undo
    the preload), they import outside a script run without a Streamlit warning (no element is
    drawn at import time), and the sidebar comes with them."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import sys; from pages._ui import warmup; warmup.preload(); "
            "missing = [m for m in warmup.APP_MODULES + warmup.MODULES if m not in sys.modules]; "
            "print('MISSING', missing)")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "MISSING []" in out.stdout
    assert "ScriptRunContext" not in out.stderr and "Warning" not in out.stderr, out.stderr[-2000:]


def test_preload_skips_a_module_that_cannot_be_imported(monkeypatch):
    """A failed import is left for the code that needs it: the server still starts."""
    from pages._ui import warmup

    monkeypatch.setattr(warmup, "APP_MODULES", ("tpsviz._no_such_module",))
    monkeypatch.setattr(warmup, "MODULES", ())
    warmup.preload()  # (no exception)
