"""The cells of a raw long frame read as values, and where a problem is, for messages (docs/formats.md).

Missing cells (``tables.MISSING``: "", "nan", "null", … in any case), numbers (text with surrounding
spaces allowed; JSON true/false is not a number), true/false words, probabilities a float export
left just outside [0, 1]; and the row locations and run ids a message names (at most three, never
the values there). Shared by the binary, multi-class and continuous readers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.schema import show_id
from tpsviz.io.tables import MISSING

__all__ = ["TRUE_TOKENS", "FALSE_TOKENS", "MAX_EXAMPLES", "RowLocations", "row_examples", "id_examples",
           "is_missing", "parse_numeric", "parse_boolean", "rounding_into_unit"]

TRUE_TOKENS = {"1", "1.0", "true", "t", "yes", "y"}
FALSE_TOKENS = {"0", "0.0", "false", "f", "no", "n"}
#: row locations or run ids a message names before "and N more"
MAX_EXAMPLES = 3


class RowLocations:
    """Row locations kept as integers and formatted as "line 12" / "row 12" only on demand.

    Masked (``where[mask]``) or sliced (``where.iloc[:3]``) as the Series of locations it stands
    for (:func:`tpsviz.io.tables.header.prepared_frame` makes one when the rows are numbered).

    Parameters
    ----------
    numbers : Series of int
        Row numbers.
    prefix : str
        "line" or "row".
    """

    def __init__(self, numbers: pd.Series, prefix: str):
        self.numbers = numbers
        self.prefix = prefix

    def __getitem__(self, mask) -> pd.Series:
        return (self.prefix + " " + self.numbers[mask].astype(str)).rename("_where")

    @property
    def iloc(self):
        return _Iloc(self)


class _Iloc:
    def __init__(self, loc: RowLocations):
        self.loc = loc

    def __getitem__(self, idx):
        return self.loc.prefix + " " + self.loc.numbers.iloc[idx].astype(str)


def row_examples(where: pd.Series) -> str:
    """Where a problem is, for a message: "line 3, line 7, line 9 and 12 more".

    Parameters
    ----------
    where : Series
        Row locations of the offending rows (the ``where`` of :func:`tpsviz.io.tables.header.prepared_frame`, masked).

    Returns
    -------
    str
        At most three locations and how many more; never the values there.
    """
    items = [str(w) for w in where.iloc[:MAX_EXAMPLES]]
    more = f" and {len(where) - MAX_EXAMPLES} more" if len(where) > MAX_EXAMPLES else ""
    return ", ".join(items) + more


def id_examples(uniques, mask: np.ndarray) -> str:
    """Trajectory ids for a message: at most three, cleaned and cut, and how many more.

    Parameters
    ----------
    uniques : sequence
        The run ids (``uniques`` of :func:`tpsviz.io.tables.run_ids.code_runs`).
    mask : ndarray of bool
        The runs to name, one flag per id.

    Returns
    -------
    str
    """
    idx = np.flatnonzero(mask)
    shown = ", ".join(show_id(uniques[i]) for i in idx[:MAX_EXAMPLES])
    more = len(idx) - min(len(idx), MAX_EXAMPLES)
    return shown + (f" and {more} more" if more > 0 else "")


def _text(s: pd.Series) -> pd.Series:
    return s.astype("string").str.strip()


def is_missing(s: pd.Series) -> pd.Series:
    """Which cells are missing: NaN/None, or text that reads as empty (``tables.MISSING``: "",
    "nan", "null", "none", "na", … in any case).

    Parameters
    ----------
    s : Series

    Returns
    -------
    Series of bool
    """
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return s.isna()
    return (s.isna() | _text(s).str.lower().isin(MISSING)).fillna(True).astype(bool)


def parse_numeric(s: pd.Series) -> tuple[pd.Series, pd.Series]:
    """A column read as numbers.

    Parameters
    ----------
    s : Series
        Numbers, or text holding numbers (surrounding spaces allowed); JSON true/false is not a
        number.

    Returns
    -------
    values : Series of float
        NaN where the cell is missing or not a number.
    bad : Series of bool
        Present cells that are not numbers.
    """
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        return s.astype(float), pd.Series(False, index=s.index)
    missing = is_missing(s)
    is_bool = s.map(type).eq(bool)  # JSON true/false is not a number
    num = pd.to_numeric(_text(s).where(~missing & ~is_bool), errors="coerce").astype(float)
    bad = (num.isna() & ~missing) | is_bool
    return num.where(~missing & ~is_bool, np.nan), bad


def parse_boolean(s: pd.Series) -> tuple[pd.Series, pd.Series]:
    """A column read as true/false (``TRUE_TOKENS``/``FALSE_TOKENS``: true/false, t/f, yes/no,
    y/n, 1/0, in any case).

    Parameters
    ----------
    s : Series

    Returns
    -------
    values : Series of float
        1.0, 0.0, or NaN where missing or unreadable.
    bad : Series of bool
        Present cells that are neither true nor false.
    """
    if pd.api.types.is_bool_dtype(s):
        return s.astype(float), pd.Series(False, index=s.index)
    missing = is_missing(s)
    txt = _text(s).str.lower()
    val = pd.Series(np.nan, index=s.index)
    val[txt.isin(TRUE_TOKENS).fillna(False).astype(bool)] = 1.0
    val[txt.isin(FALSE_TOKENS).fillna(False).astype(bool)] = 0.0
    bad = val.isna() & ~missing
    return val, bad


def rounding_into_unit(num: pd.Series, column: str, notes: list[str]) -> pd.Series:
    """Probabilities ``num`` with the values within 1e-9 outside [0, 1] set to 0 or 1, and a note
    saying how many. A float export may leave 1 + 2e-16 or −1e-17: a rounding artefact, not a
    percentage. Only those values move; one further out (1.5, ∞) is left for the range check to
    refuse (the whole column once was clipped whenever one value was rounding, which let 1.5
    through as 1)."""
    fuzz = num.notna() & (((num > 1) & (num <= 1 + 1e-9)) | ((num < 0) & (num >= -1e-9)))
    if not fuzz.any():
        return num
    notes.append(f"{column}: {int(fuzz.sum())} value(s) within 1e-9 outside [0, 1] (float rounding) were "
                 "set to 0 or 1.")
    return num.mask(fuzz, num.clip(lower=0.0, upper=1.0))
