"""Where an α nudge's time goes, against the toy of bench_browser.py, in one run (issue 35, point 5).

Two experiments, each alternating its apps round by round in one headless chromium (the nudge is
timed as in bench_browser.py: key press → page complete again, new α shown):

  --warm   the toy; the dashboard on a cold cache; the dashboard whose α values another session
           computed before (every result of the nudge comes from the cache). The gap between the
           two dashboards is what the α-dependent computation costs a nudge; the warm one's ratio is
           the floor the rest of the page (its elements, the sidebar, the browser's drawing) sets.
  --toys   the toy and toys with more elements that do not change: 70 Markdown elements, the same
           text in one element, 25 more sidebar widgets, two tables whose numbers change with α.
           What an element costs a nudge whatever the computation behind it.
  --compare CHECKOUT…  the toy and the dashboard of each checkout (e.g. git worktrees with one part
           of the page left out): what that part costs a nudge, against the toy of the same run.

Usage: .venv/bin/python bench/bench_nudge_floor.py --warm [--rounds 8] [--repo CHECKOUT]
       .venv/bin/python bench/bench_nudge_floor.py --toys [--rounds 6]
       .venv/bin/python bench/bench_nudge_floor.py --compare . /tmp/without-figure
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_browser as B  # noqa: E402

ROOT = B.ROOT
TOY_EXTRAS = {
    "toy + 70 Markdown elements": "\nfor i in range(70):\n    st.markdown(f'line {i} of unchanged text, **bold** and more words')\n",
    "toy + the same text in 1 element": "\nst.markdown('\\n\\n'.join(f'line {i} of unchanged text, **bold** and more words' "
                                        "for i in range(70)))\n",
    "toy + 25 sidebar widgets": "\nfor i in range(25):\n    st.sidebar.selectbox(f'opt {i}', ['a', 'b', 'c'], key=f's{i}')\n",
    "toy + 2 tables changing with α": "\nst.dataframe(means.assign(a=alpha).head(8), hide_index=True)\n"
                                      "st.dataframe(means.assign(b=alpha).head(6), hide_index=True)\n",
}


def _alternate(servers: dict, markers: dict, rounds: int, nudges: int, before=None) -> dict:
    """{name: nudge seconds}: ``nudges`` nudges of each server per round, the servers in turn."""
    from playwright.sync_api import sync_playwright

    out = {k: [] for k in servers}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=B.CHROMIUM, args=B.ARGS)
        if before is not None:
            before(browser)
        nudgers = {k: B.Nudger(browser, base, markers[k], chart=k.startswith("toy")) for k, base in servers.items()}
        for _ in range(rounds):
            for k, nd in nudgers.items():
                out[k] += [nd.nudge() for _ in range(nudges)]
        browser.close()
    return out


def _report(res: dict, title: str) -> None:
    toy = statistics.median(res["toy"])
    print(title + f"; load average {B._load()}")
    for k, v in res.items():
        m = statistics.median(v)
        print(f"{k:36s} median {m:.3f} s  {m / toy:5.2f}×   " + " ".join(f"{x:.2f}" for x in v))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warm", action="store_true", help="the dashboard cold and warm against the toy")
    ap.add_argument("--toys", action="store_true", help="toys with more elements against the toy")
    ap.add_argument("--compare", nargs="+", metavar="CHECKOUT", help="the dashboard of each checkout against the toy")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--nudges", type=int, default=3)
    ap.add_argument("--repo", default=str(ROOT), help="checkout whose app.py is measured (default: this one)")
    args = ap.parse_args()
    if not (args.warm or args.toys or args.compare):
        ap.error("choose --warm, --toys or --compare")
    repo = Path(args.repo).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        toy_src = B.TOY.format(csv=ROOT / "demo_data" / "webshop-like.csv")
        scripts = {"toy": toy_src} | ({k: toy_src + extra for k, extra in TOY_EXTRAS.items()} if args.toys else {})
        procs = {}
        try:
            for i, (name, src) in enumerate(scripts.items()):
                (tmp / f"toy{i}.py").write_text(src)
                procs[name] = B._start(tmp / f"toy{i}.py", tmp)
            serve = [sys.executable, "serve.py"]
            if args.warm:
                for name in ("dashboard, cold cache", "dashboard, α values computed before"):
                    procs[name] = B._start(repo / "app.py", repo, command=serve)
            for co in map(Path, args.compare or []):
                co = co.resolve()
                procs[f"dashboard {co.name or co}"] = B._start(co / "app.py", co, command=serve)
            servers = {k: v[1] for k, v in procs.items()}
            markers = {k: "α=0" if k.startswith("toy") else B.VERDICT_DONE for k in servers}

            def warm_up(browser):  # another session computes the α values the measured one will ask for
                if args.warm:
                    pre = B.Nudger(browser, servers["dashboard, α values computed before"], B.VERDICT_DONE)
                    for _ in range(args.rounds * args.nudges + 2):
                        pre.nudge()
                    pre.close()

            res = _alternate(servers, markers, args.rounds, args.nudges, warm_up)
        finally:
            for proc, *_ in procs.values():
                proc.terminate()
                proc.wait(20)
    _report(res, f"α nudges, {args.rounds} alternating rounds of {args.nudges}")


if __name__ == "__main__":
    main()
