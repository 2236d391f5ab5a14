"""Issue 36 in the dashboard: a trace file opens from an upload or a server path, with its outcome
named in the reading options or given as an outcomes table (uploaded, or a path under the data
roots), and scores as the CLI scores it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import tpsviz
from apptest_helpers import fresh, upload
from tests.wording_checks import assert_says
from tpsviz.io.harness.runs import ReadOptions


@pytest.fixture(scope="module")
def otlp(tmp_path_factory):
    import sys
    from pathlib import Path

    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the OTLP recorder of the reader's tests
    from test_traces_otlp import _record

    spans, truth = _record(n_runs=60, seed=11)
    folder = tmp_path_factory.mktemp("traces")
    path = folder / "traces.json"
    path.write_text(MessageToJson(encode_spans(spans)))
    table = pd.DataFrame({"trajectory_id": [r["id"] for r in truth], "outcome": [r["outcome"] for r in truth],
                          "censored": [r["censored"] for r in truth]})
    table.to_csv(folder / "outcomes.csv", index=False)
    expected = tpsviz.load(path, outcomes=folder / "outcomes.csv",
                           options=ReadOptions(conf=(("verbal", "agent.confidence"),)))
    return folder, path, truth, expected


def _board(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "predictor" in d.value.columns and "TPS" in d.value.columns)


def _runs(expected) -> int:
    return len(expected.trajectories)


def test_an_uploaded_trace_file_with_an_uploaded_outcomes_table(otlp):
    folder, path, truth, expected = otlp
    at = fresh({"boot": "0"})
    at.radio(key="src").set_value("Upload").run()
    at.file_uploader(key="upload_outcomes").set_value(("outcomes.csv", (folder / "outcomes.csv").read_bytes(),
                                                       "text/csv"))
    at.file_uploader(key="upload").set_value([("traces.json", path.read_bytes(), "application/json")]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]  # scored on its references
    at.text_input(key="conf").set_value("verbal=agent.confidence").run()  # the confidence of its model calls
    assert not at.exception and not at.error, [e.value for e in at.error]
    board = _board(at)
    assert "verbal" in list(board["predictor"])
    assert board.set_index("predictor").at["verbal", "n runs"] == _runs(expected)


def test_a_trace_file_without_an_outcome_says_which_setting_gives_one(otlp):
    _, path, _, _ = otlp
    at = fresh({"boot": "0"})
    upload(at, [("traces.json", path.read_bytes(), "application/json")])
    err = "\n".join([e.value for e in at.error] + [c.value for c in at.code] + [m.value for m in at.markdown])
    assert "names no outcome by itself" in err
    # the two settings that give one, named by the reading options' real widgets
    for widget in (at.text_input(key="outc").label, at.file_uploader(key="upload_outcomes").label):
        assert "Reading options ›" in assert_says(err, f'"{widget}"')
    assert "--outcomes" not in err


def test_a_server_path_with_its_outcome_attribute_or_an_outcomes_path(otlp, monkeypatch):
    folder, path, truth, expected = otlp
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(folder))
    named = fresh({"src": "Server path", "path": "traces.json", "boot": "0", "conf": "verbal=agent.confidence",
                   "outc": "app.success", "censor": "app.stop=max_turns"})
    assert not named.error, [e.value for e in named.error]
    tabled = fresh({"src": "Server path", "path": "traces.json", "boot": "0", "conf": "verbal=agent.confidence",
                    "opath": "outcomes.csv"})
    assert not tabled.error, [e.value for e in tabled.error]
    a, b = _board(named).set_index("predictor"), _board(tabled).set_index("predictor")
    assert a.at["verbal", "n runs"] == b.at["verbal", "n runs"] == _runs(expected)
    assert a.at["verbal", "TPS"] == b.at["verbal", "TPS"]
    outside = fresh({"src": "Server path", "path": "traces.json", "boot": "0", "opath": "/etc/passwd"})
    err = "\n".join(e.value for e in outside.error)
    assert "outcomes path" in err and "passwd" not in json.dumps([e.value for e in outside.error])
