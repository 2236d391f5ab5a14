"""A dataset too large for memory read as a seeded random sample of whole runs
(tpsviz.io.dataset.sample, tpsviz.load(..., sample=...))."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.io.dataset import open_dataset
from tpsviz.io.dataset.sample import sample_runs
from tpsviz.io.files import limits_from_env

from test_engines import _split


def _log(n_runs: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_runs):
        y = float(i % 3 == 0)
        for s in range(1, int(rng.integers(1, 7)) + 1):
            rows.append({"trajectory_id": f"run-{i:04d}", "step": s, "outcome": y, "conf_a": float(rng.random())})
    return pd.DataFrame(rows)


def test_a_sample_holds_whole_runs_and_is_the_same_whatever_the_file_order(tmp_path):
    df = _log()
    a = open_dataset(_split(df, tmp_path / "a", 3))
    b = open_dataset(_split(df.iloc[::-1].reset_index(drop=True), tmp_path / "b", 5))
    fa, ia = sample_runs(a, 40, seed=7)
    fb, ib = sample_runs(b, 40, seed=7)
    assert ia["runs_sampled"] == 40 and ia["runs_total"] == 300 and ia["rows_total"] == len(df)
    assert set(fa["trajectory_id"]) == set(fb["trajectory_id"]) and len(set(fa["trajectory_id"])) == 40
    whole = df[df["trajectory_id"].isin(set(fa["trajectory_id"]))]
    assert len(fa) == len(whole) == ia["rows_sampled"]  # every row of a drawn run, nothing else
    other, _ = sample_runs(a, 40, seed=8)
    assert set(other["trajectory_id"]) != set(fa["trajectory_id"])
    assert fa["_where"].str.match(r"'part-\d\.parquet' row \d+").all()


def test_ids_stored_with_whitespace_are_one_run(tmp_path):
    df = _log(60)
    sizes = df["trajectory_id"].value_counts()
    run = sizes[sizes >= 2].index[0]
    rows = df.index[df["trajectory_id"] == run]
    df.loc[rows[1::2], "trajectory_id"] = f" {run}\t"  # the same run, stored with whitespace
    ds = open_dataset(_split(df, tmp_path / "d", 2))
    frame, info = sample_runs(ds, 60, seed=1)
    assert info["runs_total"] == 60 and len(frame) == len(df)


def test_the_draw_stops_at_the_row_limit(tmp_path):
    ds = open_dataset(_split(_log(), tmp_path / "d", 2))
    frame, info = sample_runs(ds, 300, seed=1, max_rows=200)
    assert info["stopped_by_rows"] and len(frame) <= 200 and 0 < info["runs_sampled"] < 300


def test_load_samples_only_a_dataset_over_the_limit(tmp_path):
    df = _log()
    folder = _split(df, tmp_path / "d", 3)
    whole = tpsviz.load(folder, sample=(50, 3))
    assert "sample" not in whole.reading and whole.n_trajectories == 300
    small = dataclasses.replace(limits_from_env(), max_rows=500)
    part = tpsviz.load(folder, limits=small, sample=(50, 3))
    info = part.reading["sample"]
    assert part.n_trajectories == info["runs_sampled"] == 50 and info["runs_total"] == 300
    # the sampled runs score as they do in the whole log
    ref = tpsviz.compute_tps(whole, tpsviz.ScoreSettings(n_boot=0)).per_trajectory.set_index("trajectory_id")
    got = tpsviz.compute_tps(part, tpsviz.ScoreSettings(n_boot=0)).per_trajectory.set_index("trajectory_id")
    np.testing.assert_allclose(got["tps"], ref.loc[got.index, "tps"], rtol=1e-12)
    with pytest.raises(tpsviz.LogFormatError, match="TPSVIZ_MAX_ROWS"):
        tpsviz.load(folder, limits=small)


def test_columns_named_like_the_readers_own_are_read_as_data(tmp_path):
    df = _log(30).assign(filename="a", file_row_number=7)
    folder = _split(df, tmp_path / "d", 2)
    frame, info = sample_runs(open_dataset(folder), 10, seed=2)
    assert info["runs_sampled"] == 10 and (frame["filename"] == "a").all() and (frame["file_row_number"] == 7).all()
    assert frame["_where"].str.match(r"'part-\d\.parquet' \(a sampled run\)").all()


def test_the_sample_is_the_ids_with_the_smallest_seeded_hash_with_or_without_whitespace(tmp_path):
    """The draw is the n ids with the smallest hash(id, seed) (ties by id): computed here from the ids
    alone, outside the dataset. Ids stored with surrounding whitespace (the slow path) give the same
    runs as the clean ids."""
    import duckdb

    df = _log(200, seed=3)
    ids = pd.DataFrame({"id": sorted(df["trajectory_id"].unique())})
    want = duckdb.sql("SELECT id FROM ids ORDER BY hash(id, 11), id LIMIT 25").df()["id"].tolist()
    clean, info = sample_runs(open_dataset(_split(df, tmp_path / "clean", 2)), 25, seed=11)
    assert set(clean["trajectory_id"]) == set(want) and info["runs_sampled"] == 25
    spaced = df.copy()
    spaced.loc[spaced.index[::3], "trajectory_id"] = " " + spaced.loc[spaced.index[::3], "trajectory_id"] + "\u00a0"
    frame, info = sample_runs(open_dataset(_split(spaced, tmp_path / "spaced", 2)), 25, seed=11)
    assert set(frame["trajectory_id"].str.strip()) == set(want) and info["runs_total"] == 200
    assert len(frame) == len(clean)
    limited, info = sample_runs(open_dataset(_split(df, tmp_path / "clean2", 2)), 25, seed=11, max_rows=40)
    sizes = df["trajectory_id"].value_counts()
    keep = np.cumsum([sizes[i] for i in want]) <= 40    # runs taken in hash order while they fit
    assert set(limited["trajectory_id"]) == set(np.array(want)[keep]) and info["stopped_by_rows"]


def test_the_whitespace_ids_are_stripped_of_is_every_whitespace_character():
    """schema.WHITESPACE scans code points up to U+3000 only; every character str.strip() removes
    (str.isspace) lies there."""
    from tpsviz.core.schema import WHITESPACE

    assert WHITESPACE == "".join(c for c in map(chr, range(0x110000)) if c.isspace())


def test_rows_that_form_no_run_are_counted_in_a_note_of_the_sample(tmp_path):
    """Rows without an id, or with one stored as bytes that are not UTF-8, cannot be drawn: the
    sample says how many (they are not dropped without a word)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = _log(60)
    ids = [i.encode() for i in df["trajectory_id"]]
    ids[:3] = [b"\xe8x", None, None]
    folder = tmp_path / "d"
    folder.mkdir()
    table = pa.Table.from_pandas(df.drop(columns="trajectory_id"), preserve_index=False)
    pq.write_table(table.append_column("trajectory_id", pa.array(ids, pa.binary())), folder / "part.parquet")
    small = dataclasses.replace(limits_from_env(), max_rows=100)
    part = tpsviz.load(str(folder), limits=small, sample=(20, 1))
    note = next(n for n in part.notes if "have no trajectory id" in n)
    assert note.startswith(f"3 of {len(df):,} step rows")
    assert part.reading["sample"]["rows_total"] == len(df) - 3
