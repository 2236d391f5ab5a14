"""Exports of trajectory ids and metadata that are formulas, HTML or Markdown (issue 38, item 4).

- CSV is opened by spreadsheets: a text cell starting with ``=``, ``+``, ``-``, ``@`` (a tab, a
  carriage return, their fullwidth forms) is written with a leading ``'``; numbers stay numbers.
- Parquet is data, not a spreadsheet: every value is kept exactly as the log gives it (a reader
  that wants the ids gets the ids; docs/deployment.md, "Exports").
- The HTML report escapes every text: no tag, handler or link comes from the log, and Markdown is
  shown as typed.

The per-trajectory table is built as the Export page builds it (the scores with the runs' outcome
and metadata, and the settings columns); the CSV cells are read back with :mod:`csv`, not pandas.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

import tpsviz
from tpsviz.cli.main import main
from tpsviz.core.tps import compute_tps
from tpsviz.report.export import parquet_bytes, safe_csv
from tpsviz.report.html import Section, build_report, html_table
from untrusted import FORMULAS, HOSTILE, MARKUP, TRIGGERS, assert_shown_as_text, write_log

SETTINGS = {"alpha": 1.0, "beta": 1.0, "schedule": "uniform", "n_boot": 0}


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    return write_log(tmp_path_factory.mktemp("untrusted") / "hostile.csv")


def per_trajectory(data) -> pd.DataFrame:
    """Each run's TPS with its outcome and metadata, as the Export page writes it."""
    res = compute_tps(data)
    runs = data.trajectories[["trajectory_id", "outcome", *data.metadata_columns]]
    return res.per_trajectory.drop(columns=["traj"]).merge(runs, on="trajectory_id", how="left")


def cells(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def as_written(value: str) -> str:
    """What a safe CSV cell holds for a text value (an independent statement of the rule)."""
    return "'" + value if value[:1] in TRIGGERS else value


def test_the_log_keeps_every_hostile_value_as_given(log):
    data = tpsviz.load(log)
    assert set(HOSTILE) <= set(data.trajectories["trajectory_id"])
    assert set(data.trajectories["model"]) == set(HOSTILE) == set(data.trajectories["note"])


def test_csv_cells_of_ids_and_metadata_cannot_run_in_a_spreadsheet(log):
    frame = per_trajectory(tpsviz.load(log)).assign(**SETTINGS)
    rows = cells(safe_csv(frame))
    assert len(rows) == len(frame)
    for row, (_, src) in zip(rows, frame.iterrows()):
        for col in ("trajectory_id", "model", "note"):
            assert row[col] == as_written(src[col]), (col, src[col])
            assert not row[col].startswith(("=", "+", "-", "@"))
        assert float(row["tps"]) == pytest.approx(src["tps"])  # (a negative number stays a number)
    shown = {r["trajectory_id"] for r in rows}
    assert {"'" + v for v in FORMULAS} <= shown and set(MARKUP) <= shown  # HTML/Markdown: text, unchanged


def test_the_command_lines_csv_is_neutralised_the_same_way(log, tmp_path, capsys):
    out = tmp_path / "per.csv"
    assert main(["score", str(log), "--n-boot", "0", "--per-trajectory", str(out)]) == 0
    capsys.readouterr()
    ids = {r["trajectory_id"] for r in cells(out.read_text(encoding="utf-8"))}
    assert ids == {as_written(v) for v in tpsviz.load(log).trajectories["trajectory_id"]}


def test_parquet_keeps_every_value_exactly(log):
    frame = per_trajectory(tpsviz.load(log))
    back = pd.read_parquet(io.BytesIO(parquet_bytes(frame, SETTINGS, chunk_rows=7)))
    for col in ("trajectory_id", "model", "note"):
        assert back[col].tolist() == frame[col].tolist(), col
    assert set(HOSTILE) <= set(back["trajectory_id"])
    assert back["tps"].tolist() == frame["tps"].tolist()


def test_the_html_report_shows_them_as_text(log):
    """The offline report of tpsviz.evaluate, and one with the hostile values in a table, a figure's
    categories and hover text, a note and a setting: parsed, it holds no tag, handler or link of the
    log's, and every value reads back as typed."""
    data = tpsviz.load(log)
    assert_shown_as_text(tpsviz.evaluate(data, n_boot=0).to_html(), HOSTILE)
    table = per_trajectory(data)[["trajectory_id", "model", "note", "tps"]]
    fig = go.Figure(go.Bar(x=HOSTILE, y=list(range(len(HOSTILE))), hovertext=HOSTILE, name=MARKUP[0]))
    doc = build_report(f"report — {MARKUP[1]}", {"filter": f"model == {MARKUP[0]}"},
                       [Section(f"by {MARKUP[2]}", MARKUP[3], fig, table)], notes=[f"Loader note: {MARKUP[4]}"])
    audit = assert_shown_as_text(doc, HOSTILE)
    for v in HOSTILE:
        assert v in audit["text"], v  # shown, as text (entities decoded by the parser)
    assert "**b**" in audit["text"] and "&lt;script&gt;alert(1)&lt;/script&gt;" in html_table(table)
