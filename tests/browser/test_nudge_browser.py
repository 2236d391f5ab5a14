"""An α nudge reruns the page and the α/β view below the sliders, not the sidebar (issue 48, point 4):
the leaderboard changes, the sidebar's other widgets are not drawn again and keep their state.
Screenshots of the Overview before and after go to test-output/screenshots/."""

import re

from browser_helpers import no_traceback, screenshot, wait_ready

#: the label of a sidebar widget outside the α/β view: sent to the browser again by a run of the whole app
_SIDEBAR_WIDGET = "Weight schedule w_t".encode()


def _frames(pg) -> list:
    """Every message the server sends to the page from now on (bytes of the websocket's frames)."""
    frames = []

    def on_socket(ws):
        ws.on("framereceived", lambda payload: frames.append(payload if isinstance(payload, bytes)
                                                            else payload.encode()))

    pg.on("websocket", on_socket)
    return frames


def _board(pg) -> str:
    """The leaderboard picture's source (it changes with its numbers)."""
    return pg.locator("[data-testid='stMain'] [data-testid='stImage'] img").first.get_attribute("src")


#: the page is complete: no run going on, nothing stale, the verdict box (drawn last) and ``want`` on it
_COMPLETE_JS = """(want) => !document.querySelector('[data-testid="stStatusWidget"]')
  && !document.querySelector('[data-stale="true"]') && !document.querySelector('[data-testid="stSkeleton"]')
  && document.body.innerText.includes('How the verdict is decided') && document.body.innerText.includes(want)"""


def _complete(pg, want: str = "") -> None:
    pg.wait_for_function(_COMPLETE_JS, arg=want, timeout=120_000, polling=100)
    pg.wait_for_timeout(300)
    pg.wait_for_function(_COMPLETE_JS, arg=want, timeout=120_000, polling=100)


def _nudge(pg, thumb, want: str) -> None:
    thumb.focus()
    thumb.press("ArrowRight")
    pg.get_by_text(want).first.wait_for()
    _complete(pg, want)


def test_an_alpha_nudge_redraws_the_page_and_not_the_sidebar(page):
    frames = _frames(page)
    page.goto(page.base)
    wait_ready(page, "Overview / Compare")
    _complete(page)
    no_traceback(page)
    assert any(_SIDEBAR_WIDGET in f for f in frames)  # (the first view sends the sidebar)
    screenshot(page, "nudge_0_overview_before")
    side = page.locator("[data-testid='stSidebar']")
    thumb = side.locator("input[type=range][aria-label='α']")
    chips = side.locator("[data-testid='stMultiSelect'] [data-baseweb='tag']").count()
    schedule = side.locator("[data-testid='stSelectbox']").filter(has_text="Weight schedule").inner_text()
    _nudge(page, thumb, "α=0.05, β=0")  # log → custom: the preset box changes, the whole app runs
    board = _board(page)
    frames.clear()
    _nudge(page, thumb, "α=0.1, β=0")
    assert _board(page) != board  # the leaderboard was drawn again, with the new α
    assert frames and not any(_SIDEBAR_WIDGET in f for f in frames)  # the sidebar's widgets were not sent again
    assert side.get_by_text("custom: α = 0.1, β = 0").first.is_visible()  # the α/β view follows
    assert float(thumb.input_value()) == 0.1
    assert side.locator("[data-testid='stMultiSelect'] [data-baseweb='tag']").count() == chips
    assert side.locator("[data-testid='stSelectbox']").filter(has_text="Weight schedule").inner_text() == schedule
    assert re.search(r"[?&]a=0\.1(&|$)", page.url), page.url  # mirrored in the URL
    no_traceback(page)
    screenshot(page, "nudge_1_overview_after")
    # a setting outside the α/β view runs the whole app, which sends the sidebar again
    frames.clear()
    box = side.locator("[data-testid='stSelectbox']").filter(has_text="Weight schedule")
    for _ in range(3):  # (a click while the box is being drawn may not open it)
        box.click(timeout=15_000)
        try:
            page.get_by_role("option", name="linear").first.click(timeout=10_000)
            break
        except Exception:
            page.keyboard.press("Escape")
    wait_ready(page)
    _complete(page)
    assert any(_SIDEBAR_WIDGET in f for f in frames)
    # the page's own widgets still run the whole app (the sidebar may depend on them)
    assert float(thumb.input_value()) == 0.1
    page.get_by_text("α=0.1, β=0").first.wait_for()
    no_traceback(page)
