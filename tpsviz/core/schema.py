"""Names of the long format (docs/formats.md): required and reserved columns, signal prefixes,
and how names from a file are matched and shown in messages."""

from __future__ import annotations

import re
from collections import Counter

from tpsviz.core.errors import LogFormatError

__all__ = ["plain_text", "REQUIRED", "RESERVED", "PREFIXES", "REFERENCE_PREFIX", "is_reference", "ELICITED_KEY", "ELICITED_PROBLEM_KEY", "looks_like_ours", "canonical_name", "show_id",
           "clean_text", "no_lone_surrogates", "MAX_META_CHARS", "MAX_ID_CHARS", "WHITESPACE"]

MAX_META_CHARS = 1000   # a metadata text copied onto every step of its run is cut to this
MAX_ID_CHARS = 200      # a run id longer than this is refused (it is copied onto every step)
#: the characters str.strip() removes from a run id (as tpsviz.load does). Python's whitespace lies
#: at or below U+3000: scanning that far takes 1 ms where every code point took 0.4 s in the first
#: view of a large dataset (tests/test_sample.py checks it against the full scan)
WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def no_lone_surrogates(obj, raw: bytes | None = None):
    """Parsed JSON with lone surrogate escapes (valid JSON such as ``"\\ud800"``, but text no
    terminal, file or browser can encode) replaced by U+FFFD; untouched when ``raw`` shows none."""
    if raw is not None and not _SURROGATE_ESCAPE.search(raw):
        return obj
    if isinstance(obj, str):
        return _SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, list):
        return [no_lone_surrogates(v) for v in obj]
    if isinstance(obj, dict):
        return {no_lone_surrogates(k): no_lone_surrogates(v) for k, v in obj.items()}
    return obj

REQUIRED = ("trajectory_id", "step", "outcome")
RESERVED = ("trajectory_id", "step", "outcome", "censored", "q_z", "weight")
PREFIXES = {"conf_": "conf", "raw_": "raw", "unc_": "unc"}
#: the name prefix of the reference forecasters fitted on the log's own outcomes (``ref:step``,
#: ``ref:task``, ``ref:task+step``: :mod:`tpsviz.forecasts.references`); named here, below every
#: layer, so that the verdicts (diagnostics) tell a yardstick from the agent's signal without
#: importing the forecasters
REFERENCE_PREFIX = "ref:"
#: the message-metadata key under which an elicited P(eventual success) is stored during a run
#: (tpsviz.forecasts.elicit) and found by the Inspect reader without options; the reply's problem,
#: when it held no usable probability, is stored under ELICITED_PROBLEM_KEY (docs/forecasts.md)
ELICITED_KEY = "tpsviz_confidence"
ELICITED_PROBLEM_KEY = "tpsviz_confidence_problem"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def is_reference(name) -> bool:
    """Whether a predictor is a reference forecaster (its name starts with :data:`REFERENCE_PREFIX`).

    Parameters
    ----------
    name : object
        A predictor's name.

    Returns
    -------
    bool
    """
    return str(name).startswith(REFERENCE_PREFIX)


def canonical_name(column: str) -> str:
    """The long-format name a column stands for, matching reserved names and prefixes
    regardless of case (``Conf_A`` -> ``conf_A``, ``Outcome`` -> ``outcome``); other names
    are returned unchanged."""
    c = str(column).strip()
    low = c.lower()
    if low in RESERVED:
        return low
    for prefix in PREFIXES:
        if low.startswith(prefix):
            return prefix + c[len(prefix):]
    return c


def is_log_column(column: str) -> bool:
    """Whether a column is one tpsviz reads (a reserved name or a forecast/signal prefix)."""
    c = canonical_name(column)
    return c in RESERVED or c.startswith(tuple(PREFIXES))


def nested_column(column: str, kind: str) -> str:
    """The message for a log column of nested type (``kind``: its type as stored), which holds no
    single value per row; the same words from every engine."""
    return (f"column {show_id(column)} holds lists, structs or maps ({show_id(kind, 30)}), not one "
            "value per row; store one number (or id) per step row")


def refuse_duplicate_columns(header: list[str], name: str) -> None:
    """Refuse a header that names a column twice (also after matching names ignoring case; two
    predictor or signal columns that differ only in case, conf_a and CONF_A, are one name)."""
    canon = [c.lower() if c.startswith(tuple(PREFIXES)) else c for c in map(canonical_name, header)]
    counts = Counter(canon)
    dups = [c for c, k in counts.items() if k > 1]
    if not dups:
        return
    ours = looks_like_ours(header)
    problems = []
    for d in dups[:5]:
        pos = [i + 1 for i, c in enumerate(canon) if c == d]
        label = f"column {show_id(d)}" if ours else "a column name"
        problems.append(f"the header repeats {label} (columns {', '.join(map(str, pos))}); "
                        "every column needs its own name")
    raise LogFormatError(name, problems)


SEPARATORS = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}  # a delimited file's, by name


def separator_note(label: str, several: bool = False) -> str:
    """The note that a delimited file (or every file of a dataset) was read with another separator
    than its extension says, ``label`` being the separator's name (:data:`SEPARATORS`)."""
    if several:
        return f"the files are {label}-separated; they were read as such."
    return f"the file is {label}-separated; it was read as such."


def sniff_separator(first_line: str, sep: str) -> tuple[str, str | None]:
    """The separator of a delimited file, from its header line: ``sep`` where the line holds it,
    else ";", tab or "|" (spreadsheets in many locales write "CSV" with semicolons, and their
    numbers with decimal commas), with that separator's name for a note (None for ``sep``)."""
    if sep in first_line:
        return sep, None
    for other in (";", "\t", "|"):
        if other in first_line:
            return other, SEPARATORS[other]
    return sep, None


def looks_like_ours(columns) -> bool:
    """True when a header names at least two long-format columns (so naming its columns in a
    message cannot disclose an unrelated file's first line)."""
    names = [canonical_name(c) for c in columns]
    hits = sum(1 for c in names if c in RESERVED or c.startswith(tuple(PREFIXES)))
    return hits >= 2


def clean_text(s, limit: int | None = None) -> str:
    """Text from a log with control and bidirectional-override characters removed (for a
    terminal or a message), cut to ``limit`` characters with an ellipsis."""
    out = _CONTROL.sub("", str(s))
    if limit is not None and len(out) > limit:
        out = out[: max(limit - 1, 1)] + "…"
    return out


def show_id(value, limit: int = 40) -> str:
    """A trajectory id (or column name) for a message: cleaned, cut, quoted."""
    return repr(clean_text(value, limit))


def plain_text(s, limit: int | None = None) -> str:
    """Text from a log (id, column or file name) for a terminal or JSON: no control characters,
    no line breaks or tabs, cut to ``limit`` characters.

    Parameters
    ----------
    s : object
    limit : int, optional

    Returns
    -------
    str
    """
    return clean_text(s, limit).replace("\n", " ").replace("\t", " ")
