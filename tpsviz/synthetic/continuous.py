"""A synthetic agent with a numeric outcome whose exact predictive distribution is known.

The generative process (one run):

1. A run type k is drawn and observed (the ``run_type`` column); it fixes the drift m_k and the
   spread s_k of the per-step gains. The planned length T is drawn uniformly from 8 … 30 and is
   known up front (the ``planned_steps`` column).
2. Each step s = 1 … T adds a gain ε_s ~ N(m_k, s_k²), observed after the step; S_t = Σ_{s≤t} ε_s.
3. The final reward is Y = S_T + η with an evaluation noise η ~ N(0, τ²), τ = 1, independent of
   everything else.

So after step t the exact predictive distribution of Y given the history H_t is

    Y | H_t ~ N( S_t + (T − t) m_k,  (T − t) s_k² + τ² ),

Gaussian at every step, with σ ≥ τ > 0 at the last step. A step budget (28) stops the runs with
T > 28 after step 28: their outcome is censored (empty), about 9% of the runs; the stop depends
only on T, which is known from the start, so it is non-informative.

Predictors (all built from the exact predictive N(μ_t, σ_t²)):

``truthful``       N(μ_t, σ_t²) (gaussian, the exact predictive);
``overconfident``  N(μ_t, (σ_t / 2)²) (gaussian, too narrow);
``biased``         N(μ_t + σ_t, σ_t²) (gaussian, shifted up by one σ);
``quantiles``      the exact quantiles μ_t + σ_t Φ⁻¹(τ) at τ = 0.05, 0.10, …, 0.95 (quantile form);
``ensemble``       20 seeded draws from N(μ_t, σ_t²) (samples form, a JSON array text).

Numbers are rounded to 6 significant digits, as the demo CSV writes them (``%.6g``); rounding is
monotone, so the quantiles stay non-decreasing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["simulate_continuous", "demo_frames", "RUN_TYPES", "QUANTILE_LEVELS", "BUDGET", "DEFAULT_SEED"]

DEFAULT_SEED = 20260407
#: run type → (share of runs, drift m_k per step, spread s_k per step)
RUN_TYPES = {"steady": (0.4, 0.2, 1.0), "climbing": (0.3, 0.6, 0.7), "erratic": (0.3, -0.1, 1.6)}
QUANTILE_LEVELS = tuple(round(0.05 * k, 2) for k in range(1, 20))
BUDGET = 28
NOISE_SD = 1.0
N_MEMBERS = 20


def _r6(x: np.ndarray) -> np.ndarray:
    """Round to 6 significant digits, exactly as ``%.6g`` writes a number."""
    x = np.asarray(x, dtype=float)
    return np.array([float(f"{v:.6g}") for v in x.ravel()]).reshape(x.shape)


def simulate_continuous(n_runs: int = 400, seed: int = DEFAULT_SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulate a log whose exact predictive distribution is known at every step.

    Parameters
    ----------
    n_runs : int
        Number of runs.
    seed : int
        Seed; the same seed gives the same frames.

    Returns
    -------
    log : DataFrame
        The long log: ``trajectory_id``, ``step``, ``outcome`` (NaN when censored), ``censored``,
        ``run_type``, ``planned_steps``, ``mu_<name>``/``sigma_<name>`` for ``truthful``,
        ``overconfident`` and ``biased``, ``q<level>_quantiles`` and ``samples_ensemble``.
    truth : DataFrame
        Per (run, step): ``trajectory_id``, ``step``, ``run_type``, ``drift``, ``step_sd``,
        ``planned_steps``, ``true_mu``, ``true_sigma`` (the exact predictive), ``outcome_full`` (Y,
        also for censored runs) and ``censored``.
    """
    from scipy.special import ndtri  # (scipy: imported when needed, never at `import tpsviz`)

    if int(n_runs) < 1:
        raise ValueError("n_runs must be >= 1")
    rng = np.random.default_rng(seed)
    names = list(RUN_TYPES)
    share = np.array([RUN_TYPES[k][0] for k in names])
    kind = rng.choice(len(names), size=n_runs, p=share / share.sum())
    length = rng.integers(8, 31, size=n_runs)
    drift = np.array([RUN_TYPES[names[k]][1] for k in kind])
    sd = np.array([RUN_TYPES[names[k]][2] for k in kind])
    run = np.repeat(np.arange(n_runs), length)
    t = np.concatenate([np.arange(1, n + 1) for n in length])
    gains = rng.normal(drift[run], sd[run])
    start = np.r_[0, np.cumsum(length)[:-1]]
    s_t = np.cumsum(gains) - np.repeat(np.r_[0.0, np.cumsum(gains)][start], length)
    y = s_t[start + length - 1] + rng.normal(0.0, NOISE_SD, size=n_runs)
    left = length[run] - t
    mu = s_t + left * drift[run]
    sigma = np.sqrt(left * sd[run] ** 2 + NOISE_SD ** 2)
    z = ndtri(np.array(QUANTILE_LEVELS))
    draws = rng.normal(size=(t.size, N_MEMBERS))
    censored_run = length > BUDGET
    keep = t <= BUDGET
    ids = np.array([f"run{i:04d}" for i in range(n_runs)])
    log = pd.DataFrame({
        "trajectory_id": ids[run], "step": t,
        "outcome": np.where(censored_run[run], np.nan, _r6(y)[run]),
        "censored": censored_run[run],
        "run_type": np.array(names)[kind][run], "planned_steps": length[run],
        "mu_truthful": _r6(mu), "sigma_truthful": _r6(sigma),
        "mu_overconfident": _r6(mu), "sigma_overconfident": _r6(0.5 * sigma),
        "mu_biased": _r6(mu + sigma), "sigma_biased": _r6(sigma),
    })
    q = _r6(mu[:, None] + sigma[:, None] * z[None, :])
    for j, lv in enumerate(QUANTILE_LEVELS):
        log[f"q{lv:g}_quantiles"] = q[:, j]
    members = _r6(mu[:, None] + sigma[:, None] * draws)
    log["samples_ensemble"] = ["[" + ", ".join(f"{v:.6g}" for v in row) + "]" for row in members]
    truth = pd.DataFrame({
        "trajectory_id": ids[run], "step": t, "run_type": np.array(names)[kind][run],
        "drift": drift[run], "step_sd": sd[run], "planned_steps": length[run],
        "true_mu": _r6(mu), "true_sigma": _r6(sigma), "outcome_full": _r6(y)[run],
        "censored": censored_run[run],
    })
    return log[keep].reset_index(drop=True), truth[keep].reset_index(drop=True)


def demo_frames() -> dict[str, pd.DataFrame]:
    """The demo files: ``{"continuous-like.csv": log, "continuous-like_truth.csv": truth}``
    (written with ``float_format="%.6g"``)."""
    log, truth = simulate_continuous(200)  # 200 runs: the 20-member ensembles make every row long
    return {"continuous-like.csv": log, "continuous-like_truth.csv": truth}
