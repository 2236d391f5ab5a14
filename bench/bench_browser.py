"""The dashboard against a toy Streamlit app, in one run, in headless chromium (issue 11).

The toy app is the floor a Streamlit page cannot go below on this machine: one slider, one
plotly chart and one table over the same demo log. Both are started as real servers and driven
by Playwright; each figure is reported with its ratio to the toy's, measured in the same run.

  cold start      server process started → first complete view in a browser (seconds)
  first view      a fresh browser session (new context) on a warm server → complete view (median)
  slider nudge    one ArrowRight on the α slider → the page is complete again (median)

Both servers run at once and the rounds alternate (a fresh session of the toy, one of the
dashboard, then a few nudges of each), so a machine busy with other work slows both alike; the
load average before and after is printed beside the medians.

"Complete" means: the script run has ended (no "Running…" status widget, no element
still marked stale from the previous run; on a first view, whose elements are never stale, the
last thing the page draws is on it: the dashboard's verdict box), no element is still a skeleton, and (for the nudge) the new α value is on the page. Both apps are polled
the same way every 25 ms, so the polling cost is common to both.

With ``--big N`` it opens instead a synthetic log of N runs (≈19 N step rows, Parquet, through the
"Server path" source) in a warm dashboard and reports the seconds until the leaderboard first shows
(point estimates on a large log); then of an α nudge made while the intervals are still computed,
until the leaderboard of the new α shows (a run nobody waits for must stop, not finish) and until
the page is complete; and of one more α nudge on the complete page.

Usage: .venv/bin/python bench/bench_browser.py [--rounds 5] [--nudges 3] [--repo OTHER_CHECKOUT]
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

#: the dashboard's server for ``--profile``: Streamlit as ``serve.py`` starts it, with timers around
#: the script run, its sections and the elements it sends (CPU time of the script's thread: what a
#: busy machine changes least), and a count of the messages sent; one JSON line per script run is
#: appended to the file named by TPSVIZ_PROFILE_LOG
PROFILED_SERVER = r"""
import json, os, sys, threading, time
sys.path.insert(0, os.getcwd())
import streamlit.runtime.scriptrunner.script_runner as SR
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.app_session import AppSession
import importlib

LOG = open(os.environ["TPSVIZ_PROFILE_LOG"], "a", buffering=1)
RUN = {"rec": None}
STACK = threading.local()

def timed(name, fn):
    def wrapper(*a, **k):
        rec = RUN["rec"]
        if rec is None:
            return fn(*a, **k)
        stack = STACK.__dict__.setdefault("s", [])
        stack.append(0.0)
        t = time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            dt = time.thread_time() - t
            child = stack.pop()
            rec["sections"][name] = rec["sections"].get(name, 0.0) + dt - child
            if stack:
                stack[-1] += dt
    wrapper.__wrapped__ = fn
    return wrapper

SECTIONS = ["sidebar.render", "common.page", "evaluation.evaluation", "compute.compare", "compute.delta_matrix_table",
            "compute.disagreements", "compute.group_view", "results.caveats", "allruns.all_runs_section",
            "charts.plot", "common.plot", "results.tps_points", "results.tps", "results.skill", "results.reference",
            "results.compare_tps", "results.verdicts", "results.metrics"]
for section in SECTIONS:  # (those the checkout has: --repo may name an older one)
    module, name = section.split(".")
    try:
        mod = importlib.import_module("pages._ui." + module)
    except ImportError:
        continue
    if hasattr(mod, name):
        setattr(mod, name, timed(section, getattr(mod, name)))
for name in ("plotly_chart", "dataframe", "markdown", "caption", "metric", "slider", "selectbox", "multiselect",
             "select_slider", "number_input", "radio", "image", "expander", "container", "columns"):
    setattr(DeltaGenerator, name, timed("st." + name, getattr(DeltaGenerator, name)))
    setattr(st, name, timed("st." + name, getattr(st, name)))  # (st.x: a method bound at import)

orig_exec = SR.exec_func_with_error_handling
def exec_(fn, ctx):
    rec = RUN["rec"] = {"sections": {}, "msgs": 0, "bytes": 0, "by_type": {}}
    t, c = time.perf_counter(), time.thread_time()
    try:
        return orig_exec(fn, ctx)
    finally:
        rec["script"], rec["cpu"] = time.perf_counter() - t, time.thread_time() - c
        RUN["rec"] = None
        def later():  # messages sent by the end of the run (script_finished comes after)
            time.sleep(0.5)
            LOG.write(json.dumps(rec) + "\n")
        threading.Thread(target=later, daemon=True).start()
SR.exec_func_with_error_handling = exec_

orig_enqueue = AppSession._enqueue_forward_msg
LAST = {"rec": None}
def enqueue(self, msg):
    rec = RUN["rec"] or LAST["rec"]
    if RUN["rec"] is not None:
        LAST["rec"] = RUN["rec"]
    if rec is not None:
        kind = msg.WhichOneof("type")
        if kind == "delta":
            d = msg.delta
            kind = d.WhichOneof("type")
            if kind == "new_element":
                kind = d.new_element.WhichOneof("type")
        n = msg.ByteSize()
        if kind in ("plotly_chart", "dataframe"):
            rec.setdefault("paths", []).append(kind + str(list(msg.metadata.delta_path)))
        rec["msgs"] += 1
        rec["bytes"] += n
        c, b = rec["by_type"].get(kind, (0, 0))
        rec["by_type"][kind] = (c + 1, b + n)
    return orig_enqueue(self, msg)
AppSession._enqueue_forward_msg = enqueue

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli
PagesManager.uses_pages_directory = False
cli.main(["run", "app.py", *sys.argv[1:]], prog_name="streamlit")
"""

_DONE_JS = """(want) => {
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return false;
  if ([...main.querySelectorAll('[data-testid="stPlotlyChart"]')].some(c => !c.querySelector('.js-plotly-plot'))) return false;
  if ([...main.querySelectorAll('img')].some(i => !i.complete)) return false;
  if (want && !document.body.innerText.includes(want)) return false;
  return true;
}"""

#: the same, and a plotly chart must be drawn in the main area (the toy's: its α text is drawn before it)
_DONE_CHART_JS = _DONE_JS.replace("  if (want", "  if (!main.querySelector('.js-plotly-plot')) return false;\n  if (want")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(script: Path, cwd: Path, command: list | None = None, env: dict | None = None):
    """Start a Streamlit server on ``script`` (or run ``command`` with the server options appended);
    (process, base URL, start time) once it answers."""
    port = _free_port()
    t0 = time.perf_counter()
    options = ["--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
               "--browser.gatherUsageStats", "false"]
    proc = subprocess.Popen((command or [sys.executable, "-m", "streamlit", "run", str(script)]) + options,
                            cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            if urllib.request.urlopen(base + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.05)
        if proc.poll() is not None or time.perf_counter() - t0 > 120:
            proc.kill()
            raise SystemExit(f"{script.name} did not start")
    return proc, base, t0


def _wait_complete(pg, want: str = "", stable: int = 3, timeout: float = 180, chart: bool = False) -> None:
    """Poll until the page is complete for ``stable`` consecutive polls (25 ms apart): every chart drawn
    and every picture loaded; ``chart``: a plotly chart must be on it (the toy)."""
    deadline = time.perf_counter() + timeout
    ok = 0
    while ok < stable:
        if time.perf_counter() > deadline:
            raise TimeoutError("page did not complete")
        ok = ok + 1 if pg.evaluate(_DONE_CHART_JS if chart else _DONE_JS, want) else 0
        pg.wait_for_timeout(25)


def _view(browser, base: str, marker: str, chart: bool = False) -> float:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    t = time.perf_counter()
    pg.goto(base)
    _wait_complete(pg, marker, chart=chart)
    dt = time.perf_counter() - t
    ctx.close()
    return dt


class Nudger:
    """One browser session on one app whose α slider is nudged one step right at a time (the
    session stays open between rounds: the next nudge goes on from the last α)."""

    def __init__(self, browser, base: str, marker: str, chart: bool = False):
        self.chart = chart
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.pg = self.ctx.new_page()
        self.pg.goto(base)
        _wait_complete(self.pg, marker, chart=chart)
        self.pg.wait_for_timeout(1500)
        self.thumb = self.pg.locator("[data-testid='stSidebar'] input[type=range][aria-label='α']").first
        self.done = 0

    def nudge(self) -> float:
        self.done += 1
        want = f"α={0.05 * self.done:g}"
        self.thumb.focus()
        t = time.perf_counter()
        self.thumb.press("ArrowRight")
        self.pg.wait_for_timeout(60)  # let the widget message reach the server before polling
        _wait_complete(self.pg, want, chart=self.chart)
        dt = time.perf_counter() - t
        self.pg.wait_for_timeout(500)
        return dt

    def close(self) -> None:
        self.ctx.close()


def _cold(script: Path, cwd: Path, browser, marker: str, chart: bool = False):
    """Start a server; (process, base URL, seconds to the first complete view)."""
    proc, base, t0 = _start(script, cwd)
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.goto(base)
    _wait_complete(pg, marker, chart=chart)
    cold = time.perf_counter() - t0
    ctx.close()
    return proc, base, cold


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure_alternating(toy: tuple, app: tuple, browser, rounds: int, nudges: int) -> dict:
    """Both servers up at once; each round: a fresh session of the toy, one of the dashboard, then
    ``nudges`` α nudges of the toy and as many of the dashboard. Returns {name: {figure: samples}}."""
    out = {"toy": {"first view": [], "slider nudge": []}, "app": {"first view": [], "slider nudge": []}}
    started, nudgers = {}, {}
    try:
        for name, (script, cwd, marker) in (("toy", toy), ("app", app)):
            proc, base, cold = _cold(script, cwd, browser, marker, chart=name == "toy")
            started[name] = (proc, base, marker)
            out[name]["cold start"] = [cold]
        for name, (_, base, marker) in started.items():
            nudgers[name] = Nudger(browser, base, marker, chart=name == "toy")
        for _ in range(rounds):
            for name, (_, base, marker) in started.items():
                out[name]["first view"].append(_view(browser, base, marker, chart=name == "toy"))
            for name in started:
                out[name]["slider nudge"] += [nudgers[name].nudge() for _ in range(nudges)]
    finally:
        for n in nudgers.values():
            n.close()
        for proc, _, _ in started.values():
            proc.terminate()
            proc.wait(20)
    return out


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


#: in the page before it loads: when each websocket message arrives (performance.now(), bytes)
_WS_HOOK = """(() => {
  window.__ws = [];
  window.__sent = [];
  const Orig = window.WebSocket;
  const send = Orig.prototype.send;
  Orig.prototype.send = function (data) {
    window.__sent.push([performance.now(), data.byteLength ?? data.size ?? data.length ?? 0]);
    return send.call(this, data);
  };
  window.WebSocket = function (...args) {
    const ws = new Orig(...args);
    ws.addEventListener('message', (ev) => {
      const n = ev.data.byteLength ?? ev.data.size ?? ev.data.length ?? 0;
      window.__ws.push([performance.now(), n]);
    });
    return ws;
  };
  window.WebSocket.prototype = Orig.prototype;
  Object.assign(window.WebSocket, Orig);
})();"""

#: the last change inside each plotly figure of the main area (its index on the page), as the time it
#: was drawn; the websocket log emptied: called just before a key press, returns the time of the call
_PLOT_HOOK = """() => {
  window.__ap = {};
  if (!window.__obs) {
    window.__obs = new MutationObserver((records) => {
      const now = performance.now();
      const charts = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]')];
      for (const r of records) {
        const i = charts.findIndex((c) => c.contains(r.target));
        if (i >= 0) window.__ap[i] = now;
      }
    });
    window.__obs.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  }
  window.__ws.length = 0;
  window.__sent.length = 0;
  return performance.now();
}"""


def _cpu_by_script(profile: dict) -> dict:
    """Self time (s) of a V8 CPU profile by the script it ran in (plotly's bundle, the data grid…)."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    out: dict = {}
    for node_id, dt in zip(profile["samples"], profile["timeDeltas"]):
        frame = nodes[node_id]["callFrame"]
        url = frame.get("url", "")
        name = url.rsplit("/", 1)[-1].split(".")[0] if url else ("(idle)" if frame["functionName"] == "(idle)"
                                                                 else "(browser: " + frame["functionName"] + ")")
        out[name] = out.get(name, 0.0) + dt / 1e6
    return out


def _print_runs(runs: list) -> None:
    """The server's record of each script run (see PROFILED_SERVER)."""
    for r in runs:
        top = sorted(r["sections"].items(), key=lambda kv: -kv[1])
        rest = r["cpu"] - sum(r["sections"].values())
        print(f"  server script run {r['script'] * 1000:.0f} ms, CPU {r['cpu'] * 1000:.0f} ms: "
              + ", ".join(f"{k} {v * 1000:.0f}" for k, v in top if v >= 0.002) + f", rest {rest * 1000:.0f}")
        kinds = sorted(r["by_type"].items(), key=lambda kv: -kv[1][1])
        print(f"  messages sent {r['msgs']} ({r['bytes'] / 1024:.1f} KiB): "
              + ", ".join(f"{k} {c}×{b / 1024:.1f}K" for k, (c, b) in kinds[:12]))
        print("  where the charts and tables went (delta paths): " + " ".join(r.get("paths", [])))


def _print_cpu(cpu: dict) -> None:
    """The browser's main thread during one view or nudge, by script."""
    busy = {k: v for k, v in cpu.items() if k not in ("(idle)", "(browser: (program))")}
    print(f"  browser main thread busy {sum(busy.values()) * 1000:.0f} ms (+ (program) "
          f"{cpu.get('(browser: (program))', 0) * 1000:.0f} ms) by script (ms): "
          + ", ".join(f"{k} {v * 1000:.0f}" for k, v in sorted(busy.items(), key=lambda kv: -kv[1])[:8]))


def profile_nudges(repo: Path, browser, nudges: int) -> None:
    """One session on the demo, ``nudges`` α nudges: per nudge the server's script time by section, the
    messages sent, the browser's time by script and when each plotly figure was drawn."""
    import json

    log = Path(tempfile.mkdtemp()) / "runs.jsonl"
    proc, base, _ = _start(repo / "app.py", repo, command=[sys.executable, "-c", PROFILED_SERVER],
                           env=dict(os.environ, TPSVIZ_PROFILE_LOG=str(log)))
    try:
        for k in range(2):  # the first warms the server's caches; the second is a fresh session on a warm server
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            pg = ctx.new_page()
            cdp = ctx.new_cdp_session(pg)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            cdp.send("Profiler.start")
            n_runs = len(log.read_text().splitlines()) if log.exists() else 0
            t = time.perf_counter()
            pg.goto(base)
            _wait_complete(pg, VERDICT_DONE)
            wall = time.perf_counter() - t
            cpu = _cpu_by_script(cdp.send("Profiler.stop")["profile"])
            pg.wait_for_timeout(800)
            ctx.close()
            if k:
                print(f"fresh session: {wall:.2f} s to the complete first view")
                _print_runs([json.loads(x) for x in log.read_text().splitlines()[n_runs:]])
                _print_cpu(cpu)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        ctx.add_init_script(_WS_HOOK)
        pg = ctx.new_page()
        cdp = ctx.new_cdp_session(pg)
        pg.goto(base)
        _wait_complete(pg, VERDICT_DONE)
        pg.wait_for_timeout(1500)
        thumb = pg.locator("[data-testid='stSidebar'] input[type=range][aria-label='α']").first
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 200})
        for i in range(1, nudges + 1):
            n_runs = len(log.read_text().splitlines()) if log.exists() else 0
            start = pg.evaluate(_PLOT_HOOK)
            thumb.focus()
            cdp.send("Profiler.start")
            t = time.perf_counter()
            thumb.press("ArrowRight")
            pg.wait_for_timeout(60)
            _wait_complete(pg, f"α={0.05 * i:g}")
            wall = time.perf_counter() - t
            done = pg.evaluate("() => performance.now()")
            cpu = _cpu_by_script(cdp.send("Profiler.stop")["profile"])
            ws, ap, sent = pg.evaluate("() => [window.__ws, window.__ap, window.__sent]")
            start = sent[0][0] if sent else start  # (from here on, times count from the rerun request)
            pg.wait_for_timeout(800)  # the server's record of the run is written 0.5 s after it
            runs = [json.loads(x) for x in log.read_text().splitlines()[n_runs:]]
            print(f"nudge {i}: {wall:.2f} s to complete in the browser")
            _print_runs(runs)
            if ws:
                print(f"  browser received {len(ws)} websocket messages ({sum(n for _, n in ws) / 1024:.1f} KiB), "
                      f"the first {ws[0][0] - start:.0f} ms and the last {ws[-1][0] - start:.0f} ms after it asked for the "
                      f"rerun; the page complete after {done - start:.0f} ms")
            print("  plotly figures changed (index on the page @ ms after the rerun request of its last change): "
                  + (", ".join(f"#{k} @ {ms - start:.0f}" for k, ms in sorted(ap.items())) or "none"))
            _print_cpu(cpu)
            pg.wait_for_timeout(500)
        ctx.close()
    finally:
        proc.terminate()
        proc.wait(20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds of toy and dashboard")
    ap.add_argument("--nudges", type=int, default=3, help="α nudges of each app in a round")
    ap.add_argument("--profile", action="store_true",
                    help="profile --nudges α nudges of the dashboard alone (server sections, messages, browser)")
    ap.add_argument("--big", type=int, default=0, help="runs of a large synthetic log (instead of the toy comparison)")
    ap.add_argument("--repo", default=str(ROOT), help="checkout whose app.py is measured (default: this one)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    repo = Path(args.repo).resolve()
    if args.profile:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            print(f"dashboard: {repo} (demo log, default view), one session, {args.nudges} α nudges; load average "
                  f"{_load()} ({os.cpu_count()} cores)")
            profile_nudges(repo, browser, args.nudges)
            browser.close()
        return
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
        load_before = _load()
        res = measure_alternating((toy, Path(tmp), "α=0"), (repo / "app.py", repo, VERDICT_DONE), browser,
                                  args.rounds, args.nudges)
        load_after = _load()
        browser.close()
    print(f"dashboard: {repo} (demo log, default view)  vs  toy app (1 slider, 1 plotly chart, 1 table)")
    print(f"{args.rounds} alternating rounds (a fresh session of each, then {args.nudges} α nudges of each); "
          f"load average before {load_before}, after {load_after} ({os.cpu_count()} cores)")
    print(f"{'median':14s} {'toy (s)':>9s} {'dashboard (s)':>14s} {'ratio':>7s}")
    for k in ("cold start", "first view", "slider nudge"):
        t, a = statistics.median(res["toy"][k]), statistics.median(res["app"][k])
        print(f"{k:14s} {t:9.2f} {a:14.2f} {a / t:6.2f}×")
    for k in ("slider nudge", "first view"):
        print(f"{k} (s): toy", " ".join(f"{x:.2f}" for x in res["toy"][k]),
              "| dashboard", " ".join(f"{x:.2f}" for x in res["app"][k]))

if __name__ == "__main__":
    main()
