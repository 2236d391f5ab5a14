"""Tables written for people to open: CSV that a spreadsheet cannot run (docs/deployment.md).

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a
formula by Excel, LibreOffice and Google Sheets ("CSV injection"). Text cells that begin so
(trajectory ids, predictor names, metadata from a log) are prefixed with ``'``, which the
spreadsheet shows as text. Numeric columns are left as numbers, so ``-0.41`` stays a number.
Parquet (:func:`parquet_bytes`) keeps every value exactly: it is data for a program, not a sheet,
and an id changed there would no longer join back to the log.
"""

from __future__ import annotations

import pandas as pd
import io
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["PER_TRAJECTORY_COLUMNS", "binary_outcome", "neutralise_cells", "safe_csv", "write_safe_csv", "parquet_bytes", "figure_png"]

_TRIGGERS = ("=", "+", "-", "@", "\t", "\r",
             "\uff1d", "\uff0b", "\uff0d", "\uff20")  # and their fullwidth forms (＝＋－＠), which some
#                                                    spreadsheet locales normalise to the ASCII ones


def _neutral(v):
    if isinstance(v, str) and v.startswith(_TRIGGERS):
        return "'" + v
    return v


def neutralise_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells cannot start a spreadsheet formula.

    Only text (object/string) columns are touched; numbers, booleans and missing values stay
    as they are. Column names are neutralised the same way.

    Parameters
    ----------
    frame : DataFrame

    Returns
    -------
    DataFrame
    """
    out = frame.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s):
            out[col] = s.map(_neutral).astype(s.dtype if not pd.api.types.is_string_dtype(s)
                                              else object)
    out.columns = [_neutral(str(c)) for c in out.columns]
    return out


def binary_outcome(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a float ``outcome`` column of only 0, 1 and missing values written as
    integers (``1``, ``0``, empty), as the log gives them, instead of ``1.0``; any other frame
    as it is (a continuous outcome keeps its numbers)."""
    if "outcome" not in frame.columns or not pd.api.types.is_float_dtype(frame["outcome"]):
        return frame
    y = frame["outcome"]
    if not y.dropna().isin([0.0, 1.0]).all():
        return frame
    return frame.assign(outcome=y.astype("Int64"))


def safe_csv(frame: pd.DataFrame) -> str:
    """CSV text of ``frame`` (no index, ``\\n`` line ends) with :func:`neutralise_cells` and
    :func:`binary_outcome` applied."""
    return neutralise_cells(binary_outcome(frame)).to_csv(index=False, lineterminator="\n")


#: the columns of ``tpsviz score --per-trajectory`` (every engine): outcome is 1, 0, or empty when censored
PER_TRAJECTORY_COLUMNS = ["trajectory_id", "predictor", "tps", "censored", "outcome"]


def write_safe_csv(frame: pd.DataFrame, path, chunk_rows: int = 200_000) -> None:
    """Write :func:`safe_csv` of ``frame`` to ``path``, ``chunk_rows`` rows at a time.

    The same bytes as ``safe_csv(frame)``, without the whole text in memory at once: an
    out-of-core run's per-trajectory table has a row per (run, predictor), 12.8M rows for
    4.3M runs and 3 predictors.

    Parameters
    ----------
    frame : DataFrame
    path : str or Path
        Written (UTF-8, ``\\n`` line ends); an existing file is replaced.
    chunk_rows : int
    """
    frame = binary_outcome(frame)  # (decided once for the whole table, not per chunk)
    with open(path, "w", encoding="utf-8", newline="") as out:
        for start in range(0, max(len(frame), 1), chunk_rows):
            part = neutralise_cells(frame.iloc[start:start + chunk_rows])
            out.write(part.to_csv(index=False, header=start == 0, lineterminator="\n"))


def parquet_bytes(frame: pd.DataFrame, constants: dict | None = None, chunk_rows: int = 1_000_000) -> bytes:
    """A Parquet file of ``frame`` (no index) with one more column per item of ``constants``,
    holding that value on every row.

    Written ``chunk_rows`` rows at a time, so the constant columns are never built for the
    whole table at once (an out-of-core run's per-trajectory table has millions of rows, and
    Parquet stores a column of one value in a few bytes).

    Parameters
    ----------
    frame : DataFrame
    constants : dict, optional
        Column name → one value (a number, a string or None).
    chunk_rows : int

    Returns
    -------
    bytes
    """


    constants = dict(constants or {})
    frame = binary_outcome(frame)
    clash = set(constants) & set(map(str, frame.columns))
    if clash:
        raise ValueError(f"columns given twice: {sorted(clash)}")
    # the types of the whole table (a part's text column that is all missing would read as null)
    schema = pa.Schema.from_pandas(frame, preserve_index=False)
    buf = io.BytesIO()
    writer = None
    for start in range(0, max(len(frame), 1), chunk_rows):
        part = pa.Table.from_pandas(frame.iloc[start:start + chunk_rows], schema=schema, preserve_index=False)
        for name, value in constants.items():
            col = pa.nulls(part.num_rows) if value is None else pa.repeat(pa.scalar(value), part.num_rows)
            part = part.append_column(name, col)
        if writer is None:
            writer = pq.ParquetWriter(buf, part.schema)
        writer.write_table(part)
    writer.close()
    return buf.getvalue()


def figure_png(fig, width: int = 1100, height: int | None = None, scale: float = 2) -> bytes:
    """A PNG of a plotly figure, rendered by kaleido with nothing fetched from the network.

    plotly's ``fig.to_image`` lets kaleido put MathJax from a CDN into its render page (the
    default; plotly passes no way to turn it off), so rendering reached out to
    cdnjs.cloudflare.com and text between ``$`` signs was typeset as LaTeX (adversarial
    pass 7). Here MathJax is off and plotly.js is the copy installed with plotly.
    """
    import kaleido  # (kaleido starts a browser: only when a PNG is asked for)

    height = int(height or fig.layout.height or 500)
    opts = {"format": "png", "width": int(width), "height": height, "scale": scale}
    return kaleido.calc_fig_sync(fig.to_dict(), opts=opts, kopts={"mathjax": False})

