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


def test_serve_freezes_the_preloaded_objects_and_collects_young_ones_less_often():
    """serve.py calls warmup.tune_gc after the preload (docs/deployment.md): in a fresh process the
    preloaded libraries' objects are frozen out of every collection and the youngest generation is
    collected after GC_THRESHOLDS[0] new objects, not Python's 700."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    serve = (root / "serve.py").read_text()
    assert serve.index("warmup.preload()") < serve.index("warmup.tune_gc()") < serve.index("cli.main(")
    code = ("import gc; from pages._ui import warmup; warmup.preload(); warmup.tune_gc(); "
            "print('FROZEN', gc.get_freeze_count(), 'THRESHOLDS', gc.get_threshold(), warmup.GC_THRESHOLDS)")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    words = out.stdout.split()
    assert int(words[1]) > 50_000  # the libraries' objects (about 195,000 with the verdicts' libraries)
    assert "(5000, 10, 10) (5000, 10, 10)" in out.stdout


def test_preload_skips_a_module_that_cannot_be_imported(monkeypatch):
    """A failed import is left for the code that needs it: the server still starts."""
    from pages._ui import warmup

    import sys

    after = "tpsviz.diagnostics.murphy"  # a module listed after the one that fails
    monkeypatch.delitem(sys.modules, after, raising=False)
    monkeypatch.setattr(warmup, "APP_MODULES", ("tpsviz._no_such_module", after))
    monkeypatch.setattr(warmup, "MODULES", ())
    warmup.preload()  # (no exception)
    assert "tpsviz._no_such_module" not in sys.modules and after in sys.modules
