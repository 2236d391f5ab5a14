"""Write a large synthetic long-format dataset as a folder of Parquet files (issue 12 benchmarks).

One run per trajectory id ``r<number>``; each run has a hidden difficulty, a length of 1–40 steps
(mean ≈ 23.4), and is censored (outcome empty) when it reaches the budget of 40 steps unfinished.
Three predictors: ``conf_truthful`` (a noisy but calibrated signal of the run's success
probability), ``conf_verbal`` (saturated, optimistic) and ``conf_token`` (informative but
under-confident). Trajectories are written in blocks of ``--runs-per-file`` runs; with
``--split`` the last run of every file continues in the next file (a trajectory that spans files).

Generated in chunks, so memory stays bounded whatever ``--rows``.

Usage: .venv/bin/python bench/make_dataset.py OUT_DIR [--rows 100_000_000] [--files 50] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BUDGET = 40


def _chunk(rng: np.random.Generator, first_run: int, n_runs: int) -> pa.Table:
    """``n_runs`` runs numbered from ``first_run`` as one long-format Arrow table."""
    skill = rng.normal(0.0, 1.5, n_runs)
    p_success = 1.0 / (1.0 + np.exp(-skill))
    finish = rng.integers(1, BUDGET + 8, n_runs)             # steps the run needs to finish
    length = np.minimum(finish, BUDGET)
    censored = finish > BUDGET
    y = (rng.random(n_runs) < p_success).astype(np.float64)
    outcome = np.where(censored, np.nan, y)
    run = np.repeat(np.arange(n_runs), length)
    starts = np.r_[0, np.cumsum(length)[:-1]]
    step = np.arange(run.size) - np.repeat(starts, length) + 1
    frac = step / np.repeat(length, length)
    # the signal sharpens towards the run's outcome as the run goes on
    logit_q = np.repeat(skill, length) + frac * np.repeat(np.where(y == 1, 2.0, -2.0), length)
    noise = rng.normal(0.0, 0.3, run.size)
    truthful = 1.0 / (1.0 + np.exp(-(logit_q + noise)))
    verbal = np.clip(np.round(0.75 + 0.25 * truthful, 2), 0.0, 1.0)
    token = 1.0 / (1.0 + np.exp(-0.5 * (logit_q + rng.normal(0.0, 0.5, run.size))))
    ids = np.char.add("r", np.char.zfill((first_run + run).astype(str), 8))
    return pa.table({
        "trajectory_id": pa.array(ids, type=pa.string()),
        "step": pa.array(step.astype(np.int32)),
        "outcome": pa.array(outcome[run], mask=np.isnan(outcome[run])),
        "conf_sharp": pa.array(truthful),
        "conf_verbal": pa.array(verbal),
        "conf_token": pa.array(token),
    })


def write_dataset(out: Path, rows: int, files: int, seed: int = 0, split: bool = False) -> dict:
    """Write ≈ ``rows`` step rows as ``files`` Parquet files under ``out``; returns the counts."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    mean_len = (BUDGET * (BUDGET + 1) / 2 + 7 * BUDGET) / (BUDGET + 7)  # E[min(finish, budget)]
    runs_per_file = max(1, int(rows / mean_len / files))
    total_rows = total_runs = 0
    carry = None
    for k in range(files):
        table = _chunk(rng, total_runs, runs_per_file)
        total_runs += runs_per_file
        if carry is not None:
            table = pa.concat_tables([carry, table])
            carry = None
        if split and k < files - 1:  # move the second half of the last run into the next file
            ids = table.column("trajectory_id")
            last = ids[len(ids) - 1].as_py()
            n_last = int(np.sum(np.asarray(ids.to_numpy(zero_copy_only=False)) == last))
            keep = len(table) - n_last // 2
            carry = table.slice(keep)
            table = table.slice(0, keep)
        pq.write_table(table, out / f"part-{k:04d}.parquet", row_group_size=1 << 20)
        total_rows += len(table)
    return {"rows": total_rows, "runs": total_runs, "files": files}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--rows", type=float, default=100_000_000)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", action="store_true", help="let runs span two files")
    args = ap.parse_args()
    t = time.perf_counter()
    info = write_dataset(args.out, int(args.rows), args.files, args.seed, args.split)
    print(f"wrote {info['rows']:,} rows, {info['runs']:,} runs, {info['files']} files in "
          f"{time.perf_counter() - t:.1f} s to {args.out}")


if __name__ == "__main__":
    main()
