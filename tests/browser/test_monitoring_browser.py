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
    wait_ready(page)
    button = page.get_by_role("button", name="Download windows (CSV)")
    button.wait_for(state="visible")
    page.wait_for_timeout(500)  # the expander's content settles (a click during its animation was lost once in CI)
    download = None
    for attempt in range(2):  # one more click if the first started no download within 30 s
        try:
            with page.expect_download(timeout=30_000) as dl:
                button.click()
            download = dl.value
            break
        except Exception:
            if attempt:
                raise
    text = open(download.path(), encoding="utf-8").read()
    assert text.startswith("predictor,window,first,last,n_runs,tps_mean")
    assert "2026-09-01 01:06 UTC" in text
    screenshot(page, "71_monitoring_window_200")
