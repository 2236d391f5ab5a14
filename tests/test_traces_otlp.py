"""The OTLP JSON reader (tpsviz.io.traces.otlp; docs/traces.md) on files written by the real
``opentelemetry-sdk``: spans recorded with an in-memory exporter, encoded by
``opentelemetry-exporter-otlp-proto-common`` and written with protobuf's JSON mapping
(``MessageToJson``: ids in base64) or as the OTLP JSON rule writes them (ids in hex, JSON Lines of
batches). Counts are checked against a reading of the raw JSON written here, independently of the
reader; TPS against the same runs written in long form by hand."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import random

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.cli.main import main
from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import Limits
from tpsviz.io.harness import detect_format
from tpsviz.io.traces.otlp import MAX_ATTRIBUTE_CHARS, any_value, flatten, otlp_id, read_otlp

otel_trace = pytest.importorskip("opentelemetry.trace")
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from google.protobuf.json_format import MessageToDict, MessageToJson  # noqa: E402

T0 = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z in ns
OPTS = ["--outcome", "app.success", "--conf", "verbal=agent.confidence", "--censor-when", "app.stop=max_turns"]


def _record(n_runs: int = 150, seed: int = 7):
    """Agent runs recorded with the OpenTelemetry SDK; returns the finished spans and the truth:
    per run (trace id hex) its steps' confidences, outcome (1/0/None), censored, model, start (ns)."""
    rng = random.Random(seed)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    truth = []
    for i in range(n_runs):
        start = T0 + i * 60 * 10**9
        root = tracer.start_span("invoke_agent", start_time=start)
        ctx = otel_trace.set_span_in_context(root)
        model = "model-a" if i % 2 else "model-b"
        skill = 0.75 if model == "model-a" else 0.45
        success = rng.random() < skill
        fate = rng.random()
        outcome = (1 if success else 0) if fate < 0.8 else None
        censored = outcome is None and fate < 0.9
        if outcome is not None:
            root.set_attribute("app.success", bool(outcome))
        elif censored:
            root.set_attribute("app.stop", "max_turns")
        confs, t = [], start + 10**6
        history = [{"role": "user", "parts": [{"type": "text", "content": f"task {i}"}]}]
        for k in range(rng.randint(1, 5)):
            c = min(max(rng.gauss(0.7 if success else 0.4, 0.15), 0.01), 0.99)
            confs.append(c)
            span = tracer.start_span(f"chat {model}", context=ctx, start_time=t)
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.request.model", model)
            span.set_attribute("agent.confidence", c)
            out = [{"role": "assistant", "parts": [{"type": "tool_call", "id": f"c{k}", "name": "lookup",
                                                    "arguments": {"q": k}}]}]
            if k % 2 == 0:  # the current conventions: JSON attributes
                span.set_attribute("gen_ai.input.messages", json.dumps(history))
                span.set_attribute("gen_ai.output.messages", json.dumps(out))
            else:  # the older per-message events
                span.add_event("gen_ai.user.message", {"content": f"task {i}"})
                span.add_event("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls"})
            span.end(end_time=t + 10**6)
            tool = tracer.start_span("execute_tool lookup", context=ctx, start_time=t + 2 * 10**6)
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "lookup")
            tool.set_attribute("gen_ai.tool.call.id", f"c{k}")
            tool.end(end_time=t + 3 * 10**6)
            history = history + out + [{"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{k}",
                                                                  "response": "found"}]}]
            t += 10**7
        root.end(end_time=t)
        truth.append({"id": format(root.get_span_context().trace_id, "032x"), "confs": confs, "outcome": outcome,
                      "censored": censored, "model": model, "start": start})
    return exporter.get_finished_spans(), truth


@pytest.fixture(scope="module")
def recorded():
    return _record()


@pytest.fixture(scope="module")
def otlp_file(recorded, tmp_path_factory):
    spans, truth = recorded
    path = tmp_path_factory.mktemp("otlp") / "traces.json"
    path.write_text(MessageToJson(encode_spans(spans)))
    return path, truth


def _hex_batches(spans) -> list[dict]:
    """The OTLP JSON rule's spelling (ids in hex), one batch per 40 spans."""
    out = []
    for i in range(0, len(spans), 40):
        d = MessageToDict(encode_spans(spans[i:i + 40]))
        for rs in d["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    for k in ("traceId", "spanId", "parentSpanId"):
                        if k in s:
                            s[k] = base64.b64decode(s[k]).hex()
        out.append(d)
    return out


def _independent_counts(doc_or_lines) -> dict:
    """Runs, steps, successes, censored, dropped from the raw JSON, written for this test only."""
    by_trace: dict = {}
    for doc in doc_or_lines:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    attrs = {a["key"]: a["value"] for a in s.get("attributes", [])}
                    by_trace.setdefault(s["traceId"], []).append(attrs)
    counts = {"runs": 0, "steps": 0, "successes": 0, "censored": 0, "dropped": 0}
    for spans in by_trace.values():
        steps = sum(a.get("gen_ai.operation.name", {}).get("stringValue") == "chat" for a in spans)
        success = [a["app.success"]["boolValue"] for a in spans if "app.success" in a]
        stop = any(a.get("app.stop", {}).get("stringValue") == "max_turns" for a in spans)
        if not success and not stop:
            counts["dropped"] += 1
            continue
        counts["runs"] += 1
        counts["steps"] += steps
        counts["successes"] += bool(success and success[0])
        counts["censored"] += bool(not success and stop)
    return counts


def _counts(data) -> dict:
    t = data.trajectories
    dropped = data.reading["dropped"].get("no outcome", 0)
    return {"runs": len(t), "steps": len(data.steps), "successes": int((t["outcome"] == 1).sum()),
            "censored": int(t["censored"].sum()), "dropped": dropped}


def _load(path, **kw):
    return tpsviz.load(path, outcome="app.success", censor_when="app.stop=max_turns",
                       options=tpsviz.io.harness.runs.ReadOptions(conf=(("verbal", "agent.confidence"),)), **kw)


def test_counts_match_an_independent_reading_of_the_raw_json(otlp_file):
    path, truth = otlp_file
    data = _load(path)
    expected = _independent_counts([json.loads(path.read_text())])
    assert _counts(data) == expected
    assert expected["runs"] > 100 and expected["censored"] > 0 and expected["dropped"] > 0
    assert data.reading["format"] == "otlp" and data.reading["mapping"]["run"] == "one run per trace"
    # and against the truth the runs were recorded with
    assert expected["dropped"] == sum(r["outcome"] is None and not r["censored"] for r in truth)


def _long_form(truth) -> pd.DataFrame:
    rows = []
    for r in truth:
        if r["outcome"] is None and not r["censored"]:
            continue
        for t, c in enumerate(r["confs"], 1):
            rows.append({"trajectory_id": r["id"], "step": t, "outcome": r["outcome"], "censored": r["censored"],
                         "conf_verbal": c, "model": r["model"]})
    return pd.DataFrame(rows)


def test_tps_equals_that_of_the_long_form_twin(otlp_file, tmp_path):
    path, truth = otlp_file
    data = _load(path)
    twin = tmp_path / "twin.csv"
    _long_form(truth).to_csv(twin, index=False)
    ref = tpsviz.load(twin)
    for censoring in ("complete", "simple"):
        a = tpsviz.compute_tps(data, tpsviz.ScoreSettings(censoring=censoring, n_boot=0))
        b = tpsviz.compute_tps(ref, tpsviz.ScoreSettings(censoring=censoring, n_boot=0))
        assert a.summary.loc["verbal", "tps_mean"] == pytest.approx(b.summary.loc["verbal", "tps_mean"], rel=1e-12)
        per_a = a.per_trajectory.set_index("trajectory_id")["tps"].sort_index()
        per_b = b.per_trajectory.set_index("trajectory_id")["tps"].sort_index()
        assert list(per_a.index) == list(per_b.index)
        np.testing.assert_allclose(per_a.to_numpy(), per_b.to_numpy(), rtol=1e-12)
    runs = data.trajectories.set_index("trajectory_id")
    first = next(r for r in truth if r["outcome"] is not None)
    assert runs.loc[first["id"], "model"] == first["model"]
    assert pd.Timestamp(runs.loc[first["id"], "start_time"]) == pd.Timestamp(first["start"], unit="ns", tz="UTC")


def test_json_lines_with_hex_ids_read_the_same(recorded, otlp_file, tmp_path):
    spans, _ = recorded
    batches = _hex_batches(spans)
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(b) for b in batches) + "\n")
    assert detect_format(path.read_bytes(), path.name)[0] == "otlp"
    a, b = _load(path), _load(otlp_file[0])
    assert _counts(a) == _independent_counts(batches) == _counts(b)
    assert set(a.trajectories["trajectory_id"]) == set(b.trajectories["trajectory_id"])


def _run_cli(args) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() + err.getvalue()


def test_compare_by_model_and_monitor_run_without_further_options(otlp_file):
    path = str(otlp_file[0])
    code, text = _run_cli(["compare", path, "--by", "model", "--n-boot", "0", *OPTS])
    assert code == 0, text
    assert "model-a" in text and "model-b" in text
    code, text = _run_cli(["monitor", path, "--n-boot", "0", *OPTS])
    assert code == 0, text
    code, text = _run_cli(["score", path, "--n-boot", "0", "--json", *OPTS])
    assert code == 0, text
    settings = json.loads(text)["settings"]
    assert settings["reading"]["mapping"]["outcome"].startswith("the score, evaluation or attribute 'app.success'")


def test_the_messages_of_both_conventions_are_read(recorded):
    spans, _ = recorded
    tf = read_otlp(MessageToJson(encode_spans(spans)).encode(), "t.json", Limits())
    models = [s for s in tf.spans if s.kind == "model"]
    tools = [s for s in tf.spans if s.kind == "tool"]
    assert len(tools) == len(models) and {s.kind for s in tf.spans} == {"model", "tool", "other"}
    with_attrs = [s for s in models if "gen_ai.input.messages" not in s.attributes and s.output_messages
                  and s.output_messages[0].get("tool_calls")]
    with_events = [s for s in models if s.input_messages and not s.output_messages[0].get("tool_calls")]
    assert with_attrs and with_events and len(with_attrs) + len(with_events) == len(models)
    assert with_events[0].input_messages[0] == {"role": "user", "content": with_events[0].input_messages[0]["content"]}
    assert tools[0].output_messages[0]["role"] == "tool" and tools[0].output_messages[0]["name"] == "lookup"
    assert all(tf.trace_attributes[s.trace_id]["service.name"] == "support-agent" for s in tf.spans)


def test_every_value_kind_of_otlp():
    v = {"kvlistValue": {"values": [
        {"key": "s", "value": {"stringValue": "x"}}, {"key": "b", "value": {"boolValue": False}},
        {"key": "i", "value": {"intValue": "-12"}}, {"key": "j", "value": {"intValue": 5}},
        {"key": "d", "value": {"doubleValue": 0.25}}, {"key": "by", "value": {"bytesValue": "AAE="}},
        {"key": "a", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "two"}]}}},
        {"key": "n", "value": {"kvlistValue": {"values": [{"key": "deep", "value": {"doubleValue": "NaN"}}]}}},
        {"key": "e", "value": {}}]}}
    out = {}
    flatten("k", any_value(v), out)
    assert out["k.s"] == "x" and out["k.b"] is False and out["k.i"] == -12 and out["k.j"] == 5
    assert out["k.d"] == 0.25 and out["k.by"] == "AAE=" and out["k.a"] == (1, "two") and out["k.e"] is None
    assert np.isnan(out["k.n.deep"])
    assert any_value({"int_value": "3"}) == 3  # protobuf field names too
    for bad in ({"intValue": "1.5"}, {"intValue": True}, {"weirdValue": 1}, {"doubleValue": "x"}, "text"):
        with pytest.raises(ValueError):
            any_value(bad)
    assert otlp_id("0af7651916cd43dd8448eb211c80319c", 16) == "0af7651916cd43dd8448eb211c80319c"
    assert otlp_id(base64.b64encode(bytes.fromhex("00f067aa0ba902b7")).decode(), 8) == "00f067aa0ba902b7"
    assert otlp_id("0" * 16, 8) is None and otlp_id("zz", 8) is None


def _doc(spans: list, resource: dict | None = None) -> bytes:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": resource or []},
                                          "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}).encode()


def _span(sid: str, parent: str | None = None, tid: str = "ab" * 16, attrs=(), start: int = T0, **extra) -> dict:
    d = {"traceId": tid, "spanId": sid * 8 if len(sid) == 2 else sid, "name": "s", "startTimeUnixNano": str(start),
         "attributes": [{"key": k, "value": v} for k, v in attrs], **extra}
    if parent:
        d["parentSpanId"] = parent * 8 if len(parent) == 2 else parent
    return d


CHAT = ("gen_ai.operation.name", {"stringValue": "chat"})
OK = ("app.success", {"boolValue": True})


def test_loops_and_unknown_parents_are_read_with_a_note():
    raw = _doc([_span("a1", "b2", attrs=[CHAT, OK]), _span("b2", "a1", start=T0 + 5, attrs=[CHAT]),
                _span("c3", "dd", start=T0 + 9, attrs=[CHAT])])
    data = tpsviz.load((raw, "loop.json"), outcome="app.success")
    notes = " ".join(data.reading["notes"])
    assert "form a loop" in notes and "name a parent span that is not in the file" in notes
    assert len(data.steps) == 3 and len(data.trajectories) == 1


def test_bad_values_are_left_out_and_counted_never_echoed():
    secret = "SECRET-PROMPT-TEXT"
    raw = _doc([_span("a1", attrs=[CHAT, OK, ("x", {"weirdValue": secret}), ("y", {"intValue": secret}),
                                   ("gen_ai.input.messages", {"stringValue": "[" + secret}),
                                   ("long", {"stringValue": "z" * (MAX_ATTRIBUTE_CHARS + 10)})]),
                _span("b2", attrs=[CHAT], tid="bad-id"), {"spanId": "cc" * 8}])
    tf = read_otlp(raw, "bad.json", Limits())
    notes = " ".join(tf.notes)
    assert "2 attribute value(s) of no OTLP value kind" in notes
    assert "neither JSON messages nor text" in notes and "were cut" in notes
    assert "2 span(s) without a valid trace or span id" in notes
    assert secret not in notes and len(tf.spans) == 1
    assert len(tf.spans[0].attributes["long"]) == MAX_ATTRIBUTE_CHARS + 1


def test_oversize_and_malformed_files_are_refused_by_name():
    secret = "SECRET-PROMPT-TEXT"
    raw = _doc([_span(f"{i:02x}", attrs=[CHAT, OK], start=T0 + i) for i in range(1, 6)])
    with pytest.raises(LogFormatError, match="more than 3 spans"):
        read_otlp(raw, "big.json", Limits(max_rows=3))
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_JSON_NODES"):
        read_otlp(raw, "big.json", Limits(max_json_nodes=20))
    for bad, why in ((b'{"resourceSpans": 3}', "no resourceSpans list"),
                     (b'{"resourceSpans": []}\n{"' + secret.encode() + b'": [', "line 2: not valid JSON"),
                     (_doc([_span("a1", start=0)]), "no span with")):
        with pytest.raises(LogFormatError, match=why) as e:
            read_otlp(bad, "bad.json", Limits())
        assert secret not in str(e.value)
    with pytest.raises(LogFormatError, match="names no outcome"):
        tpsviz.load((raw, "t.json"))
    bad_list = _doc([_span("a1", attrs=[CHAT, OK]), dict(_span("b2", attrs=[CHAT]), events=7)])
    tf = read_otlp(bad_list, "b.json", Limits())
    assert len(tf.spans) == 1 and "list field holding another kind" in " ".join(tf.notes)


def test_an_outcomes_table_reads_as_the_attributes_do(otlp_file, tmp_path):
    path, truth = otlp_file
    table = tmp_path / "outcomes.csv"
    pd.DataFrame({"trajectory_id": [r["id"] for r in truth],
                  "outcome": [r["outcome"] for r in truth],
                  "censored": [r["censored"] for r in truth]}).to_csv(table, index=False)
    a = tpsviz.load(path, outcomes=table, options=tpsviz.io.harness.runs.ReadOptions(conf=(("verbal", "agent.confidence"),)))
    b = _load(path)
    assert _counts(a) == _counts(b)
    s = tpsviz.ScoreSettings(n_boot=0)
    assert tpsviz.compute_tps(a, s).summary.loc["verbal", "tps_mean"] == tpsviz.compute_tps(b, s).summary.loc["verbal", "tps_mean"]
    with pytest.raises(LogFormatError, match="applies to trace files"):
        tpsviz.load(tmp_path / "outcomes.csv", outcomes=table)


def test_an_openinference_instrumentor_exporting_by_otlp_gives_its_messages():
    """OpenInference instrumentors (Phoenix's) send model calls through the OpenTelemetry SDK as flat
    ``llm.input_messages.<i>.message.*`` attributes, with ``openinference.span.kind = LLM`` and no
    gen_ai attribute: the OTLP reader takes those spans' messages, tool calls included."""
    from openinference.semconv.trace import (
        MessageAttributes as MA, OpenInferenceSpanKindValues as K, SpanAttributes as SA, ToolCallAttributes as TA)

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "phoenix-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("openinference.instrumentation.openai")
    span = tracer.start_span("ChatCompletion", start_time=T0)
    span.set_attribute(SA.OPENINFERENCE_SPAN_KIND, K.LLM.value)
    span.set_attribute(SA.LLM_MODEL_NAME, "gpt-4o")
    pre_in, pre_out = f"{SA.LLM_INPUT_MESSAGES}.", f"{SA.LLM_OUTPUT_MESSAGES}."
    span.set_attribute(pre_in + f"0.{MA.MESSAGE_ROLE}", "system")
    span.set_attribute(pre_in + f"0.{MA.MESSAGE_CONTENT}", "You book flights.")
    span.set_attribute(pre_in + f"1.{MA.MESSAGE_ROLE}", "user")
    span.set_attribute(pre_in + f"1.{MA.MESSAGE_CONTENT}", "A seat to Lisbon, please.")
    span.set_attribute(pre_out + f"0.{MA.MESSAGE_ROLE}", "assistant")
    call = pre_out + f"0.{MA.MESSAGE_TOOL_CALLS}.0."
    span.set_attribute(call + TA.TOOL_CALL_ID, "call_1")
    span.set_attribute(call + TA.TOOL_CALL_FUNCTION_NAME, "search_flights")
    span.set_attribute(call + TA.TOOL_CALL_FUNCTION_ARGUMENTS_JSON, json.dumps({"to": "LIS"}))
    span.set_attribute("app.success", True)
    span.end(end_time=T0 + 10**6)
    tf = read_otlp(MessageToJson(encode_spans(exporter.get_finished_spans())).encode(), "oi.json", Limits())
    (s,) = tf.spans
    assert s.kind == "model"
    assert [(m["role"], m["content"]) for m in s.input_messages] == [
        ("system", "You book flights."), ("user", "A seat to Lisbon, please.")]
    (out,) = s.output_messages
    assert out["role"] == "assistant"
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in out["tool_calls"]] == [
        ("call_1", "search_flights", {"to": "LIS"})]
