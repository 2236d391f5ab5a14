"""Browser tests: Playwright driving Debian chromium against `streamlit run app.py` on localhost.

If /usr/bin/chromium is missing the tests are skipped locally and fail in CI (env CI set)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from browser_helpers import ARGS, CHROMIUM, OUT, ROOT, _need_chromium


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server():
    """Start the dashboard once for the whole session; yield its base URL."""
    _need_chromium()
    port = _free_port()
    streamlit = str(Path(sys.executable).with_name("streamlit"))
    if not Path(streamlit).exists():
        streamlit = shutil.which("streamlit") or "streamlit"
    OUT.mkdir(parents=True, exist_ok=True)
    log = open(OUT / "streamlit-server.log", "w")
    proc = subprocess.Popen(
        [streamlit, "run", "app.py", "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(base + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited early; see {OUT / 'streamlit-server.log'}")
    else:
        proc.terminate()
        pytest.fail("streamlit did not become healthy within 60 s")
    yield base
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def browser():
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    pg.base = server
    yield pg
    ctx.close()


