"""Issue 13 in a real browser: the Other outcomes page on the multi-class and continuous demos (a link
opens them, the score choice reruns, the Overview of such a log points to this page). Screenshots 72-74."""

from browser_helpers import dismiss_page_not_found, no_traceback, screenshot, wait_ready


def test_multiclass_demo_scores_and_the_rule_switch(page):
    page.goto(page.base + "/outcomes?demo=multiclass-like")
    wait_ready(page, "Other outcomes")
    dismiss_page_not_found(page)
    no_traceback(page)
    page.get_by_text("3 labels: success, partial, failure").first.wait_for()
    page.get_by_text("One-vs-rest reliability (complete runs)").first.wait_for()
    screenshot(page, "72_outcomes_multiclass")
    page.get_by_text("Brier", exact=True).first.click()
    wait_ready(page)
    no_traceback(page)
    assert page.get_by_role("radio", name="Brier").is_checked()


def test_continuous_demo_shows_pit_histograms(page):
    page.goto(page.base + "/outcomes?demo=continuous-like")
    wait_ready(page, "Other outcomes")
    dismiss_page_not_found(page)
    no_traceback(page)
    page.get_by_text("A number as the outcome: the CRPS").first.wait_for()
    page.get_by_text("PIT histograms (flat = calibrated)").first.wait_for()
    page.get_by_text("overconfident: p = ").first.wait_for()   # a PIT panel title (the table is a canvas)
    screenshot(page, "73_outcomes_continuous")


def test_overview_of_a_multiclass_log_points_to_the_page(page):
    page.goto(page.base + "/?demo=multiclass-like")
    wait_ready(page, "Overview / Compare")
    dismiss_page_not_found(page)
    no_traceback(page)
    page.get_by_text("This is a multi-class log.").first.wait_for()
    screenshot(page, "74_overview_multiclass")
    page.get_by_role("link", name="Open Other outcomes").click()
    wait_ready(page, "Other outcomes")
    page.get_by_text("3 labels: success, partial, failure").first.wait_for()
