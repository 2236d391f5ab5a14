"""The beta-family score and its divergence by quadrature of their integral representations
(docs/theory.md §2), independent of tpsviz.core.scores: the oracle of the property tests."""

from __future__ import annotations

import functools
import math

from scipy import integrate, special


def _upper_integral(x: float, a: float, b: float) -> float:
    """∫_x^1 c^(a−1) (1−c)^b dc for x in (0, ½), a, b > −1.

    On [½, 1] QUADPACK's algebraic weight takes the end singularity (1 − c)^b; on [x, ½] the
    substitution c = e^u makes c^(a−1) dc = e^(a·u) du smooth, so a forecast of 1e-300 is integrated
    as accurately as one of 0.3."""
    top, _ = integrate.quad(lambda c: c ** (a - 1.0), 0.5, 1.0, weight="alg", wvar=(0.0, b),
                            epsabs=0.0, epsrel=1e-13, limit=200)
    low, _ = integrate.quad(lambda u: math.exp(a * u) * (1.0 - math.exp(u)) ** b, math.log(x), math.log(0.5),
                            epsabs=0.0, epsrel=1e-13, limit=400)
    return top + low


def _lower_integral(x: float, a: float, b: float) -> float:
    """∫_0^x c^a (1−c)^(b−1) dc for x in (0, ½]: the algebraic weight takes c^a, the rest is smooth."""
    val, _ = integrate.quad(lambda c: (1.0 - c) ** (b - 1.0), 0.0, x, weight="alg", wvar=(a, 0.0),
                            epsabs=0.0, epsrel=1e-13, limit=200)
    return val


@functools.lru_cache(maxsize=None)
def s_quad(p: float, y: int, a: float, b: float) -> float:
    """S(p, y) = −∫_p^1 c^(α−1)(1−c)^β dc (y = 1) or −∫_0^p c^α(1−c)^(β−1) dc (y = 0), p in [0, 1].

    Above ½ each is integrated in d = 1 − c from 0 to 1 − p (exact for p ≥ ½), so neither loses the relative precision of a forecast near 0 or 1. At p = 0 or p = 1 the whole
    integral is the complete beta function, or −∞ where it diverges."""
    p = float(p)
    if (y == 1 and p == 1.0) or (y == 0 and p == 0.0):
        return 0.0
    if y == 1 and p == 0.0:
        return -float(special.beta(b + 1.0, a)) if a > 0 else float("-inf")
    if y == 0 and p == 1.0:
        return -float(special.beta(a + 1.0, b)) if b > 0 else float("-inf")
    if y == 1:
        return -(_upper_integral(p, a, b) if p < 0.5 else _lower_integral(1.0 - p, b, a))
    return -(_lower_integral(p, a, b) if p <= 0.5 else _upper_integral(1.0 - p, b, a))


@functools.lru_cache(maxsize=None)
def divergence(p: float, tau: float, a: float, b: float) -> float:
    """E_τ[S(τ, Y)] − E_τ[S(p, Y)] = ∫ between p and τ of |τ − c| ω(c) dc (Schervish form)."""
    lo, hi = min(p, tau), max(p, tau)
    if lo == hi:
        return 0.0
    val, _ = integrate.quad(lambda c: abs(tau - c) * c ** (a - 1.0) * (1.0 - c) ** (b - 1.0), lo, hi,
                            epsabs=0.0, epsrel=1e-11, limit=200)
    return val
