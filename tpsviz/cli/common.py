"""What every command of the command line shares: the refusal of bad input, text from a log made
safe for a terminal, and numbers written for tables and for JSON.

Bad input raises :class:`Fail`; :func:`tpsviz.cli.main.main` prints its message on stderr and exits
with :data:`EXIT_BAD_INPUT`, never with a traceback.
"""

from __future__ import annotations

import math

from tpsviz.core.schema import clean_text

__all__ = ["EXIT_BAD_INPUT", "Fail", "safe", "name_width", "num", "fmt", "short", "interval"]

#: the exit code of bad input (a file, an option value or a combination of options)
EXIT_BAD_INPUT = 2


class Fail(Exception):
    """Bad input: the message is printed on stderr and the command exits with code 2."""


def safe(s, limit: int | None = None) -> str:
    """Text from a log (an id, a column or file name) for the terminal.

    Parameters
    ----------
    s : object
        The text (converted with ``str``).
    limit : int, optional
        Most characters kept (the rest is cut with an ellipsis).

    Returns
    -------
    str
        The text without control characters, tabs or line breaks.
    """
    return clean_text(s, limit).replace("\n", " ").replace("\t", " ")


def name_width(names) -> int:
    """Width of the predictor column of a table.

    Parameters
    ----------
    names : iterable of str
        The predictors.

    Returns
    -------
    int
        The longest name (so ``x`` and ``x@platt`` never look alike), between 20 and 48.
    """
    return max(20, min(48, max((len(safe(n)) for n in names), default=0)))


def num(v):
    """A number for JSON.

    Parameters
    ----------
    v : float or None

    Returns
    -------
    float, str or None
        The float; None for NaN or None; ``"-inf"``/``"inf"`` for an infinite value (an
        unbounded score of a forecast of exactly 0 or 1 that was wrong).
    """
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else (None if math.isnan(v) else ("-inf" if v < 0 else "inf"))


def short(v: float, digits: int) -> str:
    """A number in fixed notation, or in scientific notation when fixed notation would show 0.

    Parameters
    ----------
    v : float
    digits : int
        Digits after the decimal point.

    Returns
    -------
    str
    """
    if v != 0 and abs(v) < 0.5 * 10 ** -digits:
        return f"{v:.{max(digits - 1, 1)}e}"
    return f"{v:.{digits}f}"


def fmt(v, width: int, digits: int) -> str:
    """A table cell: the number right-aligned in ``width`` (``n/a``, ``inf`` or ``-inf`` when not finite).

    Parameters
    ----------
    v : float
    width, digits : int
        Cell width and digits after the decimal point.

    Returns
    -------
    str
    """
    v = float(v)
    if math.isnan(v):
        return f"{'n/a':>{width}}"
    if math.isinf(v):
        return f"{'-inf' if v < 0 else 'inf':>{width}}"
    return f"{short(v, digits):>{width}}"


def interval(lo, hi, width: int) -> str:
    """A table cell ``[lo, hi]`` with three digits, right-aligned in ``width`` (``n/a`` when an end
    is not finite).

    Parameters
    ----------
    lo, hi : float
    width : int

    Returns
    -------
    str
    """
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{'n/a':>{width}}"
    return f"{'[' + short(lo, 3) + ', ' + short(hi, 3) + ']':>{width}}"
