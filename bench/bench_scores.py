"""Benchmark: scoring 10M step rows, as a ratio to `np.log(p)` timed in the same run; and
compute_tps under each censoring mode, as a ratio to scoring the same rows alone.

Run:  .venv/bin/python bench/bench_scores.py [--rows 10000000] [--runs 20000] [--repo OLD_CHECKOUT]

Prints, for each score, speed = t(np.log) / t(score) (1.0 = as fast as np.log; targets:
log/Brier >= 0.5, general (alpha, beta) >= 0.1) and, for the per-trajectory aggregation,
t(aggregation) / t(log scoring) (target <= 2). Best of 3 runs each.

Then, on a simulated webshop-like log of ``--runs`` runs (about 45% censored, with q_Z; six
predictors), compute_tps without bootstrap under the censoring modes simple, exact (q_Z of the
log) and complete, for log, Brier and a general (alpha, beta) score: the median of ``--repeats``
calls, and t(compute_tps) / t(scoring alone), the baseline timed in the same run: beta_score of every
predictor's forecast on every step row, on its run's outcome (0 for a censored run). With
``--repo PATH`` (another checkout of this repository, e.g. ``git worktree add /tmp/old <commit>``)
the same calls of that checkout's code are timed in the same process, interleaved with these (the
machine's noise hits both alike), with new / old and the largest relative difference of the
predictors' mean TPS (0: the same numbers to the last bit).
``--only rows`` or ``--only censoring`` runs one part.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tpsviz import ScoreSettings, beta_score, compute_tps
from tpsviz.core.data import TrajectoryData
from tpsviz.synthetic.agent import simulate

MODES = ("simple", "exact", "complete")
SCORES = (("log (0, 0)", 0.0, 0.0), ("Brier/2 (1, 1)", 1.0, 1.0), ("general (0.5, 2)", 0.5, 2.0))


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_rows(n: int, k: int) -> None:
    """Scores over n rows against np.log, and the aggregation inside compute_tps (k steps a run)."""
    rng = np.random.default_rng(0)
    p = rng.uniform(1e-6, 1 - 1e-6, n)
    y = rng.integers(0, 2, n)
    t_log = best_of(lambda: np.log(p))
    print(f"rows: {n:,}   baseline np.log(p): {t_log:.3f} s")
    print(f"{'score':<28}{'seconds':>9}{'speed vs np.log':>17}{'target':>9}")
    cases = [("log (0, 0)", 0.0, 0.0, 0.5), ("Brier/2 (1, 1)", 1.0, 1.0, 0.5),
             ("general (2.5, 0.7)", 2.5, 0.7, 0.1), ("general (0.5, 3)", 0.5, 3.0, 0.1),
             ("general (-0.5, 2) [info]", -0.5, 2.0, None)]
    for label, a, b, target in cases:
        t = best_of(lambda: beta_score(p, y, a, b))
        tgt = f">= {target}" if target else ""
        print(f"{label:<28}{t:>9.3f}{t_log / t:>17.3f}{tgt:>9}")

    # per-trajectory aggregation inside compute_tps (one predictor, uniform weights, log score)
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


def checkout(path: str) -> dict:
    """compute_tps, ScoreSettings and simulate of another checkout, imported in this process beside
    this one's (its modules are set aside again, so each function keeps its own package)."""
    ours = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "tpsviz" or k.startswith("tpsviz.")}
    sys.path.insert(0, str(Path(path).resolve()))
    try:
        import tpsviz as old
        from tpsviz.synthetic.agent import simulate as old_simulate
        found = {"compute_tps": old.compute_tps, "ScoreSettings": old.ScoreSettings, "simulate": old_simulate,
                 "file": old.__file__}
    finally:
        sys.path.pop(0)
        for k in [k for k in sys.modules if k == "tpsviz" or k.startswith("tpsviz.")]:
            del sys.modules[k]
        sys.modules.update(ours)
    return found


def timed_pair(calls: list, repeats: int) -> list[float]:
    """Median seconds of each call, the calls interleaved in every repeat."""
    times = [[] for _ in calls]
    for _ in range(repeats):
        for i, fn in enumerate(calls):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def bench_censoring(n_runs: int, repeats: int, repo: str | None) -> None:
    """compute_tps per censoring mode and score, against scoring alone (and an old checkout)."""
    data = simulate("webshop-like", n_trajectories=n_runs, seed=7).to_data()
    old = checkout(repo) if repo else None
    old_data = old["simulate"]("webshop-like", n_trajectories=n_runs, seed=7).to_data() if old else None
    y_row = np.nan_to_num(data.row_outcome)  # (a censored run's rows on outcome 0)
    forecasts = [np.clip(data.forecasts(p), 1e-6, 1 - 1e-6) for p in data.predictors]
    print(f"\ncompute_tps (n_boot=0), webshop-like log: {data.n_trajectories:,} runs "
          f"({data.n_censored:,} censored), {data.n_steps:,} step rows, {len(data.predictors)} predictors; "
          f"median of {repeats}")
    if old:
        print(f"old: {old['file']}")
    head = f"{'mode':<10}{'score':<18}{'ms':>8}{'vs scoring':>12}"
    print(head + (f"{'old ms':>9}{'new/old':>9}{'rel.diff':>9}" if old else ""))
    for mode in MODES:
        for label, a, b in SCORES:
            s = ScoreSettings(alpha=a, beta=b, censoring=mode, n_boot=0)
            calls = [lambda: compute_tps(data, s), lambda: [beta_score(f, y_row, a, b) for f in forecasts]]
            if old:
                s_old = old["ScoreSettings"](alpha=a, beta=b, censoring=mode, n_boot=0)
                calls.append(lambda: old["compute_tps"](old_data, s_old))
            t = timed_pair(calls, repeats)
            line = f"{mode:<10}{label:<18}{t[0] * 1e3:>8.1f}{t[0] / t[1]:>12.2f}"
            if old:
                new_m = compute_tps(data, s).summary["tps_mean"].to_numpy()
                old_m = old["compute_tps"](old_data, s_old).summary["tps_mean"].to_numpy()
                diff = np.max(np.abs(new_m - old_m) / np.abs(old_m))
                line += f"{t[2] * 1e3:>9.1f}{t[0] / t[2]:>9.2f}{'0' if diff == 0 else f'{diff:.0e}':>9}"
            print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--steps-per-run", type=int, default=10)
    ap.add_argument("--runs", type=int, default=20_000, help="runs of the censoring benchmark's log")
    ap.add_argument("--repeats", type=int, default=7, help="calls per median (censoring benchmark)")
    ap.add_argument("--repo", help="another checkout to time in the same run (censoring benchmark)")
    ap.add_argument("--only", choices=("rows", "censoring"), help="run one part")
    args = ap.parse_args()
    if args.only != "censoring":
        bench_rows(args.rows, args.steps_per_run)
    if args.only != "rows":
        bench_censoring(args.runs, args.repeats, args.repo)


if __name__ == "__main__":
    main()
