"""A server a team shares (issue 12): N browser sessions move the α slider at the same time.

One real Streamlit server is started (on the demo data, or with ``--log PATH`` on that file, read
through the "Server path" source under a data root, as bench_server.py does); one headless chromium
opens N contexts (N sessions, ``--sessions``, default 10) driven concurrently from asyncio. Once
every session shows its complete first view, each presses ArrowRight on the α slider ``--nudges``
times (default 5), all sessions at the same time. Measured:

  first view    a session opens the page → its complete first view (all sessions at once)
  render time   per nudge: the key press → the page is complete again (no "Running…" status, no
                stale element, no skeleton, a plotly chart drawn, the new α on the page; the same
                test as bench_browser.py, held for 3 polls 25 ms apart, polled inside the page)
  errors        any Streamlit exception box, error alert ("Something went wrong…", "This log
                cannot be used…"), connection-error dialog or uncaught JavaScript error on any
                page, a nudge that did not complete, and any traceback in the server's log
  CPU           seconds used by the server, and by the client (Playwright and chromium, on the same
                machine, drawing N pages), during the first views and while the sessions nudge: on
                this one machine the browser's share is the larger, and a team's browsers run elsewhere
  peak RSS      of the server process and its children, sampled every 0.2 s from the moment it
                answers (its baseline) until it is stopped

Exit status 1 if any session saw an error or any nudge did not complete.

Usage: .venv/bin/python bench/bench_team.py [--sessions 10] [--nudges 5] [--log PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_browser import _DONE_JS, ARGS, CHROMIUM, VERDICT_DONE  # noqa: E402
from bench_server import _cpu_s, _server  # noqa: E402

#: every error a user could see on a page, as short texts (empty list: none)
ERRORS_JS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]'))
    out.push((el.innerText || '').replace(/\\s+/g, ' ').trim().slice(0, 300));
  const text = document.body.innerText;
  for (const s of ['Connection error', 'Is Streamlit still running', 'Bad message format'])
    if (text.includes(s)) out.push(s);
  return out;
}"""

#: the page is complete (bench_browser's test) for ``stable`` polls in a row; polled inside the page
_STABLE_JS = """([want, stable]) => {
  const done = (%s)(want);
  window.__tpsOk = done ? (window.__tpsOk || 0) + 1 : 0;
  return window.__tpsOk >= stable;
}""" % _DONE_JS.strip()


def _tree(pid: int, skip: int | None = None) -> list[int]:
    """A process and all its descendants, without the subtree of ``skip``
    (/proc/<pid>/task/<tid>/children lists each thread's children)."""
    pids, todo = [], [pid]
    while todo:
        q = todo.pop()
        if q == skip:
            continue
        pids.append(q)
        for task in Path(f"/proc/{q}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return pids


def _tree_rss_mb(pid: int) -> float:
    """RSS (VmRSS) of a process and all its descendants, in MB; NaN once the process is gone."""
    total, seen = 0.0, False
    for q in _tree(pid):
        try:
            for line in open(f"/proc/{q}/status"):
                if line.startswith("VmRSS"):
                    total += int(line.split()[1]) / 1024
                    seen = True
        except OSError:
            pass
    return total if seen else float("nan")


def _tree_cpu_s(pid: int, skip: int | None = None) -> float:
    """CPU seconds (user + system) used so far by a process and its living descendants (not ``skip``'s)."""
    total = 0.0
    for q in _tree(pid, skip):
        try:
            total += _cpu_s(q)
        except (OSError, IndexError, ValueError):
            pass
    return total


class PeakRSS(threading.Thread):
    """Samples the RSS of a process tree every ``every`` seconds until stopped; keeps the peak."""

    def __init__(self, pid: int, every: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak = self.first = 0.0
        self.samples = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            rss = _tree_rss_mb(self.pid)
            if rss == rss:  # not NaN
                self.first = self.first or rss
                self.peak = max(self.peak, rss)
                self.samples += 1
            self._stop_event.wait(self.every)

    def stop(self) -> float:
        self._stop_event.set()
        self.join()
        return self.peak


class _Gate:
    """Every party waits at the gate until all ``n`` have arrived (each arrives once, even on failure)."""

    def __init__(self, n: int):
        self.n, self.count, self.open = n, 0, asyncio.Event()

    async def arrive(self) -> None:
        self.count += 1
        if self.count >= self.n:
            self.open.set()
        await self.open.wait()


async def _complete(pg, want: str, timeout_s: float) -> None:
    await pg.evaluate("() => { window.__tpsOk = 0; }")
    await pg.wait_for_function(_STABLE_JS, arg=[want, 3], polling=25, timeout=timeout_s * 1000)


async def _session(browser, url: str, nudges: int, gates: dict, timeout_s: float) -> dict:
    out = {"times": [], "errors": [], "js": [], "first": None}
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    loaded = False
    try:
        pg = await ctx.new_page()
        pg.on("pageerror", lambda e: out["js"].append(str(e)[:300]))
        t = time.perf_counter()
        await pg.goto(url)
        await _complete(pg, VERDICT_DONE, timeout_s)
        out["first"] = time.perf_counter() - t
        out["errors"] += await pg.evaluate(ERRORS_JS)
        loaded = True
        await gates["loaded"].arrive()  # every session has its first view: now all nudge at the same time
        thumb = pg.locator("[data-testid='stSidebar'] input[type=range][aria-label='α']").first
        for k in range(1, nudges + 1):
            want = f"α={0.05 * k:g}"
            await thumb.focus()
            t = time.perf_counter()
            await thumb.press("ArrowRight")
            await pg.wait_for_timeout(60)  # let the widget message reach the server before polling
            try:
                await _complete(pg, want, timeout_s)
            except Exception as e:  # noqa: BLE001 - a nudge that never completes is a result, not a crash
                out["errors"].append(f"nudge {k} ({want}) did not complete: {type(e).__name__}")
                break
            out["times"].append(time.perf_counter() - t)
            out["errors"] += await pg.evaluate(ERRORS_JS)
            await pg.wait_for_timeout(300)
    except Exception as e:  # noqa: BLE001
        out["errors"].append(f"session failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        try:  # what the page shows, if it says why
            out["errors"] += await pg.evaluate(ERRORS_JS)
        except Exception:  # noqa: BLE001
            pass
    finally:
        if not loaded:
            await gates["loaded"].arrive()
        await gates["finished"].arrive()
        await gates["measured"].wait()  # the pages stay open until the CPU used is read
        await ctx.close()
    return out


async def _drive(url: str, sessions: int, nudges: int, timeout_s: float, server_pid: int) -> tuple[list, dict]:
    """Drive the sessions; also the CPU seconds the server and the client (Playwright and chromium, on
    the same machine) used during the first views and while the sessions nudged."""
    from playwright.async_api import async_playwright

    me = os.getpid()  # the client: this process, Playwright's driver and chromium (the server is our child too)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        gates = {"loaded": _Gate(sessions + 1), "finished": _Gate(sessions + 1), "measured": asyncio.Event()}
        try:
            t0, server0, client0 = time.perf_counter(), _tree_cpu_s(server_pid), _tree_cpu_s(me, server_pid)
            tasks = [asyncio.create_task(_session(browser, url, nudges, gates, timeout_s)) for _ in range(sessions)]
            await gates["loaded"].arrive()
            t, server, client = time.perf_counter(), _tree_cpu_s(server_pid), _tree_cpu_s(me, server_pid)
            await gates["finished"].arrive()
            cpu = {"wall": time.perf_counter() - t, "server": _tree_cpu_s(server_pid) - server,
                   "client": _tree_cpu_s(me, server_pid) - client,
                   "first_wall": t - t0, "first_server": server - server0, "first_client": client - client0}
            gates["measured"].set()
            return list(await asyncio.gather(*tasks)), cpu
        finally:
            await browser.close()


def _pct(xs: list[float], q: int) -> float:
    """The q-th percentile (linear interpolation between order statistics, q in 1..99)."""
    if len(xs) < 2:
        return xs[0] if xs else float("nan")
    return statistics.quantiles(xs, n=100, method="inclusive")[q - 1]


def _tracebacks(lines: list[str]) -> list[str]:
    """The exception line (the first unindented line after "Traceback") of each traceback in a log."""
    out = []
    for i, ln in enumerate(lines):
        if ln.startswith("Traceback"):
            out.append(next((x for x in lines[i + 1:] if x and not x.startswith(" ")), ln)[:300])
    return out


def run(sessions: int, nudges: int, log: Path | None = None, timeout_s: float = 300) -> dict:
    """Start a server, drive the sessions, stop the server; the measured figures."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile("w+") as server_log:
        root = log.parent if log else Path(tmp)
        proc, base = _server(ROOT, root, int(os.environ.get("TPSVIZ_CACHE_TTL_S", 1800)), server_log)
        sampler = PeakRSS(proc.pid)
        sampler.start()
        try:
            url = base + ("/?src=Server+path&path=" + urllib.parse.quote(str(log)) if log else "/")
            t = time.perf_counter()
            results, cpu = asyncio.run(_drive(url, sessions, nudges, timeout_s, proc.pid))
            wall = time.perf_counter() - t
        finally:
            peak = sampler.stop()
            proc.terminate()
            proc.wait(20)
        server_log.seek(0)
        lines = server_log.read().splitlines()
    server_errors = _tracebacks(lines)
    times = [x for r in results for x in r["times"]]
    first = [r["first"] for r in results if r["first"] is not None]
    errors = [(i, e) for i, r in enumerate(results) for e in dict.fromkeys(r["errors"])]
    js = [(i, e) for i, r in enumerate(results) for e in dict.fromkeys(r["js"])]
    return {"sessions": sessions, "nudges": nudges, "done": len(times), "times": times, "first": first,
            "errors": errors, "js": js, "server_errors": server_errors, "peak_rss": peak,
            "start_rss": sampler.first, "samples": sampler.samples, "wall": wall, "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=10, help="browser sessions (contexts) at once")
    ap.add_argument("--nudges", type=int, default=5, help="α nudges (ArrowRight) per session")
    ap.add_argument("--log", default=None, help="serve this log or dataset folder (under a data root) instead of the demo")
    ap.add_argument("--timeout", type=float, default=300, help="seconds a view or a nudge may take")
    args = ap.parse_args()
    log = Path(args.log).resolve() if args.log else None
    if log is not None and not log.exists():
        raise SystemExit(f"no such file: {log}")
    r = run(args.sessions, args.nudges, log, args.timeout)
    what = f"log {log} (server path)" if log else "demo log (tau2-like, default view)"
    print(f"dashboard: {ROOT}; {what}; {os.cpu_count()} CPUs")
    print(f"{r['sessions']} sessions × {r['nudges']} α nudges at the same time: {r['done']} of "
          f"{r['sessions'] * r['nudges']} nudges completed in {r['wall']:.1f} s")
    if r["times"]:
        print(f"render time per nudge: p50 {_pct(r['times'], 50):.2f} s, p95 {_pct(r['times'], 95):.2f} s, "
              f"max {max(r['times']):.2f} s")
    if r["first"]:
        print(f"first view (all sessions opened at once): median {statistics.median(r['first']):.2f} s, "
              f"slowest {max(r['first']):.2f} s")
    c = r["cpu"]
    print(f"CPU during the first views ({c['first_wall']:.1f} s): server {c['first_server']:.1f} s, client "
          f"{c['first_client']:.1f} s")
    print(f"CPU while the sessions nudged ({c['wall']:.1f} s): server {c['server']:.1f} s "
          f"({c['server'] / max(r['done'], 1):.2f} s a nudge), client on the same machine (Playwright and "
          f"chromium drawing {r['sessions']} pages) {c['client']:.1f} s")
    print(f"server RSS (process and children, {r['samples']} samples every 0.2 s): at start "
          f"{r['start_rss']:.0f} MB, peak {r['peak_rss']:.0f} MB")
    for i, e in r["errors"]:
        print(f"  session {i}: {e}")
    for i, e in r["js"]:
        print(f"  session {i}: JavaScript error: {e}")
    for e in r["server_errors"]:
        print(f"  server log: {e}")
    failed = bool(r["errors"] or r["js"] or r["server_errors"]) or r["done"] < r["sessions"] * r["nudges"]
    print("errors: " + ("none" if not failed else
                        f"{len(r['errors'])} on pages, {len(r['js'])} JavaScript, {len(r['server_errors'])} "
                        "in the server log"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
