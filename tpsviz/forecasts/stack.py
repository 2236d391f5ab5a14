"""``combined``: a cross-fitted logistic stack of the replay's methods (``tpsviz forecast --method
combined``; docs/forecasts.md §3).

Every row's features are the logits of the asked methods' forecasts (clipped to
[:data:`CLIP`, 1 − :data:`CLIP`]); scikit-learn's ``LogisticRegression`` (features standardised,
``C`` = :data:`C`) maps them to P(success). The runs are dealt into folds
(:func:`tpsviz.forecasts.references.run_folds`: a seeded permutation, never an outcome); a row gets
its forecast from the stack fitted on the labelled rows of the *other* folds, so no run's forecast
reads its own outcome. The labels are the censoring mode's (:func:`tpsviz.core.censoring.mode_labels`,
as the recalibration's): a run without a label (NaN, complete-case mode) is never fitted on, and a
soft label (exact mode) enters as two weighted rows
(:func:`tpsviz.diagnostics.recalibration.soft_rows`). Below :data:`MIN_RUNS` labelled runs or
:data:`MIN_EACH` of either outcome the stack is refused with the reason; a row lacking one of the
methods' forecasts has none.
"""

from __future__ import annotations

import numpy as np

from tpsviz.diagnostics.recalibration import soft_rows
from tpsviz.forecasts.references import run_folds

__all__ = ["MIN_RUNS", "MIN_EACH", "FOLDS", "CLIP", "C", "features", "refusal", "fit_stack", "combined_forecast"]

#: runs with an outcome label the stack needs, and runs of each outcome among them
MIN_RUNS, MIN_EACH = 20, 5
#: folds of runs
FOLDS = 5
#: forecasts are clipped to [CLIP, 1 − CLIP] before the logit
CLIP = 1e-4
#: the inverse L2 penalty of the logistic regression (scikit-learn's default)
C = 1.0


def features(forecasts: np.ndarray) -> np.ndarray:
    """The logits of the forecasts (rows × methods), clipped to [:data:`CLIP`, 1 − :data:`CLIP`]."""
    f = np.clip(np.asarray(forecasts, dtype=float), CLIP, 1 - CLIP)
    return np.log(f) - np.log1p(-f)


def refusal(run_labels: np.ndarray) -> str | None:
    """Why the stack cannot be fitted on runs with these labels (one per run, NaN: none), or None.

    Parameters
    ----------
    run_labels : ndarray of float

    Returns
    -------
    str or None
    """
    lab = np.asarray(run_labels, dtype=float)
    lab = lab[np.isfinite(lab)]
    wins, losses = int((lab == 1).sum()), int((lab == 0).sum())
    if lab.size < MIN_RUNS or wins < MIN_EACH or losses < MIN_EACH:
        return (f"{lab.size} runs with an outcome ({wins} successes, {losses} failures); the combined stack needs "
                f"at least {MIN_RUNS} runs and {MIN_EACH} of each outcome")
    return None


def fit_stack(x: np.ndarray, y: np.ndarray):
    """The stack fitted on features ``x`` (rows × methods) and labels ``y`` in [0, 1]: a function
    features → P(success).

    Parameters
    ----------
    x : ndarray, shape (n, k)
    y : ndarray, shape (n,)

    Returns
    -------
    callable
    """
    # (scikit-learn: seconds to import, only when a stack is fitted)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=1000))
    rows, outcome, weight = soft_rows(x, y)
    model.fit(rows, outcome, logisticregression__sample_weight=weight)
    return lambda f: model.predict_proba(f)[:, 1]


def combined_forecast(forecasts: np.ndarray, run_of_row: np.ndarray, run_labels: np.ndarray,
                      folds: int = FOLDS, seed: int | None = None) -> tuple[np.ndarray, dict]:
    """The cross-fitted stack's forecast of every row.

    Parameters
    ----------
    forecasts : ndarray, shape (n, k)
        The asked methods' forecasts per row (NaN: missing).
    run_of_row : ndarray of int, shape (n,)
        Each row's run, as an index into ``run_labels``.
    run_labels : ndarray of float
        Each run's label (:func:`tpsviz.core.censoring.mode_labels`; NaN: not fitted on).
    folds : int
    seed : int, optional
        The seed of the folds (default the bootstrap's).

    Returns
    -------
    values : ndarray
        One forecast per row (NaN where a method's forecast is missing, the stack is refused, or a
        fold's training rows hold one outcome only).
    report : dict
        ``refused`` (the reason, or None), ``folds``, ``rows``, ``rows_without_all_methods``,
        ``runs_with_outcome``, ``successes``, ``failures``, ``folds_without_both_outcomes``.
    """
    x = features(forecasts)
    x = x.reshape(len(x), -1)
    runs = np.asarray(run_of_row, dtype=np.int64)
    labels = np.asarray(run_labels, dtype=float)
    finite = labels[np.isfinite(labels)]
    complete = np.isfinite(x).all(axis=1)
    values = np.full(len(x), np.nan)
    report = {"refused": refusal(labels), "folds": int(min(folds, len(labels))), "rows": int(len(x)),
              "rows_without_all_methods": int((~complete).sum()), "runs_with_outcome": int(finite.size),
              "successes": int((finite == 1).sum()), "failures": int((finite == 0).sum()),
              "folds_without_both_outcomes": 0}
    if report["refused"]:
        return values, report
    fold_of_run = run_folds(len(labels), folds, seed)
    fold, y = fold_of_run[runs], labels[runs]
    for f in range(report["folds"]):
        train = complete & (fold != f) & np.isfinite(y)
        test = complete & (fold == f)
        if not test.any():
            continue
        if not (y[train] > 0).any() or not (y[train] < 1).any():
            report["folds_without_both_outcomes"] += 1
            continue
        values[test] = fit_stack(x[train], y[train])(x[test])
    return values, report
