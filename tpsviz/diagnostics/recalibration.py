"""Cross-fitted recalibration: turn a forecast or a raw signal into calibrated probabilities.

Maps (scikit-learn fits):

- ``platt``: logistic regression on logit(F) (probabilities, F clipped to [1e-6, 1−1e-6]) or
  on the raw signal (standardised);
- ``isotonic``: increasing isotonic regression on F or on the raw signal, clipped to [0, 1];
- ``beta``: logistic regression on [ln F, −ln(1−F)] (Kull, Silva Filho & Flach 2017, without
  their sign constraints); probabilities only.

Cross-fitting (docs/theory.md §6): trajectories are split at random (seeded) into k folds; every row
gets its probability from a map fitted on the labelled rows of the *other* folds, so no run is
recalibrated with its own outcome. Rows without a label (NaN) are never used to fit; they are
predicted like every other row, by the map of their own trajectory's fold.

Labels are 0, 1 or a soft label ℓ in (0, 1) (a censored run under exact censoring, ℓ = q_Z): a
soft label enters the logistic fits as a row with outcome 1 and weight ℓ plus a row with outcome 0
and weight 1 − ℓ (the expected log-likelihood), and the isotonic fit as the value ℓ (least squares).
Which label a censored run gets is the censoring mode's (:func:`tpsviz.core.censoring.mode_labels`):
the map is fitted on the population the score then scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tpsviz.core.cancel import checkpoint
from tpsviz.core.inference import DEFAULT_SEED

__all__ = ["METHODS", "RecalibrationResult", "recalibrate"]

METHODS = ("platt", "isotonic", "beta")
_EPS = 1e-6
_MIN_ROWS = 10


@dataclass(frozen=True)
class RecalibrationResult:
    """Cross-fitted probabilities and how they were obtained.

    Attributes
    ----------
    probabilities : ndarray
        One probability in [0, 1] per input row, in input order.
    report : dict
        ``method``, ``signal``, ``direction``, ``folds``, ``seed``, ``per_step``,
        ``n_rows``, ``n_labelled`` (rows with an outcome), ``n_trajectories``, ``n_fit``
        (maps fitted), ``n_fallback`` ((fold, step) cells that used the pooled map because
        the step had < 10 labelled training rows or one class only), ``fallback_steps``
        (steps with at least one such cell) and ``unlabelled`` (how unlabelled rows were
        predicted).
    """

    probabilities: np.ndarray
    report: dict = field(default_factory=dict)


def _features(x: np.ndarray, method: str, signal: str) -> np.ndarray:
    if signal == "raw":
        return x[:, None]
    f = np.clip(x, _EPS, 1 - _EPS)
    if method == "beta":
        return np.column_stack([np.log(f), -np.log1p(-f)])
    return (np.log(f) - np.log1p(-f))[:, None]


def _fit(method: str, feats: np.ndarray, y: np.ndarray):
    """A fitted map: features -> probabilities (``y``: labels in [0, 1], soft ones included)."""
    if method == "isotonic":
        # (scikit-learn: ~2.5 s to import, only when a model is fitted)
        from sklearn.isotonic import IsotonicRegression

        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        iso.fit(feats[:, 0], y)
        return lambda f: iso.predict(f[:, 0])
    # (scikit-learn: ~2.5 s to import, only when a model is fitted)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=1e6, max_iter=1000))
    hard = (y == 0) | (y == 1)
    if hard.all():
        model.fit(feats, y.astype(int))
    else:  # a soft label ℓ: outcome 1 with weight ℓ and outcome 0 with weight 1 − ℓ
        X, lab, w = soft_rows(feats, y)
        model.fit(X, lab, logisticregression__sample_weight=w)
    return lambda f: model.predict_proba(f)[:, 1]


def soft_rows(feats: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of a weighted logistic fit equivalent to soft labels: every row with label ℓ becomes a row
    (outcome 1, weight ℓ) and a row (outcome 0, weight 1 − ℓ); rows of weight 0 are dropped.

    Parameters
    ----------
    feats : ndarray, shape (n, k)
        Features of each row.
    y : ndarray, shape (n,)
        Labels in [0, 1].

    Returns
    -------
    X : ndarray, shape (m, k)
    outcome : ndarray of int, shape (m,)
    weight : ndarray, shape (m,)
        The log-likelihood Σ w·log P(outcome) over these rows is Σ_i [ℓ_i log p_i + (1 − ℓ_i) log(1 − p_i)].
    """
    X = np.vstack([feats, feats])
    outcome = np.r_[np.ones(y.size, dtype=int), np.zeros(y.size, dtype=int)]
    weight = np.r_[y, 1.0 - y]
    keep = weight > 0
    return X[keep], outcome[keep], weight[keep]


def _fittable(y: np.ndarray) -> bool:
    return y.size >= _MIN_ROWS and 0 < y.sum() < y.size


def _validate(x, y, groups, method, signal, direction, folds):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if signal not in ("probability", "raw"):
        raise ValueError(f"signal must be 'probability' or 'raw', got {signal!r}")
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction!r}")
    if signal == "raw" and method == "beta":
        raise ValueError("beta calibration needs probabilities (it uses ln F and ln(1-F)); "
                         "use 'platt' or 'isotonic' for a raw signal")
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, got {folds!r}")
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    g = np.asarray(groups).ravel()
    if not (x.size == y.size == g.size):
        raise ValueError(f"x, y and groups differ in length ({x.size}, {y.size}, {g.size})")
    if not np.isfinite(x).all():
        raise ValueError("the signal x must be finite (drop rows without a forecast first)")
    if signal == "probability" and not ((x >= 0) & (x <= 1)).all():
        raise ValueError("a probability signal must lie in [0, 1]; use signal='raw' otherwise")
    if not (np.isnan(y) | ((y >= 0) & (y <= 1))).all():
        raise ValueError("labels y must be in [0, 1] (0, 1, or a soft label such as q_Z) or NaN (not used)")
    return x, y, g


#: per-step recalibration fits a map for at most this many step positions (the first ones, where
#: every run has rows); later positions share the fold's pooled map (reported as fallbacks). Runs of
#: thousands of steps would otherwise cost folds × steps fits (adversarial pass 4, F13).
MAX_STEP_MAPS = 100


def _rows_by_step(steps: np.ndarray) -> list:
    """[(t, row indices at step t), …] in increasing t, from one sort (not one mask per step)."""
    order = np.argsort(steps, kind="stable")
    uniq, starts = np.unique(steps[order], return_index=True)
    ends = np.r_[starts[1:], order.size]
    return [(t, order[a:b]) for t, a, b in zip(uniq, starts, ends)]


def _assign_folds(g: np.ndarray, labelled: np.ndarray, folds: int, seed: int) -> tuple[np.ndarray, int]:
    """The fold of every row, whole trajectories assigned at random (seeded), and the number of
    trajectories; a ValueError when fewer trajectories than folds have an outcome."""
    codes, traj = np.unique(g, return_inverse=True)
    if np.unique(traj[labelled]).size < folds:
        raise ValueError(f"{folds} folds need at least {folds} trajectories with a label")
    rng = np.random.default_rng(seed)
    fold_of_traj = rng.permutation(codes.size) % folds
    return fold_of_traj[traj], int(codes.size)


def _cross_fit(method: str, feats: np.ndarray, y: np.ndarray, labelled: np.ndarray, fold: np.ndarray, folds: int,
               steps: np.ndarray | None) -> tuple[np.ndarray, dict]:
    """Every row's probability from the map(s) fitted on the labelled rows of the other folds, and the
    count of maps fitted and of per-step fallbacks (:func:`_predict_by_step`)."""
    out = np.full(feats.shape[0], np.nan)
    fits = {"n_fit": 0, "n_fallback": 0, "fallback_steps": set()}
    by_step = _rows_by_step(steps) if steps is not None else []
    for k in range(folds):
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        train, test = labelled & (fold != k), fold == k
        if not test.any():
            continue
        if not (0 < y[train].sum() < train.sum()):
            raise ValueError(f"fold {k}: the training rows have one class only; "
                             "use fewer folds or more data")
        pooled = _fit(method, feats[train], y[train])
        fits["n_fit"] += 1
        if steps is None:
            out[test] = pooled(feats[test])
        else:
            _predict_by_step(method, feats, y, train, test, by_step, pooled, out, fits)
    return out, fits


def _predict_by_step(method: str, feats: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray,
                     by_step: list, pooled, out: np.ndarray, fits: dict) -> None:
    """One fold's held-out rows (``test``) predicted by a map per step, written into ``out``.

    Each of the first :data:`MAX_STEP_MAPS` step positions with enough labelled training rows of
    both classes gets a map fitted on them; the other steps' rows are predicted by the fold's
    ``pooled`` map (counted in ``fits``: ``n_fit``, ``n_fallback`` and ``fallback_steps``).
    """
    pooled_rows = []
    for i, (t, idx) in enumerate(by_step):
        if i % 20 == 0:
            checkpoint()
        rows, tr = idx[test[idx]], idx[train[idx]]
        if rows.size == 0:
            continue
        if i < MAX_STEP_MAPS and _fittable(y[tr]):
            out[rows] = _fit(method, feats[tr], y[tr])(feats[rows])
            fits["n_fit"] += 1
        else:  # too few rows of one step, or a step beyond the first MAX_STEP_MAPS: the pooled map
            pooled_rows.append(rows)
            fits["n_fallback"] += 1
            fits["fallback_steps"].add(t.item() if hasattr(t, "item") else t)
    if pooled_rows:  # one call for all of them (a call per step costs ms each)
        rows = np.concatenate(pooled_rows)
        out[rows] = pooled(feats[rows])


def recalibrate(x, y, groups, method: str = "platt", folds: int = 5, per_step=None,
                seed: int = DEFAULT_SEED, direction: int = 1,
                signal: str = "probability") -> RecalibrationResult:
    """Cross-fitted recalibration of a forecast or raw signal, folds grouped by trajectory.

    Parameters
    ----------
    x : array_like
        The signal per row: probabilities in [0, 1] (``signal="probability"``) or any real
        value (``signal="raw"``, e.g. a log-probability or an entropy).
    y : array_like
        Label per row: 0, 1, a soft label in (0, 1) (a censored run's q_Z under exact censoring), or
        NaN where the row is not fitted on (e.g. censored runs in complete-case mode).
    groups : array_like
        Trajectory id of each row (any hashable values; rows of a run share one id).
    method : {"platt", "isotonic", "beta"}
        The map (see the module docstring). "beta" is only for probabilities.
    folds : int
        Number of cross-fitting folds k >= 2.
    per_step : array_like, optional
        Step index per row: fit one map per step (and fold) for the first
        :data:`MAX_STEP_MAPS` step positions; later positions, and steps with fewer than 10
        labelled training rows or only one class, use the pooled map of that fold (counted in
        ``n_fallback``, listed in ``fallback_steps``).
    seed : int
        Seed of the random assignment of trajectories to folds.
    direction : {+1, -1}
        -1 when higher x means *less* likely success (an uncertainty): the map is then fitted
        on −x (raw) or 1 − x (probability), so "increasing" means "more confident".
    signal : {"probability", "raw"}
        What ``x`` is.

    Returns
    -------
    RecalibrationResult

    Raises
    ------
    ValueError
        Bad input, fewer labelled trajectories than folds, or a training set with one
        class only.
    """
    x, y, g = _validate(x, y, groups, method, signal, direction, folds)
    if direction == -1:
        x = -x if signal == "raw" else 1.0 - x
    labelled = ~np.isnan(y)
    fold, n_traj = _assign_folds(g, labelled, folds, seed)
    feats = _features(x, method, signal)
    steps = None if per_step is None else np.asarray(per_step).ravel()
    if steps is not None and steps.size != x.size:
        raise ValueError(f"per_step has {steps.size} values for {x.size} rows")
    out, fits = _cross_fit(method, feats, y, labelled, fold, folds, steps)
    report = {
        "method": method, "signal": signal, "direction": direction, "folds": int(folds),
        "seed": seed, "per_step": steps is not None, "n_rows": int(x.size),
        "n_labelled": int(labelled.sum()), "n_trajectories": n_traj,
        "n_fit": fits["n_fit"], "n_fallback": fits["n_fallback"], "fallback_steps": sorted(fits["fallback_steps"]),
        "unlabelled": "predicted by the map of their own fold (fitted on the other folds)",
    }
    return RecalibrationResult(np.clip(out, 0.0, 1.0), report)
