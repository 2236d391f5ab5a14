"""Malformed CSV files and damaged Parquet files in a dataset read out of core (DuckDB engine,
the dashboard's sample, Dask): the message names the file (and the line) and what is wrong there,
as the in-memory reader does, and never quotes the line or the server's path (DuckDB's own
message does both).

Found by pointing `tpsviz score DIR --engine duckdb` at such files: each ended in "unexpected
failure (InvalidInputException: … Original Line: <the line> …); this is a bug in tpsviz", and
the dashboard's page error would have shown the same text. A Parquet file with a damaged page
behind a sound footer gave "unexpected failure (… Snappy decompression failure)".
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

import tpsviz
from tpsviz.io.dataset import open_dataset
from tpsviz.io.file_errors import first_bad_line
from tpsviz.engines.duck import sums_duckdb
from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import limits_from_env
from tpsviz.core.tps import ScoreSettings

HEADER = "trajectory_id,step,outcome,conf_x,task"
SECRET = "SECRET-cell"


def _good_lines(runs: int) -> list[str]:
    return [f"r{i},{t},{i % 2},0.{t + 2},task {i}" for i in range(runs) for t in (1, 2)]


def _dataset(tmp_path, bad: bytes, at: int, runs: int = 40) -> str:
    """Two CSV files; the second has ``bad`` as its line ``at`` (1 = the header)."""
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.csv").write_text("\n".join([HEADER, *_good_lines(4)]) + "\n")
    lines = [HEADER.encode()] + [x.replace("r", "s", 1).encode() for x in _good_lines(runs)]
    lines.insert(at - 1, bad)
    (folder / "b.csv").write_bytes(b"\n".join(lines) + b"\n")
    return str(folder)


BAD = {
    "more fields": (f"x1,1,1,0.5,{SECRET},extra".encode(), "line {at} has 6 fields, more than the header's 5"),
    "fewer fields": (f"x1,1,{SECRET}".encode(), "line {at} has 3 of the header's 5 fields"),
    # (in the id: out of core, only the columns the log uses are read past DuckDB's first rows)
    "not UTF-8": (f"x\xe91,1,1,0.5,{SECRET}".encode("latin-1"), "line {at}: the file is not valid UTF-8 text"),
}


def _out_of_core(folder: str) -> str:
    with pytest.raises(LogFormatError) as exc:
        sums_duckdb(open_dataset(folder), ScoreSettings(n_boot=0))
    return str(exc.value)


@pytest.mark.parametrize("kind", list(BAD))
@pytest.mark.parametrize("late", [False, True], ids=["early", "late"])
def test_a_malformed_line_is_named_by_file_and_line_never_quoted(tmp_path, kind, late):
    """Early: DuckDB's sniffer gives up on the file (no line named: tpsviz finds it). Late (past
    the sniffer's 20,480 sampled rows): DuckDB names the line."""
    bad, words = BAD[kind]
    runs = 11_000 if late else 40
    at = 2 * runs if late else 5
    folder = _dataset(tmp_path, bad, at, runs)
    message = _out_of_core(folder)
    assert "'b.csv'" in message and words.format(at=at) in message, message
    # (the label is the folder as given; the file's full path on the server is not shown)
    assert SECRET not in message and str(tmp_path / "d" / "b.csv") not in message and "Original Line" not in message
    assert "unexpected" not in message


def test_a_quote_left_open_is_named(tmp_path):
    folder = _dataset(tmp_path, f'x1,1,1,0.5,"{SECRET}'.encode(), 5)
    message = _out_of_core(folder)
    assert "'b.csv': not a well-formed CSV file: a quoted field that starts on line 5 is not closed" in message
    assert SECRET not in message


def test_the_in_memory_reader_says_it_in_the_same_words(tmp_path):
    """pandas' parser errors read as the out-of-core engine's (helper-24: "Error tokenizing data.
    C error: Expected 5 fields in line 5, saw 6")."""
    for name, bad in (("more", BAD["more fields"][0]), ("quote", f'x1,1,1,0.5,"{SECRET}'.encode())):
        (tmp_path / name).mkdir()
        folder = _dataset(tmp_path / name, bad, 5)
        with pytest.raises(LogFormatError) as memory:
            tpsviz.load(folder)
        words = str(memory.value).split("b.csv: ", 1)[1]
        assert words in _out_of_core(folder) and "C error" not in words, words


def test_the_in_memory_reader_refuses_the_same_lines(tmp_path):
    """The two engines agree on refusing a line with too many fields or bytes that are not UTF-8
    (a short line is padded by pandas and refused for its values, or read: the one difference,
    docs/formats.md)."""
    for kind in ("more fields", "not UTF-8"):
        (tmp_path / kind.replace(" ", "_")).mkdir()
        folder = _dataset(tmp_path / kind.replace(" ", "_"), BAD[kind][0], 5)
        with pytest.raises(LogFormatError) as memory:
            tpsviz.load(folder)
        assert "b.csv" in str(memory.value) and SECRET not in str(memory.value)
        assert "b.csv" in _out_of_core(folder)


def test_the_dashboards_sample_of_a_large_csv_dataset_says_the_same(tmp_path):
    folder = _dataset(tmp_path, BAD["more fields"][0], 5)
    small = dataclasses.replace(limits_from_env(), max_bytes=200)  # (the dataset is read on a sample)
    with pytest.raises(LogFormatError) as exc:
        tpsviz.load(folder, limits=small, sample=(10, 1))
    assert "'b.csv': not a well-formed CSV file: line 5 has 6 fields" in str(exc.value)
    assert SECRET not in str(exc.value)


def test_a_sound_csv_dataset_with_quoted_newlines_still_reads_as_in_memory(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    df = pd.DataFrame({"trajectory_id": ["a", "a", "b", "b"], "step": [1, 2, 1, 2], "outcome": [1, 1, 0, 0],
                       "conf_x": [0.6, 0.7, 0.4, 0.3], "task": ['two\nlines, "quoted"'] * 4})
    df.to_csv(folder / "a.csv", index=False)
    got = sums_duckdb(open_dataset(str(folder)), ScoreSettings(n_boot=0))
    assert list(got.runs["trajectory_id"]) == ["a", "b"]
    assert first_bad_line(folder / "a.csv", ",") is None


def _damaged_parquet(tmp_path) -> str:
    """Two Parquet files; the second's pages are damaged, its footer is sound."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "d"
    folder.mkdir()
    runs = pd.DataFrame([line.split(",") for line in _good_lines(200)], columns=HEADER.split(","))
    runs = runs.astype({"step": int, "outcome": int, "conf_x": float})
    pq.write_table(pa.Table.from_pandas(runs.iloc[:100]), folder / "a.parquet")
    pq.write_table(pa.Table.from_pandas(runs.iloc[100:]), folder / "b.parquet", compression="snappy")
    raw = bytearray((folder / "b.parquet").read_bytes())
    for i in range(100, 1500):
        raw[i] ^= 0x5A
    (folder / "b.parquet").write_bytes(bytes(raw))
    pq.read_metadata(folder / "b.parquet")  # (the footer still reads)
    return str(folder)


def test_a_damaged_parquet_page_is_named_by_every_reader(tmp_path):
    folder = _damaged_parquet(tmp_path)
    with pytest.raises(LogFormatError) as memory:
        tpsviz.load(folder)
    assert "b.parquet: the Parquet file cannot be read" in str(memory.value)
    message = _out_of_core(folder)
    assert "'b.parquet': the Parquet file cannot be read (it is damaged)" in message
    assert str(tmp_path / "d" / "b.parquet") not in message and "unexpected" not in message
    small = dataclasses.replace(limits_from_env(), max_rows=100)  # (the dashboard's sample)
    with pytest.raises(LogFormatError, match="'b.parquet': the Parquet file cannot be read"):
        tpsviz.load(folder, limits=small, sample=(10, 1))
