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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tpsviz.synthetic.agent import SCENARIOS, known_distortions  # noqa: E402
from tpsviz.core.tps import ScoreSettings  # noqa: E402
from tpsviz.diagnostics.verdict import verdicts  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--scenario", default="webshop-like", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    counts: dict = collections.defaultdict(collections.Counter)
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        data = known_distortions(args.scenario, args.runs, seed, budget=400)
        for name, v in verdicts(data, ScoreSettings(censoring="complete", n_boot=200)).items():
            counts[name][v.label] += 1
    for name, c in counts.items():
        expected = "trustworthy" if name == "truthful" else name
        print(f"{name:>15}: {c[expected]}/{args.seeds} as {expected!r}; all labels {dict(c)}")
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
