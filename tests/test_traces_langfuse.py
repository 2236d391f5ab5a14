"""The Langfuse reader (issue 36; docs/traces.md).

Two exports of the same agent runs:

- the current public API (Langfuse v4): observations as ``GET /api/public/v2/observations`` pages
  them and scores as ``GET /api/public/v2/scores`` (v2) and ``/v3/scores`` return them, each object
  built and serialised by the ``langfuse`` SDK's own API models (``langfuse.api.ObservationV2``,
  ``Score_*``, ``ScoreV3_*``);
- the legacy trace objects of ``GET /api/public/traces/{id}`` (``TraceWithFullDetails`` with its
  ``ObservationsView`` observations and ``ScoreV1`` scores), which the SDK no longer models: written
  here field by field from the API definition (``fern/apis/server/definition/commons.yml`` of
  github.com/langfuse/langfuse at 62751446149b702b419a9292ddfc2280cdf74b8c).

Every expectation is recounted from the raw objects the test made, not from the reader.
"""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest
from langfuse.api import (
    ObservationV2, Score_Boolean, Score_Categorical, Score_Correction, Score_Numeric, ScoreV3_Boolean)
from langfuse.api.scores.types.score_subject_v3 import ScoreSubjectV3_Session

from tpsviz.cli.wording import say
from tpsviz.core.errors import LogFormatError
from tpsviz.io.traces.langfuse import langfuse_messages, langfuse_score_value, read_langfuse

SECRET = "SECRET-MESSAGE-TEXT"
T0 = dt.datetime(2026, 11, 3, 8, 0, tzinfo=dt.timezone.utc)
PRICES = {"model_id": None, "input_price": None, "output_price": None, "total_price": None}


def make_runs(seed: int = 0, n_traces: int = 6) -> list[dict]:
    """Agent runs as plain data: per trace its id, session, observations (type, ids, times,
    input, output, model) and scores."""
    rng = random.Random(seed)
    runs = []
    for t in range(n_traces):
        tid = f"trace-{t}-{rng.getrandbits(32):08x}"
        clock = T0 + dt.timedelta(minutes=t)
        root = {"id": f"{tid}-root", "type": rng.choice(["SPAN", "AGENT"]), "name": "agent", "parent": None,
                "start": clock, "input": {"task": t}, "output": None, "model": None}
        obs = [root]
        history = [{"role": "system", "content": "You are an agent."},
                   {"role": "user", "content": f"{SECRET} {t}"}]
        for step in range(rng.randint(1, 4)):
            clock += dt.timedelta(milliseconds=rng.randint(100, 3000))
            call = rng.random() < 0.5
            out = {"role": "assistant", "content": f"step {step}"}
            if call:
                out["tool_calls"] = [{"id": f"c{t}{step}", "type": "function",
                                      "function": {"name": "lookup", "arguments": '{"q": 1}'}}]
            gen_id = f"{tid}-gen{step}"
            obs.append({"id": gen_id, "type": "GENERATION", "name": "chat", "parent": root["id"], "start": clock,
                        "input": list(history), "output": out, "model": rng.choice(["gpt-4o", "claude-sonnet-4"]),
                        "metadata": {"confidence": round(rng.random(), 3)}})
            history.append(out)
            if call:
                clock += dt.timedelta(milliseconds=500)
                obs.append({"id": f"{tid}-tool{step}", "type": rng.choice(["TOOL", "SPAN"]), "name": "lookup",
                            "parent": gen_id, "start": clock, "input": {"q": 1}, "output": "found", "model": None})
                history.append({"role": "tool", "content": "found", "tool_call_id": f"c{t}{step}"})
        obs.append({"id": f"{tid}-event", "type": "EVENT", "name": "done", "parent": root["id"], "start": clock,
                    "input": None, "output": None, "model": None})
        gens = [o for o in obs if o["type"] == "GENERATION"]
        scores = [{"name": "success", "dataType": "BOOLEAN", "value": float(rng.random() < 0.5), "obs": None},
                  {"name": "quality", "dataType": "NUMERIC", "value": round(rng.random(), 2), "obs": gens[-1]["id"]},
                  {"name": "tone", "dataType": "CATEGORICAL", "value": 0.0, "stringValue": "polite", "obs": None},
                  {"name": "fix", "dataType": "CORRECTION", "value": 0.0, "stringValue": "better", "obs": None}]
        runs.append({"id": tid, "session": f"session-{t % 2}", "user": f"user-{t % 3}", "start": T0 + dt.timedelta(minutes=t),
                     "observations": obs, "scores": scores})
    return runs


def _score_v2(run: dict, s: dict, i: int) -> dict:
    common = dict(id=f"{run['id']}-s{i}", trace_id=run["id"], observation_id=s["obs"], name=s["name"], source="API",
                  timestamp=run["start"], created_at=run["start"], updated_at=run["start"], environment="default",
                  author_user_id=None, comment=None, metadata=None, config_id=None, queue_id=None)
    cls = {"BOOLEAN": Score_Boolean, "NUMERIC": Score_Numeric, "CATEGORICAL": Score_Categorical,
           "CORRECTION": Score_Correction}[s["dataType"]]
    extra = {"string_value": s.get("stringValue", "True" if s["value"] else "False")} if cls is not Score_Numeric else {}
    return json.loads(cls(value=s["value"], **extra, **common).json())


def api_v4_records(runs: list[dict]) -> list[dict]:
    """Observations (ObservationV2) and scores (Score v2, and one v3 session score) as the SDK's
    models serialise them."""
    records = []
    for run in runs:
        for o in run["observations"]:
            model = ObservationV2(id=o["id"], trace_id=run["id"], start_time=o["start"],
                                  end_time=o["start"] + dt.timedelta(milliseconds=300), project_id="p",
                                  parent_observation_id=o["parent"], type=o["type"], name=o["name"],
                                  input=o["input"], output=o["output"], model=o["model"], metadata=o.get("metadata"),
                                  session_id=run["session"], user_id=run["user"], trace_name="support-agent",
                                  usage_details={"input": 10, "output": 2} if o["type"] == "GENERATION" else None,
                                  **PRICES)
            records.append(json.loads(model.json()))
        records += [_score_v2(run, s, i) for i, s in enumerate(run["scores"])]
    session = ScoreV3_Boolean(id="sess-score", project_id="p", name="resolved", source="ANNOTATION", timestamp=T0,
                              environment="default", created_at=T0, updated_at=T0, value=True,
                              subject=ScoreSubjectV3_Session(id="session-0"))
    records.append(json.loads(session.json()))
    return records


def legacy_traces(runs: list[dict]) -> list[dict]:
    """TraceWithFullDetails objects (commons.yml), observations as ObservationsView, scores ScoreV1."""
    traces = []
    for run in runs:
        iso = lambda d: d.isoformat().replace("+00:00", "Z")  # noqa: E731
        obs = [{"id": o["id"], "traceId": run["id"], "type": o["type"], "name": o["name"], "startTime": iso(o["start"]),
                "endTime": None, "completionStartTime": None, "model": o["model"], "modelParameters": {},
                "input": o["input"], "version": None, "metadata": o.get("metadata"), "output": o["output"],
                "usage": {"input": 0, "output": 0, "total": 0, "unit": "TOKENS"}, "level": "DEFAULT",
                "statusMessage": None, "parentObservationId": o["parent"], "promptId": None, "usageDetails": {},
                "costDetails": {}, "environment": "default", "promptName": None, "promptVersion": None,
                "modelId": None, "inputPrice": None, "outputPrice": None, "totalPrice": None,
                "calculatedInputCost": None, "calculatedOutputCost": None, "calculatedTotalCost": None,
                "latency": 0.3, "timeToFirstToken": None} for o in run["observations"]]
        scores = [{"id": f"{run['id']}-s{i}", "traceId": run["id"], "name": s["name"], "source": "API",
                   "observationId": s["obs"], "timestamp": iso(run["start"]), "createdAt": iso(run["start"]),
                   "updatedAt": iso(run["start"]), "authorUserId": None, "comment": None, "metadata": None,
                   "configId": None, "queueId": None, "environment": "default", "dataType": s["dataType"],
                   "value": s["value"], **({"stringValue": s["stringValue"]} if "stringValue" in s else
                                           {"stringValue": "True" if s["value"] else "False"}
                                           if s["dataType"] == "BOOLEAN" else {})} for i, s in enumerate(run["scores"])]
        traces.append({"id": run["id"], "timestamp": iso(run["start"]), "name": "support-agent", "input": None,
                       "output": None, "sessionId": run["session"], "release": "v1", "version": None,
                       "userId": run["user"], "metadata": {"task": f"task-{run['id']}"}, "tags": ["prod"],
                       "public": False, "environment": "default", "htmlPath": "/x", "latency": 1.0, "totalCost": 0.0,
                       "observations": obs, "scores": scores})
    return traces


def expected_value(s: dict):
    return {"BOOLEAN": s["value"] != 0, "NUMERIC": s["value"], "CATEGORICAL": s.get("stringValue")}.get(s["dataType"])


def check(got, runs, session_score: bool):
    observations = [o for r in runs for o in r["observations"]]
    assert len(got.spans) == len(observations)
    assert sum(s.kind == "model" for s in got.spans) == sum(o["type"] == "GENERATION" for o in observations)
    assert sum(s.kind == "tool" for s in got.spans) == sum(o["type"] == "TOOL" for o in observations)
    by_id = {s.span_id: s for s in got.spans}
    for r in runs:
        for o in r["observations"]:
            span = by_id[o["id"]]
            assert (span.trace_id, span.parent_id, span.name) == (r["id"], o["parent"], o["name"])
            assert span.start == pytest.approx(o["start"].timestamp(), abs=1e-6)
            if o["type"] == "GENERATION":
                assert [(m["role"], m["content"]) for m in span.input_messages] == [
                    (m["role"], m["content"]) for m in o["input"]]
                assert [(m["role"], m["content"], tuple(c["name"] for c in m.get("tool_calls", ())))
                        for m in span.output_messages] == [
                    ("assistant", o["output"]["content"],
                     tuple(c["function"]["name"] for c in o["output"].get("tool_calls", ())))]
                assert span.attributes["gen_ai.request.model"] == span.attributes["model"] == o["model"]
                assert span.attributes["metadata.confidence"] == o["metadata"]["confidence"]
            else:
                assert span.input_messages == () and span.output_messages == ()
        attrs = got.trace_attributes[r["id"]]
        assert (attrs["session.id"], attrs["sessionId"], attrs["user.id"]) == (r["session"], r["session"], r["user"])
    want = [(r["id"], s["obs"], s["name"], expected_value(s)) for r in runs for s in r["scores"]
            if s["dataType"] != "CORRECTION"]
    if session_score:
        want += [(r["id"], None, "resolved", True) for r in runs if r["session"] == "session-0"]
    assert sorted(((s.trace_id, s.span_id, s.name, s.value) for s in got.scores), key=repr) == sorted(want, key=repr)


@pytest.mark.parametrize("layout", ["json-list", "json-data", "jsonl"])
def test_the_v4_api_export_reads_observations_scores_and_trace_fields(layout):
    runs = make_runs(seed=11)
    records = api_v4_records(runs)
    if layout == "jsonl":
        raw = "\n".join(json.dumps(r) for r in records).encode()
    else:
        raw = json.dumps({"data": records, "meta": {"cursor": None}} if layout == "json-data" else records).encode()
    got = read_langfuse(raw, "langfuse.jsonl")
    assert got.source == "langfuse"
    check(got, runs, session_score=True)
    n_corrections = sum(s["dataType"] == "CORRECTION" for r in runs for s in r["scores"])
    assert got.notes == ["a session's scores apply to each of its traces (group them into runs with "
                         "run_by='session.id')",
                         f"{n_corrections} score(s) without a name or a readable value (or a CORRECTION) were skipped"]
    assert say(got.notes[0]).endswith("(group them into runs with --run-by session.id)")  # as the CLI words it
    assert all(got.trace_attributes[r["id"]]["name"] == "support-agent" for r in runs)


@pytest.mark.parametrize("layout", ["json-list", "jsonl", "one"])
def test_legacy_trace_objects_read_the_same(layout):
    runs = make_runs(seed=12, n_traces=1 if layout == "one" else 5)
    traces = legacy_traces(runs)
    raw = {"json-list": lambda: json.dumps(traces), "one": lambda: json.dumps(traces[0]),
           "jsonl": lambda: "\n".join(json.dumps(t) for t in traces)}[layout]().encode()
    got = read_langfuse(raw, "traces.json")
    check(got, runs, session_score=False)
    for r in runs:
        attrs = got.trace_attributes[r["id"]]
        assert (attrs["name"], attrs["metadata.task"], attrs["tags"], attrs["release"]) == (
            "support-agent", f"task-{r['id']}", ("prod",), "v1")


def test_messages_in_other_shapes_and_logprobs():
    tokens = [{"token": "ok", "logprob": -0.2, "top_logprobs": []}]
    obs = {"type": "GENERATION", "input": json.dumps({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "b"}]}]}),
        "output": {"choices": [{"message": {"role": "assistant", "content": "ok"}, "logprobs": {"content": tokens}}]}}
    inputs, outputs, logprobs = langfuse_messages(obs)
    assert inputs == ({"role": "user", "content": "a\n\nb"},)
    assert outputs == ({"role": "assistant", "content": "ok", "logprobs": tokens},) and logprobs == tokens
    assert langfuse_messages({"type": "GENERATION", "input": "plain prompt", "output": "plain answer"})[:2] == (
        (), ({"role": "assistant", "content": "plain answer"},))
    assert langfuse_messages({"type": "SPAN", "input": {"q": 1}, "output": "found"})[:2] == ((), ())


@pytest.mark.parametrize("score, value", [
    ({"dataType": "BOOLEAN", "value": 0, "stringValue": "False"}, False),
    ({"dataType": "BOOLEAN", "stringValue": "True"}, True),
    ({"dataType": "NUMERIC", "value": 0.25}, 0.25),
    ({"dataType": "NUMERIC", "value": "high"}, None),
    ({"dataType": "CATEGORICAL", "value": 2, "stringValue": "good"}, "good"),
    ({"dataType": "CORRECTION", "value": 0, "stringValue": "x"}, None),
    ({"dataType": "BOOLEAN", "value": True}, True),
    ({"dataType": "CATEGORICAL", "value": "good"}, "good"),
    ({"value": 3}, 3.0),
    ({"stringValue": "yes"}, "yes"),
])
def test_score_values_by_data_type(score, value):
    assert langfuse_score_value(score) == value


def test_odd_records_are_skipped_and_counted():
    runs = make_runs(seed=13, n_traces=2)
    records = api_v4_records(runs)
    first_obs = records[0]
    records += [{"hello": 1}, {**first_obs}, {**first_obs, "id": "x1", "startTime": "yesterday"},
                {**first_obs, "id": None}, {"name": "orphan", "dataType": "NUMERIC", "value": 1.0}]
    got = read_langfuse(json.dumps(records).encode(), "x.json")
    assert len(got.spans) == sum(len(r["observations"]) for r in runs)
    assert got.notes[1:] == [
        "2 score(s) without a name or a readable value (or a CORRECTION) were skipped",  # the 2 CORRECTIONs
        "1 record(s) that are neither a Langfuse trace, an observation nor a score were skipped",
        "1 observation(s) repeating an id already read were skipped",
        "1 observation(s) without a readable startTime were skipped",
        "1 observation(s) without an id or a trace id were skipped",
        "1 score(s) of neither a trace nor a session (dataset runs) were skipped"]
    ids_only = dict(legacy_traces(runs)[0], observations=["a", "b"])
    got = read_langfuse(json.dumps(ids_only).encode(), "t.json")
    assert got.spans == [] and "2 observation(s) were given as ids only" in got.notes[0]


@pytest.mark.parametrize("raw, words", [
    (b"", "the file is empty"),
    (b"id,name\n1,2\n", "the file is not JSON"),
    (b'{"id": "t1", "observations": [{"input": "' + SECRET.encode() + b'"', "not valid JSON"),
    (b"[1, 2, 3]", "no Langfuse trace, observation or score could be read"),
    (b'{"data": [{"id": "a"}]}\n', "no Langfuse trace, observation or score could be read"),
])
def test_malformed_exports_give_clear_errors_without_their_content(raw, words):
    with pytest.raises(LogFormatError) as err:
        read_langfuse(raw, "export.json")
    assert words in str(err.value) and SECRET not in str(err.value)


def test_caps_on_observations_and_nodes():
    raw = json.dumps(api_v4_records(make_runs(seed=14, n_traces=3))).encode()
    with pytest.raises(LogFormatError, match="more than the 4 observations"):
        read_langfuse(raw, "x.json", max_spans=4)
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_JSON_NODES"):
        read_langfuse(raw, "x.json", max_nodes=50)
