"""Peak memory of loading hostile and large logs (issue 8), against plain pandas/pyarrow reads
measured in the same run, optionally also for another checkout (e.g. the code before a change).

Each load runs in a fresh Python process; its peak resident memory (VmHWM) is reported.
Cases:
  parquet-30M   30,000,000 constant rows, a few MB on disk (expands in memory when parsed)
  csv-large     a long-format CSV of --csv-rows rows (default 4,000,000, ~300 MB)

Usage: .venv/bin/python bench/bench_memory.py [--repo OTHER_CHECKOUT] [--csv-rows N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
sys.path.insert(0, {repo!r})
t = time.perf_counter()
outcome = "ok"
try:
    {body}
except MemoryError:
    outcome = "MemoryError"
except Exception as exc:
    outcome = type(exc).__name__ + ": " + str(exc).splitlines()[0][:90]
# VmHWM is this process's own peak (ru_maxrss would keep the parent's peak across exec)
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print(json.dumps({{"peak_mb": peak, "seconds": time.perf_counter() - t, "outcome": outcome}}))
"""


def _run(repo: Path, body: str) -> dict:
    code = CHILD.format(repo=str(repo), body=body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=3600)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"peak_mb": float("nan"), "seconds": float("nan"),
                "outcome": "crashed: " + out.stderr.strip().splitlines()[-1][:90]}


def _make_files(tmp: Path, csv_rows: int) -> dict:
    import numpy as np
    import pandas as pd

    files = {}
    pq = tmp / "constant.parquet"
    pd.DataFrame({"trajectory_id": np.zeros(30_000_000, dtype=np.int64), "step": np.int64(1),
                  "outcome": np.int64(1), "conf_a": 0.5}).to_parquet(pq)
    files["parquet-30M"] = pq
    rng = np.random.default_rng(0)
    n_runs = csv_rows // 20
    steps = pd.DataFrame({
        "trajectory_id": np.repeat([f"run-{i:07d}" for i in range(n_runs)], 20),
        "step": np.tile(np.arange(1, 21), n_runs),
        "outcome": np.repeat(rng.integers(0, 2, n_runs), 20),
        "conf_verbal": rng.random(n_runs * 20).round(4),
        "conf_token": rng.random(n_runs * 20).round(4),
        "task": np.repeat([f"task-{i % 500}" for i in range(n_runs)], 20),
    })
    csv = tmp / "large.csv"
    steps.to_csv(csv, index=False)
    files["csv-large"] = csv
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=None, help="another checkout to measure as well (e.g. before)")
    ap.add_argument("--csv-rows", type=int, default=4_000_000)
    args = ap.parse_args()
    repos = [("this", ROOT)] + ([("other", Path(args.repo).resolve())] if args.repo else [])
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        files = _make_files(Path(tmp), args.csv_rows)
        print(f"generated test files in {time.perf_counter() - t:.1f} s: "
              + ", ".join(f"{k} {v.stat().st_size / 2**20:.1f} MB" for k, v in files.items()))
        base_import = _run(ROOT, "import tpsviz")
        print(f"baseline: import tpsviz alone peaks at {base_import['peak_mb']:.0f} MB")
        for case, path in files.items():
            if case.startswith("parquet"):
                ref = _run(ROOT, f"import pyarrow.parquet as pq; pq.read_table({str(path)!r}).to_pandas()")
                ref_name = "pyarrow read_table().to_pandas()"
            else:
                ref = _run(ROOT, f"import pandas as pd; pd.read_csv({str(path)!r})")
                ref_name = "pandas.read_csv"
            print(f"\n{case}: reference {ref_name}: peak {ref['peak_mb']:.0f} MB, {ref['seconds']:.1f} s")
            for label, repo in repos:
                r = _run(repo, f"import tpsviz; tpsviz.load({str(path)!r})")
                print(f"  tpsviz.load ({label:5s} {repo}): peak {r['peak_mb']:6.0f} MB "
                      f"({r['peak_mb'] / ref['peak_mb']:.2f}x reference), {r['seconds']:5.1f} s, "
                      f"{r['outcome']}")


if __name__ == "__main__":
    main()
