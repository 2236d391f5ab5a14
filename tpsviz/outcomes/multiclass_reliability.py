"""One-vs-rest reliability of multi-class forecasts (docs/multiclass.md, "Reliability, one vs rest").

For label j, the step rows of complete runs are binned by P_t[j] and the mean forecast in a bin is
compared with the share of those rows whose run ended with label j. Steps of one run share its
label, so the interval of that share resamples whole runs (a run bootstrap).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpsviz.core.inference import DEFAULT_SEED, bootstrap_sums
from tpsviz.io.kinds.multiclass import MulticlassLog
from tpsviz.core.schema import show_id

__all__ = ["reliability_ovr", "ovr_summary"]


def reliability_ovr(log: MulticlassLog, name: str, label: str | None = None, n_bins: int = 10,
                    n_boot: int = 1000, level: float = 0.95, seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """One-vs-rest reliability: per label j, forecasts P_t[j] binned, against how often the run
    ended with label j.

    Complete runs only (a censored run has no observed label); step rows without a forecast are
    left out. Bins are [b/B, (b+1)/B) for b = 0 … B−1, the last one closed. The interval of the
    observed rate is a **run bootstrap**: steps of one run share its label and are dependent, so
    whole runs are resampled (percentile interval of Σ_runs hits / Σ_runs rows in the bin, the same
    replicates for every bin and label; :func:`tpsviz.core.inference.bootstrap_sums`).

    Parameters
    ----------
    log : MulticlassLog
    name : str
        Predictor.
    label : str, optional
        One label (default: every label).
    n_bins : int
        Number of equal-width bins B >= 1.
    n_boot, level, seed
        The run bootstrap (0 replicates: no interval).

    Returns
    -------
    DataFrame
        One row per label and non-empty bin: ``label``, ``bin`` (0 … B−1), ``bin_low``,
        ``bin_high``, ``mean_forecast``, ``observed`` (share of rows whose run ended with the
        label), ``n`` (step rows), ``n_runs``, ``ci_low``, ``ci_high``.
    """
    if label is not None and label not in log.labels:
        raise ValueError(f"no label {show_id(label)} in this log (it has "
                         f"{', '.join(show_id(lab) for lab in log.labels)})")
    n_bins = int(n_bins)
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")
    labels = [label] if label is not None else list(log.labels)
    cols = ["label", "bin", "bin_low", "bin_high", "mean_forecast", "observed", "n", "n_runs", "ci_low",
            "ci_high"]
    P = log.forecasts(name)
    codes = log.steps["traj"].to_numpy()
    y_t = log.outcome_index
    keep = (y_t[codes] >= 0) & ~np.isnan(P[:, 0])
    if not keep.any():
        return pd.DataFrame(columns=cols)
    P, codes = P[keep], codes[keep]
    runs, run_pos = np.unique(codes, return_inverse=True)
    y = y_t[codes]
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    out = []
    for lab in labels:
        j = log.labels.index(lab)
        p = P[:, j]
        hit = (y == j).astype(float)
        b = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, n_bins - 1)
        n_rb = np.zeros((runs.size, n_bins))
        s_rb = np.zeros((runs.size, n_bins))
        np.add.at(n_rb, (run_pos, b), 1.0)
        np.add.at(s_rb, (run_pos, b), hit)
        n_b = n_rb.sum(axis=0)
        lo, hi = np.full(n_bins, np.nan), np.full(n_bins, np.nan)
        if n_boot > 0 and runs.size >= 2:
            sums = bootstrap_sums(np.hstack([s_rb, n_rb]), int(n_boot), seed)
            with np.errstate(invalid="ignore", divide="ignore"):
                reps = sums[:, :n_bins] / sums[:, n_bins:]
            a = (1 - level) / 2
            for k in range(n_bins):
                r = reps[:, k][np.isfinite(reps[:, k])]
                if (n_rb[:, k] > 0).sum() >= 2 and r.size:
                    lo[k], hi[k] = np.quantile(r, [a, 1 - a])
        mf = np.bincount(b, weights=p, minlength=n_bins)
        for k in np.flatnonzero(n_b > 0):
            out.append({"label": lab, "bin": int(k), "bin_low": float(edges[k]), "bin_high": float(edges[k + 1]),
                        "mean_forecast": float(mf[k] / n_b[k]), "observed": float(s_rb[:, k].sum() / n_b[k]),
                        "n": int(n_b[k]), "n_runs": int((n_rb[:, k] > 0).sum()), "ci_low": lo[k],
                        "ci_high": hi[k]})
    return pd.DataFrame(out, columns=cols)


def ovr_summary(table: pd.DataFrame, min_n: int = 20) -> pd.DataFrame:
    """Per label of a :func:`reliability_ovr` table: the one-vs-rest ECE (Σ_bins n |observed − mean
    forecast| / Σ n, over step rows) and the largest gap |observed − mean forecast| over bins with
    at least ``min_n`` rows (NaN when none has).

    Returns
    -------
    DataFrame
        Indexed by label: ``ece``, ``max_gap``, ``max_gap_bin``, ``n``.
    """
    rows = []
    for lab, d in table.groupby("label", sort=False):
        gap = (d["observed"] - d["mean_forecast"]).abs()
        big = d["n"] >= min_n
        k = gap[big].idxmax() if big.any() else None
        rows.append({"label": lab, "ece": float((gap * d["n"]).sum() / d["n"].sum()),
                     "max_gap": float(gap[k]) if k is not None else np.nan,
                     "max_gap_bin": int(d.loc[k, "bin"]) if k is not None else None, "n": int(d["n"].sum())})
    return pd.DataFrame(rows, columns=["label", "ece", "max_gap", "max_gap_bin", "n"]).set_index("label")
