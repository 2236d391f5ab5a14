"""One engine interface (tpsviz.engines.interface.Engine): the memory, DuckDB and Dask engines
each implement it, and on a small log all three give the same per-trajectory sums (RunSums), the
same sample of runs, and the same scores through score_from_sums; a caller never asks which
engine it holds."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest
from table_logs import split_parquet

from tpsviz.core.schedules import parse_schedule
from tpsviz.core.tps import ScoreSettings
from tpsviz.engines import ENGINE_NAMES, OUT_OF_CORE, get_engine
from tpsviz.engines.interface import Engine
from tpsviz.engines.runsums import RunSums, score_from_sums
from tpsviz.io.dataset import open_dataset

from test_engines import DEMO, _log_with_everything

SETTINGS = [ScoreSettings(n_boot=0),
            ScoreSettings(alpha=2.0, beta=3.0, eps=1e-6, schedule=parse_schedule("endpoint"), n_boot=0),
            ScoreSettings(alpha=1.0, beta=1.0, schedule=parse_schedule("front:0.9"), n_boot=0),
            ScoreSettings(schedule=parse_schedule("column"), n_boot=0)]


@pytest.fixture(scope="module")
def engines():
    """Every engine, open; the Dask engine on a 2-worker LocalCluster, as test_engines_dask.py."""
    with get_engine("memory") as memory, get_engine("duckdb") as duck, get_engine("dask") as dask:
        yield {"memory": memory, "duckdb": duck, "dask": dask}


@pytest.fixture(scope="module")
def small_log(tmp_path_factory):
    """A log with censored runs (with and without q_z), missing forecasts, forecasts at 0 and 1
    and a weight column, its runs numbered 1..T (the Dask engine's positional schedules need it),
    cut through runs into three Parquet files."""
    df = _log_with_everything()
    df["step"] = df.groupby("trajectory_id").cumcount() + 1
    return open_dataset(split_parquet(df, tmp_path_factory.mktemp("log"), 3))


def _public_signature(f) -> list:
    return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


def test_every_engine_implements_the_protocol(engines):
    assert set(engines) == set(ENGINE_NAMES) and set(OUT_OF_CORE) < set(ENGINE_NAMES)
    for name, engine in engines.items():
        assert isinstance(engine, Engine), name
        assert engine.name == name
        for method in ("runsums", "sample", "describe"):
            assert _public_signature(getattr(engine, method)) == _public_signature(
                getattr(Engine, method))[1:], (name, method)  # (the protocol's own, less self)
        assert engine.intervals is None or callable(engine.intervals) and engine.intervals.words
    with pytest.raises(ValueError, match="unknown engine"):
        get_engine("spark")


def _same_sums(a: RunSums, b: RunSums) -> None:
    """Two engines' sums of one log: the same runs in the same order, predictors and counts;
    the sums equal to 1e-12 (relative), missing on the same runs. A1 is compared where a run has
    a forecast and can end in success (Y = 1 or censored), A0 where it has one and can end in
    failure: elsewhere the run is not scored by them, and RunSums leaves them to the engine (NaN
    or 0, never read)."""
    assert a.predictors == b.predictors and a.n_steps == b.n_steps
    assert list(a.runs["trajectory_id"].astype(str)) == list(b.runs["trajectory_id"].astype(str))
    for col in ("length", "outcome", "censored", "q_z"):
        np.testing.assert_array_equal(a.runs[col].to_numpy(float), b.runs[col].to_numpy(float), err_msg=col)
    cens, y = a.runs["censored"].to_numpy(bool), a.runs["outcome"].to_numpy(float)
    need = {"a1": cens | (y == 1.0), "a0": cens | (y == 0.0)}
    assert need["a1"].any() and need["a0"].any() and cens.any()
    for name in a.predictors:
        for field in ("a1", "a0", "wsum", "last"):
            rows = need[field] & (a.n_present[name] > 0) if field in need else slice(None)
            x, y = getattr(a, field)[name][rows], getattr(b, field)[name][rows]
            assert np.array_equal(np.isnan(x), np.isnan(y)), (name, field)
            np.testing.assert_allclose(x, y, rtol=1e-12, err_msg=f"{name} {field}")
        for field in ("n_present", "n_clipped"):
            np.testing.assert_array_equal(getattr(a, field)[name], getattr(b, field)[name], err_msg=field)
        p, q = a.pooled[name], b.pooled[name]
        for field in ("value", "pos", "neg", "tece_n", "tece_pos"):
            np.testing.assert_array_equal(getattr(p, field), getattr(q, field), err_msg=f"{name} {field}")
        np.testing.assert_allclose(p.tece_gap, q.tece_gap, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("settings", SETTINGS, ids=["log", "beta-endpoint", "brier-front", "column"])
def test_all_three_engines_give_the_same_runsums(engines, small_log, settings):
    sums = {name: engine.runsums(small_log, settings) for name, engine in engines.items()}
    for name, s in sums.items():
        assert isinstance(s, RunSums) and s.engine == name
    _same_sums(sums["memory"], sums["duckdb"])
    _same_sums(sums["memory"], sums["dask"])
    # and every number of the report from them, the same way for all (the Dask engine's own bootstrap aside)
    got = {name: score_from_sums(s, settings, intervals=engines[name].intervals) for name, s in sums.items()}
    for name in OUT_OF_CORE:
        np.testing.assert_allclose(got[name].summary["tps_mean"], got["memory"].summary["tps_mean"], rtol=1e-12)
        np.testing.assert_allclose(got[name].metrics[["auroc", "tece_pooled"]].to_numpy(float),
                                   got["memory"].metrics[["auroc", "tece_pooled"]].to_numpy(float), rtol=1e-12)


def test_every_engine_draws_the_same_sample_of_runs(engines, tmp_path):
    ds = open_dataset(split_parquet(pd.read_csv(DEMO["webshop-like"]), tmp_path / "d", 3))
    frames = {name: engine.sample(ds, 25, seed=7)[0] for name, engine in engines.items()}
    ids = {name: sorted(set(f["trajectory_id"])) for name, f in frames.items()}
    assert len(ids["memory"]) == 25 and ids["memory"] == ids["duckdb"] == ids["dask"]


def test_each_engine_says_how_it_ran(engines):
    assert engines["duckdb"].describe("asked for") == "duckdb, out of core (asked for)"
    assert engines["dask"].describe("asked for") == (
        "dask, map-reduce on a local cluster of 2 worker processes (asked for); CIs: Poisson bootstrap, "
        "weights hashed from (trajectory id, replicate)")
    assert engines["dask"].describe("asked for", intervals=False).endswith("processes (asked for)")
    assert engines["memory"].describe("asked for") == "memory (asked for)"
