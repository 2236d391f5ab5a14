"""The one mapping of trace files onto runs and steps (tpsviz.io.traces.mapping; docs/traces.md),
on span models built by hand: runs by trace or attribute, steps by start time and rule, tool spans as
context, outcomes from scores, attributes or a table, censoring, metadata, token log-probabilities,
the transcript of the replay."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from tpsviz.core.errors import LogFormatError, SettingError
from tpsviz.io.files import Limits
from tpsviz.io.harness.runs import ReadOptions, runs_to_frame
from tpsviz.io.traces import read as trace_read
from tpsviz.io.traces.mapping import outcome_value, parent_notes, trace_log
from tpsviz.io.traces.options import TraceOptions, parse_rules
from tpsviz.io.traces.read import outcomes_from_frame, read_traces
from tpsviz.io.traces.spans import Span, TraceFile, TraceScore


def span(tid, sid, start, kind="other", parent=None, name="s", out=(), inp=(), logprobs=(), **attrs):
    return Span(trace_id=tid, span_id=sid, parent_id=parent, name=name, start=start, end=start + 1,
                attributes=attrs, kind=kind, input_messages=tuple(inp), output_messages=tuple(out),
                logprobs=tuple(logprobs), where=f"span {sid}")


def opts(**kw) -> ReadOptions:
    conf = kw.pop("conf", ())
    thr = kw.pop("success_threshold", None)
    treat = kw.pop("treat", ())
    return ReadOptions(conf=conf, success_threshold=thr, treat=treat, traces=TraceOptions(**kw))


def test_steps_are_model_calls_by_start_time_and_tool_spans_never_steps():
    # written out of order: the step index follows the start time, not the file
    tf = TraceFile("otlp", spans=[
        span("t1", "c", 30.0, "model", p=0.3), span("t1", "a", 10.0, "model", p=0.1),
        span("t1", "tool", 20.0, "tool", p=0.9), span("t1", "b", 25.0, "other", p=0.8)])
    log = trace_log(tf, opts())
    (run,) = log.runs
    assert [s["p"] for s in run.steps] == [0.1, 0.3]
    rule = trace_log(tf, opts(step_spans=(("name", "s*"),)))  # a rule: tool spans still never steps
    assert [s["p"] for s in rule.runs[0].steps] == [0.1, 0.8, 0.3]
    attr = trace_log(tf, opts(step_spans=(("p", "0.8"),)))
    assert [s["p"] for s in attr.runs[0].steps] == [0.8]
    assert any("2 model-call span(s) do not match the step rule" in n for n in attr.notes)


def test_run_by_groups_traces_and_orders_runs_by_start():
    tf = TraceFile("otlp", spans=[
        span("t2", "x", 50.0, "model", conv="c1"), span("t1", "y", 5.0, "model"),
        span("t3", "z", 20.0, "model"), span("t4", "w", 100.0, "model")],
        trace_attributes={"t1": {"conv": "c1"}, "t3": {"conv": "c2"}})
    log = trace_log(tf, opts(run_by="conv"))
    assert [(r.trajectory_id, len(r.steps)) for r in log.runs] == [("c1", 2), ("c2", 1), ("t4", 1)]
    assert any("1 trace(s) have no attribute 'conv'" in n for n in log.notes)
    assert [r.trajectory_id for r in trace_log(tf, opts()).runs] == ["t1", "t3", "t2", "t4"]


def test_outcome_sources_in_order_of_precedence():
    spans = [span("t1", "a", 1.0, "model", ok=0), span("t1", "b", 2.0, "model", ok=1)]
    base = dict(spans=spans)
    cases = [
        (TraceFile("x", **base), 1.0),  # span attributes: the latest
        (TraceFile("x", **base, trace_attributes={"t1": {"ok": 0}}), 0.0),
        (TraceFile("x", **base, trace_attributes={"t1": {"ok": 0}},
                   scores=[TraceScore("t1", "a", "ok", "true")]), 1.0),
        (TraceFile("x", **base, scores=[TraceScore("t1", "a", "ok", 1), TraceScore("t1", None, "ok", False)]), 0.0),
    ]
    for tf, want in cases:
        (run,) = trace_log(tf, opts(outcome="ok")).runs
        assert (run.reason, run.outcome) == ("scored", want)
    log = trace_log(TraceFile("x", **base), opts(outcome="ok"))
    assert any("several different values" in n for n in log.notes)


@given(st.one_of(st.booleans(), st.floats(allow_nan=True), st.integers(-5, 5),
                 st.sampled_from(["true", "False", " pass ", "fail", "0.7", "1", "maybe", ""])),
       st.floats(0.05, 1.0))
@settings(max_examples=200, deadline=None)
def test_outcome_value_against_a_plain_rule(v, thr):
    got = outcome_value(v, thr)
    if isinstance(v, bool):
        assert got == float(v)
    elif isinstance(v, str):
        s = v.strip().lower()
        want = {"true": 1.0, "pass": 1.0, "1": 1.0, "false": 0.0, "fail": 0.0}.get(s)
        if want is None and s == "0.7":
            want = float(0.7 >= thr)
        assert got == want
    elif isinstance(v, float) and not math.isfinite(v):
        assert got is None
    else:
        assert got == (1.0 if v >= thr else 0.0)


def test_censoring_dropping_and_the_outcomes_table(tmp_path):
    spans = [span(f"t{i}", "a", float(i), "model", conf=0.5 + i / 100, **extra)
             for i, extra in enumerate([{"ok": True}, {"stop": "max_turns"}, {}, {"ok": "banana"},
                                        {"stop": ("length", "max_turns")}])]
    tf = TraceFile("otlp", spans=spans)
    log = trace_log(tf, opts(outcome="ok", censor_when=(("stop", "max_turns"),)))
    assert [r.reason for r in log.runs] == ["scored", "limit", "no outcome", "unreadable outcome", "limit"]
    frame, reading = runs_to_frame(log, opts(outcome="ok", conf=(("verbal", "conf"),)), "f", 100)
    assert sorted(frame["trajectory_id"]) == ["t0", "t1", "t4"]
    assert reading["dropped"] == {"no outcome": 1, "unreadable outcome": 1}
    assert frame.set_index("trajectory_id").loc["t1", "censored"]
    np.testing.assert_allclose(frame["conf_verbal"], [0.5, 0.51, 0.54])
    table, _ = outcomes_from_frame(pd.DataFrame({"trajectory_id": ["t2", "t3", "t9"], "outcome": [0, None, 1],
                                                 "censored": ["false", "true", "false"]}), "o.csv")
    log = trace_log(tf, opts(outcome="ok"), table, "o.csv")
    assert [r.reason for r in log.runs][:4] == ["scored", "no outcome", "scored", "censored"]
    assert log.runs[2].outcome == 0.0 and any("1 run id(s) of the outcomes table match no run" in n for n in log.notes)
    for bad, why in (({"trajectory_id": ["a"], "outcome": [0.5]}, "must be 0 or 1, or empty"),
                     ({"trajectory_id": ["a", "a"], "outcome": [1, 0]}, "listed twice"),
                     ({"trajectory_id": ["a"], "outcome": [1], "censored": ["perhaps"]}, "true/false"),
                     ({"run": ["a"], "outcome": [1]}, "missing: trajectory_id")):
        with pytest.raises(LogFormatError, match=why):
            outcomes_from_frame(pd.DataFrame(bad), "o.csv")


def test_metadata_logprobs_and_the_replay_transcript():
    lp = [{"logprob": -0.1, "top_logprobs": [{"logprob": -0.1}, {"logprob": -2.5}]}, {"logprob": -1.3}]
    user = {"role": "user", "content": "task"}
    a_out = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "lookup", "arguments": "{}"}]}
    tool_msg = {"role": "tool", "name": "lookup", "content": "found", "tool_call_id": "c1"}
    tf = TraceFile("otlp", spans=[
        span("t1", "a", 1_767_225_600.0, "model", inp=[user], out=[a_out], logprobs=lp,
             **{"gen_ai.request.model": "m1"}),
        span("t1", "t", 1_767_225_601.0, "tool", out=[tool_msg]),
        span("t1", "b", 1_767_225_602.0, "model", inp=[user, a_out], out=[{"role": "assistant", "content": "done"}])])
    log = trace_log(tf, ReadOptions(transcripts=True))
    (run,) = log.runs
    assert run.metadata == {"start_time": "2026-01-01T00:00:00.000Z", "duration_s": 3.0, "model": "m1"}
    # the second call's input repeats the history: only the tool result (from the tool span) is new
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool", "assistant"]
    assert run.messages[1] is run.steps[0] and run.messages[3] is run.steps[1]
    frame, _ = runs_to_frame(log, ReadOptions(treat=(("no outcome", "failure"),)), "f", 100)
    assert frame["outcome"].tolist() == [0.0, 0.0]  # (the treatment table applies as to harness logs)
    p = np.exp(np.array([-0.1, -2.5]) - -0.1)
    p /= p.sum()
    assert frame["raw_mean_logprob"].iloc[0] == pytest.approx(-0.7)
    assert frame["raw_min_logprob"].iloc[0] == pytest.approx(-1.3)
    assert frame["unc_entropy"].iloc[0] == pytest.approx(-(p * np.log(p)).sum())
    assert math.isnan(frame["raw_mean_logprob"].iloc[1])


def test_parent_loops_and_unknown_parents_by_brute_force():
    spans = [span("t", "a", 1, parent="b"), span("t", "b", 2, parent="c"), span("t", "c", 3, parent="a"),
             span("t", "d", 4, parent="a"), span("t", "e", 5, parent="zz"), span("u", "a", 6, parent="a")]
    notes = " ".join(parent_notes(spans))
    assert "1 span(s) name a parent" in notes and "4 span(s) are their own ancestors" in notes
    assert parent_notes([span("t", "a", 1), span("t", "b", 2, parent="a")]) == []


def test_rules_parse_and_refuse_by_setting():
    assert parse_rules(["name=chat*,a.b=x", " c = y "], "step_spans") == (("name", "chat*"), ("a.b", "x"), ("c", "y"))
    with pytest.raises(SettingError, match="ATTRIBUTE=VALUE"):
        parse_rules("oops", "censor_when")
    with pytest.raises(SettingError, match="at most"):
        parse_rules(",".join(f"a{i}=1" for i in range(40)), "step_spans")


def test_a_reader_is_called_through_the_table_of_readers(monkeypatch):
    with pytest.raises(LogFormatError, match="no nosuch reader yet"):
        read_traces(b"{}", "x.json", "nosuch", opts(outcome="ok"), Limits())
    seen = {}

    def fake(raw, name, limits, parsed=None):
        seen["args"] = (raw, name, parsed)
        return TraceFile("langfuse", spans=[span("t", "a", 1.0, "model", ok=1, c=0.4)])

    monkeypatch.setitem(trace_read.TRACE_READERS, "langfuse", fake)
    frame, reading = read_traces(b"{}", "x.json", "langfuse", opts(outcome="ok", conf=(("v", "c"),)), Limits(), {"p": 1})
    assert seen["args"] == (b"{}", "x.json", {"p": 1}) and reading["format"] == "langfuse"
    assert frame["conf_v"].tolist() == [0.4] and reading["forecasts"] == {"conf_v": "step-span attribute c"}
