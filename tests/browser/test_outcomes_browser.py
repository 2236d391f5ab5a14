"""Issue 13 in a real browser: the Other outcomes page on the multi-class and continuous demos (a link
opens them, the score choice reruns, the Overview of such a log points to this page). Screenshots 72-74."""

from browser_helpers import dismiss_page_not_found, no_traceback, screenshot, wait_ready

# every table's (scrollWidth, clientWidth, scrollHeight, clientHeight) of its grid scroller
_TABLE_SIZES = """() => [...document.querySelectorAll("[data-testid='stDataFrame'] .dvn-scroller")]
    .map(s => [s.scrollWidth, s.clientWidth, s.scrollHeight, s.clientHeight])"""


def _no_table_scrolls(page):
    """Every table shows all its rows and columns at the page's width: no scrolling inside a table."""
    sizes = page.evaluate(_TABLE_SIZES)
    assert sizes
    for sw, cw, sh, ch in sizes:
        assert sw <= cw + 1 and sh <= ch + 1, sizes


def test_multiclass_demo_scores_and_the_rule_switch(page):
    page.goto(page.base + "/outcomes?demo=multiclass-like")
    wait_ready(page, "Other outcomes")
    dismiss_page_not_found(page)
    no_traceback(page)
    page.get_by_text("3 labels: success, partial, failure").first.wait_for()
    page.get_by_text("One-vs-rest reliability (complete runs)").first.wait_for()
    page.get_by_role("heading", name="Calibration error per label (one-vs-rest)").wait_for()
    page.get_by_text("Not used: every censored run (74) has a q vector.").wait_for()
    page.get_by_text("applies to success/failure logs").wait_for()
    _no_table_scrolls(page)
    screenshot(page, "72_outcomes_multiclass")
    page.get_by_text("Brier", exact=True).first.click()
    wait_ready(page)
    no_traceback(page)
    assert page.get_by_role("radio", name="Brier").is_checked()


def test_continuous_demo_shows_pit_histograms(page):
    page.set_viewport_size({"width": 1400, "height": 1000})   # the width the page was audited at
    page.goto(page.base + "/outcomes?demo=continuous-like")
    wait_ready(page, "Other outcomes")
    dismiss_page_not_found(page)
    no_traceback(page)
    page.get_by_text("A number as the outcome: the CRPS").first.wait_for()
    page.get_by_text("PIT histograms (flat = calibrated)").first.wait_for()
    page.get_by_text("overconfident: p = ").first.wait_for()   # a PIT panel title (the table is a canvas)
    page.get_by_role("heading", name="PIT test per predictor").wait_for()
    _no_table_scrolls(page)   # at 1400 px every column fits: nothing cut off on the right
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
