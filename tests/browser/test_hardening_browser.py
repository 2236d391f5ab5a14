"""Issue 8 (hardening) in a real browser: log text never makes the browser fetch anything, a
link cannot read a server file, CSV downloads are safe to open, one bad link leaves the server up."""

from __future__ import annotations

import http.server
import threading
import urllib.parse

import pytest

from browser_helpers import OUT, no_traceback, screenshot, wait_ready
from test_dashboard import PAGES, _upload

SECRET = "TOPSECRET-7f3a9"


@pytest.fixture
def beacon():
    """A local HTTP server that records every request (an image the page must not fetch)."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", hits
    srv.shutdown()


def test_5_log_text_never_fetches_a_url(page, beacon):
    url, hits = beacon
    img = f"![x]({url}/md.png)"
    tag = f"<img src={url}/tag.png>"
    header = f"trajectory_id,step,outcome,conf_a,conf_{img},{img} {tag}"
    rows = []
    for i in range(16):
        for s in (1, 2, 3):
            out = "" if i % 5 == 0 else str(i % 2)
            rows.append(f"{tag}{i},{s},{out},{0.3 + 0.1 * s},{0.5},{img}{i % 3}")
    payload = {"name": f"![f]({url}/name.png).csv", "mimeType": "text/csv",
               "buffer": (header + "\n" + "\n".join(rows) + "\n").encode()}
    page.goto(page.base)
    wait_ready(page, "Overview / Compare")
    _upload(page, payload)
    no_traceback(page)
    # open the metadata filters so their labels are drawn
    page.get_by_text("Filters on metadata").first.click()
    wait_ready(page)
    for title, slug in PAGES:
        page.get_by_role("link", name=title).first.click()
        wait_ready(page, title)
        no_traceback(page)
        if slug == "overview":
            screenshot(page, "40_hostile_log_overview")
    page.wait_for_timeout(1000)
    assert hits == [], f"the page fetched {hits}"


def test_5_csv_download_is_neutralised(page):
    raw = ("trajectory_id,step,outcome,conf_a\n=HYPERLINK(\"http://x\"),1,1,0.6\n@SUM(A1),1,0,0.3\n"
           "+1,1,1,0.5\n-2,1,0,0.4\n").encode()
    page.goto(page.base)
    wait_ready(page, "Overview / Compare")
    _upload(page, {"name": "inject.csv", "mimeType": "text/csv", "buffer": raw})
    page.get_by_role("link", name="Export").first.click()
    wait_ready(page, "Export")
    with page.expect_download() as dl:
        page.get_by_role("button", name="Per-trajectory scores (CSV)").click()
    target = OUT / "per_trajectory_neutralised.csv"
    dl.value.save_as(str(target))
    text = target.read_text(encoding="utf-8")
    lines = text.splitlines()[1:]
    assert all(not ln.startswith(("=", "+", "-", "@")) for ln in lines), text
    assert "'=HYPERLINK" in text and "'@SUM" in text and "'+1" in text and "'-2" in text
    # the Parquet holds the same rows and settings (text as given: a spreadsheet does not open it)
    with page.expect_download() as dl:
        page.get_by_role("button", name="Per-trajectory scores (Parquet)").click()
    import pandas as pd

    table, csv = pd.read_parquet(dl.value.path()), pd.read_csv(target)
    assert list(table.columns) == list(csv.columns) and len(table) == len(csv) == 4
    assert set(table["trajectory_id"]) == {'=HYPERLINK("http://x")', "@SUM(A1)", "+1", "-2"}
    assert (table["alpha"] == csv["alpha"]).all() and (table["seed"] == csv["seed"]).all()


@pytest.fixture
def rooted_page(browser, rooted_server):
    base, root, outer = rooted_server
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    pg.base, pg.root, pg.outer = base, root, outer
    yield pg
    ctx.close()


def test_1_links_cannot_read_server_files(rooted_page):
    pg = rooted_page
    for path in ["/proc/self/environ", "/etc/shadow", str(pg.outer / "secret.csv"), "../secret.csv",
                 "/dev/zero"]:
        pg.goto(pg.base + "/?src=Server+path&path=" + urllib.parse.quote(path)
                + "&rpath=" + urllib.parse.quote("/proc/self/environ"))
        wait_ready(pg)
        no_traceback(pg)
        pg.get_by_text("cannot open this path").first.wait_for()
        body = pg.locator("[data-testid='stApp']").inner_text()
        assert SECRET not in body and "PATH=" not in body and "HOME=" not in body
        assert "path=" not in pg.url and "rpath=" not in pg.url, pg.url
    screenshot(pg, "41_server_path_refused")
    # a path under the root opens, and stays in the URL for a shared link
    pg.goto(pg.base + "/?src=Server+path&path=tau2.csv")
    wait_ready(pg, "Overview / Compare")
    pg.get_by_text("450", exact=True).first.wait_for()
    assert "path=tau2.csv" in pg.url
    no_traceback(pg)
    screenshot(pg, "42_server_path_under_root")


def test_2_server_survives_a_fifo_link(rooted_page):
    import os

    pg = rooted_page
    fifo = pg.root / "pipe.csv"
    if not fifo.exists():
        os.mkfifo(fifo)
    pg.goto(pg.base + "/?src=Server+path&path=pipe.csv")
    wait_ready(pg)
    pg.get_by_text("cannot open this path").first.wait_for()
    no_traceback(pg)
    assert "path=" not in pg.url, pg.url  # refused: the link does not keep the pipe
    # the server still answers another user at once: the log under the root, its 450 runs
    other = pg.context.new_page()
    other.goto(pg.base + "/?src=Server+path&path=tau2.csv")
    wait_ready(other, "Overview / Compare")
    other.get_by_text("450", exact=True).first.wait_for()
    assert "path=tau2.csv" in other.url and other.get_by_text("450", exact=True).count() >= 1
    no_traceback(other)
    other.close()


@pytest.mark.parametrize("path", ["censoring", "monitoring"])
def test_a_shared_link_opens_its_page_on_a_fresh_server(browser, cold_server, path):
    """The first visit after a start may be a teammate's link to a page other than the Overview:
    it opens that page, with no "Page not found" box over it (`streamlit run app.py` shows one,
    because of the `pages/` folder; serve.py, docs/deployment.md "Deep links")."""
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(90_000)
        pg.goto(f"{cold_server}/{path}")
        wait_ready(pg, heading=path.capitalize())
        assert pg.get_by_text("Page not found").count() == 0
        assert pg.locator("[role='dialog']").count() == 0
        assert pg.url.split("?")[0].endswith(f"/{path}")
        no_traceback(pg)
    finally:
        ctx.close()
