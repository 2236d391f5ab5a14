"""Fast evaluation of beta-family scores over large arrays (private to :mod:`tpsviz.core.scores`).

Work is done in cache-sized blocks (two threads for large inputs: numpy and scipy ufuncs
release the GIL). Closed forms serve log and boosting (Brier is the plain whole-array
expression of ``scores.plain_score``: blocks and threads gained less than 1.5× on it in
``bench/bench_machinery.py``). Other (α, β) use a per-branch
table: g(u) = ln(-S(p)) as a piecewise cubic Hermite polynomial in u = logit(p), whose
node values and analytic slopes come from the exact evaluators, and whose accuracy is
verified at every interval midpoint when the table is built (relative error of S below
``TABLE_TOL``; otherwise the grid is refined, and the exact evaluator is used if even the
finest grid fails). Inputs outside the table's domain are evaluated exactly.
"""

from __future__ import annotations

from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from threading import Lock

import numpy as np

BLOCK = 1 << 16
# two threads from this many rows: below it they gained less than 1.5× (bench/bench_machinery.py:
# 0.8-1.3× at 1M rows, 1.4-1.8× at 10M)
THREAD_MIN = 1 << 22
TABLE_MIN = 20_000
DISTINCT_MIN = 64  # below this many values, sorting them costs more than it saves
TABLE_TOL = 2e-10
_U_MAX = 27.7  # logit range covering p in [1e-12, 1 - 1e-12]
_SMALL_P = 1e-4  # below this, y = 0 rows of the log/boosting closed forms use log1p(-p)


class BadForecast(ValueError):
    """A forecast outside [0, 1] (or NaN)."""


class BadOutcome(ValueError):
    """An outcome other than 0 or 1."""


# ---------------------------------------------------------------------------------------------
# tables


class _Table:
    """Both branches on one grid in u = logit(p): rows [0, N) hold S(·, 0), [N, 2N) S(·, 1).

    Intervals where a branch underflows hold NaN coefficients, so those inputs come out NaN
    and are evaluated exactly by the caller.
    """

    __slots__ = ("inv_h", "n_int", "c0", "c1", "c2", "c3")

    def __init__(self, h: float, coefs: list[np.ndarray]):
        self.inv_h = 1.0 / h
        self.n_int = coefs[0].shape[0] // 2
        self.c0, self.c1, self.c2, self.c3 = (np.ascontiguousarray(c) for c in coefs)

    def __call__(self, p: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Table values of S(p, y); NaN where p is outside the table (or a branch underflows)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            s = 1.0 - p
            np.divide(p, s, out=s)
            np.log(s, out=s)
            s += _U_MAX
            s *= self.inv_h
        top = self.n_int - 1e-9
        out_of_range = ~((s >= 0.0) & (s <= top))
        np.clip(s, 0.0, top, out=s)
        np.nan_to_num(s, copy=False)
        i = s.astype(np.int64)
        s -= i  # s is now the position f in [0, 1) within the interval
        i += (y * self.n_int).astype(np.int64)
        val = np.take(self.c3, i)
        val *= s
        val += np.take(self.c2, i)
        val *= s
        val += np.take(self.c1, i)
        val *= s
        val += np.take(self.c0, i)
        np.exp(val, out=val)
        np.negative(val, out=val)
        if out_of_range.any():
            val[out_of_range] = np.nan
        return val


def _log_p_and_q(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ln p and ln(1-p) for p = 1 / (1 + exp(-u)), without cancellation."""
    return -np.logaddexp(0.0, -u), -np.logaddexp(0.0, u)


def _g_and_slope(u: np.ndarray, exact_pq, branch: int, alpha: float, beta: float):
    # p and 1 - p both straight from u: the node is exactly at u, whatever p rounds to
    p = 1.0 / (1.0 + np.exp(-u))
    q = 1.0 / (1.0 + np.exp(u))
    s = exact_pq(p, q, branch, alpha, beta)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        g = np.log(-s)
        lp, lq = _log_p_and_q(u)
        if branch == 0:  # d ln(-S)/du = p^(α+1) (1-p)^β / (-S)
            slope = np.exp((alpha + 1.0) * lp + beta * lq - g)
        else:  # d ln(-S)/du = -p^α (1-p)^(β+1) / (-S)
            slope = -np.exp(alpha * lp + (beta + 1.0) * lq - g)
    return s, g, slope


def _hermite(g: np.ndarray, d: np.ndarray, h: float, ok: np.ndarray) -> list[np.ndarray]:
    g = np.where(ok, g, 0.0)
    d = np.where(ok, d, 0.0)
    g0, g1, d0, d1 = g[:-1], g[1:], d[:-1] * h, d[1:] * h
    coefs = [g0, d0, 3 * (g1 - g0) - 2 * d0 - d1, 2 * (g0 - g1) + d0 + d1]
    bad = ~(ok[:-1] & ok[1:])
    return [np.where(bad, np.nan, c) for c in coefs]


def _build(exact_pq, alpha: float, beta: float) -> _Table | None:
    for n_int in (2048, 4096, 8192, 16384, 32768):
        h = 2 * _U_MAX / n_int
        u = -_U_MAX + h * np.arange(n_int + 1)
        parts = []
        for branch in (0, 1):
            s, g, d = _g_and_slope(u, exact_pq, branch, alpha, beta)
            ok = np.isfinite(g) & np.isfinite(d) & (np.abs(s) > 1e-280)
            parts.append(_hermite(g, d, h, ok))
        table = _Table(h, [np.concatenate([a, b]) for a, b in zip(*parts)])
        mid = u[:-1] + h / 2
        p_mid = 1.0 / (1.0 + np.exp(-mid))
        worst = 0.0
        for branch in (0, 1):
            exact_mid = exact_pq(p_mid, 1.0 - p_mid, branch, alpha, beta)
            approx = table(p_mid, np.full(p_mid.size, float(branch)))
            use = np.isfinite(approx) & (np.abs(exact_mid) > 1e-280)
            if use.sum() < n_int // 2:
                return None
            rel = np.abs(approx[use] - exact_mid[use]) / np.abs(exact_mid[use])
            worst = max(worst, float(rel.max()))
        if worst <= TABLE_TOL:
            return table
    return None


_TABLES: OrderedDict = OrderedDict()
_TABLE_LOCK = Lock()


def table_for(exact_pq, alpha: float, beta: float) -> _Table | None:
    """The (cached) verified table for (α, β), or None if no grid is accurate enough."""
    key = (alpha, beta)
    with _TABLE_LOCK:
        if key in _TABLES:
            _TABLES.move_to_end(key)
            return _TABLES[key]
    with np.errstate(all="ignore"):  # nodes that overflow are marked invalid, not used
        table = _build(exact_pq, alpha, beta)
    with _TABLE_LOCK:
        _TABLES[key] = table
        while len(_TABLES) > 32:
            _TABLES.popitem(last=False)
    return table


# ---------------------------------------------------------------------------------------------
# block kernels


def _distinct(x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(the distinct values of ``x``, the index that gives ``x`` back from them), or (x, None)
    when fewer than a quarter of its values repeat.

    Forecasts often repeat (a verbal confidence on a grid of 20 values, a constant base rate):
    the exact evaluator then runs once per distinct value. The values are the same bits as
    evaluated one by one: every evaluator is elementwise, and the series' stopping rule looks at
    the same set of values (tests/test_scores.py).
    """
    if x.size < DISTINCT_MIN:
        return x, None
    u, back = np.unique(x, return_inverse=True)
    if u.size * 4 > x.size * 3:
        return x, None
    return u, back


def _exact_branch(p: np.ndarray, exact_pq, branch: int, at0: float, at1: float, alpha,
                  beta) -> np.ndarray:
    """S(p, branch) by the exact evaluator, with the limits at p = 0 and p = 1."""
    out = np.empty_like(p)
    inner = (p > 0.0) & (p < 1.0)
    if inner.any():
        pi = p[inner]
        u, back = _distinct(pi)
        vals = exact_pq(u, 1.0 - u, branch, alpha, beta)
        out[inner] = vals if back is None else vals[back]
    out[p == 0.0] = at0
    out[p == 1.0] = at1
    return out


def _general(pb, yf, ob, alpha, beta, exact_pq, edges, table) -> None:
    s01, s11, s00, s10 = edges
    if table is not None:
        ob[:] = table(pb, yf)
        todo = np.isnan(ob)
        if not todo.any():
            return
        pb, yf = pb[todo], yf[todo]
        vals = np.empty(pb.size)
    else:
        todo = None
        vals = ob
    ones = yf == 1.0
    if ones.any():
        vals[ones] = _exact_branch(pb[ones], exact_pq, 1, s01, s11, alpha, beta)
    zeros = ~ones
    if zeros.any():
        vals[zeros] = _exact_branch(pb[zeros], exact_pq, 0, s00, s10, alpha, beta)
    if todo is not None:
        ob[todo] = vals


def _block(pb, yb, ob, kind, alpha, beta, exact_pq, edges, tables):
    lo = pb.min() if pb.size else 0.0
    hi = pb.max() if pb.size else 0.0
    if not (lo >= 0.0 and hi <= 1.0):
        raise BadForecast
    if yb.dtype.kind in "iub":  # integer/bool outcomes: a range check is enough
        if yb.size and (yb.min() < 0 or yb.max() > 1):
            raise BadOutcome
        yf = yb.astype(np.float64)
    else:
        yf = yb.astype(np.float64, copy=False)
        if np.count_nonzero(yf * (1.0 - yf)):  # NaN and anything but 0/1 fail here
            raise BadOutcome
    if kind in ("log", "boosting"):
        x = yf - 1.0
        x += pb
        np.abs(x, out=x)  # p where y = 1, 1 - p where y = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            if kind == "log":
                np.log(x, out=ob)
            else:
                np.subtract(1.0, x, out=ob)
                ob /= x
                np.sqrt(ob, out=ob)
                ob *= -2.0
        if lo < _SMALL_P:
            fix = (pb < _SMALL_P) & (yf == 0.0)
            if fix.any():
                pf = pb[fix]
                with np.errstate(divide="ignore"):
                    ob[fix] = np.log1p(-pf) if kind == "log" else -2.0 * np.sqrt(pf / (1.0 - pf))
        return
    _general(pb, yf, ob, alpha, beta, exact_pq, edges, tables)


def score(p: np.ndarray, y: np.ndarray, alpha: float, beta: float, edges,
          exact_pq, table: bool | None = None) -> np.ndarray:
    """S(p, y) for flat arrays p (float) and y (0/1), block by block.

    ``edges`` are (S(0,1), S(1,1), S(0,0), S(1,0)); ``exact_pq(p, 1-p, branch, α, β)`` is the
    exact evaluator used where no closed form or verified table applies. ``table``: use the
    verified table for a general (α, β) (None: from ``TABLE_MIN`` values on, where building
    it pays). A caller scoring one log in pieces passes one choice for all of them, so every
    piece gives the values the whole log would (tpsviz.engines).

    Raises
    ------
    BadForecast, BadOutcome
    """
    n = p.size
    out = np.empty(n)
    if (alpha, beta) == (0.0, 0.0):
        kind = "log"
    elif (alpha, beta) == (-0.5, -0.5):
        kind = "boosting"
    else:
        kind = "general"
    tables = None
    if kind == "general" and ((n >= TABLE_MIN) if table is None else table):
        tables = table_for(exact_pq, alpha, beta)

    def work(lo: int, hi: int) -> None:
        for b in range(lo, hi, BLOCK):
            e = min(b + BLOCK, hi)
            _block(p[b:e], y[b:e], out[b:e], kind, alpha, beta, exact_pq, edges, tables)

    if n >= THREAD_MIN:
        mid = (n // 2 // BLOCK) * BLOCK
        with ThreadPoolExecutor(2) as ex:
            for f in [ex.submit(work, 0, mid), ex.submit(work, mid, n)]:
                f.result()
    else:
        work(0, n)
    return out
