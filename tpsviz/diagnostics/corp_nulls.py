"""The CORP tests of a verdict: miscalibration under consistency resampling, discrimination under
permutation (docs/theory.md §8).

:class:`_Corp` decomposes the half Brier score of fixed forecasts for many label vectors (the null
loops draw hundreds per predictor, so each costs a few passes over the distinct forecasts);
:class:`_SequentialNull` stops a Monte-Carlo null once it can no longer reject (Besag & Clifford);
:func:`corp_tests` runs the MCB, DSC and reversed-DSC nulls of one predictor on shared draws.

Consistency resampling: if F is truthful, P(ℓ = 1 | F_1, …, F_T) = F_T (the martingale property),
so drawing one ℓ* ~ Bernoulli(F_T) per run gives the exact null law of the whole trace with its
outcome; MCB* on these draws is the null distribution of MCB. This keeps the dependence of the
steps of one run, which a draw per step would ignore.
"""

from __future__ import annotations

import numpy as np

from tpsviz.core.cancel import checkpoint
from tpsviz.diagnostics.decomposition import pav_unique

__all__ = ["N_NULL", "H_STOP", "corp_tests"]

#: null replicates of the MCB (consistency) and DSC (permutation) tests
N_NULL = 200


def _pav(means: np.ndarray, weights: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """Weighted increasing isotonic fit of ``means`` (in forecast order), written into ``means``
    (a float64 array of the caller's own, overwritten) and returned; ``scratch``, an array of the
    same size, is overwritten with the kernel's working weights.

    The null distributions call this hundreds of times per predictor, so it uses scikit-learn's
    compiled PAV kernel directly (the public :func:`sklearn.isotonic.isotonic_regression` spends
    ~0.9 ms per call validating its arguments, 5× the fit itself); the public function, used by
    :func:`tpsviz.diagnostics.decomposition.pav_unique`, is the fallback and the test oracle.
    """
    try:
        # (scikit-learn: ~2.5 s to import, only when a model is fitted)
        from sklearn._isotonic import _inplace_contiguous_isotonic_regression as kernel
    except ImportError:  # pragma: no cover - a scikit-learn without the private kernel

        return pav_unique(means, weights)
    np.copyto(scratch, weights)  # the kernel works in place on both
    kernel(means, scratch)
    return means


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Σ a·b without BLAS: OpenBLAS runs a dot product of more than 10,000 values on threads of
    its own, which then spin on the cores the verdict's two threads need (_fast/blas.py)."""
    return float(np.einsum("i,i->", a, b))


class _Corp:
    """CORP decomposition of the half Brier score for many label vectors on fixed forecasts.

    With m distinct forecasts x_j, n_j rows and label sum s_j at x_j, and Σℓ² over the rows, the
    half Brier loss of forecasts c_j (constant at each x_j) is ½ (Σ n_j c_j² − 2 Σ c_j s_j + Σℓ²) / n:
    one pass over the rows (the label sums) and a few over the m values per label vector, which the
    null loops draw hundreds of. Σ n_j x_j² does not depend on the labels and is kept.
    """

    def __init__(self, p: np.ndarray):
        self.xs, self.inv, counts = np.unique(p, return_inverse=True, return_counts=True)
        self.counts = counts.astype(float)
        self.n = float(p.size)
        self.p = p
        self._sq_xs = _dot(self.counts, self.xs * self.xs)  # Σ n_j x_j²
        self._scratch = np.empty_like(self.counts)  # the PAV kernel's weights (one _Corp a thread)

    def _losses(self, lab: np.ndarray, which: str) -> dict:
        """½ mean (c − ℓ)² for c = the forecasts ("f"), their PAV recalibration ("r") and the mean
        label ("u"), only those asked for (the null loops need two of the three)."""
        s1 = np.bincount(self.inv, weights=lab, minlength=self.xs.size)
        sq = _dot(lab, lab)

        def loss(sq_c: float, c_s: float) -> float:  # from Σ n_j c_j² and Σ c_j s_j
            return 0.5 * (sq_c - 2.0 * c_s + sq) / self.n

        r = _pav(s1 / self.counts, self.counts, self._scratch)  # (a fresh array of means)
        out = {"r": loss(_dot(self.counts, r * r), _dot(r, s1))}
        if "f" in which:
            out["f"] = loss(self._sq_xs, _dot(self.xs, s1))
        if "u" in which:
            total = float(s1.sum())
            u = total / self.n  # (n·(u·u), as n_j·(r_j·r_j) above: one forecast value gives DSC 0 exactly)
            out["u"] = loss(self.n * (u * u), u * total)
        return out

    def mcb_dsc(self, lab: np.ndarray) -> tuple[float, float, float]:
        """(MCB, DSC, UNC) of the half Brier score."""
        L = self._losses(lab, "fu")
        return max(L["f"] - L["r"], 0.0), max(L["u"] - L["r"], 0.0), L["u"]

    def mcb(self, lab: np.ndarray) -> float:
        """MCB alone (the consistency-resampling null)."""
        L = self._losses(lab, "f")
        return max(L["f"] - L["r"], 0.0)

    def dsc(self, lab: np.ndarray) -> float:
        """DSC alone (the permutation null)."""
        L = self._losses(lab, "u")
        return max(L["u"] - L["r"], 0.0)


#: a null stops once this many of its draws reach the observed value (and its p-value can no
#: longer fall below the test's threshold): Besag & Clifford's sequential Monte-Carlo test
H_STOP = 10


class _SequentialNull:
    """A Monte-Carlo null drawn one value at a time that stops early when the test cannot reject.

    After ``k`` of ``n`` draws reach the observed value, the p-value of all ``n_null`` draws is at
    least (1 + k) / (1 + n_null). Once that is ≥ ``threshold`` and k ≥ :data:`H_STOP`, no later
    draw can make the test reject, so the null stops (Besag & Clifford 1991) and its p-value is
    max(k / n, (1 + k) / (1 + n_null)): each term is a valid p-value, so their maximum is too, and
    it is never below the threshold, so every decision is the one the full null gives. A null
    that runs to the end gives the usual (1 + k) / (1 + n_null).
    """

    def __init__(self, observed: float, threshold: float, n_null: int):
        self.observed, self.n_null = observed, n_null
        self.tol = 1e-12 * (1.0 + abs(observed))  # a draw equal to the observed value up to rounding counts
        need = int(np.ceil(threshold * (1 + n_null) - 1 - 1e-9))  # k with (1 + k)/(1 + n_null) ≥ threshold
        self.h = max(H_STOP, need)
        self.k = self.n = 0

    @property
    def running(self) -> bool:
        return self.k < self.h and self.n < self.n_null

    def add(self, value: float) -> None:
        self.n += 1
        self.k += bool(value >= self.observed - self.tol)

    def p(self) -> float:
        full = (1 + self.k) / (1 + self.n_null)
        return full if self.n >= self.n_null else max(self.k / self.n, full)


def corp_tests(p, lab, runs, last_p, run_lab, rng, n_null, level: float = 0.95) -> dict:
    """MCB with its consistency-resampling p-value; DSC of F, and of the reversed 1 − F, with their
    permutation p-values (the same permutations).

    Each null stops once it cannot reject at the threshold the verdict's rules use (MCB at
    (1 − level)/3, the DSCs at 1 − level; :class:`_SequentialNull`); while any null runs, every
    draw is made, so a null that runs to the end sees the same draws as without the stopping.

    Parameters
    ----------
    p, lab : ndarray
        Forecast and label ℓ of every labelled step row.
    runs : ndarray of int
        Run code of every row, 0 … k−1.
    last_p, run_lab : ndarray
        Last forecast and label of each run (the consistency draws and the permutations).
    rng : numpy.random.Generator
        Source of the null draws.
    n_null : int
        Replicates of each null at most.
    level : float
        Confidence level of the verdict.

    Returns
    -------
    dict
        ``mcb``, ``mcb_p``, ``dsc``, ``dsc_p``, ``unc``, ``dsc_rev_p``.
    """
    corp, rev = _Corp(p), _Corp(1.0 - p)
    mcb, dsc, unc = corp.mcb_dsc(lab)
    dsc_rev = rev.dsc(lab)
    alpha = 1 - level
    mcb_null = _SequentialNull(mcb, alpha / 3, n_null)  # the thresholds of verdict._decide
    dsc_null, rev_null = _SequentialNull(dsc, alpha, n_null), _SequentialNull(dsc_rev, alpha, n_null)
    for b in range(n_null):
        if not (mcb_null.running or dsc_null.running or rev_null.running):
            break
        if b % 20 == 0:
            checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        star = (rng.random(last_p.size) < last_p).astype(float)
        if mcb_null.running:
            mcb_null.add(corp.mcb(star[runs]))
        perm = rng.permutation(run_lab)[runs]
        if dsc_null.running:
            dsc_null.add(corp.dsc(perm))
        if rev_null.running:
            rev_null.add(rev.dsc(perm))
    return {"mcb": mcb, "mcb_p": mcb_null.p(), "dsc": dsc, "dsc_p": dsc_null.p(),
            "unc": unc, "dsc_rev_p": rev_null.p()}
