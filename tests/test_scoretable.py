"""A general (α, β) scored in SQL by the verified interpolation table (tpsviz.engines.scoretable):
the same values as the kernel's table (tpsviz.beta_score), the UDF only where the table has no
value, and the DuckDB engine's per-run TPS equal to the in-memory engine's on a log large enough
for the table."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import tpsviz
from table_logs import split_parquet, table_sized_log
from tpsviz.core._fast import kernels
from tpsviz.io.dataset import open_dataset
from tpsviz.engines import scoretable
from tpsviz.engines.runsums import score_from_sums
from tpsviz.engines.duck import sums_duckdb
from tpsviz.core.schedules import parse_schedule
from tpsviz.core.scores import beta_score, exact_branch
from tpsviz.core.tps import ScoreSettings, compute_tps

# (25, 0.5): a branch underflows on part of the grid, whose intervals hold NaN coefficients
FAMILIES = [(0.5, 0.5), (2.0, 1.0), (25.0, 0.5), (-0.5, 0.3)]


def _forecasts(rng) -> np.ndarray:
    """Forecasts over the whole logit range and past the grid's ends, exact 0 and 1, and missing ones."""
    u = rng.uniform(-40, 40, 4000)
    p = 1.0 / (1.0 + np.exp(-u))
    return np.concatenate([p, [0.0, 1.0, 1e-300, 1e-14, 1 - 1e-14, 0.5, np.nan, np.nan]])


class _CountingUDF:
    """Counts the values the UDF scores (it calls scoretable.beta_score)."""

    def __init__(self, monkeypatch):
        self.n = 0
        real = scoretable.beta_score

        def counted(p, branch, alpha, beta, table=None):
            self.n += int(np.size(p))
            return real(p, branch, alpha, beta, table)
        monkeypatch.setattr(scoretable, "beta_score", counted)


@pytest.mark.parametrize("alpha,beta", FAMILIES)
def test_the_sql_table_gives_the_kernels_values(alpha, beta, monkeypatch):
    p = _forecasts(np.random.default_rng(int(alpha * 10 + beta * 100)))
    udf = _CountingUDF(monkeypatch)
    con = duckdb.connect()
    scoretable.register_udf(con, alpha, beta, table=True)
    lookup = scoretable.register(con, alpha, beta)
    assert lookup is not None
    con.register("ps", pa.table({"row": np.arange(p.size), "pc0": pa.array(p, mask=np.isnan(p))}))
    got = con.sql(f"SELECT {lookup.score(0, 1)} AS s1, {lookup.score(0, 0)} AS s0 FROM "
                  f"({lookup.located('ps', 1)}) ORDER BY row").fetchnumpy()
    ok = ~np.isnan(p)
    table = kernels.table_for(exact_branch, alpha, beta)
    for branch in (1, 0):
        s = np.ma.filled(np.ma.asarray(got[f"s{branch}"], dtype=float), np.nan)
        assert np.isnan(s[~ok]).all()  # a missing forecast scores nothing
        want = beta_score(p[ok], branch, alpha, beta, table=True)
        have = s[ok]
        assert np.array_equal(np.isinf(want), np.isinf(have)) and np.array_equal(want[np.isinf(want)], have[np.isinf(have)])
        fin = np.isfinite(want)
        rel = np.abs(have[fin] - want[fin]) / np.maximum(np.abs(want[fin]), 1e-300)
        assert rel.max() <= 1e-13, rel.max()
    # the UDF scored exactly the forecasts the table has no value for (p = 0 or 1, off the grid,
    # an interval where a branch underflows), each branch once; no missing forecast reached it
    p_ok = p[ok]
    off = sum(int(np.isnan(table(p_ok, np.full(p_ok.size, float(b)))).sum()) for b in (0, 1))
    assert udf.n == off
    assert off < 0.4 * 2 * p_ok.size  # (the table scored most of them, both branches)
    if (alpha, beta) == (25.0, 0.5):
        assert np.isnan(table.c0).any()  # (the case with NaN coefficients is exercised)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    folder = split_parquet(table_sized_log(), tmp_path_factory.mktemp("big"), 3)
    return tpsviz.load(folder), open_dataset(folder)


@pytest.mark.parametrize("alpha,beta,eps,sched", [(0.5, 0.5, 1e-6, "uniform"), (0.5, 0.5, 0.0, "linear"),
                                                   (25.0, 0.5, 0.0, "uniform"), (2.0, 1.0, 1e-6, "endpoint")])
def test_duckdb_scores_a_large_log_by_the_table_as_memory_does(big, alpha, beta, eps, sched, monkeypatch):
    data, ds = big
    st = ScoreSettings(alpha=alpha, beta=beta, eps=eps, schedule=parse_schedule(sched), n_boot=0)
    udf = _CountingUDF(monkeypatch)
    got = score_from_sums(sums_duckdb(ds, st), st)
    assert udf.n < 0.05 * data.n_steps  # the table in SQL scored the rows, the UDF the few off it:
    assert (udf.n > 0) == (eps == 0)  # forecasts at 0 and 1 and off the grid, which ε > 0 clips onto it
    ref = compute_tps(data, st)
    a = ref.tps_matrix()
    b = got.per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps").reindex(
        index=a.index, columns=a.columns).to_numpy()
    a = a.to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[np.isinf(a)], b[np.isinf(a)])
    fin = np.isfinite(a)
    rel = np.abs(a[fin] - b[fin]) / np.maximum(np.abs(a[fin]), 1e-300)
    assert rel.max() <= 1e-12, rel.max()


def test_a_dask_partition_scores_by_the_table_too(big, monkeypatch):
    """The map step of the Dask engine (run here in-process) scores a general (α, β) by the
    table in SQL as well; its sums are those of the DuckDB engine (test_engines_dask checks the
    whole engine on a cluster)."""
    from tpsviz.engines.dask_engine import _partition

    data, ds = big
    st = ScoreSettings(alpha=0.5, beta=0.5, eps=0.0, n_boot=0)
    udf = _CountingUDF(monkeypatch)
    part = _partition(tuple(ds.files), ds, st, (), data.n_steps)
    assert 0 < udf.n < 0.05 * data.n_steps  # (forecasts at 0 and 1 and off the grid: the UDF)
    per_run = part["blocks"].to_pandas().groupby("tid")[["a1_0", "a0_0", "a1_1", "a0_1"]].sum(min_count=1)
    sums = sums_duckdb(ds, st)
    per_run = per_run.reindex(sums.runs["trajectory_id"].to_numpy())
    for k, name in enumerate(sums.predictors):
        for field in ("a1", "a0"):
            np.testing.assert_allclose(per_run[f"{field}_{k}"].to_numpy(float), getattr(sums, field)[name], rtol=1e-12)


@pytest.mark.parametrize("alpha,beta", [(-0.5, -0.5), (1.0, 1.0), (0.0, 0.0)])
@pytest.mark.parametrize("eps", [0.0, 1e-6])
def test_closed_forms_need_neither_table_nor_udf(big, alpha, beta, eps, monkeypatch):
    """Boosting, Brier and log are closed forms in SQL (the kernel's, with its edges at p = 0
    and 1): on a large log no row goes to the UDF, and the values are the in-memory ones (the
    table's 2e-10 would not do: the kernel scores these exactly)."""
    data, ds = big
    st = ScoreSettings(alpha=alpha, beta=beta, eps=eps, n_boot=0)
    udf = _CountingUDF(monkeypatch)
    got = score_from_sums(sums_duckdb(ds, st), st)
    assert udf.n == 0
    ref = compute_tps(data, st).tps_matrix()
    b = got.per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps").reindex(
        index=ref.index, columns=ref.columns).to_numpy()
    a = ref.to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[np.isinf(a)], b[np.isinf(a)])
    assert (np.isinf(a).any()) == (eps == 0 and alpha <= 0)  # (p = 0 or 1 on the wrong side: −∞ there)
    fin = np.isfinite(a)
    rel = np.abs(a[fin] - b[fin]) / np.maximum(np.abs(a[fin]), 1e-300)
    assert rel.max() <= 1e-12, rel.max()
