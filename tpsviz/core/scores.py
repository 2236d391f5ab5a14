"""The beta family of strictly proper binary scoring rules.

Orientation: scores are *rewards*: higher is better, 0 is perfect, every score is <= 0
(Gneiting & Raftery 2007, §3.2). With the Schervish/Buja threshold weight

    ω_{α,β}(c) = c^(α-1) (1-c)^(β-1),    c in (0, 1),  α, β > -1,

the scores are

    S(p, 1) = -∫_p^1 c^(α-1) (1-c)^β dc = -B(1-p; β+1, α)
    S(p, 0) = -∫_0^p c^α (1-c)^(β-1) dc = -B(p;   α+1, β)

with B(x; a, b) the unregularised lower incomplete beta function. Special cases:
(0, 0) is the log score in nats, (1, 1) is -½(p-y)² (half the Brier score),
(-½, -½) is the boosting score -2·sqrt((1-p)/p) for y = 1.

Numerics (see ``_lower_beta``): the complement 1-p is never formed in floating point where
it would lose relative precision; parameters in (-1, 0] use the recurrence in b, and a
parameter within ``_NEAR_ZERO`` of 0 uses a cubic interpolation in b across 0 (exactly 0: a digamma
closed form wherever it does not cancel, full precision down to p = 1e-300). The closed
forms of log and boosting, the block/thread loop and the interpolation tables for large arrays
live in :mod:`tpsviz.core._fast.kernels`; :func:`plain_score` does the same job with plain
whole-array calls (Brier's path, and the oracle of the fast one in the tests).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpsviz.core._fast import kernels as _kernels

__all__ = [
    "PRESETS",
    "score_unit",
    "family_name",
    "ScoreFamily",
    "beta_score",
    "beta_score_pair",
    "plain_score",
    "expected_score",
    "omega",
    "elementary_loss",
    "clip_forecasts",
    "validate_alpha_beta",
]

# |b| below this uses the interpolation branch of _lower_beta (measured: recurrence error
# grows like 1e-16/|b|, interpolation error like |b|^4 * ln(1/(1-x))^4).
_NEAR_ZERO = 1e-4


@dataclass(frozen=True)
class ScoreFamily:
    """A named member of the beta family.

    Parameters
    ----------
    alpha, beta : float
        The family parameters, both > -1.
    name : str
        Short label used in the UI and the CLI.
    description : str
        One sentence for a stakeholder.
    """

    alpha: float
    beta: float
    name: str
    description: str


PRESETS: dict[str, ScoreFamily] = {
    f.name: f
    for f in (
        ScoreFamily(0.0, 0.0, "log", "Logarithmic score in nats: every decision threshold weighted "
                    "by 1/(c(1-c)); punishes confident mistakes without bound."),
        ScoreFamily(1.0, 1.0, "brier", "Half the Brier score, -(p-y)²/2: every decision threshold "
                    "weighted equally; bounded."),
        ScoreFamily(-0.5, -0.5, "boosting", "Boosting score: weights extreme thresholds even more "
                    "than the log score; unbounded."),
        ScoreFamily(2.0, 1.0, "asym-high", "Emphasises high decision thresholds (c ≈ 2/3): cares "
                    "most about whether confident 'will succeed' calls are right."),
        ScoreFamily(1.0, 2.0, "asym-low", "Emphasises low decision thresholds (c ≈ 1/3): cares most "
                    "about catching likely failures."),
    )
}


#: from this many values on, a general (α, β) is scored by the verified table (beta_score)
TABLE_MIN = _kernels.TABLE_MIN

MAX_PARAM = 100.0  # largest α or β accepted: 0.5**(MAX_PARAM+1) stays far above the float minimum


def validate_alpha_beta(alpha: float, beta: float) -> tuple[float, float]:
    """Check the beta-family parameters and return them as floats.

    Raises
    ------
    ValueError
        If α or β is not a finite number greater than -1 and at most ``MAX_PARAM`` (100).
    """
    out = []
    for name, v in (("alpha", alpha), ("beta", beta)):
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number greater than -1, got {v!r}") from None
        if not np.isfinite(f) or f <= -1.0:
            raise ValueError(
                f"{name} = {v!r} is outside the beta family: it must be greater than -1 "
                "(the threshold weight c^(α-1)(1-c)^(β-1) must be integrable against the scores)"
            )
        if f > MAX_PARAM:
            raise ValueError(
                f"{name} = {v!r} is too large: use a value up to {MAX_PARAM:g} (beyond it every "
                "score is a vanishing power of the forecast that floating point cannot tell "
                "from 0)"
            )
        out.append(f)
    return out[0], out[1]


def _betainc_lower(a: float, b: float, x: np.ndarray, xc: np.ndarray) -> np.ndarray:
    """B(x; a, b) for a > 0, b > 0, given x and xc = 1 - x both exactly.

    Uses I_x(a, b) directly below the mean a/(a+b) and 1 - I_{1-x}(b, a) above it, so
    that neither the rounding of 1-x nor a cancellation costs relative precision.
    """
    from scipy import special  # (here, not at import: 0.1 s that the log score never needs)

    full = special.beta(a, b)
    upper = x > a / (a + b)
    out = np.empty_like(x)
    lo = ~upper
    out[lo] = special.betainc(a, b, x[lo])
    out[upper] = 1.0 - special.betainc(b, a, xc[upper])
    return out * full


def _lower_beta_negative(a: float, b: float, x: np.ndarray, xc: np.ndarray) -> np.ndarray:
    """B(x; a, b) for a > 0, b in (-1, 0) and |b| >= _NEAR_ZERO, by the recurrence

    B(x; a, b) = [(a+b) B(x; a, b+1) - x^a (1-x)^b] / b.
    """
    with np.errstate(divide="ignore", over="ignore"):
        head = x**a * xc**b
    return ((a + b) * _betainc_lower(a, b + 1.0, x, xc) - head) / b


def _lower_beta_series(a: float, b: float, x: np.ndarray) -> np.ndarray:
    """B(x; a, b) for x <= 1/2 and b < 1 by the power series

    B(x; a, b) = x^a Σ_k (1-b)_k / k! · x^k / (a+k),

    whose terms are all positive for b < 1 (no cancellation, whatever the sign of b).
    """
    total = np.zeros_like(x)
    coef = np.ones_like(x)  # (1-b)_k / k! · x^k
    for k in range(200):
        term = coef / (a + k)
        total += term
        if k > 5 and np.all(term <= 1e-17 * total):
            break
        coef = coef * ((k + 1.0 - b) / (k + 1.0)) * x
    with np.errstate(under="ignore"):
        return x**a * total


def _lower_beta_b0(a: float, x: np.ndarray, xc: np.ndarray) -> np.ndarray:
    """B(x; a, 0) = ∫_0^x t^(a-1)/(1-t) dt for x > 1/2, given xc = 1 - x exactly.

    The closed form (from ∫_0^1 (1 - t^(a-1))/(1-t) dt = ψ(a) + γ)

        B(x; a, 0) = -ln(xc) - (ψ(a) + γ) - Σ_{k>=1} (-1)^k C(a-1, k) xc^k / k

    keeps full relative precision for any tiny xc, where the interpolation in b loses it like
    ln(1/xc)^4 (1.2e-5 at xc = 1e-300). It is used wherever its terms cancel by less than a
    factor 100 (a rounding error below about 1e-14 of the result); elsewhere (large a and
    moderate xc) the interpolation is used.
    """
    from scipy import special

    digamma = float(special.digamma(a)) + float(np.euler_gamma)
    log_term = -np.log(xc)
    tail = np.zeros_like(xc)
    size = np.zeros_like(xc)  # Σ |terms|, the scale of the rounding error
    coef = np.ones_like(xc)  # (-1)^k C(a-1, k) xc^k
    for k in range(1, 400):
        coef = coef * ((k - a) / k) * xc
        term = coef / k
        tail += term
        size += np.abs(term)
        if np.all(np.abs(term) <= 1e-17 * size + 1e-300):
            break
    out = log_term - digamma - tail
    cancels = ~(log_term + abs(digamma) + size <= 100.0 * np.abs(out))
    if cancels.any():
        h = 2 * _NEAR_ZERO
        out[cancels] = _interpolate_in_b(a, 0.0, (-2 * h, -h, h, 2 * h), x[cancels], xc[cancels])
    return out


def _interpolate_in_b(a: float, b: float, nodes, x: np.ndarray, xc: np.ndarray) -> np.ndarray:
    """Lagrange interpolation of B(x; a, ·) at b through ``nodes`` (none of them 0)."""
    acc = np.zeros_like(x)
    for i, bi in enumerate(nodes):
        vi = _lower_beta_negative(a, bi, x, xc) if bi < 0 else _betainc_lower(a, bi, x, xc)
        li = 1.0
        for j, bj in enumerate(nodes):
            if j != i:
                li *= (b - bj) / (bi - bj)
        acc += li * vi
    return acc


def _lower_beta(a: float, b: float, x: np.ndarray, xc: np.ndarray) -> np.ndarray:
    """Unregularised lower incomplete beta B(x; a, b) = ∫_0^x t^(a-1) (1-t)^(b-1) dt.

    Parameters
    ----------
    a : float
        First parameter, > 0.
    b : float
        Second parameter, > -1 (b <= 0 makes B diverge as x -> 1).
    x, xc : ndarray
        The argument and its complement 1 - x, both given exactly by the caller.

    Notes
    -----
    b >= _NEAR_ZERO: regularised ``betainc`` (Boost). b < _NEAR_ZERO: the positive series for
    x <= 1/2; for x > 1/2 the recurrence in b, or, within _NEAR_ZERO of 0 where the
    recurrence divides by b, a cubic Lagrange interpolation in b through
    {-2h, -h, h, 2h} (B is analytic in b for x < 1).
    """
    if b >= _NEAR_ZERO:
        return _betainc_lower(a, b, x, xc)
    out = np.empty_like(x)
    small = x <= 0.5
    if small.any():
        out[small] = _lower_beta_series(a, b, x[small])
    big = ~small
    if not big.any():
        return out
    xb, xcb = x[big], xc[big]
    if b == 0.0:
        out[big] = _lower_beta_b0(a, xb, xcb)
        return out
    if b <= -_NEAR_ZERO:
        out[big] = _lower_beta_negative(a, b, xb, xcb)
        return out
    h = 2 * _NEAR_ZERO
    out[big] = _interpolate_in_b(a, b, (-2 * h, -h, h, 2 * h), xb, xcb)
    return out


def exact_branch(p: np.ndarray, q: np.ndarray, branch: int, alpha: float, beta: float) -> np.ndarray:
    """S(p, branch) for p in (0, 1), given p and q = 1 - p both exactly (no closed forms).

    S(p, 1) = -B(q; β+1, α) and S(p, 0) = -B(p; α+1, β).
    """
    if branch == 1:
        return -_lower_beta(beta + 1.0, alpha, q, p)
    return -_lower_beta(alpha + 1.0, beta, p, q)


def _edge_values(alpha: float, beta: float) -> tuple[float, float, float, float]:
    """(S(0,1), S(1,1), S(0,0), S(1,0)): the limits at the ends of [0, 1]."""
    from scipy import special  # (scipy: imported when needed, never at `import tpsviz`)

    s01 = -special.beta(beta + 1.0, alpha) if alpha > 0 else -np.inf
    s10 = -special.beta(alpha + 1.0, beta) if beta > 0 else -np.inf
    return s01, 0.0, 0.0, s10


def plain_score(p: np.ndarray, y: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """S(p, y) by plain whole-array calls: the oracle of the fast path of :func:`beta_score`.

    No blocks, threads or tables: numpy closed forms for log, Brier and boosting, and the
    exact evaluator (:func:`exact_branch`, ``scipy.special``) for every other (α, β), with the
    limits at p = 0 and p = 1.

    Parameters
    ----------
    p : ndarray
        Flat forecasts in [0, 1].
    y : ndarray
        Flat outcomes, 0 or 1, the shape of ``p``.
    alpha, beta : float
        Validated beta-family parameters.

    Returns
    -------
    ndarray
        S(p, y), float64, the shape of ``p``.

    Raises
    ------
    ValueError
        If a forecast leaves [0, 1] or an outcome is not 0/1 (``_kernels.BadForecast``,
        ``_kernels.BadOutcome``, as the fast path raises).
    """
    if not ((p >= 0.0) & (p <= 1.0)).all():
        raise _kernels.BadForecast("forecasts must be probabilities in [0, 1]")
    one = y == 1
    if not (one | (y == 0)).all():
        raise _kernels.BadOutcome("outcomes y must be 0 or 1")
    with np.errstate(divide="ignore", invalid="ignore"):
        if (alpha, beta) == (1.0, 1.0):
            return -0.5 * (one - p) ** 2  # one: y as booleans, validated above
        if (alpha, beta) == (0.0, 0.0):
            return np.where(one, np.log(p), np.log1p(-p))
        if (alpha, beta) == (-0.5, -0.5):
            return -2.0 * np.sqrt(np.where(one, (1.0 - p) / p, p / (1.0 - p)))
    s01, s11, s00, s10 = _edge_values(alpha, beta)
    out = np.where(one, np.where(p == 0.0, s01, s11), np.where(p == 0.0, s00, s10))
    inner = (p > 0.0) & (p < 1.0)
    for branch, rows in ((1, inner & one), (0, inner & ~one)):
        out[rows] = exact_branch(p[rows], 1.0 - p[rows], branch, alpha, beta)
    return out


def _flat_inputs(p, y) -> tuple[np.ndarray, np.ndarray, tuple]:
    p = np.asarray(p, dtype=float)
    y = np.asarray(y)
    if p.shape != y.shape:
        p, y = np.broadcast_arrays(p, y)
    shape = p.shape
    return np.ascontiguousarray(p).ravel(), np.ascontiguousarray(y).ravel(), shape


def _score_flat(p: np.ndarray, y: np.ndarray, alpha: float, beta: float,
                table: bool | None = None) -> np.ndarray:
    try:
        if (alpha, beta) == (1.0, 1.0):  # the fast path gained < 1.5× here (bench_machinery)
            return plain_score(p, y, alpha, beta)
        return _kernels.score(p, y, alpha, beta, _edge_values(alpha, beta), exact_branch, table)
    except _kernels.BadForecast:
        bad = ~((p >= 0.0) & (p <= 1.0))
        raise ValueError(
            f"forecasts must be probabilities in [0, 1]; {int(bad.sum())} value(s) are not "
            f"(first: {p[bad][0]!r})"
        ) from None
    except _kernels.BadOutcome:
        raise ValueError("outcomes y must be 0 or 1") from None


def beta_score_pair(p, alpha: float = 0.0, beta: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Both branches of the beta-family score, S(p, 1) and S(p, 0).

    Parameters
    ----------
    p : array_like
        Forecast probabilities of the event y = 1, in [0, 1].
    alpha, beta : float
        Beta-family parameters, > -1.

    Returns
    -------
    s1, s0 : ndarray
        S(p, 1) and S(p, 0), positively oriented (<= 0, 0 is perfect); -inf where the
        score is unbounded at p = 0 or p = 1.
    """
    alpha, beta = validate_alpha_beta(alpha, beta)
    pf, _, shape = _flat_inputs(p, 0)
    s1 = _score_flat(pf, np.ones(pf.size), alpha, beta)
    s0 = _score_flat(pf, np.zeros(pf.size), alpha, beta)
    return s1.reshape(shape), s0.reshape(shape)


def beta_score(p, y, alpha: float = 0.0, beta: float = 0.0, table: bool | None = None) -> np.ndarray:
    """Beta-family score S_{α,β}(p, y), vectorised, positively oriented.

    Parameters
    ----------
    p : array_like
        Forecast probabilities of y = 1, in [0, 1].
    y : array_like
        Binary outcomes (0 or 1), broadcastable against ``p``.
    alpha, beta : float
        Beta-family parameters, both > -1. (0, 0) is the log score in nats, (1, 1) is
        half the Brier score, (-½, -½) the boosting score.
    table : bool, optional
        For a general (α, β): evaluate by the verified interpolation table (True) or exactly
        (False). Default: the table from 20,000 values on. Scoring one log in several calls
        (by engine chunks or row subsets), pass the choice for the whole log so that every row
        gets the value a single call would give.

    Returns
    -------
    ndarray
        S(p, y) <= 0, 0 is perfect; -inf where unbounded (e.g. log score at p = 0, y = 1).

    Raises
    ------
    ValueError
        If α or β <= -1, if p leaves [0, 1], or if y is not 0/1.

    Notes
    -----
    Relative error <= 1e-9 against a 40-digit reference for p in [1e-12, 1 - 1e-12] and
    α, β in (-1, 50]. Large arrays are scored in blocks on two threads; general (α, β) then
    use a verified interpolation table (see :mod:`tpsviz.core._fast.kernels`).

    Examples
    --------
    >>> float(beta_score(0.8, 1, 0, 0))  # log score: ln 0.8
    -0.2231435513142097
    >>> float(beta_score(0.8, 0, 1, 1))  # half Brier: -0.8²/2
    -0.32000000000000006
    """
    alpha, beta = validate_alpha_beta(alpha, beta)
    pf, yf, shape = _flat_inputs(p, y)
    return _score_flat(pf, yf, alpha, beta, table).reshape(shape)


def expected_score(p, q, alpha: float = 0.0, beta: float = 0.0) -> np.ndarray:
    """Expected score q·S(p, 1) + (1-q)·S(p, 0) of forecast p when P(y = 1) = q.

    Used for censored runs (q = q_Z). Terms with zero weight contribute exactly 0, so
    q = 0 with S(p, 1) = -inf gives S(p, 0), not NaN.

    Parameters
    ----------
    p : array_like
        Forecasts in [0, 1].
    q : array_like
        Probabilities in [0, 1], broadcastable against ``p``.
    alpha, beta : float
        Beta-family parameters.

    Returns
    -------
    ndarray
    """
    q = np.asarray(q, dtype=float)
    if not ((q >= 0) & (q <= 1)).all():
        raise ValueError("q must be a probability in [0, 1]")
    s1, s0 = beta_score_pair(p, alpha, beta)
    s1, s0, q = np.broadcast_arrays(s1, s0, q)
    with np.errstate(invalid="ignore"):
        a = np.where(q > 0, q * s1, 0.0)
        b = np.where(q < 1, (1.0 - q) * s0, 0.0)
    return a + b


def omega(c, alpha: float = 0.0, beta: float = 0.0) -> np.ndarray:
    """Threshold weight ω_{α,β}(c) = c^(α-1) (1-c)^(β-1) of the Schervish representation.

    Parameters
    ----------
    c : array_like
        Decision thresholds in (0, 1).
    alpha, beta : float
        Beta-family parameters.

    Returns
    -------
    ndarray
        ω(c) > 0; it says how much each decision threshold counts in the score.
    """
    alpha, beta = validate_alpha_beta(alpha, beta)
    c = np.asarray(c, dtype=float)
    with np.errstate(divide="ignore"):
        return c ** (alpha - 1.0) * (1.0 - c) ** (beta - 1.0)


def elementary_loss(p, y, c) -> np.ndarray:
    """Elementary (cost-weighted misclassification) loss ℓ_c(p, y).

    ℓ_c(p, y) = (1-c)·1{y=1, p<c} + c·1{y=0, p>=c}, so that
    -S_{α,β}(p, y) = ∫ ℓ_c(p, y) ω_{α,β}(c) dc.

    Parameters
    ----------
    p, y : array_like
        Forecasts and 0/1 outcomes (broadcast together).
    c : array_like
        Threshold(s) in (0, 1), broadcast against ``p`` and ``y``.

    Returns
    -------
    ndarray
    """
    p = np.asarray(p, dtype=float)
    y = np.asarray(y, dtype=float)
    c = np.asarray(c, dtype=float)
    return (1.0 - c) * ((y == 1) & (p < c)) + c * ((y == 0) & (p >= c))


def clip_forecasts(p, eps: float) -> tuple[np.ndarray, int]:
    """Clip forecasts to [ε, 1-ε] and count how many were moved.

    Parameters
    ----------
    p : array_like
        Forecasts in [0, 1]; NaN (missing) is kept as NaN and never counted.
    eps : float
        ε in [0, 0.5). ε = 0 leaves every forecast as it is (unbounded scores may be -inf).

    Returns
    -------
    clipped : ndarray
    n_clipped : int
        Number of forecasts that were changed.
    """
    eps = float(eps)
    if not (0.0 <= eps < 0.5):
        raise ValueError(f"eps must be in [0, 0.5), got {eps!r}")
    p = np.asarray(p, dtype=float)
    if eps == 0.0:
        return p, 0
    with np.errstate(invalid="ignore"):
        moved = (p < eps) | (p > 1.0 - eps)
    return np.clip(p, eps, 1.0 - eps), int(moved.sum())


def score_unit(alpha: float, beta: float) -> str:
    """Units of a beta-family score: nats (log), half-Brier units, … ."""
    if alpha == 0 and beta == 0:
        return "nats"
    if alpha == 1 and beta == 1:
        return "half-Brier units"
    if alpha == -0.5 and beta == -0.5:
        return "boosting-score units"
    return f"beta-score units (α={alpha:g}, β={beta:g})"


def family_name(alpha: float, beta: float) -> str:
    """The preset of (α, β) ("log", "brier", …), or "custom"."""
    return next((name for name, fam in PRESETS.items() if fam.alpha == alpha and fam.beta == beta), "custom")

