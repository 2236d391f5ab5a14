"""A standalone HTML report of the current settings, tables and figures that opens offline.

The first figure embeds the full plotly.js bundle (``include_plotlyjs=True``; the "cdn" variant
needs the network), the others reuse it. Every piece of text is HTML-escaped: log content is
untrusted (docs/formats.md).
"""

from __future__ import annotations

import datetime as _dt
import html
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # figures are only passed through: the report and its tables load without plotly
    import plotly.graph_objects as go

__all__ = ["Section", "build_report", "html_table"]

_CSS = """
body{font-family:'Source Sans Pro',Arial,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.7em;margin-bottom:.2em} h2{font-size:1.3em;margin-top:1.8em;border-bottom:1px solid #ddd}
.settings{background:#f6f8fa;border:1px solid #ddd;border-radius:6px;padding:.6em 1em}
.settings td{padding:.15em 1em .15em 0} table.data{border-collapse:collapse;font-size:.9em;margin:.5em 0}
table.data th,table.data td{border:1px solid #ddd;padding:.25em .6em;text-align:right}
table.data th.t,table.data td.t{text-align:left} .caption{color:#555;font-size:.9em}
.verdict-ok{color:#007a4d;font-weight:600} .verdict-bad{color:#b33;font-weight:600}
"""


class Section(dict):
    """One report section: ``title``, optional ``text``, ``figure`` (go.Figure), ``table`` (DataFrame), ``caption``."""

    def __init__(self, title: str, text: str = "", figure: go.Figure | None = None,
                 table: pd.DataFrame | None = None, caption: str = ""):
        super().__init__(title=title, text=text, figure=figure, table=table, caption=caption)


def _esc(s) -> str:
    return html.escape(str(s), quote=True)


def html_table(df: pd.DataFrame) -> str:
    """An HTML table: numbers to 4 significant digits and right-aligned, text left-aligned (a
    verdict's sentence read badly flush right), a missing value as —; every cell escaped.

    Parameters
    ----------
    df : DataFrame
        The columns and rows shown (the index is not).

    Returns
    -------
    str
        A ``<table class='data'>`` element.
    """
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in df.columns]

    def cell(v, num: bool) -> str:
        try:
            missing = bool(pd.isna(v))
        except (TypeError, ValueError):  # (a list or array in a cell)
            missing = False
        if missing:
            return "<td>—</td>"
        text = f"{v:.4g}" if num and isinstance(v, float) else str(v)
        return f"<td>{_esc(text)}</td>" if num else f"<td class='t'>{_esc(text)}</td>"

    head = "".join(f"<th>{_esc(c)}</th>" if num else f"<th class='t'>{_esc(c)}</th>"
                   for c, num in zip(df.columns, numeric))
    body = "".join("<tr>" + "".join(cell(v, num) for v, num in zip(row, numeric)) + "</tr>"
                   for row in df.itertuples(index=False, name=None))
    return f"<table class='data'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def build_report(title: str, settings: dict, sections: list, notes: list | None = None) -> str:
    """Assemble the report.

    Parameters
    ----------
    title : str
    settings : dict
        Label → value of every setting that changes the verdict (shown at the top).
    sections : list of Section (or dicts with the same keys)
    notes : list of str, optional
        Extra lines (e.g. data source, filters).

    Returns
    -------
    str
        A complete HTML document with plotly.js embedded once.
    """
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>",
             f"<style>{_CSS}</style></head><body>", f"<h1>{_esc(title)}</h1>",
             f"<p class='caption'>Generated {_esc(_dt.datetime.now().strftime('%Y-%m-%d %H:%M'))} by tpsviz. "
             "Scores are rewards: higher is better, 0 is perfect.</p>",
             "<div class='settings'><table>"]
    for k, v in settings.items():
        cls = ""
        if str(k).lower().startswith("verdict"):
            cls = " class='verdict-ok'" if "strictly proper" in str(v) else " class='verdict-bad'"
        parts.append(f"<tr><td><b>{_esc(k)}</b></td><td{cls}>{_esc(v)}</td></tr>")
    parts.append("</table></div>")
    for n in notes or []:
        parts.append(f"<p class='caption'>{_esc(n)}</p>")
    first = True
    for i, sec in enumerate(sections):
        parts.append(f"<h2>{_esc(sec.get('title', ''))}</h2>")
        if sec.get("text"):
            parts.append(f"<p>{_esc(sec['text'])}</p>")
        if sec.get("table") is not None and len(sec["table"]):
            parts.append(html_table(sec["table"]))
        fig = sec.get("figure")
        if fig is not None:
            parts.append(fig.to_html(full_html=False, include_plotlyjs=True if first else False,
                                     div_id=f"fig{i}", config={"displaylogo": False}))
            first = False
        if sec.get("caption"):
            parts.append(f"<p class='caption'>{_esc(sec['caption'])}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
