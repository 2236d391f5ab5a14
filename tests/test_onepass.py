"""The DuckDB engine's main pass (tpsviz.engines.onepass): rules read from per-run extremes catch
every defect the row-by-row flags catch, long runs are checked for duplicate steps by blocks, and
ids are stripped as tpsviz.load strips them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tpsviz
from tpsviz.io.dataset import open_dataset
from tpsviz.diagnostics.leaderboard import metric_table
from tpsviz.engines.runsums import score_from_sums
from tpsviz.engines.duck import sums_duckdb
from tpsviz.core.errors import LogFormatError
from tpsviz.core.schedules import parse_schedule
from tpsviz.core.tps import ScoreSettings

from test_engines import METRICS, _compare, _split


def _runs(spec: dict, seed: int = 0) -> pd.DataFrame:
    """Runs {id: step numbers} with outcomes alternating and random forecasts."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, (tid, steps) in enumerate(spec.items()):
        for s in steps:
            rows.append({"trajectory_id": tid, "step": int(s), "outcome": float(i % 2),
                         "conf_a": float(rng.random())})
    return pd.DataFrame(rows)


LONG = {"r-200": range(1, 201),                      # 200 steps: four blocks of 64
        "r-gaps": [1, 65, 129, 193, 700],             # every step in the same bit of its block
        "r-5-69": [5, 69],                            # span 64: 5 and 69 share bit 5
        "r-0-63": range(0, 64),                       # span 63: one window
        "r-short": range(1, 9)}


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_long_runs_without_duplicates_agree_with_the_reader(tmp_path, fmt):
    df = _runs(LONG)
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    ds = open_dataset(_split(df, tmp_path / fmt, 3, fmt))
    for sched in ("uniform", "linear"):
        _compare(tpsviz.load(path), ds, ScoreSettings(schedule=parse_schedule(sched), n_boot=50))


@pytest.mark.parametrize("steps", [[*range(1, 151), 100], [5, 69, 5], [1, 65, 129, 65], [0, 63, 0]])
def test_a_duplicate_step_is_found_in_a_run_of_any_span(tmp_path, steps):
    df = _runs({"a": range(1, 4), "dup": steps, "b": [1, 2]})
    ds = open_dataset(_split(df, tmp_path / "d", 2))
    with pytest.raises(LogFormatError, match=r"duplicate \(trajectory_id, step\).*1 run\(s\), e\.g\. trajectory 'dup'"):
        sums_duckdb(ds, ScoreSettings(n_boot=0))


def test_ids_are_stripped_as_the_reader_strips_them(tmp_path):
    df = _runs({"r1": [1, 2, 3, 4], "r2\t": [1, 2], "\u00a0r3": [1, 2, 3], "r4": [1, 2]})
    # the first file writes run r1 as " r1", the second as "r1 ": one run once stripped
    df.loc[0:1, "trajectory_id"] = " r1"
    df.loc[2:3, "trajectory_id"] = "r1 "
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    ds = open_dataset(_split(df, tmp_path / "d", 2))
    ref, got = _compare(tpsviz.load(path), ds, ScoreSettings(n_boot=50))
    assert sorted(got.sums.runs["trajectory_id"]) == ["r1", "r2", "r3", "r4"]
    assert got.sums.runs.set_index("trajectory_id").loc["r1", "length"] == 4


def test_ids_with_whitespace_that_do_not_merge_keep_their_runs(tmp_path):
    df = _runs({" r1": [1, 2], "r2\n": [1, 2, 3], "r3": [1]})
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    ds = open_dataset(_split(df, tmp_path / "d", 2))
    _, got = _compare(tpsviz.load(path), ds, ScoreSettings(n_boot=50))
    assert list(got.sums.runs["trajectory_id"]) == ["r1", "r2", "r3"]



def test_a_long_run_whose_id_carries_whitespace_is_checked_under_its_stripped_id(tmp_path):
    # the blocks of a run spanning 64 step numbers or more are counted by a second query, which
    # must find the run under the id the runs carry (stripped), not the stored " r-long"
    df = _runs({" r-long": range(1, 101), "r2\t": [1, 2, 3], "r3": range(1, 70)})
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    ds = open_dataset(_split(df, tmp_path / "d", 2))
    for sched in ("uniform", "linear"):
        _, got = _compare(tpsviz.load(path), ds, ScoreSettings(schedule=parse_schedule(sched), n_boot=50))
    assert list(got.sums.runs["trajectory_id"]) == ["r-long", "r2", "r3"]

BASE = pd.DataFrame({"trajectory_id": ["a", "a", "a", "b", "b"], "step": [1, 2, 3, 1, 2],
                     "outcome": [1.0, 1.0, 1.0, 0.0, 0.0], "conf_a": [0.5, 0.6, 0.7, 0.4, 0.3],
                     "q_z": [np.nan] * 5, "weight": [1.0, 2.0, 1.0, 1.0, 1.0]})


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d.assign(outcome=d["outcome"].where(d.index > 2, 0.5)), "column 'outcome'"),
    (lambda d: d.assign(step=d["step"].where(d.index != 3, -1)), "column 'step'"),
    (lambda d: d.assign(step=d["step"].astype(float).where(d.index != 3, np.nan)), "column 'step'"),
    (lambda d: d.assign(step=d["step"].astype(float).where(d.index != 3, 1e300)), "column 'step'"),
    (lambda d: d.assign(step=d["step"].astype(float).where(d.index != 3, 2.5)), "column 'step'"),
    (lambda d: d.assign(trajectory_id=d["trajectory_id"].where(d.index != 4, "  ")), "trajectory_id"),
    (lambda d: d.assign(conf_a=d["conf_a"].where(d.index != 1, -0.2)), "conf_a"),
    (lambda d: d.assign(conf_a=d["conf_a"].where(d.index != 1, np.inf)), "conf_a"),
    (lambda d: d.assign(outcome=np.nan, q_z=d["q_z"].where(d.index != 0, 1.5)), "q_z"),
    (lambda d: d.assign(outcome=np.nan, q_z=d["q_z"].where(d.index != 0, -0.5)), "q_z"),
])
def test_every_defect_is_caught_by_the_main_pass(tmp_path, edit, needle):
    ds = open_dataset(_split(edit(BASE.copy()).reset_index(drop=True), tmp_path / "d", 2))
    with pytest.raises(LogFormatError) as err:
        sums_duckdb(ds, ScoreSettings(n_boot=0))
    assert needle in str(err.value)


@pytest.mark.parametrize("value", [-1.0, np.inf, np.nan])
def test_a_bad_weight_is_caught_under_the_column_schedule(tmp_path, value):
    df = BASE.assign(weight=BASE["weight"].where(BASE.index != 2, value))
    ds = open_dataset(_split(df, tmp_path / "d", 2))
    with pytest.raises(LogFormatError, match="weight"):
        sums_duckdb(ds, ScoreSettings(n_boot=0, schedule=parse_schedule("column")))


def test_a_stored_nan_beside_a_rounding_error_stays_out_of_the_pooled_counts(tmp_path):
    """A NaN stored as a Parquet double (not a null: pandas writes NaN as null) in the same
    predictor as a forecast rounding outside [0, 1]: setting forecasts into [0, 1] must not turn
    the NaN into 1 (DuckDB orders NaN above every number, so least(1, NaN) is 1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(4)
    n_runs, steps = 40, 5
    tid = np.repeat([f"r{i:02d}" for i in range(n_runs)], steps)
    y = np.repeat((np.arange(n_runs) % 2).astype(float), steps)
    conf = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.15, y.size), 0.0, 1.0)
    conf[3], conf[17], conf[60] = np.nan, np.nan, 1 + 1e-12  # two stored NaN, one rounding
    table = pa.table({"trajectory_id": pa.array(tid), "step": pa.array(np.tile(np.arange(1, steps + 1), n_runs)),
                      "outcome": pa.array(y), "conf_a": pa.array(conf, from_pandas=False)})
    assert table.column("conf_a").null_count == 0 and np.isnan(table.column("conf_a").to_numpy()).sum() == 2
    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(table.slice(0, 100), folder / "part-0.parquet")
    pq.write_table(table.slice(100), folder / "part-1.parquet")
    pq.write_table(table, tmp_path / "log.parquet")
    data = tpsviz.load(tmp_path / "log.parquet")
    _, got = _compare(data, open_dataset(folder), ScoreSettings(n_boot=20))
    mt = metric_table(data, n_boot=0)
    cols = ["auroc", "auprc", "auroc_final", "tece_pooled", "tece_final"]
    np.testing.assert_allclose(got.metrics.loc[mt.index, cols].to_numpy(float), mt[cols].to_numpy(float),
                               rtol=1e-12, atol=1e-14)
    assert got.sums.pooled["a"].tece_n.sum() == y.size - 2  # the NaN rows are not counted


@pytest.mark.parametrize("column", ["outcome", "conf_a"])
def test_a_stored_nan_is_a_missing_value_as_the_reader_reads_it(tmp_path, column):
    """A NaN stored as a Parquet double, in a small file whose min/max statistics leave it out (from
    which DuckDB 2.0 folds isnan() to false unless the file is read with can_have_nan): a NaN outcome
    is a censored run and a NaN forecast a missing one, in both engines."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    y = np.repeat([1.0, 0.0, np.nan, 1.0], 3)
    conf = np.repeat([0.5, 0.25, 0.6, 0.75], 3)
    if column == "outcome":
        cols = {"outcome": y, "conf_a": conf}
    else:
        conf[[6, 7]] = np.nan
        cols = {"outcome": np.nan_to_num(y, nan=1.0), "conf_a": conf}
    table = pa.table({"trajectory_id": pa.array(np.repeat(["a", "b", "c", "d"], 3)),
                      "step": pa.array(np.tile([1, 2, 3], 4)),
                      **{k: pa.array(v, from_pandas=False) for k, v in cols.items()}})
    assert np.isnan(table.column(column).to_numpy()).sum() >= 2 and table.column(column).null_count == 0
    (tmp_path / "d").mkdir()
    pq.write_table(table, tmp_path / "d" / "log.parquet")
    data = tpsviz.load(tmp_path / "d" / "log.parquet")
    _, got = _compare(data, open_dataset(tmp_path / "d"), ScoreSettings(n_boot=20))
    assert got.sums.n_censored == int(data.trajectories["censored"].sum()) == (1 if column == "outcome" else 0)


@pytest.mark.parametrize("missing", [np.nan, None])
def test_missing_forecasts_are_left_out_and_rounding_is_noted(tmp_path, missing):
    df = pd.concat([BASE, BASE.assign(trajectory_id=BASE["trajectory_id"] + "2", outcome=1 - BASE["outcome"])],
                   ignore_index=True)
    df["conf_a"] = pd.Series([0.5, missing, 1 + 1e-12, 0.4, -1e-12, 0.3, 0.9, missing, 0.2, 0.7], dtype=object)
    df["conf_a"] = pd.to_numeric(df["conf_a"])  # None: a null in Parquet; NaN: a stored NaN
    path = tmp_path / "log.parquet"
    df.to_parquet(path)
    ds = open_dataset(_split(df, tmp_path / "d", 2))
    data = tpsviz.load(path)
    _, got = _compare(data, ds, ScoreSettings(n_boot=50))
    notes = " ".join(got.sums.notes)
    assert "2 value(s) within 1e-9 outside [0, 1]" in notes and "2 step(s) have no forecast" in notes
    mt = metric_table(data, n_boot=0)  # the pooled counts leave the missing forecasts out too
    cols = ["auroc", "auprc", "auroc_final", "tece_pooled", "tece_final"]
    np.testing.assert_allclose(got.metrics.loc[mt.index, cols].to_numpy(float), mt[cols].to_numpy(float),
                               rtol=1e-12, atol=1e-14)


TEXT_CELLS = ["-nan", "nan(1)", "1_000", "0_1", "+-1", "0x1p-1", "1/2"]


@pytest.mark.parametrize("cell", TEXT_CELLS)
@pytest.mark.parametrize("column", ["conf_a", "outcome", "q_z", "weight", "step"])
def test_text_the_reader_refuses_is_refused_out_of_core_too(tmp_path, column, cell):
    """DuckDB's cast reads "1_000" as 1000, "-nan" as NaN and "+-1" as -1; pandas.to_numeric,
    which tpsviz.load uses, reads none of them. A CSV dataset holding one such cell is refused by
    both engines, naming the column (found by comparing the two casts, docs/architecture.md)."""
    df = BASE.astype(object).assign(outcome=["1", "1", "1", "", ""], q_z=["", "", "", "0.4", "0.4"])
    df.loc[4, column] = cell
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    with pytest.raises(LogFormatError) as mem:
        tpsviz.load(path)
    ds = open_dataset(_split(df, tmp_path / "d", 2, "csv"))
    with pytest.raises(LogFormatError) as out:
        sums_duckdb(ds, ScoreSettings(n_boot=0, schedule=parse_schedule("column")))
    assert f"column '{column}'" in str(mem.value)
    assert f"column '{column}'" in str(out.value) and "trajectory 'b'" in str(out.value)
    if column == "conf_a":  # not a number, not "outside [0, 1]"
        assert "must hold numbers" in str(out.value) and "must be in [0, 1]" not in str(out.value)


def test_a_forecast_outside_the_unit_interval_is_told_apart_from_text(tmp_path):
    df = BASE.astype(object)
    df.loc[1, "conf_a"], df.loc[4, "conf_a"] = "1.5", "x"
    ds = open_dataset(_split(df, tmp_path / "d", 2, "csv"))
    with pytest.raises(LogFormatError) as out:
        sums_duckdb(ds, ScoreSettings(n_boot=0))
    msg = str(out.value)
    assert "column 'conf_a': probabilities must be in [0, 1]; not so on 1 row(s), e.g. in trajectory 'a'" in msg
    assert "column 'conf_a' must hold numbers (probabilities in [0, 1]); not so on 1 row(s), e.g. in trajectory 'b'" in msg


def test_runs_in_any_order_read_as_the_sorted_table():
    """``Runs`` puts every column in the order of the ids while converting it: the same numbers
    as converting a table sorted first, for float, count, bool and null cells over several chunks
    (the main pass returns its runs in no order)."""
    import pyarrow as pa

    from tpsviz.engines.runs import Runs

    rng = np.random.default_rng(7)
    n = 1_000
    ids = [f"run-{i:04d}" for i in rng.permutation(n)]
    x = rng.random(n)
    x[rng.random(n) < 0.2] = np.nan
    table = pa.table({"tid": ids,
                      "a": pa.array(x, from_pandas=True),  # NaN → null
                      "n": pa.array(rng.integers(1, 50, n), pa.int64()),
                      "c": pa.array([None if v < 0.1 else bool(v > 0.5) for v in rng.random(n)])})
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=97))  # 11 chunks
    assert chunked.column("a").num_chunks > 5
    runs = Runs.sorted_by_id(chunked)
    want = table.sort_by("tid").to_pandas()
    assert list(runs.ids()) == sorted(ids)
    np.testing.assert_array_equal(runs.num("a"), want["a"].to_numpy(float))
    np.testing.assert_array_equal(runs.count("n"), want["n"].to_numpy(np.int64))
    assert runs.count("n").dtype == np.int64
    np.testing.assert_array_equal(runs.num("c"), want["c"].astype(float).to_numpy())
    mask = np.zeros(n, bool)
    mask[[17, 400]] = True
    assert runs.first_id(mask) == sorted(ids)[17]
    assert np.isnan(runs.num("absent")).all() and (runs.num("absent", 0) == 0).all()
    already = Runs(table.sort_by("tid"))  # no order: the table is read as it is
    np.testing.assert_array_equal(already.num("a"), runs.num("a"))


def test_one_run_in_conflict_is_named_without_and_0_more(tmp_path):
    df = pd.DataFrame({"trajectory_id": ["a", "a", "b", "b"], "step": [1, 2, 1, 2], "outcome": [1, 1, 0, 0],
                       "censored": [True, True, False, False], "conf_x": [0.6, 0.7, 0.4, 0.3]})
    folder = tmp_path / "d"
    folder.mkdir()
    df.to_parquet(folder / "p.parquet")
    with pytest.raises(LogFormatError) as err:
        sums_duckdb(open_dataset(str(folder)), ScoreSettings())
    assert "trajectory 'a': column 'censored' is true while 'outcome' is present" in str(err.value)
    assert "0 more" not in str(err.value)


def test_a_partial_outcome_joins_its_rows_by_the_stripped_id(tmp_path):
    """The unlabelled rows of a run whose id is written with spaces in one file and without in
    another are labelled through the stripped id (both the merged and the unmerged case)."""
    df = _runs({"r1": [1, 2, 3, 4], "r2": [1, 2], "r3": [1, 2, 3]})
    df["outcome"] = [1.0, None, None, None, 0.0, None, None, 1.0, None]
    df["conf_a"] = [0.9, 0.2, 0.7, 0.4, 0.3, 0.6, 0.5, 0.8, 0.1]
    for ids in ([" r1", "r1", "r1 ", "r1", "r2", "r2", "\tr3", "\tr3", "\tr3"],   # r1 merged from three spellings
                ["r1", "r1", "r1", "r1", " r2", " r2", "r3 ", "r3 ", "r3 "]):   # stripped, none merged
        d = df.assign(trajectory_id=ids)
        path = tmp_path / "log.csv"
        d.to_csv(path, index=False)
        data = tpsviz.load(path)
        ds = open_dataset(_split(d, tmp_path / f"d{ids[0].strip()}{len(ids[0])}", 3))
        _compare(data, ds, ScoreSettings(n_boot=50))
        mt = metric_table(data, n_boot=0)
        m = score_from_sums(sums_duckdb(ds, ScoreSettings(n_boot=0)), ScoreSettings(n_boot=0)).metrics.loc[mt.index]
        np.testing.assert_allclose(m[METRICS].to_numpy(float), mt[METRICS].to_numpy(float), rtol=1e-12)


@pytest.mark.parametrize("blank", ["\t", " ", "\u3000", "\n\u00a0"])
def test_an_id_of_whitespace_only_is_no_id(tmp_path, blank):
    """An id that str.strip() empties is refused by both engines (DuckDB's trim() removes only
    spaces: an id of a tab was read as a run named '' before)."""
    df = _runs({"r1": [1, 2], "r2": [1, 2, 3]})
    df.loc[4, "trajectory_id"] = blank
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    with pytest.raises(LogFormatError, match="trajectory_id"):
        tpsviz.load(path)
    with pytest.raises(LogFormatError) as out:
        sums_duckdb(open_dataset(_split(df, tmp_path / "d", 2)), ScoreSettings(n_boot=0))
    assert "column 'trajectory_id': every row needs an id; not so on 1 row(s)" in str(out.value)


def test_an_empty_weight_under_the_column_schedule_is_named_alike(tmp_path):
    df = BASE.assign(weight=BASE["weight"].where(BASE.index != 3))
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    st = ScoreSettings(n_boot=0, schedule=parse_schedule("column"))
    with pytest.raises(ValueError) as mem:
        tpsviz.compute_tps(tpsviz.load(path), st)
    with pytest.raises(LogFormatError) as out:
        sums_duckdb(open_dataset(_split(df, tmp_path / "d", 2)), st)
    words = "schedule 'column': the 'weight' column is empty on 1 row(s), e.g. in trajectory 'b'; give every row a weight"
    assert str(mem.value) == words and words in str(out.value)



@pytest.mark.parametrize("prefetch", [False, True, "reserved"])
def test_runs_read_every_column_in_the_order_of_the_ids(prefetch):
    """Runs puts each column of the pass's result (any order, several chunks, nulls, counts,
    booleans) in the order of the ids, converted alone or all at once on two threads, into
    arrays mapped beforehand (run_pass maps them while the ids sort)."""
    import pyarrow as pa

    from tpsviz.engines.runs import Runs

    rng = np.random.default_rng(5)
    n = 1_000
    ids = np.array([f"t{i:05d}" for i in rng.permutation(n)])
    frame = pd.DataFrame({"tid": ids, "n": rng.integers(1, 50, n), "yn": rng.integers(0, 3, n),
                          "a1_0": rng.normal(size=n), "smin": rng.integers(0, 4, n).astype(float),
                          "cmin": rng.random(n) < 0.5})
    frame.loc[rng.random(n) < 0.2, "a1_0"] = np.nan
    frame.loc[rng.random(n) < 0.1, "smin"] = np.nan
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.set_column(5, "cmin", pa.array(frame["cmin"].where(rng.random(n) < 0.9), type=pa.bool_()))
    table = pa.Table.from_batches(table.to_batches(max_chunksize=300))  # four chunks
    assert table.column("a1_0").num_chunks == 4
    runs = Runs.sorted_by_id(table)
    reserved = Runs.reserve(table) if prefetch == "reserved" else None
    if reserved is not None:
        assert set(reserved) == {("n", "count"), ("yn", "count"), "a1_0", "smin", "cmin"}
        runs.prefetch(dict(reserved))
        assert all(runs._num[key] is reserved[key] for key in reserved)  # filled, not copied
    elif prefetch:
        runs.prefetch()
    want = frame.assign(cmin=table.column("cmin").to_pandas()).sort_values("tid")
    assert runs.sorted_ids().to_pylist() == want["tid"].tolist()
    np.testing.assert_array_equal(runs.count("n"), want["n"].to_numpy())
    assert runs.count("n").dtype == np.int64
    np.testing.assert_array_equal(runs.num("yn"), want["yn"].to_numpy(float))
    np.testing.assert_array_equal(runs.num("a1_0"), want["a1_0"].to_numpy(float))  # (NaN where null)
    np.testing.assert_array_equal(runs.num("smin"), want["smin"].to_numpy(float))
    np.testing.assert_array_equal(runs.num("cmin"), want["cmin"].astype(float).to_numpy())
    last = runs.num("a1_0")
    np.nan_to_num(last, copy=False)  # a column changed in place is read as changed (run_pass does so)
    assert not np.isnan(runs.num("a1_0")).any()


_SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(_SPACES)),
                                             max_size=6)), max_size=30),
       st.integers(0, 3))
@example(["e\u3000", "\u00a0d", "x\u0085", "\t", "é", None, ""], 0)
def test_ids_are_stripped_exactly_as_str_strip(values, cut):
    """strip_ids tells padded ids apart by their first and last UTF-8 bytes: whatever the text
    (every Unicode whitespace, multibyte characters, nulls, empty ids, a sliced array), the
    result is str.strip of each, and "changed" says whether any id changed."""
    import pyarrow as pa

    from tpsviz.io.dataset.duckdb_source import strip_ids

    ids = pa.array(values, type=pa.string()).slice(min(cut, len(values)))
    kept = values[min(cut, len(values)):]
    out, changed = strip_ids(ids)
    assert out.to_pylist() == [None if v is None else v.strip() for v in kept]
    assert changed == any(v is not None and v != v.strip() for v in kept)
