"""Trajectory-bootstrap resampling counts: the public entry points and the plain path.

A bootstrap replicate draws n trajectories with replacement from n; what a statistic needs is
how often each trajectory was drawn, a vector of counts c ~ Multinomial(n; 1/n, …, 1/n).

:func:`count_blocks` and :func:`counts_times` draw them with the private sampler of
:mod:`tpsviz.core._fast.counts` (exact Poisson stage plus uniform top-up, one random byte per count,
kept in memory for replay), which ``bench/bench_machinery.py`` measures against the plain library
calls. :func:`plain_counts` is the plain path, ``Generator.multinomial``: the same law, other
random numbers; the tests use it as the oracle of the fast sampler.
"""

from __future__ import annotations

import numpy as np

from tpsviz.core._fast.counts import count_blocks, counts_times, forget_replay, layout_pmf, poisson_rate

__all__ = ["count_blocks", "counts_times", "forget_replay", "plain_counts", "poisson_rate",
           "layout_pmf"]


def plain_counts(n: int, n_boot: int, seed: int) -> np.ndarray:
    """Resampling counts by the plain library call, ``Generator.multinomial``.

    The law of every row is that of :func:`count_blocks` (Multinomial(n; 1/n, …, 1/n),
    independent rows); the values are not, since other random numbers are drawn.

    Parameters
    ----------
    n, n_boot : int
        Number of trajectories and of replicates, as in :func:`count_blocks`.
    seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    ndarray
        Shape (n_boot, n), int64; every row sums to n.
    """
    if n <= 0:
        return np.zeros((n_boot, 0), np.int64)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot)
