"""Columns stored in Parquet types that are not plain numbers or text: every engine refuses them
with a message naming the column and what it holds, or reads them as the in-memory reader does.
Never an "unexpected failure", never a score computed from a duration or a list.

Found by trying files a harness or a hand-written script could produce: a forecast column of
INTERVAL type was scored out of core (DuckDB's type name contains "INT"), a list-typed column
stopped the engine with a binder error, and bytes that are not UTF-8 in an id column were an
unexpected failure in both engines.
"""

from __future__ import annotations

import dataclasses
import datetime

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tpsviz
from tpsviz.io.dataset import open_dataset
from tpsviz.engines.duck import sums_duckdb
from tpsviz.engines.plan import is_integer, is_nested, stored_as
from tpsviz.io.dataset.duckdb_source import id_text
from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import limits_from_env
from tpsviz.io.tables.run_ids import id_text as id_text_in_memory
from tpsviz.core.tps import ScoreSettings

from test_engines import _compare

BASE = {"trajectory_id": ["a", "a", "b", "b"], "step": [1, 2, 1, 2], "outcome": [1, 1, 0, 0],
        "conf_x": [0.6, 0.7, 0.4, 0.3]}


def _write(folder, **columns) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({**BASE, **columns}), folder / "part.parquet")
    return str(folder)


def _both_refuse(folder: str) -> tuple[str, str]:
    """The messages of the in-memory reader and of the DuckDB engine (both must refuse)."""
    with pytest.raises(LogFormatError) as memory:
        tpsviz.load(folder)
    with pytest.raises(LogFormatError) as out_of_core:
        sums_duckdb(open_dataset(folder), ScoreSettings())
    return str(memory.value), str(out_of_core.value)


@pytest.mark.parametrize("typ, kind", [
    ("DOUBLE", "float"), ("FLOAT", "float"), ("BIGINT", "exact"), ("UTINYINT", "exact"),
    ("HUGEINT", "exact"), ("DECIMAL(18,3)", "exact"), ("BOOLEAN", "exact"), ("VARCHAR", "text"),
    ("INTERVAL", "text"), ("DATE", "text"), ("TIMESTAMP WITH TIME ZONE", "text"), ("BLOB", "text"),
    ("DOUBLE[]", "text"), ("BIGINT[3]", "text"), ("STRUCT(x DOUBLE)", "text"), ("MAP(VARCHAR, INTEGER)", "text")])
def test_a_column_type_is_read_by_its_whole_name(typ, kind):
    assert stored_as(typ) == kind
    assert is_integer(typ) == (typ in ("BIGINT", "UTINYINT", "HUGEINT"))
    assert is_nested(typ) == (typ.endswith("]") or typ.startswith(("STRUCT", "MAP")))


def test_only_integers_that_fit_a_bigint_are_cast_to_one():
    assert is_integer("UINTEGER", bigint=True) and is_integer("BIGINT", bigint=True)
    assert not is_integer("UBIGINT", bigint=True) and not is_integer("HUGEINT", bigint=True)
    assert is_integer("UBIGINT") and not is_integer("INTERVAL")


@pytest.mark.parametrize("column, values", [
    ("conf_x", pa.array([[0.5]] * 4, pa.list_(pa.float64()))),
    ("conf_x", pa.array([{"p": 0.5}] * 4, pa.struct([("p", pa.float64())]))),
    ("step", pa.array([[1], [2], [1], [2]], pa.list_(pa.int64()))),
    ("trajectory_id", pa.array([["a"], ["a"], ["b"], ["b"]], pa.list_(pa.string())))])
def test_a_nested_log_column_is_named_by_every_engine(tmp_path, column, values):
    memory, out_of_core = _both_refuse(_write(tmp_path / "d", **{column: values}))
    for message in (memory, out_of_core):
        assert f"column '{column}' holds lists, structs or maps" in message
        assert "unexpected" not in message


def test_a_nested_column_the_log_does_not_use_is_left_out_with_a_note(tmp_path):
    folder = _write(tmp_path / "d", tags=pa.array([["x"]] * 4, pa.list_(pa.string())))
    data = tpsviz.load(folder)
    assert any("nested type" in n and "'tags'" in n for n in data.notes)
    _compare(data, open_dataset(folder), ScoreSettings(n_boot=0))


@pytest.mark.parametrize("sql_type, value", [("INTERVAL", "INTERVAL 1 SECOND"), ("DATE", "DATE '2020-01-01'"),
                                             ("TIME", "TIME '00:00:01'")])
def test_a_forecast_stored_as_a_date_or_duration_is_not_a_number(tmp_path, sql_type, value):
    """DuckDB writes these as Parquet logical types; before, INTERVAL was read as an integer
    type (its name contains "INT") and scored."""
    folder = tmp_path / "d"
    folder.mkdir()
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM (VALUES ('a', 1, 1, {value}), ('a', 2, 1, {value}), ('b', 1, 0, {value})) "
                f"t(trajectory_id, step, outcome, conf_x)) TO '{folder / 'part.parquet'}'")
    assert con.sql(f"DESCRIBE SELECT * FROM '{folder / 'part.parquet'}'").fetchall()[3][1] == sql_type
    memory, out_of_core = _both_refuse(str(folder))
    assert "column 'conf_x' must hold numbers" in out_of_core
    assert "'conf_x'" in memory and ("not a number" in memory or "not UTF-8 text" in memory)


@pytest.mark.parametrize("column", ["conf_x", "step", "outcome"])
def test_a_duration_written_by_pyarrow_is_not_a_number_in_either_engine(tmp_path, column):
    """pyarrow stores a duration as a plain int64 with the Arrow type in the file's metadata:
    DuckDB read the integers (a forecast of 1 second scored as 1); the in-memory reader reads
    the durations and refuses them."""
    values = {"conf_x": [1, 0, 1, 0], "step": [1, 2, 1, 2], "outcome": [1, 1, 0, 0]}[column]
    folder = _write(tmp_path / "d", **{column: pa.array(values, pa.duration("s"))})
    memory, out_of_core = _both_refuse(folder)
    assert f"column '{column}'" in memory
    assert f"column '{column}' must hold numbers; it holds durations" in out_of_core


def test_ids_stored_as_bytes_read_as_their_text_in_both_engines(tmp_path):
    ids = ["é-1", "é-1", "b", "b"]
    folder = _write(tmp_path / "d", trajectory_id=pa.array([i.encode() for i in ids], pa.binary()))
    assert pq.read_schema(f"{folder}/part.parquet").field("trajectory_id").type == pa.binary()
    data = tpsviz.load(folder)
    ref, got = _compare(data, open_dataset(folder), ScoreSettings(n_boot=0))
    assert sorted(ref.tps_matrix().index) == sorted(got.per_trajectory["trajectory_id"].unique()) == ["b", "é-1"]


def _day(d: int, hour: int = 0, micro: int = 0):
    return datetime.datetime(2026, 1, d, hour, 0, 0, micro)


# (stored ids, their text in every engine; docs/formats.md "Trajectory ids")
TYPED_IDS = [
    (pa.array([True, True, False, False]), ["False", "True"]),
    (pa.array([_day(1, 12, 500000)] * 2 + [_day(2, 0, 123)] * 2, pa.timestamp("us")),
     ["2026-01-01 12:00:00.5", "2026-01-02 00:00:00.000123"]),  # not padded to the column's precision
    (pa.array([1, 1, 2000, 2000], pa.timestamp("ms")), ["1970-01-01 00:00:00.001", "1970-01-01 00:00:02"]),
    (pa.array([1, 1, 2, 2], pa.timestamp("ns")), ["1970-01-01 00:00:00.000000001", "1970-01-01 00:00:00.000000002"]),
    (pa.array([_day(1, 12)] * 2 + [_day(2)] * 2, pa.timestamp("us", tz="UTC")),
     ["2026-01-01 12:00:00+00:00", "2026-01-02 00:00:00+00:00"]),
    (pa.array([_day(1, 12)] * 2 + [_day(2)] * 2, pa.timestamp("s", tz="Asia/Tokyo")),  # the instant, in UTC
     ["2026-01-01 12:00:00+00:00", "2026-01-02 00:00:00+00:00"]),
    (pa.array([datetime.date(2026, 1, 1)] * 2 + [datetime.date(2026, 1, 2)] * 2), ["2026-01-01", "2026-01-02"]),
    (pa.array([datetime.time(1, 2, 3)] * 2 + [datetime.time(4, 5, 6)] * 2), ["01:02:03", "04:05:06"]),
    (pa.array([1e20, 1e20, 0.1 + 0.2, 0.1 + 0.2]), ["0.30000000000000004", "1e+20"]),
]


@pytest.mark.parametrize("ids, text", TYPED_IDS, ids=lambda v: str(getattr(v, "type", "")) or None)
def test_ids_stored_as_booleans_or_timestamps_are_spelled_alike_by_every_engine(tmp_path, ids, text):
    """Before, DuckDB spelled a boolean id 'true' (memory: 'True'), a time-zone-aware timestamp in
    the session's time zone with '+00' (memory: the column's zone, '+00:00'), and pandas padded a
    column's fractions of a second to its most precise value: the engines named runs differently."""
    folder = _write(tmp_path / "d", trajectory_id=ids)
    data = tpsviz.load(folder)
    ref, got = _compare(data, open_dataset(folder), ScoreSettings(n_boot=0))
    assert sorted(ref.tps_matrix().index) == sorted(got.per_trajectory["trajectory_id"].unique()) == text
    sampled = tpsviz.load(folder, sample=(10, 1))  # (the dashboard's sample reads the rows through DuckDB)
    assert sorted(sampled.trajectories["trajectory_id"]) == text


def test_a_time_zone_aware_id_does_not_depend_on_the_servers_time_zone(tmp_path):
    folder = _write(tmp_path / "d", trajectory_id=pa.array([_day(1, 23, 5)] * 2 + [_day(2)] * 2,
                                                           pa.timestamp("us", tz="Europe/Paris")))
    con = duckdb.connect()
    for zone in ("Asia/Tokyo", "America/New_York"):
        con.execute(f"SET TimeZone = '{zone}'")
        typ = con.sql(f"DESCRIBE SELECT trajectory_id FROM '{folder}/part.parquet'").fetchall()[0][1]
        got = con.sql(f"SELECT {id_text('trajectory_id', typ)} FROM '{folder}/part.parquet'").fetchall()
        assert [g[0] for g in got] == list(id_text_in_memory(pq.read_table(f"{folder}/part.parquet")
                                                               .to_pandas()["trajectory_id"]))
    assert got[0][0] == "2026-01-01 23:00:00.000005+00:00"  # (pyarrow took the naive values as UTC)


@pytest.mark.parametrize("ids", [pa.array([5, 5, 6, 6], pa.duration("s")), pa.array([5, 5, 6, 6], pa.duration("ms"))])
def test_ids_stored_as_durations_are_refused_by_every_engine(tmp_path, ids):
    """A duration names no run; before, DuckDB read pyarrow's durations as the integers it stores
    (runs '5' and '6') and memory as '0 days 00:00:05'."""
    folder = _write(tmp_path / "d", trajectory_id=ids)
    memory, out_of_core = _both_refuse(folder)
    for message in (memory, out_of_core):
        assert "column 'trajectory_id' holds durations, which do not name runs" in message
    with pytest.raises(LogFormatError, match="holds durations"):
        tpsviz.load(folder, sample=(10, 1))


def test_ids_stored_as_duckdb_intervals_are_refused_by_every_engine(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    duckdb.connect().execute(
        "COPY (SELECT * FROM (VALUES (INTERVAL 1 SECOND, 1, 1, 0.5), (INTERVAL 1 SECOND, 2, 1, 0.6), "
        f"(INTERVAL 2 DAYS, 1, 0, 0.4)) t(trajectory_id, step, outcome, conf_x)) TO '{folder / 'part.parquet'}'")
    memory, out_of_core = _both_refuse(str(folder))
    assert "column 'trajectory_id' holds durations" in out_of_core
    # (pyarrow reads DuckDB's INTERVAL as its 12 stored bytes, which are not text)
    assert "column 'trajectory_id' holds bytes that are not UTF-8 text" in memory


@pytest.mark.parametrize("column", ["trajectory_id", "step", "conf_x"])
def test_bytes_that_are_not_utf8_are_refused_with_the_column_named(tmp_path, column):
    values = {"trajectory_id": [b"\xe8a", b"\xe8a", b"b", b"b"], "step": [b"\xe8", b"2", b"1", b"2"],
              "conf_x": [b"\xe8\x00", b"0.5", b"0.5", b"0.5"]}[column]
    memory, out_of_core = _both_refuse(_write(tmp_path / "d", **{column: pa.array(values, pa.binary())}))
    assert f"column '{column}' holds bytes that are not UTF-8 text" in memory
    assert f"'{column}'" in out_of_core and "unexpected" not in out_of_core
    if column == "trajectory_id":
        assert "UTF-8" in out_of_core


def test_a_step_beyond_bigint_is_refused_not_a_conversion_error(tmp_path):
    folder = _write(tmp_path / "d", step=pa.array([1, 2 ** 64 - 1, 1, 2], pa.uint64()))
    memory, out_of_core = _both_refuse(folder)
    for message in (memory, out_of_core):
        assert "column 'step': every row needs a whole number from 0 to 2^53" in message


def test_bytes_in_a_column_the_log_does_not_use_are_left_as_they_are(tmp_path):
    folder = _write(tmp_path / "d", model=pa.array([b"\xe8", b"x", b"y", b"y"], pa.binary()))
    _compare(tpsviz.load(folder), open_dataset(folder), ScoreSettings(n_boot=0))


def _two_files(folder, first: dict, second: dict) -> str:
    """A dataset of two Parquet files, runs a–b in the first and c–d in the second, each file's
    columns stored as given (the rest as BASE)."""
    folder.mkdir(parents=True, exist_ok=True)
    half = {"trajectory_id": ["a", "a", "b", "b"], "step": [1, 2, 1, 2], "outcome": [1, 1, 0, 0],
            "conf_x": [0.6, 0.7, 0.4, 0.3]}
    other = {"trajectory_id": ["c", "c", "d", "d"], "step": [1, 2, 1, 2], "outcome": [1, 1, 0, 0],
             "conf_x": [0.65, 0.8, 0.35, 0.2]}
    pq.write_table(pa.table({**half, **first}), folder / "p1.parquet")
    pq.write_table(pa.table({**other, **second}), folder / "p2.parquet")
    return str(folder)


MIXED = [
    # integers in the first file, probabilities in the second: before, DuckDB cast the second
    # file to the first file's types and scored every forecast as 0 or 1
    ({"conf_x": pa.array([1, 1, 0, 0], pa.int64())}, {}),
    ({"conf_x": pa.array([0.6, 0.7, 0.4, 0.3], pa.float32())}, {}),  # narrowed to float32 before
    ({"conf_x": pa.nulls(4, pa.null())}, {}),  # a column all empty in one file (a cast error before)
    ({"q_z": pa.nulls(4, pa.null())}, {"q_z": pa.array([None] * 4, pa.float64())}),
    ({"trajectory_id": pa.array([1, 1, 2, 2], pa.int64())}, {}),  # ids numbers, then text
    ({"step": pa.array([1, 2, 1, 2], pa.int32())}, {"step": pa.array([1, 2 ** 40, 1, 2], pa.int64())}),
    ({"outcome": pa.array([True, True, False, False])}, {"outcome": pa.array(["true", "true", "no", "no"])}),
    # ids 1.0 and 2.0 (doubles) in one file, 3 and 4 (integers) in the other: "3.0" and "4.0" in
    # every engine (a Dask partition read "3" from its own file before)
    ({"trajectory_id": pa.array([1.0, 1.0, 2.0, 2.0])}, {"trajectory_id": pa.array([3, 3, 4, 4], pa.int64())}),
    # ids true/false in one file, text or integers in the other: "True" beside "x" or 1 in every engine
    # (DuckDB's union cast them to "true"; pandas joined True to 1 beside integers)
    ({"trajectory_id": pa.array([True, True, False, False])}, {"trajectory_id": pa.array(["True", "True", "x", "x"]),
                                                               "step": [3, 4, 3, 4]}),
    ({"trajectory_id": pa.array([True, True, False, False])}, {"trajectory_id": pa.array([1, 1, 2, 2])}),
    # zone-aware and fractional timestamps beside text: their UTC instant, no padding (DuckDB's union
    # used the session's zone; pandas spelled them by str among text)
    ({"trajectory_id": pa.array([datetime.datetime(2026, 1, 1, 12)] * 2 + [datetime.datetime(2026, 1, 2)] * 2,
                                pa.timestamp("us", tz="Europe/Paris"))}, {"trajectory_id": pa.array(["x", "x", "y", "y"])}),
    ({"trajectory_id": pa.array([datetime.datetime(2026, 1, 1, 12, 0, 0, 500000)] * 2 + [datetime.datetime(2026, 1, 2)] * 2,
                                pa.timestamp("us"))}, {"trajectory_id": pa.array(["x", "x", "y", "y"])}),
]


@pytest.mark.parametrize("first, second", MIXED)
def test_files_storing_a_column_in_different_types_score_as_in_memory(tmp_path, first, second):
    folder = _two_files(tmp_path / "d", first, second)
    whole = tpsviz.load(folder)
    _compare(whole, open_dataset(folder), ScoreSettings(n_boot=0))
    small = dataclasses.replace(limits_from_env(), max_rows=4)  # (the dashboard's sample reads rows through DuckDB)
    sampled = tpsviz.load(folder, limits=small, sample=(10, 1))
    assert set(sampled.trajectories["trajectory_id"]) <= set(whole.trajectories["trajectory_id"])


def test_ids_stored_in_different_types_by_different_files_are_spelled_by_their_own_type(tmp_path):
    folder = _two_files(tmp_path / "d", MIXED[-3][0], MIXED[-3][1])  # true/false, then integers
    assert sorted(tpsviz.load(folder).trajectories["trajectory_id"]) == ["1", "2", "False", "True"]
    folder = _two_files(tmp_path / "e", MIXED[-2][0], MIXED[-2][1])  # Europe/Paris, then text
    runs = sorted(sums_duckdb(open_dataset(folder), ScoreSettings(n_boot=0)).runs["trajectory_id"])
    assert runs == ["2026-01-01 12:00:00+00:00", "2026-01-02 00:00:00+00:00", "x", "y"]


def test_a_fractional_step_in_a_later_file_is_refused_out_of_core_too(tmp_path):
    folder = _two_files(tmp_path / "d", {}, {"step": pa.array([1.0, 2.5, 1.0, 2.0])})
    memory, out_of_core = _both_refuse(folder)
    for message in (memory, out_of_core):
        assert "column 'step': every row needs a whole number" in message


def test_a_value_the_first_file_cannot_hold_is_not_echoed(tmp_path):
    folder = _two_files(tmp_path / "d", {}, {"conf_x": pa.array(["SECRET", "0.5", "0.5", "0.5"])})
    memory, out_of_core = _both_refuse(folder)
    assert "SECRET" not in memory + out_of_core
    assert "column 'conf_x' must hold numbers" in out_of_core


@pytest.mark.parametrize("words", [("true", "false"), ("TRUE", "FALSE"), ("yes", "no"), ("1", "0")])
def test_outcomes_written_as_words_read_as_in_memory(tmp_path, words):
    """docs/formats.md: outcome is 1/0 (or true/false); the DuckDB engine refused the words."""
    df = pd.DataFrame({**BASE, "outcome": [words[0], words[0], words[1], words[1]]})
    folder = tmp_path / "d"
    folder.mkdir()
    df.to_csv(folder / "a.csv", index=False)
    _compare(tpsviz.load(str(folder)), open_dataset(str(folder)), ScoreSettings(n_boot=0))


def test_folder_names_are_not_read_as_columns(tmp_path):
    """Hive-style folders (outcome=1/) are not a column: DuckDB read them as one before."""
    for y in (0, 1):
        sub = tmp_path / "d" / f"outcome={y}"
        sub.mkdir(parents=True)
        pq.write_table(pa.table({k: v for k, v in BASE.items() if k != "outcome"}), sub / "part.parquet")
    memory, out_of_core = _both_refuse(str(tmp_path / "d"))
    for message in (memory, out_of_core):
        assert "missing required column 'outcome'" in message


def test_a_semicolon_separated_dataset_with_decimal_commas_reads_as_in_memory(tmp_path):
    """Spreadsheets in many locales write "CSV" with semicolons and decimal commas; tpsviz.load
    reads them, and the DuckDB engine (and the sample it verdicts on) now does too."""
    folder = tmp_path / "d"
    folder.mkdir()
    for name, ids in (("a.csv", ("a", "b")), ("b.csv", ("c", "d"))):
        lines = ["trajectory_id;step;outcome;conf_x"]
        for i, run in enumerate(ids):
            lines += [f"{run};1;{1 - i};0,{6 - i}", f"{run};2;{1 - i};0,{7 - 3 * i}5"]
        (folder / name).write_text("\n".join(lines) + "\n")
    ds = open_dataset(str(folder))
    assert ds.delimiter == ";" and any("semicolon-separated" in n for n in ds.notes)
    data = tpsviz.load(str(folder))
    _compare(data, ds, ScoreSettings(n_boot=0))
    # said once, for the files together (each file's own note is the same fact)
    assert [n for n in data.notes if "separated" in n] == ["the files are semicolon-separated; they were read as such."]


def test_files_with_different_separators_are_refused(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.csv").write_text("trajectory_id,step,outcome,conf_x\na,1,1,0.5\n")
    (folder / "b.csv").write_text("trajectory_id;step;outcome;conf_x\nb;1;0;0,5\n")
    with pytest.raises(LogFormatError, match="separate their columns differently"):
        open_dataset(str(folder))


def test_a_header_naming_a_column_twice_is_refused_by_every_engine(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.csv").write_text("trajectory_id,step,outcome,conf_x,conf_x\na,1,1,0.5,0.6\n")
    memory, out_of_core = _both_refuse(str(folder))
    for message in (memory, out_of_core):  # (DuckDB renamed the second one conf_x_1 and scored it)
        assert "the header repeats column 'conf_x' (columns 4, 5)" in message


def test_the_out_of_core_engine_notes_what_the_reader_notes(tmp_path):
    """Ids that differ only by surrounding spaces, and nested columns the log does not use."""
    df = pd.DataFrame(BASE)
    df.loc[1, "trajectory_id"] = "a "
    folder = tmp_path / "d"
    folder.mkdir()
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table.append_column("tags", pa.array([["x"]] * 4, pa.list_(pa.string()))), folder / "p.parquet")
    memory = tpsviz.load(str(folder)).notes
    out_of_core = sums_duckdb(open_dataset(str(folder)), ScoreSettings()).notes
    for needle in ("1 id(s) that differ from another only by them", "nested type (lists, structs, maps) were left out: 'tags'"):
        assert any(needle in n for n in memory) and any(needle in n for n in out_of_core), needle


@pytest.mark.parametrize("ids, joined", [
    (pa.array(["c", "c", "2", "2"]), 1),                      # 2 in one file, "2" in the other
    (pa.array(["1", "1", "2", "2"]), 2),
    (pa.array(["c", "c", "d", "d"]), 0),                      # no id in both spellings: no note
])
def test_ids_stored_as_numbers_and_as_text_are_noted_by_every_engine(tmp_path, ids, joined):
    # (steps 3-4 in the second file: a run joined across the files stays sound)
    folder = _two_files(tmp_path / "d", {"trajectory_id": pa.array([1, 1, 2, 2], pa.int64())},
                        {"trajectory_id": ids, "step": [3, 4, 3, 4]})
    memory = tpsviz.load(folder).notes
    out_of_core = sums_duckdb(open_dataset(folder), ScoreSettings(n_boot=0)).notes
    words = f"trajectory ids are read as text: {joined} id(s) written as a number"
    assert any(words in n for n in memory) == bool(joined)
    assert any(words in n for n in out_of_core) == bool(joined)
    assert not any("read as text" in n for n in out_of_core) or joined
