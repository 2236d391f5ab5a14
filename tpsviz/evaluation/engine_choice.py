"""Where a binary log is scored, and why: in memory within ``TPSVIZ_MAX_ROWS``, out of core for a
larger Parquet/CSV dataset (the automatic choice of ``score --engine auto`` and of
:func:`tpsviz.evaluate`; docs/architecture.md, "Engines").
"""

from __future__ import annotations

import os
from pathlib import Path

from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import SettingError
from tpsviz.core.wording import setting, text
from tpsviz.engines import OUT_OF_CORE
from tpsviz.io.dataset import DATASET_FORMATS, Dataset, is_dataset_spec, open_dataset
from tpsviz.io.files import Limits, limits_from_env
from tpsviz.io.loading import is_frame

__all__ = ["choose_engine", "dataset_size", "dataset_for_engine", "memory_reason", "CSV_BYTES_PER_ROW"]

#: bytes of CSV per row assumed when a CSV dataset's row count is unknown before reading
CSV_BYTES_PER_ROW = 40


def dataset_size(ds: Dataset) -> tuple[int, str]:
    """Rows of a dataset (estimated from the bytes of CSV files) and the size in words.

    Parameters
    ----------
    ds : tpsviz.io.dataset.Dataset

    Returns
    -------
    rows : int
    words : str
        ``"15,792 rows in 1 file"`` or ``"about 15,792 rows (1 MB of text) in 1 file"``.
    """
    rows = ds.n_rows if ds.n_rows is not None else ds.n_bytes // CSV_BYTES_PER_ROW
    what = (f"{ds.n_rows:,} rows" if ds.n_rows is not None else f"about {rows:,} rows ({ds.n_bytes / 2**20:,.0f} MB "
            "of text)") + f" in {ds.n_files} file{'s' if ds.n_files != 1 else ''}"
    return rows, what

def dataset_for_engine(source, fmt: str | None = None, limits: Limits | None = None
                       ) -> tuple[bool | None, str, Dataset | None]:
    """Whether a source is a table dataset too large to read into memory: the automatic engine
    choice of ``score --engine auto`` and of :func:`memory_reason`.

    Parameters
    ----------
    source : path, TrajectoryData or other source of :func:`tpsviz.load`
    fmt : str, optional
        The forced format.
    limits : tpsviz.io.files.Limits, optional
        Default: from the environment (``TPSVIZ_MAX_ROWS``).

    Returns
    -------
    too_large : bool or None
        None when the source is not a table dataset (it is read in memory, ``words`` say why);
        else whether its rows or bytes exceed what is read into memory.
    words : str
        Why it is read in memory, or the dataset's size (``"15,792 rows in 1 file"``).
    dataset : Dataset or None
        The opened dataset of a table source.
    """
    if isinstance(source, TrajectoryData):
        return None, "a TrajectoryData given in memory", None
    if not isinstance(source, (str, os.PathLike)):
        return None, "a log given as bytes is read in memory", None
    table_like = is_dataset_spec(source) or (Path(source).is_file()
                                             and Path(source).suffix.lower() in DATASET_FORMATS)
    if not table_like or fmt not in (None, "auto", "csv", "tsv", "parquet"):
        return None, "a harness log or JSON Lines file is read in memory", None
    limits = limits or limits_from_env()
    ds = open_dataset(source)
    rows, what = dataset_size(ds)
    return rows > limits.max_rows or ds.n_bytes > limits.max_bytes * max(ds.n_files, 1), what, ds

def memory_reason(source, fmt: str | None = None, limits: Limits | None = None) -> str:
    """Why a log is scored in memory, in the words of ``score --engine auto``.

    Parameters
    ----------
    source : path, TrajectoryData or other source of :func:`tpsviz.load`
    fmt : str, optional
        The forced format.
    limits : tpsviz.io.files.Limits, optional
        Default: from the environment (``TPSVIZ_MAX_ROWS``).

    Returns
    -------
    str
    """
    limits = limits or limits_from_env()
    too_large, words, _ = dataset_for_engine(source, fmt, limits)
    if too_large is None:
        return words
    if too_large:
        return text(f"{words}, read into memory (above TPSVIZ_MAX_ROWS, score it out of core with "
                    f"{setting('out_of_core')})")
    return f"auto: {words}, within the {limits.max_rows:,} rows read into memory"


def choose_engine(source, fmt: str | None = None, engine: str = "auto",
                  limits: Limits | None = None) -> tuple[str, str, Dataset | None]:
    """Where a binary log is scored, and why: the choice of ``score --engine``.

    Parameters
    ----------
    source : path, file, frame or log already read
    fmt : str, optional
        The forced format.
    engine : {"auto", "memory", "duckdb", "dask"}
        ``auto``: in memory within ``TPSVIZ_MAX_ROWS``, else DuckDB for a Parquet/CSV dataset.
    limits : tpsviz.io.files.Limits, optional
        Default: from the environment.

    Returns
    -------
    engine : str
        ``memory``, ``duckdb`` or ``dask``.
    why : str
    dataset : Dataset or None
        The opened dataset out of core (None in memory).

    Raises
    ------
    SettingError
        For an out-of-core engine asked for a source it cannot read (a harness log, a frame).
    """
    if engine == "memory":
        return "memory", f"asked for with {setting('engine', 'memory')}", None
    limits = limits or limits_from_env()
    too_large, words, ds = dataset_for_engine(source, fmt, limits)
    if too_large is None:
        if engine in OUT_OF_CORE:
            raise SettingError(f"{setting('engine', engine)} reads Parquet, CSV and TSV tables (a file, a folder or a "
                               f"glob pattern of them); read harness logs, JSON Lines and tables in memory with "
                               f"{setting('engine', 'memory')}")
        return "memory", ("a table given in memory" if is_frame(source) else words), None
    if engine in OUT_OF_CORE:
        return engine, f"asked for with {setting('engine', engine)}; {words}", ds
    if too_large:
        return "duckdb", (f"auto: {words}, more than the {limits.max_rows:,} rows read into memory "
                          "(TPSVIZ_MAX_ROWS)"), ds
    return "memory", f"auto: {words}, within the {limits.max_rows:,} rows read into memory", None
