"""Issue 12, dashboard: a server path to a dataset (a folder of Parquet files) opens, stays under
the data roots file by file, and a dataset too large for memory gets a clear message."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from apptest_helpers import DEMO, fresh, texts as _texts

SECRET = "secret_column_7f3a9"


@pytest.fixture
def root(tmp_path, monkeypatch):
    r = tmp_path / "logs"
    (r / "runs").mkdir(parents=True)
    df = pd.read_csv(DEMO / "tau2-like.csv")
    cut = len(df) // 2 + 3  # a run spans the two files
    df.iloc[:cut].to_parquet(r / "runs" / "part-0.parquet")
    df.iloc[cut:].to_parquet(r / "runs" / "part-1.parquet")
    df.head(20).rename(columns={"step": SECRET}).to_parquet(tmp_path / "outside.parquet")
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(r))
    return r


def texts(at) -> str:
    """The page's text, with the problem list (shown as code: text from a log)."""
    return _texts(at) + "\n" + "\n".join(c.value for c in at.code)


def test_a_dataset_folder_opens_from_a_server_path(root):
    at = fresh({"src": "Server path", "path": "runs"})
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "450"


def test_a_link_out_of_the_roots_inside_a_dataset_is_refused(root):
    os.symlink(root.parent / "outside.parquet", root / "runs" / "part-2.parquet")
    at = fresh({"src": "Server path", "path": "runs"})
    t = texts(at)
    assert not at.exception and "cannot open this path" in t and SECRET not in t


def test_a_dataset_above_the_memory_limit_says_what_to_do(root, monkeypatch):
    monkeypatch.setenv("TPSVIZ_MAX_ROWS", "1000")
    at = fresh({"src": "Server path", "path": "runs"})
    t = texts(at)
    assert not at.exception and "read into memory" in t and "--engine duckdb" in t
