"""Issue 47 points 1, 2 and 5: `tpsviz forecast` against servers that behave like the real kinds.

Fake HTTP servers on 127.0.0.1, started here: one that serves chat completions but not the Responses
API (as llama.cpp, vLLM, Ollama and LM Studio do), one that answers 404 everywhere, one that accepts
a request and never answers, one that answers 429 with Retry-After, one that sends a 20 kB reply.
No real provider is called; the key is a dummy in this process's environment only.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from fake_http import JSONHandler, prompt_of, reply_body, run_cli, serve

from tpsviz.forecasts import provider
from tpsviz.forecasts.cache import CUT_MARK, REPLY_CHARS, AnswerCache, cut_reply
from tpsviz.forecasts.replies import parse_probability

ROOT = Path(__file__).resolve().parents[1]
TAU1 = ROOT / "tests" / "fixtures" / "taubench" / "tau1_gpt-4o-airline_trimmed.json"
TAU2 = ROOT / "tests" / "fixtures" / "tau2" / "tau2_airline_qwen2.5-7b_trimmed.json"
DUMMY = "dummy-key-not-a-secret-7c1e"
PROBE = "hello, world"  # inspect_ai's probe of reasoning summaries (Responses API)
TAU1_RUN1 = 5  # agent steps of the fixture's first run


class Server:
    """An OpenAI-compatible server on 127.0.0.1 whose behaviour is chosen per test.

    Parameters
    ----------
    responses : bool
        Whether ``/v1/responses`` is served (else 404, as local servers answer).
    chat : bool
        Whether ``/v1/chat/completions`` is served.
    answer_first : int or None
        Answer this many requests, then hold every later one until :meth:`close` (a stalled server).
    rate_limit : float or None
        Answer the first request with 429 and ``Retry-After`` of this many seconds.
    reply : str or callable
        The text of every answer, or ``reply(prompt)`` giving it.
    usage : dict, optional
        The chat completions' ``usage`` (default 10 prompt tokens, 3 completion tokens).
    """

    def __init__(self, responses=True, chat=True, answer_first=None, rate_limit=None, reply="probability: 0.25",
                 usage=None):
        self.requests: list[tuple[float, str, str]] = []  # (time, path, prompt)
        self.lock, self.stop = threading.Lock(), threading.Event()
        server = self

        class Handler(JSONHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                prompt = prompt_of(body)
                with server.lock:
                    n = sum(1 for r in server.requests if PROBE not in r[2])
                    server.requests.append((time.monotonic(), self.path, prompt))
                served = self.path.endswith("/chat/completions") and chat or self.path.endswith("/responses") \
                    and responses
                if not served:
                    return self.send(404, {"error": {"message": "File Not Found", "type": "not_found_error"}})
                if PROBE not in prompt and answer_first is not None and n >= answer_first:
                    server.stop.wait(60)  # accepts the request and never answers
                    return
                if PROBE not in prompt and rate_limit is not None and n == 0:
                    return self.send(429, {"error": {"message": "slow down", "type": "rate_limit_error"}},
                                     {"Retry-After": f"{rate_limit:g}"})
                return self.send(200, self.shape(body, reply(prompt) if callable(reply) else reply))

            def shape(self, body, text):
                return reply_body(self.path, body, text, usage)

            send = JSONHandler.send_json

        self.httpd, self.url = serve(Handler)

    def asked(self, path_end: str) -> list[tuple[float, str, str]]:
        """The requests (not inspect_ai's probe) to the path ending so."""
        return [r for r in self.requests if r[1].endswith(path_end) and PROBE not in r[2]]

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def env(monkeypatch):
    """A dummy key for the openai/ and openai-api/llama/ forms, no address inherited."""
    for var in ("OPENAI_BASE_URL", "LLAMA_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY)
    monkeypatch.setenv("LLAMA_API_KEY", DUMMY)
    return monkeypatch


def forecast(server, model, out, capsys, *more):
    return run_cli(["forecast", TAU1, "--model", model, "--model-base-url", server.url, "--out", out,
                    "--max-runs", 1, *more], capsys)


# ----------------------------------------------------------------------------- 1. the set-up
def test_requirements_txt_holds_the_forecast_packages_and_import_tpsviz_loads_neither():
    import subprocess
    import sys

    pins = {line.split("==")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")}
    assert {"inspect_ai", "openai"} <= pins
    code = "import sys, tpsviz; print([m for m in sys.modules if m.split('.')[0] in ('inspect_ai', 'openai')])"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_a_missing_provider_package_is_exit_2_with_its_pip_line(env, tmp_path, capsys):
    env.setitem(__import__("sys").modules, "anthropic", None)  # as if `anthropic` were not installed
    out = tmp_path / "f.parquet"
    code, stdout, err = run_cli(["forecast", TAU1, "--model", "anthropic/claude-3-5-haiku-latest", "--out", out,
                                 "--max-runs", 1], capsys)
    assert code == 2 and "Traceback" not in err and "bug in tpsviz" not in err
    assert "anthropic/claude-3-5-haiku-latest: the provider anthropic needs a package that is not installed: " \
           "pip install anthropic" in err
    assert not out.exists()


def test_a_missing_inspect_ai_is_exit_2_with_its_pip_line(env, tmp_path, capsys):
    env.setitem(__import__("sys").modules, "inspect_ai.model", None)
    code, stdout, err = run_cli(["forecast", TAU1, "--model", "openai/gpt-4o-mini", "--out", tmp_path / "f.parquet",
                                 "--max-runs", 1], capsys)
    assert code == 2 and "bug in tpsviz" not in err
    assert "the replay calls models through inspect_ai, which is not installed" in err
    assert err.rstrip().endswith("pip install inspect_ai openai")


def test_install_lines_read_from_inspect_ais_errors():
    from inspect_ai._util.error import PrerequisiteError, pip_dependency_error

    assert provider.install_line(pip_dependency_error("Google API", ["google-genai"])) == "pip install google-genai"
    assert provider.install_line(PrerequisiteError("ERROR: needs version 1.2 of package groq.\n\nUpgrade with: "
                                                   "pip install --upgrade groq")) == "pip install --upgrade groq"
    assert provider.install_line(ModuleNotFoundError("No module named 'mistralai.x'", name="mistralai.x")) \
        == "pip install mistralai"
    assert provider.install_line(ValueError("no key")) is None


# ----------------------------------------------------------------------------- 2. any OpenAI-compatible server
def test_a_server_without_the_responses_api_is_asked_through_chat_completions(env, tmp_path, capsys):
    s = Server(responses=False)
    try:
        out = tmp_path / "f.parquet"
        code, stdout, err = forecast(s, "openai/SmolLM2-135M-Instruct", out, capsys)
        assert code == 0, err
        assert "the server does not serve the Responses API (/v1/responses answered HTTP 404): asked through " \
               "chat completions (/v1/chat/completions) instead" in err
        assert "openai-api/NAME/MODEL" in err and "--chat-completions" in err
        assert len(s.asked("/responses")) == 1  # the first question once, then never again
        assert len(s.asked("/chat/completions")) == TAU1_RUN1
        table = pd.read_parquet(out)
        assert len(table) == TAU1_RUN1 and (table["conf_SmolLM2-135M-Instruct"] == 0.25).all()
        assert "provider errors" not in err
    finally:
        s.close()


@pytest.mark.parametrize("model, more", [("openai/SmolLM2-135M-Instruct", ["--chat-completions"]),
                                         ("openai-api/llama/SmolLM2-135M-Instruct", [])])
def test_the_documented_forms_never_touch_the_responses_api(model, more, env, tmp_path, capsys):
    s = Server(responses=False)
    try:
        code, stdout, err = forecast(s, model, tmp_path / "f.parquet", capsys, *more)
        assert code == 0, err
        assert [r for r in s.requests if r[1].endswith("/responses")] == []
        assert len(s.asked("/chat/completions")) == TAU1_RUN1 and "Responses API" not in err
        assert {r[2].count("### AGENT") for r in s.requests} == set(range(1, TAU1_RUN1 + 1))
    finally:
        s.close()


def test_a_404_everywhere_says_which_form_to_use(env, tmp_path, capsys):
    s = Server(responses=False, chat=False)
    try:
        out = tmp_path / "f.parquet"
        code, stdout, err = forecast(s, "openai-api/llama/SmolLM2-135M-Instruct", out, capsys)
        assert code == 2 and not out.exists()
        assert "HTTP 404 (not found) on 5 prompts: the address serves no such endpoint or model" in err
        assert "--model openai-api/NAME/MODEL --model-base-url http://HOST:PORT/v1 (the address ends in /v1" in err
        assert "the model answered no prompt" in err and DUMMY not in err + stdout
    finally:
        s.close()


def test_chat_completions_is_refused_for_other_providers(env, tmp_path, capsys):
    code, stdout, err = run_cli(["forecast", TAU1, "--model", "anthropic/x", "--out", tmp_path / "f.parquet",
                                 "--chat-completions"], capsys)
    assert code == 2 and "--chat-completions applies to openai/... and openai-api/... models" in err


def test_an_unknown_endpoint_message_counts_as_not_found():
    class Said(Exception):
        def __init__(self, status, message):
            super().__init__(message)
            self.status_code, self.provider_message = status, message

    assert provider.is_not_found(Said(404, "File Not Found"))
    assert provider.is_not_found(Said(400, "Unexpected endpoint or method. (POST /v1/responses)"))
    assert not provider.is_not_found(Said(400, "bad request"))
    assert not provider.is_retriable(Said(404, "x")) and provider.is_retriable(Said(503, "x"))


# ----------------------------------------------------------------------------- 5. no hang, no flood
def test_a_stalled_provider_ends_in_bounded_time_with_exit_2_and_no_table(env, tmp_path, capsys):
    s = Server(answer_first=0)  # accepts every request and never answers
    try:
        out = tmp_path / "f.parquet"
        start = time.monotonic()
        code, stdout, err = run_cli(["forecast", TAU1, "--model", "openai-api/llama/SmolLM2-135M-Instruct",
                                     "--model-base-url", s.url, "--out", out, "--max-runs", 2, "--timeout", 2],
                                    capsys)
        took = time.monotonic() - start
    finally:
        s.close()
    assert code == 2, err
    assert "error: timed out: the model answered none of the 16 prompts within --timeout 2 s; no table was " \
           "written" in err
    assert "after 8 timeouts in a row the provider was taken as not answering" in err
    assert not out.exists() and not any((tmp_path / "f.parquet.cache").rglob("*.json"))
    assert took < 20, took  # 4 requests in flight: two tries of 2 s each and a pause of about 1 s
    print(f"stalled provider: exit 2 after {took:.1f} s")


def test_prompts_that_time_out_stay_missing_and_are_asked_by_the_next_run(env, tmp_path, capsys):
    s = Server(answer_first=3)
    out = tmp_path / "f.parquet"
    args = ["--concurrency", 2, "--timeout", 1]
    try:
        code, stdout, err = forecast(s, "openai-api/llama/m", out, capsys, *args)
    finally:
        s.close()
    assert code == 0, err
    assert "timed out: " in err and "they stay missing: run the command again to ask them" in err
    table = pd.read_parquet(out)
    assert int(table["conf_m"].notna().sum()) == 3 and "no answer yet (provider errors): 2" in stdout
    again = Server()
    try:
        code, stdout, err = forecast(again, "openai-api/llama/m", out, capsys, *args)
    finally:
        again.close()
    assert code == 0 and len(again.asked("/chat/completions")) == 2 and "3 answered in the cache, 2 to ask" in stdout
    assert pd.read_parquet(out)["conf_m"].notna().all()


def test_429_with_retry_after_waits_about_that_long(env, tmp_path, capsys):
    s = Server(rate_limit=2)
    try:
        code, stdout, err = forecast(s, "openai-api/llama/m", tmp_path / "f.parquet", capsys, "--concurrency", 1)
    finally:
        s.close()
    assert code == 0, err
    times = [r[0] for r in s.asked("/chat/completions")]
    assert len(times) == TAU1_RUN1 + 1  # the first prompt twice
    assert 1.9 <= times[1] - times[0] < 4.0, times[1] - times[0]
    assert pd.read_parquet(tmp_path / "f.parquet")["conf_m"].notna().all() and "provider errors" not in err


def test_retry_waits_are_bounded():
    class Limited(Exception):
        def __init__(self, headers):
            super().__init__("429")
            self.status_code = 429
            self.response = type("R", (), {"headers": headers})()

    assert provider.retry_wait(Limited({"retry-after": "3"}), 1) == 3
    assert provider.retry_wait(Limited({"retry-after": "3600"}), 1) == provider.MAX_WAIT
    assert provider.retry_wait(Limited({"retry-after-ms": "1500"}), 1) == 1.5
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 10))
    assert 8 <= provider.retry_wait(Limited({"retry-after": later}), 1) <= 10
    assert 1 <= provider.retry_wait(Limited({}), 1) <= 1.25 and 4 <= provider.retry_wait(Limited({}), 3) <= 5
    assert provider.retry_wait(Limited({}), 20) == provider.MAX_WAIT
    assert provider.is_retriable(Limited({})) and provider.is_timeout(TimeoutError())


def test_a_20_kB_reply_is_cached_cut_to_the_bound(env, tmp_path, capsys):
    long = "word " * 4000 + "probability: 0.6"  # 20,016 characters, the answer at the end
    s = Server(reply=long)
    out = tmp_path / "f.parquet"
    try:
        code, stdout, err = forecast(s, "openai-api/llama/m", out, capsys)
    finally:
        s.close()
    assert code == 0, err
    files = list((tmp_path / "f.parquet.cache").rglob("*.json"))
    assert len(files) == TAU1_RUN1
    for f in files:
        reply = json.loads(f.read_text(encoding="utf-8"))["reply"]
        assert len(reply) == REPLY_CHARS and CUT_MARK in reply and reply.endswith("probability: 0.6")
        assert f.stat().st_size < REPLY_CHARS + 100
    assert (pd.read_parquet(out)["conf_m"] == 0.6).all()
    assert cut_reply(long) == long[:(REPLY_CHARS - len(CUT_MARK)) // 2] + CUT_MARK + long[-(REPLY_CHARS - len(
        CUT_MARK) + 1) // 2:]
    assert parse_probability(CUT_MARK).problem == "no number"  # the mark adds no number
    cache = AnswerCache(tmp_path / "c")
    cache.put("ab" * 32, "short")
    assert cache.get("ab" * 32) == "short"


def _with_first_id(tmp_path, run_id: str):
    """The tau2 fixture with its first simulation's id replaced, written to a new file."""
    log = json.loads(TAU2.read_text(encoding="utf-8"))
    log["simulations"][0]["id"] = run_id
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def test_csv_output_neutralises_a_hostile_id_and_parquet_keeps_it(env, tmp_path, capsys):
    hostile = '=HYPERLINK("http://example.invalid","click")'
    path = _with_first_id(tmp_path, hostile)
    s = Server()
    try:
        for name in ("f.csv", "f.parquet"):
            code, stdout, err = run_cli(["forecast", path, "--model", "openai-api/llama/m", "--model-base-url", s.url,
                                         "--out", tmp_path / name, "--max-runs", 1], capsys)
            assert code == 0, err
    finally:
        s.close()
    text = (tmp_path / "f.csv").read_text(encoding="utf-8")
    rows = text.splitlines()[1:]
    assert rows and all(r.startswith("\"'=HYPERLINK(") for r in rows), rows
    assert not any(r.lstrip('"').startswith(("=", "+", "-", "@")) for r in rows)
    assert set(pd.read_parquet(tmp_path / "f.parquet")["trajectory_id"]) == {hostile}


def test_the_csv_run_says_its_ids_were_neutralised(env, tmp_path, capsys):
    hostile = "=1+1"
    path = _with_first_id(tmp_path, hostile)
    s = Server()
    try:
        code, stdout, err = run_cli(["forecast", path, "--model", "openai-api/llama/m", "--model-base-url", s.url,
                                     "--out", tmp_path / "f.csv", "--max-runs", 1], capsys)
    finally:
        s.close()
    assert code == 0, err
    n = len(pd.read_csv(tmp_path / "f.csv"))
    assert f"{n:,} rows have an id that a spreadsheet would run as a formula: the CSV writes it after a '" in stdout


def test_bad_timeouts_are_refused(env, tmp_path, capsys):
    for value in ("0", "-1", "nan", "5000"):
        code, stdout, err = run_cli(["forecast", TAU1, "--model", "openai/x", "--out", tmp_path / "f.parquet",
                                     "--timeout", value], capsys)
        assert code == 2 and "--timeout must be between 1 and 3600 seconds" in err


def test_the_retry_is_the_replays_own_not_the_clients(env, tmp_path):
    """inspect_ai and the OpenAI client are told not to retry: the one retry after a 429 is counted
    by the replay (whose pause honours Retry-After), and a 400 is not tried again."""
    from tpsviz.forecasts.prompts import load_prompts
    from tpsviz.forecasts.replay import ask_model, build_questions, open_model, select_runs
    from tpsviz.io.harness.transcripts import read_transcripts

    questions = build_questions(select_runs(read_transcripts(TAU1)[0], max_runs=1), load_prompts(), "openai-api/llama/m")
    s = Server(rate_limit=1)
    try:
        model = open_model("openai-api/llama/m", s.url, concurrency=1, timeout=5)
        result = ask_model(model, questions[:2], AnswerCache(tmp_path / "c"), concurrency=1, timeout=5)
    finally:
        s.close()
    assert (result.answered, result.retries, len(s.asked("/chat/completions"))) == (2, 1, 3)
