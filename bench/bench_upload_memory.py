"""Server memory of an upload (issue 46, point 7): the dashboard against a toy Streamlit app with one
``st.file_uploader`` (the floor: Streamlit's uploader holds the file's bytes until the widget is
cleared), measured in the same run.

For each app and case, a fresh server (``serve.py`` for the dashboard, ``streamlit run`` for the
toy) is started as a subprocess; headless chromium (Playwright) opens it and uploads a generated
long-format CSV. The server's resident memory (RSS, /proc through psutil, every 20 ms) is sampled
from before the upload until the page is done, then for ``--settle`` seconds. Reported, in
multiples of the file's size, above the RSS just before the upload:

- ``peak``: the largest RSS from the upload until the page is done;
- ``held``: after the page is done;
- ``cleared``: after the file is removed from the upload box (case ``replaced``: after the data
  source is switched to the demo);
- ``next run``: after one more run of the app (Streamlit's "r" shortcut): Streamlit keeps the last
  run's session state and widget values, and so the file's bytes, until the next run starts;
- ``swept`` (dashboard, accepted cases): after the cache's idle lifetime (``--ttl``, set as
  ``TPSVIZ_CACHE_TTL_S``) and the next sweep (every 30 s): the parsed log and its analyses,
  kept in the shared cache by design, are gone; what is left of the upload is not the cache's.

Cases: ``refused`` (a ``--mb`` MB file over ``TPSVIZ_MAX_FILE_MB``, set to half its size for the
dashboard), ``accepted`` (a valid ``--accepted-mb`` MB log, then removed from the box) and
``replaced`` (the same, dashboard only, then replaced by the demo). Measured, not asserted.

Usage: .venv/bin/python bench/bench_upload_memory.py [--mb 200] [--accepted-mb 40]
       [--cases refused,accepted,replaced] [--ttl 20]
       [--repo OTHER_CHECKOUT] (the dashboard of another checkout, e.g. the code before a change)
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
MB = 1024 * 1024
TOY = """import streamlit as st
f = st.file_uploader("Trajectory log", type=["csv"])
st.write("no file" if f is None else f"{f.size:,} bytes")
st.write("done")
"""


def make_csv(path: Path, mb: float, seed: int = 0) -> int:
    """A valid long-format log (trajectory_id, step, outcome, conf_a, conf_b) of about ``mb`` MB."""
    rng = np.random.default_rng(seed)
    rows_per_mb = 23_000  # ~45 bytes a row
    n_runs = max(10, int(mb * rows_per_mb / 20))
    with open(path, "w") as f:
        f.write("trajectory_id,step,outcome,conf_a,conf_b\n")
        for start in range(0, n_runs, 20_000):
            runs = np.arange(start, min(n_runs, start + 20_000))
            y = rng.integers(0, 2, len(runs))
            ids = np.repeat(runs, 20)
            steps = np.tile(np.arange(1, 21), len(runs))
            out = np.repeat(y, 20)
            a, b = rng.random(len(ids)), rng.random(len(ids))
            f.write("".join(f"r{i},{s},{o},{p:.6f},{q:.6f}\n" for i, s, o, p, q in zip(ids, steps, out, a, b)))
    return path.stat().st_size


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sampler(threading.Thread):
    """RSS of one process every ``dt`` seconds; ``peak`` since the last ``reset``."""

    def __init__(self, pid: int, dt: float = 0.02):
        super().__init__(daemon=True)
        self.proc, self.dt, self.peak, self.stop = psutil.Process(pid), dt, 0, False

    def rss(self) -> int:
        return self.proc.memory_info().rss

    def reset(self) -> None:
        self.peak = self.rss()

    def run(self) -> None:
        while not self.stop:
            try:
                self.peak = max(self.peak, self.rss())
            except psutil.Error:
                return
            time.sleep(self.dt)


def _start(app: str, repo: Path, env: dict, up_mb: int):
    port, log = _port(), tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    opts = ["--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
            "--browser.gatherUsageStats", "false", "--server.maxUploadSize", str(up_mb)]
    if app == "toy":
        toy = Path(tempfile.mkdtemp()) / "toy_upload.py"
        toy.write_text(TOY)
        cmd = [sys.executable, "-m", "streamlit", "run", str(toy), *opts]
    else:
        cmd = [sys.executable, "serve.py", *opts]
    proc = subprocess.Popen(cmd, cwd=repo, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env})
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if urllib.request.urlopen(base + "/_stcore/health", timeout=2).status == 200:
                return proc, base
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{app} did not start; see {log.name}")


def _idle(pg, text: str | None = None) -> None:
    if text:
        pg.get_by_text(text).first.wait_for(timeout=600_000)
    for _ in range(2):
        pg.wait_for_timeout(400)
        pg.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=600_000)


def _rerun(pg) -> None:
    """One more run of the app, as any interaction starts one (Streamlit's "r" shortcut)."""
    pg.evaluate("document.activeElement && document.activeElement.blur()")
    pg.keyboard.press("r")
    pg.wait_for_timeout(800)
    _idle(pg)


def _server_env(app: str, case: str, size: int, ttl: float) -> dict:
    env = {"TPSVIZ_DATA_ROOTS": ""}
    if case == "refused":
        env["TPSVIZ_MAX_FILE_MB"] = str(max(1, size // MB // 2))
    elif app != "toy":  # the cache's idle lifetime, shortened so that the bench sees it pass
        env["TPSVIZ_CACHE_TTL_S"] = str(ttl)
    return env


def _open(pg, app: str, base: str) -> None:
    pg.goto(base)
    _idle(pg, "done" if app == "toy" else "Can I trust it?")
    if app != "toy":  # the sidebar's data source: Upload
        _source(pg, "Upload")
        _idle(pg)


def _source(pg, label: str) -> None:
    pg.locator("[data-testid='stSidebar'] label").filter(has_text=label).first.click()
    pg.wait_for_timeout(800)


def _upload(pg, app: str, case: str, csv: Path, size: int) -> None:
    pg.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(csv))
    if app == "toy":
        _idle(pg, f"{size:,} bytes")
    elif case == "refused":
        _idle(pg, "cannot be used")
    else:
        pg.wait_for_timeout(1500)
        _idle(pg, "Can I trust it?")


def _let_go(pg, app: str, case: str) -> None:
    """Remove the file from the upload box (case ``replaced``: switch the data source to the demo)."""
    if case == "replaced":
        _source(pg, "Demo")
        _idle(pg, "Can I trust it?")
        return
    pg.locator("[data-testid='stFileChipDeleteBtn']").first.click()
    pg.wait_for_timeout(800)
    _idle(pg, "no file" if app == "toy" else None)


def measure(browser, app: str, repo: Path, csv: Path, size: int, case: str, settle: float, ttl: float) -> dict:
    proc, base = _start(app, repo, _server_env(app, case, size, ttl), size // MB + 50)
    try:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = ctx.new_page()
        _open(pg, app, base)
        time.sleep(1.0)
        s = Sampler(proc.pid)
        before = s.rss()
        s.reset()
        s.start()
        t0 = time.perf_counter()
        _upload(pg, app, case, csv, size)
        seconds = time.perf_counter() - t0
        time.sleep(settle)
        held, peak = s.rss(), s.peak
        _let_go(pg, app, case)
        time.sleep(settle)
        cleared = s.rss()
        _rerun(pg)  # Streamlit keeps the last run's session state (and widget values) until the next run
        time.sleep(settle)
        after_run, swept = s.rss(), None
        if app != "toy" and case != "refused":  # the cache drops what was idle for ttl (sweeper: every 30 s)
            time.sleep(ttl + 35)
            swept = s.rss()
        s.stop = True
        ctx.close()
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    f = lambda v: None if v is None else (v - before) / size  # noqa: E731
    return {"app": app, "case": case, "file_mb": size / MB, "before_mb": before / MB, "peak_mb": peak / MB,
            "peak_x": f(peak), "held_x": f(held), "cleared_x": f(cleared), "next_run_x": f(after_run),
            "swept_x": f(swept), "seconds": seconds}


def _row(r: dict) -> str:
    x = lambda v: f"{v:.2f}" if v is not None else "–"  # noqa: E731
    return (f"{r['app']:<10}{r['case']:<10}{r['file_mb']:>8.0f}{r['before_mb']:>11.0f}{r['peak_mb']:>8.0f}"
            f"{x(r['peak_x']):>8}{x(r['held_x']):>8}{x(r['cleared_x']):>10}{x(r['next_run_x']):>10}"
            f"{x(r['swept_x']):>9}{r['seconds']:>6.1f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200, help="size of the refused file (MB)")
    ap.add_argument("--accepted-mb", type=float, default=40, help="size of the accepted file (MB)")
    ap.add_argument("--cases", default="refused,accepted,replaced")
    ap.add_argument("--repo", type=Path, default=ROOT, help="the dashboard's checkout (default: this one)")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds waited before reading RSS again")
    ap.add_argument("--ttl", type=float, default=20.0,
                    help="the dashboard's cache idle lifetime (TPSVIZ_CACHE_TTL_S) in the accepted cases (s)")
    a = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="upload-bench-"))
    print(f"{'app':<10}{'case':<10}{'file MB':>8}{'RSS before':>11}{'peak':>8}{'peak ×':>8}{'held ×':>8}"
          f"{'cleared ×':>10}{'next run ×':>10}{'swept ×':>9}{'s':>6}")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for case in a.cases.split(","):
                csv = tmp / f"{case}.csv"
                size = make_csv(csv, a.mb if case == "refused" else a.accepted_mb)
                for app in ("toy", "dashboard") if case != "replaced" else ("dashboard",):
                    print(_row(measure(browser, app, a.repo, csv, size, case, a.settle, a.ttl)), flush=True)
                csv.unlink()
            browser.close()
    finally:
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


if __name__ == "__main__":
    main()
