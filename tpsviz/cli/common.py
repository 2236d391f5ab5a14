"""What every command of the command line shares: the refusal of bad input, the core's messages in
text from a log made safe for a terminal, and numbers written for tables and for JSON (the core's
messages in the command line's words: :mod:`tpsviz.cli.wording`).

Bad input raises :class:`Fail`; :func:`tpsviz.cli.main.main` prints its message on stderr and exits
with :data:`EXIT_BAD_INPUT`, never with a traceback; an unexpected failure (a bug) exits with
:data:`EXIT_BUG`. Exit 1 is left to ``check``: a predictor failed a rule.
"""

from __future__ import annotations

import math

from tpsviz.evaluation.record import json_value
from tpsviz.core.schema import plain_text

__all__ = ["EXIT_BAD_INPUT", "EXIT_BUG", "Fail", "safe", "name_width", "num", "fmt",
           "short", "interval"]

#: the exit code of bad input (a file, an option value or a combination of options)
EXIT_BAD_INPUT = 2
#: the exit code of an unexpected failure (a bug): never 1, which ``check`` gives a predictor that fails
EXIT_BUG = 3


class Fail(Exception):
    """Bad input: the message is printed on stderr and the command exits with code 2."""


#: text from a log (an id, a column or file name) for the terminal: no control characters, tabs or line
#: breaks (the same text the JSON of ``tpsviz.evaluate`` holds)
safe = plain_text


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


#: a number for JSON: the float, None for NaN, "-inf"/"inf" for an infinite score
num = json_value


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
