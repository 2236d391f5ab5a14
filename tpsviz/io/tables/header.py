"""The header of a long-format log (docs/formats.md): column names matched to the format's
regardless of case, the required columns, and the forecast columns it offers.

A raw frame is copied and prepared for checking (:func:`prepared_frame`: canonical names, row
locations for messages); :func:`check_header` then names everything missing or wrong at once, or
says where a multi-class or continuous-outcome log is scored instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import REQUIRED, canonical_name, looks_like_ours, show_id
from tpsviz.core.wording import setting
from tpsviz.io.tables.cells import RowLocations
from tpsviz.io.kinds import outcome_kind
from tpsviz.io.tables import MAX_PREDICTORS

__all__ = ["prepared_frame", "check_header"]


def _canonical_columns(df: pd.DataFrame, notes: list[str]) -> list[str]:
    """Rename columns that match the long format ignoring case (``Conf_A`` -> ``conf_A``), with
    a note; a name that would then appear twice is an error."""
    cols = [c for c in df.columns if c != "_where"]
    dup = pd.Index(cols)[pd.Index(cols).duplicated()].unique()
    canon = {c: canonical_name(c) for c in cols}
    taken = pd.Series(list(canon.values()))
    clash = taken[taken.duplicated()].unique()
    if len(dup) or len(clash):
        ours = looks_like_ours(cols)
        names = list(dict.fromkeys(list(dup) + list(clash)))
        what = ", ".join(show_id(n) for n in names[:5]) if ours else "a column name"
        raise LogFormatError(str(df.attrs.get("source", "<frame>")), [
            f"the header repeats {what} (names are matched ignoring case); every column needs "
            "its own name"])
    renamed = {c: n for c, n in canon.items() if c != n}
    if renamed:
        df.columns = [renamed.get(c, c) for c in df.columns]
        shown = ", ".join(f"{show_id(a)} as {show_id(b)}" for a, b in list(renamed.items())[:5])
        notes.append(f"column names are matched ignoring case: read {shown}"
                     + (f" and {len(renamed) - 5} more" if len(renamed) > 5 else "") + ".")
    return [c for c in df.columns if c != "_where"]


def prepared_frame(df: pd.DataFrame, source: str, notes: list[str]):
    """A copy of a raw frame ready for checking.

    Parameters
    ----------
    df : DataFrame
        The rows as read (``df.attrs["where_prefix"]``: "line" or "row" for messages).
    source : str
        The file's name, for messages.
    notes : list of str
        Receives a note when column names were matched ignoring case.

    Returns
    -------
    frame : DataFrame
        Columns renamed to the long format's names and a ``_where`` column (row numbers unless
        the reader gave locations).
    where : Series-like
        Row locations for messages ("line 12"), indexed like ``frame``.

    Raises
    ------
    LogFormatError
        For a repeated column name or a frame without rows.
    """
    prefix = df.attrs.get("where_prefix", "row")
    df = df.copy()
    df.attrs["source"] = source
    _canonical_columns(df, notes)
    if "_where" not in df.columns:
        df["_where"] = np.arange(1, len(df) + 1)
    df = df.reset_index(drop=True)
    where = df["_where"]
    if pd.api.types.is_integer_dtype(where):
        where = RowLocations(where, prefix)
    if len(df) == 0:
        has_cols = any(c != "_where" for c in df.columns)
        raise LogFormatError(source, ["the file has a header but no data rows" if has_cols else
                                      "the file is empty"])
    return df, where


def _other_outcome_kind(cols: list[str]) -> str:
    """A sentence for a multi-class or continuous-outcome log (docs/multiclass.md, docs/continuous.md),
    which the binary reader cannot score; "" for any other header."""
    kind = outcome_kind(cols)
    if kind == "multiclass":
        return ("this is a multi-class log (forecast columns conf_<name>__<label>): score it with "
                f"{setting('multiclass')}")
    if kind == "continuous":
        return ("this is a continuous-outcome log (mu_/sigma_, q<level>_ or samples_ forecast columns): score it "
                f"with {setting('continuous')}")
    return ""


def check_header(cols: list[str], percent, source: str, require_forecast: bool = True):
    """The forecast columns a header offers.

    Parameters
    ----------
    cols : list of str
        Column names (canonical).
    percent : iterable of str
        Predictors given in percent (``--percent``).
    source : str
        The file's name, for messages.
    require_forecast : bool
        Refuse a header without any ``conf_``/``raw_``/``unc_`` column (the out-of-core engines);
        False lets such a log load with zero predictors (its references are scored).

    Returns
    -------
    conf : list of str
        ``conf_<name>`` columns.
    signals : list of str
        ``raw_<name>``/``unc_<name>`` columns.
    percent : set of str
        The ``conf_`` columns in percent.

    Raises
    ------
    LogFormatError
        Naming everything missing or wrong, or the command that scores a multi-class or
        continuous-outcome log.
    """
    other = _other_outcome_kind(cols)
    if other:  # a log of another outcome type: say where it is scored instead of listing symptoms
        raise LogFormatError(source, [other])
    problems = []
    missing_req = [c for c in REQUIRED if c not in cols]
    if missing_req:
        # a header is named only when it is recognisably a log's (never an unrelated file's
        # first line: docs/deployment.md)
        found = (f" (columns: {', '.join(show_id(c, 30) for c in cols[:12])}"
                 + (f" and {len(cols) - 12} more" if len(cols) > 12 else "") + ")"
                 if looks_like_ours(cols) else " (the file's column names, its header or JSON keys, include none "
                 "of the log's columns; see the log format)")
        problems.append(
            f"missing required column{'s' if len(missing_req) > 1 else ''} "
            f"{', '.join(repr(c) for c in missing_req)}{found}")
    conf_cols = [c for c in cols if c.startswith("conf_")]
    sig_cols = [c for c in cols if c.startswith(("raw_", "unc_"))]
    bad_names = [c for c in conf_cols + sig_cols if c.split("_", 1)[1] == ""]
    if bad_names:
        problems.append(f"column {show_id(bad_names[0])} has no predictor name after the prefix")
    if len(conf_cols) + len(sig_cols) > MAX_PREDICTORS:  # each is scored, bootstrapped and tested
        problems.append(f"{len(conf_cols) + len(sig_cols):,} predictor and signal columns, more than the "
                        f"{MAX_PREDICTORS} tpsviz scores at once; split the log or drop columns")
    if require_forecast and not conf_cols and not sig_cols:
        problems.append("no forecast column: at least one column named conf_<name> (probability "
                        "of success) or raw_<name>/unc_<name> (a signal to recalibrate) is required")
    percent_cols = {p if p.startswith("conf_") else f"conf_{p}" for p in percent}
    unknown_pct = sorted(percent_cols - set(conf_cols))
    if unknown_pct:
        problems.append(f"percent given for {', '.join(show_id(p) for p in unknown_pct)}, which is not a "
                        "predictor column of the log")
    if problems:
        raise LogFormatError(source, problems)
    return conf_cols, sig_cols, percent_cols
