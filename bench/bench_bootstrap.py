"""Cost of the trajectory bootstrap relative to one point estimate.

Synthetic log: N trajectories (default 100,000) of 5–15 steps (≈10 on average, ≈1M rows).
Times, in one run: one point estimate and B = 2000 cluster-bootstrap replicates of
AUROC (continuous forecasts: row path; forecasts on a 0.05 grid: dense path), T-ECE and
the mean TPS (log score, uniform weights), and prints replicates / point-estimate ratios.
Generating the resampling counts (``inference.bootstrap_weights``) is timed separately: it is
shared by every statistic of a run and is part of each bootstrap total below.

    .venv/bin/python bench/bench_bootstrap.py [N_TRAJ] [N_BOOT]
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))  # run from anywhere

import sys
import time

import numpy as np

from tpsviz.inference import bootstrap_weights, mean_estimate
from tpsviz.metrics import auroc, metric_replicates, tece
from tpsviz.scores import beta_score


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main(n_traj: int = 100_000, n_boot: int = 2000, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 16, n_traj)
    g = np.repeat(np.arange(n_traj), lengths)
    y_traj = (rng.random(n_traj) < 0.4).astype(float)
    y = y_traj[g]
    p = np.clip(rng.beta(2, 3, g.size) + 0.25 * y, 0.001, 0.999)
    p_grid = np.round(p * 20) / 20
    print(f"{n_traj} trajectories, {g.size} rows, {n_boot} replicates")

    t_w, _ = timed(lambda: sum(w.shape[0] for w in bootstrap_weights(n_traj, n_boot, 7)))
    print(f"bootstrap_weights alone: {t_w:.2f} s")

    def tps_point():
        per_traj = np.bincount(g, weights=beta_score(p, y, 0, 0), minlength=n_traj)
        return per_traj, float(per_traj.mean())

    rows = []
    for name, point, boot in [
        ("AUROC continuous", lambda: auroc(p, y),
         lambda: metric_replicates("auroc", p, y, g, n_boot, 7)),
        ("AUROC 0.05 grid", lambda: auroc(p_grid, y),
         lambda: metric_replicates("auroc", p_grid, y, g, n_boot, 7)),
        ("T-ECE (10 bins)", lambda: tece(p, y, 10),
         lambda: metric_replicates("tece", p, y, g, n_boot, 7)),
        ("mean TPS (log)", lambda: tps_point()[1],
         lambda: mean_estimate(tps_point()[0], n_boot=n_boot, seed=7)),
    ]:
        t_point, _ = timed(point)
        t_boot, _ = timed(boot)
        rows.append((name, t_point, t_boot))
    print(f"{'statistic':<18} {'point s':>8} {'boot s':>8} {'ratio':>7} {'ratio excl. weights':>20}")
    for name, tp, tb in rows:
        print(f"{name:<18} {tp:8.3f} {tb:8.2f} {tb / tp:7.1f} {max(tb - t_w, 0) / tp:20.1f}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    main(*args)
