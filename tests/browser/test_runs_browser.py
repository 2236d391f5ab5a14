"""Issue 46 in a real browser: from the table of runs to one run. On the demo log, the "confident
failures" preset, a row chosen, the run's curve; on a real tau-bench log (a fixture, uploaded), a
run's messages at the step the page opens on, and a click on the curve that brings another step's."""

from __future__ import annotations

import re

from browser_helpers import ROOT, dismiss_page_not_found, no_traceback, screenshot, wait_ready

TAU1 = ROOT / "tests" / "fixtures" / "taubench" / "tau1_gpt-4o-airline_trimmed.json"


def _main(pg):
    return pg.locator("[data-testid='stMain']")


def _choose_first_row(pg) -> None:
    """Tick the first row of the table of runs (a canvas: its checkbox column is the first)."""
    grid = _main(pg).locator("[data-testid='stDataFrame']").first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    pg.mouse.click(box["x"] + 18, box["y"] + 35 + 18)
    wait_ready(pg)


def _preset(pg, name: str) -> None:
    _main(pg).locator("[data-testid='stSelectbox']").filter(has_text="Preset filter").click()
    pg.get_by_role("option", name=name).click()
    wait_ready(pg)


def test_confident_failures_to_one_run_on_the_demo(page):
    pg = page
    pg.goto(pg.base + "/runs?boot=0")
    wait_ready(pg, "Runs")
    dismiss_page_not_found(pg)  # (a deep link as a fresh browser's first page: docs/deployment.md)
    no_traceback(pg)
    _preset(pg, "confident failures")
    pg.get_by_text(re.compile(r"^\d+ of 450 runs")).first.wait_for()
    screenshot(pg, "70_runs_confident_failures")
    _choose_first_row(pg)
    pg.wait_for_url(re.compile(r"[?&]run="))
    pg.locator("[data-testid='stPlotlyChart']").first.wait_for()
    pg.get_by_text("This log has no transcript").first.wait_for()
    assert pg.get_by_role("radio", name="One run").is_checked()
    no_traceback(pg)
    screenshot(pg, "71_runs_one_demo_run")


def test_a_tau_bench_run_shows_its_messages_and_a_click_on_the_curve_moves_the_step(page):
    pg = page
    pg.goto(pg.base + "/?boot=0")
    wait_ready(pg, "Overview / Compare")
    sidebar = pg.locator("[data-testid='stSidebar']")
    sidebar.get_by_role("radiogroup", name="Data source").get_by_text("Upload", exact=True).click()
    wait_ready(pg)
    sidebar.locator("input[type='file']").first.set_input_files(str(TAU1))
    wait_ready(pg)
    sidebar.get_by_role("link", name="Runs").first.click()
    wait_ready(pg, "Runs")
    _choose_first_row(pg)
    pg.wait_for_url(re.compile(r"[?&]run="))
    chat = _main(pg).locator("[data-testid='stChatMessage']")
    chat.first.wait_for()
    caption = _main(pg).get_by_text(re.compile(r"^Step \d+ of \d+:")).first
    before = caption.inner_text()
    assert chat.count() >= 1 and chat.first.inner_text().strip()
    no_traceback(pg)
    screenshot(pg, "72_runs_tau_bench_messages")
    # a click on a point of the curve brings that step's messages (the first step, or the last when the
    # page opened on the first)
    first, n = re.match(r"Step (\d+) of (\d+)", before).groups()
    target = n if first == "1" else "1"
    points = _main(pg).locator("[data-testid='stPlotlyChart'] .scatterlayer .trace").first.locator(".point")
    points.nth(int(target) - 1).click(force=True)
    wait_ready(pg)
    after = _main(pg).get_by_text(re.compile(r"^Step \d+ of \d+:")).first.inner_text()
    assert after.startswith(f"Step {target} of {n}"), (before, after)
    if target == "1":
        assert _main(pg).locator("[data-testid='stChatMessage']").filter(has_text="SYSTEM").count() == 1
    no_traceback(pg)
    screenshot(pg, "73_runs_tau_bench_clicked_step")
