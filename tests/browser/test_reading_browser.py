"""Issue 9 in a real browser: a person uploads a harness log and a table with other column names."""

from __future__ import annotations

import sys

import pytest

from browser_helpers import ROOT, no_traceback, screenshot, wait_ready
from test_dashboard import _sidebar, _upload

sys.path.insert(0, str(ROOT / "tests"))


@pytest.fixture(scope="module")
def inspect_eval(tmp_path_factory):
    from inspect_logs import write_logs_in_subprocess

    return write_logs_in_subprocess(tmp_path_factory.mktemp("inspect_browser"))["eval"]


def test_upload_an_inspect_log_and_read_how_it_was_read(page, inspect_eval):
    page.goto(page.base)
    wait_ready(page, "Overview / Compare")
    _upload(page, str(inspect_eval))
    page.get_by_text("How this log was read").first.wait_for()
    page.get_by_text("18 runs read, 17 kept").first.wait_for()
    page.get_by_text("raw signals only").first.wait_for()
    no_traceback(page)
    screenshot(page, "50_inspect_upload_overview")
    # a forecast field typed in the reading options adds the agent's verbal confidence
    _sidebar(page).get_by_text("Reading options").click()
    box = _sidebar(page).get_by_role("textbox", name="Forecast fields of agent messages")
    box.fill("verbal=metadata.confidence")
    box.press("Enter")
    wait_ready(page)
    page.wait_for_timeout(500)
    wait_ready(page)
    page.locator("[data-testid='stDataFrame']").filter(has_text="verbal").first.wait_for()
    assert "conf=verbal" in page.url
    no_traceback(page)
    screenshot(page, "51_inspect_with_verbal")
    page.get_by_role("link", name="Recalibration").first.click()
    wait_ready(page, "Recalibration")
    no_traceback(page)
    screenshot(page, "52_inspect_recalibration")


def test_map_the_columns_of_another_table(page, tmp_path):
    f = tmp_path / "other_names.csv"
    rows = ["run,turn,success,p_success"] + [f"r{i},{t},{'' if i % 7 == 0 else i % 2},{0.3 + 0.1 * t}"
                                            for i in range(20) for t in (1, 2, 3)]
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    page.goto(page.base)
    wait_ready(page, "Overview / Compare")
    _upload(page, str(f))
    page.get_by_text("Map your columns").first.wait_for()
    no_traceback(page)
    screenshot(page, "53_mapping_form")
    page.get_by_role("button", name="Apply this mapping").click()
    wait_ready(page)
    page.get_by_text("Leaderboard").first.wait_for()
    assert "map=" in page.url
    no_traceback(page)
    screenshot(page, "54_mapping_applied")
