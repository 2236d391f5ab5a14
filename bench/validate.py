"""The instrument's own validation: how often tpsviz's verdicts and intervals are wrong, by simulation.

Simulates logs with known truth (tpsviz/synthetic/validation.py) in a fractional design of scenarios
(censoring mode, runs per log, step budget, tasks repeated over epochs, schedule) and measures, with
the product's own public path (``tpsviz.evaluate`` and the comparisons of ``tpsviz compare``):

- false alarms: how often a predictor truthful to the mode's target gets a label other than trustworthy;
- power: how often each known distortion gets its label, and how often a wrong one;
- coverage of the 95% intervals of mean TPS, skill, a paired Δ, an unpaired Δ and the AUROC, against
  true values from a large simulation of the same scenario (cached under bench/.cache/);
- recalibration: the bias of raw signals converted to probabilities, against the target.

Each rate comes with its Monte-Carlo SE √(p(1 − p)/n_logs). The default design takes about 10 minutes
on 2 cores and rewrites docs/validation.md; ``--quick`` is the small version the test suite runs,
``--full`` runs 5 times as many logs.

Usage: .venv/bin/python bench/validate.py [--quick | --full] [--workers 2] [--out docs/validation.md]
                                          [--json PATH|-] [--cache DIR]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one BLAS thread per worker
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from validate_measure import (  # noqa: E402
    QUANTITIES, Spec, fit_population, log_seed, measure_log, population_constants, truth_batch)
from validate_markdown import write_markdown  # noqa: E402
from validate_report import missed, summarise, summary_text  # noqa: E402
from tpsviz.synthetic.validation import VALIDATION_AGENT  # noqa: E402

BASE_SEED = 20_261_207
#: the truth: batches × runs per batch of the large simulation of a scenario (quick: smaller)
TRUTH = {"default": (20, 10_000), "quick": (6, 5_000)}
#: bump when what a truth batch computes changes (the cache key)
TRUTH_VERSION = 3


def design(kind: str) -> list[Spec]:
    """The scenarios: 3 headline scenarios (one per censoring mode, 200 runs, the short budget that
    cuts off about 40% of runs) with 400 logs each, then a fractional design over the other factors."""
    if kind == "quick":
        return [Spec("quick-simple", "simple", 200, "short", False, "uniform", 24),
                Spec("quick-exact", "exact", 200, "short", False, "uniform", 16)]
    specs = [
        Spec("simple-200-short", "simple", 200, "short", False, "uniform", 400, True),
        Spec("exact-200-short", "exact", 200, "short", False, "uniform", 400, True),
        Spec("complete-200-short", "complete", 200, "short", False, "uniform", 400, True),
        Spec("simple-200-long", "simple", 200, "long", False, "uniform", 120),
        Spec("simple-200-short-tasks", "simple", 200, "short", True, "uniform", 120),
        Spec("exact-200-short-tasks", "exact", 200, "short", True, "uniform", 120),
        Spec("simple-200-short-back", "simple", 200, "short", False, "back", 120),
        Spec("complete-200-long-back", "complete", 200, "long", False, "back", 120),
        Spec("simple-1000-short", "simple", 1000, "short", False, "uniform", 60),
        Spec("exact-1000-long-back", "exact", 1000, "long", False, "back", 60),
        Spec("complete-1000-long-tasks", "complete", 1000, "long", True, "uniform", 60),
        Spec("simple-50-short", "simple", 50, "short", False, "uniform", 150),
        Spec("complete-50-long", "complete", 50, "long", False, "uniform", 150),
        Spec("exact-50-short-tasks-back", "exact", 50, "short", True, "back", 150),
    ]
    if kind == "full":
        specs = [Spec(**(asdict(s) | {"logs": 5 * s.logs})) for s in specs]
    return specs


def _init_worker() -> None:
    """One BLAS thread in each worker process (the environment is set before numpy loads; threadpoolctl
    holds libraries loaded since)."""
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        pass


def _truth_cache_key(spec: Spec, batches: int, runs: int) -> str:
    text = json.dumps([TRUTH_VERSION, spec.truth_key, batches, runs, repr(VALIDATION_AGENT)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def truths(specs: list[Spec], pool, cache: Path, size: tuple[int, int]) -> dict:
    """The true value of every quantity per truth key (mean over batches, with its MC SE), and the
    scenario's fixed predictor constants; read from the cache or computed and cached."""
    batches, runs = size
    cache.mkdir(parents=True, exist_ok=True)
    out, todo = {}, {}  # (a truth read from the cache says so: "cached": True)
    for spec in specs:
        if spec.truth_key in out or spec.truth_key in todo:
            continue
        path = cache / f"validation-truth-{_truth_cache_key(spec, batches, runs)}.json"
        if path.exists():
            out[spec.truth_key] = json.loads(path.read_text()) | {"cached": True}
        else:
            todo[spec.truth_key] = (spec, path)
    if todo:
        keys = list(todo)
        consts = pool.starmap(population_constants, [(todo[k][0], _truth_seed(k, -1)) for k in keys])
        jobs = [(todo[k][0], _truth_seed(k, b), c, runs) for k, c in zip(keys, consts) for b in range(batches)]
        results = pool.map(truth_batch, jobs, chunksize=1)
        for i, (k, c) in enumerate(zip(keys, consts)):
            vals = results[i * batches:(i + 1) * batches]
            rec = {"constants": c, "batches": batches, "runs_per_batch": runs,
                   "value": {q: float(np.mean([v[q] for v in vals])) for q in QUANTITIES},
                   "tail_share": float(np.mean([v["tail_share"] for v in vals])),
                   "design_effect": float(np.mean([v["design_effect"] for v in vals])),
                   "se": {q: float(np.std([v[q] for v in vals], ddof=1) / np.sqrt(batches)) for q in QUANTITIES}}
            todo[k][1].write_text(json.dumps(rec, indent=1))
            out[k] = rec
    return out


def _truth_seed(key: tuple, batch: int) -> int:
    return log_seed("truth:" + ":".join(map(str, key)), batch + 1, BASE_SEED)


def run(kind: str, workers: int, cache: Path, only=None, logs: int | None = None) -> dict:
    """Run a design (``only``: those scenarios of it; ``logs``: that many logs each): the truths, then
    every log; returns the results (:func:`validate_report.summarise`)."""
    specs = [Spec(**(asdict(s) | ({"logs": logs} if logs else {}))) for s in design(kind) if not only or s.name in only]
    load_before = os.getloadavg()[0]
    if not specs:
        raise SystemExit(f"no scenario of the {kind} design is called {', '.join(only)}")
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers, initializer=_init_worker) as pool:
        truth = truths(specs, pool, cache, TRUTH["quick" if kind == "quick" else "default"])
        t_truth = time.perf_counter() - t0
        jobs = [(s, r, log_seed(s.name, r, BASE_SEED), truth[s.truth_key]["constants"])
                for s in specs for r in range(s.logs)]
        jobs.sort(key=lambda j: -j[0].n_runs)  # the largest logs first: the workers finish together
        records = list(pool.imap_unordered(measure_log, jobs, chunksize=1))
    records.sort(key=lambda r: (r["scenario"], r["rep"]))  # the same results whatever the workers
    elapsed = time.perf_counter() - t0
    return summarise(specs, records, truth, {"design": kind, "workers": workers, "seconds": elapsed,
                                             "cpu_seconds": sum(r["cpu_seconds"] for r in records),
                                             "truth_seconds": t_truth, "fit_population": fit_population(),
                                             "base_seed": BASE_SEED, "commit": _commit(),
                                             "load": [load_before, os.getloadavg()[0]],
                                             "date": time.strftime("%Y-%m-%d")})


def _commit() -> str:
    """The checkout's commit (with "+changes" when its files differ from it), or "?"."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (head or "?") + (" +changes" if dirty else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="the small design of the test suite (~40 logs)")
    size.add_argument("--full", action="store_true", help="5 times the default number of logs")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--out", default=None,
                    help="markdown tables to write (default docs/validation.md; --quick writes none)")
    ap.add_argument("--json", default=None, metavar="PATH", help="write the results as JSON ('-': stdout)")
    ap.add_argument("--cache", default=str(ROOT / "bench" / ".cache"), help="where the true values are cached")
    ap.add_argument("--only", default=None, metavar="NAME,…", help="only these scenarios of the design")
    ap.add_argument("--logs", type=int, default=None, help="logs per scenario instead of the design's")
    ap.add_argument("--from-json", default=None, metavar="PATH",
                    help="simulate nothing: write the tables of results saved by --json (goals judged again)")
    args = ap.parse_args(argv)
    kind = "quick" if args.quick else "full" if args.full else "default"
    only = set(args.only.split(",")) if args.only else None
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())
        results["missed"] = missed(results)
        kind = results["meta"]["design"]
    else:
        results = run(kind, max(1, args.workers), Path(args.cache), only, args.logs)
    out = args.out if args.out is not None else (None if kind == "quick" else str(ROOT / "docs" / "validation.md"))
    if out:
        write_markdown(results, Path(out))
    if args.json == "-":
        print(json.dumps(results, indent=1))
    else:
        print(summary_text(results))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
