"""A synthetic agent whose runs end with one of three labels, with the exact truth (docs/multiclass.md).

Each run has a hidden type K ∈ {strong, mixed, weak} drawn from a known prior π. The type fixes

- the law of the final label L_K over (success, partial, failure), drawn once per run;
- the law e_K of the signal o_t ∈ {good, neutral, bad} the agent observes at every step;
- the hazard h_K with which the run ends after each step (weak runs go on longer).

The label is independent of the signals given the type, so after step t (signals o_1..o_t seen,
the run not yet ended: T >= t)

    P(K | H_t) ∝ π_K Π_{s<=t} e_K(o_s) (1 − h_K)^(t−1),     q_t = Σ_K P(K | H_t) L_K,

the exact label distribution every proper multi-class score rewards. A step budget B censors
the runs with T > B after step B (about 15% of them); their exact continuation law is
q_Z = Σ_K P(K | o_1..o_B, T > B) L_K, with the survival factor (1 − h_K)^B.

Predictors (``conf_<name>__<label>``): ``truthful`` (q_t), ``overconfident`` (q_t² renormalised),
``binary_view`` (all non-success mass on failure, nothing on partial) and ``flat`` (the label
frequencies of the complete runs). Every vector is rounded to 6 decimals with the rounding
remainder on its largest entry, so it still sums to 1 (within 1e-15) once written with
``float_format="%.6g"``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["simulate_multiclass", "demo_frames", "LABELS", "SIGNALS", "TYPES", "PREDICTORS", "DEFAULT_SEED"]

LABELS = ("success", "partial", "failure")
SIGNALS = ("good", "neutral", "bad")
TYPES = ("strong", "mixed", "weak")
PREDICTORS = ("truthful", "overconfident", "binary_view", "flat")
DEFAULT_SEED = 20260513
PRIOR = np.array([0.40, 0.35, 0.25])
#: P(label | type), rows: types, columns: LABELS
LABEL_LAW = np.array([[0.80, 0.15, 0.05],
                      [0.30, 0.50, 0.20],
                      [0.05, 0.25, 0.70]])
#: P(signal | type), columns: good, neutral, bad
EMISSION = np.array([[0.55, 0.30, 0.15],
                     [0.30, 0.40, 0.30],
                     [0.15, 0.30, 0.55]])
#: probability that a run ends after a step, per type
HAZARD = np.array([0.12, 0.09, 0.06])
BUDGET = 20


def _round_vectors(v: np.ndarray) -> np.ndarray:
    """Rows rounded to 6 decimals, the largest entry of each row set to 1 − the others."""
    r = np.round(v, 6)
    top = np.argmax(r, axis=1)
    rows = np.arange(len(r))
    r[rows, top] = 0.0
    r[rows, top] = np.round(1.0 - r.sum(axis=1), 6)
    return r


def _posterior(loglik: np.ndarray) -> np.ndarray:
    """Softmax of log-weights over types (rows)."""
    z = loglik - loglik.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def simulate_multiclass(n_runs: int = 500, seed: int = DEFAULT_SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulate a log of runs that end with one of three labels, with the exact q_t.

    Parameters
    ----------
    n_runs : int
        Number of runs.
    seed : int
        The same seed always gives the same frames.

    Returns
    -------
    log : DataFrame
        Long format (docs/multiclass.md): ``trajectory_id``, ``step``, ``outcome`` (label; empty
        for a censored run), ``censored``, ``signal`` (o_t: good / neutral / bad, metadata the
        reader ignores), ``q_z__<label>`` (censored runs: the exact q_Z) and
        ``conf_<predictor>__<label>`` for the predictors of :data:`PREDICTORS`.
    truth : DataFrame
        Per run: ``trajectory_id``, ``type`` (hidden), ``label`` (the final label, also for a
        censored run), ``censored``, ``length`` (observed steps), ``full_length`` (T, had the
        run not been stopped) and ``q_z__<label>`` (censored runs).
    """
    n_runs = int(n_runs)
    if n_runs < 1:
        raise ValueError("n_runs must be at least 1")
    # the random draws, in this order: types, labels, lengths, then each run's signals
    rng = np.random.default_rng(seed)
    kind = rng.choice(len(TYPES), size=n_runs, p=PRIOR)
    u = rng.random(n_runs)
    label = (u[:, None] > np.cumsum(LABEL_LAW[kind], axis=1)).sum(axis=1)
    full_length = rng.geometric(HAZARD[kind])  # T >= 1: the run ends after step T
    censored = full_length > BUDGET
    length = np.minimum(full_length, BUDGET)
    q, signals, q_z = _signals_and_truth(rng, kind, length, censored)
    ids = [f"mc-{i:05d}" for i in range(n_runs)]
    run = np.repeat(np.arange(n_runs), length)
    outcome = np.array([LABELS[k] for k in label], dtype=object)
    outcome[censored] = None
    log = pd.DataFrame({
        "trajectory_id": np.array(ids, dtype=object)[run],
        "step": np.concatenate([np.arange(1, int(n) + 1) for n in length]).astype(np.int64),
        "outcome": outcome[run],
        "censored": censored[run],
        "signal": np.array(SIGNALS, dtype=object)[np.concatenate(signals)],
    })
    qz_rounded = np.full_like(q_z, np.nan)
    if censored.any():
        qz_rounded[censored] = _round_vectors(q_z[censored])
    for j, lab in enumerate(LABELS):
        log[f"q_z__{lab}"] = qz_rounded[run, j]
    forecasts = _predictors(q, label[~censored])
    for name in PREDICTORS:
        f = _round_vectors(forecasts[name])
        for j, lab in enumerate(LABELS):
            log[f"conf_{name}__{lab}"] = f[:, j]
    truth = pd.DataFrame({
        "trajectory_id": ids,
        "type": np.array(TYPES, dtype=object)[kind],
        "label": np.array(LABELS, dtype=object)[label],
        "censored": censored,
        "length": length.astype(np.int64),
        "full_length": full_length.astype(np.int64),
    })
    for j, lab in enumerate(LABELS):
        truth[f"q_z__{lab}"] = qz_rounded[:, j]
    return log, truth


def _signals_and_truth(rng: np.random.Generator, kind: np.ndarray, length: np.ndarray, censored: np.ndarray):
    """Each run's signals o_1..o_T drawn in turn, with the exact q_t of every step row (stacked)
    and the exact q_Z of every censored run (NaN rows for the others)."""
    log_prior, log_e, log_stay = np.log(PRIOR), np.log(EMISSION), np.log1p(-HAZARD)
    blocks, signals, q_z = [], [], np.full((kind.size, 3), np.nan)
    for i in range(kind.size):
        t_len = int(length[i])
        signal = rng.choice(3, size=t_len, p=EMISSION[kind[i]])
        signals.append(signal)
        t = np.arange(1, t_len + 1)
        # log P(K, o_1..o_t, T >= t) for every step t and type K
        loglik = log_prior + np.cumsum(log_e[:, signal].T, axis=0) + (t - 1)[:, None] * log_stay
        blocks.append(_posterior(loglik) @ LABEL_LAW)
        if censored[i]:  # stopped after step B: the run would have gone on (T > B)
            q_z[i] = _posterior((loglik[-1] + log_stay)[None, :])[0] @ LABEL_LAW
    return np.vstack(blocks), signals, q_z


def _predictors(q: np.ndarray, complete_labels: np.ndarray) -> dict[str, np.ndarray]:
    """The label distributions of :data:`PREDICTORS` on every step row, before rounding
    (``complete_labels``: the final labels of the complete runs, for the base rate)."""
    freq = (np.bincount(complete_labels, minlength=3) / max(complete_labels.size, 1)
            if complete_labels.size else LABEL_LAW.T @ PRIOR)
    sharp = q ** 2
    return {
        "truthful": q,
        "overconfident": sharp / sharp.sum(axis=1, keepdims=True),
        "binary_view": np.column_stack([q[:, 0], np.zeros(len(q)), q[:, 1] + q[:, 2]]),
        "flat": np.tile(freq, (len(q), 1)),
    }


def demo_frames(n_runs: int = 500, seed: int = DEFAULT_SEED) -> dict[str, pd.DataFrame]:
    """The demo files: ``{"multiclass-like.csv": log, "multiclass-like_truth.csv": truth}``."""
    log, truth = simulate_multiclass(n_runs, seed)
    return {"multiclass-like.csv": log, "multiclass-like_truth.csv": truth}
