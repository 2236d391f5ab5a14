"""The dashboard against a toy Streamlit app, in one run, in headless chromium (issue 11).

The toy app is the floor a Streamlit page cannot go below on this machine: one slider, one
plotly chart and one table over the same demo log. Both are started as real servers and driven
by Playwright; each figure is reported with its ratio to the toy's, measured in the same run.

  cold start      server process started → first complete view in a browser (seconds)
  first view      a fresh browser session (new context) on a warm server → complete view
  slider nudge    one ArrowRight on the α slider → the page is complete again (median)

"Complete" means: the script run has ended (no "Running…" status widget, no element
still marked stale from the previous run; on a first view, whose elements are never stale, the
last thing the page draws is on it: the dashboard's verdict box), no element is still a skeleton, and (for the nudge) the new α value is on the page. Both apps are polled
the same way every 25 ms, so the polling cost is common to both.

With ``--big N`` it opens instead a synthetic log of N runs (≈19 N step rows, Parquet, through the
"Server path" source) in a warm dashboard and reports the seconds until the leaderboard first shows
(point estimates on a large log); then of an α nudge made while the intervals are still computed,
until the leaderboard of the new α shows (a run nobody waits for must stop, not finish) and until
the page is complete; and of one more α nudge on the complete page.

Usage: .venv/bin/python bench/bench_browser.py [--nudges 7] [--sessions 3]
       .venv/bin/python bench/bench_browser.py --big 100000
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

TOY = '''
import pandas as pd
import plotly.express as px
import streamlit as st

st.set_page_config(layout="wide")
df = pd.read_csv(r"{csv}")
alpha = st.sidebar.slider("α", -0.95, 4.0, 0.0, step=0.05)
st.title("Toy")
st.write(f"α={{alpha:g}}")
means = df.groupby("step", as_index=False)["conf_verbal"].mean()
means["score"] = means["conf_verbal"] * (1 + alpha)
st.plotly_chart(px.line(means, x="step", y="score"))
st.dataframe(df.head(200))
'''

_DONE_JS = """(want) => {
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  if (!document.querySelector('[data-testid="stMain"] .js-plotly-plot')) return false;
  if (want && !document.body.innerText.includes(want)) return false;
  return true;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(script: Path, cwd: Path):
    port = _free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            if urllib.request.urlopen(base + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.05)
        if proc.poll() is not None or time.perf_counter() - t0 > 120:
            raise SystemExit(f"{script.name} did not start")
    return proc, base, t0


def _wait_complete(pg, want: str = "", stable: int = 3, timeout: float = 180) -> None:
    """Poll until the page is complete for ``stable`` consecutive polls (25 ms apart)."""
    deadline = time.perf_counter() + timeout
    ok = 0
    while ok < stable:
        if time.perf_counter() > deadline:
            raise TimeoutError("page did not complete")
        ok = ok + 1 if pg.evaluate(_DONE_JS, want) else 0
        pg.wait_for_timeout(25)


def _view(browser, base: str, marker: str) -> float:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    t = time.perf_counter()
    pg.goto(base)
    _wait_complete(pg, marker)
    dt = time.perf_counter() - t
    ctx.close()
    return dt


def _nudges(browser, base: str, n: int) -> list[float]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.goto(base)
    _wait_complete(pg, "α=0")
    pg.wait_for_timeout(1500)
    thumb = pg.locator("[data-testid='stSidebar'] input[type=range][aria-label='α']").first
    times = []
    for i in range(1, n + 1):
        want = f"α={0.05 * i:g}"
        thumb.focus()
        t = time.perf_counter()
        thumb.press("ArrowRight")
        pg.wait_for_timeout(60)  # let the widget message reach the server before polling
        _wait_complete(pg, want)
        times.append(time.perf_counter() - t)
        pg.wait_for_timeout(500)
    ctx.close()
    return times


def measure(script: Path, cwd: Path, browser, nudges: int, sessions: int, marker: str = "α=0") -> dict:
    proc, base, t0 = _start(script, cwd)
    try:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = ctx.new_page()
        pg.goto(base)
        _wait_complete(pg, marker)
        cold = time.perf_counter() - t0
        ctx.close()
        views = [_view(browser, base, marker) for _ in range(sessions)]
        moves = _nudges(browser, base, nudges)
    finally:
        proc.terminate()
        proc.wait(20)
    return {"cold start": cold, "first view": statistics.median(views), "slider nudge": statistics.median(moves),
            "_views": views, "_moves": moves}


#: drawn last on the Overview (the verdict box is filled after everything else)
VERDICT_DONE = "How the verdict is decided"
_BOARD_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] h3')]
    .some(h => h.innerText.startsWith('Leaderboard')) && !!document.querySelector('[data-testid="stMain"] [data-testid="stDataFrame"]')"""

#: the leaderboard table drawn by the current run (not a stale one from the run before) for ``want``
_FRESH_BOARD_JS = """(want) => {
    if (!document.body.innerText.includes(want)) return false;
    const h = [...document.querySelectorAll('[data-testid="stMain"] h3')].find(h => h.innerText.startsWith('Leaderboard'));
    if (!h) return false;
    const df = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')]
        .find(d => h.compareDocumentPosition(d) & Node.DOCUMENT_POSITION_FOLLOWING);
    return !!df && !df.closest('[data-stale="true"]');
}"""


def big_log(repo: Path, n: int, browser) -> dict:
    """Seconds to the leaderboard and to a complete page on an n-run log, and of one α nudge."""
    sys.path.insert(0, str(repo))
    from tpsviz.synthetic.agent import simulate

    with tempfile.TemporaryDirectory() as tmp:
        sim = simulate("webshop-like", n_trajectories=n, seed=7)
        sim.steps.to_parquet(Path(tmp) / "big.parquet", index=False)
        os.environ["TPSVIZ_DATA_ROOTS"] = tmp
        proc, base, _ = _start(repo / "app.py", repo)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            pg = ctx.new_page()
            pg.goto(base)
            _wait_complete(pg, VERDICT_DONE)  # the demo first: the server is warm
            t = time.perf_counter()
            pg.goto(base + "/?src=Server+path&path=big.parquet")
            pg.wait_for_function(_BOARD_JS, timeout=600_000, polling=50)
            board = time.perf_counter() - t
            thumb = pg.locator("[data-testid='stSidebar'] input[type=range][aria-label='α']").first
            # a nudge while the intervals are being computed (their spinner shows): the new points must not
            # wait for them
            pg.wait_for_function("() => document.body.innerText.includes('Bootstrap CIs (')", timeout=600_000,
                                 polling=50)
            pg.wait_for_timeout(500)
            thumb.focus()
            t = time.perf_counter()
            thumb.press("ArrowRight")
            pg.wait_for_timeout(60)
            pg.wait_for_function(_FRESH_BOARD_JS, arg="α=0.05", timeout=600_000, polling=50)
            during = time.perf_counter() - t
            _wait_complete(pg, VERDICT_DONE, timeout=900)
            complete = time.perf_counter() - t
            pg.wait_for_timeout(1500)
            thumb.focus()
            t = time.perf_counter()
            thumb.press("ArrowRight")
            pg.wait_for_timeout(60)
            _wait_complete(pg, "α=0.1", timeout=900)
            nudge = time.perf_counter() - t
            ctx.close()
        finally:
            proc.terminate()
            proc.wait(20)
    return {"rows": len(sim.steps), "board": board, "during": during, "complete": complete, "nudge": nudge}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nudges", type=int, default=7)
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--big", type=int, default=0, help="runs of a large synthetic log (instead of the toy comparison)")
    ap.add_argument("--repo", default=str(ROOT), help="checkout whose app.py is measured (default: this one)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    repo = Path(args.repo).resolve()
    if args.big:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            r = big_log(repo, args.big, browser)
            browser.close()
        print(f"dashboard: {repo}; synthetic log of {args.big:,} runs ({r['rows']:,} step rows) by server path")
        print(f"leaderboard first shown {r['board']:6.2f} s   α nudge while its CIs compute → new leaderboard "
              f"{r['during']:6.2f} s → page complete {r['complete']:6.2f} s   one more α nudge to complete "
              f"{r['nudge']:6.2f} s")
        return
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        toy = Path(tmp) / "toy.py"
        toy.write_text(TOY.format(csv=ROOT / "demo_data" / "webshop-like.csv"))
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        res_toy = measure(toy, Path(tmp), browser, args.nudges, args.sessions)
        res_app = measure(repo / "app.py", repo, browser, args.nudges, args.sessions, marker=VERDICT_DONE)
        browser.close()
    print(f"dashboard: {repo} (demo log, default view)  vs  toy app (1 slider, 1 plotly chart, 1 table)")
    print(f"{'':14s} {'toy (s)':>9s} {'dashboard (s)':>14s} {'ratio':>7s}")
    for k in ("cold start", "first view", "slider nudge"):
        print(f"{k:14s} {res_toy[k]:9.2f} {res_app[k]:14.2f} {res_app[k] / res_toy[k]:6.2f}×")
    print("nudges (s): toy", " ".join(f"{x:.2f}" for x in res_toy["_moves"]),
          "| dashboard", " ".join(f"{x:.2f}" for x in res_app["_moves"]))
    print("fresh sessions (s): toy", " ".join(f"{x:.2f}" for x in res_toy["_views"]),
          "| dashboard", " ".join(f"{x:.2f}" for x in res_app["_views"]))


if __name__ == "__main__":
    main()
