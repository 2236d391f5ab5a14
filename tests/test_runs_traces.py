"""The run view's transcript (issue 46 point 1) on the production-trace readers not tried in the browser:
an OpenInference span table (Phoenix) and a Langfuse export, each with an outcomes table. One run's
messages are read (``read_run_transcript``), split at its steps as the replay splits them
(``transcript_steps``), and their texts are the ones the test wrote into the spans."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import tpsviz
from tpsviz.diagnostics import run_messages as RM
from tpsviz.io.harness.runs import ReadOptions
from test_traces_langfuse import api_v4_records, make_runs
from test_traces_openinference import make_spans, phoenix_frame


def _outcomes_table(ids, path) -> None:
    pd.DataFrame({"trajectory_id": ids, "outcome": [i % 2 for i in range(len(ids))],
                  "censored": False}).to_csv(path, index=False)


def _written_texts(obj) -> set:
    """Every string of at least 12 characters the test put anywhere in the raw spans (the truth)."""
    out = set()
    if isinstance(obj, dict):
        for v in obj.values():
            out |= _written_texts(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _written_texts(v)
    elif isinstance(obj, str) and len(obj) >= 12:
        out.add(obj)
    return out


def _check(path, outcomes, options, raw_objects, fmt: str) -> None:
    data = tpsviz.load(path, outcomes=outcomes, options=options)
    assert data.reading["format"] == fmt and RM.has_messages(data.reading)
    run = str(data.trajectories["trajectory_id"].iloc[0])
    tr = RM.read_run_transcript(path, run, options, outcomes=outcomes)
    assert tr is not None and tr.trajectory_id == run and tr.messages
    steps = RM.transcript_steps(tr)
    assert steps and {s.kind for s in steps} <= set(RM.KINDS)
    assert [s.step for s in steps] == sorted(s.step for s in steps)  # in the run's order
    truth = _written_texts(raw_objects)
    shown = [s.text for s in steps if len(s.text) >= 12]
    assert shown and any(any(t in text for t in truth) for text in shown)
    assert RM.read_run_transcript(path, "no-such-run", options, outcomes=outcomes) is None


def test_an_openinference_span_table_shows_a_runs_messages(tmp_path):
    spans = make_spans(seed=3, n_traces=8)
    path = tmp_path / "spans.parquet"
    phoenix_frame(spans).to_parquet(path, index=False)
    table = tmp_path / "outcomes.csv"
    _outcomes_table(sorted({s["trace_id"] for s in spans}), table)
    _check(path, table, ReadOptions(conf=(("verbal", "tpsviz.confidence"),)), spans, "openinference")


def test_a_langfuse_export_shows_a_runs_messages(tmp_path):
    runs = make_runs(seed=5, n_traces=8)
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in api_v4_records(runs)) + "\n", encoding="utf-8")
    table = tmp_path / "outcomes.csv"
    _outcomes_table([r["id"] for r in runs], table)
    _check(path, table, ReadOptions(conf=(("verbal", "metadata.confidence"),)), runs, "langfuse")


@pytest.mark.parametrize("name", ["openinference", "langfuse"])
def test_both_trace_formats_are_message_formats(name):
    assert RM.has_messages({"format": name})
