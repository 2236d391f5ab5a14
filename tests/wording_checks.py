"""Checks of a sentence by what it says, not by how it says it (issue 48, point 6).

A test of a shown sentence checks its label (a short word: "optimistic", a column's name, an
option) and its numbers (parsed, and compared with an independent computation or with the value the
JSON or the table carries), so that rewording a sentence does not break a test and a wrong number
still does. Import as ``from tests.wording_checks import ...`` (the repository root is on the path).
"""

from __future__ import annotations

import math
import re

# A number as the project writes one: thousands separated by commas (1,000), a decimal point, an
# optional exponent, a sign only where it cannot be a hyphen (never inside "part-0" or "v2").
NUMBER = re.compile(r"(?<![\w.\-])(?P<sign>[-−+]?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?"
                    r"(?:[eE](?P<exp>[-+]?\d+))?(?![\d])")


def _tokens(text: str) -> list[tuple[float, float]]:
    """Each number of ``text`` with half the unit of its last printed digit (how far the value it
    stands for may be from it, printed rounded)."""
    out = []
    for m in NUMBER.finditer(text):
        frac = m.group("frac") or ""
        exp = int(m.group("exp") or 0)
        value = float(m.group("int").replace(",", "") + ("." + frac if frac else "") + f"e{exp}")
        if m.group("sign") in ("-", "−"):
            value = -value
        out.append((value, 0.5 * 10.0 ** (exp - len(frac))))
    return out


def numbers_in(text: str) -> list[float]:
    """The numbers of ``text``, in order ("221 of the 450 runs (49%)" → [221.0, 450.0, 49.0])."""
    return [value for value, _ in _tokens(text)]


def _shown(value: float, token: tuple[float, float], rel: float) -> bool:
    printed, half_unit = token
    return math.isclose(value, printed, rel_tol=rel, abs_tol=half_unit * (1 + 1e-9))


def says_numbers(text: str, numbers, *, rel: float = 0.0) -> bool:
    """Whether every one of ``numbers`` is printed in ``text`` (each printed number used once): a
    printed number stands for a value when it is that value rounded to the digits printed (or
    within ``rel`` of it)."""
    left = _tokens(text)
    for want in numbers:
        hit = next((i for i, tok in enumerate(left) if _shown(float(want), tok, rel)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


# where a sentence ends: a full stop (never a decimal point: a space follows) before a capital
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*])")


def sentences_with(text: str, label: str) -> list[str]:
    """The sentences of ``text`` (each line cut at its full stops) that hold ``label``."""
    return [part for line in text.splitlines() for part in SENTENCE_END.split(line) if label in part]


def assert_says(text: str, label: str, *numbers, rel: float = 0.0) -> str:
    """Assert that a sentence of ``text`` holds ``label`` and prints every one of ``numbers`` (each
    a value, matched as printed rounded, see ``says_numbers``); return that sentence.

    The numbers are looked for in the sentence of the label, never anywhere on the page, so a
    number shown elsewhere cannot make a wrong sentence pass.
    """
    lines = sentences_with(text, label)
    assert lines, f"no sentence says {label!r} in:\n{text[:3000]}"
    for line in lines:
        if says_numbers(line, numbers, rel=rel):
            return line
    raise AssertionError(f"no sentence with {label!r} prints {list(numbers)}: {lines}")
