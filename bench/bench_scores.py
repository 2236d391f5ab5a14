"""Benchmark: scoring 10M step rows, as a ratio to `np.log(p)` timed in the same run.

Run:  .venv/bin/python bench/bench_scores.py [--rows 10000000]

Prints, for each score, speed = t(np.log) / t(score) (1.0 = as fast as np.log; targets:
log/Brier >= 0.5, general (alpha, beta) >= 0.1) and, for the per-trajectory aggregation,
t(aggregation) / t(log scoring) (target <= 2). Best of 3 runs each.
"""

from __future__ import annotations

import argparse
import time

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tpsviz import ScoreSettings, beta_score, compute_tps
from tpsviz.core.data import TrajectoryData


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--steps-per-run", type=int, default=10)
    args = ap.parse_args()
    n = args.rows
    rng = np.random.default_rng(0)
    p = rng.uniform(1e-6, 1 - 1e-6, n)
    y = rng.integers(0, 2, n)
    t_log = best_of(lambda: np.log(p))
    print(f"rows: {n:,}   baseline np.log(p): {t_log:.3f} s")
    print(f"{'score':<28}{'seconds':>9}{'speed vs np.log':>17}{'target':>9}")
    cases = [("log (0, 0)", 0.0, 0.0, 0.5), ("Brier/2 (1, 1)", 1.0, 1.0, 0.5),
             ("general (2.5, 0.7)", 2.5, 0.7, 0.1), ("general (0.5, 3)", 0.5, 3.0, 0.1),
             ("general (-0.5, 2) [info]", -0.5, 2.0, None)]
    t_score = {}
    for label, a, b, target in cases:
        t = best_of(lambda: beta_score(p, y, a, b))
        t_score[label] = t
        tgt = f">= {target}" if target else ""
        print(f"{label:<28}{t:>9.3f}{t_log / t:>17.3f}{tgt:>9}")

    # per-trajectory aggregation inside compute_tps (one predictor, uniform weights, log score)
    k = args.steps_per_run
    n_traj = n // k
    codes = np.repeat(np.arange(n_traj), k)
    steps = pd.DataFrame({"trajectory_id": codes.astype(str) if n <= 2_000_000 else codes,
                          "step": np.tile(np.arange(1, k + 1), n_traj), "traj": codes,
                          "t": np.tile(np.arange(1, k + 1), n_traj), "conf_x": p[: n_traj * k]})
    traj = pd.DataFrame({"trajectory_id": np.arange(n_traj).astype(str),
                         "outcome": rng.integers(0, 2, n_traj).astype(float),
                         "censored": np.zeros(n_traj, bool), "q_z": np.nan,
                         "length": np.full(n_traj, k), "last_step": np.full(n_traj, k)})
    data = TrajectoryData(steps, traj, ["x"], {}, "bench", [])
    settings = ScoreSettings(n_boot=0)
    t_full = best_of(lambda: compute_tps(data, settings), repeat=5)
    yy = traj["outcome"].to_numpy()[codes]
    t_only = best_of(lambda: beta_score(p[: n_traj * k], yy, 0.0, 0.0), repeat=5)
    agg = t_full - t_only
    print(f"compute_tps, log score, {n_traj:,} runs (no bootstrap): {t_full:.3f} s; "
          f"scoring alone {t_only:.3f} s")
    print(f"per-trajectory aggregation / scoring: {agg / t_only:.2f}   (target <= 2)")


if __name__ == "__main__":
    main()
