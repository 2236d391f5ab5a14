"""How each column of a dataset reads in DuckDB's SQL: its stored type, its values as numbers,
booleans or outcomes (with the condition of a value that is none), and the :class:`Plan` of one
dataset, which maps the log's columns to the files' (docs/architecture.md, "Engines").

Validation follows :func:`tpsviz.load` on the rules that decide a score (ids, whole step numbers
once per run, outcomes 1/0/empty and constant per run, forecasts in [0, 1], the ``censored``,
``q_z`` and ``weight`` columns); a defect is a :class:`~tpsviz.core.errors.LogFormatError` naming the
column, the number of rows and an example run. One case is refused here that the in-memory
reader accepts: raw signals (``raw_``/``unc_`` need a cross-fitted recalibration over the rows);
the message says to use ``--engine memory``.
"""

from __future__ import annotations

import re

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import RESERVED, canonical_name, nested_column, show_id
from tpsviz.core.wording import setting
from tpsviz.io.dataset import Dataset
from tpsviz.io.dataset.duckdb_source import quote_name, quote_text, refuse_duration_ids
from tpsviz.io.tables.cells import FALSE_TOKENS, TRUE_TOKENS
from tpsviz.io.tables.header import check_header
from tpsviz.io.tables.longform import percent_note
from tpsviz.io.tables import MISSING

__all__ = ["Plan", "is_integer", "is_float", "is_nested", "stored_as", "nan_free"]


def _missing_text(col: str) -> str:
    tokens = ", ".join(quote_text(m) for m in sorted(MISSING))
    return f"(lower(trim({col})) IN ({tokens}))"


# DuckDB type names, matched whole: INTERVAL contains "INT" and DOUBLE[] "DOUBLE", and neither is a number
_FLOAT_TYPES = re.compile(r"DOUBLE|FLOAT|REAL")
_INTEGER_TYPES = re.compile(r"U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|INT[1248]?")
_BIGINT_TYPES = re.compile(r"U?(TINYINT|SMALLINT|INTEGER)|BIGINT|INT[1248]?")  # every value fits a BIGINT
_DECIMAL_TYPES = re.compile(r"(DECIMAL|NUMERIC)(\(\d+,\s*\d+\))?")


def is_integer(typ: str, bigint: bool = False) -> bool:
    """Whether a DuckDB column type is an integer type (not a list of them, not INTERVAL).

    Parameters
    ----------
    typ : str
        A DuckDB type name.
    bigint : bool
        Only types whose every value casts to BIGINT (not UBIGINT, HUGEINT, UHUGEINT).

    Returns
    -------
    bool
    """
    return bool((_BIGINT_TYPES if bigint else _INTEGER_TYPES).fullmatch(typ.strip().upper()))


def is_float(typ: str) -> bool:
    """Whether a DuckDB column type is a floating-point type (DOUBLE, FLOAT, REAL; not a list).

    Parameters
    ----------
    typ : str
        A DuckDB type name.

    Returns
    -------
    bool
    """
    return bool(_FLOAT_TYPES.fullmatch(typ.strip().upper()))


def is_nested(typ: str) -> bool:
    """Whether a DuckDB column type holds several values per row (a list, array, struct, map or union).

    Parameters
    ----------
    typ : str
        A DuckDB type name.

    Returns
    -------
    bool
    """
    t = typ.strip().upper()
    return t.endswith("]") or t.startswith(("STRUCT", "MAP", "UNION"))


def stored_as(typ: str) -> str:
    """How a column of this DuckDB type is read as numbers (:meth:`Plan.expr`).

    Parameters
    ----------
    typ : str
        A DuckDB type name.

    Returns
    -------
    str
        "float", "exact" (integers, decimals, booleans) or "text" (anything else: cast to text
        and parsed, so a date, an interval or bytes is "not a number", as :func:`tpsviz.load`
        says).
    """
    t = typ.strip().upper()
    if t == "BOOLEAN" or is_integer(t) or _DECIMAL_TYPES.fullmatch(t):
        return "exact"
    return "float" if is_float(t) else "text"


def _number(col: str, typ: str, decimal_comma: bool = False) -> tuple[str, str]:
    """(value as DOUBLE or NULL, condition of a present value that is not a number). With
    ``decimal_comma`` (a semicolon-separated file), text such as "0,7" reads as 0.7, as
    :func:`tpsviz.load` reads it."""
    kind = stored_as(typ)
    if kind == "float":  # a stored NaN is a missing value, as tpsviz.load reads it
        return f"CASE WHEN isnan({col}) THEN NULL ELSE CAST({col} AS DOUBLE) END", "FALSE"
    if kind == "exact":
        return f"CAST({col} AS DOUBLE)", "FALSE"
    text = f"CAST({col} AS VARCHAR)"
    if decimal_comma:
        text = f"CASE WHEN regexp_full_match({text}, '\\s*-?\\d+,\\d+\\s*') THEN replace({text}, ',', '.') ELSE {text} END"
    cast = f"TRY_CAST(trim({text}) AS DOUBLE)"
    val = f"CASE WHEN {text} IS NULL OR {_missing_text(text)} THEN NULL ELSE {cast} END"
    # DuckDB's cast reads more than tpsviz.load's pandas.to_numeric does: digit separators
    # ("1_000"), NaN spellings other than the missing token "nan" ("-nan", "nan(1)") and "+-1".
    # Those are not numbers here either, so both engines refuse the same cells.
    bad = (f"({text} IS NOT NULL AND NOT {_missing_text(text)} AND ({cast} IS NULL OR isnan({cast}) "
           f"OR contains({text}, '_') OR contains({text}, '+-')))")  # (a cast that worked has "+-" only at the start)
    return val, bad


def nan_free(typ: str) -> bool:
    """Whether the number read from a column of this type (:meth:`Plan.expr`) is never NaN.

    A stored NaN of a float column is read as NULL; a text cell such as "-nan" casts to NaN.

    Parameters
    ----------
    typ : str
        A DuckDB type name.

    Returns
    -------
    bool
    """
    return stored_as(typ) != "text"


def _boolean(col: str, typ: str) -> tuple[str, str]:
    """(1.0/0.0/NULL, condition of a present value that is not true/false/1/0)."""
    if typ.upper() == "BOOLEAN":
        return f"CAST({col} AS DOUBLE)", "FALSE"
    text = f"lower(trim(CAST({col} AS VARCHAR)))"
    t = ", ".join(quote_text(v) for v in sorted(TRUE_TOKENS))
    f = ", ".join(quote_text(v) for v in sorted(FALSE_TOKENS))
    val = f"CASE WHEN {text} IN ({t}) THEN 1.0 WHEN {text} IN ({f}) THEN 0.0 ELSE NULL END"
    bad = f"({col} IS NOT NULL AND NOT {_missing_text(f'CAST({col} AS VARCHAR)')} AND {val} IS NULL)"
    return val, bad


def _outcome(col: str, typ: str, decimal_comma: bool = False) -> tuple[str, str]:
    """(1.0/0.0/NULL, condition of a present value that is neither): a number, or where a text cell
    is not a number, a true/false word (as ``tpsviz.io.tables.longform``'s outcomes: "true", "yes", …)."""
    num, num_bad = _number(col, typ, decimal_comma)
    if num_bad == "FALSE":  # a number or boolean column
        return num, num_bad
    word, word_bad = _boolean(col, typ)
    return f"CASE WHEN {num_bad} THEN {word} ELSE {num} END", f"(({num_bad}) AND ({word_bad}))"


class Plan:
    """The column expressions of one dataset.

    Parameters
    ----------
    ds : Dataset
    types : dict
        The files' column types, by their own names (:func:`tpsviz.io.dataset.duckdb_source.column_types`).
    mapping : sequence of (target, column), optional
        Columns of other names read as long-format columns (``--map``).
    percent : iterable of str, optional
        Predictors given in percent (``--percent``).

    Attributes
    ----------
    col : dict
        Long-format name (``trajectory_id``, ``step``, ``outcome``, ``conf_x`` …) to the files'
        column.
    types : dict
        Long-format name to DuckDB type.
    stored : dict
        The files' column types, by their own names.
    conf, signals : list of str
        The predictors' columns and the raw signals' (which the out-of-core engines do not score).
    read : list of str
        The files' columns the log uses.
    notes : list of str
        What the reader says about the columns (nested columns left out, percentages).

    Raises
    ------
    LogFormatError
        For a header the engines cannot score: raw signals only, nested or duration columns,
        ids stored as durations, a ``--map`` of a column the files lack.
    """

    def __init__(self, ds: Dataset, types: dict, mapping=(), percent=()):
        canon = {}
        for c in types:
            canon.setdefault(canonical_name(c), c)
        for target, col in mapping:
            if col not in types:
                raise LogFormatError(ds.label, [f"{setting('map')} {target}={col}: the files have no column "
                                                f"{show_id(col)}"])
            canon[str(target)] = col
        self.col = canon
        self.stored = dict(types)  # the files' column types, by their own names
        conf, sig, self.percent = check_header(list(canon), percent, ds.label)
        if not conf:
            raise LogFormatError(ds.label, [
                "the dataset has raw signals only (" + ", ".join(show_id(s, 40) for s in sig[:5]) + "); "
                "turning them into probabilities needs a cross-fitted recalibration over the step rows, "
                f"which the out-of-core engine does not do: use {setting('in_memory')} with "
                f"{setting('recalibrate')}"])
        self.conf = conf
        self.signals = sig
        self.types = {k: types[v] for k, v in canon.items()}
        self.decimal_comma = ds.fmt != "parquet" and ds.delimiter == ";"  # (tables: ";" files use them)
        nested = [nested_column(canon[k], t) for k, t in self.types.items()
                  if is_nested(t) and (k in RESERVED or k in conf)]
        # (durations read as what they are, as tpsviz.load reads them: not a number)
        nested += [f"column {show_id(canon[k])} must hold numbers; it holds durations" for k in canon
                   if canon[k] in ds.durations and k != "trajectory_id" and (k in RESERVED or k in conf or k in sig)]
        if nested:
            raise LogFormatError(ds.label, nested[:5])
        if "trajectory_id" in canon:
            refuse_duration_ids(ds, canon["trajectory_id"], self.types["trajectory_id"])
        self.read = [c for c in types if c in {canon[k] for k in canon if k in RESERVED or k in conf or k in sig}]
        unused = [c for c, t in types.items() if is_nested(t) and c not in self.read]
        # (the words of tables._read_parquet, which leaves such columns out of a file read in memory)
        self.notes = [f"{len(unused)} column(s) of nested type (lists, structs, maps) were left out: "
                      + ", ".join(show_id(c) for c in unused[:5])] if unused else []
        if self.percent:
            self.notes.append(percent_note([c for c in conf if c in self.percent]))

    def expr(self, name: str, kind: str = "number") -> tuple[str, str]:
        """Column ``name``'s value in SQL, and the condition of a present value that is not one.

        Parameters
        ----------
        name : str
            A long-format name (``step``, ``outcome``, ``conf_x`` …).
        kind : str
            ``number`` (DOUBLE, NULL where missing), ``outcome`` (a number or a true/false word)
            or ``bool`` (1.0/0.0/NULL).

        Returns
        -------
        value, bad : str
            ``("NULL", "FALSE")`` where the dataset has no such column.
        """
        if name not in self.col:
            return "NULL", "FALSE"
        col = quote_name(self.col[name])
        if kind == "bool":
            return _boolean(col, self.types[name])
        value, bad = (_outcome if kind == "outcome" else _number)(col, self.types[name], self.decimal_comma)
        if name in self.percent:  # a predictor given in percent (--percent)
            value = f"(({value}) / 100.0)"
        return value, bad
