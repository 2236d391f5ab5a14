"""Cost of the trajectory bootstrap relative to one point estimate, through the public paths.

Issue 3's target: 2,000 cluster-bootstrap replicates over 100k trajectories cost at most 10×
one point estimate. Synthetic log: N trajectories (default 100,000) of 5–15 steps (≈1M rows),
two predictors (continuous forecasts, and the same rounded to 0.01 as verbal confidences are).

Timed, each as (point estimate, B replicates, ratio):

- TPS: ``compute_tps`` with ``n_boot=0`` vs ``n_boot=B`` (both include scoring; the
  bootstrap adds the CI of every predictor: studentized, the default, and percentile);
- AUROC / AUPRC / T-ECE pooled over steps: ``metrics.<metric>`` vs
  ``metrics.bootstrap_metric`` (point + B replicates);
- paired TPS difference (analytic SE) and paired AUROC difference (``paired_metric_difference``).

Each statistic is timed twice: "first" from an empty cache, so it includes drawing the
2,000 × N resampling counts (``tpsviz.core.resample``), as the first bootstrap of a session does;
"replay" with the counts kept in memory from an earlier bootstrap of the same (N, B, seed),
as every later bootstrap is (another statistic or predictor, a rerun after a setting
changed). Drawing the counts alone is timed too.

    .venv/bin/python bench/bench_inference.py [N_TRAJ] [N_BOOT]
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))  # run from anywhere

import sys
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from tpsviz import ScoreSettings, compute_tps, from_frame
from tpsviz.diagnostics.leaderboard import leaderboard
from tpsviz.core import resample
from tpsviz.core.inference import paired_difference
from tpsviz.diagnostics.metric_bootstrap import bootstrap_metric, paired_metric_difference
from tpsviz.diagnostics.metrics import auprc, auroc, tece


def timed(fn, repeat: int = 1):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def make_log(n_traj: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 16, n_traj)
    g = np.repeat(np.arange(n_traj), lengths)
    t = np.concatenate([np.arange(1, k + 1) for k in lengths])
    y_traj = (rng.random(n_traj) < 0.4).astype(float)
    y = y_traj[g]
    p = np.clip(rng.beta(2, 3, g.size) + 0.25 * y, 0.001, 0.999)
    frame = pd.DataFrame({"trajectory_id": np.char.add("t", g.astype(str)), "step": t,
                          "outcome": y, "conf_cont": p, "conf_grid": np.round(p, 2)})
    return from_frame(frame), p, np.round(p, 2), y, g


def main(n_traj: int = 100_000, n_boot: int = 2000) -> None:
    t0 = time.perf_counter()
    data, p, pg, y, g = make_log(n_traj)
    print(f"{n_traj} trajectories, {g.size} rows, {n_boot} replicates "
          f"(log built in {time.perf_counter() - t0:.1f} s)")
    resample.forget_replay(0)
    t_w = timed(lambda: sum(c.shape[0] for c in resample.count_blocks(n_traj, n_boot, 7)))
    print(f"drawing the resampling counts alone: {t_w:.2f} s "
          f"({t_w / (n_traj * n_boot) * 1e9:.2f} ns per count)")

    s0 = ScoreSettings(censoring="simple", n_boot=0)
    sb = ScoreSettings(censoring="simple", n_boot=n_boot, seed=7)

    def tps_pair():  # the per-run TPS of both predictors, scored from the log
        mat = compute_tps(data, s0).tps_matrix()
        return mat["cont"].to_numpy(), mat["grid"].to_numpy()

    rows = [
        ("TPS, 2 predictors", lambda: compute_tps(data, s0), lambda: compute_tps(data, sb)),
        # the studentized CI (the default) resamples five sums per predictor; the percentile one, one
        ("TPS, percentile CI", lambda: compute_tps(data, s0),
         lambda: compute_tps(data, replace(sb, interval="percentile"))),
        ("AUROC continuous", lambda: auroc(p, y),
         lambda: bootstrap_metric("auroc", p, y, g, n_boot, 7)),
        ("AUROC 0.01 grid", lambda: auroc(pg, y),
         lambda: bootstrap_metric("auroc", pg, y, g, n_boot, 7)),
        ("AUPRC continuous", lambda: auprc(p, y),
         lambda: bootstrap_metric("auprc", p, y, g, n_boot, 7)),
        ("T-ECE 10 bins", lambda: tece(p, y, 10),
         lambda: bootstrap_metric("tece", p, y, g, n_boot, 7)),
        # the paired TPS Δ and its SE are analytic; the bootstrap adds a CI of Δ
        ("paired TPS diff", lambda: paired_difference(*tps_pair(), n_boot=0),
         lambda: paired_difference(*tps_pair(), n_boot=n_boot, seed=7)),
        ("paired AUROC diff", lambda: auroc(p, y) - auroc(pg, y),
         lambda: paired_metric_difference("auroc", p, pg, y, g, n_boot, 7)),
        # everything the dashboard's overview shows: TPS, skill, AUROC/AUPRC/T-ECE pooled
        # and final, for both predictors; its bootstraps share one draw of the counts
        ("leaderboard (all)", lambda: leaderboard(data, s0, n_boot=0),
         lambda: leaderboard(data, sb, n_boot=n_boot, seed=7)),
    ]
    print(f"{'statistic':<20} {'point s':>8} {'first s':>8} {'replay s':>9} "
          f"{'ratio first':>12} {'ratio replay':>13}  target <= 10")
    for name, point, boot in rows:
        tp = timed(point, repeat=3)
        first = []
        for _ in range(2):
            resample.forget_replay(0)
            first.append(timed(boot))
        tf = min(first)
        tr = timed(boot, repeat=2)  # counts replayed from memory
        flag = "ok" if tf / tp <= 10 else "OVER"
        print(f"{name:<20} {tp:8.3f} {tf:8.3f} {tr:9.3f} {tf / tp:12.1f} {tr / tp:13.1f}  {flag}")


if __name__ == "__main__":
    args = [int(x) for x in sys.argv[1:3]]
    main(*args)
