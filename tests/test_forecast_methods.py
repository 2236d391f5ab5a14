"""Issue 47 point 3: `tpsviz forecast --method` (verbal, ptrue, consistency, combined) against fake
chat-completions servers: one that returns token logprobs in the OpenAI chat-completions format
(``choices[0].logprobs.content[0].top_logprobs``) and one that returns none.

Every expected value is computed here from what the server sent (the softmax of its logprobs, numpy's
mean and sd of its samples) or by scikit-learn fitted per fold in a plain loop. No real provider is
called; the key is a dummy in this process's environment only.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fake_http import JSONHandler, prompt_of, run_cli, serve

from tpsviz.forecasts.methods import NO_LOGPROBS, NO_YES_NO, key_model, method_prompts, p_true
from tpsviz.forecasts.prompts import load_prompts
from tpsviz.forecasts.references import run_folds
from tpsviz.forecasts.replay import build_questions, select_runs
from tpsviz.forecasts.replies import parse_probability
from tpsviz.forecasts.stack import MIN_EACH, MIN_RUNS, combined_forecast
from tpsviz.io.harness.transcripts import DEFAULT_MAX_CHARS, read_transcripts

ROOT = Path(__file__).resolve().parents[1]
TAU1 = ROOT / "tests" / "fixtures" / "taubench" / "tau1_gpt-4o-airline_trimmed.json"
DUMMY = "dummy-key-not-a-secret-5b2d"
MODEL = "openai-api/llama/SmolLM2-135M-Instruct"
RUNS = 3  # --max-runs of the command-line tests
YES_FORMS, NO_FORMS = (" Yes", "Yes", "yes", "YES"), (" No", "No", "no", "NO")


class LogprobServer:
    """A chat-completions server on 127.0.0.1 that records everything it sends.

    A request with ``logprobs`` gets one token and, when ``logprobs`` is True, 20 alternatives
    (some Yes and No variants among other tokens, drawn per prompt); ``with_yes_no=False`` sends
    alternatives without any Yes or No. A sampled request (``temperature`` > 0) gets a random
    ``probability: X`` (one in eight is unreadable); any other request ``{"probability": X}``.
    """

    def __init__(self, logprobs=True, with_yes_no=True, refuse_schema=False, json_object_ok=False):
        self.lock = threading.Lock()
        self.refused: list = []  # the bodies answered with the refusal
        self.top: dict[str, list] = {}  # prompt -> the (token, logprob) alternatives sent
        self.samples: dict[str, list] = {}  # prompt -> the sampled values sent (None: unreadable)
        self.verbal: dict[str, float] = {}
        self.bodies: list[dict] = []
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        server = self

        class Handler(JSONHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                prompt = prompt_of(body)
                rng = np.random.default_rng(abs(hash((prompt, len(server.bodies)))) % 2**32)
                form = (body.get("response_format") or {}).get("type")
                if refuse_schema and form and not (json_object_ok and form == "json_object"):  # no such output
                    with server.lock:
                        server.refused.append(body)
                    return self.send_json(400 if refuse_schema is True else int(refuse_schema),
                                          {"error": {"message": "response_format is not supported"}})
                with server.lock:
                    server.bodies.append(body)
                    text, choice = server.answer(body, prompt, rng, logprobs, with_yes_no)
                    usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": 1 + len(text) // 4}
                    for k, v in usage.items():
                        server.usage[k] += v
                self.send_json(200, {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                                     "choices": [{"index": 0, "finish_reason": "stop", **choice,
                                                  "message": {"role": "assistant", "content": text}}],
                                     "usage": {**usage, "total_tokens": sum(usage.values())}})

        self.httpd, self.url = serve(Handler)

    def answer(self, body, prompt, rng, logprobs, with_yes_no):
        if body.get("logprobs"):
            if not logprobs:
                return "Yes", {}
            words = [f"w{i}" for i in range(20)]
            if with_yes_no:
                words[:4] = [YES_FORMS[rng.integers(4)], NO_FORMS[rng.integers(4)], "Yes.", "no"]
            lp = rng.normal(-3, 2, size=20)
            top = [[w, float(v)] for w, v in zip(words, lp)]
            self.top[prompt] = top
            first = {"token": top[0][0], "logprob": top[0][1], "bytes": None,
                     "top_logprobs": [{"token": w, "logprob": v, "bytes": None} for w, v in top]}
            return top[0][0], {"logprobs": {"content": [first], "refusal": None}}
        x = round(float(rng.uniform()), 3)
        if (body.get("temperature") or 0) > 0:
            readable = rng.uniform() > 0.125
            self.samples.setdefault(prompt, []).append(x if readable else None)
            return (f"Considering the errors so far, probability: {x}" if readable else "It is hard to say."), {}
        self.verbal[prompt] = x
        return json.dumps({"probability": x}), {}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def env(monkeypatch):
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    monkeypatch.setenv("LLAMA_API_KEY", DUMMY)
    return monkeypatch


def forecast(server, out, capsys, *more):
    return run_cli(["forecast", TAU1, "--model", MODEL, "--model-base-url", server.url, "--out", out,
                    "--max-runs", RUNS, "--name", "m", *more], capsys)


def prompts_by_row(method):
    """(trajectory_id, step) -> the prompt the command sends for ``method`` (built as it builds them)."""
    runs = select_runs(read_transcripts(TAU1)[0], RUNS)
    qs = build_questions(runs, method_prompts(load_prompts(), method), key_model(MODEL, method, 0), DEFAULT_MAX_CHARS)
    return {(q.trajectory_id, q.step): q.prompt for q in qs}


def softmax_yes(top):
    """P(Yes) computed here: exp of each Yes and No form's logprob, Yes over both."""
    yes = sum(math.exp(v) for w, v in top if w.strip(" .").lower() == "yes")
    no = sum(math.exp(v) for w, v in top if w.strip(" .").lower() == "no")
    return yes / (yes + no)


# ----------------------------------------------------------------------------- the command, end to end
def test_every_method_against_a_server_that_returns_logprobs(env, tmp_path, capsys):
    s = LogprobServer()
    try:
        out = tmp_path / "f.parquet"
        code, stdout, err = forecast(s, out, capsys, "--method", "verbal", "--method", "ptrue", "--method",
                                     "consistency", "--method", "combined", "--samples", 4)
        assert code == 0, err
    finally:
        s.close()
    table = pd.read_parquet(out)
    assert list(table.columns) == ["trajectory_id", "step", "conf_m:verbal", "conf_m:ptrue", "conf_m:consistency",
                                   "sd_m:consistency", "conf_m:combined"]
    n = len(table)
    # ptrue: the softmax of the logprobs the server sent for that very prompt
    ptrue = prompts_by_row("ptrue")
    for _, row in table.iterrows():
        expected = softmax_yes(s.top[ptrue[(row.trajectory_id, row.step)]])
        assert row["conf_m:ptrue"] == pytest.approx(expected, rel=1e-12)
    # verbal: the number sent as JSON; consistency: numpy's mean and sd of the readable samples
    verbal = prompts_by_row("verbal")
    for _, row in table.iterrows():
        prompt = verbal[(row.trajectory_id, row.step)]
        assert row["conf_m:verbal"] == s.verbal[prompt]
        sent = s.samples[prompt]
        assert len(sent) == 4
        readable = [x for x in sent if x is not None]
        if 2 * len(readable) >= len(sent):
            assert row["conf_m:consistency"] == pytest.approx(np.mean(readable), abs=1e-12)
            assert row["sd_m:consistency"] == pytest.approx(np.std(readable), abs=1e-12)
        else:
            assert math.isnan(row["conf_m:consistency"]) and math.isnan(row["sd_m:consistency"])
    # what reached the server: one token with 20 alternatives; the verbal reply as structured output
    ptrue_bodies = [b for b in s.bodies if b.get("logprobs")]
    assert len(ptrue_bodies) == n and all(b["top_logprobs"] == 20 and b.get("max_tokens") == 1 for b in ptrue_bodies)
    sampled = [b for b in s.bodies if (b.get("temperature") or 0) > 0]
    assert len(sampled) == 4 * n and all(b["temperature"] == 0.7 for b in sampled)
    verbal_bodies = [b for b in s.bodies if not b.get("logprobs") and not b.get("temperature")]
    assert all(b["response_format"]["type"] == "json_schema" for b in verbal_bodies + sampled)
    # combined: 3 runs are below the minimum, so it is refused and the others are written
    assert table["conf_m:combined"].isna().all() and table["conf_m:ptrue"].notna().all()
    summary = json.loads((tmp_path / "f.parquet.summary.json").read_text())
    methods = summary["methods"]
    assert methods["ptrue"]["answered"] == n and methods["ptrue"]["share"] == 1.0
    assert methods["combined"]["stack"]["refused"].startswith(f"{RUNS} runs with an outcome")
    assert methods["consistency"]["answered"] == int(table["conf_m:consistency"].notna().sum())
    tokens = sum(methods[m]["cost"]["input_tokens"] for m in ("verbal", "ptrue", "consistency"))
    assert tokens == s.usage["prompt_tokens"]
    assert sum(methods[m]["cost"]["output_tokens"] for m in methods) == s.usage["completion_tokens"]
    text = (tmp_path / "f.parquet.summary.json").read_text()
    assert DUMMY not in text and "127.0.0.1" not in text and "llama" not in text
    assert "ptrue" in stdout and "combined refused" in err
    # a second run asks nothing: every method's answers are cached under its own keys
    before = len(s.bodies)
    s2 = LogprobServer()
    try:
        code, _, err = forecast(s2, out, capsys, "--method", "ptrue", "--method", "consistency", "--samples", 4)
        assert code == 0, err
        assert len(s2.bodies) == 0
    finally:
        s2.close()
    assert len(s.bodies) == before
    again = pd.read_parquet(out)
    pd.testing.assert_series_equal(again["conf_m:ptrue"], table["conf_m:ptrue"])


def test_a_server_without_logprobs_leaves_ptrue_missing_with_its_reason(env, tmp_path, capsys):
    s = LogprobServer(logprobs=False)
    try:
        out = tmp_path / "f.parquet"
        code, stdout, err = forecast(s, out, capsys, "--method", "ptrue")
        assert code == 0, err
    finally:
        s.close()
    table = pd.read_parquet(out)
    assert list(table.columns) == ["trajectory_id", "step", "conf_m:ptrue"] and table["conf_m:ptrue"].isna().all()
    summary = json.loads((tmp_path / "f.parquet.summary.json").read_text())
    assert summary["methods"]["ptrue"]["missing"] == {NO_LOGPROBS: len(table)}
    assert f"missing, {NO_LOGPROBS}: {len(table)}" in stdout and err.count("the provider returned no logprobs") == 1


def test_alternatives_without_yes_or_no_are_counted(env, tmp_path, capsys):
    s = LogprobServer(with_yes_no=False)
    try:
        code, stdout, err = forecast(s, tmp_path / "f.csv", capsys, "--method", "ptrue")
        assert code == 0, err
    finally:
        s.close()
    summary = json.loads((tmp_path / "f.csv.summary.json").read_text())
    assert list(summary["methods"]["ptrue"]["missing"]) == [NO_YES_NO]


def test_verbal_alone_keeps_its_column_and_its_cache_keys(env, tmp_path, capsys):
    s = LogprobServer()
    try:
        out = tmp_path / "f.parquet"
        code, _, err = forecast(s, out, capsys)
        assert code == 0, err
    finally:
        s.close()
    assert list(pd.read_parquet(out).columns) == ["trajectory_id", "step", "conf_m"]
    runs = select_runs(read_transcripts(TAU1)[0], RUNS)
    old_keys = {q.key for q in build_questions(runs, load_prompts(), MODEL, DEFAULT_MAX_CHARS)}
    cached = {p.stem for p in (tmp_path / "f.parquet.cache").rglob("*.json")}
    assert cached == old_keys


@pytest.mark.parametrize("status", [400, 500])  # 500: llama-cpp-python's server on OpenAI's json_schema
def test_a_server_refusing_structured_output_is_asked_without_it_and_said_so(env, tmp_path, capsys, status):
    """The first question is asked alone as structured output; refused (400, 422, 500), it is asked again
    without, and every later question too, once, with a sentence; --no-structured never asks with it."""
    s = LogprobServer(refuse_schema=status)
    try:
        code, _, err = forecast(s, tmp_path / "f.parquet", capsys)
        assert code == 0, err
        assert "the server refused the reply as structured output" in err and "--no-structured" in err
        # json_schema, then json_object with the schema (an OpenAI-compatible server), each refused: a 500 is
        # tried again (at most 3 times), a 400 is not
        assert len(s.refused) == (8 if status == 500 else 2)
        assert [b["response_format"]["type"] for b in s.refused][::4 if status == 500 else 1] == ["json_schema",
                                                                                                 "json_object"]
        assert "asked without it from here on" in err
        assert not any("response_format" in b for b in s.bodies)  # every answer asked without it
        assert len(s.bodies) == len(pd.read_parquet(tmp_path / "f.parquet"))  # each question answered once
        table = pd.read_parquet(tmp_path / "f.parquet")
        assert table["conf_m"].notna().all()  # the reply's JSON, read all the same
        before = len(s.bodies)
        code, stdout, err = forecast(s, tmp_path / "g.parquet", capsys, "--no-structured", "--cache",
                                     tmp_path / "fresh")
        assert code == 0, err
    finally:
        s.close()
    assert len(s.bodies) > before and not any("response_format" in b for b in s.bodies[before:])


def test_a_server_taking_json_object_but_not_json_schema_is_asked_so(env, tmp_path, capsys):
    """llama-cpp-python's server: OpenAI's json_schema is an HTTP 500, ``{"type": "json_object", "schema": …}``
    is taken (grammar-constrained): the replies are asked in that form after the first question's refusal."""
    s = LogprobServer(refuse_schema=500, json_object_ok=True)
    try:
        code, _, err = forecast(s, tmp_path / "f.parquet", capsys)
        assert code == 0, err
    finally:
        s.close()
    assert "asked as JSON with response_format json_object from here on" in err
    summary = json.loads((tmp_path / "f.parquet.summary.json").read_text())
    assert summary["methods"]["verbal"]["asked"]["structured_output"] == "json_object"  # the form used
    assert len(s.refused) == 4 and all(b["response_format"]["type"] == "json_schema" for b in s.refused)
    forms = [b["response_format"] for b in s.bodies]
    assert forms and all(f["type"] == "json_object" and f["schema"]["required"] == ["probability"] for f in forms)
    assert pd.read_parquet(tmp_path / "f.parquet")["conf_m"].notna().all()


def test_combined_alone_and_a_bad_sample_count_are_refused(env, tmp_path, capsys):
    code, _, err = run_cli(["forecast", TAU1, "--model", MODEL, "--out", tmp_path / "f.parquet", "--method",
                            "combined"], capsys)
    assert code == 2 and "stacks other methods" in err
    code, _, err = run_cli(["forecast", TAU1, "--model", MODEL, "--out", tmp_path / "f.parquet", "--samples", 0],
                           capsys)
    assert code == 2 and "--samples" in err


# ----------------------------------------------------------------------------- ptrue
def test_p_true_sums_every_yes_and_no_form():
    top = [[" Yes", -0.5], ["YES", -2.0], ["▁yes", -3.0], ["No", -1.0], [" no.", -4.0], ["Maybe", -0.1]]
    yes, no = math.exp(-0.5) + math.exp(-2) + math.exp(-3), math.exp(-1) + math.exp(-4)
    assert p_true(top).value == pytest.approx(yes / (yes + no), rel=1e-15)
    assert p_true([["Maybe", -0.1]]).problem == NO_YES_NO and p_true(None).problem == NO_LOGPROBS


def test_the_requests_settings_of_each_method():
    from tpsviz.forecasts.methods import generate_config

    chat, responses = generate_config("ptrue", "openai-api"), generate_config("ptrue", "openai", responses_api=True)
    assert (chat.max_tokens, chat.logprobs, chat.top_logprobs) == (1, True, 20)
    assert responses.max_tokens == 16  # the Responses API refuses fewer; the first token is read alone
    assert generate_config("verbal", "openai-api").response_schema.json_schema.required == ["probability"]
    assert generate_config("verbal", "openai-api", structured=False).response_schema is None
    assert generate_config("verbal", "ollama").response_schema is None
    assert generate_config("consistency", "anthropic").temperature == 0.7
    assert generate_config("verbal", "openai-api").max_tokens is None
    assert generate_config("verbal", "openai-api", max_tokens=64).max_tokens == 64
    assert generate_config("consistency", "openai-api", "json_object", max_tokens=64).max_tokens == 64


# ----------------------------------------------------------------------------- combined
def stack_data(n_runs=40, seed=3):
    rng = np.random.default_rng(seed)
    steps = rng.integers(2, 7, size=n_runs)
    y = (rng.uniform(size=n_runs) < 0.45).astype(float)
    run = np.repeat(np.arange(n_runs), steps)
    z = 1.2 * (2 * y[run] - 1) + rng.normal(size=run.size)
    forecasts = np.column_stack([1 / (1 + np.exp(-(z + rng.normal(size=run.size)))),
                                 1 / (1 + np.exp(-(0.5 * z + rng.normal(size=run.size))))])
    forecasts[rng.integers(run.size)] = [np.nan, 0.5]
    return forecasts, run, y


def test_combined_is_scikit_learn_fitted_per_fold_on_the_other_runs():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    forecasts, run, y = stack_data()
    got, report = combined_forecast(forecasts, run, y, folds=5, seed=11)
    assert report["refused"] is None and report["rows_without_all_methods"] == 1
    fold = run_folds(len(y), 5, 11)[run]
    f = np.clip(forecasts, 1e-4, 1 - 1e-4)
    x = np.log(f / (1 - f))
    ok = np.isfinite(x).all(axis=1)
    expected = np.full(len(run), np.nan)
    for k in range(5):
        train, test = ok & (fold != k), ok & (fold == k)
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
        model.fit(x[train], y[run][train].astype(int))
        expected[test] = model.predict_proba(x[test])[:, 1]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)
    assert np.isnan(got[~ok]).all()


def test_a_runs_combined_forecast_never_reads_its_own_outcome():
    forecasts, run, y = stack_data()
    before, _ = combined_forecast(forecasts, run, y)
    for j in (0, 7, 21):
        flipped = y.copy()
        flipped[j] = 1 - flipped[j]
        after, report = combined_forecast(forecasts, run, flipped)
        assert report["refused"] is None
        np.testing.assert_array_equal(after[run == j], before[run == j])
        assert not np.allclose(after[run != j], before[run != j])  # the other runs' stacks did read it


def test_soft_labels_enter_as_two_weighted_rows():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    forecasts, run, y = stack_data(seed=5)
    soft = y.copy()
    soft[:6] = [0.3, 0.8, 0.5, 0.1, 0.9, 0.6]
    got, _ = combined_forecast(forecasts[:, :1], run, soft, folds=4, seed=2)
    fold = run_folds(len(y), 4, 2)[run]
    f = np.clip(forecasts[:, :1], 1e-4, 1 - 1e-4)
    x = np.log(f / (1 - f))
    ok = np.isfinite(x[:, 0])
    for k in range(4):
        train, test = ok & (fold != k), ok & (fold == k)
        lab = soft[run][train]
        X = np.vstack([x[train], x[train]])
        out, w = np.r_[np.ones(lab.size), np.zeros(lab.size)], np.r_[lab, 1 - lab]
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
        model.fit(X[w > 0], out[w > 0].astype(int), logisticregression__sample_weight=w[w > 0])
        np.testing.assert_allclose(got[test], model.predict_proba(x[test])[:, 1], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("n_runs, wins, reason", [
    (MIN_RUNS - 1, 9, f"{MIN_RUNS - 1} runs with an outcome (9 successes, {MIN_RUNS - 10} failures)"),
    (30, MIN_EACH - 1, f"30 runs with an outcome ({MIN_EACH - 1} successes, {31 - MIN_EACH} failures)"),
    (30, 30 - MIN_EACH + 1, f"30 runs with an outcome ({31 - MIN_EACH} successes, {MIN_EACH - 1} failures)"),
])
def test_below_the_minimum_the_stack_is_refused(n_runs, wins, reason):
    forecasts, run, _ = stack_data(n_runs)
    y = np.r_[np.ones(wins), np.zeros(n_runs - wins)]
    got, report = combined_forecast(forecasts, run, np.r_[y, np.nan][: n_runs])
    assert np.isnan(got).all() and report["refused"].startswith(reason)
    # a run without a label (complete-case mode) is not counted
    labels = np.r_[np.ones(MIN_EACH), np.zeros(MIN_RUNS - MIN_EACH), np.nan]
    forecasts, run, _ = stack_data(MIN_RUNS + 1)
    assert combined_forecast(forecasts, run, labels)[1]["refused"] is None
    labels[0] = np.nan
    assert "19 runs with an outcome" in combined_forecast(forecasts, run, labels)[1]["refused"]


# ----------------------------------------------------------------------------- the reply parser
@pytest.mark.parametrize("reply, value", [
    ("probability: 0.7", 0.7), ("70%", 0.7), ("0.7", 0.7), ("7/10", 0.7), ("7 out of 10", 0.7),
    ('{"probability": 0.7}', 0.7), ('```json\n{"probability": 0.35}\n```', 0.35), ('{"Probability": "70%"}', 0.7),
    ('Sure! {"p_success": 0.2} is my estimate.', 0.2),
    ("The agent has booked the flight but not yet confirmed payment.\nprobability: 0.8", 0.8),
    ("Based on the transcript, I estimate the probability of success is about 0.65.", 0.65),
    ("**Probability:** 0.45", 0.45), ("Final probability: 30%", 0.3), ("success probability: 0.9", 0.9),
    ("Chance of success: 3/4", 0.75), ("P(success) = .25", 0.25),
    ("1. Probability: 3/8\n2. Expected value: 4/9", 0.375),
    ("1. The agent asked for the user id.\n2. It looked up the reservation.\nI'd say 0.6", 0.6),
    ("I think 0.4. Yes, 0.4.", 0.4), ("step 3 of 7 is done; probability: 0.55", 0.55),
    ("probability: 0.3\n(0.3 because the user is unhappy)", 0.3),
])
def test_the_forms_models_write_are_read(reply, value):
    assert parse_probability(reply).value == pytest.approx(value, abs=1e-15)


@pytest.mark.parametrize("reply, problem", [
    ("Somewhere between 0.6 and 0.8.", "several numbers"), ("0.3 or maybe 0.5", "several numbers"),
    ("The agent made 3 tool calls, so 0.7.", "several numbers"), ("1. 3/8\n2. 4/9", "several numbers"),
    ("70", "out of range"), ("probability: 7/0", "out of range"), ('{"probability": 1.5}', "out of range"),
    ('{"answer": "unsure"}', "no number"), ("I cannot tell from this transcript.", "no number"),
    ("", "empty reply"),
])
def test_only_what_is_truly_ambiguous_is_refused(reply, problem):
    r = parse_probability(reply)
    assert r.value is None and r.problem == problem


def test_the_command_stacks_on_the_runs_outcomes_by_the_censoring_mode(env, tmp_path, capsys):
    """The fixture's 18 runs are below the minimum; with the minimum lowered, the command's combined
    column is the plain loop's: folds of the runs in the log's order, simple mode's labels (a censored
    run a failure), scikit-learn fitted on the other folds."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from tpsviz import load
    from tpsviz.core.inference import DEFAULT_SEED
    from tpsviz.forecasts import stack

    env.setattr(stack, "MIN_RUNS", 10)
    env.setattr(stack, "MIN_EACH", 3)
    s = LogprobServer()
    try:
        out = tmp_path / "f.parquet"
        code, stdout, err = run_cli(["forecast", TAU1, "--model", MODEL, "--model-base-url", s.url, "--out", out,
                                     "--name", "m", "--method", "ptrue", "--method", "combined",
                                     "--censoring", "simple"], capsys)
        assert code == 0, err
    finally:
        s.close()
    table = pd.read_parquet(out)
    log = load(TAU1).trajectories
    label = dict(zip(log["trajectory_id"], np.where(log["censored"], 0.0, log["outcome"])))
    order = list(dict.fromkeys(t.trajectory_id for t in read_transcripts(TAU1)[0]))
    fold = dict(zip(order, run_folds(len(order), 5, DEFAULT_SEED)))
    f = np.clip(table["conf_m:ptrue"].to_numpy(), 1e-4, 1 - 1e-4)
    x = np.log(f / (1 - f))[:, None]
    y = table["trajectory_id"].map(label).to_numpy()
    k = table["trajectory_id"].map(fold).to_numpy()
    expected = np.full(len(table), np.nan)
    for j in range(5):
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
        model.fit(x[k != j], y[k != j].astype(int))
        expected[k == j] = model.predict_proba(x[k == j])[:, 1]
    np.testing.assert_allclose(table["conf_m:combined"].to_numpy(), expected, rtol=1e-6, atol=1e-9)
    summary = json.loads((tmp_path / "f.parquet.summary.json").read_text())["methods"]["combined"]
    assert summary["stack"]["refused"] is None and summary["stack"]["censoring"] == "simple"
    assert summary["share"] == 1.0 and summary["cost"]["requests"] == 0


def test_a_stalled_provider_stops_every_method_in_bounded_time(env, tmp_path, capsys):
    """After the first method's stall the others are not asked: exit 2 as with one method."""
    import time

    from tests.test_forecast_servers import Server

    s = Server(answer_first=0)  # accepts every request and never answers
    try:
        start = time.monotonic()
        code, stdout, err = run_cli(["forecast", TAU1, "--model", MODEL, "--model-base-url", s.url, "--out",
                                     tmp_path / "f.parquet", "--max-runs", 2, "--timeout", 2, "--method", "verbal",
                                     "--method", "ptrue", "--method", "consistency"], capsys)
        took = time.monotonic() - start
    finally:
        s.close()
    assert code == 2 and "error: timed out: the model answered none of the 16 prompts" in err, err
    assert "108 prompts were not asked" in err  # 16 verbal, 16 ptrue and 5 × 16 consistency, less the 4 asked
    assert "  ptrue:" not in err and "structured output" not in err and not (tmp_path / "f.parquet").exists()
    assert took < 20, took


def test_steps_and_several_methods_together_carry_every_column_forward(env, tmp_path, capsys):
    """``--steps every:3`` with ``--method ptrue --method consistency``: only the asked steps reach the server
    (for each method), and every column, the samples' spread too, carries the last asked value forward within
    its run (checked by a plain loop; an asked step without a value is passed over, as a reply without a
    probability is)."""
    s = LogprobServer()
    try:
        out = tmp_path / "f.parquet"
        code, stdout, err = forecast(s, out, capsys, "--method", "ptrue", "--method", "consistency", "--samples", 2,
                                     "--steps", "every:3")
        assert code == 0, err
    finally:
        s.close()
    table = pd.read_parquet(out)
    runs = select_runs(read_transcripts(TAU1)[0], RUNS)
    assert len(table) == sum(tr.steps for tr in runs)
    asked = [(tr.trajectory_id, t) for tr in runs for t in range(1, tr.steps + 1) if (t - 1) % 3 == 0]
    assert sorted(zip(table.loc[table["asked"], "trajectory_id"], table.loc[table["asked"], "step"])) == sorted(asked)
    assert sum(1 for b in s.bodies if b.get("logprobs")) == len(asked)  # ptrue: the asked steps only
    assert sum(1 for b in s.bodies if (b.get("temperature") or 0) > 0) == 2 * len(asked)
    for column in ("conf_m:ptrue", "conf_m:consistency", "sd_m:consistency"):
        for run_id, rows in table.groupby("trajectory_id"):
            last = math.nan
            for _, row in rows.sort_values("step").iterrows():
                if row["asked"]:  # the last asked step that holds a value (an unreadable one is skipped)
                    last = last if math.isnan(row[column]) else row[column]
                else:
                    assert (math.isnan(last) and math.isnan(row[column])) or row[column] == last
    assert f"{len(asked):,} asked (--steps every:3)" in stdout


def test_max_tokens_reaches_the_server_and_a_bad_value_is_refused(env, tmp_path, capsys):
    s = LogprobServer()
    try:
        code, _, err = forecast(s, tmp_path / "f.parquet", capsys, "--max-tokens", 64)
        assert code == 0, err
        assert s.bodies and all(b.get("max_tokens") == 64 for b in s.bodies)
        code, _, err = forecast(s, tmp_path / "g.parquet", capsys, "--max-tokens", 0)
        assert code == 2 and "--max-tokens must be at least 1" in err
    finally:
        s.close()
