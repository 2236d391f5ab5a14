"""Issue 34 in a real browser: the demo scenario of a real tau-bench log without forecasts opens with
its reference forecasters, says what a real signal would have to beat, and gives the replay command
for this file, which a person copies."""

from __future__ import annotations

from browser_helpers import no_traceback, screenshot, wait_ready

REPLAY = ("python -m tpsviz forecast demo_data/tau-bench-airline-gpt-4o.json --model openai/gpt-4o-mini "
          "--out forecasts.parquet")


def test_the_tau_bench_demo_shows_its_references_and_the_replay_command(page):
    pg = page
    pg.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=pg.base)
    pg.set_default_timeout(120_000)
    pg.goto(pg.base + "/?demo=tau-bench-airline")
    wait_ready(pg, "Overview / Compare")
    pg.get_by_text("What a real signal would have to beat").first.wait_for()
    pg.get_by_text("ref:task+step (reference forecaster)").first.wait_for()  # a verdict, labelled
    pg.locator("[data-testid='stDataFrame']").filter(has_text="TPS").first.wait_for()
    no_traceback(pg)
    # the panel is open on a log without forecasts; the replay command names this file, and copies
    pg.get_by_text("3. Replay the finished log to a model").first.wait_for()
    block = pg.locator("[data-testid='stCode']").filter(has_text="tpsviz forecast").first
    block.scroll_into_view_if_needed()
    assert REPLAY in block.inner_text()
    block.hover()
    block.locator("button").first.click()
    assert REPLAY in pg.evaluate("() => navigator.clipboard.readText()")
    screenshot(pg, "60_tau_bench_overview")
    pg.get_by_role("link", name="Reliability").first.click()
    wait_ready(pg, "Reliability")
    no_traceback(pg)
    pg.get_by_text("ref:step (reference forecaster)").first.wait_for()
    screenshot(pg, "61_tau_bench_reliability")
