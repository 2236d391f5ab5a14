"""Benchmark: monitoring, multi-class TPS-k and continuous TPS-CRPS (issue 13), as ratios to the binary
``compute_tps`` of a log with as many step rows, timed in the same run.

Run:  .venv/bin/python bench/bench_outcomes.py [--runs 20000]

Logs (synthetic, exact truth): the drifting tau2-like log (``tpsviz.synthetic.drift``), the
multi-class log (``tpsviz.synthetic.multiclass``, 4 predictors × 3 labels) and the continuous log
(``tpsviz.synthetic.continuous``, 3 Gaussian, a 19-quantile and a 20-member predictor), each with
``--runs`` runs. Baseline: ``compute_tps`` of the drifting log (2 predictors) without a bootstrap (the
binary scoring pass; its bootstrap replays cached counts on a repeat, which would flatter it). The
cases run with ``--boot`` replicates where they have a bootstrap. Printed per case: seconds (best of
3) and the ratio to the baseline per step row, so a ratio of 2 means twice the binary pass's cost for
the same number of rows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_time  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=20_000)
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap replicates of every TPS (default 2000)")
    args = ap.parse_args()

    from tpsviz import ScoreSettings, compute_tps, from_frame
    from tpsviz.io.kinds.continuous import continuous_from_frame
    from tpsviz.outcomes.continuous_pit import pit_histogram
    from tpsviz.outcomes.continuous import tps_crps
    from tpsviz.diagnostics.monitoring.monitor import monitor
    from tpsviz.io.kinds.multiclass import multiclass_from_frame
    from tpsviz.outcomes.multiclass_reliability import reliability_ovr
    from tpsviz.outcomes.multiclass import tps_k
    from tpsviz.synthetic.continuous import simulate_continuous
    from tpsviz.synthetic.drift import simulate_drift
    from tpsviz.synthetic.multiclass import simulate_multiclass

    n = args.runs
    drift = from_frame(simulate_drift(n_runs=n, change=int(0.6 * n))[0])
    mc = multiclass_from_frame(simulate_multiclass(n_runs=n)[0])
    ct = continuous_from_frame(simulate_continuous(n)[0])
    settings = ScoreSettings(n_boot=args.boot)
    base = best_time(lambda: compute_tps(drift, ScoreSettings(n_boot=0)))
    per_row = base / drift.n_steps
    print(f"runs: {n:,} per log; bootstrap {args.boot} replicates")
    print(f"baseline compute_tps (binary, {drift.n_steps:,} rows, 2 predictors, no bootstrap): {base:.3f} s")
    print(f"{'case':<52}{'rows':>10}{'seconds':>9}{'× baseline/row':>16}")

    def row(label, rows, fn):
        t = best_time(fn)
        print(f"{label:<52}{rows:>10,}{t:>9.3f}{t / rows / per_row:>16.2f}")

    row("monitor: windows of 100 + CUSUM alarm (2 predictors)", drift.n_steps,
        lambda: monitor(drift, settings, by="timestamp", window=100, alarm_on="agent"))
    row("monitor: windows only", drift.n_steps,
        lambda: monitor(drift, settings, by="timestamp", window=100, alarm_on=""))
    n_mc = len(mc.steps)
    row("tps_k log, exact censoring (4 predictors)", n_mc, lambda: tps_k(mc, rule="log", censoring="exact",
                                                                       n_boot=args.boot))
    row("tps_k brier, exact censoring (4 predictors)", n_mc, lambda: tps_k(mc, rule="brier", censoring="exact",
                                                                         n_boot=args.boot))
    row("reliability_ovr, 3 labels (1 predictor, 200 reps)", n_mc,
        lambda: reliability_ovr(mc, "truthful", n_boot=200))
    n_ct = len(ct.steps)
    row("tps_crps (5 predictors, 3 forms)", n_ct, lambda: tps_crps(ct, n_boot=args.boot))
    row("pit_histogram, ensemble predictor", n_ct, lambda: pit_histogram(ct, "ensemble"))


if __name__ == "__main__":
    main()
