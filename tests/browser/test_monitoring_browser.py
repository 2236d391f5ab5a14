"""Issue 13 in a real browser: the Monitoring page on the drifting demo (a link opens it, the answer
shows, a control changes the windows, the window table downloads). Screenshots 70-71."""

from browser_helpers import dismiss_page_not_found, no_traceback, screenshot, wait_ready


def test_monitoring_page_on_the_drifting_demo(page):
    page.goto(page.base + "/monitoring?demo=drift-like")
    wait_ready(page, "Monitoring")
    dismiss_page_not_found(page)
    no_traceback(page)
    page.get_by_text("agent degraded").first.wait_for()
    assert page.get_by_text("where chance alone gives about").first.is_visible()
    screenshot(page, "70_monitoring_drift")
    box = page.get_by_role("spinbutton", name="Runs per window")
    box.fill("200")
    box.press("Enter")
    wait_ready(page)
    page.get_by_text("Windows of 200 runs every 50").first.wait_for()
    no_traceback(page)
    page.get_by_text("Window table").first.click()
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download windows (CSV)").click()
    text = open(dl.value.path(), encoding="utf-8").read()
    assert text.startswith("predictor,window,first,last,n_runs,tps_mean")
    assert "2026-09-01 01:06 UTC" in text
    screenshot(page, "71_monitoring_window_200")
