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


def test_reading_options_of_one_file_do_not_refuse_the_next(browser, rooted_server):
    """A percent option set for one file refused the next file ("percent given for 'conf_x', which
    is not a predictor column"; helper-23). In a browser the options are widgets bound to the URL,
    whose parameters Streamlit does not let the app delete (AppTest does not show that): they are
    set back to their defaults, the next file opens, and the link carries no stale option."""
    base, root, _ = rooted_server
    rows = "".join(f"r{i},{t},{i % 2},{30 + 10 * t + 5 * (i % 2)}\n" for i in range(30) for t in range(1, 4))
    (root / "pct.csv").write_text("trajectory_id,step,outcome,conf_x\n" + rows, encoding="utf-8")
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        pg.goto(base + "/?src=Server+path&path=pct.csv")
        wait_ready(pg, "Overview / Compare")
        pg.get_by_text("look like percentages").first.wait_for()
        _sidebar(pg).get_by_text("Reading options").click()
        box = _sidebar(pg).get_by_role("textbox", name="Predictors given in percent")
        box.fill("x")
        box.press("Enter")
        wait_ready(pg)
        pg.get_by_text("Can I trust it?").first.wait_for()
        assert "pct=x" in pg.url
        path = _sidebar(pg).get_by_role("textbox", name="Path on the server")
        path.fill("tau2.csv")
        path.press("Enter")
        wait_ready(pg)
        pg.wait_for_timeout(500)
        wait_ready(pg)
        pg.get_by_text("Can I trust it?").first.wait_for()
        _sidebar(pg).get_by_text("Reading options were cleared").wait_for()
        body = pg.locator("[data-testid='stMain']").inner_text()
        assert "not a predictor column" not in body and "could not be applied" not in body
        assert "pct=" not in pg.url and "path=tau2.csv" in pg.url
        no_traceback(pg)
        screenshot(pg, "54_reading_options_cleared")
        _sidebar(pg).locator("[data-testid='stRadio'] label").filter(has_text="Demo").first.click()
        wait_ready(pg)
        pg.wait_for_timeout(500)
        assert "path=" not in pg.url and "pct=" not in pg.url
        no_traceback(pg)
    finally:
        ctx.close()
