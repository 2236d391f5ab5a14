"""The Dask engine (issue 12): a map-reduce over partitions on a 2-worker LocalCluster gives the
DuckDB engine's per-trajectory sums (so ``compute_tps``'s TPS), finds defects that span
partitions, and its Poisson bootstrap — weights hashed from (trajectory id, replicate) — does not
depend on partitioning and agrees with the multinomial bootstrap within Monte-Carlo error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from table_logs import split_parquet as _split

import tpsviz
from tpsviz.io.dataset import open_dataset
from tpsviz.engines.runsums import score_from_sums
from tpsviz.engines.dask_engine import cluster, poisson_intervals_on, sums_dask
from tpsviz.engines.duck import sums_duckdb
from tpsviz.engines.poisson import poisson_intervals, poisson_weights, run_hashes
from tpsviz.core.errors import LogFormatError
from tpsviz.core.schedules import parse_schedule
from tpsviz.core.tps import ScoreSettings, compute_tps

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_data" / "webshop-like.csv"


@pytest.fixture(scope="module")
def client():
    with cluster(n_workers=2) as c:
        yield c




def test_dask_sums_equal_duckdb_and_compute_tps(client, tmp_path):
    df = pd.read_csv(DEMO)
    data = tpsviz.load(DEMO)
    ds = open_dataset(_split(df, tmp_path / "d", 5))  # runs cut across partitions
    for (a, b), sched, cens in [((0, 0), "uniform", "simple"), ((2, 3), "endpoint", "exact"),
                                ((1, 1), "front:0.9", "complete"), ((-0.5, -0.5), "per-length", "upper")]:
        st = ScoreSettings(alpha=a, beta=b, schedule=parse_schedule(sched), censoring=cens, n_boot=0)
        dk = sums_dask(ds, st, client=client)
        dd = sums_duckdb(ds, st)
        assert dk.engine == "dask" and (dk.runs["trajectory_id"] == dd.runs["trajectory_id"]).all()
        ref = compute_tps(data, st).tps_matrix()
        got = score_from_sums(dk, st).per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps")
        got = got.reindex(index=ref.index, columns=ref.columns)
        np.testing.assert_allclose(got.to_numpy(), ref.to_numpy(), rtol=1e-12)
        for name in dd.predictors:
            for field in ("a1", "a0", "wsum"):
                np.testing.assert_allclose(getattr(dk, field)[name], getattr(dd, field)[name], rtol=1e-12)
            assert (dk.n_present[name] == dd.n_present[name]).all()
        m1, m2 = score_from_sums(dk, st).metrics, score_from_sums(dd, st).metrics
        cols = ["auroc", "auprc", "auroc_final", "tece_pooled", "tece_final"]
        np.testing.assert_allclose(m1[cols].to_numpy(float), m2[cols].to_numpy(float), rtol=1e-12)


def test_a_general_beta_on_a_large_log_is_scored_by_the_table_as_in_memory(client, tmp_path):
    """Above TABLE_MIN rows each partition scores a general (α, β) by the verified table in SQL
    (tpsviz.engines.scoretable), with forecasts at 0, 1 and off the grid left to the UDF."""
    from table_logs import table_sized_log

    folder = _split(table_sized_log(), tmp_path / "d", 4)
    data = tpsviz.load(folder)
    st = ScoreSettings(alpha=0.5, beta=0.5, eps=0.0, n_boot=0)
    ref = compute_tps(data, st).tps_matrix()
    got = score_from_sums(sums_dask(open_dataset(folder), st, client=client), st).per_trajectory.pivot(
        index="trajectory_id", columns="predictor", values="tps").reindex(index=ref.index, columns=ref.columns)
    a, b = ref.to_numpy(), got.to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[np.isinf(a)], b[np.isinf(a)])
    fin = np.isfinite(a)
    assert fin.sum() > 3000
    np.testing.assert_allclose(b[fin], a[fin], rtol=1e-12)


def test_a_duplicate_step_split_across_partitions_is_found(client, tmp_path):
    df = pd.DataFrame({"trajectory_id": ["a"] * 3 + ["b"] * 2, "step": [1, 2, 3, 1, 2],
                       "outcome": [1.0] * 3 + [0.0] * 2, "conf_x": [0.5, 0.6, 0.7, 0.4, 0.3]})
    folder = tmp_path / "d"
    folder.mkdir()
    df.iloc[:3].to_parquet(folder / "p0.parquet")
    pd.concat([df.iloc[[1]], df.iloc[3:]]).to_parquet(folder / "p1.parquet")  # a's step 2 again
    with pytest.raises(LogFormatError, match="duplicate"):
        sums_dask(open_dataset(folder), ScoreSettings(n_boot=0), client=client)
    for k, value in enumerate([2.0, np.inf, -np.inf, 1e300]):  # (the last three: a cast error in the map step)
        bad = df.assign(conf_x=[0.5, 0.6, 0.7, value, 0.3])
        folder2 = _split(bad, tmp_path / f"e{k}", 2)
        with pytest.raises(LogFormatError, match=r"conf_x.*1 row\(s\), e.g. in trajectory 'b'"):
            sums_dask(open_dataset(folder2), ScoreSettings(n_boot=0), client=client)
        # scored by the Arrow UDF (α, β without a closed form) with ε = 0: the row's score is computed
        # before the row is refused, on the forecast set into [0, 1] (beta_score raised out of DuckDB
        # once; found by tests/test_engine_parity.py)
        with pytest.raises(LogFormatError, match=r"conf_x.*1 row\(s\), e.g. in trajectory 'b'"):
            sums_dask(open_dataset(folder2), ScoreSettings(alpha=2, beta=3, eps=0.0, n_boot=0), client=client)


def test_an_outcome_given_on_some_rows_only_agrees_with_the_other_engines(client, tmp_path):
    """A run's rows without an outcome may lie in another partition than its labelled ones: they
    are counted in the pooled metrics by a second map step, with the run's outcome."""
    from test_engines import METRICS, _log_with_partial_outcomes
    from tpsviz.diagnostics.leaderboard import metric_table

    df = _log_with_partial_outcomes()
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    data = tpsviz.load(path)
    ds = open_dataset(_split(df, tmp_path / "d", 4))
    mt = metric_table(data, n_boot=0)
    for (a, b), sched in [((0, 0), "uniform"), ((2, 3), "endpoint")]:
        st = ScoreSettings(alpha=a, beta=b, schedule=parse_schedule(sched), n_boot=0)
        dk = sums_dask(ds, st, client=client)
        assert any("some rows only" in n for n in dk.notes)
        ref = compute_tps(data, st).tps_matrix()
        got = score_from_sums(dk, st)
        tps = got.per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps")
        np.testing.assert_allclose(tps.reindex(index=ref.index, columns=ref.columns).to_numpy(), ref.to_numpy(),
                                   rtol=1e-12)
        m = got.metrics.loc[mt.index]
        np.testing.assert_allclose(m[METRICS].to_numpy(float), mt[METRICS].to_numpy(float), rtol=1e-12, atol=1e-14)
        assert m["ranks_exact"].all()


def test_ids_are_stripped_as_the_reader_strips_them(client, tmp_path):
    """Ids written with a tab, a newline or an ideographic space around them, in another
    partition than their plain spelling: one run, as tpsviz.load and the DuckDB engine read
    them, with the same note; an id of whitespace only is refused."""
    df = pd.DataFrame({"trajectory_id": ["\tr1", "\tr1", "r1", "r2", "r2 \n", "r3\u3000", "r3\u3000"],
                       "step": [1, 2, 3, 1, 2, 1, 2], "outcome": [1.0, 1, 1, 0, 0, 1, 1],
                       "conf_a": [0.5, 0.6, 0.7, 0.4, 0.3, 0.8, 0.9]})
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    data = tpsviz.load(path)
    ds = open_dataset(_split(df, tmp_path / "d", 3))
    st = ScoreSettings(n_boot=0)
    dk, dd = sums_dask(ds, st, client=client), sums_duckdb(ds, st)
    assert list(dk.runs["trajectory_id"]) == list(dd.runs["trajectory_id"]) == ["r1", "r2", "r3"]
    assert list(dk.runs["length"]) == [3, 2, 2]
    note = next(n for n in data.notes if "without surrounding spaces" in n)
    assert note in dk.notes and note in dd.notes
    ref = compute_tps(data, st).tps_matrix()
    got = score_from_sums(dk, st).per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps")
    np.testing.assert_allclose(got.reindex(index=ref.index, columns=ref.columns).to_numpy(), ref.to_numpy(), rtol=1e-12)
    blank = df.assign(trajectory_id=df["trajectory_id"].where(df.index != 6, "\t"))
    with pytest.raises(LogFormatError, match="'trajectory_id': every row needs an id"):
        sums_dask(open_dataset(_split(blank, tmp_path / "e", 3)), st, client=client)


def test_percent_and_nested_column_notes_reach_the_dask_result(client, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = pd.read_csv(DEMO)
    conf = [c for c in df.columns if c.startswith("conf_")][0]
    df[conf] = df[conf] * 100
    folder = _split(df, tmp_path / "d", 3)
    for f in sorted(folder.glob("*.parquet")):  # an unused list column in every file
        t = pq.read_table(f)
        pq.write_table(t.append_column("tags", pa.array([["x"]] * t.num_rows)), f)
    ds = open_dataset(folder)
    st = ScoreSettings(n_boot=0)
    dk = sums_dask(ds, st, client=client, percent=(conf,))
    dd = sums_duckdb(ds, st, percent=(conf,))
    for n in (f"{conf}: read as percentages (divided by 100).", "1 column(s) of nested type"):
        assert sum(n in x for x in dk.notes) == 1 and any(n in x for x in dd.notes)
    name = conf[len("conf_"):]
    np.testing.assert_allclose(dk.a1[name], dd.a1[name], rtol=1e-12)
    with pytest.raises(LogFormatError, match="they look like percentages"):
        sums_dask(ds, st, client=client)


def test_ids_stored_as_numbers_and_as_text_are_noted(client, tmp_path):
    import pyarrow as pa
    from test_stored_types import _two_files

    folder = _two_files(tmp_path / "d", {"trajectory_id": pa.array([1, 1, 2, 2], pa.int64())},
                        {"trajectory_id": pa.array(["c", "c", "2", "2"]), "step": [3, 4, 3, 4]})
    note = next(n for n in tpsviz.load(folder).notes if "read as text" in n)
    dk = sums_dask(open_dataset(folder), ScoreSettings(n_boot=0), client=client)
    assert note in dk.notes and list(dk.runs["trajectory_id"]) == ["1", "2", "c"]


def test_files_storing_a_column_in_different_types_read_as_in_memory(client, tmp_path):
    """Each partition reads its columns in the dataset's types (the DuckDB engine's union over all
    files), not in its own file's: ids stored as 3 in one file and 1.0 in another read "3.0"."""
    from test_stored_types import MIXED, _two_files

    st = ScoreSettings(n_boot=0)
    for k, (first, second) in enumerate(MIXED):
        folder = _two_files(tmp_path / f"d{k}", first, second)
        ref = compute_tps(tpsviz.load(folder), st).tps_matrix()
        got = score_from_sums(sums_dask(open_dataset(folder), st, client=client), st).per_trajectory
        got = got.pivot(index="trajectory_id", columns="predictor", values="tps")
        assert list(got.index) == list(ref.index), k
        np.testing.assert_allclose(got.reindex(columns=ref.columns).to_numpy(), ref.to_numpy(), rtol=1e-12)


def test_ids_stored_as_booleans_or_timestamps_are_spelled_as_in_memory(client, tmp_path):
    """Each partition spells typed ids as the other engines do (docs/formats.md "Trajectory ids"),
    and ids stored as durations are refused."""
    import pyarrow as pa
    from test_stored_types import TYPED_IDS, _write

    st = ScoreSettings(n_boot=0)
    for k, (ids, text) in enumerate(TYPED_IDS):
        folder = _write(tmp_path / f"d{k}", trajectory_id=ids)
        got = sums_dask(open_dataset(folder), st, client=client)
        assert sorted(got.runs["trajectory_id"]) == text, ids.type
    folder = _write(tmp_path / "dur", trajectory_id=pa.array([5, 5, 6, 6], pa.duration("s")))
    with pytest.raises(LogFormatError, match="'trajectory_id' holds durations, which do not name runs"):
        sums_dask(open_dataset(folder), st, client=client)


def test_a_malformed_csv_line_is_named_not_quoted(client, tmp_path):
    from test_file_errors import BAD, SECRET, _dataset

    folder = _dataset(tmp_path, BAD["more fields"][0], 5)
    with pytest.raises(LogFormatError) as exc:
        sums_dask(open_dataset(folder), ScoreSettings(n_boot=0), client=client)
    assert "'b.csv': not a well-formed CSV file: line 5 has 6 fields, more than the header's 5" in str(exc.value)
    assert SECRET not in str(exc.value)


def test_poisson_weights_follow_the_id_not_the_position():
    ids = [f"run-{i}" for i in range(500)]
    h = run_hashes(ids, seed=7)
    w = poisson_weights(h, 0, 40)
    perm = np.random.default_rng(0).permutation(500)
    assert (poisson_weights(run_hashes([ids[i] for i in perm], 7), 0, 40) == w[perm]).all()
    assert (poisson_weights(h, 10, 40) == w[:, 10:]).all()  # replicates drawn in any chunks
    assert not (poisson_weights(run_hashes(ids, 8), 0, 40) == w).all()  # the seed matters
    # the weights are Poisson(1): frequencies of 0..4 and ≥5 against the law (chi-square test)
    big = poisson_weights(run_hashes([f"x{i}" for i in range(20_000)], 3), 0, 10).ravel()
    obs = np.bincount(np.minimum(big, 5), minlength=6)
    p = np.r_[stats.poisson.pmf(np.arange(5), 1.0), stats.poisson.sf(4, 1.0)]
    assert stats.chisquare(obs, p * obs.sum()).pvalue > 1e-4


def test_poisson_weights_are_the_inverse_cdf_of_the_hashed_uniform():
    """The weights compare 53-bit integers with the CDF scaled by 2^53: the same draw as the
    uniform u = (x >> 11) / 2^53 looked up in the Poisson(1) CDF as floats."""
    from tpsviz.engines import poisson as P
    h = np.random.default_rng(4).integers(0, 2**64 - 1, 50_000, dtype=np.uint64)
    b = np.arange(0, 12, dtype=np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        x = P._splitmix(h[:, None] ^ (b[None, :] * P._M2))
    u = (x >> np.uint64(11)).astype(np.float64) / 2.0**53
    want = np.searchsorted(P._CDF, u, side="right")
    assert np.array_equal(poisson_weights(h, 0, 12), want)
    # at the thresholds themselves (u exactly a CDF value, and one 2^-53 below it)
    t = P._THRESHOLDS[:6]
    for u53 in (t, t - np.uint64(1)):
        assert np.array_equal(np.searchsorted(P._THRESHOLDS, u53, side="right"),
                              np.searchsorted(P._CDF, u53.astype(np.float64) / 2.0**53, side="right"))


def test_poisson_sums_in_blocks_equal_one_product(monkeypatch):
    """Σ_i c_ib · v_i drawn in blocks of runs and replicates (remainders included) equals the
    product of the whole weight matrix."""
    from tpsviz.engines import poisson as P
    rng = np.random.default_rng(6)
    v = rng.normal(size=(1003, 3))
    h = run_hashes([f"r{i}" for i in range(1003)], 5)
    c = poisson_weights(h, 0, 37).astype(float)
    monkeypatch.setattr(P, "_CELLS", 1 << 9)  # 1 replicate × 512 runs a block
    s, w = P.poisson_sums(v, h, 37)
    np.testing.assert_allclose(s, c.T @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(w, c.sum(axis=0))
    monkeypatch.setattr(P, "_CELLS", 5000)  # 4 replicates × 1,250 runs: one block of runs
    s2, _ = P.poisson_sums(v, h, 37)
    np.testing.assert_allclose(s2, c.T @ v, rtol=1e-12, atol=1e-12)


def test_poisson_and_multinomial_intervals_agree_within_monte_carlo_error(client):
    data = tpsviz.load(DEMO)
    st = ScoreSettings(n_boot=4000, cluster_by="run", interval="percentile")  # (the Poisson engine: by run, percentile)
    res = compute_tps(data, st)
    mat = res.tps_matrix()
    values = mat.to_numpy()
    valid = ~np.isnan(values)
    ids = mat.index.to_numpy()
    lo, hi = poisson_intervals(values, valid, ids, st.n_boot, st.seed, st.level)
    se = res.summary.loc[mat.columns, "tps_se"].to_numpy()
    # MC sd of a 2.5% percentile endpoint with 4,000 replicates is about 0.05 SE per bootstrap
    assert np.all(np.abs(lo - res.summary.loc[mat.columns, "tps_ci_low"].to_numpy()) < 0.3 * se)
    assert np.all(np.abs(hi - res.summary.loc[mat.columns, "tps_ci_high"].to_numpy()) < 0.3 * se)
    # on the cluster, chunk by chunk of runs: the same numbers
    lo2, hi2 = poisson_intervals_on(client, values, valid, ids, st.n_boot, st.seed, st.level, chunk=97)
    np.testing.assert_allclose(lo2, lo, rtol=1e-12)
    np.testing.assert_allclose(hi2, hi, rtol=1e-12)


def test_cli_dask_engine(tmp_path):
    folder = _split(pd.read_csv(DEMO), tmp_path / "d", 3)
    out = subprocess.run([sys.executable, "-m", "tpsviz", "score", str(folder), "--engine", "dask", "--json",
                          "--n-boot", "200"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["settings"]["engine"] == "dask" and "Poisson bootstrap" in obj["settings"]["engine_words"]
    ref = json.loads(subprocess.run([sys.executable, "-m", "tpsviz", "score", str(DEMO), "--json", "--n-boot", "200"],
                                    cwd=ROOT, capture_output=True, text=True, timeout=300).stdout)
    for name, p in ref["predictors"].items():
        assert obj["predictors"][name]["tps_mean"] == pytest.approx(p["tps_mean"], rel=1e-12)
        assert obj["predictors"][name]["auroc"] == pytest.approx(p["auroc"], rel=1e-12)
    bad = subprocess.run([sys.executable, "-m", "tpsviz", "score", str(folder), "--engine", "dask",
                          "--scheduler", "tcp://127.0.0.1:9"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--scheduler" in bad.stderr and "Traceback" not in bad.stderr


def test_a_header_problem_is_refused_before_any_task_runs(tmp_path):
    """The header is checked on the client: a worker that refuses a partition logs the exception
    with its traceback on the command's stderr."""
    folder = _split(pd.read_csv(DEMO).drop(columns=["outcome"]), tmp_path / "d", 2)
    out = subprocess.run([sys.executable, "-m", "tpsviz", "score", str(folder), "--engine", "dask"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "missing required column 'outcome'" in out.stderr
    assert "Traceback" not in out.stderr


def test_cli_compare_on_the_dask_engine(tmp_path):
    """compare --baseline as a map-reduce: the paired TPS columns of the in-memory compare."""
    folder = _split(pd.read_csv(DEMO), tmp_path / "d", 3)
    args = ["--baseline", "truthful", "--json", "--n-boot", "50"]
    out = subprocess.run([sys.executable, "-m", "tpsviz", "compare", str(folder), *args, "--engine", "dask"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["settings"]["engine"] == "dask" and "Poisson" not in obj["settings"]["engine_words"]  # (no CIs)
    ref = json.loads(subprocess.run([sys.executable, "-m", "tpsviz", "compare", str(DEMO), *args, "--cluster-by", "run"],
                                    cwd=ROOT, capture_output=True, text=True, timeout=300).stdout)
    assert set(obj["predictors"]) == set(ref["predictors"])
    for name, p in ref["predictors"].items():
        for key in ("tps_delta", "tps_se", "tps_z"):
            assert obj["predictors"][name][key] == pytest.approx(p[key], rel=1e-10), (name, key)
        assert obj["predictors"][name]["n_runs"] == p["n_runs"]
