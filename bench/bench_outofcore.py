"""The out-of-core engine against a bare DuckDB query over the same files (issue 12).

Each case runs in a fresh Python process; seconds and peak resident memory (VmHWM) are
reported, and the engine's time as a ratio of the bare query's, measured in the same run:

  bare      one SQL GROUP BY computing the per-trajectory log TPS (simple censoring, ε = 1e-6)
            of every conf_ column: the baseline
  pertraj   the per-trajectory part of sums (what the bare query computes, with every check): the
            main pass, its checks and the per-run table, without the pooled AUROC/T-ECE counts
  sums      tpsviz.engines.duck.sums_duckdb: per-run sums, checks and metric counts
  score     sums + score_from_sums (TPS with bootstrap CIs, skill, metrics)
  dask      tpsviz.engines.dask_engine.sums_dask on a 2-worker LocalCluster (one file per task;
            peak is the client's, the workers' own peaks are summed in "workers_peak_mb")
  cli       the whole `tpsviz score DIR --engine duckdb` (sums, TPS with bootstrap CIs, skill,
            metrics, verdicts on a 20,000-run sample, the printed report)
  compare   the whole `tpsviz compare DIR --baseline sharp --engine duckdb` (paired TPS on all runs;
            make_dataset.py's predictors)
  allruns   the dashboard's "Score all runs" button: sums + score with 200 bootstrap replicates
  sample    what the dashboard does first on a dataset above TPSVIZ_MAX_ROWS: read a random
            sample of 5,000 runs (tpsviz.load(..., sample=...)) and score it (no bootstrap)

Make a dataset first: .venv/bin/python bench/make_dataset.py /tmp/ds --rows 2e7 --files 10

Usage: .venv/bin/python bench/bench_outofcore.py DATASET_DIR [--n-boot 2000] [--cases bare,pertraj,sums,score,cli,compare,allruns,sample,dask] [--rounds N]

With ``--rounds N`` the cases run in turn N times (bare, pertraj, bare, pertraj, ...): each ratio is
taken against the bare query of its own round, and the median ratio of each case is printed at the
end. On this VM the same query varies by ±20% from one hour to the next (docs/architecture.md,
"Scale"), so a ratio from one pair of runs says little.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
t = time.perf_counter()
{body}
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print(json.dumps({{"seconds": time.perf_counter() - t, "peak_mb": peak}}))
"""

BARE = r"""
import duckdb, glob
files = sorted(glob.glob({folder!r} + "/**/*.parquet", recursive=True))
con = duckdb.connect(config={{"threads": 2}})
cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet({{files}})").fetchall()
        if r[0].startswith("conf_")]
p = "greatest(least({{c}}, 1 - 1e-6), 1e-6)"
sums = ", ".join(f"sum(CASE WHEN outcome = 1 THEN ln({{p.format(c=c)}}) ELSE ln(1 - {{p.format(c=c)}}) END)"
                 for c in cols)
con.sql(f"SELECT trajectory_id, {{sums}} FROM read_parquet({{files}}) GROUP BY trajectory_id").to_arrow_table()
"""

ENGINE = r"""
from tpsviz.io.dataset import open_dataset
from tpsviz.engines.runsums import score_from_sums
from tpsviz.engines.duck import sums_duckdb
from tpsviz.core.tps import ScoreSettings
st = ScoreSettings(n_boot={n_boot})
sums = sums_duckdb(open_dataset({folder!r}), st)
if {score}:
    score_from_sums(sums, st)
"""

PERTRAJ = r"""
import shutil
from tpsviz.io.dataset import open_dataset
from tpsviz.engines import duck, onepass
from tpsviz.core.tps import ScoreSettings
st = ScoreSettings()
ds = open_dataset({folder!r})
con, spill, source, plan = duck.open_plan(ds)
runs = onepass.run_pass(con, plan, source, st)
assert not onepass.defects(plan, runs)
notes = []
duck.numbering_note(runs, notes)
duck.to_sums(ds, plan, st, runs, notes, lambda n_labelled, partial: dict(), "duckdb")
con.close()
shutil.rmtree(spill, ignore_errors=True)
"""

SAMPLE = r"""
import dataclasses
import tpsviz
from tpsviz.io.loading import limits_from_env
lim = dataclasses.replace(limits_from_env(), max_rows=5_000_000)
data = tpsviz.load({folder!r}, limits=lim, sample=(5_000, 20260101))
tpsviz.compute_tps(data, tpsviz.ScoreSettings(n_boot=0))
"""

CLI = r"""
import contextlib, io
from tpsviz.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["score", {folder!r}, "--engine", "duckdb", "--n-boot", "{n_boot}"])
assert rc == 0, rc
"""

COMPARE = r"""
import contextlib, io
from tpsviz.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["compare", {folder!r}, "--baseline", "sharp", "--engine", "duckdb"])
assert rc == 0, rc
"""

DASK = r"""
from tpsviz.io.dataset import open_dataset
from tpsviz.engines.dask_engine import cluster, sums_dask
from tpsviz.core.tps import ScoreSettings
if __name__ == "__main__":
    with cluster(n_workers=2) as client:
        sums_dask(open_dataset({folder!r}), ScoreSettings(), client=client)
        peaks = client.run(lambda: next(int(l.split()[1]) for l in open("/proc/self/status")
                                        if l.startswith("VmHWM")) / 1024)
    print(json.dumps({{"workers_peak_mb": sum(peaks.values())}}))
"""


def _run(body: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), body=body)],
                         capture_output=True, text=True, timeout=7200)
    try:
        lines = [json.loads(x) for x in out.stdout.strip().splitlines() if x.startswith("{")]
        return {k: v for line in lines for k, v in line.items()}
    except (IndexError, json.JSONDecodeError):
        return {"seconds": float("nan"), "peak_mb": float("nan"),
                "error": (out.stderr.strip().splitlines() or ["?"])[-1][:120]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--cases", default="bare,sums,score")
    ap.add_argument("--rounds", type=int, default=1, help="run the cases in turn this many times")
    args = ap.parse_args()
    folder = str(Path(args.folder).resolve())
    bodies = {"bare": BARE.format(folder=folder),
              "pertraj": PERTRAJ.format(folder=folder),
              "sums": ENGINE.format(folder=folder, n_boot=args.n_boot, score=False),
              "score": ENGINE.format(folder=folder, n_boot=args.n_boot, score=True),
              "dask": DASK.format(folder=folder),
              "sample": SAMPLE.format(folder=folder),
              "allruns": ENGINE.format(folder=folder, n_boot=200, score=True),
              "cli": CLI.format(folder=folder, n_boot=args.n_boot),
              "compare": COMPARE.format(folder=folder)}
    ratios: dict = {}
    for _ in range(args.rounds):
        res = {}
        for case in args.cases.split(","):
            res[case] = _run(bodies[case])
            r = res[case]
            ratio = ""
            if "bare" in res and case != "bare":
                ratios.setdefault(case, []).append(r["seconds"] / res["bare"]["seconds"])
                ratio = f"{ratios[case][-1]:.1f}x bare"
            workers = f"(workers {r['workers_peak_mb']:.0f} MB)" if "workers_peak_mb" in r else ""
            print(f"{case:<6} {r['seconds']:8.1f} s  peak {r['peak_mb']:7.0f} MB {workers} {ratio} {r.get('error', '')}",
                  flush=True)
    if args.rounds > 1:
        for case, rs in ratios.items():
            rs = sorted(rs)
            print(f"{case:<6} median {statistics.median(rs):.2f}x bare over {len(rs)} rounds "
                  f"({', '.join(f'{x:.2f}' for x in rs)})")


if __name__ == "__main__":
    main()
