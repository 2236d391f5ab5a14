"""The standalone HTML report: self-contained (opens offline) and escapes log text."""

import pandas as pd
import plotly.graph_objects as go

from tpsviz.report.html import Section, build_report


def test_report_is_self_contained_and_escaped():
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0]))
    sections = [Section("Leaderboard <script>", "text <b>bold</b>", fig,
                        pd.DataFrame({"predictor": ["<img src=x onerror=alert(1)>"], "tps": [-1.2345678]})),
                Section("Second", figure=go.Figure(go.Bar(x=[1], y=[2])), caption="cap")]
    html = build_report("Report <x>", {"Score family": "log", "Verdict of the schedule": "strictly proper — ok"},
                        sections, notes=["note <i>"])
    assert html.startswith("<!DOCTYPE html>")
    import re
    # no external script tag outside the embedded bundle: every <script> tag is inline
    tags = re.findall(r"<script[^>]*>", html)
    assert tags and all("src=" not in t for t in tags if t.startswith("<script type") or t == "<script>")
    assert html.count("plotly.js v") <= 2  # the bundle is embedded once
    assert "Plotly.newPlot" in html and html.count("Plotly.newPlot") == 2
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "Leaderboard &lt;script&gt;" in html and "note &lt;i&gt;" in html
    assert "verdict-ok" in html


def test_report_without_figures():
    html = build_report("t", {}, [Section("only text", "hello")])
    assert "hello" in html and "Plotly.newPlot" not in html


def test_missing_values_are_a_dash_never_none_or_nan():
    import numpy as np

    t = pd.DataFrame({"predictor": ["a", "b"], "tps": [-1.0, np.nan], "ci": ["[−1, 0]", None]})
    html = build_report("t", {}, [Section("s", table=t)])
    body = html.split("<table border=\"0\" class=\"dataframe data\">")[-1]
    assert "—" in body and "None" not in body and "NaN" not in body and ">nan<" not in body


def test_table_cells_text_left_numbers_right_missing_as_a_dash():
    import numpy as np

    df = pd.DataFrame({"predictor": ["a <b>", None], "why": ["a long sentence", "x"],
                       "tps": [-1.234567, np.nan], "runs": pd.array([3, pd.NA], dtype="Int64"), "ok": [True, False]})
    html = build_report("t", {}, [Section("s", table=df)])
    table = html[html.index("<table class='data'>"):]
    assert "<th class='t'>predictor</th>" in table and "<th class='t'>why</th>" in table and "<th>tps</th>" in table
    assert "<td class='t'>a &lt;b&gt;</td>" in table and "<td>-1.235</td>" in table and "<td>3</td>" in table
    assert table.count("<td>—</td>") == 3  # None, NaN, NA
    assert "<td class='t'>True</td>" in table  # a bool column reads as text
