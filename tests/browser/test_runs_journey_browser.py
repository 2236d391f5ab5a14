"""Issue 46, "Done when", in a real browser: on the real tau-bench log (the demo) and a real tau2-bench log
(a fixture, uploaded), a person goes from the leaderboard to the confident failures, to one run, to the
message at the step where its forecast moved most, without typing. The screenshots of each step are
copied to docs/screenshots/ (runs-journey-*.png) by hand when the pages change."""

from __future__ import annotations

import re

from browser_helpers import ROOT, dismiss_page_not_found, no_traceback, screenshot, wait_ready

TAU2 = ROOT / "tests" / "fixtures" / "tau2" / "tau2v1_airline_whissle_trimmed.json"  # (real; 1 confident failure)


def _main(pg):
    return pg.locator("[data-testid='stMain']")


def _journey(pg, name: str) -> None:
    """Overview → "Confident failures of …" → the first run of the table → its messages at the step of
    the largest forecast move (the step the run view opens on)."""
    link = _main(pg).get_by_role("link", name=re.compile(r"^Confident failures of "))
    link.first.wait_for()
    announced = int(re.search(r"\(([\d,]+)\)$", link.first.inner_text().strip()).group(1).replace(",", ""))
    screenshot(pg, f"runs-journey-{name}-1-leaderboard")
    link.first.click()
    wait_ready(pg, "Runs")
    # the link's preset is applied: its words, and the count the link announced
    _main(pg).get_by_text(re.compile(r"the last forecast is at least 0\.8 and the run failed")).first.wait_for()
    shown = _main(pg).get_by_text(re.compile(r"^\d+ of \d+ runs")).first
    shown.wait_for()
    n_shown, n_all = map(int, re.match(r"(\d+) of ([\d,]+)", shown.inner_text().replace(",", "")).groups())
    assert n_shown == announced and 1 <= n_shown < n_all
    no_traceback(pg)
    screenshot(pg, f"runs-journey-{name}-2-confident-failures")
    grid = _main(pg).locator("[data-testid='stDataFrame']").first
    box = grid.bounding_box()
    pg.mouse.click(box["x"] + 18, box["y"] + 35 + 18)  # the first row's checkbox
    wait_ready(pg)
    pg.wait_for_url(re.compile(r"[?&]run="))
    assert pg.get_by_role("radio", name="One run").is_checked()
    # the run view opens on the step of the largest move; its messages are shown as text
    caption = _main(pg).get_by_text(re.compile(r"^Step \d+ of \d+:")).first
    caption.wait_for()
    step = int(re.match(r"Step (\d+)", caption.inner_text()).group(1))
    moves = _main(pg).get_by_text(re.compile(r"largest", re.I))
    assert moves.count() >= 1
    chat = _main(pg).locator("[data-testid='stChatMessage']")
    chat.first.wait_for()
    assert chat.count() >= 1 and chat.first.inner_text().strip()
    assert step >= 1
    no_traceback(pg)
    screenshot(pg, f"runs-journey-{name}-3-run-at-largest-move")


def test_tau_bench_leaderboard_to_the_message_where_the_forecast_moved_most(page):
    pg = page
    pg.goto(pg.base + "/?demo=tau-bench-airline&boot=0")
    wait_ready(pg, "Overview / Compare")
    dismiss_page_not_found(pg)
    _journey(pg, "tau-bench")


def test_tau2_leaderboard_to_the_message_where_the_forecast_moved_most(page):
    pg = page
    pg.goto(pg.base + "/?boot=0")
    wait_ready(pg, "Overview / Compare")
    sidebar = pg.locator("[data-testid='stSidebar']")
    sidebar.get_by_role("radiogroup", name="Data source").get_by_text("Upload", exact=True).click()
    wait_ready(pg)
    sidebar.locator("input[type='file']").first.set_input_files(str(TAU2))
    wait_ready(pg, "Overview / Compare")
    _journey(pg, "tau2")
