"""Cost of the trajectory bootstrap relative to one point estimate, through the public paths.

Issue 3's target: 2,000 cluster-bootstrap replicates over 100k trajectories cost at most 10×
one point estimate. Synthetic log: N trajectories (default 100,000) of 5–15 steps (≈1M rows),
two predictors (continuous forecasts, and the same rounded to 0.01 as verbal confidences are).

Timed, each as (point estimate, B replicates, ratio):

- TPS: ``compute_tps`` with ``n_boot=0`` vs ``n_boot=B`` (both include scoring; the
  bootstrap adds the percentile CI of every predictor);
- AUROC / AUPRC / T-ECE pooled over steps: ``metrics.<metric>`` vs
  ``metrics.bootstrap_metric`` (point + B replicates);
- paired TPS difference (analytic SE) and paired AUROC difference (``paired_metric_difference``).

``inference.bootstrap_weights`` (integers + bincount) is timed alone first, from a cold cache;
the statistics are then timed with the counts replayed from memory (as every bootstrap after
the first in a session is); "ratio, first" adds the draw back in.

    .venv/bin/python bench/bench_inference.py [N_TRAJ] [N_BOOT]
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))  # run from anywhere

import sys
import time

import numpy as np
import pandas as pd

from tpsviz import ScoreSettings, compute_tps, from_frame
from tpsviz import inference
from tpsviz.inference import bootstrap_weights, paired_difference
from tpsviz.metrics import auprc, auroc, bootstrap_metric, paired_metric_difference, tece


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
    inference._CACHE.clear()
    t_w = timed(lambda: sum(w.shape[0] for w in bootstrap_weights(n_traj, n_boot, 7)))
    print(f"drawing the resampling counts (first bootstrap of a session): {t_w:.2f} s; "
          "later bootstraps with the same (n, n_boot, seed) replay them from memory")

    s0 = ScoreSettings(censoring="simple", n_boot=0)
    sb = ScoreSettings(censoring="simple", n_boot=n_boot, seed=7)
    mat = compute_tps(data, s0).tps_matrix()
    a, b = mat["cont"].to_numpy(), mat["grid"].to_numpy()
    rows = [
        ("TPS, 2 predictors", lambda: compute_tps(data, s0), lambda: compute_tps(data, sb)),
        ("AUROC continuous", lambda: auroc(p, y),
         lambda: bootstrap_metric("auroc", p, y, g, n_boot, 7)),
        ("AUROC 0.01 grid", lambda: auroc(pg, y),
         lambda: bootstrap_metric("auroc", pg, y, g, n_boot, 7)),
        ("AUPRC continuous", lambda: auprc(p, y),
         lambda: bootstrap_metric("auprc", p, y, g, n_boot, 7)),
        ("T-ECE 10 bins", lambda: tece(p, y, 10),
         lambda: bootstrap_metric("tece", p, y, g, n_boot, 7)),
        ("paired TPS diff", lambda: float(np.mean(a - b)),
         lambda: paired_difference(a, b, n_boot=n_boot, seed=7)),
        ("paired AUROC diff", lambda: auroc(p, y) - auroc(pg, y),
         lambda: paired_metric_difference("auroc", p, pg, y, g, n_boot, 7)),
    ]
    print(f"{'statistic':<20} {'point s':>8} {'boot s':>8} {'ratio':>8} {'ratio, first':>13}"
          "  target <= 10")
    print(f"{'':<20} {'':>8} {'(replay)':>8} {'(replay)':>8} {'(incl. draw)':>13}")
    for name, point, boot in rows:
        tp = timed(point, repeat=3)
        tb = timed(boot)  # counts replayed from memory (drawn once above)
        flag = "ok" if tb / tp <= 10 else "OVER"
        print(f"{name:<20} {tp:8.3f} {tb:8.2f} {tb / tp:8.1f} {(tb + t_w) / tp:13.1f}  {flag}")


if __name__ == "__main__":
    args = [int(x) for x in sys.argv[1:3]]
    main(*args)
