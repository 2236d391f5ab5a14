"""Issue 38, item 4, in a real browser against one Streamlit server: three sessions upload different
logs *under the same file name* at the same moment, and each sees only its own (its predictor, its
number of runs, its runs in the drill-down), on the Overview and on another page.

The same name is the hard case: the cache key of an upload is its bytes and its name
(pages/_ui/state.upload_key), so a key by name alone would hand one session another's log.
tests/browser/test_team_browser.py holds the case of three different names."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from browser_helpers import ROOT, no_traceback, wait_ready

sys.path.insert(0, str(ROOT / "bench"))
from bench_browser import VERDICT_DONE, _wait_complete  # noqa: E402
from bench_team import ERRORS_JS  # noqa: E402

NAME = "run_log.csv"
#: each session's predictor and number of runs
SESSIONS = {"delta": ("delta_only", 40), "echo": ("echo_only", 50), "foxtrot": ("foxtrot_only", 60)}


def write_log(path: Path, predictor: str, prefix: str, n: int, seed: int) -> Path:
    """A long-format CSV log of ``n`` complete runs of 4 steps, both outcomes, one predictor."""
    rng = np.random.default_rng(seed)
    rows = [f"trajectory_id,step,outcome,conf_{predictor}"]
    for i in range(n):
        q = rng.uniform(0.1, 0.9)
        y = int(i % 2 == 0) if i < 10 else int(rng.random() < q)
        for s in range(1, 5):
            p = min(0.98, max(0.02, q + (y - q) * s / 6 + rng.normal(0, 0.05)))
            rows.append(f"{prefix}-run-{i:03d},{s},{y},{p:.4f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def sidebar(pg):
    return pg.locator("[data-testid='stSidebar']")


def text(pg) -> str:
    return pg.locator("[data-testid='stApp']").inner_text()


def runs_shown(pg) -> str:
    return pg.locator("[data-testid='stMetric']").filter(has_text="Trajectories").first.inner_text()


def test_three_sessions_uploading_one_name_at_once_each_see_their_own(browser, server, tmp_path):
    logs = {who: write_log(tmp_path / who / NAME, pred, who, n, seed)
            for seed, (who, (pred, n)) in enumerate(SESSIONS.items())}
    assert len({p.read_bytes() for p in logs.values()}) == 3 and {p.name for p in logs.values()} == {NAME}
    pages = {}
    try:
        for who in SESSIONS:  # one browser context each: three people
            ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
            pg = ctx.new_page()
            pg.set_default_timeout(90_000)
            pg.js_errors = []
            pg.on("pageerror", lambda e, pg=pg: pg.js_errors.append(str(e)))
            pg.goto(server)
            pages[who] = pg
        for pg in pages.values():
            sidebar(pg).get_by_role("radiogroup", name="Data source").get_by_text("Upload", exact=True).click()
        for pg in pages.values():
            pg.locator("[data-testid='stSidebar'] input[type='file']").first.wait_for(state="attached")
            wait_ready(pg)
        for who, pg in pages.items():  # the three uploads in flight at the same moment
            pg.locator("[data-testid='stSidebar'] input[type='file']").first.set_input_files(str(logs[who]))
        for who, pg in pages.items():
            pg.get_by_text(f"{SESSIONS[who][0]} — says").first.wait_for(timeout=120_000)  # its verdict
            _wait_complete(pg, VERDICT_DONE, timeout=120)

        def check(where: str, own_runs: bool = False) -> None:
            for who, pg in pages.items():
                shown = text(pg)
                assert SESSIONS[who][0] in shown, (where, who)
                if own_runs:
                    assert f"{who}-run-" in shown, (where, who)
                else:
                    assert str(SESSIONS[who][1]) in runs_shown(pg), (where, who, runs_shown(pg))
                for other in SESSIONS:
                    if other != who:
                        assert SESSIONS[other][0] not in shown and f"{other}-run-" not in shown, (where, who, other)
                no_traceback(pg)
                assert pg.evaluate(ERRORS_JS) == [] and pg.js_errors == [], (where, who)

        check("after the uploads")
        for pg in pages.values():  # another page, all at once (the drill-down lists the session's runs)
            pg.get_by_role("link", name="Step contributions").first.click()
        for pg in pages.values():
            wait_ready(pg, "Step contributions")
            pg.get_by_role("heading", name="Drill down: one run").first.wait_for()
            wait_ready(pg)
        check("on another page", own_runs=True)
    finally:
        for pg in pages.values():
            pg.context.close()
