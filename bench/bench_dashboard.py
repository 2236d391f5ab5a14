"""Server-side time of a dashboard rerun after an α change: 100k-trajectory synthetic log vs demo.

The rerun is timed with Streamlit's AppTest (the script runs in-process, exactly as on the server,
without the browser): load the app, warm every cache, move α, time the rerun. The big log is
generated into a temporary directory (never committed) and opened through the "Server path" source.

Usage: .venv/bin/python bench/bench_dashboard.py [--n 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from pages._ui.memo import clear_all  # noqa: E402

from tpsviz.synthetic.agent import simulate  # noqa: E402

APP = str(ROOT / "app.py")


def _rerun_after_alpha(setup, repeats: int, page: str) -> tuple[float, float]:
    """(first load seconds, median seconds of a rerun after an α change)."""
    st.cache_resource.clear()
    st.cache_data.clear()
    clear_all()
    at = AppTest.from_file(APP, default_timeout=1800)
    setup(at)
    t0 = time.perf_counter()
    at.run()
    if page:
        at.switch_page(page).run()
    first = time.perf_counter() - t0
    assert not at.exception, [e.value for e in at.exception]
    times = []
    for i in range(repeats):  # noqa: B007
        at.slider(key="a").set_value(round(0.1 * (i + 1), 2))
        t = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t)
        assert not at.exception, [e.value for e in at.exception]
    return first, statistics.median(times) if times else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="trajectories in the big synthetic log")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--page", default="", help="page to time, e.g. pages/views/censoring.py (default: Overview)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TPSVIZ_DATA_ROOTS"] = tmp  # server paths are read only under a data root
        t = time.perf_counter()
        sim = simulate("webshop-like", n_trajectories=args.n, seed=7)
        path = Path(tmp) / "big.parquet"
        sim.steps.to_parquet(path, index=False)
        print(f"generated {args.n:,} trajectories / {len(sim.steps):,} step rows in {time.perf_counter() - t:.1f} s")

        def demo(at):
            pass

        def big(at):
            at.query_params.update({"src": "Server path", "path": str(path)})

        def big_no_metric_ci(at):
            at.query_params.update({"src": "Server path", "path": str(path), "mboot": "0"})

        f_small, r_small = _rerun_after_alpha(demo, args.repeats, args.page)
        f_big, r_big = _rerun_after_alpha(big, args.repeats, args.page)
        # the Overview draws TPS, skill and metric points first and fills in the metric CIs last: a run
        # with the metric bootstraps off bounds the time until the leaderboard first appears
        f_view, _ = _rerun_after_alpha(big_no_metric_ci, 0, args.page)
    print(f"demo  (landing demo):        first load {f_small:6.2f} s, rerun after α change {r_small:6.3f} s")
    print(f"large ({args.n:,} runs):   first load {f_big:6.2f} s, rerun after α change {r_big:6.3f} s")
    print(f"large, metric bootstraps off (≈ time to the first view of the leaderboard): {f_view:6.2f} s")
    print(f"ratio large/demo (rerun after α change): {r_big / r_small:.1f}x")


if __name__ == "__main__":
    main()
