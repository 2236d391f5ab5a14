"""Sentences that never overclaim: every comparison in words is conditioned on the paired Δ/SE it
quotes, at one threshold (:data:`Z_CLEAR`) everywhere (docs/theory.md §8).

The dashboard, the CLI and the demonstrations call these functions instead of writing their own
"clearly better" or "drops from … to …", so a claim and its number always agree, and no sentence
shows NaN, ∞ or "from x to x".
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from tpsviz.core.formatting import num

__all__ = ["Z_CLEAR", "is_clear", "z_text", "change_text", "disagreements"]

#: |Δ/SE| at or above this is called a clear difference (≈ 5% two-sided)
Z_CLEAR = 2.0


def _finite(*vs) -> bool:
    try:
        return all(math.isfinite(float(v)) for v in vs)
    except (TypeError, ValueError):
        return False


def is_clear(z) -> bool:
    """True when |Δ/SE| >= :data:`Z_CLEAR` (a finite z only)."""
    return _finite(z) and abs(float(z)) >= Z_CLEAR


def z_text(z) -> str:
    """'Δ/SE = +2.8', or 'Δ/SE not available' (never NaN or ∞)."""
    return f"Δ/SE = {float(z):+.1f}" if _finite(z) else "Δ/SE not available"


def _pair(a: float, b: float, digits: int) -> tuple[str, str]:
    """a and b with enough digits to tell them apart (up to 6 decimals, then significant digits: two
    different floats differ within 17 of them, so "from x to x" is never written)."""
    for d in range(digits, 7):
        sa, sb = f"{a:.{d}f}", f"{b:.{d}f}"
        if sa != sb:
            return sa, sb
    for d in range(digits, 18):  # (-0.0 against -1e-12: "-0" and "-1e-12")
        sa, sb = f"{a:.{d}g}", f"{b:.{d}g}"
        if sa != sb:
            return sa, sb
    return f"{a:.{digits}f}", f"{b:.{digits}f}"


def change_text(what: str, before, after, se, digits: int = 3, unit: str = "") -> str:
    """How ``what`` moved from ``before`` to ``after``, in words its Δ/SE supports.

    Parameters
    ----------
    what : str
        The quantity ("mean TPS").
    before, after : float
        Its two values (Δ = after − before).
    se : float
        SE of the paired difference.
    digits : int
        Decimals shown (more when the two values would print the same).
    unit : str
        Appended to Δ ("nats per run").

    Returns
    -------
    str
        "mean TPS drops from −8.5 to −9.3 (Δ = −0.800 ± 0.100, Δ/SE = −8.0)", or "mean TPS does
        not change clearly (… Δ/SE = −0.7)", or "mean TPS is not available" — never NaN or
        "from x to x".
    """
    if not _finite(before, after):
        return f"{what} is not available"
    delta = float(after) - float(before)
    z = delta / float(se) if _finite(se) and float(se) > 0 else float("nan")
    u = f" {unit}" if unit else ""
    delta_text = f"Δ = {num(delta, f'+.{digits}f')}" + (f" ± {num(se, f'.{digits}f')}" if _finite(se) else "") + u
    if delta == 0:
        return f"{what} stays at {float(before):.{digits}f} (Δ = 0)"
    sa, sb = _pair(float(before), float(after), digits)
    if is_clear(z):
        verb = "rises" if delta > 0 else "drops"
        return f"{what} {verb} from {sa} to {sb} ({delta_text}, {z_text(z)})"
    return f"{what} does not change clearly ({sa} vs {sb}; {delta_text}, {z_text(z)})"


def disagreements(compared: pd.DataFrame, baseline: str, unit: str, name=str) -> list[str]:
    """Where AUROC and TPS disagree against a baseline, in words conditioned on both Δ/SE.

    Parameters
    ----------
    compared : DataFrame
        :func:`tpsviz.diagnostics.compare.compare` against ``baseline`` with ``auroc`` among its metrics.
    baseline : str
    unit : str
        TPS unit ("nats").
    name : callable
        How a predictor name is written (e.g. escaped for Markdown).

    Returns
    -------
    list of str
        At most 6 sentences, the largest |Δ/SE (TPS)| first. A sentence is written only when
        TPS differs clearly (|Δ/SE| >= Z_CLEAR) and AUROC either does not differ clearly
        ("barely tells them apart") or clearly points the other way ("rank flip").
    """
    out = []
    bl = name(baseline)
    for pred, r in compared.iterrows():
        zt, za, da = r["tps_z"], r.get("auroc_z", np.nan), r.get("auroc_delta", np.nan)
        if not is_clear(zt):
            continue
        nm = name(pred)
        better = "better" if zt > 0 else "worse"
        tps = (f"TPS says {nm} is clearly {better} (Δ = {num(r['tps_delta'], '+.3f')} {unit} per run, "
               f"{z_text(zt)})")
        if _finite(da) and abs(float(da)) < 1e-12:
            text = (f"{nm} vs {bl}: AUROC is identical (both rank the steps the same way), but "
                    f"{tps}. How honest the probabilities are differs; their ranking does not.")
        elif not is_clear(za):
            text = (f"{nm} vs {bl}: AUROC does not tell them apart clearly (Δ = "
                    + (f"{float(da):+.3f}" if _finite(da) else "not available")
                    + f", {z_text(za)}), but {tps}. The ranking of the forecasts is similar; how "
                    "honest the probabilities are is not.")
        elif np.sign(za) != np.sign(zt):
            text = (f"Rank flip: {nm} vs {bl}: AUROC clearly prefers "
                    f"{bl if zt > 0 else nm} (Δ = {float(da):+.3f}, {z_text(za)}), but {tps}. "
                    "AUROC only checks the ordering; TPS also checks that the probabilities are "
                    "right.")
        else:
            continue
        out.append((abs(float(zt)), text))
    out.sort(key=lambda t: -t[0])
    return [s for _, s in out[:6]]
