"""A general (α, β) scored in SQL by the verified interpolation table (docs/architecture.md, "Engines").

Where no closed form is exact, :func:`tpsviz.beta_score` scores a large log by a table verified
to 2e-10 relative error (:mod:`tpsviz.core._fast.kernels`): on a grid in u = logit(p), one cubic
Hermite piece per interval for ln(−S(p, 0)) and one for ln(−S(p, 1)). The DuckDB engine used to
call it through an Arrow UDF on every row; on two cores both threads then queue for Python's GIL,
and the pass took 26.7 s at 20M rows against 3.7 s for the same table evaluated in SQL
(2026-12-03, α = β = 0.5).

Here the table's coefficients are a relation on the connection (``tpsviz_coefs``: interval
``i``, then ``c0_0 … c3_0`` of S(·, 0) and ``c0_1 … c3_1`` of S(·, 1)), each predictor's
interval is found in SQL as the kernel finds it, and the piece is evaluated in the kernel's
order of operations, so a value differs from the in-memory one only where DuckDB's ``ln`` and
numpy's ``log`` round differently (measured: at most 1.3e-15 relative on a run's sum). A row the
table does not cover (p = 0 or 1, |logit p| beyond the grid, an interval where a branch
underflows) is scored by the UDF ``tps_s<branch>`` (:func:`register_udf`), as the kernel scores
it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpsviz.core._fast import kernels
from tpsviz.core.scores import beta_score, exact_branch
from tpsviz.io.dataset.duckdb_source import sql_double
import pyarrow as pa

__all__ = ["Lookup", "register", "register_udf"]

RELATION = "tpsviz_coefs"


@dataclass(frozen=True)
class Lookup:
    """The SQL of the table registered on one connection (:func:`register`).

    ``n_int`` intervals of width 1 / ``inv_h`` in u = logit(p) + ``u_max``."""

    n_int: int
    inv_h: float
    u_max: float = kernels._U_MAX

    def position(self, k: int) -> str:
        """``tu<k>``: the position of the forecast ``pc<k>`` on the grid,
        ``(ln(p / (1 − p)) + u_max) · (1/h)``; NULL for p = 0 or 1 (DuckDB refuses ln(0))."""
        pc = f"pc{k}"
        return (f"CASE WHEN {pc} > 0.0 AND {pc} < 1.0 THEN (ln({pc} / (1.0 - {pc})) + {sql_double(self.u_max)}) * "
                f"{sql_double(self.inv_h)} END AS tu{k}")

    def interval(self, k: int) -> str:
        """``ti<k>``: the interval of ``tu<k>``; NULL off the grid (as the kernel, a position past
        n − 1e-9 is off it), so no coefficients join there."""
        return (f"CASE WHEN tu{k} >= 0.0 AND tu{k} <= {sql_double(self.n_int - 1e-9)} THEN CAST(floor(tu{k}) AS BIGINT) END "
                f"AS ti{k}")

    def located(self, relation: str, n_conf: int) -> str:
        """``SELECT`` of ``relation`` (rows with the clipped forecasts ``pc0 … pc<n_conf−1>``) with
        each forecast's position ``tu<k>``, interval ``ti<k>`` and that interval's coefficients
        ``c<j>_<branch>_<k>``, which :meth:`score` reads (the one place the table is joined)."""
        ks = range(n_conf)
        coefs = ", ".join(f"t{k}.c{j}_{b} AS c{j}_{b}_{k}" for k in ks for b in (0, 1) for j in range(4))
        joins = " ".join(f"LEFT JOIN {RELATION} t{k} ON t{k}.i = r.ti{k}" for k in ks)
        return (f"SELECT r.*, {coefs} FROM (SELECT *, {', '.join(self.interval(k) for k in ks)} FROM "
                f"(SELECT *, {', '.join(self.position(k) for k in ks)} FROM {relation})) r {joins}")

    @staticmethod
    def score(k: int, branch: int) -> str:
        """S(pc<k>, branch) over :meth:`located` rows: the piece evaluated as the kernel does,
        ``−exp(((c3·f + c2)·f + c1)·f + c0)`` with f the position within the interval; the UDF
        where the table has no value."""
        c = [f"c{j}_{branch}_{k}" for j in range(4)]
        f = f"(tu{k} - ti{k})"
        piece = f"((({c[3]} * {f} + {c[2]}) * {f} + {c[1]}) * {f} + {c[0]})"
        return (f"CASE WHEN pc{k} IS NULL THEN NULL WHEN {c[0]} IS NULL OR isnan({c[0]}) THEN tps_s{branch}(pc{k}) "
                f"ELSE -exp({piece}) END")


def register(con, alpha: float, beta: float) -> Lookup | None:
    """Register the verified table of (α, β) on ``con`` as ``tpsviz_coefs``; None when no grid
    reaches the table's accuracy (every row then goes to the UDF, as in memory)."""

    table = kernels.table_for(exact_branch, alpha, beta)
    if table is None:
        return None
    n = table.n_int
    cols = {"i": np.arange(n, dtype=np.int64)}
    for branch in (0, 1):  # rows [0, n) of the kernel's arrays hold S(·, 0), rows [n, 2n) S(·, 1)
        for j in range(4):
            cols[f"c{j}_{branch}"] = np.asarray(getattr(table, f"c{j}")[branch * n:(branch + 1) * n])
    con.register(RELATION, pa.table(cols))
    return Lookup(n, float(table.inv_h))


def register_udf(con, alpha: float, beta: float, table: bool) -> None:
    """Register ``tps_s1(p)`` and ``tps_s0(p)`` on ``con``: S(p, 1) and S(p, 0) by
    :func:`tpsviz.beta_score`, as vectorised Arrow UDFs.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    alpha, beta : float
        The score.
    table : bool
        Whether :func:`tpsviz.beta_score` scores by its verified table (as it does a log of
        ``TABLE_MIN`` rows or more): the UDF then gives every row the value in-memory scoring
        gives it.
    """
    import duckdb  # (here, not at the top: the core's start-up stays without DuckDB)

    def make(branch: int):
        def f(p):
            x = p.to_numpy(zero_copy_only=False)
            out = np.full(x.shape, np.nan)
            ok = ~np.isnan(x)
            out[ok] = beta_score(x[ok], branch, alpha, beta, table)
            return pa.array(out, mask=~ok)
        return f

    for branch in (1, 0):
        con.create_function(f"tps_s{branch}", make(branch), [duckdb.sqltype("DOUBLE")],
                            duckdb.sqltype("DOUBLE"), type="arrow", side_effects=False)
