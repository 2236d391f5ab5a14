"""Issue 34, point 2: confidence elicited while an Inspect AI agent runs (tpsviz.forecasts.elicit).

Real ``.eval`` logs are written by inspect_ai itself with its mock model (offline, explicit token
usage): a small tool-using task in three set-ups (react with the self-report, a ``generate``
solver with a judge, a ``generate`` solver with the self-report). The mock answers the questions
from a script keyed by (sample, step): numbers, percentages, text without a number, several
numbers, an empty reply, a number out of range. The expected values and counts are written out by
hand below, not computed by the parser, and read back with ``tpsviz.load``.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest

os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")
os.environ.setdefault("INSPECT_DISPLAY", "none")
pytest.importorskip("inspect_ai")

import tpsviz  # noqa: E402
from tpsviz.cli import main as cli  # noqa: E402
from tpsviz.core.schema import ELICITED_KEY, ELICITED_PROBLEM_KEY  # noqa: E402
from tpsviz.forecasts.prompts import load_prompts  # noqa: E402
from tpsviz.io.harness.runs import ReadOptions  # noqa: E402

PROMPTS = load_prompts()
#: sample -> (tool calls before the answer, the replies to the questions after turns 1, 2, …, answer)
SCRIPT = {
    "a": (1, ["probability: 0.8", "I'd put it at 70%"], "8"),
    "b": (2, ["Hard to say.", "probability: 0.25", "P(success) = 0.1"], "7"),
    "c": (0, ["probability: 1.5"], "8"),
    "d": (1, ["between 0.2 and 0.4", "no idea"], "7"),
    "e": (1, ["", "0.95"], "8"),
}
#: what each reply means, written by hand: a value, or the problem
EXPECTED = {
    "a": [0.8, 0.7], "b": ["no number", 0.25, 0.1], "c": ["out of range"],
    "d": ["several numbers", "no number"], "e": ["empty reply", 0.95],
}
N_STEPS = 10
PROBLEMS = {"no number": 2, "empty reply": 1, "out of range": 1, "several numbers": 1}


def example_module():
    """examples/inspect_elicit.py, loaded as a module."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "inspect_elicit", Path(__file__).resolve().parents[1] / "examples" / "inspect_elicit.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def _sample_of(text: str) -> str:
    return re.search(r"sample (\w)\b", text).group(1)


def _out(o):
    from inspect_ai.model import ModelUsage

    o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return o


def _agent_turn(input, tools):
    """The scripted agent: SCRIPT's tool calls, then the answer (submitted under react)."""
    from inspect_ai.model import ModelOutput

    sample = _sample_of(next(m.text for m in input if m.role == "user"))
    n_tools, _, answer = SCRIPT[sample]
    done = sum(m.role == "tool" and m.function == "calculator" for m in input)
    if done < n_tools:
        return _out(ModelOutput.for_tool_call("mock", "calculator", {"expression": "3 + 5"}))
    if any(t.name == "submit" for t in tools):
        return _out(ModelOutput.for_tool_call("mock", "submit", {"answer": answer}))
    return _out(ModelOutput.from_content("mock", answer))


def _write_logs(folder) -> dict:
    """Three real ``.eval`` logs and what the mock models were asked; returns {mode: (path, calls)}."""
    from inspect_ai import Task, eval
    from inspect_ai.agent import react
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools

    from tpsviz.forecasts.elicit import confidence_model, elicit_confidence

    calculator = example_module().calculator
    out, agent_turn = _out, _agent_turn

    def make(calls: list):
        def actor(input, tools, tool_choice, config):
            last = input[-1]
            if last.role == "user" and last.text == PROMPTS.self_report:
                sample = _sample_of(input[1 if input[0].role == "system" else 0].text)
                t = sum(m.role == "assistant" for m in input)
                calls.append(("self", sample, t, list(input), tool_choice))
                return out(ModelOutput.from_content("mock", SCRIPT[sample][1][t - 1]))
            calls.append(("agent", None, None, list(input), tool_choice))
            return agent_turn(input, tools)

        def judge(input, tools, tool_choice, config):
            text = input[0].text
            sample, t = _sample_of(text), text.count("### AGENT")
            calls.append(("judge", sample, t, list(input), tool_choice))
            return out(ModelOutput.from_content("mock", SCRIPT[sample][1][t - 1]))

        return actor, judge

    dataset = [Sample(id=s, input=f"This is sample {s}: add 3 and 5.", target="8") for s in SCRIPT]
    logs = {}
    for mode in ("react_self", "generate_judge", "generate_self"):
        calls: list = []
        actor, judge_fn = make(calls)
        model = get_model("mockllm/model", custom_outputs=actor, memoize=False)
        judge = get_model("mockllm/model", custom_outputs=judge_fn, memoize=False) if "judge" in mode else None
        if mode == "react_self":
            solver = react(tools=[calculator()], model=confidence_model())
        else:
            solver = elicit_confidence([use_tools([calculator()]), generate()], judge=judge)
        task = Task(dataset=dataset, solver=solver, scorer=includes(), name=mode)
        log = eval(task, model=model, log_dir=str(folder / mode), display="none")[0]
        assert log.status == "success" and all(s.error is None for s in log.samples), mode
        logs[mode] = (log.location, calls)
    return logs


@pytest.fixture(scope="module")
def elicit_logs(tmp_path_factory):
    return _write_logs(tmp_path_factory.mktemp("elicit"))


MODES = ("react_self", "generate_judge", "generate_self")


def _by_step(data) -> dict:
    steps = data.steps
    return {(str(tid), int(t)): v for tid, t, v in zip(steps["trajectory_id"], steps["step"], steps["conf_elicited"])}


@pytest.mark.parametrize("mode", MODES)
def test_values_and_counts_round_trip(elicit_logs, mode):
    data = tpsviz.load(elicit_logs[mode][0])
    assert "elicited" in data.predictors
    got = _by_step(data)
    assert len(got) == N_STEPS
    for sample, expected in EXPECTED.items():
        for t, e in enumerate(expected, start=1):
            v = got[(f"{sample}-epoch1", t)]
            assert (math.isnan(v) if isinstance(e, str) else v == e), (mode, sample, t, v, e)
    counts = data.reading["found_forecasts"]["conf_elicited"]
    assert counts == {"steps": N_STEPS, "not_asked": 0, "no_value": 5,
                      "problems": {"no number": 2, "empty reply": 1, "out of range": 1, "several numbers": 1}}
    assert ("conf_elicited: 5 of 10 steps: "
            "the reply held no usable probability (2 no number, 1 empty reply, 1 out of range, "
            "1 several numbers)") in " ".join(data.notes)
    assert data.reading["forecasts"]["conf_elicited"].startswith("elicited during the run")
    outcome = dict(zip(data.trajectories["trajectory_id"].astype(str), data.trajectories["outcome"]))
    assert {s: outcome[f"{s}-epoch1"] for s in SCRIPT} == {s: float(SCRIPT[s][2] == "8") for s in SCRIPT}


@pytest.mark.parametrize("mode", MODES)
def test_the_log_holds_the_values_problems_and_store_counts(elicit_logs, mode):
    from inspect_ai.log import read_eval_log

    from tpsviz.forecasts.elicit import COUNTS_KEY

    log = read_eval_log(elicit_logs[mode][0])
    for s in log.samples:
        expected = EXPECTED[s.id]
        steps = [m for m in s.messages if m.role == "assistant"]
        assert len(steps) == len(expected)
        for m, e in zip(steps, expected):
            if isinstance(e, str):
                assert m.metadata[ELICITED_KEY] is None and m.metadata[ELICITED_PROBLEM_KEY] == e
            else:
                assert m.metadata[ELICITED_KEY] == e and ELICITED_PROBLEM_KEY not in m.metadata
        problems = {}
        for e in expected:
            if isinstance(e, str):
                problems[e] = problems.get(e, 0) + 1
        counts = s.store[COUNTS_KEY]
        assert counts["asked"] == len(expected) and counts["missing"] == sum(problems.values())
        assert counts["problems"] == problems
        assert (counts["mode"], counts["judge"]) == (("judge", "mockllm/model") if "judge" in mode else ("self_report", None))


@pytest.mark.parametrize("mode", MODES)
def test_the_questions_stay_out_of_the_agents_conversation(elicit_logs, mode):
    from inspect_ai.log import read_eval_log

    path, calls = elicit_logs[mode]
    for s in read_eval_log(path).samples:
        texts = [m.text for m in s.messages]
        assert PROMPTS.self_report not in texts and PROMPTS.pending_tool not in texts
        assert not any("<transcript>" in t for t in texts)
        roles = [m.role for m in s.messages if m.role != "system"]  # react's submit call is removed
        assert roles == ["user"] + ["assistant", "tool"] * SCRIPT[s.id][0] + ["assistant"]
    agent_inputs = [c[3] for c in calls if c[0] == "agent"]
    assert agent_inputs and not any(m.role == "user" and m.text == PROMPTS.self_report
                                     for inp in agent_inputs for m in inp)
    kinds = {c[0] for c in calls}
    assert kinds == ({"agent", "judge"} if "judge" in mode else {"agent", "self"})
    assert sum(c[0] != "agent" for c in calls) == N_STEPS


@pytest.mark.parametrize("mode", ("react_self", "generate_self"))
def test_the_self_report_sees_exactly_h_t(elicit_logs, mode):
    """The question follows the t-th assistant message; its tool calls get the pending text as
    results (a provider needs a result for every call), and tools are offered with tool_choice none."""
    for kind, sample, t, inp, tool_choice in elicit_logs[mode][1]:
        if kind != "self":
            continue
        assert tool_choice == "none"
        assert inp[-1].text == PROMPTS.self_report
        assistants = [i for i, m in enumerate(inp) if m.role == "assistant"]
        assert len(assistants) == t
        last = inp[assistants[-1]]
        pending = inp[assistants[-1] + 1:-1]
        assert [m.tool_call_id for m in pending] == [c.id for c in (last.tool_calls or [])]
        assert all(m.role == "tool" and m.text == PROMPTS.pending_tool for m in pending)


def test_the_judge_sees_the_transcript_up_to_step_t(elicit_logs):
    from inspect_ai.log import read_eval_log

    path, calls = elicit_logs["generate_judge"]
    final = {s.id: s.messages for s in read_eval_log(path).samples}
    seen = set()
    for kind, sample, t, inp, _ in calls:
        if kind != "judge":
            continue
        seen.add((sample, t))
        assert len(inp) == 1 and inp[0].role == "user"
        transcript = re.search(r"<transcript>\n(.*)\n</transcript>", inp[0].text, re.S).group(1)
        msgs = final[sample]
        k = [i for i, m in enumerate(msgs) if m.role == "assistant"][t - 1]
        blocks = transcript.split("\n\n### ")
        assert len(blocks) == k + 1  # every message up to the t-th assistant message, nothing after
        assert transcript.rstrip().endswith(
            "[tool call] calculator({\"expression\": \"3 + 5\"})" if msgs[k].tool_calls else msgs[k].text)
        assert "probability" not in transcript.lower()
    assert len(seen) == N_STEPS


def test_json_log_and_steps_not_asked(elicit_logs, tmp_path):
    """The same reader path for a ``.json`` log; a message without the key counts as not asked;
    a user's own --conf for the same field replaces the automatic one."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(elicit_logs["generate_self"][0])
    a = next(s for s in log.samples if s.id == "a")
    first = next(m for m in a.messages if m.role == "assistant")
    first.metadata.pop(ELICITED_KEY)
    path = tmp_path / "edited.json"
    write_eval_log(log, str(path), format="json")
    data = tpsviz.load(path)
    counts = data.reading["found_forecasts"]["conf_elicited"]
    assert counts["not_asked"] == 1 and counts["no_value"] == 5 and counts["steps"] == N_STEPS
    assert "conf_elicited: 1 of 10 steps were not asked (their message has no metadata.tpsviz_confidence)" \
        in data.notes
    assert math.isnan(_by_step(data)[("a-epoch1", 1)])
    own = tpsviz.load(path, options=ReadOptions(conf=(("mine", f"metadata.{ELICITED_KEY}"),)))
    assert "mine" in own.predictors and "elicited" not in own.predictors
    assert "found_forecasts" not in own.reading or not own.reading["found_forecasts"]


def test_score_reads_the_elicited_predictor_without_options(elicit_logs, capsys):
    code = cli.main(["score", str(elicit_logs["generate_judge"][0]), "--n-boot", "0"])
    out = capsys.readouterr().out
    assert code == 0
    assert "elicited" in out and "5 of 10 steps: the reply held no usable probability" in out


@pytest.mark.parametrize("agent", ("react", "generate"))
def test_the_example_task_runs_and_is_read(tmp_path, agent):
    """examples/inspect_elicit.py with the mock model as the acting model: every turn elicited."""
    from inspect_ai import eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    example = example_module()
    answers = dict(example.QUESTIONS)

    def actor(input, tools, tool_choice, config):
        if input[-1].role == "user" and input[-1].text == PROMPTS.self_report:
            o = ModelOutput.from_content("mock", "probability: 0.6")
        elif not any(m.role == "tool" for m in input):
            o = ModelOutput.for_tool_call("mock", "calculator", {"expression": "6 * 7"})
        else:
            answer = answers[next(m.text for m in input if m.role == "user")]
            o = (ModelOutput.for_tool_call("mock", "submit", {"answer": answer})
                 if any(t.name == "submit" for t in tools) else ModelOutput.from_content("mock", answer))
        o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return o

    model = get_model("mockllm/model", custom_outputs=actor, memoize=False)
    log = eval(example.inspect_elicit(agent=agent), model=model, log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success" and all(s.error is None for s in log.samples)
    assert all(any(m.role == "tool" and m.text == "42" for m in s.messages) for s in log.samples)
    data = tpsviz.load(log.location)
    assert np.array_equal(data.steps["conf_elicited"].to_numpy(), np.full(2 * len(answers), 0.6))
    assert data.trajectories["outcome"].tolist() == [1.0] * len(answers)


def test_an_own_prompt_file_is_what_the_models_are_asked(tmp_path):
    """Elicitor(prompts=PATH): the self-report, the pending tool result and the judge prompt come
    from the file; without ``pending_tool`` the shipped text is used; an empty one is refused."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser
    from inspect_ai.tool import ToolCall

    from tpsviz.forecasts.elicit import Elicitor
    from tpsviz.forecasts.prompts import PENDING_TOOL

    f = tmp_path / "mine.toml"
    f.write_text('self_report = "Odds?"\njudge = "T: {transcript} P?"\npending_tool = "later"\n')
    h = [ChatMessageUser(content="go"),
         ChatMessageAssistant(content="", tool_calls=[ToolCall(id="c1", function="f", arguments={}),
                                                      ToolCall(id="c2", function="g", arguments={"a": 1})])]
    asked = Elicitor(prompts=f).self_report_input(h)
    assert [m.role for m in asked] == ["user", "assistant", "tool", "tool", "user"]
    assert [(m.tool_call_id, m.function, m.text) for m in asked[2:4]] == [("c1", "f", "later"), ("c2", "g", "later")]
    assert asked[-1].text == "Odds?\n" and h[-1].metadata is None and len(h) == 2
    judged = Elicitor(judge="mockllm/model", prompts=f).judge_input(h)
    assert judged[0].text == 'T: ### USER\ngo\n\n### AGENT\n[tool call] f({})\n[tool call] g({"a": 1}) P?\n'
    f.write_text('self_report = "Odds?"\njudge = "{transcript}"\n')
    assert load_prompts(f).pending_tool == PENDING_TOOL
    f.write_text('self_report = "Odds?"\njudge = "{transcript}"\npending_tool = " "\n')
    with pytest.raises(ValueError, match="mine.toml: key 'pending_tool'"):
        load_prompts(f)


def test_the_transcript_reads_inspect_and_openai_messages():
    """The judge renders H_t with the replay's renderer (tpsviz.io.harness.transcripts)."""
    from tpsviz.io.harness.transcripts import render_messages

    inspect_shape = [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": [{"type": "reasoning", "reasoning": "think", "redacted": False},
                                          {"type": "reasoning", "reasoning": "xx", "redacted": True},
                                          {"type": "image", "image": "data:..."}, {"type": "text", "text": "ok"}],
         "tool_calls": [{"id": "1", "function": "search", "arguments": {"q": "é"}}]},
        {"role": "tool", "function": "search", "content": "", "error": {"type": "timeout", "message": "slow"}},
    ]
    assert render_messages(inspect_shape) == (
        "### SYSTEM\nBe brief.\n\n### AGENT\n(reasoning) think\n(reasoning withheld)\n[image]\nok\n"
        '[tool call] search({"q": "é"})\n\n### TOOL RESULT (search) [error]\n(tool error: slow)', False)
    openai_shape = [{"role": "assistant", "content": None,
                     "tool_calls": [{"id": "1", "function": {"name": "book", "arguments": '{"d": 3}'}}]},
                    {"role": "tool", "tool_call_id": "1", "content": "done"}, "not a message"]
    assert render_messages(openai_shape) == (
        '### AGENT\n[tool call] book({"d": 3})\n\n### TOOL RESULT (book)\ndone', False)


def test_a_forced_tool_choice_applies_to_the_first_turn_only(tmp_path):
    """elicit_confidence keeps Inspect's rule: a forced tool_choice, then "auto"; the state's own
    tool_choice is as it was after the solver."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import TaskState, generate, solver, use_tools
    from inspect_ai.tool import ToolFunction

    from tpsviz.forecasts.elicit import elicit_confidence

    seen, after = [], []

    def actor(input, tools, tool_choice, config):
        if input[-1].role == "user" and input[-1].text == PROMPTS.self_report:
            o = ModelOutput.from_content("mock", "probability: 0.5")
        else:
            seen.append(tool_choice)
            o = (ModelOutput.for_tool_call("mock", "calculator", {"expression": "1 + 1"})
                 if len(seen) < 3 else ModelOutput.from_content("mock", "2"))
        o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return o

    @solver
    def remember():
        async def solve(state: TaskState, generate) -> TaskState:
            after.append(state.tool_choice)
            return state

        return solve

    calc = example_module().calculator()
    task = Task(dataset=[Sample(input="1 + 1?", target="2")], scorer=None, solver=elicit_confidence(
        [use_tools([calc], tool_choice=ToolFunction(name="calculator")), generate(), remember()]))
    log = eval(task, model=get_model("mockllm/model", custom_outputs=actor, memoize=False),
               log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success" and log.samples[0].error is None
    assert seen == [ToolFunction(name="calculator"), "auto", "auto"]
    assert after == [ToolFunction(name="calculator")]
    steps = [m for m in log.samples[0].messages if m.role == "assistant"]
    assert [m.metadata[ELICITED_KEY] for m in steps] == [0.5, 0.5, 0.5]


def test_a_failed_question_is_a_missing_value_and_the_run_goes_on(tmp_path):
    """The judge's provider fails (after inspect_ai's retries) for sample b's second question: that
    step's value is missing with the problem "provider error", counted in the store and by the
    reader; the sample itself ends normally, and tpsviz writes the error's type, never its text."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import GenerateConfig, ModelOutput, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools

    from tpsviz.forecasts.elicit import COUNTS_KEY, PROVIDER_ERROR, elicit_confidence

    secret = "QUOTED-CONVERSATION-7c1e"

    def judge(input, tools, tool_choice, config):
        text = input[0].text
        sample, t = _sample_of(text), text.count("### AGENT")
        if (sample, t) == ("b", 2):
            raise RuntimeError(f"provider down while reading {secret}")
        return _out(ModelOutput.from_content("mock", SCRIPT[sample][1][t - 1]))

    model = get_model("mockllm/model", custom_outputs=lambda i, tools, c, g: _agent_turn(i, tools), memoize=False)
    judge_model = get_model("mockllm/model", custom_outputs=judge, memoize=False,
                            config=GenerateConfig(max_retries=0))
    calculator = example_module().calculator
    dataset = [Sample(id=s, input=f"This is sample {s}: add 3 and 5.", target="8") for s in ("a", "b")]
    task = Task(dataset=dataset, solver=elicit_confidence([use_tools([calculator()]), generate()], judge=judge_model),
                scorer=includes(), name="failing_judge")
    log = eval(task, model=model, log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success" and all(s.error is None for s in log.samples)
    b = next(s for s in log.samples if s.id == "b")
    steps = [m for m in b.messages if m.role == "assistant"]
    assert [m.metadata[ELICITED_KEY] for m in steps] == [None, None, 0.1]
    assert [m.metadata.get(ELICITED_PROBLEM_KEY) for m in steps] == ["no number", PROVIDER_ERROR, None]
    assert b.store[COUNTS_KEY]["problems"] == {"no number": 1, PROVIDER_ERROR: 1}
    data = tpsviz.load(log.location)
    assert data.reading["found_forecasts"]["conf_elicited"]["problems"] == {"no number": 1, PROVIDER_ERROR: 1}
    # what tpsviz writes (messages, their metadata, the store, its info event) names the error's type only;
    # inspect_ai's own record of the failed model call keeps the error as the provider gave it
    ours = [m.model_dump_json() for m in b.messages] + [str(b.store)]
    infos = [e.model_dump_json() for e in b.events if e.event == "info"]
    assert any("the confidence question failed (RuntimeError)" in i for i in infos)
    assert not any(secret in t for t in ours + infos)
