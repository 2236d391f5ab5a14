"""Engines (issue 12): per-trajectory sums by numpy and by DuckDB over a dataset of files agree
with :func:`tpsviz.compute_tps`, the skill table and the metric table; datasets are checked and
kept inside the data roots; DuckDB reads nothing but the dataset's files."""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.io.dataset import open_dataset
from tpsviz.diagnostics.leaderboard import metric_table, skill_table
from tpsviz.engines.runsums import score_from_sums
from tpsviz.engines import duck, pooled
from tpsviz.engines.duck import sums_duckdb
from tpsviz.engines.memory import sums_in_memory
from tpsviz.engines.runsums import _grid_bounds
from tpsviz.core.errors import LogFormatError
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.io.dataset.duckdb_source import connect, quote_name
from tpsviz.io.files import DataRoots, FileRefused, PathRefused
from tpsviz.core.schedules import parse_schedule
from tpsviz.core.tps import ScoreSettings, compute_tps
from tpsviz.core.censoring import MissingQz, qz_coverage

ROOT = Path(__file__).resolve().parents[1]
DEMO = {name: ROOT / "demo_data" / f"{name}.csv" for name in ("webshop-like", "tau2-like")}
COUNTS = ["n_trajectories", "n_censored", "n_steps", "n_missing", "n_clipped", "n_qz_fallback",
          "n_excluded_censored", "n_no_forecast"]
METRICS = ["auroc", "auprc", "auroc_final", "tece_pooled", "tece_final"]


def _split(df: pd.DataFrame, folder: Path, parts: int = 3, fmt: str = "parquet") -> Path:
    """Write a long frame as ``parts`` files, cutting through runs (a run spans two files)."""
    folder.mkdir(parents=True, exist_ok=True)
    cuts = np.linspace(0, len(df), parts + 1).astype(int)
    for k in range(parts):
        piece = df.iloc[cuts[k]:cuts[k + 1]]
        if fmt == "parquet":
            piece.to_parquet(folder / f"part-{k}.parquet")
        else:
            piece.to_csv(folder / f"part-{k}.csv", index=False)
    return folder


def _log_with_everything(seed: int = 3) -> pd.DataFrame:
    """A log with censored runs with and without q_z, missing forecasts, forecasts at 0 and 1,
    steps not numbered 1..T, and a weight column."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(120):
        length = int(rng.integers(1, 9))
        start = 0 if i % 7 == 0 else (3 if i % 11 == 0 else 1)
        cens = i % 4 == 0
        y = None if cens else int(rng.random() < 0.5)
        qz = (round(float(rng.random()), 3) if i % 8 == 0 else None) if cens else None
        for k in range(length):
            step = start + k + (2 if (i % 13 == 0 and k > 1) else 0)
            a = float(rng.random())
            b = None if rng.random() < 0.1 else float(rng.choice([0.0, 0.2, 0.5, 0.9, 1.0]))
            rows.append({"trajectory_id": f"run-{i:03d}", "step": step, "outcome": y, "q_z": qz,
                         "conf_a": a, "conf_b": b, "weight": float(rng.integers(0, 4)) + 0.5})
    return pd.DataFrame(rows)


def _compare(data, ds, settings, engine="duckdb"):
    sums = sums_duckdb(ds, settings) if engine == "duckdb" else sums_in_memory(data, settings)
    with_qz, n_cens = qz_coverage(data)
    if settings.censoring == "exact" and with_qz < n_cens:  # exact mode is exact: both refuse alike
        with pytest.raises(MissingQz) as a:
            compute_tps(data, settings)
        with pytest.raises(MissingQz) as b:
            score_from_sums(sums, settings)
        assert (a.value.n_missing, a.value.n_censored) == (b.value.n_missing, b.value.n_censored)
        return None, None
    # (the engines' SEs are by run and their CIs percentile)
    ref = compute_tps(data, replace(settings, cluster_by="run", interval="percentile"))
    got = score_from_sums(sums, settings)
    m1 = ref.tps_matrix()
    m2 = got.per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps")
    m2 = m2.reindex(index=m1.index, columns=m1.columns)
    a, b = m1.to_numpy(), m2.to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.array_equal(a[np.isinf(a)], b[np.isinf(a)])  # −inf (ε = 0) on the same runs
    ok = np.isfinite(a)
    rel = np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), 1e-300)
    assert rel.size == 0 or rel.max() <= 1e-12, (settings, rel.max())
    s1, s2 = ref.summary, got.summary.loc[ref.summary.index]
    assert (s1[COUNTS].to_numpy() == s2[COUNTS].to_numpy()).all()
    for col in ("tps_mean", "tps_se", "tps_step_mean", "tps_ci_low", "tps_ci_high"):
        np.testing.assert_allclose(s2[col].to_numpy(float), s1[col].to_numpy(float), rtol=1e-10, atol=1e-12)
    return ref, got


@pytest.fixture(scope="module")
def demo_sets(tmp_path_factory):
    out = {}
    for name, path in DEMO.items():
        folder = _split(pd.read_csv(path), tmp_path_factory.mktemp(name))
        out[name] = (tpsviz.load(path), open_dataset(folder))
    return out


@pytest.mark.parametrize("name", list(DEMO))
@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (1.0, 1.0), (2.0, 3.0), (-0.5, -0.5)])
def test_duckdb_and_memory_sums_give_compute_tps_on_the_demo_logs(demo_sets, name, alpha, beta):
    data, ds = demo_sets[name]
    for sched, cens in itertools.product(["uniform", "linear", "front:0.9", "per-length", "endpoint"],
                                         ["simple", "exact", "complete", "upper"]):
        st = ScoreSettings(alpha=alpha, beta=beta, schedule=parse_schedule(sched), censoring=cens, n_boot=200)
        if sched == "uniform" or cens == "simple":  # the numpy sums on a smaller grid of settings
            _compare(data, ds, st, engine="memory")
        if (alpha, beta) in ((0.0, 0.0), (2.0, 3.0)) or sched in ("uniform", "endpoint"):
            _compare(data, ds, st)


def test_the_paired_tps_comparison_on_all_runs_agrees_with_compare(demo_sets):
    """DatasetScore.paired_tps (the dashboard's all-runs Δ/SE) gives compare.compare's TPS
    columns: the same runs paired, the same Δ, SE and Δ/SE; ε = 0 with an unbounded score too."""
    from tpsviz.diagnostics.compare import compare

    data, ds = demo_sets["tau2-like"]
    for st in (ScoreSettings(n_boot=0), ScoreSettings(alpha=2, beta=3, censoring="complete", n_boot=0),
               ScoreSettings(eps=0.0, n_boot=0)):
        got = score_from_sums(sums_duckdb(ds, st), st, skill_boot=0)
        for base in ("truthful", "verbal"):
            want = compare(data, replace(st, cluster_by="run", interval="percentile"), baseline=base, n_boot=0,
                           metrics=())
            paired = got.paired_tps(base).loc[want.index]
            assert base not in paired.index and len(paired) == len(data.predictors) - 1
            np.testing.assert_array_equal(paired["n_runs"].to_numpy(), want["n_runs"].to_numpy())
            cols = ["tps_delta", "tps_se", "tps_z"]
            np.testing.assert_allclose(paired[cols].to_numpy(float), want[cols].to_numpy(float), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="unknown baseline"):
        got.paired_tps("nobody")


def test_per_run_tps_without_the_pooled_counts_is_the_scored_tps(demo_sets):
    """compare's light path out of core (sums without the pooled counts, tps_of_runs,
    paired_tps) gives what score_from_sums gives; the per-trajectory table, built on first use,
    has the rows it counts beforehand."""
    from tpsviz.engines.runsums import paired_tps, tps_of_runs

    data, ds = demo_sets["tau2-like"]
    for st in (ScoreSettings(n_boot=0), ScoreSettings(censoring="complete", schedule=parse_schedule("linear"), n_boot=0)):
        full = score_from_sums(sums_duckdb(ds, st), st, skill_boot=0)
        light = sums_duckdb(ds, st, counts=False)
        assert light.pooled == {} and full.sums.pooled
        got = tps_of_runs(light, st)
        assert list(got) == list(full.tps_runs)
        for name, tps in got.items():
            # (NaN where not scored, in both; DuckDB's parallel sums may differ in the last bit between passes)
            np.testing.assert_allclose(tps, full.tps_runs[name], rtol=1e-12)
        pd.testing.assert_frame_equal(paired_tps(got, "truthful", st.level), full.paired_tps("truthful"),
                                      check_exact=False, rtol=1e-10)
        assert full._per_trajectory is None  # (nothing built it yet)
        n = full.n_per_trajectory_rows
        table = full.per_trajectory
        assert len(table) == n and full.per_trajectory is table
        scored = sum(int((~np.isnan(v)).sum()) for v in full.tps_runs.values())
        assert n == scored and (st.censoring != "complete" or not table["censored"].any())
    with pytest.raises(ValueError, match="another α, β, ε or schedule"):
        tps_of_runs(light, ScoreSettings(alpha=1, beta=1))


def test_skill_and_metrics_agree_with_the_in_memory_tables(demo_sets):
    data, ds = demo_sets["webshop-like"]
    for st in (ScoreSettings(n_boot=300), ScoreSettings(alpha=2, beta=3, censoring="complete", n_boot=300)):
        st = replace(st, cluster_by="run", interval="percentile")  # (the engines': by run, percentile)
        ref = compute_tps(data, st)
        got = score_from_sums(sums_duckdb(ds, st), st, skill_boot=300)
        sk = skill_table(data, st, n_boot=300, result=ref)
        cols = ["tps_ref", "skill", "skill_ci_low", "skill_ci_high", "ref_rate", "n_trajectories"]
        np.testing.assert_allclose(got.skill.loc[sk.index, cols].to_numpy(float),
                                   sk[cols].to_numpy(float), rtol=1e-10, atol=1e-12)
    mt = metric_table(data, n_boot=0)
    m = got.metrics.loc[mt.index]
    np.testing.assert_allclose(m[METRICS].to_numpy(float), mt[METRICS].to_numpy(float), rtol=1e-12, atol=1e-14)
    assert m["ranks_exact"].all() and (m["auroc_bound"] == 0).all()


def test_a_log_with_every_irregularity_agrees(tmp_path):
    df = _log_with_everything()
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    data = tpsviz.load(path)
    for fmt in ("parquet", "csv"):
        ds = open_dataset(_split(df, tmp_path / fmt, 4, fmt))
        for sched, (a, b), cens, eps in itertools.product(
                ["uniform", "linear", "back:0.8:10", "column", "endpoint"], [(0, 0), (0.5, 2)],
                ["simple", "exact", "complete"], [1e-6, 0.0]):
            st = ScoreSettings(alpha=a, beta=b, schedule=parse_schedule(sched), censoring=cens, eps=eps,
                               n_boot=200)
            _compare(data, ds, st)
    sums = sums_duckdb(ds, ScoreSettings())
    assert any("not numbered 1, 2" in n for n in sums.notes)
    assert any("conf_b" in n and "no forecast" in n for n in sums.notes)


def test_zero_weights_on_missing_and_certain_forecasts_agree(tmp_path):
    """Schedule 'column' with weight 0 on rows whose forecast is missing, 0 or 1 (with ε = 0 such a
    row's score is −∞, and 0 · −∞ = NaN must not reach the sum), and on every row of some runs."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(60):
        y = None if i % 5 == 0 else int(i % 2)
        for t in range(1, 7):
            a = [None, 0.0, 1.0, float(rng.random())][(i + t) % 4]
            w = 0.0 if (a is None or a in (0.0, 1.0) or i % 7 == 0) else float(rng.integers(1, 4))
            rows.append({"trajectory_id": f"r{i:02d}", "step": t, "outcome": y, "conf_a": a,
                         "conf_b": None if t == 3 else 0.5, "weight": w})
    df = pd.DataFrame(rows)
    df.to_csv(tmp_path / "log.csv", index=False)
    data = tpsviz.load(tmp_path / "log.csv")
    ds = open_dataset(_split(df, tmp_path / "d", 3))
    for eps, cens in itertools.product([0.0, 1e-6], ["simple", "exact", "complete"]):
        ref, got = _compare(data, ds, ScoreSettings(schedule=parse_schedule("column"), eps=eps, censoring=cens,
                                                    n_boot=100))
        assert got is None or np.isfinite(got.per_trajectory["tps"].dropna()).all()


def test_grid_counts_are_an_array_indexed_by_the_cell(tmp_path):
    """The grid's counts use DuckDB's perfect-hash aggregate (an array over the USMALLINT cells),
    not a hash table: a plan property, checked without timing anything."""
    ds = open_dataset(DEMO["webshop-like"])
    con, spill, source, plan = duck.open_plan(ds)
    try:
        cols = ", ".join(f"TRY_CAST({quote_name(c)} AS DOUBLE) AS p{k}" for k, c in enumerate(plan.conf))
        rows = f"WITH scored AS (SELECT TRY_CAST(outcome AS DOUBLE) AS y, {cols} FROM {source})\n"
        text = "\n".join(r[1] for r in con.sql("EXPLAIN " + pooled.grid_sql(plan, rows)).fetchall())
        assert text.count("Perfect Hash Group By") == len(plan.conf) >= 2, text
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def test_grid_counts_state_a_bound_that_holds(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    n = 4000
    df = pd.DataFrame({"trajectory_id": [f"r{i // 4}" for i in range(n)], "step": np.tile(np.arange(1, 5), n // 4),
                       "outcome": np.repeat((rng.random(n // 4) < 0.4).astype(float), 4)})
    df["conf_x"] = np.clip(0.3 + 0.3 * df["outcome"] + rng.normal(0, 0.2, n), 0, 1)
    ds = open_dataset(_split(df, tmp_path / "d", 2))
    monkeypatch.setattr(pooled, "GRID", 60)
    monkeypatch.setattr(pooled, "EXACT_ROWS", 0)
    got = score_from_sums(sums_duckdb(ds, ScoreSettings(n_boot=0)), ScoreSettings(n_boot=0)).metrics.loc["x"]
    exact = metric_table(tpsviz.from_frame(df), n_boot=0).loc["x"]
    assert not got["ranks_exact"] and got["auroc_bound"] > 0
    for m in ("auroc", "auprc"):
        err = abs(got[m] - exact[m])
        assert err <= got[f"{m}_bound"] + 1e-12, (m, err, got[f"{m}_bound"])
        assert err > 0  # a coarse grid does change the number: the bound is not vacuous here
    np.testing.assert_allclose(got["tece_pooled"], exact["tece_pooled"], rtol=1e-12)


@pytest.mark.parametrize("grid", [pooled.GRID, 60, 10])
def test_grid_cells_nest_in_the_tece_bins_and_keep_the_order(grid):
    """cell // (grid / 10) is the T-ECE bin tpsviz.diagnostics.metrics.bin_index gives, also for forecasts one
    ulp either side of every edge k/10 and k/grid; cells never decrease as the forecast grows and
    are floor(grid·p) give or take one."""
    import duckdb

    edges = np.r_[np.arange(11) / 10, np.arange(grid + 1) / grid, (np.arange(grid + 1) / grid) * (1 + 1e-15)]
    p = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 1),
                        np.random.default_rng(1).random(20_000), np.random.default_rng(2).random(2000) ** 8])
    p = np.unique(np.clip(p, 0.0, 1.0))
    con = duckdb.connect()
    con.register("t", pd.DataFrame({"p": p}))
    cell = con.sql(f"SELECT {pooled.cell_sql('p', 'c', grid)} AS cell FROM (SELECT p, {pooled.floor_cell_sql('p', grid)} AS c "
                   "FROM t) ORDER BY p").df()["cell"].to_numpy()
    np.testing.assert_array_equal(cell // (grid // 10), tpsviz.diagnostics.metrics.bin_index(p, np.arange(11) / 10))
    assert (np.diff(cell) >= 0).all() and cell.min() >= 0 and cell.max() <= grid - 1
    assert np.abs(cell - np.minimum(np.floor(p * grid), grid - 1)).max() <= 1


def test_grid_bound_formula_against_every_ordering_within_cells():
    """The AUPRC/AUROC bound of a grid holds for brute-force orderings of tied cells."""
    rng = np.random.default_rng(5)
    for _ in range(30):
        cells = rng.integers(1, 4)
        pos = rng.integers(0, 4, cells).astype(float)
        neg = rng.integers(0, 4, cells).astype(float)
        if pos.sum() == 0 or neg.sum() == 0:
            continue
        au_b, ap_b = _grid_bounds(pos, neg)
        x = np.repeat(np.arange(cells, dtype=float) / 4, (pos + neg).astype(int))
        y = np.concatenate([np.r_[np.ones(int(p)), np.zeros(int(q))] for p, q in zip(pos, neg)])
        grid_au, grid_ap = tpsviz.diagnostics.metrics.auroc(x, y), tpsviz.diagnostics.metrics.auprc(x, y)
        for _ in range(20):  # the same cells with distinct values in a random order inside each cell
            z = x + rng.random(x.size) * 0.2
            assert abs(tpsviz.diagnostics.metrics.auroc(z, y) - grid_au) <= au_b + 1e-12
            assert abs(tpsviz.diagnostics.metrics.auprc(z, y) - grid_ap) <= ap_b + 1e-12


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d.assign(conf_a=d["conf_a"].where(d.index != 3, 1.5)), "conf_a"),
    (lambda d: pd.concat([d, d.iloc[[3]]]), "duplicate (trajectory_id, step)"),
    (lambda d: d.assign(outcome=d["outcome"].where(d.index != 1, 1 - d["outcome"].iloc[1])), "changes within a run"),
    (lambda d: d.assign(step=d["step"].astype(float).where(d.index != 2, 1.5)), "column 'step'"),
    (lambda d: d.assign(outcome=d["outcome"].where(d.index != 2, 7)), "column 'outcome'"),
])
def test_defects_are_named_with_a_count_and_a_run(tmp_path, edit, needle):
    df = pd.DataFrame({"trajectory_id": ["a", "a", "a", "b", "b"], "step": [1, 2, 3, 1, 2],
                       "outcome": [1.0, 1.0, 1.0, 0.0, 0.0], "conf_a": [0.5, 0.6, 0.7, 0.4, 0.3]})
    df = edit(df)
    ds = open_dataset(_split(df.reset_index(drop=True), tmp_path / "d", 2))
    with pytest.raises(LogFormatError) as err:
        sums_duckdb(ds, ScoreSettings(n_boot=0))
    text = str(err.value)
    assert needle in text and "trajectory" in text


def _log_with_partial_outcomes(seed: int = 5) -> pd.DataFrame:
    """Finished runs that give 'outcome' on some rows only (the first, the last, one in the
    middle, or a random half), censored runs, missing forecasts, and a predictor whose values
    share grid cells (0.3 and 0.3 + 1e-7: the rank metrics then count distinct values)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(90):
        length = int(rng.integers(1, 8))
        y = None if i % 6 == 0 else int(rng.random() < 0.5)
        keep = {0: [0], 1: [length - 1], 2: [length // 2]}.get(i % 5, list(np.flatnonzero(rng.random(length) < 0.5)))
        for k in range(length):
            rows.append({"trajectory_id": f"run-{i:02d}", "step": k + 1,
                         "outcome": y if (i % 5 == 4 or k in keep) else None,
                         "conf_a": float(rng.random()),
                         "conf_b": None if rng.random() < 0.15 else float(rng.choice([0.0, 0.25, 0.9, 1.0])),
                         "conf_c": 0.3 + 1e-7 * int(rng.integers(0, 3)) if rng.random() < 0.7 else 0.8})
    return pd.DataFrame(rows)


def test_an_outcome_given_on_some_rows_only_is_used_for_the_whole_run(tmp_path):
    """As tpsviz.load: the run is scored whole with the outcome given, its rows without one are
    counted in the pooled AUROC/AUPRC/T-ECE, and a note says how many runs (duckdb refused
    such a log before, saying to use --engine memory)."""
    df = _log_with_partial_outcomes()
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    data = tpsviz.load(path)
    note = next(n for n in data.notes if "some rows only" in n)
    for fmt in ("parquet", "csv"):
        ds = open_dataset(_split(df, tmp_path / fmt, 4, fmt))  # runs cut across files
        for sched, (a, b), cens in [("uniform", (0, 0), "simple"), ("endpoint", (2, 3), "exact"),
                                    ("linear", (1, 1), "complete"), ("per-length", (0, 0), "upper")]:
            st = ScoreSettings(alpha=a, beta=b, schedule=parse_schedule(sched), censoring=cens, n_boot=100)
            _, got = _compare(data, ds, st)
            assert got is None or note in got.sums.notes
        mt = metric_table(data, n_boot=0)
        m = score_from_sums(sums_duckdb(ds, ScoreSettings(n_boot=0)), ScoreSettings(n_boot=0)).metrics.loc[mt.index]
        np.testing.assert_allclose(m[METRICS].to_numpy(float), mt[METRICS].to_numpy(float), rtol=1e-12, atol=1e-14)
        assert m["ranks_exact"].all()


def test_a_predictor_in_percent_reads_as_in_memory(tmp_path):
    """``percent``: divided by 100 with the reader's note; without it, the refusal hints at
    percentages, but only where every value lies in [0, 100]; a name that is no predictor is
    refused."""
    df = _log_with_everything()
    df["conf_a"] = (df["conf_a"] * 100).round(1)
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    data = tpsviz.load(path, options=ReadOptions(percent=("a",)))
    ds = open_dataset(_split(df, tmp_path / "d", 3))
    for st in (ScoreSettings(n_boot=100), ScoreSettings(alpha=2, beta=3, schedule=parse_schedule("endpoint"), n_boot=100)):
        sums = sums_duckdb(ds, st, percent=("a",))
        got = score_from_sums(sums, st)
        ref = compute_tps(data, st)
        np.testing.assert_allclose(got.per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps")
                                   .reindex(index=ref.tps_matrix().index, columns=ref.tps_matrix().columns).to_numpy(),
                                   ref.tps_matrix().to_numpy(), rtol=1e-12)
        assert "conf_a: read as percentages (divided by 100)." in sums.notes
    mt = metric_table(data, n_boot=0)
    m = score_from_sums(sums_duckdb(ds, ScoreSettings(n_boot=0), percent=("conf_a",)), ScoreSettings(n_boot=0)).metrics
    np.testing.assert_allclose(m.loc[mt.index, METRICS].to_numpy(float), mt[METRICS].to_numpy(float), rtol=1e-12)
    with pytest.raises(LogFormatError) as mem:
        tpsviz.load(path)
    with pytest.raises(LogFormatError) as out:
        sums_duckdb(ds, ScoreSettings(n_boot=0))
    hint = "they look like percentages (0–100): say so with percent='a'"
    assert hint in str(mem.value) and hint in str(out.value)
    df.loc[5, "conf_a"] = 140.0  # not every value in [0, 100]: no hint
    ds2 = open_dataset(_split(df, tmp_path / "d2", 3))
    with pytest.raises(LogFormatError) as out:
        sums_duckdb(ds2, ScoreSettings(n_boot=0))
    assert "probabilities must be in [0, 1]" in str(out.value) and "percentages" not in str(out.value)
    with pytest.raises(LogFormatError, match="percent given for 'conf_zz', which is not a predictor column"):
        sums_duckdb(ds, ScoreSettings(n_boot=0), percent=("zz",))


def test_a_dataset_checks_its_files(tmp_path):
    df = pd.read_csv(DEMO["webshop-like"])
    folder = _split(df, tmp_path / "d", 2)
    (folder / "_SUCCESS").write_text("")
    (folder / "notes.txt").write_text("x")
    ds = open_dataset(folder)
    assert ds.n_files == 2 and ds.skipped == 2 and ds.n_rows == len(df) and ds.fmt == "parquet"
    assert open_dataset(str(folder / "*.parquet")).files == ds.files
    df.iloc[:10].to_csv(folder / "extra.csv", index=False)
    with pytest.raises(LogFormatError, match="several types"):
        open_dataset(folder)
    os.remove(folder / "extra.csv")
    df.iloc[:10].drop(columns=["conf_verbal"] if "conf_verbal" in df else df.columns[-1:]).to_parquet(
        folder / "part-9.parquet")
    with pytest.raises(LogFormatError, match="same columns"):
        open_dataset(folder)
    with pytest.raises(LogFormatError, match="no Parquet"):
        open_dataset(str(tmp_path / "nothing-*.parquet"))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.parquet").write_bytes(b"not parquet")
    with pytest.raises(LogFormatError, match="not a readable Parquet"):
        open_dataset(tmp_path / "bad")


def test_a_dataset_stays_under_the_data_roots(tmp_path):
    root = tmp_path / "root"
    (root / "logs").mkdir(parents=True)
    pd.read_csv(DEMO["webshop-like"]).to_parquet(root / "logs" / "a.parquet")
    outside = tmp_path / "outside"
    outside.mkdir()
    pd.read_csv(DEMO["tau2-like"]).to_parquet(outside / "secret.parquet")
    roots = DataRoots([root])
    assert open_dataset("logs", roots).n_files == 1                      # relative to the first root
    assert open_dataset("logs/*.parquet", roots).n_files == 1
    # a root itself is a dataset folder like any other (helper-24: a team's dataset directory, set as
    # the root, was refused with the one "cannot open this path" message)
    assert open_dataset(str(root), roots).n_files == open_dataset(".", roots).n_files == 1
    for spec in (str(outside), str(outside / "*.parquet"), "../outside/*.parquet", "logs/../../outside",
                 "/*/*.parquet", str(tmp_path / "*" / "*.parquet")):
        with pytest.raises(PathRefused) as err:
            open_dataset(spec, roots)
        assert str(err.value) == PathRefused().args[0]
    os.symlink(outside / "secret.parquet", root / "logs" / "b.parquet")  # a link out of the root
    with pytest.raises(PathRefused):
        open_dataset("logs", roots)
    with pytest.raises(FileRefused):
        open_dataset(tmp_path / "missing-folder")


def test_duckdb_reads_only_the_dataset_files(tmp_path):
    folder = _split(pd.read_csv(DEMO["webshop-like"]), tmp_path / "d", 2)
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    con, spill = connect(open_dataset(folder))
    try:
        assert con.execute(f"SELECT count(*) FROM read_parquet('{folder / 'part-0.parquet'}')").fetchone()[0] > 0
        for sql in (f"SELECT * FROM read_csv('{other}')", "SELECT * FROM read_csv('/etc/passwd')",
                    "SET enable_external_access = true", "INSTALL httpfs"):
            with pytest.raises(Exception):
                con.execute(sql).fetchall()
    finally:
        con.close()


def test_the_pure_sums_need_their_own_settings(demo_sets):
    data, _ = demo_sets["tau2-like"]
    sums = sums_in_memory(data, ScoreSettings())
    with pytest.raises(ValueError, match="another"):
        score_from_sums(sums, ScoreSettings(alpha=1, beta=1))
    # the censoring mode and q_Z do not enter the sums: one pass serves every mode
    for cens in ("simple", "exact", "complete", "upper"):
        st = ScoreSettings(censoring=cens, n_boot=0)
        if cens == "exact":  # the tau2-like demo has no q_z: exact mode needs q_Z for every censored run
            with pytest.raises(MissingQz):
                score_from_sums(sums, st)
            st = replace(st, censoring="exact")
            q = pd.Series(0.3, index=data.trajectories["trajectory_id"])
            a = score_from_sums(sums, st, q_z=q).summary["tps_mean"]
            b = compute_tps(data, st, q_z=q).summary["tps_mean"]
            np.testing.assert_allclose(a.to_numpy(), b.loc[a.index].to_numpy(), rtol=1e-12)
            continue
        a = score_from_sums(sums, st).summary["tps_mean"]
        b = compute_tps(data, st).summary["tps_mean"]
        np.testing.assert_allclose(a.to_numpy(), b.loc[a.index].to_numpy(), rtol=1e-12)


def test_load_reads_a_dataset_into_memory(tmp_path):
    df = pd.read_csv(DEMO["tau2-like"])
    folder = _split(df, tmp_path / "d", 3)
    whole = tpsviz.load(DEMO["tau2-like"])
    data = tpsviz.load(folder)
    assert data.n_trajectories == whole.n_trajectories and data.n_steps == whole.n_steps
    assert data.reading["dataset"]["files"] == 3
    a = compute_tps(whole, ScoreSettings(n_boot=0)).summary["tps_mean"]
    b = compute_tps(data, ScoreSettings(n_boot=0)).summary["tps_mean"]
    np.testing.assert_allclose(b.loc[a.index].to_numpy(), a.to_numpy(), rtol=1e-12)
    # a defect is located by file and row
    bad = df.copy()
    bad["step"] = bad["step"].astype(float)
    bad.loc[len(df) - 2, "step"] = 1.5
    folder2 = _split(bad, tmp_path / "e", 3)
    with pytest.raises(LogFormatError, match=r"'part-2\.parquet' row \d+"):
        tpsviz.load(folder2)
    # above the row limit: the message points to the out-of-core engine
    with pytest.raises(LogFormatError, match=r"out of core with tpsviz\.engines\.get_engine\('duckdb'\)"):
        tpsviz.load(folder, limits=tpsviz.io.files.Limits(max_rows=100))


def test_a_dataset_folder_on_a_server_path_never_reads_outside_the_roots(tmp_path):
    """A link inside a dataset folder to a file outside the roots: refused before its footer or
    header is read, so no column name of an outside file ever reaches a message."""
    root = tmp_path / "root"
    (root / "logs").mkdir(parents=True)
    df = pd.read_csv(DEMO["webshop-like"])
    df.to_parquet(root / "logs" / "a.parquet")
    outside = tmp_path / "outside.parquet"
    df.rename(columns={"step": "secret_column_name"}).to_parquet(outside)
    os.symlink(outside, root / "logs" / "b.parquet")
    roots = DataRoots([root])
    with pytest.raises(PathRefused) as err:
        tpsviz.load(root / "logs", roots=roots)
    assert "secret_column_name" not in str(err.value)
    os.remove(root / "logs" / "b.parquet")
    assert tpsviz.load(root / "logs", roots=roots).n_trajectories == tpsviz.load(DEMO["webshop-like"]).n_trajectories


def test_reliability_from_bin_counts_is_the_diagram_of_the_rows(demo_sets):
    from tpsviz.diagnostics.reliability import reliability_bins

    data, ds = demo_sets["tau2-like"]
    got = score_from_sums(sums_duckdb(ds, ScoreSettings(n_boot=0)), ScoreSettings(n_boot=0)).reliability
    steps = data.steps.merge(data.trajectories[["trajectory_id", "outcome"]], on="trajectory_id")
    for name in data.predictors:
        rows = steps[steps["outcome"].notna() & steps[f"conf_{name}"].notna()]
        want = reliability_bins(rows[f"conf_{name}"].to_numpy(), rows["outcome"].to_numpy())
        g = got[name]
        assert (g["n"].to_numpy() == want["n"].to_numpy()).all() and g["n"].sum() > 0
        for col in ("bin_lo", "bin_hi", "mean_forecast", "observed_rate", "ci_low", "ci_high"):
            np.testing.assert_allclose(g[col].to_numpy(float), want[col].to_numpy(float), rtol=1e-12, atol=1e-12,
                                       err_msg=f"{name} {col}")


@pytest.mark.parametrize("gap", [False, True])
def test_positions_of_runs_numbered_from_0_or_later_agree_with_memory(tmp_path, gap, monkeypatch):
    """A positional schedule on runs whose steps do not start at 1: consecutive steps take their
    position from each run's first step (a join), a run with a gap takes the window; both give
    tpsviz.load's positions t = 1 … T."""
    rng = np.random.default_rng(11)
    rows = []
    for i in range(150):
        start = [0, 1, 5][i % 3]
        steps = start + np.arange(int(rng.integers(1, 12)))
        if gap and i == 7:
            steps = start + np.arange(4) + (np.arange(4) > 1) * 3  # (a gap after the second step)
        y = None if i % 5 == 0 else int(rng.random() < 0.5)
        for s in steps:
            rows.append({"trajectory_id": f"r{i:03d}", "step": int(s), "outcome": y,
                         "conf_a": float(rng.random()), "conf_b": float(rng.choice([0.1, 0.5, 0.9]))})
    df = pd.DataFrame(rows)
    folder = _split(df, tmp_path / "d")
    data, ds = tpsviz.load(folder), open_dataset(folder)
    from tpsviz.engines import onepass

    sqls = []
    real = onepass.pass_sql
    monkeypatch.setattr(onepass, "pass_sql", lambda *a, **k: sqls.append(real(*a, **k)) or sqls[-1])
    for sched in ("linear", "front:0.8", "back:0.9:12"):
        sqls.clear()
        _compare(data, ds, ScoreSettings(schedule=parse_schedule(sched), n_boot=0))
        assert len(sqls) == 2  # the pass by step numbers, then by positions
        assert ("row_number() OVER" in sqls[1]) == gap and ("tpsviz_offsets" in sqls[1]) == (not gap)
