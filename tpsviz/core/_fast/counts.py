"""Trajectory-bootstrap resampling counts, drawn fast and exactly (private to :mod:`tpsviz.core.resample`).

A bootstrap replicate draws n trajectories with replacement from n; what a statistic needs
is how often each trajectory was drawn: a vector of counts c ~ Multinomial(n; 1/n, …, 1/n).
For 2,000 replicates over 100k trajectories that is 2·10⁸ counts, which is far more work
than the statistic itself, so the counts are drawn by a method built for speed that is still
exact (the law of every replicate is the multinomial, not an approximation of it):

1. **Poisson stage.** Draw c_i ~ Poisson(λ) independently, with λ = 1 − 3/√n slightly below
   one. Given their total T, such counts are Multinomial(T; 1/n, …) (a standard property of
   independent Poisson variables).
2. **Top-up.** Add n − T further draws, uniform over the n trajectories (⌊U·n⌋ from 53-bit
   uniform doubles). A Multinomial(T) vector plus n − T uniform draws is Multinomial(n),
   whatever T was. The Poisson total
   exceeds n with probability ≈ 0.13% per replicate (three standard deviations); such a
   replicate is discarded and drawn entirely by uniform draws, which is Multinomial(n) too.

The Poisson stage uses one random byte per count: P(k) is written as (1 − z)·Q(k) + z·R(k),
where Q gives each count a whole number of the 256 byte values (so a count is a few
comparisons of one byte) and the remainder R, of weight z ≈ 1%, is drawn with a uniform
double for cells picked independently with probability z. The probabilities are exact to
double precision (``_poisson_layout``; ``layout_pmf`` and its test check this).

Replicates are drawn in groups of 64; group g takes its random numbers from
``SeedSequence(seed, spawn_key=(g,))``, so the counts depend only on (n, n_boot, seed), never
on how many threads drew them. Groups run on up to two threads: numpy releases the GIL in
its random generators, array loops, ``astype`` and ``np.dot`` (but not in ``np.copyto`` or
``np.matmul``, which is why the products below use the former).

The counts of recent (n, n_boot, seed) are kept in memory, one byte per count (at most
``_CACHE_MAX_CELLS`` in all; 100k runs × 2,000 replicates is 200 MB): every later bootstrap
with the same replicates (another statistic, another predictor, a rerun after a setting
changed) reads them instead of drawing them again, and gets identical replicates.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from tpsviz.core.cancel import current_check
from tpsviz.core._fast.blas import one_blas_thread

__all__ = ["count_blocks", "counts_times", "poisson_rate", "layout_pmf", "forget_replay"]

# replicates drawn together (a "group"): one task for a thread, one random stream
_GROUP_ROWS = 64
# counts drawn or multiplied at a time (one byte each, a few bytes of work space per count):
# small enough to stay in a core's cache, large enough that numpy's per-call cost is small
_TILE_CELLS = 1 << 20
# the Poisson rate is 1 - _TOPUP_SD / sqrt(n): its total stays below n with prob ≈ 99.87%
_TOPUP_SD = 3.0
# bootstraps of up to this many counts multiply in float64, larger ones in float32
_EXACT_CELLS = 1 << 24
# counts kept for replay (uint8 cells, ≈ bytes); larger bootstraps are drawn and used group
# by group without being kept
_CACHE_MAX_CELLS = 450_000_000
_CACHE: OrderedDict = OrderedDict()
_USED: dict = {}   # key -> time.monotonic() of its last use (forget_replay)
_CACHE_LOCK = threading.Lock()
_THREADS = max(1, min(2, os.cpu_count() or 1))
# smaller bootstraps run on the calling thread (handing work to threads costs more than it saves);
# above, two threads make counts_times 1.6-1.7× faster from N = 10k runs (bench/bench_machinery.py)
_PARALLEL_CELLS = 1 << 22
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_SCRATCH = threading.local()


def poisson_rate(n: int) -> float:
    """The Poisson rate λ(n) = 1 − 3/√n of the first stage.

    Parameters
    ----------
    n : int
        Number of trajectories.

    Returns
    -------
    float
        λ(n), or 0 for n ≤ 9 (every draw is then uniform).
    """
    return max(0.0, 1.0 - _TOPUP_SD / math.sqrt(n)) if n > 0 else 0.0


@lru_cache(maxsize=32)
def _poisson_layout(lam: float) -> tuple[tuple[int, ...], float, np.ndarray]:
    """How random bytes become Poisson(λ) counts: P(k) = (1 − z)·Q(k) + z·R(k).

    Q gives every count a whole number of the 256 byte values (Q(k) = q_k / 256, Σ q_k = 256),
    so a count drawn from Q is a few comparisons of one byte. The remainder, weight z ≈ 1%,
    is drawn from R by a uniform double, for cells picked independently with probability z.
    z is the smallest weight for which every R(k) is ≥ 0.

    Returns
    -------
    starts : tuple of int
        Q-count = #{s in starts : byte >= s}.
    z : float
        Probability that a cell's count is drawn from R instead.
    cdf : ndarray
        Cumulative R(0), R(1), … (R-count = #{k : U >= cdf[k]}).
    """
    k = np.arange(64)
    log_fact = np.array([math.lgamma(i + 1.0) for i in k])
    pmf = np.exp(-lam + k * math.log(lam) - log_fact)

    def fits(z: float) -> bool:
        return np.floor(256 * pmf / (1 - z)).sum() >= 256

    lo, hi = 0.0, 0.5
    if fits(lo):  # never for a Poisson pmf, but keeps the bisection honest
        hi = lo
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    z = hi
    q = np.floor(256 * pmf / (1 - z)).astype(np.int64)
    while q.sum() > 256:  # give back whole bytes from the largest counts' shares
        q[np.argmax(q)] -= 1
    r = np.maximum(pmf - (1 - z) * q / 256, 0.0) / z
    cdf = np.cumsum(r) / r.sum()
    cdf = cdf[: int(np.searchsorted(cdf, 1.0 - 1e-17)) + 1]
    cdf[-1] = 1.0
    starts = tuple(int(s) for s, w in zip(np.cumsum(q)[:-1], q[1:]) if w > 0)
    return starts, z, cdf


def layout_pmf(lam: float) -> np.ndarray:
    """The count probabilities the byte layout implies (tests compare it with Poisson's).

    Parameters
    ----------
    lam : float
        Poisson rate, in (0, 1).

    Returns
    -------
    ndarray
        P(count = k) for k = 0, 1, … as the first stage draws it.
    """
    starts, z, cdf = _poisson_layout(lam)
    q = np.diff(np.array((0,) + starts + (256,))) / 256
    r = np.diff(np.r_[0.0, cdf])
    out = np.zeros(max(q.size, r.size))
    out[: q.size] += (1 - z) * q
    out[: r.size] += z * r
    return out


def _bernoulli_positions(rng: np.random.Generator, size: int, z: float) -> np.ndarray:
    """Indices in [0, size) picked independently with probability z (geometric gaps)."""
    scale = 1.0 / math.log1p(-z)
    found = []
    end = -1
    while True:
        m = int(size * z + 6 * math.sqrt(size * z) + 16)
        gaps = np.floor(np.log1p(-rng.random(m)) * scale) + 1
        pos = end + np.cumsum(gaps)
        found.append(pos)
        end = pos[-1]
        if end >= size:
            break
    pos = np.concatenate(found) if len(found) > 1 else found[0]
    return pos[: int(np.searchsorted(pos, size))].astype(np.int64)


def _scratch(name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A per-thread buffer reused across calls (fresh memory costs page faults)."""
    size = int(np.prod(shape))
    buf = getattr(_SCRATCH, name, None)
    if buf is None or buf.size < size or buf.dtype != dtype:
        buf = np.empty(max(size, 1), dtype)
        setattr(_SCRATCH, name, buf)
    return buf[:size].reshape(shape)


def _q_counts(rng: np.random.Generator, flat: np.ndarray, starts: tuple[int, ...]) -> None:
    """Fill a contiguous 1-d uint8 array with counts from Q: one random byte each."""
    raw = rng.bit_generator.random_raw(-(-flat.size // 8)).view(np.uint8)[:flat.size]
    np.greater_equal(raw, starts[0], out=flat.view(np.bool_))
    hit = _scratch("hit", (flat.size,), np.bool_)
    for s in starts[1:]:
        np.greater_equal(raw, s, out=hit)
        np.add(flat, hit.view(np.uint8), out=flat)


def _poisson_counts(rng: np.random.Generator, flat: np.ndarray, lam: float) -> None:
    """Fill a contiguous 1-d uint8 array with independent Poisson(λ) counts, λ > 0.

    Q from one random byte per count, then R for the counts picked with probability z.
    """
    starts, z, cdf = _poisson_layout(lam)
    _q_counts(rng, flat, starts)
    pos = _bernoulli_positions(rng, flat.size, z)
    flat[pos] = np.searchsorted(cdf, rng.random(pos.size), side="right")


def _top_up(rng: np.random.Generator, rows: np.ndarray, n: int, total: np.ndarray) -> None:
    """Complete Poisson counts (rows × n, total per row) to Multinomial(n) in place."""
    reset = total > n  # the Poisson total overshot: this replicate is drawn uniformly instead
    rows[reset] = 0
    short = np.where(reset, n, n - total)
    cells = np.repeat(np.arange(rows.shape[0], dtype=np.int64) * n, short)
    # uniform draws as floor(U·n) from 53-bit doubles (uniform to ~n/2^53, i.e. to double
    # precision); Generator.random releases the GIL, Generator.integers does not
    u = rng.random(cells.size)
    u *= n
    cells += u.astype(np.int64)
    cells.sort()
    flat = rows.reshape(-1)
    # (a uint8 count cannot overflow in practice: P(count >= 255) < 1e-400)
    flat[cells] += 1  # a cell drawn several times is incremented once here …
    again = cells[1:][cells[1:] == cells[:-1]]
    if again.size:  # … and once more for each repeat
        np.add.at(flat, again, 1)


def _group_counts(n: int, seed: int, group: int, out: np.ndarray,
                  lam: float | None = None) -> np.ndarray:
    """Fill ``out`` (rows × n, uint8, C-contiguous) with the counts of replicate group ``group``.

    Rows are drawn a band at a time (about ``_TILE_CELLS`` counts), so that each step after
    the random bytes works on data still in cache. ``lam`` overrides the Poisson rate (tests
    use it to reach every branch on small n).
    """
    rows = out.shape[0]
    lam = poisson_rate(n) if lam is None else lam
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(group,)))
    flat = out.reshape(-1)
    band = max(1, _TILE_CELLS // n)
    sum_dtype = np.uint32 if n < 1 << 24 else np.int64  # uint32 sums twice as fast
    for r in range(0, rows, band):
        part = flat[r * n:min(r + band, rows) * n]
        if lam > 0:
            _poisson_counts(rng, part, lam)
            total = part.reshape(-1, n).sum(axis=1, dtype=sum_dtype).astype(np.int64)
        else:
            part[:] = 0
            total = np.zeros(part.size // n, np.int64)
        _top_up(rng, part.reshape(-1, n), n, total)
    return out


def _groups(n_boot: int) -> list[tuple[int, int, int]]:
    """(group index, first replicate, rows) covering n_boot replicates."""
    return [(g, r0, min(_GROUP_ROWS, n_boot - r0))
            for g, r0 in enumerate(range(0, n_boot, _GROUP_ROWS))]


def _map(fn: Callable, items: list, cells: int) -> list:
    """fn over items on the bootstrap threads (one thread below ``_PARALLEL_CELLS`` counts)."""
    global _POOL
    if _THREADS == 1 or len(items) < 2 or cells < _PARALLEL_CELLS:
        return [fn(it) for it in items]
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_THREADS, thread_name_prefix="tpsviz-bootstrap")
    with one_blas_thread():  # (OpenBLAS's threads would compete with ours: blas.py)
        return list(_POOL.map(fn, items))


def _cached(n: int, n_boot: int, seed: int) -> np.ndarray | None:
    key = (int(n), int(n_boot), int(seed))
    with _CACHE_LOCK:
        counts = _CACHE.get(key)
        if counts is not None:
            _CACHE.move_to_end(key)
            _USED[key] = time.monotonic()
    return counts


def forget_replay(idle_seconds: float = 0.0) -> int:
    """Drop kept resampling counts not used for ``idle_seconds`` (all of them by default).

    A long-running server calls it so idle memory goes back.

    Parameters
    ----------
    idle_seconds : float
        Counts used more recently than this are kept.

    Returns
    -------
    int
        The bytes released.
    """
    now = time.monotonic()
    freed = 0
    with _CACHE_LOCK:
        for key in [k for k in _CACHE if now - _USED.get(k, 0.0) >= idle_seconds]:
            freed += _CACHE.pop(key).nbytes
            _USED.pop(key, None)
    return freed


def _keep(n: int, n_boot: int, seed: int, counts: np.ndarray) -> None:
    with _CACHE_LOCK:
        _CACHE[(int(n), int(n_boot), int(seed))] = counts
        _USED[(int(n), int(n_boot), int(seed))] = time.monotonic()
        total = sum(c.size for c in _CACHE.values())
        while total > _CACHE_MAX_CELLS and len(_CACHE) > 1:
            key, old = _CACHE.popitem(last=False)
            _USED.pop(key, None)
            total -= old.size


def _each_group(n: int, n_boot: int, seed: int, use: Callable) -> None:
    """Call ``use(r0, counts)`` for every group of replicates (on the bootstrap threads).

    The counts come from the cache, or are drawn (and kept if they fit the cache).
    """
    counts = _cached(n, n_boot, seed)
    groups = _groups(n_boot)
    check = current_check()  # the caller's cancellation, carried into the worker threads
    if counts is not None:
        def replay(grp: tuple[int, int, int]) -> None:
            check()
            use(grp[1], counts[grp[1]:grp[1] + grp[2]])

        _map(replay, groups, n * n_boot)
        return
    keep = n * n_boot <= _CACHE_MAX_CELLS
    store = np.empty((n_boot, n), np.uint8) if keep else None

    def draw(grp: tuple[int, int, int]) -> None:
        check()
        g, r0, rows = grp
        out = store[r0:r0 + rows] if keep else _scratch("group", (rows, n), np.uint8)
        use(r0, _group_counts(n, seed, g, out))

    _map(draw, groups, n * n_boot)
    if keep:
        _keep(n, n_boot, seed, store)


def count_blocks(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Yield the resampling counts group by group, each of shape (rows, n), uint8.

    Row r of the concatenated blocks is how often each of the n trajectories is drawn in
    replicate r: Multinomial(n; 1/n, …, 1/n), independent across replicates. The blocks
    are read-only views when the counts are kept for replay.

    Parameters
    ----------
    n : int
        Number of trajectories.
    n_boot : int
        Number of replicates.
    seed : int
        Seed; the same (n, n_boot, seed) always gives the same counts.
    """
    counts = _cached(n, n_boot, seed)
    if counts is None and n * n_boot <= _CACHE_MAX_CELLS:
        _each_group(n, n_boot, seed, lambda r0, c: None)
        counts = _cached(n, n_boot, seed)
    check = current_check()
    for g, r0, rows in _groups(n_boot):
        check()
        if counts is not None:
            view = counts[r0:r0 + rows]
            view.flags.writeable = False
            yield view
        else:
            yield _group_counts(n, seed, g, np.empty((rows, n), np.uint8))


def counts_times(x, n_boot: int, seed: int) -> np.ndarray:
    """C @ x for the resampling counts C (n_boot × n) of :func:`count_blocks`.

    Counts are multiplied over slices of ``_TILE_CELLS`` and the slices summed in float64.
    Up to ``_EXACT_CELLS`` counts in all the products are float64; above, float32 (half the
    memory traffic, twice the arithmetic rate). The columns of x are centred first (every
    row of C sums to n, so C @ x = C @ (x − x̄) + n·x̄ exactly), which makes the float32
    rounding relative to the spread of the replicates rather than to their level (≈1e-5 of
    a replicate SD, against a Monte-Carlo error of ≈2% of it with 2,000 replicates).

    Parameters
    ----------
    x : array_like
        Shape (n,) or (n, k); finite values, one row per trajectory.
    n_boot, seed : int
        As in :func:`count_blocks`.

    Returns
    -------
    ndarray
        Shape (n_boot,) or (n_boot, k), float64.
    """
    x = np.asarray(x, dtype=np.float64)
    vector = x.ndim == 1
    x2 = x[:, None] if vector else x.reshape(x.shape[0], -1) if x.ndim != 2 else x
    n, k = x2.shape
    if not np.isfinite(x2).all():
        raise ValueError("bootstrap sums need finite values")
    n_boot = max(int(n_boot), 0)
    out = np.zeros((n_boot, k))
    if n and n_boot:
        level = x2.mean(axis=0)
        dtype = np.float64 if n * n_boot <= _EXACT_CELLS else np.float32
        xc = (x2 - level).astype(dtype)

        def multiply(r0: int, c: np.ndarray) -> None:
            rows = c.shape[0]
            width = max(1, _TILE_CELLS // rows)
            acc = np.zeros((rows, k))
            part = np.empty((rows, k), dtype)
            for j0 in range(0, n, width):
                # astype and np.dot release the GIL; copyto and matmul do not (measured: with
                # them the two bootstrap threads ran the products one after the other)
                cf = c[:, j0:j0 + width].astype(dtype)
                np.dot(cf, xc[j0:j0 + cf.shape[1]], out=part)
                acc += part
            out[r0:r0 + rows] = acc + n * level

        _each_group(n, n_boot, seed, multiply)
    return out[:, 0] if vector else out
