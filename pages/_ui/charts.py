"""Showing a plotly figure on a page: one look for every chart (no Streamlit theme, so the app
matches the exported files) and each drawn figure registered for the Export page.

Every page and section that draws a chart uses :func:`plot`; it knows only the session's figure
registry (``state.register_figure``), so any module of ``pages/_ui`` may draw without importing
the page-level helpers of ``common.py``.
"""

from __future__ import annotations

import streamlit as st

from . import state as S

#: plotly's mode bar: no logo, PNG downloads at twice the size, no lasso or box selection
PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2},
               "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def plot(fig, key: str, caption: str | None = None, name: str | None = None, height: int | None = None) -> None:
    """Show a figure (theme off so the app matches exports) and register it for Export.

    Parameters
    ----------
    fig : plotly Figure
    key : str
        The element's key (unique on the page).
    caption : str, optional
        Shown under the figure and kept with it for the report.
    name : str, optional
        The figure's name on the Export page (default: ``key``).
    height : int, optional
        Height in pixels (default: the figure's own).
    """
    if height:
        fig.update_layout(height=height)
    st.plotly_chart(fig, theme=None, config=PLOT_CONFIG, key=key)
    if caption:
        st.caption(caption)
    S.register_figure(name or key, fig, caption or "")
