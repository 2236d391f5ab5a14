"""Validating a long-format frame into a :class:`TrajectoryData` (docs/formats.md).

One row per (trajectory, step). Every defect is collected and raised together as a
:class:`LogFormatError` naming rows (lines), trajectories and columns, never cell values.
Column names are matched to the long format regardless of case, with a note.

The steps of :func:`from_frame` are public (``__all__``): the multi-class and continuous readers
(docs/multiclass.md, docs/continuous.md) check ids, steps, outcomes and censoring with the same code.
"""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import LogFormatError
from tpsviz.io.kinds import outcome_kind
from tpsviz.core.schema import REQUIRED, RESERVED, canonical_name, looks_like_ours, show_id
from tpsviz.io.tables import MAX_PREDICTORS, MISSING

__all__ = ["from_frame", "MAX_STEP", "MAX_PREDICTORS",
           # the building blocks the multi-class and continuous readers share with this one
           "TRUE_TOKENS", "FALSE_TOKENS", "row_examples", "id_examples", "is_missing", "parse_numeric",
           "parse_boolean", "per_run_constant", "prepared_frame", "check_header", "trajectory_ids",
           "step_numbers", "code_runs", "run_censoring"]

TRUE_TOKENS = {"1", "1.0", "true", "t", "yes", "y"}
FALSE_TOKENS = {"0", "0.0", "false", "f", "no", "n"}
_MAX_EXAMPLES = 3
MAX_STEP = 2 ** 53   # largest step index kept exactly (an int64 and a float64 agree below it)
#: predictor (conf_) and signal (raw_/unc_) columns of one log: each costs a score, bootstraps and
#: the verdict's tests, on every page


class _Locations:
    """Row locations kept as integers and formatted as "line 12" / "row 12" only on demand."""

    def __init__(self, numbers: pd.Series, prefix: str):
        self.numbers = numbers
        self.prefix = prefix

    def __getitem__(self, mask) -> pd.Series:
        return (self.prefix + " " + self.numbers[mask].astype(str)).rename("_where")

    @property
    def iloc(self):
        return _LocIloc(self)


class _LocIloc:
    def __init__(self, loc: _Locations):
        self.loc = loc

    def __getitem__(self, idx):
        return self.loc.prefix + " " + self.loc.numbers.iloc[idx].astype(str)


def row_examples(where: pd.Series) -> str:
    """Where a problem is, for a message: "line 3, line 7, line 9 and 12 more".

    Parameters
    ----------
    where : Series
        Row locations of the offending rows (the ``where`` of :func:`prepared_frame`, masked).

    Returns
    -------
    str
        At most three locations and how many more; never the values there.
    """
    items = [str(w) for w in where.iloc[:_MAX_EXAMPLES]]
    more = f" and {len(where) - _MAX_EXAMPLES} more" if len(where) > _MAX_EXAMPLES else ""
    return ", ".join(items) + more


def id_examples(uniques, mask: np.ndarray) -> str:
    """Trajectory ids for a message: at most three, cleaned and cut, and how many more.

    Parameters
    ----------
    uniques : sequence
        The run ids (``uniques`` of :func:`code_runs`).
    mask : ndarray of bool
        The runs to name, one flag per id.

    Returns
    -------
    str
    """
    idx = np.flatnonzero(mask)
    shown = ", ".join(show_id(uniques[i]) for i in idx[:_MAX_EXAMPLES])
    more = len(idx) - min(len(idx), _MAX_EXAMPLES)
    return shown + (f" and {more} more" if more > 0 else "")


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


def per_run_constant(values: pd.Series, codes: np.ndarray, n: int):
    """A value that must be constant within each run (outcome, censored, q_Z).

    Parameters
    ----------
    values : Series of float
        One value per row (NaN where missing).
    codes : ndarray of int
        Run code of each row (0 … n − 1), aligned with ``values``.
    n : int
        Number of runs.

    Returns
    -------
    value : ndarray of float
        The run's value (its smallest present value; NaN where none is present).
    conflict : ndarray of bool
        Runs whose present values differ.
    """
    present = values.notna().to_numpy()
    first = pd.Series(values.to_numpy()[present]).groupby(codes[present]).agg(["min", "max"])
    out = np.full(n, np.nan)
    conflict = np.zeros(n, dtype=bool)
    out[first.index.to_numpy()] = first["min"].to_numpy()
    conflict[first.index.to_numpy()] = (first["min"] != first["max"]).to_numpy()
    return out, conflict


def from_frame(df: pd.DataFrame, source: str = "<frame>", percent=()) -> TrajectoryData:
    """Validate a long-format frame (one row per (trajectory, step)) into a :class:`TrajectoryData`.

    Parameters
    ----------
    df : DataFrame
        Columns as in docs/formats.md. Values may be strings (as read from CSV) or typed. An optional
        ``_where`` column gives each row's location for messages (default "row N").
    source : str
        Name used in messages.
    percent : iterable of str
        Predictors given in percent (0–100), as ``conf_<name>`` or ``<name>``: divided by 100.

    Returns
    -------
    TrajectoryData

    Raises
    ------
    LogFormatError
    """
    notes: list[str] = list(df.attrs.get("notes", []))
    df, where = prepared_frame(df, source, notes)
    cols = [c for c in df.columns if c != "_where"]
    conf_cols, sig_cols, percent_cols = check_header(cols, percent, source)
    problems: list[str] = []
    tid, tid_missing = trajectory_ids(df, where, notes, problems)
    step = step_numbers(df, tid, tid_missing, where, problems)
    outcome = _outcomes(df, where, problems)
    values = _value_columns(df, cols, conf_cols, sig_cols, percent_cols, where, notes, problems)
    qz = values.pop("q_z")
    cens = values.pop("censored")
    if problems:
        raise LogFormatError(source, problems)
    codes, uniques, order = code_runs(tid, step)
    outcome_t, censored, qz_t = _run_labels(outcome, cens, qz, codes, uniques, order, notes, source)
    steps, starts, lengths = _steps_frame(tid, step, codes, order, values, notes)
    traj = pd.DataFrame({
        "trajectory_id": np.asarray(uniques, dtype=object).astype(str),
        "outcome": outcome_t,
        "censored": censored.astype(bool),
        "q_z": qz_t,
        "length": lengths.astype(np.int64),
        "last_step": steps["step"].to_numpy()[starts + lengths - 1],
        "file_order": _file_order(order, codes, len(uniques)),
    })
    _metadata(df, cols, values, codes, order, len(uniques), steps, traj, notes)
    _forecast_notes(steps, conf_cols, notes)
    predictors = [c[len("conf_"):] for c in conf_cols]
    signals = {c: (1 if c.startswith("raw_") else -1) for c in sig_cols}
    return TrajectoryData(steps, traj, predictors, signals, source, notes)


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
        where = _Locations(where, prefix)
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
                "'python -m tpsviz multiclass' or on the dashboard's Other outcomes page")
    if kind == "continuous":
        return ("this is a continuous-outcome log (mu_/sigma_, q<level>_ or samples_ forecast columns): score it "
                "with 'python -m tpsviz crps' or on the dashboard's Other outcomes page")
    return ""


def check_header(cols: list[str], percent, source: str):
    """The forecast columns a header offers.

    Parameters
    ----------
    cols : list of str
        Column names (canonical).
    percent : iterable of str
        Predictors given in percent (``--percent``).
    source : str
        The file's name, for messages.

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
    if not conf_cols and not sig_cols:
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


def trajectory_ids(df: pd.DataFrame, where, notes: list[str], problems: list[str]):
    """Run ids as text without surrounding spaces (as ``str.strip``).

    Parameters
    ----------
    df : DataFrame
        From :func:`prepared_frame`.
    where : Series-like
        Its row locations.
    notes, problems : list of str
        Receive a note when ids were joined (spaces, 7 and "7"), and the rows without an id.

    Returns
    -------
    tid : Series of str
    missing : Series of bool
        Rows without an id.
    """
    tid_missing = is_missing(df["trajectory_id"])
    if tid_missing.any():
        problems.append(f"column 'trajectory_id': empty at {row_examples(where[tid_missing])}")
    raw_tid = id_text(df["trajectory_id"])
    if raw_tid is None:
        problems.append(DURATION_IDS)
        raw_tid = df["trajectory_id"].astype(str)
    tid = raw_tid.str.strip()
    merged = raw_tid.nunique() - tid.nunique()
    if merged > 0:  # ids are read without surrounding spaces: say when that joins two spellings
        notes.append(merged_ids_note(merged))
    col = df["trajectory_id"]
    if col.dtype == object and pd.api.types.infer_dtype(col, skipna=True).startswith("mixed"):
        typed = col.map(lambda v: (type(v).__name__, str(v))).nunique()
        if typed > raw_tid.nunique():  # 7 and "7", true and "True" (JSON): one run once read as text
            notes.append(typed_ids_note(typed - raw_tid.nunique()))

    return tid, tid_missing


DURATION_IDS = ("column 'trajectory_id' holds durations, which do not name runs; store the ids as text or "
                "whole numbers")


def id_text(col: pd.Series) -> pd.Series | None:
    """Stored ids as text, spelled as every engine spells them (docs/formats.md, "Trajectory ids"):
    as ``str`` does, except timestamps, which read as DuckDB writes them: ``YYYY-MM-DD HH:MM:SS``
    and the fraction of a second without trailing zeros, a time-zone-aware one as its instant in
    UTC followed by ``+00:00`` (pandas spells a column's timestamps to the precision of its most
    precise value, and in the column's own time zone, which the files do not always keep).
    None for durations, which name no run (Parquet ``duration`` and ``INTERVAL``).

    Parameters
    ----------
    col : Series
        The ``trajectory_id`` column as read.

    Returns
    -------
    Series of str, or None
    """
    if pd.api.types.is_timedelta64_dtype(col.dtype):
        return None
    if isinstance(col.dtype, pd.DatetimeTZDtype):
        return _timestamp_text(col.dt.tz_convert("UTC").dt.tz_localize(None)) + "+00:00"
    if pd.api.types.is_datetime64_dtype(col.dtype):
        return _timestamp_text(col)
    if col.dtype == object:  # (a Parquet INTERVAL reads as pyarrow's MonthDayNano values)
        first = np.flatnonzero(col.notna().to_numpy())[:1]
        if len(first) and type(col.iloc[first[0]]).__name__ in ("MonthDayNano", "timedelta", "Timedelta"):
            return None
        if pd.api.types.infer_dtype(col, skipna=True) in ("datetime", "datetime64", "mixed"):
            return col.map(lambda v: _one_timestamp(v) if isinstance(v, datetime.datetime) else v).astype(str)
    return col.astype(str)


def _one_timestamp(v: datetime.datetime) -> str:
    """One timestamp (among other values) spelled as :func:`_timestamp_text` spells a column's."""
    zoned = v.tzinfo is not None and v.utcoffset() is not None
    if zoned:
        v = v.astimezone(datetime.timezone.utc)
    ns = v.microsecond * 1000 + int(getattr(v, "nanosecond", 0))
    fraction = f".{ns:09d}".rstrip("0") if ns else ""
    return (f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}{fraction}"
            + ("+00:00" if zoned else ""))


def _timestamp_text(col: pd.Series) -> pd.Series:
    """Naive timestamps spelled as DuckDB's CAST to VARCHAR spells them (NaT as "NaT")."""
    text = pd.Series(np.datetime_as_string(col.to_numpy()), index=col.index).str.replace("T", " ", n=1)
    # (a fraction of a second loses its trailing zeros, and its point when nothing is left)
    return text.str.replace(r"(\.\d*?)0+$", r"\1", regex=True).str.replace(r"\.$", "", regex=True)


def partial_outcome_note(runs: int) -> str:
    """The note on runs that give the outcome on some rows only."""
    return f"{runs} run(s) give 'outcome' on some rows only; the value given was used for the whole run."


def merged_ids_note(merged: int) -> str:
    """The note on stored ids that became one run once stripped of surrounding whitespace."""
    return (f"trajectory ids are read without surrounding spaces: {merged} id(s) that differ from another only "
            "by them were read as the same run.")


def typed_ids_note(joined: int) -> str:
    """The note on ids written both as a number and as text, read as one run."""
    return (f"trajectory ids are read as text: {joined} id(s) written as a number or true/false and as text "
            "(e.g. 7 and \"7\") were read as the same run.")


def step_numbers(df: pd.DataFrame, tid: pd.Series, tid_missing, where, problems: list[str]) -> pd.Series:
    """Step numbers: whole numbers from 0 to 2^53, each once per run.

    Parameters
    ----------
    df : DataFrame
        From :func:`prepared_frame`.
    tid, tid_missing : Series
        From :func:`trajectory_ids`.
    where : Series-like
        Row locations.
    problems : list of str
        Receives the rows with a bad step, or the repeated (trajectory_id, step) rows.

    Returns
    -------
    Series of float
    """
    step, step_bad = parse_numeric(df["step"])
    step_missing = step.isna() & ~step_bad
    non_int = step.notna() & ~((step == np.floor(step)) & (step >= 0) & (step < MAX_STEP))
    if step_bad.any() or non_int.any() or step_missing.any():
        m = step_bad | non_int | step_missing
        problems.append("column 'step': every row needs a whole number from 0 to 2^53; not so "
                        f"at {row_examples(where[m])}")
    else:
        key = pd.DataFrame({"t": tid, "s": step})
        dup = key.duplicated(keep=False) & ~tid_missing
        if dup.any():
            problems.append("duplicate (trajectory_id, step): the same step appears twice in a "
                            f"run at {row_examples(where[dup])}")

    return step


def _outcomes(df: pd.DataFrame, where, problems: list[str]) -> pd.Series:
    """Outcomes: 1, 0 (also true/false) or empty (censored)."""
    outcome, out_bad = parse_numeric(df["outcome"])
    if pd.api.types.is_bool_dtype(df["outcome"]) is False and out_bad.any():
        # accept true/false words too
        ob, ob_bad = parse_boolean(df["outcome"])
        outcome = outcome.where(~out_bad, ob)
        out_bad = out_bad & ob_bad
    not01 = outcome.notna() & ~outcome.isin([0.0, 1.0])
    if out_bad.any() or not01.any():
        m = out_bad | not01
        problems.append("column 'outcome' must be 1 (success), 0 (failure) or empty (censored); "
                        f"not so at {row_examples(where[m])}")

    return outcome


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


def percent_note(cols: list[str]) -> str:
    """The note on the predictors read in percent."""
    return f"{', '.join(cols)}: read as percentages (divided by 100)."


def percent_hint(col: str) -> str:
    """The words added to the message on forecasts outside [0, 1] when every value of ``col``
    lies in [0, 100]."""
    return (f" (they look like percentages (0–100): say so with --percent {col[len('conf_'):]} or the "
            "dashboard's percent option)")


def _value_columns(df, cols, conf_cols, sig_cols, percent_cols, where, notes, problems) -> dict:
    """Forecasts in [0, 1], finite signals, weights ≥ 0, and the ``q_z`` and ``censored`` columns
    (all NaN when absent), as numbers by column name."""
    values: dict[str, pd.Series] = {}
    if percent_cols:
        notes.append(percent_note([c for c in conf_cols if c in percent_cols]))
    for c in conf_cols:
        num, bad = parse_numeric(df[c])
        if c in percent_cols:
            num = num / 100.0
        if bad.any():
            problems.append(f"column {show_id(c)}: not a number at {row_examples(where[bad])}")
        num = rounding_into_unit(num, c, notes)
        out = num.notna() & ((num < 0) | (num > 1))
        if out.any():
            hint = (percent_hint(c) if bool(((num >= 0) & (num <= 100)).where(num.notna(), True).all())
                    and float(num.max()) > 1 else "")
            problems.append(f"column {show_id(c)}: probabilities must be in [0, 1]; not so at "
                            f"{row_examples(where[out])}{hint}")
        values[c] = num
    for c in sig_cols:
        num, bad = parse_numeric(df[c])
        inf = num.notna() & ~np.isfinite(num)
        if bad.any() or inf.any():
            m = bad | inf
            problems.append(f"column {show_id(c)}: not a finite number at {row_examples(where[m])}")
        values[c] = num
    if "weight" in cols:
        wnum, wbad = parse_numeric(df["weight"])
        wneg = wnum.notna() & (~np.isfinite(wnum) | (wnum < 0))
        if wbad.any() or wneg.any():
            m = wbad | wneg
            problems.append("column 'weight': weights must be finite numbers >= 0; not so at "
                            f"{row_examples(where[m])}")
        values["weight"] = wnum
    if "q_z" in cols:
        qz, qbad = parse_numeric(df["q_z"])
        qout = qz.notna() & ((qz < 0) | (qz > 1))
        if qbad.any() or qout.any():
            m = qbad | qout
            problems.append("column 'q_z' (continuation success probability) must be in [0, 1] "
                            f"or empty; not so at {row_examples(where[m])}")
    else:
        qz = pd.Series(np.nan, index=df.index)
    if "censored" in cols:
        cens, cbad = parse_boolean(df["censored"])
        if cbad.any():
            problems.append("column 'censored' must be true/false or 1/0; not so at "
                            f"{row_examples(where[cbad])}")
    else:
        cens = pd.Series(np.nan, index=df.index)
    values["q_z"], values["censored"] = qz, cens
    return values


def code_runs(tid: pd.Series, step: pd.Series):
    """The rows sorted by (run, step).

    Parameters
    ----------
    tid : Series of str
        Run id of each row.
    step : Series
        Step number of each row.

    Returns
    -------
    codes : ndarray of int
        Run code (0 … n − 1, in id order) of each row, in sorted order.
    uniques : Index
        The run ids, sorted.
    order : ndarray of int
        The sort: row ``order[i]`` is the i-th of the sorted rows.
    """
    codes_unsorted, uniques = pd.factorize(tid, sort=True)
    order = np.lexsort((step.to_numpy(), codes_unsorted))
    return codes_unsorted[order], uniques, order


def _run_labels(outcome, cens, qz, codes, uniques, order, notes: list[str], source: str):
    """Per run: the outcome, whether it was censored, and q_Z (censored runs only)."""
    n = len(uniques)
    problems: list[str] = []

    def per_traj(series: pd.Series, label: str):
        vals, conflict = per_run_constant(series.iloc[order].reset_index(drop=True), codes, n)
        if conflict.any():
            problems.append(f"column {label!r} changes within trajectory "
                            f"{id_examples(uniques, conflict)}; it must be constant within a run")
        return vals

    outcome_t = per_traj(outcome, "outcome")
    cens_t = per_traj(cens, "censored")
    qz_t = per_traj(qz, "q_z")
    if problems:
        raise LogFormatError(source, problems)

    censored = run_censoring(outcome.iloc[order].isna().to_numpy(), outcome_t, cens_t, codes, uniques, notes,
                             problems, "trajectory", "give the outcome (1/0) or mark it censored")
    if problems:
        raise LogFormatError(source, problems)
    qz_complete = ~np.isnan(qz_t) & ~censored
    if qz_complete.any():
        notes.append(f"{int(qz_complete.sum())} complete trajectories carry a q_z value; q_z is "
                     "only used for censored runs, so it was ignored there.")
        qz_t = np.where(censored, qz_t, np.nan)

    return outcome_t, censored, qz_t


def run_censoring(row_missing: np.ndarray, outcome_t: np.ndarray, cens_t: np.ndarray, codes: np.ndarray, uniques,
                  notes: list[str], problems: list[str], noun: str, fix: str) -> np.ndarray:
    """Which runs are censored, from their outcome and the optional ``censored`` column (shared by the
    binary, multi-class and continuous readers).

    Parameters
    ----------
    row_missing : ndarray of bool
        Rows (sorted by run) whose ``outcome`` cell is empty.
    outcome_t, cens_t : ndarray of float
        Per run: the outcome (NaN: none given) and the ``censored`` flag (1/0, NaN: not given).
    codes, uniques
        Run code of every sorted row, and the run ids (for messages).
    notes, problems : list of str
        Appended to: a note when some runs give the outcome on some rows only; a problem when the
        flag and the outcome disagree.
    noun, fix : str
        How a run is called in messages ("trajectory", "run") and what to do when the outcome is empty
        on a run marked finished.

    Returns
    -------
    ndarray of bool
        Censored per run: the flag where given, else "no outcome".
    """
    partial = pd.Series(row_missing).groupby(codes).any().to_numpy() & ~np.isnan(outcome_t)
    if partial.any():
        notes.append(partial_outcome_note(int(partial.sum())))
    censored = np.where(~np.isnan(cens_t), cens_t == 1.0, np.isnan(outcome_t))
    both = censored & ~np.isnan(outcome_t)
    if both.any():
        problems.append(f"{noun} {id_examples(uniques, both)}: column 'censored' is true while 'outcome' is present; a "
                        "censored run has no observed outcome")
    neither = ~censored & np.isnan(outcome_t)
    if neither.any():
        problems.append(f"{noun} {id_examples(uniques, neither)}: 'outcome' is empty but column 'censored' says the run "
                        f"finished; {fix}")
    return censored


def _steps_frame(tid, step, codes, order, values: dict, notes: list[str]):
    """The steps frame (sorted by run and step, with the position t = 1 … T of every row), the
    first row of every run and the run lengths."""
    steps = pd.DataFrame({
        "trajectory_id": tid.to_numpy()[order],
        "step": step.to_numpy()[order].astype(np.int64),
        "traj": codes.astype(np.int64),
    })
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    lengths = np.diff(np.r_[starts, len(codes)])
    steps["t"] = np.arange(len(codes)) - np.repeat(starts, lengths) + 1
    renumbered = np.unique(codes[steps["step"].to_numpy() != steps["t"].to_numpy()]).size
    if renumbered:  # the schedules weigh the position t = 1 … T of a row in its run, not its step value
        notes.append(f"{renumbered} run(s) have steps that are not numbered 1, 2, …, T (a gap, a step 0 "
                     "or a late start); steps keep their order, and the weight schedules use each row's "
                     "position t = 1 … T in its run.")
    for c, v in values.items():
        steps[c] = v.to_numpy()[order]
    return steps, starts, lengths


def _file_order(order: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """Each run's rank by its first row in the file (0 = the run that appears first): the run order
    of a log without a timestamp (tpsviz.monitoring.monitor)."""
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, codes, order.astype(np.int64))
    return np.argsort(np.argsort(first, kind="stable"), kind="stable").astype(np.int64)


def _metadata(df, cols, values, codes, order, n, steps, traj, notes: list[str]) -> None:
    """Every other column: on the runs frame when constant within each run, else on the steps."""
    meta_cols = [c for c in cols if c not in RESERVED and c not in values]
    internal = {"t", "traj", "length", "last_step", "file_order"}  # columns tpsviz adds to the frames
    taken, meta_names = set(meta_cols), {}
    for c in meta_cols:  # t → t_log (t_log_2 … when the log has a t_log too)
        name, k = c, 2
        if c in internal:
            name = f"{c}_log"
            while name in taken:
                name, k = f"{c}_log_{k}", k + 1
            taken.add(name)
        meta_names[c] = name
    moved = [c for c, m in meta_names.items() if c != m]
    if moved:
        notes.append("metadata column(s) " + ", ".join(f"{show_id(c)} kept as {show_id(meta_names[c])}"
                                                       for c in moved)
                     + " (the name is used by tpsviz itself).")
    for c in meta_cols:
        col = df[c].iloc[order].reset_index(drop=True)
        try:
            nun = col.groupby(codes).nunique(dropna=False)
        except TypeError:  # unhashable (lists/dicts from JSON): keep as text at step level
            steps[meta_names[c]] = col.astype(str).to_numpy()
            continue
        if (nun <= 1).all():
            traj[meta_names[c]] = col.groupby(codes).first().reindex(range(n)).to_numpy()
        else:
            steps[meta_names[c]] = col.to_numpy()


def _forecast_notes(steps: pd.DataFrame, conf_cols: list[str], notes: list[str]) -> None:
    """Say which predictors have missing forecasts (or none at all)."""
    for c in conf_cols:
        miss = int(steps[c].isna().sum())
        if miss == len(steps):
            notes.append(f"{c}: the column holds no forecast at all; the predictor is listed but "
                         "cannot be scored.")
        elif miss:
            notes.append(f"{c}: {miss} step(s) have no forecast; they are left out of that "
                         "predictor's score (and counted).")
