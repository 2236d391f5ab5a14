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
