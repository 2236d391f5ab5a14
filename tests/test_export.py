"""tpsviz.report.export.parquet_bytes: a table and its settings columns as one Parquet file, written in
parts (the dashboard's downloads of per-trajectory scores; docs/deployment.md)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from tpsviz.report.export import parquet_bytes

SETTINGS = {"alpha": 0.5, "beta": 2.0, "schedule": "front:0.9", "gamma": None, "n_boot": 200, "seed": 7}


def _table(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"trajectory_id": [f"t{i}" if i % 5 else f"=x{i}" for i in range(n)],
                         "tps": rng.normal(size=n), "censored": rng.random(n) < 0.3,
                         "q_z_used": np.where(np.arange(n) < 4, np.nan, rng.random(n)),
                         "note": pd.Series([None] * min(n, 4) + [f"n{i}" for i in range(4, n)], dtype=object)})


@pytest.mark.parametrize("chunk", [1, 3, 4, 10_000])
def test_the_file_holds_the_table_and_a_settings_value_on_every_row(chunk):
    frame = _table(10)  # the first part's q_z_used and note are all missing when chunk ≤ 4
    back = pd.read_parquet(io.BytesIO(parquet_bytes(frame, SETTINGS, chunk_rows=chunk)))
    assert list(back.columns) == list(frame.columns) + list(SETTINGS)
    num = ["tps", "censored", "q_z_used"]
    pd.testing.assert_frame_equal(back[num], frame[num])
    for name in ("trajectory_id", "note"):  # (text: missing reads back as NaN or None)
        assert [v if isinstance(v, str) else None for v in back[name]] == frame[name].tolist(), name
    for name, value in SETTINGS.items():
        col = back[name].tolist()
        assert len(col) == 10 and all(v == value if value is not None else v is None for v in col), name
    assert back["trajectory_id"].iloc[0] == "=x0"  # (Parquet is not a spreadsheet: text as given)


def test_an_empty_table_and_a_name_given_twice():
    back = pd.read_parquet(io.BytesIO(parquet_bytes(_table(0), {"alpha": 1.0})))
    assert len(back) == 0 and list(back.columns)[-1] == "alpha"
    with pytest.raises(ValueError, match="given twice"):
        parquet_bytes(_table(3), {"tps": 1.0})


@pytest.mark.parametrize("write", ["csv", "chunked_csv", "parquet"])
def test_a_binary_outcome_is_written_as_the_log_gives_it(write, tmp_path):
    """1, 0 and empty (censored), not 1.0 and 0.0; a continuous outcome keeps its numbers."""
    from tpsviz.report.export import safe_csv, write_safe_csv

    def written(frame):
        if write == "parquet":
            return pd.read_parquet(io.BytesIO(parquet_bytes(frame, chunk_rows=2)))["outcome"]
        if write == "csv":
            text = safe_csv(frame)
        else:
            write_safe_csv(frame, tmp_path / "t.csv", chunk_rows=2)  # (a chunk of 0/1 beside one of 0.25)
            text = (tmp_path / "t.csv").read_text()
        return [line.split(",")[1] for line in text.splitlines()[1:]]

    binary = pd.DataFrame({"trajectory_id": list("abcde"), "outcome": [1.0, np.nan, 0.0, 1.0, 0.0]})
    got = written(binary)
    if write == "parquet":
        assert str(got.dtype) == "Int64" and got.tolist()[:1] + got.tolist()[2:] == [1, 0, 1, 0] and got.isna().tolist()[1]
    else:
        assert got == ["1", "", "0", "1", "0"]
    continuous = binary.assign(outcome=[1.0, 0.0, np.nan, 0.0, 0.25])
    got = written(continuous)
    if write == "parquet":
        assert got.dtype == np.float64 and got.iloc[4] == 0.25
    else:
        assert got == ["1.0", "0.0", "", "0.0", "0.25"]
