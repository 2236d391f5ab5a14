"""Each piece of private machinery (``tpsviz.core._fast``) against the plain library call doing the same job.

Issue 11, point 5: a custom path is kept only where it beats the plain call by more than 1.5×
here. Every figure is a ratio, plain seconds / custom seconds, measured in this one run (best of
3); ``keep`` marks ratios above 1.5, ``plain`` the others (``info``: not the same job).

Resampling counts (``tpsviz.core.resample``, :mod:`tpsviz.core._fast.counts`) for (N, B) =
(450, 2000), (10,000, 2000), (100,000, 2000):

- sampler: ``count_blocks`` from an empty replay cache vs ``np.bincount(rng.integers(0, n, n))``
  per replicate and vs ``Generator.multinomial(n, [1/n]*n)`` (the same law; the multinomial is
  timed on a subset of replicates and scaled to B). A Poisson bootstrap,
  ``rng.poisson(1.0, (B, n))``, is shown for information only: its rows do not sum to n, so it
  approximates the multinomial bootstrap, it does not draw it (also scaled from a subset);
- threads: the same draw, and ``counts_times`` from an empty cache, on one thread vs two;
- product: ``counts_times`` (x of 3 columns, counts kept) vs the plain product of the same
  kept counts, ``c.astype(float64) @ x`` per group of 64 replicates;
- replay: ``counts_times`` drawing the counts vs reading them kept from the first call;
- end to end: the plain bootstrap of sums (bincount counts @ x, replicate by replicate) vs
  ``counts_times`` from an empty cache.

Scores (``tpsviz.core.scores.beta_score``, :mod:`tpsviz.core._fast.kernels`) for 1M and 10M rows, p
uniform in (1e-6, 1 - 1e-6): blocks, threads and tables vs ``scores.plain_score`` (whole-array
numpy closed forms for log, Brier and boosting; the exact ``scipy.special`` evaluator for
general (α, β)), and the kernel on one thread vs two (two only from ``THREAD_MIN`` = 4.2M rows,
so at 1M rows that row reads ≈ 1). Brier's row reads ≈ 1 too: ``beta_score`` calls
``plain_score`` for it since its block path measured 1.3× (1M rows) and 1.45× (10M) here.

Run (about 2 minutes on 2 cores):

    .venv/bin/python bench/bench_machinery.py [--quick]

``--quick`` drops the largest sizes (N = 100,000 and 10M rows).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere
from _timing import best_time  # noqa: E402

from tpsviz.core import resample  # noqa: E402
from tpsviz.core._fast import counts as fast_counts  # noqa: E402
from tpsviz.core._fast import kernels as fast_kernels  # noqa: E402
from tpsviz.core.scores import beta_score, plain_score  # noqa: E402

GROUP = 64
SEED = 7


def row(what: str, custom: float, plain: float, note: str = "") -> None:
    ratio = plain / custom
    flag = "info" if "other law" in what else "keep" if ratio > 1.5 else "plain"
    print(f"  {what:<44}{custom:>9.3f}{plain:>9.3f}{ratio:>8.2f}  {flag:<5} {note}")


def header(title: str) -> None:
    print(f"\n{title}")
    print(f"  {'':<44}{'custom s':>9}{'plain s':>9}{'ratio':>8}")


def bincount_counts(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    return np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(rows)])


def scaled(fn, n: int, n_boot: int) -> tuple[float, str]:
    """Time ``fn(rows)`` on a subset of replicates and scale to n_boot."""
    rows = min(n_boot, max(50, 5_000_000 // n))
    t = best_time(lambda: fn(rows)) * n_boot / rows
    return t, f"(timed on {rows} replicates, scaled)" if rows < n_boot else ""


def bench_counts(n: int, n_boot: int) -> None:
    header(f"resampling counts, N = {n:,}, B = {n_boot:,}")
    x = np.random.default_rng(1).normal(size=(n, 3))

    def draw() -> None:
        resample.forget_replay(0)
        for _ in resample.count_blocks(n, n_boot, SEED):
            pass

    t_draw = best_time(draw)

    def plain_bincount() -> None:
        rng = np.random.default_rng(SEED)
        for r0 in range(0, n_boot, GROUP):
            bincount_counts(rng, n, min(GROUP, n_boot - r0))

    def plain_multinomial(rows: int) -> None:
        np.random.default_rng(SEED).multinomial(n, np.full(n, 1.0 / n), size=rows)

    def plain_poisson(rows: int) -> None:
        np.random.default_rng(SEED).poisson(1.0, size=(rows, n))

    row("sampler vs bincount per replicate", t_draw, best_time(plain_bincount))
    row("sampler vs Generator.multinomial", t_draw, *scaled(plain_multinomial, n, n_boot))
    t_pois, note = scaled(plain_poisson, n, n_boot)
    row("sampler vs Poisson bootstrap (other law)", t_draw, t_pois, note)

    def product_first() -> None:
        resample.forget_replay(0)
        resample.counts_times(x, n_boot, SEED)

    t_first = best_time(product_first)
    threads = fast_counts._THREADS
    fast_counts._THREADS = 1
    try:
        t_one, t_one_first = best_time(draw), best_time(product_first)
    finally:
        fast_counts._THREADS = threads
    row("two threads vs one (sampler)", t_draw, t_one)
    row("two threads vs one (counts_times)", t_first, t_one_first, "(empty cache)")
    kept = np.vstack(list(resample.count_blocks(n, n_boot, SEED)))
    t_replay = best_time(lambda: resample.counts_times(x, n_boot, SEED))

    def plain_product() -> None:
        for r0 in range(0, n_boot, GROUP):
            kept[r0:r0 + GROUP].astype(np.float64) @ x

    row("counts_times product vs astype(f64) @ x", t_replay, best_time(plain_product),
        "(counts kept)")
    row("replay cache vs drawing again", t_replay, t_first)

    def plain_sums() -> None:
        rng = np.random.default_rng(SEED)
        for r0 in range(0, n_boot, GROUP):
            bincount_counts(rng, n, min(GROUP, n_boot - r0)) @ x

    row("counts_times vs plain bootstrap of sums", t_first, best_time(plain_sums),
        "(empty cache)")
    resample.forget_replay(0)


def bench_scores(n: int) -> None:
    header(f"scores, {n:,} rows")
    rng = np.random.default_rng(0)
    p = rng.uniform(1e-6, 1 - 1e-6, n)
    y = rng.integers(0, 2, n)
    cases = [("log (0, 0)", 0.0, 0.0), ("Brier/2 (1, 1)", 1.0, 1.0),
             ("boosting (-0.5, -0.5)", -0.5, -0.5), ("general (0.5, 2)", 0.5, 2.0),
             ("general (2, 3)", 2.0, 3.0)]
    for label, a, b in cases:
        t_fast = best_time(lambda: beta_score(p, y, a, b))
        t_plain = best_time(lambda: plain_score(p, y, a, b))
        row(f"{label} vs plain_score", t_fast, t_plain)
        if (a, b) == (1.0, 1.0):  # no kernel: nothing runs on threads
            continue
        threshold = fast_kernels.THREAD_MIN
        fast_kernels.THREAD_MIN = n + 1
        try:
            t_one = best_time(lambda: beta_score(p, y, a, b))
        finally:
            fast_kernels.THREAD_MIN = threshold
        row(f"{label}: two threads vs one", t_fast, t_one)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="drop N = 100,000 and 10M rows")
    args = ap.parse_args()
    print("ratio = plain seconds / custom seconds, best of 3; keep a custom path if > 1.5")
    for n in (450, 10_000) if args.quick else (450, 10_000, 100_000):
        bench_counts(n, 2000)
    for rows in (1_000_000,) if args.quick else (1_000_000, 10_000_000):
        bench_scores(rows)


if __name__ == "__main__":
    main()
