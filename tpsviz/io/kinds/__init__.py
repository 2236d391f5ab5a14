"""Which kind of outcome a log's header describes: binary, multi-class or continuous.

One place decides it for every reader and front end (docs/formats.md, docs/multiclass.md,
docs/continuous.md):

- **multi-class**: every forecast column is ``conf_<name>__<label>`` (split at the first double
  underscore) and some predictor has two labels or more; a binary log whose predictor names hold
  a double underscore stays binary;
- **continuous**: some column is ``mu_<name>``, ``q<level>_<name>`` (level in (0, 1)) or
  ``samples_<name>``, and no column is a binary forecast or signal (``conf_``, ``raw_``, ``unc_``);
- **binary** otherwise.
"""

from __future__ import annotations

import math
import re

from tpsviz.core.schema import canonical_name

__all__ = ["KINDS", "outcome_kind", "split_conf", "is_multiclass", "is_continuous", "quantile_level",
           "MU_PATTERN", "SIGMA_PATTERN", "SAMPLES_PATTERN", "QUANTILE_PATTERN"]

KINDS = ("binary", "multiclass", "continuous")

CONF_PATTERN = re.compile(r"conf_(.+?)__(.+)", re.S)
MU_PATTERN = re.compile(r"mu_(.+)", re.IGNORECASE | re.DOTALL)
SIGMA_PATTERN = re.compile(r"sigma_(.+)", re.IGNORECASE | re.DOTALL)
SAMPLES_PATTERN = re.compile(r"samples_(.+)", re.IGNORECASE | re.DOTALL)
QUANTILE_PATTERN = re.compile(r"q((?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)_(.+)", re.IGNORECASE | re.DOTALL)
_BINARY_PREFIXES = ("conf_", "raw_", "unc_")


def split_conf(column: str) -> tuple[str, str] | None:
    """(predictor, label) of a ``conf_<name>__<label>`` column (split at the first ``__``), else None."""
    m = CONF_PATTERN.fullmatch(canonical_name(column))
    return (m.group(1), m.group(2)) if m else None


def is_multiclass(columns) -> bool:
    """True when some column is a multi-class forecast ``conf_<name>__<label>``.

    Parameters
    ----------
    columns : iterable of str
        A header (prefixes matched ignoring case, as in the binary format).
    """
    return any(split_conf(str(c)) is not None for c in columns)


def quantile_level(text: str) -> float:
    """The level of a ``q<level>_<name>`` column as a float (NaN if it is not a number)."""
    try:
        return float(text)
    except ValueError:  # pragma: no cover - the pattern only lets numbers through
        return math.nan


def is_continuous(columns) -> bool:
    """True when some column names a continuous predictor: ``mu_<name>``, ``q<level>_<name>``
    (level in (0, 1)) or ``samples_<name>``.

    Parameters
    ----------
    columns : iterable of str

    Returns
    -------
    bool
    """
    for c in map(str, columns):
        c = c.strip()
        if MU_PATTERN.fullmatch(c) or SAMPLES_PATTERN.fullmatch(c):
            return True
        m = QUANTILE_PATTERN.fullmatch(c)
        if m and 0.0 < quantile_level(m.group(1)) < 1.0:
            return True
    return False


def outcome_kind(columns) -> str:
    """The kind of outcome a header describes: ``"binary"``, ``"multiclass"`` or ``"continuous"``.

    Parameters
    ----------
    columns : iterable of str
        The log's column names.

    Returns
    -------
    str
        One of :data:`KINDS` (rules in the module docstring).
    """
    cols = [str(c) for c in columns]
    conf = [c for c in cols if c.strip().lower().startswith("conf_")]
    split = [split_conf(c) for c in conf]
    names = [x[0] for x in split if x]
    if conf and all(split) and max(names.count(n) for n in names) >= 2:
        return "multiclass"
    if is_continuous(cols) and not any(c.strip().lower().startswith(_BINARY_PREFIXES) for c in cols):
        return "continuous"
    return "binary"
