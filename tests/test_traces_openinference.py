"""The OpenInference (Phoenix) reader: span tables in Parquet, CSV and JSON Lines, evaluations,
and the attribute helpers the OTLP reader shares (issue 36; docs/traces.md).

The spans are written with the attribute names of ``openinference-semantic-conventions`` (its
constants, never a spelled-out key) in the two layouts a Phoenix table comes in: the one
``get_spans_dataframe`` returns (messages nested as lists of ``{"message.role": …}`` objects, as
Phoenix's ``_flatten_semantic_conventions`` leaves them) and the flat OpenTelemetry one
(``attributes.llm.input_messages.0.message.role``). Every expectation is recounted from the raw
spans the test made, not from the reader.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import random
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openinference.semconv.trace import (
    MessageAttributes as MA, OpenInferenceSpanKindValues as K, SpanAttributes as SA, ToolCallAttributes as TA)

from tpsviz.core.errors import LogFormatError
from tpsviz.io.traces.openinference import (
    add_evaluations, openinference_kind, openinference_logprobs, openinference_messages, read_openinference,
    read_openinference_evaluations)
from tpsviz.io.traces.table import nested_cell

SECRET = "SECRET-MESSAGE-TEXT"
T0 = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.timezone.utc)


def _message(role, content, calls=()):
    m = {MA.MESSAGE_ROLE: role, MA.MESSAGE_CONTENT: content}
    if calls:
        m[MA.MESSAGE_TOOL_CALLS] = [{TA.TOOL_CALL_ID: cid, TA.TOOL_CALL_FUNCTION_NAME: fn,
                                     TA.TOOL_CALL_FUNCTION_ARGUMENTS_JSON: json.dumps({"q": cid})}
                                    for cid, fn in calls]
    return m


def make_spans(seed: int = 0, n_traces: int = 6) -> list[dict]:
    """Agent traces: an AGENT root, model calls (LLM) that may call a tool (TOOL span), the
    conversation growing call by call. Each span: ids, kind, times (whole milliseconds) and its
    attributes with messages as nested lists (Phoenix's layout)."""
    rng = random.Random(seed)
    spans = []
    for t in range(n_traces):
        trace_id = f"{rng.getrandbits(128):032x}"
        root = f"{rng.getrandbits(64):016x}"
        clock = T0 + dt.timedelta(minutes=t)
        model = rng.choice(["gpt-4o", "claude-sonnet-4"])
        spans.append({"trace_id": trace_id, "span_id": root, "parent_id": None, "name": "agent",
                      "kind": K.AGENT.value, "start": clock, "end": clock + dt.timedelta(seconds=30),
                      "attributes": {SA.OPENINFERENCE_SPAN_KIND: K.AGENT.value, SA.SESSION_ID: f"s{t % 3}",
                                     SA.INPUT_VALUE: f"task {t}"}})
        history = [_message("system", "You are an agent."), _message("user", f"{SECRET} task {t}")]
        for step in range(rng.randint(1, 4)):
            clock += dt.timedelta(milliseconds=rng.randint(200, 2000))
            span_id = f"{rng.getrandbits(64):016x}"
            call = rng.random() < 0.6
            out = _message("assistant", f"step {step} of {t}",
                           [(f"call_{t}_{step}", "lookup")] if call else ())
            attrs = {SA.OPENINFERENCE_SPAN_KIND: K.LLM.value, SA.LLM_MODEL_NAME: model,
                     SA.LLM_INPUT_MESSAGES: [dict(m) for m in history], SA.LLM_OUTPUT_MESSAGES: [out],
                     SA.LLM_TOKEN_COUNT_PROMPT: 100 + step, "tpsviz.confidence": round(rng.random(), 3)}
            spans.append({"trace_id": trace_id, "span_id": span_id, "parent_id": root, "name": "ChatCompletion",
                          "kind": K.LLM.value, "start": clock, "end": clock + dt.timedelta(milliseconds=700),
                          "attributes": attrs})
            history.append(out)
            if call:
                clock += dt.timedelta(milliseconds=800)
                spans.append({"trace_id": trace_id, "span_id": f"{rng.getrandbits(64):016x}", "parent_id": span_id,
                              "name": "lookup", "kind": K.TOOL.value, "start": clock,
                              "end": clock + dt.timedelta(milliseconds=50),
                              "attributes": {SA.OPENINFERENCE_SPAN_KIND: K.TOOL.value, SA.TOOL_NAME: "lookup",
                                             SA.OUTPUT_VALUE: "found"}})
                history.append({MA.MESSAGE_ROLE: "tool", MA.MESSAGE_CONTENT: "found",
                                MA.MESSAGE_TOOL_CALL_ID: f"call_{t}_{step}"})
    return spans


def flat_attributes(attrs: dict) -> dict:
    """The OpenTelemetry flattening of nested attributes (what an OTLP exporter sends)."""
    out = {}
    for key, value in attrs.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for i, item in enumerate(value):
                out.update(flat_attributes({f"{key}.{i}.{k}": v for k, v in item.items()}))
        else:
            out[key] = value
    return out


def phoenix_frame(spans: list[dict], flat: bool = False) -> pd.DataFrame:
    """The spans as ``get_spans_dataframe`` returns them (``flat``: attributes flattened)."""
    rows = []
    for s in spans:
        attrs = flat_attributes(s["attributes"]) if flat else s["attributes"]
        rows.append({"name": s["name"], "span_kind": s["kind"], "parent_id": s["parent_id"],
                     "start_time": s["start"], "end_time": s["end"], "status_code": "OK", "status_message": "",
                     "context.span_id": s["span_id"], "context.trace_id": s["trace_id"],
                     **{f"attributes.{k}": v for k, v in attrs.items()}})
    df = pd.DataFrame(rows)
    df["start_time"] = pd.to_datetime(df["start_time"], utc=True)
    df["end_time"] = pd.to_datetime(df["end_time"], utc=True)
    return df


def written(df: pd.DataFrame, fmt: str) -> tuple[bytes, str]:
    if fmt == "parquet":
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        return buf.getvalue(), "spans.parquet"
    if fmt == "csv":
        return df.to_csv(index=False).encode(), "spans.csv"
    if fmt == "jsonl-epoch":  # pandas' default: times as epoch milliseconds
        with warnings.catch_warnings():  # (pandas 3 warns that this default is going away)
            warnings.simplefilter("ignore")
            return df.to_json(orient="records", lines=True, date_format="epoch").encode(), "spans.jsonl"
    return df.to_json(orient="records", lines=True, date_format="iso").encode(), "spans.jsonl"


def _expected_messages(messages: list[dict]) -> list[tuple]:
    return [(m[MA.MESSAGE_ROLE], m[MA.MESSAGE_CONTENT],
             tuple(c[TA.TOOL_CALL_FUNCTION_NAME] for c in m.get(MA.MESSAGE_TOOL_CALLS, ())))
            for m in messages]


def _read_messages(messages: tuple) -> list[tuple]:
    return [(m["role"], m["content"], tuple(c["name"] for c in m.get("tool_calls", ()))) for m in messages]


@pytest.mark.parametrize("flat", [False, True])
@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl", "jsonl-epoch"])
def test_span_table_reads_every_span_with_its_kind_messages_and_times(fmt, flat):
    spans = make_spans(seed=3)
    raw, name = written(phoenix_frame(spans, flat=flat), fmt)
    got = read_openinference(raw, name)
    assert got.source == "openinference"
    assert len(got.spans) == len(spans)
    assert sum(s.kind == "model" for s in got.spans) == sum(s["kind"] == "LLM" for s in spans)
    assert sum(s.kind == "tool" for s in got.spans) == sum(s["kind"] == "TOOL" for s in spans)
    by_id = {s.span_id: s for s in got.spans}
    for s in spans:
        span = by_id[s["span_id"]]
        assert (span.trace_id, span.parent_id, span.name) == (s["trace_id"], s["parent_id"], s["name"])
        assert span.start == pytest.approx(s["start"].timestamp(), abs=1e-6)
        assert span.end == pytest.approx(s["end"].timestamp(), abs=1e-6)
        a = s["attributes"]
        assert _read_messages(span.input_messages) == _expected_messages(a.get(SA.LLM_INPUT_MESSAGES, []))
        assert _read_messages(span.output_messages) == _expected_messages(a.get(SA.LLM_OUTPUT_MESSAGES, []))
        if s["kind"] == "LLM":
            assert span.attributes[SA.LLM_MODEL_NAME] == a[SA.LLM_MODEL_NAME]
            assert span.attributes["tpsviz.confidence"] == pytest.approx(a["tpsviz.confidence"])
            assert span.attributes[SA.LLM_TOKEN_COUNT_PROMPT] == a[SA.LLM_TOKEN_COUNT_PROMPT]
            tool_results = [m for m in span.input_messages if m["role"] == "tool"]
            assert [m["tool_call_id"] for m in tool_results] == [
                m[MA.MESSAGE_TOOL_CALL_ID] for m in a[SA.LLM_INPUT_MESSAGES] if m[MA.MESSAGE_ROLE] == "tool"]
    assert got.notes == []


def test_the_helpers_read_otlp_style_attributes_as_the_table_reader_does():
    spans = make_spans(seed=5)
    for s in spans:
        flat = flat_attributes(s["attributes"])
        assert openinference_kind(flat) == {"LLM": "model", "TOOL": "tool"}.get(s["kind"], "other")
        inputs, outputs = openinference_messages(flat)
        assert _read_messages(inputs) == _expected_messages(s["attributes"].get(SA.LLM_INPUT_MESSAGES, []))
        assert _read_messages(outputs) == _expected_messages(s["attributes"].get(SA.LLM_OUTPUT_MESSAGES, []))
    assert openinference_kind({}, "llm") == "model"
    assert [nested_cell(c)[0] for c in ("007", "12", "-3", "0.5", "1e-3", "true", "[1, 2]", "[{'a': 1}]")] == [
        "007", 12, -3, 0.5, 0.001, True, "[1, 2]", [{"a": 1}]]
    assert openinference_messages({}) == ((), ())


def test_message_contents_parts_and_logprobs_of_the_raw_response():
    tokens = [{"token": "Yes", "logprob": -0.1, "top_logprobs": [{"token": "Yes", "logprob": -0.1}]},
              {"token": ".", "logprob": -0.01, "top_logprobs": []}]
    response = {"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes."},
                                        "logprobs": {"content": tokens}}]}
    attrs = {SA.OPENINFERENCE_SPAN_KIND: "LLM",
             f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_ROLE}": "user",
             f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_CONTENTS}.0.message_content.type": "text",
             f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_CONTENTS}.0.message_content.text": "first",
             f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_CONTENTS}.1.message_content.type": "image",
             f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_CONTENTS}.2.message_content.text": "second",
             f"{SA.LLM_OUTPUT_MESSAGES}.0.{MA.MESSAGE_ROLE}": "assistant",
             f"{SA.LLM_OUTPUT_MESSAGES}.0.{MA.MESSAGE_CONTENT}": "Yes.",
             SA.OUTPUT_VALUE: json.dumps(response)}
    inputs, outputs = openinference_messages(attrs)
    assert inputs == ({"role": "user", "content": "first\n\nsecond"},)
    assert openinference_logprobs(attrs) == tokens
    row = {"context.trace_id": "t", "context.span_id": "s", "parent_id": None, "name": "llm", "span_kind": "LLM",
           "start_time": "2026-11-02T09:00:00Z", **{f"attributes.{k}": v for k, v in attrs.items()}}
    got = read_openinference(json.dumps(row).encode(), "one.jsonl")
    assert list(got.spans[0].logprobs) == tokens
    assert openinference_logprobs({SA.OUTPUT_VALUE: "plain text"}) is None


def test_evaluations_saved_by_phoenix_and_as_tables_attach_to_their_traces():
    spans = make_spans(seed=7)
    raw, name = written(phoenix_frame(spans), "parquet")
    traces = read_openinference(raw, name)
    llm = [s for s in spans if s["kind"] == "LLM"]
    evals = pd.DataFrame({"context.span_id": [s["span_id"] for s in llm] + ["feedfacefeedface"],
                          "label": ["correct" if i % 2 else "incorrect" for i in range(len(llm) + 1)],
                          "score": [float(i % 2) for i in range(len(llm) + 1)],
                          "explanation": [SECRET] * (len(llm) + 1)}).set_index("context.span_id")
    table = pa.Table.from_pandas(evals)  # as SpanEvaluations.save writes it
    table = table.replace_schema_metadata({**table.schema.metadata, b"arize": json.dumps(
        {"eval_id": "00000000-0000-0000-0000-000000000001", "eval_name": "correctness",
         "eval_type": "SpanEvaluations"}).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    ev = read_openinference_evaluations(buf.getvalue(), "evaluations-1.parquet")
    assert [s.name for s in ev.scores] == ["correctness"] * (len(llm) + 1)
    assert [s.value for s in ev.scores] == list(evals["score"])
    merged = add_evaluations(traces, ev)
    trace_of = {s["span_id"]: s["trace_id"] for s in spans}
    assert [(s.trace_id, s.span_id) for s in merged.scores] == [(trace_of[s["span_id"]], s["span_id"]) for s in llm]
    assert merged.notes == ["1 evaluation(s) of spans or traces not in the span table were left out"]
    # a CSV with labels only, named by the file; and the span annotations table
    csv = evals.drop(columns="score").to_csv().encode()
    ev = read_openinference_evaluations(csv, "exports/helpfulness.csv")
    assert {s.name for s in ev.scores} == {"helpfulness"}
    assert [s.value for s in ev.scores] == list(evals["label"])
    ann = pd.DataFrame({"span_id": [s["span_id"] for s in llm], "annotation_name": "success",
                        "result.label": None, "result.score": [1.0] * len(llm)})
    ev = read_openinference_evaluations(ann.to_json(orient="records", lines=True).encode(), "ann.jsonl")
    assert [(s.name, s.value) for s in ev.scores] == [("success", 1.0)] * len(llm)
    trace_evals = pd.DataFrame({"context.trace_id": sorted({s["trace_id"] for s in spans}), "score": 1.0})
    ev = read_openinference_evaluations(trace_evals.to_csv(index=False).encode(), "goal.csv")
    merged = add_evaluations(traces, ev)
    assert len(merged.scores) == len(trace_evals) and all(s.span_id is None for s in merged.scores)


def test_odd_rows_are_skipped_and_counted():
    spans = make_spans(seed=1, n_traces=2)
    df = phoenix_frame(spans)
    df.loc[0, "context.span_id"] = None
    df.loc[1, "start_time"] = pd.NaT
    df = pd.concat([df, df.iloc[[2]]], ignore_index=True)  # a repeated span
    raw, name = written(df, "parquet")
    got = read_openinference(raw, name)
    assert len(got.spans) == len(spans) - 2
    assert got.notes == ["1 row(s) without context.trace_id or context.span_id were skipped",
                         "1 span(s) without a readable start_time were skipped",
                         "1 row(s) repeating a span id already read were skipped"]


def test_a_csv_cell_that_cannot_be_read_back_is_counted():
    spans = make_spans(seed=2, n_traces=1)
    df = phoenix_frame(spans)
    df[f"attributes.{SA.LLM_INPUT_MESSAGES}"] = df[f"attributes.{SA.LLM_INPUT_MESSAGES}"].map(
        lambda v: str(np.array(v, dtype=object)) if isinstance(v, list) else v)  # numpy's form: no commas
    got = read_openinference(df.to_csv(index=False).encode(), "spans.csv")
    llm = sum(s["kind"] == "LLM" for s in spans)
    assert got.notes == [f"{llm} CSV cell(s) of nested values could not be read (save the table as Parquet or "
                         "JSON Lines to keep them)"]


@pytest.mark.parametrize("raw, name, words", [
    (b"", "x.csv", "the file is empty"),
    (b"a,b\n1,2\n", "x.csv", "no column context.trace_id, context.span_id, start_time"),
    (b"PAR1 not really", "x.parquet", "cannot be read"),
    (b'{"context.trace_id": "t"}\n{"context.span_id": "' + SECRET.encode() + b'\n', "x.jsonl", "line 2: not valid JSON"),
    (b'[1, 2]', "x.json", "record 1: each record must be a JSON object"),
])
def test_malformed_tables_give_clear_errors_without_their_content(raw, name, words):
    with pytest.raises(LogFormatError) as err:
        read_openinference(raw, name)
    assert words in str(err.value) and SECRET not in str(err.value)


def test_caps_on_spans_nodes_and_a_table_of_unreadable_rows():
    raw, name = written(phoenix_frame(make_spans(seed=4, n_traces=2)), "parquet")
    with pytest.raises(LogFormatError, match="more than the 3 spans"):
        read_openinference(raw, name, max_spans=3)
    raw, name = written(phoenix_frame(make_spans(seed=4, n_traces=2)), "jsonl")
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_JSON_NODES"):
        read_openinference(raw, name, max_nodes=10)
    with pytest.raises(LogFormatError, match="decodes to more than"):
        read_openinference(written(phoenix_frame(make_spans(seed=4, n_traces=2)), "parquet")[0], "x.parquet",
                           max_bytes=1000)
    bad = b"context.trace_id,context.span_id,start_time\nt,s,not a time\n"
    with pytest.raises(LogFormatError, match="no span could be read: 1 span"):
        read_openinference(bad, "x.csv")
    with pytest.raises(LogFormatError, match="document evaluations"):
        read_openinference_evaluations(b"context.span_id,document_position,score\ns,0,1\n", "docs.csv")
