"""How often the verdict names each known distortion, over seeds (docs/theory.md §8 quotes the figures).

Synthetic logs without a step budget (no censoring); predictors are known distortions of the true
q_t: truthful, σ(logit q ± 1), slope ×2.5 and ×0.4 around the mean, independent noise.

Usage: .venv/bin/python bench/verdict_labels.py [--runs 400] [--seeds 20] [--scenario webshop-like]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tpsviz.longform import from_frame  # noqa: E402
from tpsviz.synthetic import SCENARIOS, simulate  # noqa: E402
from tpsviz.tps import ScoreSettings  # noqa: E402
from tpsviz.verdict import verdicts  # noqa: E402


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _logit(p):
    return np.log(p) - np.log1p(-p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--scenario", default="webshop-like", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    sc = replace(SCENARIOS[args.scenario], budget=400)
    counts: dict = collections.defaultdict(collections.Counter)
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        sim = simulate(sc, n_trajectories=args.runs, seed=seed)
        df = sim.steps[["trajectory_id", "step", "outcome", "censored"]].copy()
        q = sim.rows["q"].to_numpy()
        lq, c = _logit(q), _logit(q.mean())
        rng = np.random.default_rng(seed + 1000)
        df["conf_truthful"] = q
        df["conf_optimistic"] = _sig(lq + 1.0)
        df["conf_pessimistic"] = _sig(lq - 1.0)
        df["conf_overconfident"] = _sig(c + 2.5 * (lq - c))
        df["conf_underconfident"] = _sig(c + 0.4 * (lq - c))
        df["conf_uninformative"] = _sig(c + 0.5 * rng.standard_normal(len(df)))
        for name, v in verdicts(from_frame(df), ScoreSettings(censoring="complete", n_boot=200)).items():
            counts[name][v.label] += 1
    for name, c in counts.items():
        expected = "trustworthy" if name == "truthful" else name
        print(f"{name:>15}: {c[expected]}/{args.seeds} as {expected!r}; all labels {dict(c)}")
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
