"""Browser tests: Playwright driving Debian chromium against the dashboard on localhost, started as
people start it (`serve.py`: `streamlit run app.py` behind the launcher of docs/deployment.md).

If /usr/bin/chromium is missing the tests are skipped locally and fail in CI (env CI set)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from browser_helpers import ARGS, CHROMIUM, OUT, ROOT, _need_chromium


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(name: str, env: dict | None = None):
    """Start the dashboard (`serve.py`) on a free port; returns (process, base URL, log file)."""
    _need_chromium()
    port = _free_port()
    OUT.mkdir(parents=True, exist_ok=True)
    log = open(OUT / f"{name}.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "serve.py", "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(base + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited early; see {OUT / (name + '.log')}")
    else:
        proc.terminate()
        pytest.fail("streamlit did not become healthy within 60 s")
    return proc, base, log


def _stop_server(proc, log) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def server():
    """Start the dashboard once for the whole session (no data roots: server paths off)."""
    env = {k: "" for k in ("TPSVIZ_DATA_ROOTS",)}
    proc, base, log = _start_server("streamlit-server", env)
    yield base
    _stop_server(proc, log)


@pytest.fixture(scope="session")
def rooted_server(tmp_path_factory):
    """A second dashboard whose server paths are on, under one data root holding the demo log;
    yields (base URL, root folder, the folder that holds the root)."""
    outer = tmp_path_factory.mktemp("served")
    root = outer / "logs"
    root.mkdir()
    (root / "tau2.csv").write_bytes((ROOT / "demo_data" / "tau2-like.csv").read_bytes())
    (outer / "secret.csv").write_text("user,password\nroot,TOPSECRET-7f3a9\n", encoding="utf-8")
    proc, base, log = _start_server("streamlit-server-rooted", {"TPSVIZ_DATA_ROOTS": str(root)})
    yield base, root, outer
    _stop_server(proc, log)


@pytest.fixture
def cold_server():
    """A dashboard no browser has visited yet (its first session is the test's); yields the base URL."""
    proc, base, log = _start_server("streamlit-server-cold")
    yield base
    _stop_server(proc, log)


@pytest.fixture(scope="module")
def browser():
    """One chromium per test module. Playwright's sync API keeps an asyncio loop running in the main
    thread while it is open; a session-wide browser left it running into the core's tests that run
    after these (inspect_ai's eval and the replay refused to start their own loop)."""
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


