"""The beta-binomial prior of ``ref:task`` (docs/forecasts.md §1), fitted by marginal likelihood.

Task k has n_k runs with s_k successes (s_k may be fractional: a censored run enters with its q_Z
in exact mode). Its success probability p_k ~ Beta(μκ, (1 − μ)κ), so the runs of a task are
binomial given p_k and the marginal likelihood of (μ, κ) is

    L(μ, κ) = Π_k B(s_k + μκ, n_k − s_k + (1 − μ)κ) / B(μκ, (1 − μ)κ)

(the binomial coefficients do not depend on μ, κ and are left out). :func:`fit_beta_binomial`
maximises log L over logit μ and log κ with bounds; κ at its upper bound means the tasks do not
differ beyond binomial noise (every task's forecast is then the base rate), κ at its lower bound
means a task's other runs decide its forecast almost alone. The posterior mean of a task with
s successes in n runs is (s + μκ) / (n + κ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BetaBinomialFit", "fit_beta_binomial", "log_likelihood", "shrunk_rate", "KAPPA_MIN",
           "KAPPA_MAX", "MU_MIN"]

#: bounds of the prior strength κ (pseudo-runs): below KAPPA_MIN a task of two failed runs would
#: forecast 0 to rounding; above KAPPA_MAX the prior is the base rate to 4 decimals for any log
KAPPA_MIN = 0.05
KAPPA_MAX = 1e5
#: bounds of the prior mean μ (a log whose every labelled run failed fits μ = MU_MIN)
MU_MIN = 1e-6


@dataclass(frozen=True)
class BetaBinomialFit:
    """A fitted Beta(μκ, (1 − μ)κ) prior of task success rates.

    Attributes
    ----------
    mu : float
        Prior mean μ (the base rate the forecasts shrink toward).
    kappa : float
        Prior strength κ, in pseudo-runs.
    n_tasks : int
        Tasks with at least one labelled run in the fit.
    n_runs : float
        Labelled runs in the fit.
    at_bound : str
        ``""``, ``"kappa_max"`` (tasks indistinguishable) or ``"kappa_min"``.
    """

    mu: float
    kappa: float
    n_tasks: int
    n_runs: float
    at_bound: str = ""


def log_likelihood(mu: float, kappa: float, s: np.ndarray, n: np.ndarray) -> float:
    """log L(μ, κ) of the module docstring (without the binomial coefficients).

    Parameters
    ----------
    mu, kappa : float
    s, n : ndarray of float
        Successes and runs per task (0 ≤ s ≤ n).

    Returns
    -------
    float
    """
    from scipy.special import betaln  # (scipy.special is imported where it is used, not with tpsviz)

    a, b = mu * kappa, (1.0 - mu) * kappa
    return float(np.sum(betaln(s + a, n - s + b) - betaln(a, b)))


def _objective(theta: np.ndarray, s: np.ndarray, n: np.ndarray) -> tuple[float, np.ndarray]:
    """−log L and its gradient in θ = (logit μ, log κ)."""
    from scipy.special import betaln, digamma  # (imported where used)

    mu = 1.0 / (1.0 + math.exp(-theta[0]))
    kappa = math.exp(theta[1])
    a, b = mu * kappa, (1.0 - mu) * kappa
    ll = np.sum(betaln(s + a, n - s + b) - betaln(a, b))
    d_ab = digamma(n + kappa) - digamma(kappa)
    da = np.sum(digamma(s + a) - digamma(a) - d_ab)
    db = np.sum(digamma(n - s + b) - digamma(b) - d_ab)
    # a = μκ, b = (1 − μ)κ; dμ/dθ0 = μ(1 − μ), dκ/dθ1 = κ
    g0 = (da - db) * kappa * mu * (1.0 - mu)
    g1 = (da * mu + db * (1.0 - mu)) * kappa
    return -float(ll), -np.array([g0, g1])


def fit_beta_binomial(s, n) -> BetaBinomialFit:
    """The maximum marginal likelihood Beta prior of the task success rates.

    Parameters
    ----------
    s, n : array_like of float
        Successes (fractional allowed) and labelled runs per task; tasks with n = 0 are ignored.

    Returns
    -------
    BetaBinomialFit

    Raises
    ------
    ValueError
        When no task has a labelled run.
    """
    from scipy.optimize import minimize  # (scipy.optimize is heavy: imported where it is used)

    s, n = np.asarray(s, dtype=float), np.asarray(n, dtype=float)
    keep = n > 0
    s, n = s[keep], n[keep]
    if not s.size:
        raise ValueError("the beta-binomial prior needs at least one task with a labelled run")
    lo, hi = math.log(MU_MIN / (1 - MU_MIN)), math.log((1 - MU_MIN) / MU_MIN)
    rate = min(max(float(s.sum() / n.sum()), MU_MIN), 1 - MU_MIN)
    best = None
    for kappa0 in (2.0, 50.0):  # two starts: the likelihood in log κ can be flat on one side
        res = minimize(_objective, np.array([math.log(rate / (1 - rate)), math.log(kappa0)]), args=(s, n),
                       jac=True, method="L-BFGS-B",
                       bounds=[(lo, hi), (math.log(KAPPA_MIN), math.log(KAPPA_MAX))])
        if best is None or res.fun < best.fun - 1e-12:
            best = res
    mu = 1.0 / (1.0 + math.exp(-best.x[0]))
    kappa = math.exp(best.x[1])
    bound = ("kappa_max" if kappa >= KAPPA_MAX * (1 - 1e-6) else
             "kappa_min" if kappa <= KAPPA_MIN * (1 + 1e-6) else "")
    return BetaBinomialFit(mu, kappa, int(s.size), float(n.sum()), bound)


def shrunk_rate(s, n, fit: BetaBinomialFit) -> np.ndarray:
    """The posterior mean (s + μκ) / (n + κ) of each task's success rate.

    Parameters
    ----------
    s, n : array_like of float
        Successes and runs seen (of the task's other runs).
    fit : BetaBinomialFit

    Returns
    -------
    ndarray of float
    """
    s, n = np.asarray(s, dtype=float), np.asarray(n, dtype=float)
    return (s + fit.mu * fit.kappa) / (n + fit.kappa)
