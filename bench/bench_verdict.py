"""Cost of a verdict (tpsviz.diagnostics.verdict) against scoring the same predictor with TPS and a 2,000-replicate
bootstrap (tpsviz.compute_tps), measured in the same run on synthetic logs of growing size.

Usage: .venv/bin/python bench/bench_verdict.py [--sizes 450,10000,100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tpsviz  # noqa: E402
from _timing import median_time  # noqa: E402
from tpsviz.synthetic.agent import simulate  # noqa: E402
from tpsviz.diagnostics.verdict import verdict_statistics  # noqa: E402
from tpsviz.diagnostics.verdict.checks import MAX_TEST_RUNS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="450,10000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"{'runs':>8} {'steps':>9} {'predictor':>10} {'verdict s':>10} {'TPS+boot s':>11} {'ratio':>6}")
    for n in (int(x) for x in args.sizes.split(",")):
        data = simulate("tau2-like", n_trajectories=n, seed=1).to_data()
        settings = tpsviz.ScoreSettings(n_boot=2000)
        for name in ("truthful", "verbal"):
            tv = median_time(lambda: verdict_statistics(data, settings, name), args.repeats)
            tb = median_time(lambda: tpsviz.compute_tps(data, settings, [name]), args.repeats)
            print(f"{n:>8} {data.n_steps:>9} {name:>10} {tv:>10.3f} {tb:>11.3f} {tv / tb:>6.2f}", flush=True)
    print(f"(the MCB and DSC tests use at most {MAX_TEST_RUNS:,} runs, a seeded subset)")


if __name__ == "__main__":
    main()
