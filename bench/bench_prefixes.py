"""How much of each replay prompt repeats the prompt before it (issue 47 point 4), run by hand:

    python bench/bench_prefixes.py [LOG] [--max-chars N]

For every run of LOG (default: the demo's 200-run tau-bench log) and every pair of consecutive agent
steps, the shared prefix of the two judge prompts as a fraction of the later prompt's length: the
part a provider's prefix cache can serve. Prints the median and quartiles over all pairs, and over
the pairs whose later prompt was cut to the bound. Counted here with plain string comparison, no
model and no network.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tpsviz.forecasts.prompts import load_prompts  # noqa: E402
from tpsviz.io.harness.transcripts import DEFAULT_MAX_CHARS, read_transcripts, render_prefix  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("log", nargs="?", default=str(Path(__file__).resolve().parents[1] / "demo_data"
                                                  / "tau-bench-airline-gpt-4o.json"))
    ap.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS)
    args = ap.parse_args()
    prompts = load_prompts()
    transcripts, _ = read_transcripts(args.log)
    every, cut = [], []
    for tr in transcripts:
        before = None
        for t in range(1, tr.steps + 1):
            prefix, truncated = render_prefix(tr, t, args.max_chars)
            prompt = prompts.judge_prompt(prefix)
            if before is not None:
                share = len(os.path.commonprefix([before, prompt])) / len(prompt)
                every.append(share)
                if truncated:
                    cut.append(share)
            before = prompt
    for label, xs in (("all consecutive pairs", every), ("pairs whose later prompt was cut", cut)):
        if xs:
            q = statistics.quantiles(xs, n=4)
            print(f"{label}: {len(xs):,}; shared prefix / prompt: median {statistics.median(xs):.3f} "
                  f"(quartiles {q[0]:.3f}, {q[2]:.3f}); mean {statistics.fmean(xs):.3f}")


if __name__ == "__main__":
    main()
