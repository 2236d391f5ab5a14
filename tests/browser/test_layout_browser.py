"""Layout that holds at 1280×800 and at 800 px wide (issue 10): no metric tile, heading, widget label,
caption or paragraph is cut off (scrollWidth > clientWidth on a clipping element), and the verdict is
the first thing the Overview shows. Plotly axis titles and dataframe headers are drawn on SVG/canvas
and are not measured here."""

import pytest

from browser_helpers import no_traceback, screenshot, wait_ready

PAGES = ["", "reliability",  # "" = the Overview, the default page
         "steps", "censoring", "lab", "recalibration", "export"]

CUT = """() => {
 const out = [];
 const sel = ['[data-testid="stMetricValue"]', '[data-testid="stMetricLabel"]',
              '[data-testid="stMarkdownContainer"] p', '[data-testid="stCaptionContainer"]',
              'h1', 'h2', 'h3', '[data-testid="stWidgetLabel"]', 'button p'];
 for (const s of sel) for (const el of document.querySelectorAll(s)) {
   for (const t of [el, ...el.querySelectorAll('*')]) {
     if (t.clientWidth > 0 && t.scrollWidth > t.clientWidth + 1 &&
         getComputedStyle(t).overflow !== 'visible') {
       out.push(s + ' :: ' + (el.innerText || '').slice(0, 60) + ' :: ' + t.scrollWidth + ' > ' + t.clientWidth);
       break;
     }
   }
 }
 return out;
}"""


@pytest.mark.parametrize("width, height", [(1280, 800), (800, 900)])
def test_nothing_is_cut_off(browser, server, width, height):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        for name in PAGES:
            pg.goto(f"{server}/{name}")
            wait_ready(pg)
            no_traceback(pg)  # (a deep link may show Streamlit's "Page not found" modal: streamlit#9992)
            cut = pg.evaluate(CUT)
            assert not cut, (width, name, cut)
        pg.goto(server)
        wait_ready(pg, "Can I trust it?")
        assert pg.get_by_text("Page not found").count() == 0
        screenshot(pg, f"10_overview_{width}px")
    finally:
        ctx.close()


def test_verdict_comes_first_and_follows_a_slider(page):
    page.goto(page.base)
    wait_ready(page, "Can I trust it?")
    heads = page.locator("h3").all_inner_texts()
    assert heads[0].startswith("Can I trust it?"), heads
    first = page.get_by_text("says 94% on average").first
    assert first.is_visible()
    # a typed β moves the slider and the numbers; the verdict stays and keeps its sentence
    entry = page.locator("[data-testid='stSidebar'] input[aria-label='β value']")
    entry.fill("1.00")
    entry.press("Enter")
    wait_ready(page)
    page.get_by_text("α=0, β=1").first.wait_for()
    assert page.get_by_text("says 94% on average").first.is_visible()
    no_traceback(page)


def test_a_phone_sees_the_headline_first_and_the_leaderboards_first_four_columns(browser, server):
    """At 390 px (issue 46): the verdict's heading comes before the leaderboard, the leaderboard's first
    four columns are predictor, verdict, skill, TPS, and the first three are in view without scrolling
    sideways (TPS follows them; the predictor column stays pinned while scrolling)."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        pg.goto(server)
        wait_ready(pg, "Can I trust it?")
        no_traceback(pg)
        heads = pg.locator("h3").all_inner_texts()
        assert heads.index("Can I trust it?") < heads.index("Leaderboard"), heads
        top = pg.evaluate("""() => [...document.querySelectorAll('h3')].map(h => [h.innerText,
                             h.getBoundingClientRect().top])""")
        where = {t: y for t, y in top}
        assert where["Can I trust it?"] < where["Leaderboard"]
        board = pg.locator("[data-testid='stDataFrame']").first
        board.scroll_into_view_if_needed()
        pg.wait_for_timeout(500)
        # the grid draws on a canvas and keeps an accessible table of the columns in view
        cols = board.evaluate("""d => [...d.querySelectorAll('th, [role=columnheader]')].map(t => {
                                  const r = t.getBoundingClientRect();
                                  return [t.innerText.trim(), r.left, r.right]; })""")
        names = [c[0] for c in cols]
        assert len(names) >= 4, names
        for got, want in zip(names[:4], ("predictor", "verdict", "skill", "TPS")):
            assert got.startswith(want), names
        right = board.evaluate("d => d.getBoundingClientRect().right")
        # the skill column starts inside the board's box on screen (its values are readable), TPS right after it
        assert cols[2][1] + 40 < right <= 390, (cols[:4], right)
        assert cols[3][1] < right + 10, (cols[:4], right)
        assert pg.get_by_text("trustworthy").first.is_visible()
        screenshot(pg, "46_overview_390px")
    finally:
        ctx.close()
