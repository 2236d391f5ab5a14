"""A probability of success read from a model's reply (the elicitation and the replay share it).

The prompts (``prompts.toml``) ask for one line ``probability: <a number between 0 and 1>``, and the
replay's ``verbal`` method also asks for ``{"probability": X}`` through the provider's structured
output where inspect_ai offers it (:mod:`tpsviz.forecasts.methods`). A reply is read as follows, and
anything else is a missing value with a named problem, never a guess:

1. a JSON object in the reply (alone, or in a ```json fence) with a key ``probability``,
   ``p_success``, ``probability_of_success``, ``success_probability``, ``p`` or ``confidence``;
2. otherwise the last *labelled* value: ``probability: X``, ``Probability = X``, ``P(success) = X``,
   ``probability of success is X``, ``success probability: X``, ``chance of success: X``,
   ``likelihood of success is about X`` (a label marks the value the reply gives, so
   ``"1. Probability: 3/8\\n2. Expected value: 4/9"`` reads 3/8);
3. otherwise the numbers of the reply, leaving out list markers (``1.`` or ``2)`` at the start of a
   line): one value (written once or several times) is taken; several different values with no
   label marking one are "several numbers" (``between 0.2 and 0.3``);
4. a value is ``X%`` (``70%`` → 0.7), ``X percent``, a fraction ``a/b`` or ``a out of b``
   (``7/10`` → 0.7) or a number, which must lie in [0, 1]: a bare ``70`` is "out of range", since
   it could be a percentage or a score out of 100.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

__all__ = ["Reply", "PROBLEMS", "JSON_KEYS", "parse_probability"]

#: every problem a reply can have, in the words the counts are reported with
PROBLEMS = ("empty reply", "no number", "several numbers", "out of range")
#: the keys of a JSON reply read as the probability, in this order of preference
JSON_KEYS = ("probability", "p_success", "probability_of_success", "success_probability", "p", "confidence")

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_VALUE = (r"(?P<x>" + _NUMBER + r")(?:\s*(?:/|out\s+of)\s*(?P<d>\d+(?:\.\d*)?))?"
          r"\s*(?P<pct>%|percent\b)?")
_LABEL = (r"(?:(?:estimated|final|my|overall)\s+)?(?:(?:success\s+probability|probability(?:\s+of\s+"
          r"(?:success|the\s+task\s+succeeding))?|chances?\s+of\s+success|likelihood(?:\s+of\s+success)?)"
          r"|p\s*\(\s*success\s*\))")
_LABELLED = re.compile(_LABEL + r"\s*\**\s*(?:is|would\s+be|of|[:=≈~])?\s*\**\s*"
                       r"(?:about|around|approximately|roughly|~)?\s*\**\s*" + _VALUE, re.IGNORECASE)
_ANY = re.compile(r"(?<![\w.])" + _VALUE, re.IGNORECASE)
_LIST_MARKER = re.compile(r"^[ \t]*\d+[.)](?=\s)", re.MULTILINE)
_JSON_BLOCK = re.compile(r"\{[^{}]*\}")


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


def _number(x: float, denominator: str | None, percent: bool) -> Reply:
    if denominator is not None:
        d = float(denominator)
        x = x / d if d > 0 else math.inf
    if percent:
        x /= 100.0
    if not math.isfinite(x) or not 0.0 <= x <= 1.0:
        return Reply(None, "out of range")
    return Reply(x)


def _value(match: re.Match) -> Reply:
    return _number(float(match.group("x")), match.group("d"), bool(match.group("pct")))


def _from_json(text: str) -> Reply | None:
    """The probability of a JSON object in ``text`` (:data:`JSON_KEYS`), or None when it holds none."""
    stripped = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    for candidate in [stripped] + _JSON_BLOCK.findall(text):
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        keys = {str(k).strip().lower(): v for k, v in obj.items()}
        for key in JSON_KEYS:
            v = keys.get(key)
            if isinstance(v, bool) or v is None:
                continue
            if isinstance(v, (int, float)):
                return _number(float(v), None, False)
            if isinstance(v, str):
                m = re.fullmatch(r"\s*" + _VALUE + r"\s*", v, re.IGNORECASE)
                if m:
                    return _value(m)
    return None


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
    >>> parse_probability('{"probability": 0.4}').value
    0.4
    >>> parse_probability("1. Probability: 3/8\\n2. Expected value: 4/9").value
    0.375
    >>> parse_probability("Hard to tell.").problem
    'no number'
    """
    if not isinstance(text, str) or not text.strip():
        return Reply(None, "empty reply")
    if "{" in text:
        found = _from_json(text)
        if found is not None:
            return found
    labelled = list(_LABELLED.finditer(text))
    if labelled:
        return _value(labelled[-1])
    numbers = [_value(m) for m in _ANY.finditer(_LIST_MARKER.sub(" ", text))]
    if not numbers:
        return Reply(None, "no number")
    if len(set(numbers)) > 1:
        return Reply(None, "several numbers")
    return numbers[0]
