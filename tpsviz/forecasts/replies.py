"""A probability of success read from a model's reply (the elicitation and the replay share it).

The prompts (``prompts.toml``) ask for one line ``probability: <a number between 0 and 1>``. A reply
is read as follows, and anything else is a missing value with a named problem, never a guess:

1. the last ``probability: X`` (also ``P(success) = X``, ``probability of success is X``) if any;
2. otherwise the reply's only number;
3. ``X%`` is a percentage (``70%`` → 0.7); a bare number must lie in [0, 1]: a bare ``70`` is
   "out of range", since it could be a percentage or a score out of 100.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["Reply", "PROBLEMS", "parse_probability"]

#: every problem a reply can have, in the words the counts are reported with
PROBLEMS = ("empty reply", "no number", "several numbers", "out of range")

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_LABELLED = re.compile(
    r"(?:probability(?:\s+of\s+success)?|p\s*\(\s*success\s*\))\s*(?:is|[:=])?\s*\**\s*"
    r"(?P<x>" + _NUMBER + r")\s*(?P<pct>%|percent\b)?", re.IGNORECASE)
_ANY = re.compile(r"(?<![\w.])(?P<x>" + _NUMBER + r")\s*(?P<pct>%|percent\b)?", re.IGNORECASE)


@dataclass(frozen=True)
class Reply:
    """What a reply said.

    Attributes
    ----------
    value : float or None
        The probability in [0, 1], or None when the reply held none.
    problem : str or None
        One of :data:`PROBLEMS` when ``value`` is None.
    """

    value: float | None
    problem: str | None = None


def _value(match: re.Match) -> Reply:
    x = float(match.group("x"))
    if match.group("pct"):
        x /= 100.0
    if not math.isfinite(x) or not 0.0 <= x <= 1.0:
        return Reply(None, "out of range")
    return Reply(x)


def parse_probability(text) -> Reply:
    """Read P(eventual success) from a model's reply.

    Parameters
    ----------
    text : str or None
        The reply's text.

    Returns
    -------
    Reply
        The value in [0, 1], or None with its problem (:data:`PROBLEMS`).

    Examples
    --------
    >>> parse_probability("probability: 0.72").value
    0.72
    >>> parse_probability("I'd say 35%").value
    0.35
    >>> parse_probability("Hard to tell.").problem
    'no number'
    """
    if not isinstance(text, str) or not text.strip():
        return Reply(None, "empty reply")
    labelled = list(_LABELLED.finditer(text))
    if labelled:
        return _value(labelled[-1])
    numbers = list(_ANY.finditer(text))
    if not numbers:
        return Reply(None, "no number")
    if len(numbers) > 1:
        return Reply(None, "several numbers")
    return _value(numbers[0])
