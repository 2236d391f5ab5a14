"""Shared input checks for the array-level diagnostics."""

from __future__ import annotations

import numpy as np


def forecasts_and_outcomes(p, y, purpose: str = "to evaluate") -> tuple[np.ndarray, np.ndarray]:
    """Flatten and check forecasts p in [0, 1] and outcomes y in {0, 1}.

    Parameters
    ----------
    p, y : array_like
        Forecasts and outcomes of the same length.
    purpose : str
        Completes the message "no rows …" when the input is empty.

    Raises
    ------
    ValueError
        On a length mismatch, empty input, a forecast outside [0, 1] or NaN, or an outcome
        other than 0/1 (censored rows must be removed before).
    """
    p = np.asarray(p, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if p.shape != y.shape:
        raise ValueError(f"forecasts and outcomes differ in length ({p.size} vs {y.size})")
    if p.size == 0:
        raise ValueError(f"no rows {purpose}")
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError("forecasts must be probabilities in [0, 1] (no NaN)")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("outcomes y must be 0 or 1 (censored rows must be removed first)")
    return p, y
