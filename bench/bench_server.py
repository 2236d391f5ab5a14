"""A shared server under a large log (issue 8): work left running after a browser tab closes,
and memory held when the server is idle again. Optionally also for another checkout.

A 100k-run synthetic log (≈2M step rows, Parquet) is put under a data root; a real Streamlit
server is started and a headless chromium opens the log through the server path. Measured:

  busy after close   the tab is closed while the page is still computing (--close-after s after
                     the leaderboard's points appear); seconds until the server's CPU use falls below 10% of
                     one core for 3 s in a row (the work nobody waits for)
  idle memory        server RSS right after start (the baseline of this run), after the page
                     has drawn, and --idle s after the tab closed (cache lifetime lowered to
                     TPSVIZ_CACHE_TTL_S=--ttl, as an administrator may set it)

Usage: .venv/bin/python bench/bench_server.py [--repo OTHER_CHECKOUT] [--n 100000] [--ttl 60]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server(repo: Path, root: Path, ttl: int, log):
    port = _port()
    env = {**os.environ, "TPSVIZ_DATA_ROOTS": str(root), "TPSVIZ_CACHE_TTL_S": str(ttl)}
    # (the launcher of docs/deployment.md where the revision has it)
    start = ["serve.py"] if (repo / "serve.py").exists() else ["-m", "streamlit", "run", "app.py"]
    proc = subprocess.Popen([sys.executable, *start, "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false"], cwd=repo, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if urllib.request.urlopen(base + "/_stcore/health", timeout=2).status == 200:
                return proc, base
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("server did not start")


def _busy_until_quiet(pid: int, limit: float = 600.0) -> float:
    """Seconds until CPU use stays below 10% of a core for 3 consecutive seconds."""
    t0 = time.monotonic()
    quiet = 0
    last = _cpu_s(pid)
    while time.monotonic() - t0 < limit:
        time.sleep(1.0)
        now = _cpu_s(pid)
        quiet = quiet + 1 if now - last < 0.1 else 0
        last = now
        if quiet >= 3:
            return time.monotonic() - t0 - 3
    return limit


def measure(repo: Path, path: Path, ttl: int, idle: int, close_after: float) -> dict:
    from playwright.sync_api import sync_playwright

    out = {}
    with tempfile.TemporaryFile("w+") as log:
        proc, base = _server(repo, path.parent, ttl, log)
        try:
            time.sleep(2)
            out["rss_start"] = _rss_mb(proc.pid)
            url = base + "/?src=Server+path&path=" + urllib.parse.quote(str(path))
            with sync_playwright() as p:
                b = p.chromium.launch(executable_path="/usr/bin/chromium",
                                      args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
                # 1. the tab is closed while the page computes: once the leaderboard's points
                # are drawn, while the bootstrap CIs of the metrics are still being computed
                ctx = b.new_context()
                pg = ctx.new_page()
                pg.set_default_timeout(900_000)
                pg.goto(url)
                pg.get_by_text("Leaderboard").first.wait_for()
                time.sleep(close_after)
                ctx.close()
                out["busy_after_close"] = _busy_until_quiet(proc.pid)
                print(f"  ({repo.name}: busy after close measured)", flush=True)
                # 2. a full view, then idle
                ctx = b.new_context()
                pg = ctx.new_page()
                pg.set_default_timeout(900_000)
                t = time.monotonic()
                pg.goto(url)
                pg.get_by_text("Leaderboard").first.wait_for()
                out["leaderboard_s"] = time.monotonic() - t
                _busy_until_quiet(proc.pid)  # the rest of the page (metric CIs, figures)
                out["first_view_s"] = time.monotonic() - t - 3
                out["rss_view"] = _rss_mb(proc.pid)
                ctx.close()
                b.close()
            _busy_until_quiet(proc.pid)
            time.sleep(idle)
            out["rss_idle"] = _rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(20)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=None, help="another checkout to measure as well (e.g. before)")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--ttl", type=int, default=60, help="TPSVIZ_CACHE_TTL_S of the server")
    ap.add_argument("--idle", type=int, default=240,
                    help="seconds of idle time before the last RSS (Streamlit keeps a closed session "
                         "for 120 s)")
    ap.add_argument("--close-after", type=float, default=1.0,
                    help="seconds after the leaderboard's points appear that the first tab closes")
    args = ap.parse_args()
    from tpsviz.synthetic.agent import simulate

    repos = [("this", ROOT)] + ([("other", Path(args.repo).resolve())] if args.repo else [])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.parquet"
        sim = simulate("webshop-like", n_trajectories=args.n, seed=7)
        sim.steps.to_parquet(path, index=False)
        print(f"log: {args.n:,} runs, {len(sim.steps):,} step rows, {path.stat().st_size / 2**20:.1f} MB")
        del sim
        for label, repo in repos:
            r = measure(repo, path, args.ttl, args.idle, args.close_after)
            print(f"{label:5s} {repo}:")
            print(f"  busy after the tab closed ({args.close_after:g} s after the leaderboard appeared): "
                  f"{r['busy_after_close']:.0f} s")
            print(f"  first view of the leaderboard {r['leaderboard_s']:.1f} s, page complete (server quiet) "
                  f"{r['first_view_s']:.1f} s")
            print(f"  RSS: at start {r['rss_start']:.0f} MB (baseline), after the view {r['rss_view']:.0f} MB "
                  f"({r['rss_view'] / r['rss_start']:.1f}x), {args.idle} s idle after close "
                  f"{r['rss_idle']:.0f} MB ({r['rss_idle'] / r['rss_start']:.1f}x)")


if __name__ == "__main__":
    main()
