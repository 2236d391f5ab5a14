"""What a local OpenAI-compatible server does with the requests the replay methods need (issue 47
point 3), asked by hand over plain HTTP on 127.0.0.1, and how often a small model's reply to the
judge prompt carries a probability when the reply is forced to JSON.

Checks: `/v1/responses`; chat completions with `logprobs` and `top_logprobs` (what `ptrue` reads);
`logprobs` alone; `n` (several choices, what `consistency` could use); `response_format` of type
`json_schema` (OpenAI's structured output) and of type `json_object` with a `schema` (llama.cpp's
grammar-constrained form). Then, with `--json-runs N`, the judge prompt of `prompts.toml` for every
agent step of the demo log's first N runs, asked with the JSON form the server takes, and the share
of replies that hold a probability in [0, 1] (read as JSON, else by `parse_probability`).

With `--ptrue-runs N`, a Yes/No question about the same prefixes, one token with `top_logprobs` 20:
how often Yes/No variants are among the alternatives, and P(Yes) normalised over the two.

`--score DIR` writes both as forecasts tables and scores them against the references on the same runs
and steps, as bench/bench_replay.py does.

Usage: .venv/bin/python bench/probe_server.py --base-url http://127.0.0.1:8080 --model smollm2-135m
       [--json-runs 3] [--ptrue-runs 3] [--score /tmp/probe]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

LOG = ROOT / "demo_data" / "tau-bench-airline-gpt-4o.json"
SCHEMA = {"type": "object", "properties": {"probability": {"type": "number", "minimum": 0, "maximum": 1}},
          "required": ["probability"], "additionalProperties": False}
YES_NO = "Will the sun rise tomorrow? Answer Yes or No."
SAMPLE: dict = {}  # --sample N --seed S: the runs `forecast --sample N --seed S` replays


def post(base: str, path: str, body: dict, timeout: float = 600.0) -> tuple[int, dict | str]:
    """(HTTP status, parsed JSON or text) of a POST to ``base + path``."""
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def short(obj, n: int = 160) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj)
    return " ".join(text.split())[:n]


def capabilities(base: str, model: str) -> None:
    """One line per check: what the server answered."""
    chat = {"model": model, "messages": [{"role": "user", "content": YES_NO}], "max_tokens": 1, "temperature": 0}
    status, r = post(base, "/v1/responses", {"model": model, "input": YES_NO})
    print(f"/v1/responses: HTTP {status} {short(r, 80)}")
    status, r = post(base, "/v1/chat/completions", {**chat, "logprobs": True, "top_logprobs": 20})
    lp = (r["choices"][0].get("logprobs") or {}).get("content") if status == 200 else None
    if lp:
        top = lp[0].get("top_logprobs") or []
        print(f"logprobs + top_logprobs 20: HTTP {status}, first token {lp[0]['token']!r}, {len(top)} alternatives: "
              + ", ".join(f"{t['token']!r} {t['logprob']:.2f}" for t in top[:6]) + " …")
    else:
        print(f"logprobs + top_logprobs 20: HTTP {status}, no logprobs: {short(r)}")
    status, r = post(base, "/v1/chat/completions", {**chat, "logprobs": True})
    print(f"logprobs alone: HTTP {status}, logprobs = "
          + (short(r["choices"][0].get("logprobs"), 60) if status == 200 else short(r)))
    status, r = post(base, "/v1/chat/completions", {**chat, "max_tokens": 8, "n": 3, "temperature": 1.0})
    print(f"n = 3: HTTP {status}, " + (f"{len(r['choices'])} choice(s)" if status == 200 else short(r)))
    fmt = {"type": "json_schema", "json_schema": {"name": "forecast", "strict": True, "schema": SCHEMA}}
    status, r = post(base, "/v1/chat/completions", {**chat, "max_tokens": 20, "response_format": fmt})
    print(f"response_format json_schema: HTTP {status}, "
          + (repr(r["choices"][0]["message"]["content"]) if status == 200 else short(r)))
    status, r = post(base, "/v1/chat/completions",
                     {**chat, "max_tokens": 20, "response_format": {"type": "json_object", "schema": SCHEMA}})
    print(f"response_format json_object + schema: HTTP {status}, "
          + (repr(r["choices"][0]["message"]["content"]) if status == 200 else short(r)))


def read_json_probability(text: str):
    """(value, problem): the reply's ``probability`` read as JSON, else by ``parse_probability``."""
    from tpsviz.forecasts.replies import parse_probability

    try:
        value = json.loads(text).get("probability")
    except (ValueError, AttributeError):
        value = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (float(value), None) if 0 <= value <= 1 else (None, "out of range")
    r = parse_probability(text)
    return r.value, r.problem


def json_experiment(base: str, model: str, runs: int) -> list[tuple[str, int, float | None]]:
    """The judge prompt at every agent step of the first ``runs`` runs, asked with
    ``response_format`` json_object + schema: the share of replies with a probability."""
    from tpsviz.forecasts.prompts import load_prompts
    from tpsviz.forecasts.replay import select_runs
    from tpsviz.io.harness.transcripts import DEFAULT_MAX_CHARS, read_transcripts, render_prefix

    prompts = load_prompts(None)
    transcripts, _ = read_transcripts(str(LOG))
    problems, values, start, n, table = Counter(), [], time.monotonic(), 0, []
    for tr in select_runs(transcripts, runs, SAMPLE.get('n'), SAMPLE.get('seed')):
        for t in range(1, tr.steps + 1):
            prefix, _ = render_prefix(tr, t, DEFAULT_MAX_CHARS)
            status, r = post(base, "/v1/chat/completions", {
                "model": model, "messages": [{"role": "user", "content": prompts.judge_prompt(prefix)}],
                "max_tokens": 40, "response_format": {"type": "json_object", "schema": SCHEMA}})
            n += 1
            if status != 200:
                problems[f"HTTP {status}"] += 1
                table.append((tr.trajectory_id, t, None))
                continue
            text = r["choices"][0]["message"]["content"] or ""
            value, problem = read_json_probability(text)
            table.append((tr.trajectory_id, t, value))
            if value is None:
                problems[problem] += 1
            else:
                values.append(value)
            if n <= 5 or value is None:
                print(f"  ({tr.trajectory_id}, {t}): {text!r}")
    took = time.monotonic() - start
    print(f"JSON (json_object + schema), judge prompt unchanged: {len(values)} of {n} replies hold a probability "
          f"({len(values) / max(n, 1):.0%}); missing: {dict(problems) or 'none'}; {took / max(n, 1):.1f} s a prompt")
    if values:
        print(f"  values: {dict(sorted(Counter(round(v, 2) for v in values).items()))}")
    return table


PTRUE_QUESTION = ("You are watching an AI agent work on a task. Below is the transcript so far; the task is not "
                  "over.\n\n<transcript>\n{transcript}\n</transcript>\n\nWill the task end in success (the user's "
                  "goal fully met, as a grader would judge it)? Answer Yes or No.")


def yes_no_mass(top: list[dict]) -> tuple[float, float]:
    """(P(yes), P(no)) summed over the first token's alternatives whose text, stripped and lowered,
    is yes/no or a prefix of it of at least 1 letter ('Y', 'Yes', ' yes', 'NO')."""
    import math

    yes = no = 0.0
    for t in top:
        word = t["token"].strip().lower()
        if word and "yes".startswith(word):
            yes += math.exp(t["logprob"])
        elif word and "no".startswith(word):
            no += math.exp(t["logprob"])
    return yes, no


def ptrue_experiment(base: str, model: str, runs: int) -> list[tuple[str, int, float | None]]:
    """A Yes/No question at every agent step of the first ``runs`` runs, one token with
    ``top_logprobs`` 20: how often Yes/No variants are among the alternatives, their mass, and
    P(Yes) normalised over the two."""
    from tpsviz.forecasts.replay import select_runs
    from tpsviz.io.harness.transcripts import DEFAULT_MAX_CHARS, read_transcripts, render_prefix

    transcripts, _ = read_transcripts(str(LOG))
    rows, start = [], time.monotonic()
    for tr in select_runs(transcripts, runs, SAMPLE.get('n'), SAMPLE.get('seed')):
        for t in range(1, tr.steps + 1):
            prefix, _ = render_prefix(tr, t, DEFAULT_MAX_CHARS)
            status, r = post(base, "/v1/chat/completions", {
                "model": model, "messages": [{"role": "user", "content": PTRUE_QUESTION.format(transcript=prefix)}],
                "max_tokens": 1, "temperature": 0, "logprobs": True, "top_logprobs": 20})
            lp = (r["choices"][0].get("logprobs") or {}).get("content") if status == 200 else None
            top = lp[0]["top_logprobs"] if lp else []
            yes, no = yes_no_mass(top)
            rows.append((tr.trajectory_id, t, lp[0]["token"] if lp else None, yes, no))
    took = time.monotonic() - start
    n, found = len(rows), [r for r in rows if r[3] + r[4] > 0]
    print(f"ptrue (one token, top_logprobs 20): {len(found)} of {n} prompts have a Yes/No variant among the "
          f"alternatives ({len(found) / max(n, 1):.0%}); {took / max(n, 1):.1f} s a prompt")
    for tid, t, tok, yes, no in rows:
        p = f"{yes / (yes + no):.3f}" if yes + no > 0 else "  n/a"
        print(f"  ({tid}, {t}): first token {tok!r}, P(yes-like) {yes:.3f}, P(no-like) {no:.3f}, P(Yes) {p}")
    return [(tid, t, yes / (yes + no) if yes + no > 0 else None) for tid, t, _, yes, no in rows]


def score_tables(columns: dict[str, list], keep: Path) -> None:
    """The experiments' values as forecasts tables, scored against the references on the same runs
    and steps (bench/bench_replay.py's comparison)."""
    import pandas as pd

    from bench_replay import compare_on_same_steps, score

    keep.mkdir(parents=True, exist_ok=True)
    tables = [pd.DataFrame(rows, columns=["trajectory_id", "step", f"conf_{name}"]).astype({f"conf_{name}": float})
              for name, rows in columns.items()]
    ev = score(tables, keep)
    print("\nTPS (log score, simple censoring) on the runs and steps each experiment forecasts; a few runs: very noisy")
    for name in columns:
        c = compare_on_same_steps(ev, f"conf_{name}")
        print(f"  {name}: {c['n_runs']} runs, {c['n_steps']} steps; TPS {c['tps']['method']:+.3f}")
        for ref, (d, se) in c["delta"].items():
            print(f"    {ref:<14} TPS {c['tps'][ref]:+.3f}   {name} − ref = {d:+.3f} ± {se:.3f} (SE over runs)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8080 (127.0.0.1 only)")
    ap.add_argument("--model", required=True, help="the model's name at the server")
    ap.add_argument("--json-runs", type=int, default=0, help="run the JSON experiment on the first N runs")
    ap.add_argument("--ptrue-runs", type=int, default=0, help="run the Yes/No logprob experiment on the first N runs")
    ap.add_argument("--sample", type=int, default=None,
                    help="a seeded random sample of N runs (as forecast --sample; then the first --json-runs of it)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--score", metavar="DIR", default=None,
                    help="write the experiments' tables to DIR and score them against the references")
    args = ap.parse_args()
    base = args.base_url.rstrip("/").removesuffix("/v1")
    SAMPLE.update(n=args.sample, seed=args.seed)
    capabilities(base, args.model)
    columns = {}
    if args.json_runs:
        columns["json_verbal"] = json_experiment(base, args.model, args.json_runs)
    if args.ptrue_runs:
        columns["yes_no_logprob"] = ptrue_experiment(base, args.model, args.ptrue_runs)
    if args.score and columns:
        score_tables(columns, Path(args.score))


if __name__ == "__main__":
    main()
