"""How numbers are written on the pages, in the report and in exports: one place, one style.

- :func:`num`: a table cell ("−∞"/"+∞" for infinite values, "—" for a missing one, never "None",
  and never 0.0000 for a value that is not 0: that one gets two significant digits);
- :func:`interval`: "[lo, hi]" or "—"; :func:`pm`: "v ± se";
- :func:`fmt`: a number in running text (significant digits, "n/a" when missing);
- :func:`pct`: k of n as a percentage (never "0%" for a non-zero count).
"""

from __future__ import annotations

import numpy as np

__all__ = ["num", "interval", "pm", "fmt", "pct"]


def num(v, spec: str = ".4f") -> str:
    """A number for a table cell: "−∞"/"+∞" for infinite values, "—" for missing ones (never "None")."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return "—"
    if np.isnan(v):
        return "—"
    if np.isinf(v):
        return "−∞" if v < 0 else "+∞"
    return _fixed(v, spec)


def _fixed(v: float, spec: str) -> str:
    """``format(v, spec)``; where a fixed-point spec would write a non-zero value as zero (an SE
    of 3e-05 as "0.0000", beside a Δ/SE of −7: helper-26), two significant digits instead."""
    text = format(v, spec)
    if v != 0 and spec.endswith("f") and float(text) == 0:
        return format(v, ("+" if spec.startswith("+") else "") + ".2g")
    return text


def interval(lo, hi, spec: str = ".4f") -> str:
    """"[lo, hi]" or "—" when either end is missing or infinite."""
    try:
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        return "—"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "—"
    return f"[{format(lo, spec)}, {format(hi, spec)}]"


def pm(v, se, spec: str = ".3f") -> str:
    """"v ± se", or just v (or "−∞"/"—") when the SE is not available."""
    txt = num(v, spec)
    try:
        ok = np.isfinite(float(v)) and np.isfinite(float(se))
    except (TypeError, ValueError):
        ok = False
    return f"{txt} ± {_fixed(float(se), spec.lstrip('+'))}" if ok else txt


def fmt(v, digits: int = 4) -> str:
    """A number in running text: ``digits`` significant digits, "−∞", or "n/a" when missing."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "−∞" if v == -np.inf else "n/a"
    return f"{v:.{digits}g}"


def pct(k, n) -> str:
    """k/n as a percentage: one decimal below 1% (never "0%" for a non-zero count), else whole."""
    if not n:
        return "n/a"
    v = 100.0 * k / n
    if k and v < 1:
        return f"{v:.1f}%"
    if k and v < 10 and abs(v - round(v)) > 0.05:
        return f"{v:.1f}%"
    return f"{v:.0f}%"


def json_number(x):
    """A finite float for JSON output, else None (JSON has no NaN or infinity)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None
