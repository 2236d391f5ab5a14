"""Issue 47 point 4: the cost seen before paying. `forecast --steps` asks fewer steps and carries
forecasts forward (only the past), `--dry-run` prints a price from prices.toml, the prompts of
consecutive steps share their beginning (a provider's prefix cache), and the tokens a provider
reports, cached ones included, are summed after the run and kept beside each answer.

Counts are recomputed from the raw JSON with plain loops, carry-forward against a brute-force
loop, prices by hand from the toml values read here. No real provider is called: a fake
OpenAI-compatible server on 127.0.0.1 with a dummy key.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fake_http import run_cli
from tpsviz.core.errors import SettingError
from tpsviz.forecasts.cache import AnswerCache
from tpsviz.forecasts.prices import DEFAULT_PRICES, OUTPUT_TOKENS_PER_REPLY, load_prices
from tpsviz.forecasts.prompts import load_prompts
from tpsviz.forecasts.steps import ASKED, asked_steps, carry_forward, parse_steps
from tpsviz.io.harness.transcripts import Transcript, read_transcripts, render_prefix
from test_forecast_servers import Server

ROOT = Path(__file__).resolve().parents[1]
TAU1 = ROOT / "tests" / "fixtures" / "taubench" / "tau1_gpt-4o-airline_trimmed.json"
TAU2_LONG = ROOT / "tests" / "fixtures" / "tau2" / "tau2_airline_gpt-oss-120b_langchain_trimmed.json"
DEMO = ROOT / "demo_data" / "tau-bench-airline-gpt-4o.json"
DUMMY = "dummy-key-not-a-secret-5d2a"
PROMPT_TOKENS, CACHED_TOKENS, COMPLETION_TOKENS = 1000, 600, 7


# ----------------------------------------------------------------------------- independent views
def tau1_steps(path: Path) -> dict:
    """trajectory_id -> agent steps of a tau-bench list, by the harness's rules, in plain Python."""
    out = {}
    for rec in json.loads(path.read_text(encoding="utf-8")):
        info = rec.get("info")
        if isinstance(info, str) or (isinstance(info, dict) and info.get("error") is not None):
            continue
        n = sum(1 for m in rec["traj"] if m.get("role") == "assistant")
        if n:
            out[f"{rec['task_id']}-{rec['trial']}"] = n
    return out


def chosen(kind: str, n: int, T: int) -> list[int]:
    """The steps a rule asks of a run of T steps, written out as the docs say (not sample)."""
    if kind == "every":
        return [t for t in range(1, T + 1) if (t - 1) % n == 0]
    if kind == "first":
        return [t for t in range(1, T + 1) if t <= n]
    return [t for t in range(1, T + 1) if t > T - n]


def brute_carry(steps: dict, asked: set, values: dict) -> dict:
    """(run, t) -> forecast: its own value where asked, else the last asked step before t with a value."""
    out = {}
    for run, T in steps.items():
        last = math.nan
        for t in range(1, T + 1):
            if (run, t) in asked:
                v = values[(run, t)]
                out[(run, t)] = v
                if not math.isnan(v):
                    last = v
            else:
                out[(run, t)] = last
    return out


def shared(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


# ----------------------------------------------------------------------------- a fake provider
def reply(prompt: str) -> float:
    return (len(prompt) % 997) / 1000


class UsageServer(Server):
    """Chat completions that answer a probability read from the prompt's length and report
    PROMPT_TOKENS prompt tokens, CACHED_TOKENS of them from the cache, COMPLETION_TOKENS out."""

    def __init__(self):
        super().__init__(responses=False, reply=lambda prompt: f"probability: {reply(prompt)}",
                         usage={"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                                "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                                "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS}})

    @property
    def prompts(self) -> list[str]:
        return [r[2] for r in self.asked("/chat/completions")]


@pytest.fixture
def server(monkeypatch):
    for var in ("OPENAI_API_KEY", "LLAMA_API_KEY"):
        monkeypatch.setenv(var, DUMMY)
    for var in ("OPENAI_BASE_URL", "LLAMA_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    s = UsageServer()
    yield s
    s.close()


# ----------------------------------------------------------------------------- the rules
@pytest.mark.parametrize("kind", ["every", "first", "last"])
@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_rules_choose_the_steps_the_docs_say(kind, n):
    rule = parse_steps(f"{kind}:{n}")
    for T in range(1, 15):
        assert rule.steps("r", T) == chosen(kind, n, T)


def test_sample_draws_n_steps_per_run_reproducibly_and_independently_of_other_runs():
    rule = parse_steps("sample:4")
    for T in range(1, 20):
        got = rule.steps("run-a", T, seed=3)
        assert got == sorted(set(got)) and len(got) == min(4, T) and set(got) <= set(range(1, T + 1))
        assert got == rule.steps("run-a", T, seed=3)
    draws = {tuple(rule.steps(f"run-{i}", 12, seed=3)) for i in range(30)}
    assert len(draws) > 20  # not the same steps in every run
    assert {tuple(rule.steps("run-a", 12, seed=s)) for s in range(10)} != {tuple(rule.steps("run-a", 12, seed=3))}
    tr = [Transcript(f"r{i}", (), tuple(range(1, 10 + i))) for i in range(5)]
    whole, part = asked_steps(tr, rule, 11), asked_steps(tr[2:4], rule, 11)
    assert part == {k for k in whole if k[0] in ("r2", "r3")}


@pytest.mark.parametrize("spec", ["every:0", "foo:3", "last:-1", "every:", "sample:x", "first:1.5", "every 3"])
def test_bad_rules_are_a_setting_error_and_exit_2(spec, tmp_path, capsys):
    with pytest.raises(SettingError):
        parse_steps(spec)
    code, out, err = run_cli(["forecast", TAU1, "--model", "openai/gpt-4o-mini", "--out", tmp_path / "f.parquet",
                              "--steps", spec, "--dry-run"], capsys)
    assert code == 2 and "Traceback" not in err and err.startswith(f"error: --steps {spec}")
    assert "every:K, first:N, last:N or sample:N" in err and list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- carry forward
@pytest.mark.parametrize("seed", range(6))
def test_carry_forward_matches_a_brute_force_loop(seed):
    rng = np.random.default_rng(seed)
    steps = {f"run{i:02d}": int(rng.integers(1, 12)) for i in range(25)}
    transcripts = [Transcript(run, (), tuple(range(1, T + 1))) for run, T in steps.items()]
    asked = {(r, t) for r, T in steps.items() for t in range(1, T + 1) if rng.random() < 0.4}
    values = {k: (math.nan if rng.random() < 0.2 else float(rng.random())) for k in asked}
    rows = sorted(asked, key=lambda k: (k[0], -k[1]))  # any order in
    table = pd.DataFrame({"trajectory_id": [r for r, _ in rows], "step": [t for _, t in rows],
                          "conf_x": [values[k] for k in rows], "conf_y": [1 - values[k] for k in rows]})
    out, counts = carry_forward(table, transcripts, ["conf_x", "conf_y"])
    want = brute_carry(steps, asked, values)
    assert list(out.columns) == ["trajectory_id", "step", "conf_x", "conf_y", ASKED]
    assert list(zip(out.trajectory_id, out.step)) == sorted(want)
    for tid, t, x, y, a in zip(out.trajectory_id, out.step, out.conf_x, out.conf_y, out[ASKED]):
        w = want[(tid, t)]
        assert a == ((tid, t) in asked)
        assert (math.isnan(w) and math.isnan(x) and math.isnan(y)) or (x == w and y == 1 - w)
    not_asked = [k for k in want if k not in asked]
    assert counts.asked == len(asked)
    assert counts.carried == sum(not math.isnan(want[k]) for k in not_asked)
    assert counts.missing == sum(math.isnan(want[k]) for k in not_asked)


def test_a_carried_forecast_uses_only_earlier_steps():
    tr = [Transcript("a", (), (1, 2, 3, 4, 5))]
    table = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [2, 4], "conf_m": [0.2, 0.9]})
    out, counts = carry_forward(table.assign(unc_s=[1.0, 2.0]), tr)
    got = out["conf_m"].tolist()
    assert math.isnan(got[0]) and got[1:] == [0.2, 0.2, 0.9, 0.9]
    assert list(out.columns) == ["trajectory_id", "step", "conf_m", "unc_s", ASKED]  # every forecast column
    assert out["unc_s"].tolist()[1:] == [1.0, 1.0, 2.0, 2.0]
    assert (counts.asked, counts.carried, counts.missing) == (2, 2, 1)


# ----------------------------------------------------------------------------- the dry run and its price
def dry(args, capsys, path=TAU1):
    code, out, err = run_cli(["forecast", path, "--out", "never-written.parquet", "--dry-run", *args], capsys)
    assert code == 0, err
    m = re.search(r"([\d,]+) asked \(--steps [^\n]* = prompts", out) or re.search(r"([\d,]+) agent steps = prompts", out)
    prompts = int(m.group(1).replace(",", ""))
    tokens = int(re.search(r"about ([\d,]+) input tokens", out).group(1).replace(",", ""))
    return out, prompts, tokens


def test_dry_run_prices_a_known_model_from_the_toml(capsys):
    listed = tomllib.loads(DEFAULT_PRICES.read_text(encoding="utf-8"))["openai/gpt-4o-mini"]
    out, prompts, tokens = dry(["--model", "openai/gpt-4o-mini"], capsys)
    assert prompts == sum(tau1_steps(TAU1).values())
    output = prompts * OUTPUT_TOKENS_PER_REPLY
    assert f"about {output:,} output tokens" in out
    by_hand = tokens / 1e6 * listed["input"] + output / 1e6 * listed["output"]
    price = float(re.search(r"price: about \$([\d.,]+) for openai/gpt-4o-mini", out).group(1).replace(",", ""))
    assert price == pytest.approx(by_hand, rel=5e-3)
    cached = int(re.search(r"serves the ([\d,]+) tokens", out).group(1).replace(",", ""))
    assert 0 < cached < tokens
    low = float(re.search(r"or about \$([\d.,]+) where", out).group(1).replace(",", ""))
    want = ((tokens - cached) * listed["input"] + cached * listed["cached_input"] + output * listed["output"]) / 1e6
    assert low == pytest.approx(want, rel=5e-3) and low < price
    assert "dry run: no model was called" in out and not Path("never-written.parquet").exists()


def test_a_model_without_a_price_says_so(capsys):
    out, _, _ = dry(["--model", "openai-api/llama/SmolLM2-135M-Instruct"], capsys)
    assert ("price: no price known for openai-api/llama/SmolLM2-135M-Instruct (add it to "
            "tpsviz/forecasts/prices.toml, or give --prices FILE)") in out


def test_a_users_price_file_is_read(tmp_path, capsys):
    f = tmp_path / "mine.toml"
    f.write_text('["openai-api/llama/tiny"]\ninput = 1.0\noutput = 2.0\n', encoding="utf-8")
    out, prompts, tokens = dry(["--model", "openai-api/llama/tiny", "--prices", f, "--max-runs", 2], capsys)
    price = float(re.search(r"price: about \$([\d.,]+)", out).group(1))
    assert price == pytest.approx((tokens * 1.0 + prompts * OUTPUT_TOKENS_PER_REPLY * 2.0) / 1e6, rel=5e-3)
    assert "input 1, cached input 1, output 2" in out  # cached_input defaults to input


@pytest.mark.parametrize("text, words", [
    ('["openai/x"]\ninput = "SECRET-CHEAP"\noutput = 1\n', "key 'openai/x': input must be a number"),
    ('["openai/x"]\ninput = 1\noutput = -2\n', "key 'openai/x': output must be a number"),
    ('["openai/x"]\ninput = 1\n', "key 'openai/x': output must be a number"),
    ('["openai/x"]\ninput = 1\noutput = 1\nSECRET-CHEAP = 3\n', "unknown key 'SECRET-CHEAP'"),
    ('"openai/x" = 3\n', "key 'openai/x' must be a table of prices"),
    ('listed = 2025\n', "key 'listed' must be a text"),
    ('["openai/x"\ninput = SECRET-CHEAP\n', "not valid TOML"),
])
def test_a_malformed_price_file_names_the_file_and_key_never_its_content(text, words, tmp_path, capsys):
    f = tmp_path / "bad-prices.toml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as e:
        load_prices(f)
    assert str(e.value).startswith("price file bad-prices.toml") and words in str(e.value)
    if "unknown key" not in words:
        assert "SECRET-CHEAP" not in str(e.value)
    code, out, err = run_cli(["forecast", TAU1, "--model", "openai/x", "--out", tmp_path / "f.parquet",
                              "--prices", f, "--dry-run"], capsys)
    assert code == 2 and words in err and "Traceback" not in err


def test_the_shipped_price_table_reads_and_names_provider_models():
    table = load_prices()
    assert len(table.prices) >= 5 and table.listed
    for model, p in table.prices.items():
        assert re.fullmatch(r"(openai|anthropic|google)/[\w.-]+", model)
        assert 0 < p.cached_input <= p.input < p.output


@pytest.mark.parametrize("rule, kind, n", [("every:3", "every", 3), ("first:2", "first", 2), ("last:4", "last", 4)])
def test_steps_cut_the_prompts_as_counted_by_a_plain_loop(rule, kind, n, capsys):
    steps = tau1_steps(TAU1)
    _, all_prompts, all_tokens = dry(["--model", "openai/gpt-4o-mini"], capsys)
    out, prompts, tokens = dry(["--model", "openai/gpt-4o-mini", "--steps", rule], capsys)
    assert all_prompts == sum(steps.values())
    assert prompts == sum(len(chosen(kind, n, T)) for T in steps.values())
    assert f"{all_prompts:,} agent steps, {prompts:,} asked (--steps {rule}) = prompts" in out
    assert tokens < all_tokens


def test_every_3_on_the_demo_log_asks_about_a_third(capsys):
    steps = tau1_steps(DEMO)
    _, all_prompts, all_tokens = dry(["--model", "openai/gpt-4o"], capsys, DEMO)
    out, prompts, tokens = dry(["--model", "openai/gpt-4o", "--steps", "every:3"], capsys, DEMO)
    assert len(steps) == 200 and all_prompts == sum(steps.values())
    assert prompts == sum(math.ceil(T / 3) for T in steps.values())
    assert 0.30 < prompts / all_prompts < 0.40 and 0.28 < tokens / all_tokens < 0.40
    assert "price: about $" in out


def test_sample_steps_are_the_same_from_run_to_run(capsys):
    a, n1, _ = dry(["--model", "openai/gpt-4o-mini", "--steps", "sample:2", "--seed", 5], capsys)
    b, n2, _ = dry(["--model", "openai/gpt-4o-mini", "--steps", "sample:2", "--seed", 5], capsys)
    assert a == b and n1 == sum(min(2, T) for T in tau1_steps(TAU1).values())


# ----------------------------------------------------------------------------- end to end: asked, carried, scored
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_steps_end_to_end_the_table_carries_forward_and_score_joins_it(suffix, server, tmp_path, capsys):
    out = tmp_path / f"f{suffix}"
    code, stdout, err = run_cli(["forecast", TAU1, "--model", "openai-api/llama/tiny", "--model-base-url", server.url,
                                 "--out", out, "--steps", "last:3", "--max-chars", 10**7, "--concurrency", 2], capsys)
    assert code == 0, err
    steps = tau1_steps(TAU1)
    asked = {(r, t) for r, T in steps.items() for t in chosen("last", 3, T)}
    assert len(server.prompts) == len({p for p in server.prompts}) == len(asked)
    table = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out, dtype={"trajectory_id": str})
    assert list(table.columns) == ["trajectory_id", "step", "conf_tiny", ASKED]
    assert len(table) == sum(steps.values())
    transcripts = {tr.trajectory_id: tr for tr in read_transcripts(TAU1)[0]}
    judge = load_prompts()
    values = {k: reply(judge.judge_prompt(render_prefix(transcripts[k[0]], k[1], 10**7)[0])) for k in asked}
    want = brute_carry(steps, asked, values)
    for tid, t, v, a in zip(table.trajectory_id, table.step, table.conf_tiny, table[ASKED]):
        assert bool(a) == ((tid, t) in asked)
        assert (math.isnan(want[(tid, t)]) and math.isnan(v)) or v == pytest.approx(want[(tid, t)], abs=1e-12)
    missing = sum(math.isnan(v) for v in want.values())
    assert f"{len(asked):,} rows asked, 0 carried forward from the last asked step before them, {missing:,} missing" \
        in stdout
    code, s_out, s_err = run_cli(["score", TAU1, "--forecasts", out, "--n-boot", "0", "--json"], capsys)
    assert code == 0, s_err
    assert "tiny" in json.loads(s_out)["predictors"]


def test_first_steps_are_carried_to_the_end_and_scored(server, tmp_path, capsys):
    out = tmp_path / "f.parquet"
    code, stdout, err = run_cli(["forecast", TAU1, "--model", "openai-api/llama/tiny", "--model-base-url", server.url,
                                 "--out", out, "--steps", "first:1"], capsys)
    assert code == 0, err
    steps = tau1_steps(TAU1)
    table = pd.read_parquet(out)
    assert table["conf_tiny"].notna().all() and int(table[ASKED].sum()) == len(steps)
    assert (table.groupby("trajectory_id")["conf_tiny"].nunique() == 1).all()  # step 1's forecast, every step
    carried = sum(steps.values()) - len(steps)
    assert f"{len(steps):,} rows asked, {carried:,} carried forward" in stdout
    code, s_out, s_err = run_cli(["score", TAU1, "--forecasts", out, "--n-boot", "0", "--json"], capsys)
    assert code == 0, s_err


# ----------------------------------------------------------------------------- tokens the provider reported
def test_the_providers_token_counts_are_summed_priced_and_kept_for_a_rerun(server, tmp_path, capsys):
    out = tmp_path / "f.parquet"
    args = ["forecast", TAU1, "--model", "openai/gpt-4o-mini", "--chat-completions", "--model-base-url", server.url,
            "--out", out, "--max-runs", 3]
    code, stdout, err = run_cli(args, capsys)
    assert code == 0, err
    n = len(server.prompts)
    assert n == sum(list(tau1_steps(TAU1).values())[:3])
    assert "price: about $" in stdout.split("tokens the provider reported")[0]  # the plan of a real run too
    listed = tomllib.loads(DEFAULT_PRICES.read_text(encoding="utf-8"))["openai/gpt-4o-mini"]
    line = (f"tokens the provider reported, this run ({n:,} answers): {n * PROMPT_TOKENS:,} input, of which "
            f"{n * CACHED_TOKENS:,} cached ({CACHED_TOKENS / PROMPT_TOKENS:.0%}), {n * COMPLETION_TOKENS:,} output")
    assert line in stdout
    price = float(re.search(re.escape(line) + r"; \$([\d.]+)", stdout).group(1))
    by_hand = n * ((PROMPT_TOKENS - CACHED_TOKENS) * listed["input"] + CACHED_TOKENS * listed["cached_input"]
                   + COMPLETION_TOKENS * listed["output"]) / 1e6
    assert price == pytest.approx(by_hand, rel=5e-3)
    entries = [json.loads(p.read_text()) for p in (tmp_path / "f.parquet.cache").rglob("*.json")]
    assert len(entries) == n and all(e["usage"] == {"input": PROMPT_TOKENS - CACHED_TOKENS, "cached": CACHED_TOKENS,
                                                    "output": COMPLETION_TOKENS} for e in entries)
    code, stdout, err = run_cli(args, capsys)  # from the cache: nothing asked, the counts still told
    assert code == 0 and len(server.prompts) == n and "0 to ask" in stdout
    assert line.replace("this run", "the whole table") in stdout and "this run" not in stdout


def test_an_answer_stored_without_usage_or_with_a_damaged_one_has_none(tmp_path):
    cache = AnswerCache(tmp_path)
    cache.put("a" * 64, "probability: 0.5")
    cache.put("b" * 64, "probability: 0.5", {"input": 3, "cached": 1, "output": 2})
    assert cache.usage("a" * 64) is None and cache.usage("c" * 64) is None
    assert cache.usage("b" * 64) == {"input": 3, "cached": 1, "output": 2}
    p = tmp_path / "bb" / f"{'b' * 64}.json"
    p.write_text(json.dumps({"reply": "x", "usage": {"input": -1, "cached": 0, "output": 1}}))
    assert cache.usage("b" * 64) is None and cache.get("b" * 64) == "x"


def test_questions_are_asked_run_by_run_step_after_step(server, tmp_path, capsys):
    """Consecutive prompts of a run reach the server one after the other (a one-slot local server reuses
    the previous prompt's prefix: docs/forecasts.md, "Prefix caches"): each prompt extends the one before
    it, except where a new run starts."""
    code, stdout, err = run_cli(["forecast", TAU1, "--model", "openai-api/llama/tiny", "--model-base-url", server.url,
                                 "--out", tmp_path / "f.parquet", "--concurrency", 1, "--max-runs", 4,
                                 "--max-chars", 10**7], capsys)
    assert code == 0, err
    steps = [p.count("### AGENT") for p in server.prompts]  # the step of each prompt, in the order asked
    runs = list(tau1_steps(TAU1).values())[:4]
    assert steps == [t for n in runs for t in range(1, n + 1)]


# ----------------------------------------------------------------------------- stable prefixes
def long_run(n: int = 40) -> Transcript:
    messages = [{"role": "system", "content": "POLICY " + "rule " * 1500}, {"role": "user", "content": "TASK: rebook"}]
    for i in range(n):
        messages.append({"role": "assistant", "content": f"step {i} " + "a" * (300 + 97 * (i % 7))})
        messages.append({"role": "user", "content": f"reply {i} " + "u" * (200 + 53 * (i % 5))})
    return Transcript("long", tuple(messages), tuple(i for i, m in enumerate(messages, 1) if m["role"] == "assistant"))


@pytest.mark.parametrize("bound", [4000, 8000, 24000])
def test_consecutive_truncated_prefixes_share_their_beginning(bound):
    tr = long_run()
    texts = [render_prefix(tr, t, bound) for t in range(1, tr.steps + 1)]
    fulls = [render_prefix(tr, t, 10**9)[0] for t in range(1, tr.steps + 1)]
    cut = [i for i, (_, c) in enumerate(texts) if c]
    assert len(cut) > 10
    moves = 0
    for i in cut:
        text, full = texts[i][0], fulls[i]
        assert len(text) <= bound + 200 and text.startswith(full[:bound // 3]) and "TASK: rebook" in text
        tail = text.split("left out …]\n\n", 1)[1]
        left = int(re.search(r"\[… ([\d,]+) characters", text).group(1).replace(",", ""))
        assert full.endswith(tail) and bound // 3 + left + len(tail) == len(full)
        if i - 1 in cut:
            before = texts[i - 1][0]
            n = shared(before, text)
            assert n >= bound // 3  # the beginning (system prompt) is always shared
            if left == int(re.search(r"\[… ([\d,]+) characters", before).group(1).replace(",", "")):
                assert n == len(before)  # the cut did not move: the earlier prefix is the start of this one
            else:
                moves += 1
    assert 0 < moves < len(cut) - 1
    if bound >= 8000:  # steps of ~500-1,300 characters: the cut moves at most every other step
        assert moves < len(cut) // 2


def test_the_median_shared_prefix_of_consecutive_prompts_is_high_on_a_real_log():
    judge = load_prompts()
    bound = 8000
    fractions = []
    for tr in read_transcripts(TAU2_LONG)[0]:
        prompts = [judge.judge_prompt(render_prefix(tr, t, bound)[0]) for t in range(1, tr.steps + 1)]
        fractions += [len(os.path.commonprefix([a, b])) / len(b) for a, b in zip(prompts, prompts[1:])]
    # keeping the transcript's last characters shifts every prompt: its median here was 0.03
    assert statistics.median(fractions) > 0.8
