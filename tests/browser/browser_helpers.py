"""Shared constants and helpers of the browser tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "test-output" / "screenshots"
OUT = ROOT / "test-output"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _need_chromium():
    if not Path(CHROMIUM).exists():
        msg = f"{CHROMIUM} is missing: install Debian's chromium to run the browser tests"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    try:
        import playwright  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("playwright (python) is not installed")
        pytest.skip("playwright (python) is not installed")


def wait_ready(pg, heading: str | None = None, timeout: float = 90_000) -> None:
    """Wait until the app is connected, the script has finished, and (optionally) a heading shows."""
    pg.wait_for_selector("[data-testid='stApp']", timeout=timeout)
    if heading:
        pg.get_by_role("heading", name=heading).first.wait_for(timeout=timeout)
    # the status widget ("Running…") is present while a script run is in progress
    pg.wait_for_timeout(300)
    pg.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)
    pg.wait_for_timeout(500)
    pg.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


def no_traceback(pg) -> None:
    assert pg.locator("[data-testid='stException']").count() == 0, "a traceback is shown"


def screenshot(pg, name: str) -> Path:
    """Full-height screenshot of the app (Streamlit scrolls inside its main container)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    h = pg.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
                    " return m ? m.scrollHeight : document.body.scrollHeight }")
    w = pg.viewport_size["width"]
    pg.set_viewport_size({"width": w, "height": int(min(max(h, 1000), 8000))})
    pg.wait_for_timeout(800)
    # elements still being computed show as skeletons: wait until the page is drawn in full
    pg.wait_for_function("() => !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=90_000)
    path = SHOTS / f"{name}.png"
    pg.screenshot(path=str(path))
    pg.set_viewport_size({"width": w, "height": 1000})
    return path


def dismiss_page_not_found(pg) -> None:
    """Close Streamlit's "Page not found" notice if a deep link with a changed data source raised it.

    Seen now and then when a link such as /monitoring?demo=drift-like is the first page a fresh
    browser opens: the page itself is drawn underneath, but the notice makes it inert until closed
    (a Streamlit navigation race; noted in docs/deployment.md)."""
    notice = pg.get_by_text("Page not found")
    if notice.count():
        pg.keyboard.press("Escape")
        notice.first.wait_for(state="hidden")
