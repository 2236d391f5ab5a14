"""Text from a log (ids, column names, file names, metadata values) made safe for the page.

Streamlit renders Markdown in ``st.markdown``, captions, alerts, widget labels and help
texts: an image link there makes the browser fetch a URL, ``$…$`` becomes LaTeX, HTML tags
are shown literally. :func:`md` escapes every character with a meaning in those contexts, so
log text always reads as the text it is (docs/deployment.md). Tables (``st.dataframe``),
``st.code`` and ``st.text`` show text as text and need no escaping.
"""

from __future__ import annotations

import re

from tpsviz.core.schema import clean_text

__all__ = ["md", "code"]

_MD_SPECIAL = "\\`*_{}[]()#+-.!|<>~$:&\"'="
# GFM turns bare URLs and e-mail addresses into links whatever is escaped around them
# ("autolink literals", adversarial pass 7): an invisible word joiner inside the scheme, after
# "www" and after "@" keeps them text
_WJ = "\u2060"
_AUTOLINK = re.compile(r"(?i)(?:https?|ftp|mailto|xmpp)(?=:)|www(?=\.)|@(?=[\w-]+(?:\.[\w-]+)+)")


def md(s, limit: int | None = None) -> str:
    """Escape untrusted text for a Markdown context (control characters removed, optionally
    cut to ``limit`` characters)."""
    text = clean_text(s, limit).replace("\n", " ").replace("\r", " ")
    text = _AUTOLINK.sub(lambda m: m.group(0)[0] + _WJ + m.group(0)[1:], text)
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


def code(s, limit: int | None = 80) -> str:
    """Untrusted text as an inline code span: shown literally (no Markdown, LaTeX or HTML inside a
    code span), backticks and control characters removed."""
    text = clean_text(s, limit).replace("\n", " ").replace("\r", " ").replace("`", "'")
    return f"`{text}`" if text.strip() else "` `"
