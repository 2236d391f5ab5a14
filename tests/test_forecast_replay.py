"""Issue 34 point 3: `python -m tpsviz forecast LOG --model P/M --out FILE` replays finished logs.

No real provider is called: inspect_ai's mock model, and a fake OpenAI-compatible HTTP server
started here (chat completions and the Responses API, as inspect_ai 0.3.285 posts them). Every
count is recomputed from the raw JSON with plain loops; the prompts the server received are
checked message by message with markers planted in a copy of a real tau-bench log.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fake_http import JSONHandler, prompt_of, reply_body, run_cli, serve

from tpsviz.forecasts.cache import AnswerCache, answer_key
from tpsviz.forecasts.prompts import load_prompts
from tpsviz.forecasts.replay import (ask_model, build_questions, column_name, forecast_table, open_model,
                                     select_runs)
from tpsviz.io.harness.transcripts import Transcript, read_transcripts, render_prefix

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
TAU1 = FIX / "taubench" / "tau1_gpt-4o-airline_trimmed.json"
TAU2 = FIX / "tau2" / "tau2_airline_qwen2.5-7b_trimmed.json"
TAU2_DIR = FIX / "tau2" / "tau2v1_airline_whissle_dirlayout"
INSPECT = FIX / "inspect" / "2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval"
SECRET = "sk-test-SECRET-4f9a1c0e7b2d"
MARK = re.compile(r"<<r(\d+)m(\d+)>>")
REWARD_SENTINEL = "REWARD-SENTINEL-93ab"


# ----------------------------------------------------------------------------- independent views
def tau1_steps(records: list) -> dict:
    """(trajectory_id -> agent steps) of a tau-bench list, by the harness's rules, in plain Python."""
    out = {}
    for rec in records:
        info = rec.get("info")
        if isinstance(info, str) or (isinstance(info, dict) and info.get("error") is not None):
            continue  # crashed: dropped
        n = sum(1 for m in rec["traj"] if m.get("role") == "assistant")
        if n:
            out[f"{rec['task_id']}-{rec['trial']}"] = n
    return out


def tau2_steps(obj: dict) -> dict:
    kept = {"user_stop", "agent_stop", "max_steps", "timeout", "context_window_exceeded", "too_many_errors",
            "agent_error", "user_error"}
    out = {}
    for sim in obj["simulations"]:
        n = sum(1 for m in sim["messages"] if m["role"] == "assistant")
        if sim["termination_reason"] in kept and n:
            out[str(sim["id"])] = n
    return out


def tau2_dir_steps(folder: Path) -> dict:
    """The same count for a tau2-bench folder layout: one simulation a file under simulations/."""
    sims = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((folder / "simulations").glob("*.json"))]
    return tau2_steps({"simulations": sims})


def inspect_steps(obj: dict) -> dict:
    out = {}
    for s in obj["samples"]:
        if s.get("error") or not s.get("scores"):
            continue
        n = sum(1 for m in s["messages"] if m["role"] == "assistant")
        if n:
            out[f"{s['id']}-epoch{s['epoch']}"] = n
    return out


def marked_tau1(path: Path) -> tuple[Path, dict]:
    """A copy of the tau-bench fixture whose every message ends with a marker <<r{run}m{index}>>, and
    whose reward_info holds a sentinel; returns the file and {run: (trajectory id, indices of its
    assistant messages)}."""
    records = json.loads(TAU1.read_text(encoding="utf-8"))
    runs = {}
    for r, rec in enumerate(records):
        for i, m in enumerate(rec["traj"]):
            m["content"] = f"{m.get('content') or ''} <<r{r}m{i}>>"
        if isinstance(rec["info"], dict) and rec["info"].get("reward_info") is not None:
            rec["info"]["reward_info"]["note"] = REWARD_SENTINEL
        rec["info"]["note"] = REWARD_SENTINEL
        runs[r] = (f"{rec['task_id']}-{rec['trial']}",
                   [i for i, m in enumerate(rec["traj"]) if m.get("role") == "assistant"])
    path.write_text(json.dumps(records), encoding="utf-8")
    return path, runs


def reply_for(prompt: str) -> str:
    """The fake model's deterministic reply: mostly a probability, sometimes malformed."""
    h = int(hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:8], 16)
    if h % 9 == 0:
        return "I cannot tell from this."
    if h % 13 == 0:
        return "probability: 85"
    return f"Thinking... probability: {h % 1000 / 1000:.3f}"


def expected_value(reply: str) -> float:
    """What the table must hold for a reply of :func:`reply_for` (written here, not parsed by tpsviz)."""
    if reply.startswith("Thinking... probability: "):
        return float(reply.rsplit(" ", 1)[1])
    return math.nan


# ----------------------------------------------------------------------------- a fake provider
class FakeServer:
    """An OpenAI-compatible server on 127.0.0.1: /v1/chat/completions and /v1/responses. Records every
    prompt; after ``hold_after`` answers it holds further requests until :meth:`release`."""

    def __init__(self, hold_after: int | None = None, fail_on: str | None = None):
        self.prompts: list[str] = []
        self.auth: set[str] = set()
        self.hold_after = hold_after
        self.fail_on = fail_on
        self.released = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(JSONHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                server.auth.add(self.headers.get("Authorization", ""))
                prompt = prompt_of(body)
                if "hello, world" in prompt:  # inspect_ai's probe of reasoning summaries
                    return self.answer(self.shape(body, "hello, world"))
                with server.lock:
                    n = len(server.prompts)
                    server.prompts.append(prompt)
                if server.hold_after is not None and n >= server.hold_after:
                    server.released.wait(60)
                    return self.answer({"error": {"message": "released"}}, 503)
                if server.fail_on and server.fail_on in prompt:
                    return self.answer({"error": {"message": "bad request", "type": "invalid_request_error"}}, 400)
                return self.answer(self.shape(body, reply_for(prompt)))

            def shape(self, body: dict, text: str) -> dict:
                return reply_body(self.path, body, text)

            def answer(self, obj: dict, status: int = 200):
                self.send_json(status, obj)

        self.httpd, self.url = serve(Handler)

    def release(self):
        self.released.set()

    def close(self):
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    s = FakeServer()
    monkeypatch.setenv("OPENAI_BASE_URL", s.url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    yield s
    s.close()


def all_written_text(folder: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in folder.rglob("*") if p.is_file()]


# ----------------------------------------------------------------------------- transcripts
@pytest.mark.parametrize("path, truth", [
    (TAU1, lambda: tau1_steps(json.loads(TAU1.read_text(encoding="utf-8")))),
    (FIX / "taubench" / "tau1fork_assertions-agent_retail_errors_trimmed.json",
     lambda: tau1_steps(json.loads((FIX / "taubench" / "tau1fork_assertions-agent_retail_errors_trimmed.json")
                                   .read_text(encoding="utf-8")))),
    (TAU2, lambda: tau2_steps(json.loads(TAU2.read_text(encoding="utf-8")))),
    (FIX / "tau2" / "tau2_airline_gpt-oss-120b_langchain_trimmed.json",
     lambda: tau2_steps(json.loads((FIX / "tau2" / "tau2_airline_gpt-oss-120b_langchain_trimmed.json")
                                   .read_text(encoding="utf-8")))),
])
def test_transcripts_have_the_readers_ids_and_steps(path, truth):
    transcripts, _ = read_transcripts(path)
    assert {t.trajectory_id: t.steps for t in transcripts} == truth()


@pytest.mark.parametrize("path", [TAU2_DIR, TAU2_DIR / "results.json"])
def test_a_tau2_folder_layout_is_replayed_from_the_folder_or_its_index(path):
    truth = tau2_dir_steps(TAU2_DIR)
    assert len(truth) == 5 and sum(truth.values()) > len(truth)
    transcripts, reading = read_transcripts(path)
    assert {t.trajectory_id: t.steps for t in transcripts} == truth
    assert reading["format"] == "tau2-bench"


def test_inspect_transcripts_have_the_readers_ids_and_steps(inspect_logs):
    truth = inspect_steps(json.loads(inspect_logs["json"].read_text(encoding="utf-8")))
    assert sum(truth.values()) > len(truth)  # some runs have several steps
    for kind in ("eval", "json", "chunked"):
        transcripts, _ = read_transcripts(inspect_logs[kind])
        assert {t.trajectory_id: t.steps for t in transcripts} == truth, kind
    transcripts, _ = read_transcripts(INSPECT)
    assert [(t.trajectory_id, t.steps) for t in transcripts] == [("1-epoch1", 1)]


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    from inspect_logs import write_logs_in_subprocess as write_logs

    return write_logs(tmp_path_factory.mktemp("inspect"))


def test_a_prefix_holds_the_messages_up_to_step_t_and_nothing_after(tmp_path):
    path, runs = marked_tau1(tmp_path / "marked.json")
    transcripts, _ = read_transcripts(path)
    by_id = {t.trajectory_id: t for t in transcripts}
    for r, (tid, agent) in runs.items():
        tr = by_id[tid]
        assert tr.steps == len(agent)
        for t, idx in enumerate(agent, start=1):
            text, cut = render_prefix(tr, t, max_chars=10**7)
            assert not cut and REWARD_SENTINEL not in text
            assert [(int(a), int(b)) for a, b in MARK.findall(text)] == [(r, i) for i in range(idx + 1)]


def test_a_long_prefix_keeps_the_beginning_the_task_statement_and_the_end():
    messages = ({"role": "system", "content": "policy " * 2000}, {"role": "user", "content": "TASK: rebook me"},
                *({"role": "assistant", "content": f"step {i} " + "x" * 500} for i in range(30)))
    tr = Transcript("a", messages, tuple(range(3, 33)))
    text, cut = render_prefix(tr, 30, max_chars=4000)
    full, _ = render_prefix(tr, 30, max_chars=10**7)
    assert cut and len(text) < 4000 + 200
    assert "TASK: rebook me" in text and "step 29" in text
    assert text.startswith(full[:4000 // 3])  # the transcript's beginning (the system prompt's start)
    left = int(re.search(r"\[… ([\d,]+) characters", text).group(1).replace(",", ""))
    tail = text.split("left out …]\n\n", 1)[1]
    assert 4000 // 3 + left + len(tail) == len(full) and full.endswith(tail) and len(tail) > 1000
    short, cut = render_prefix(tr, 1, max_chars=10**7)
    assert not cut and "step 1 " not in short and "step 0 " in short


def test_tool_calls_and_results_are_in_the_prefix():
    transcripts, _ = read_transcripts(TAU2)
    tr = next(t for t in transcripts if any(m.get("role") == "tool" for m in t.messages))
    first_tool = next(i for i, m in enumerate(tr.messages) if m.get("role") == "tool")
    t = next(k for k, e in enumerate(tr.ends, start=1) if e > first_tool)
    text, _ = render_prefix(tr, t, max_chars=10**7)
    call = tr.messages[first_tool - 1]["tool_calls"][0]
    assert f"[tool call] {call['name']}(" in text
    assert f"### TOOL RESULT ({call['name']})" in text
    assert tr.messages[first_tool]["content"].strip()[:200] in text


# ----------------------------------------------------------------------------- the cache key
def test_the_cache_key_follows_prefix_model_and_prompt(tmp_path):
    prompts = load_prompts()
    edited = tmp_path / "p.toml"
    edited.write_text('self_report = "x"\njudge = "Say it. {transcript}"\n', encoding="utf-8")
    keys = {answer_key("H", "openai/a", prompts.digest), answer_key("H2", "openai/a", prompts.digest),
            answer_key("H", "openai/b", prompts.digest), answer_key("H", "openai/a", load_prompts(edited).digest)}
    assert len(keys) == 4
    assert answer_key("ab", "c", "d") != answer_key("a", "bc", "d")


# ----------------------------------------------------------------------------- the mock model
def mock_outputs(replies: dict, raise_on: str | None = None):
    """A mock model answering by the last marker <<r..m..>> of the prompt."""
    from inspect_ai.model import ModelOutput, ModelUsage

    def reply(input, tools, tool_choice, config):
        text = input[-1].text
        if raise_on and raise_on in text:
            raise RuntimeError(f"simulated provider failure {SECRET}")
        out = ModelOutput.from_content(model="mockllm/model", content=replies(text))
        out.usage = ModelUsage(input_tokens=10, output_tokens=3, total_tokens=13)
        return out

    return reply


def test_mock_model_malformed_replies_are_missing_and_listed(tmp_path):
    path, runs = marked_tau1(tmp_path / "marked.json")
    transcripts = select_runs(read_transcripts(path)[0], max_runs=2)
    questions = build_questions(transcripts, load_prompts(), "mockllm/model", max_chars=10**7)
    cycle = ["probability: 0.7", "I'd say 35%", "no idea", "probability: 7", "", "0.2 or 0.3"]

    def replies(text):
        r, m = map(int, MARK.findall(text)[-1])
        return cycle[m % len(cycle)]

    cache = AnswerCache(tmp_path / "cache")
    model = open_model("mockllm/model", custom_outputs=mock_outputs(replies))
    result = ask_model(model, questions, cache, concurrency=3)
    assert (result.asked, result.answered, sum(result.errors.values())) == (len(questions), len(questions), 0)
    table, problems, unanswered = forecast_table(questions, cache, "conf_mock")
    assert unanswered == 0 and len(table) == len(questions)
    want = {0: 0.7, 1: 0.35, 2: None, 3: None, 4: None, 5: None}
    names = {2: "no number", 3: "out of range", 4: "empty reply", 5: "several numbers"}
    expected_problems: dict = {}
    for q in questions:
        r, m = map(int, MARK.findall(q.prompt)[-1])
        got = table.loc[(table.trajectory_id == q.trajectory_id) & (table.step == q.step), "conf_mock"].item()
        v = want[m % 6]
        assert (v is None and np.isnan(got)) or got == pytest.approx(v, abs=0)
        if v is None:
            expected_problems.setdefault(names[m % 6], []).append((q.trajectory_id, q.step))
    assert {k: sorted(v) for k, v in problems.items()} == {k: sorted(v) for k, v in expected_problems.items()}


def test_mock_model_provider_error_is_counted_and_asked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_API_KEY", SECRET)  # a secret in the environment is never repeated
    path, runs = marked_tau1(tmp_path / "marked.json")
    transcripts = select_runs(read_transcripts(path)[0], max_runs=1)
    questions = build_questions(transcripts, load_prompts(), "mockllm/model", max_chars=10**7)
    tid, agent = runs[0]
    bad = f"<<r0m{agent[1]}>>"  # the prompt of step 2 ends with it (later steps hold it too)
    cache = AnswerCache(tmp_path / "cache")
    asked = []

    def replies(text):
        asked.append(MARK.findall(text)[-1])
        return "probability: 0.5"

    model = open_model("mockllm/model", custom_outputs=mock_outputs(replies, raise_on=bad))
    result = ask_model(model, questions, cache)
    failing = [q for q in questions if bad in q.prompt]
    assert result.errors == {"RuntimeError": len(failing)} and result.answered == len(questions) - len(failing)
    assert SECRET not in result.first_error and "<redacted>" in result.first_error
    table, _, unanswered = forecast_table(questions, cache, "conf_mock")
    assert unanswered == len(failing) and int(table["conf_mock"].isna().sum()) == len(failing)
    asked.clear()
    model = open_model("mockllm/model", custom_outputs=mock_outputs(replies))
    again = ask_model(model, questions, cache)
    assert again.asked == len(failing) == len(asked) and not again.errors
    assert forecast_table(questions, cache, "conf_mock")[0]["conf_mock"].notna().all()


def test_column_names():
    assert column_name("openai/gpt-4o-mini") == "conf_gpt-4o-mini"
    assert column_name("openai-api/deepseek/deepseek-chat") == "conf_deepseek-chat"
    assert column_name("openai/x", "judge") == "conf_judge"
    with pytest.raises(ValueError, match="name="):
        column_name("openai/x", "a__b")


# ----------------------------------------------------------------------------- the fake server, end to end
@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "openai/gpt-5-mini"])  # chat completions, Responses API
def test_forecast_against_a_fake_server_writes_a_table_score_reads(model, server, tmp_path, capsys):
    path, runs = marked_tau1(tmp_path / "marked.json")
    out = tmp_path / "forecasts.parquet"
    code, stdout, err = run_cli(["forecast", path, "--model", model, "--out", out, "--max-chars", 10**7,
                                 "--concurrency", 3], capsys)
    assert code == 0, err
    truth = tau1_steps(json.loads(path.read_text(encoding="utf-8")))
    n_steps = sum(truth.values())
    assert f"{n_steps} agent steps = prompts" in stdout
    assert server.auth == {f"Bearer {SECRET}"}  # the key was used (so the grep below means something)
    assert len(server.prompts) == len(set(server.prompts)) == n_steps
    seen = {}
    for prompt in server.prompts:  # each prompt: one run's messages 0..k, k an agent message; no reward
        marks = [(int(a), int(b)) for a, b in MARK.findall(prompt)]
        r, k = marks[-1]
        assert marks == [(r, i) for i in range(k + 1)] and REWARD_SENTINEL not in prompt
        tid, agent = runs[r]
        seen[(tid, agent.index(k) + 1)] = expected_value(reply_for(prompt))
    table = pd.read_parquet(out)
    name = column_name(model)
    assert list(table.columns) == ["trajectory_id", "step", name] and len(table) == n_steps
    assert {k: v for k, v in table.groupby("trajectory_id").size().items()} == truth
    assert list(zip(table.trajectory_id, table.step)) == sorted(seen)
    for tid, step, v in zip(table.trajectory_id, table.step, table[name]):
        want = seen[(tid, step)]
        assert (np.isnan(want) and np.isnan(v)) or v == want
    assert table[name].isna().any() and table[name].notna().sum() > n_steps // 2
    code, stdout, err = run_cli(["score", path, "--forecasts", out, "--n-boot", "0"], capsys)
    assert code == 0, err
    assert name.removeprefix("conf_") in stdout
    for p, data in all_written_text(tmp_path):
        assert SECRET.encode() not in data, p


def test_csv_output_and_a_second_run_asks_nothing(server, tmp_path, capsys):
    out = tmp_path / "f.csv"
    args = ["forecast", TAU2, "--model", "openai/gpt-4o-mini", "--out", out, "--sample", 4, "--seed", 7]
    code, stdout, err = run_cli(args, capsys)
    assert code == 0, err
    first = out.read_bytes()
    n = len(server.prompts)
    truth = tau2_steps(json.loads(TAU2.read_text(encoding="utf-8")))
    table = pd.read_csv(out, dtype={"trajectory_id": str})
    assert table.trajectory_id.nunique() == 4
    assert table.groupby("trajectory_id").size().to_dict() == {k: truth[k] for k in table.trajectory_id.unique()}
    assert n <= len(table)  # repeated prefixes (the agent's greeting) are asked once
    code, stdout, err = run_cli(args, capsys)
    assert code == 0 and len(server.prompts) == n and f"{n:,} answered in the cache, 0 to ask" in stdout
    assert out.read_bytes() == first
    code, stdout, err = run_cli(["score", TAU2, "--forecasts", out, "--n-boot", "0"], capsys)
    assert code == 0, err
    assert "runs have no forecast in the table" in stdout + err


def test_forecast_of_an_inspect_log_joins_and_scores(inspect_logs, server, tmp_path, capsys):
    truth = inspect_steps(json.loads(inspect_logs["json"].read_text(encoding="utf-8")))
    for kind in ("eval", "chunked"):
        out = tmp_path / f"{kind}.parquet"
        code, stdout, err = run_cli(["forecast", inspect_logs[kind], "--model", "openai/gpt-4o-mini", "--out", out,
                                     "--name", "judge"], capsys)
        assert code == 0, err
        table = pd.read_parquet(out)
        assert table.groupby("trajectory_id").size().to_dict() == truth
        code, stdout, err = run_cli(["score", inspect_logs[kind], "--forecasts", out, "--n-boot", "0", "--json"],
                                    capsys)
        assert code == 0, err
        assert "judge" in json.loads(stdout)["predictors"]
    assert (tmp_path / "eval.parquet").read_bytes() == (tmp_path / "chunked.parquet").read_bytes()


def test_forecast_of_a_tau2_folder_joins_and_scores(server, tmp_path, capsys):
    out = tmp_path / "f.parquet"
    code, stdout, err = run_cli(["forecast", TAU2_DIR, "--model", "openai/gpt-4o-mini", "--out", out], capsys)
    assert code == 0, err
    table = pd.read_parquet(out)
    assert table.groupby("trajectory_id").size().to_dict() == tau2_dir_steps(TAU2_DIR)
    code, stdout, err = run_cli(["score", TAU2_DIR, "--forecasts", out, "--n-boot", "0", "--json"], capsys)
    assert code == 0, err
    assert "gpt-4o-mini" in json.loads(stdout)["predictors"]


def test_dry_run_calls_nothing_and_writes_nothing(server, tmp_path, capsys):
    out = tmp_path / "f.parquet"
    code, stdout, err = run_cli(["forecast", TAU1, "--model", "openai/gpt-4o-mini", "--out", out, "--dry-run",
                                 "--max-runs", 3], capsys)
    assert code == 0, err
    records = json.loads(TAU1.read_text(encoding="utf-8"))
    n = sum(list(tau1_steps(records).values())[:3])
    assert f"3 of 18 runs, {n} agent steps = prompts" in stdout
    tokens = int(re.search(r"about ([\d,]+) input tokens", stdout).group(1).replace(",", ""))
    assert 1_000 < tokens < 10**7 and "dry run: no model was called" in stdout
    assert server.prompts == [] and list(tmp_path.iterdir()) == []


def test_provider_errors_are_counted_not_fatal(monkeypatch, tmp_path, capsys):
    s = FakeServer(fail_on="<<r0m")
    monkeypatch.setenv("OPENAI_BASE_URL", s.url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    try:
        path, runs = marked_tau1(tmp_path / "marked.json")
        out = tmp_path / "f.parquet"
        code, stdout, err = run_cli(["forecast", path, "--model", "openai/gpt-4o-mini", "--out", out,
                                     "--max-runs", 2, "--max-chars", 10**7], capsys)
        assert code == 0, err
        assert "ModelGenerateError" in err and "HTTP 400: " in err and "bad request" in err
        assert SECRET not in err + stdout and "airline" not in err  # nothing of the log is echoed
        n0 = len(runs[0][1])
        assert f"no answer yet (provider errors): {n0}" in stdout
        table = pd.read_parquet(out)
        assert int(table.loc[table.trajectory_id == runs[0][0], "conf_gpt-4o-mini"].isna().sum()) == n0
    finally:
        s.close()


@pytest.mark.parametrize("args, words", [
    (["forecast", ROOT / "demo_data" / "tau2-like.csv", "--model", "openai/x", "--out", "f.parquet"],
     "the replay needs the messages of a harness log"),
    (["forecast", TAU2, "--model", "nosuch/x", "--out", "OUT"], "nosuch/x: cannot be used"),
    (["forecast", TAU2, "--model", "gpt-4o", "--out", "OUT"], "write it as PROVIDER/MODEL"),
    (["forecast", FIX / "tau2", "--model", "openai/x", "--out", "OUT"], "is a folder without results.json"),
    (["forecast", TAU2, "--model", "openai/x", "--out", "f.txt"], "name a .parquet or .csv file"),
    (["forecast", TAU2, "--model", "openai/x", "--out", "OUT", "--concurrency", "0"], "--concurrency"),
    (["forecast", FIX / "inspect" / "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval",
      "--model", "openai/x", "--out", "OUT"], "no run is left to score"),
])
def test_bad_input_exits_2_with_a_message(args, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [str(tmp_path / "f.parquet") if a == "OUT" else a for a in args]
    code, stdout, err = run_cli(args, capsys)
    assert code == 2 and words in err and "Traceback" not in err
    assert not (tmp_path / "f.parquet").exists()


# ----------------------------------------------------------------------------- a killed run resumes
def test_a_killed_run_resumes_with_the_same_bytes_and_no_repeated_call(tmp_path):
    path, runs = marked_tau1(tmp_path / "marked.json")
    k = 7
    s = FakeServer(hold_after=k)
    xdg = tmp_path / "home"
    env = {**os.environ, "OPENAI_BASE_URL": s.url, "OPENAI_API_KEY": SECRET, "HOME": str(xdg),
           "XDG_CACHE_HOME": str(xdg / "cache"), "XDG_DATA_HOME": str(xdg / "data"),
           "XDG_CONFIG_HOME": str(xdg / "config"), "INSPECT_LOG_DIR": str(xdg / "logs"),
           "PYTHONPATH": str(ROOT)}
    out, cache = tmp_path / "f.parquet", tmp_path / "answers"
    cmd = [sys.executable, "-m", "tpsviz", "forecast", str(path), "--model", "openai/gpt-4o-mini",
           "--out", str(out), "--cache", str(cache), "--max-runs", 3, "--concurrency", 1]
    cmd = [str(c) for c in cmd]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.time() + 120
        while len(s.prompts) <= k and time.time() < deadline:
            time.sleep(0.05)
        assert len(s.prompts) == k + 1  # k answered, the next one held
        time.sleep(0.3)
        proc.kill()
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        s.close()
    assert not out.exists()
    stored = [p for p in cache.rglob("*.json")]
    assert len(stored) == k
    s2 = FakeServer()
    try:
        env["OPENAI_BASE_URL"] = s2.url
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        n_prompts = sum(len(runs[r][1]) for r in range(3))
        assert len(s2.prompts) == n_prompts - k and not set(s2.prompts) & set(s.prompts[:k])
        assert f"{k:,} answered in the cache, {n_prompts - k:,} to ask" in done.stdout
        resumed = out.read_bytes()
        fresh = [*cmd[:cmd.index("--out") + 1], str(tmp_path / "g.parquet"), "--cache", str(tmp_path / "other"),
                 *cmd[cmd.index("--max-runs"):]]
        again = subprocess.run(fresh, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert (tmp_path / "g.parquet").read_bytes() == resumed
    finally:
        s2.close()
    for p, data in all_written_text(tmp_path):
        assert SECRET.encode() not in data, p
    for text in (stdout, stderr, done.stdout, done.stderr, again.stdout, again.stderr):
        assert SECRET not in text


def test_the_replay_runs_its_calls_also_where_an_event_loop_is_already_running():
    """A notebook (or a test session with a browser open) runs a loop in the caller's thread, where
    asyncio.run refuses: run_coroutine then runs the calls in a thread of its own."""
    import asyncio

    from tpsviz.forecasts.replay import run_coroutine

    async def answer(x):
        await asyncio.sleep(0)
        return x * 2

    async def boom():
        raise KeyError("inner")

    async def caller():
        assert run_coroutine(answer(21)) == 42
        with pytest.raises(KeyError, match="inner"):
            run_coroutine(boom())
        return "ok"

    assert run_coroutine(answer(1)) == 2  # no loop: asyncio.run
    assert asyncio.run(caller()) == "ok"


def test_forecast_of_a_trace_file_joins_and_scores(server, tmp_path, capsys):
    """Issue 36: the replay reads a trace file's runs with the same mapping as `score` (one run a
    trace, the model calls as steps, tool results as context) and its table joins as it is."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from test_traces_otlp import _record

    spans, truth = _record(n_runs=12, seed=3)
    path = tmp_path / "traces.json"
    path.write_text(MessageToJson(encode_spans(spans)))
    mapping = ["--outcome", "app.success", "--censor-when", "app.stop=max_turns"]
    kept = {r["id"]: len(r["confs"]) for r in truth if r["outcome"] is not None or r["censored"]}
    out = tmp_path / "f.parquet"
    code, stdout, err = run_cli(["forecast", path, "--model", "openai/gpt-4o-mini", "--out", out, *mapping], capsys)
    assert code == 0, err
    table = pd.read_parquet(out)
    assert table.groupby("trajectory_id").size().to_dict() == kept
    assert not any("app.success" in p or "max_turns" in p for p in server.prompts)  # no outcome in a prompt
    assert any("[tool call] lookup" in p for p in server.prompts)
    code, stdout, err = run_cli(["score", path, "--forecasts", out, "--n-boot", "0", "--json", *mapping], capsys)
    assert code == 0, err
    assert "gpt-4o-mini" in json.loads(stdout)["predictors"]
    code, stdout, err = run_cli(["forecast", path, "--model", "openai/gpt-4o-mini", "--out", out], capsys)
    assert code == 2 and "names no outcome" in err
