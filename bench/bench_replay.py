"""The replay forecaster against a real small local model (issue 47 point 6), run by hand, never by
`make test`: `tpsviz forecast` asks a llama.cpp server on 127.0.0.1 about a real tau-bench subset,
once per method, and the tables are scored against the reference forecasters on those runs.

It prints, per method: the prompts, the rows against the agent messages of the log (counted by a
plain loop over the JSON, not by tpsviz's readers), the share of rows with a probability and the
reasons for the rest (as the command printed them), the seconds per prompt, and the TPS of the
method and of ref:step, ref:task, ref:task+step on the same runs and the same steps (the log score,
simple censoring, computed here from the step rows `tpsviz.evaluate` reads; checked against the
method's own TPS from `tpsviz.evaluate`). A handful of runs gives a very noisy TPS: the SE is printed
beside every difference, and differences within about 2 SE say nothing.

The server is either started here from a GGUF file with llama-cpp-python's server (installed in a
separate environment, outside this repository; docs/forecasts.md "A real small local model,
measured") and stopped at the end, or one already running (`--base-url`). Only 127.0.0.1 is called.

Usage:
  .venv/bin/python bench/bench_replay.py --server-model-file MODEL.gguf \\
      [--llama-python /work/llama-venv/bin/python] [--runs 3 | --sample 10 --seed 1] [--method verbal ...]
  .venv/bin/python bench/bench_replay.py --base-url http://127.0.0.1:8080 --model-name smollm2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

LOG = ROOT / "demo_data" / "tau-bench-airline-gpt-4o.json"
REFERENCES = ("ref:step", "ref:task", "ref:task+step")
EPS = 1e-6  # score's default clipping


def wait_for_server(base: str, proc=None, limit: float = 300.0) -> list[str]:
    """The model ids the server lists at /v1/models, once it answers (at most ``limit`` seconds)."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"the llama server ended with code {proc.returncode} before it answered")
        try:
            with urllib.request.urlopen(base + "/v1/models", timeout=5) as r:
                return [m["id"] for m in json.load(r)["data"]]
        except OSError:
            time.sleep(1)
    raise SystemExit(f"no answer from {base}/v1/models within {limit:g} s")


def start_server(args, tmp: Path):
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1, with its log in ``tmp``."""
    log = open(tmp / "llama-server.log", "w")
    cmd = [args.llama_python, "-m", "llama_cpp.server", "--model", args.server_model_file, "--host", "127.0.0.1",
           "--port", str(args.port), "--n_ctx", str(args.n_ctx), "--model_alias", args.model_name,
           "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    return proc, log


def agent_messages(path: Path) -> dict[str, int]:
    """Agent (assistant) messages per run of a tau-bench v1 file, by a plain loop over its JSON:
    run id ``<task_id>-<trial>``."""
    counts = {}
    for run in json.loads(path.read_text(encoding="utf-8")):
        counts[f"{run['task_id']}-{run.get('trial', 0)}"] = sum(1 for m in run["traj"] if m.get("role") == "assistant")
    return counts


def cli_has_methods() -> bool:
    """Whether `tpsviz forecast` takes ``--method`` (issue 47 point 3)."""
    out = subprocess.run([sys.executable, "-m", "tpsviz", "forecast", "--help"], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return "--method" in out.stdout


def run_forecast(args, method: str, with_flag: bool, base: str, tmp: Path) -> dict:
    """One `tpsviz forecast` for ``method`` with a fresh cache; what it wrote and printed."""
    slug = method.replace(",", "+")
    out, cache = tmp / f"{slug}.parquet", tmp / f"cache-{slug}"
    cmd = [sys.executable, "-m", "tpsviz", "forecast", str(LOG), "--model", f"openai-api/llama/{args.model_name}",
           "--model-base-url", base + "/v1", "--out", str(out), "--cache", str(cache),
           "--timeout", f"{args.timeout:g}", "--concurrency", str(args.concurrency)]
    cmd += ["--sample", str(args.sample), "--seed", str(args.seed)] if args.sample else ["--max-runs", str(args.runs)]
    cmd += [x for m in method.split(",") for x in ("--method", m)] if with_flag else ["--name", method]
    env = {**os.environ, "LLAMA_API_KEY": "none", "PYTHONPATH": str(ROOT)}
    env.pop("LLAMA_BASE_URL", None)
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    took = time.monotonic() - start
    asked = re.search(r"([\d,]+) to ask", proc.stdout)
    reasons = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip().startswith(("reply without", "no answer"))]
    reasons += [ln.strip() for ln in proc.stderr.splitlines() if ln.startswith(("provider errors", "timed out", "error"))]
    table = pd.read_parquet(out) if out.exists() else None
    return {"method": method, "code": proc.returncode, "seconds": took, "table": table, "reasons": reasons,
            "asked": int(asked.group(1).replace(",", "")) if asked else 0, "stdout": proc.stdout,
            "stderr": proc.stderr}


def step_scores(steps: pd.DataFrame, trajectories: pd.DataFrame, column: str) -> pd.Series:
    """Per-step log score of ``column`` under simple censoring (a censored run's label is 0),
    with score's clipping: y ln F + (1 − y) ln(1 − F), NaN where ``column`` is missing."""
    label = trajectories["outcome"].fillna(0.0).where(~trajectories["censored"].astype(bool), 0.0).to_numpy()
    y = label[steps["traj"].to_numpy()]
    f = np.clip(steps[column].to_numpy(dtype=float), EPS, 1 - EPS)
    return pd.Series(y * np.log(f) + (1 - y) * np.log1p(-f), index=steps.index)


def compare_on_same_steps(ev, column: str) -> dict:
    """TPS of ``column`` and of each reference on the runs and steps ``column`` forecasts: per run
    sums, their mean, and the paired difference against each reference with its SE over runs."""
    steps, trajs = ev.data.steps, ev.data.trajectories
    mine = step_scores(steps, trajs, column)
    keep = mine.notna()
    runs = steps.loc[keep, "trajectory_id"].astype(str)
    per_run = {"method": mine[keep].groupby(runs).sum()}
    for ref in REFERENCES:
        if f"conf_{ref}" in steps:
            per_run[ref] = step_scores(steps, trajs, f"conf_{ref}")[keep].groupby(runs).sum()
    out = {"n_runs": len(per_run["method"]), "n_steps": int(keep.sum()),
           "tps": {k: float(v.mean()) for k, v in per_run.items()}, "delta": {}}
    for ref in REFERENCES:
        if ref in per_run:
            d = per_run["method"] - per_run[ref]
            se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.nan
            out["delta"][ref] = (float(d.mean()), se)
    return out


def score(tables: list[pd.DataFrame], tmp: Path):
    """tpsviz.evaluate on the log with every method's table joined and the references added."""
    import tpsviz

    merged = tables[0]
    for t in tables[1:]:
        merged = merged.merge(t, on=["trajectory_id", "step"], how="outer")
    path = tmp / "all_methods.parquet"
    merged.to_parquet(path, index=False)
    return tpsviz.evaluate(str(LOG), forecasts=str(path), references=True, n_boot=0, censoring="simple")


def print_report(args, model_ids, results, counts, ev) -> None:
    print(f"\nreplay against a real local model: {args.model_name} (server lists {model_ids}), {LOG.name}, "
          + (f"a sample of {args.sample} runs (seed {args.seed})" if args.sample else f"the first {args.runs} runs"))
    print(f"{'method':<12} {'exit':>4} {'rows':>5} {'agent msgs':>10} {'with p':>7} {'share':>6} "
          f"{'asked':>6} {'s/prompt':>8}")
    for r in results:
        t = r["table"]
        if t is None:
            print(f"{r['method']:<12} {r['code']:>4}  no table written")
            for line in r["reasons"]:
                print(f"  {line}")
            continue
        col = r["column"]
        ids = sorted(t["trajectory_id"].astype(str).unique())
        msgs = sum(counts.get(i, 0) for i in ids)
        with_p = int(t[col].notna().sum())
        per = r["seconds"] / r["asked"] if r["asked"] else math.nan
        print(f"{r['method']:<12} {r['code']:>4} {len(t):>5} {msgs:>10} {with_p:>7} {with_p / len(t):>6.0%} "
              f"{r['asked']:>6} {per:>8.2f}")
        per_run = t["trajectory_id"].astype(str).value_counts()
        rows_match = len(t) == msgs and all(per_run[i] == counts.get(i, -1) for i in ids)
        print(f"  one row per agent message: {'yes' if rows_match else 'NO'} ({len(ids)} runs: "
              + ", ".join(f"{i}: {counts.get(i)}" for i in ids[:6]) + (" …" if len(ids) > 6 else "") + ")")
        for line in r["reasons"]:
            print(f"  {line}")
    if ev is None:
        return
    print("\nTPS (log score, nats per run, higher is better; simple censoring) on the runs and steps each method "
          "forecasts;\nthe references are fitted on the other runs of the whole 200-run log (docs/forecasts.md §1)")
    official = ev.to_json()["predictors"]
    for r in results:
        if r["table"] is None:
            continue
        c = compare_on_same_steps(ev, r["column"])
        name = r["column"][len("conf_"):]
        check = official.get(name, {}).get("tps_mean")
        print(f"  {r['method']}: {c['n_runs']} runs, {c['n_steps']} steps; TPS {c['tps']['method']:+.3f}"
              + (f" (tpsviz.evaluate: {check:+.3f})" if check is not None else ""))
        for ref, (d, se) in c["delta"].items():
            print(f"    {ref:<14} TPS {c['tps'][ref]:+.3f}   method − ref = {d:+.3f} ± {se:.3f} (SE over runs)")
        vs = official.get(name, {}).get("versus_best_reference")
        if vs:
            print(f"    tpsviz's verdict against the best reference ({vs['reference']}, on the runs, every step of "
                  f"the reference): Δ = {vs['delta']:+.3f} ± {vs['se']:.3f}, {vs['outcome']}")
    n = min((c for c in (len(r["table"]["trajectory_id"].unique()) for r in results if r["table"] is not None)),
            default=0)
    print(f"\nnoise: {n} runs. A TPS on so few runs is very noisy (one long failed run moves the mean by nats): "
          "read the SEs, and run more (--runs, --sample) before calling one method better than another.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--server-model-file", metavar="GGUF", help="start llama-cpp-python's server on this file")
    where.add_argument("--base-url", metavar="URL", help="a server already running, e.g. http://127.0.0.1:8080")
    ap.add_argument("--llama-python", default="/work/llama-venv/bin/python",
                    help="the Python that has llama-cpp-python[server] (default /work/llama-venv/bin/python)")
    ap.add_argument("--model-name", default="local", help="the model's name at the server (its alias)")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=1,
                    help="the server's threads (default 1: on 2 shared cores, 2 threads spin against each other and "
                         "ran 2.3 times slower in our measurement)")
    ap.add_argument("--runs", type=int, default=3, help="the log's first N runs (default 3: 31 agent messages)")
    ap.add_argument("--sample", type=int, default=None, help="a seeded random sample of N runs instead")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--method", action="append", default=None,
                    help="a replay method (repeatable, one `forecast` each; default verbal; others once `forecast "
                         "--method` has them); a comma group (verbal,ptrue,combined) is one `forecast` asking them all")
    ap.add_argument("--timeout", type=float, default=300.0, help="forecast --timeout (default 300 s)")
    ap.add_argument("--concurrency", type=int, default=1,
                    help="forecast --concurrency (default 1: llama-cpp-python's server answers one at a time)")
    ap.add_argument("--keep", metavar="DIR", default=None, help="keep the tables, caches and server log here")
    args = ap.parse_args()
    methods = args.method or ["verbal"]
    with_flag = cli_has_methods()
    if not with_flag and methods != ["verbal"]:
        raise SystemExit("this tpsviz's forecast has no --method yet: only verbal (its one method) can be run")
    tmp_ctx = tempfile.TemporaryDirectory() if args.keep is None else None
    tmp = Path(args.keep or tmp_ctx.name)
    tmp.mkdir(parents=True, exist_ok=True)
    proc = log = None
    try:
        if args.server_model_file:
            proc, log = start_server(args, tmp)
            base = f"http://127.0.0.1:{args.port}"
        else:
            base = args.base_url.rstrip("/").removesuffix("/v1")
        model_ids = wait_for_server(base, proc)
        results = []
        for m in methods:
            r = run_forecast(args, m, with_flag, base, tmp)
            cols = [c for c in (r["table"].columns if r["table"] is not None else []) if c.startswith("conf_")]
            if not cols:
                r["table"] = None
                results.append(r)
            for c in cols:  # one result per column a run wrote (a group of methods writes several)
                label = c[len("conf_"):].rsplit(":", 1)[-1] if len(cols) > 1 else m
                results.append({**r, "method": label, "column": c, "table": r["table"][["trajectory_id", "step", c]]})
        tables = [r["table"] for r in results if r["table"] is not None]
        ev = score(tables, tmp) if tables else None
        print_report(args, model_ids, results, agent_messages(LOG), ev)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
        if tmp_ctx is not None:
            tmp_ctx.cleanup()


if __name__ == "__main__":
    main()
