"""Is X better than Y, in the browser: the tau-bench demo log against the real tau2-bench log given as a server
path inside the data roots; the Overview says which succeeds more often, by how much, with its SE."""

import shutil

import pytest

from browser_helpers import ROOT, no_traceback, screenshot, wait_ready

TAU2 = ROOT / "tests" / "fixtures" / "tau2" / "tau2_airline_gpt-oss-120b_langchain_trimmed.json"


@pytest.fixture()
def rooted_page(browser, rooted_server):
    base, root, _ = rooted_server
    shutil.copy(TAU2, root / TAU2.name)
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    pg.base = base
    yield pg
    ctx.close()


def test_two_real_logs_from_a_server_path_say_who_succeeds_more(rooted_page):
    pg = rooted_page
    pg.goto(pg.base + "/?demo=tau-bench-airline")
    wait_ready(pg, "Leaderboard")
    pg.get_by_text("Compare groups of runs (model X vs model Y) or this log with a second log").click()
    wait_ready(pg)
    pg.get_by_text("this log with a second log", exact=True).click()
    wait_ready(pg)
    box = pg.get_by_label("…or a path on the server", exact=True).and_(pg.locator("input"))
    box.fill(TAU2.name)
    box.press("Enter")
    wait_ready(pg)
    pg.get_by_text("Success:", exact=False).first.wait_for(timeout=90_000)
    no_traceback(pg)
    body = pg.locator("[data-testid='stMain']").inner_text()
    assert "no clear difference in success: this log 43.1% against the candidate log" in body
    assert "Δ = +6.9 points (SE 19.6, unpaired, clustered by task" in body
    assert "different harnesses (tau-bench, tau2-bench)" in body
    pg.get_by_text("Success:", exact=False).first.scroll_into_view_if_needed()
    screenshot(pg, "versus_two_real_logs")
