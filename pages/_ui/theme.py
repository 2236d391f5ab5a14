"""The dashboard's own CSS: a phone's layout (issue 46, point 7).

Streamlit lays a page out the same way at every width; on a phone (390 px) the Overview's large
title, metric tiles and the gaps between its ~40 elements made it long. One style block, sent by
app.py before the page (``st.html`` with only a ``<style>`` goes to Streamlit's event container:
it takes no place on the page, and an α nudge, which reruns the page's fragment alone, does not send
it again). It changes sizes and spacing only below 640 px (Streamlit's own breakpoint for stacking
columns), never what is shown.
"""

from __future__ import annotations

import streamlit as st

__all__ = ["PHONE_CSS", "apply"]

#: below 640 px: a smaller title and metric values, less padding above the page, smaller gaps
PHONE_CSS = """<style>
@media (max-width: 640px) {
  [data-testid="stMainBlockContainer"] { padding-top: 3.5rem; padding-bottom: 3rem; }
  [data-testid="stMain"] h1 { font-size: 2rem; padding-top: 0.25rem; padding-bottom: 0.5rem; }
  [data-testid="stMain"] h2 { font-size: 1.5rem; }
  [data-testid="stMain"] h3 { font-size: 1.35rem; padding-top: 0.5rem; padding-bottom: 0.25rem; }
  [data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.65rem; }
  [data-testid="stMain"] [data-testid="stMetricValue"] { font-size: 1.6rem; }
  [data-testid="stMain"] [data-testid="stMetric"] { padding-bottom: 0; }
  [data-testid="stMain"] [data-testid="stHorizontalBlock"] { row-gap: 0.75rem; }
}
</style>"""


def apply() -> None:
    """Send the style block (once per run of the whole app)."""
    st.html(PHONE_CSS)
