"""Does a real predictor beat the best reference? (docs/forecasts.md §1)

The best reference is the ``ref:*`` predictor with the highest mean TPS under the settings; each
real predictor is compared with it on the same runs by the paired comparison of
:func:`tpsviz.diagnostics.compare.compare`: Δ = mean over runs of TPS_i(predictor) − TPS_i(reference),
SE = sd of the differences / √n, z = Δ/SE. The sentence says "beats" when z is above the two-sided
critical value of the level, "does worse than" when below its negative, else "does not clearly beat".
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from tpsviz.core.data import TrajectoryData
from tpsviz.core.scores import score_unit
from tpsviz.core.tps import ScoreSettings, TPSResult, compute_tps
from tpsviz.diagnostics.compare import compare
from tpsviz.diagnostics.verdict.checks import z_value
from tpsviz.forecasts.references import add_references, is_reference, real_predictors

__all__ = ["best_reference", "versus_best_reference", "versus_words", "versus_own_references"]


def best_reference(result: TPSResult) -> str | None:
    """The reference with the highest mean TPS (the first on a tie), or None without one."""
    refs = [p for p in result.summary.index if is_reference(p)]
    means = result.summary.loc[refs, "tps_mean"].astype(float) if refs else None
    if not refs or not np.isfinite(means.to_numpy()).any():
        return refs[0] if refs else None
    return str(means.fillna(-np.inf).idxmax())


def _fmt(v: float) -> str:
    """Two decimals, or two significant digits below 0.01."""
    return f"{v:.2f}" if abs(v) >= 0.01 or v == 0 else f"{v:.2g}"


def versus_words(rec: dict, unit: str, level: float) -> str:
    """The clause a real predictor's verdict ends with: whether it beats the best reference.

    Parameters
    ----------
    rec : dict
        One value of :func:`versus_best_reference`.
    unit : str
        The score's units (``nats`` …).
    level : float
        Confidence level of the decision.

    Returns
    -------
    str
        E.g. ``"beats ref:task+step by 0.21 ± 0.05 nats per run (Δ/SE = 4.2)"``.
    """
    ref, d, se, z = rec["reference"], rec["delta"], rec["se"], rec["z"]
    if not math.isfinite(d):
        return f"no paired comparison with {ref} (no run scored by both)"
    if not (math.isfinite(se) and math.isfinite(z)):
        return f"Δ against {ref} {d:+.2g} {unit} per run on {rec['n_runs']} run(s), without an SE"
    pm = f"{_fmt(abs(d))} ± {_fmt(se)} {unit} per run"
    if rec["outcome"] == "beats":
        return f"beats {ref} by {pm} (Δ/SE = {z:+.1f})"
    if rec["outcome"] == "worse":
        return f"does worse than {ref} by {pm} (Δ/SE = {z:+.1f})"
    return f"does not clearly beat {ref} (Δ = {'+' if d >= 0 else '-'}{pm}, Δ/SE = {z:+.1f})"


def versus_best_reference(data: TrajectoryData, settings: ScoreSettings, q_z=None,
                          result: TPSResult | None = None) -> dict:
    """Every real predictor against the best reference, paired on the same runs.

    Parameters
    ----------
    data : TrajectoryData
        A log with ``ref:*`` predictors (:func:`tpsviz.forecasts.references.add_references`).
    settings : ScoreSettings
    q_z : array_like or Series, optional
        q_Z estimates in exact mode.
    result : TPSResult, optional
        TPS of the log's predictors under ``settings`` (reused).

    Returns
    -------
    dict
        ``{predictor: {"reference", "delta", "se", "z", "n_runs", "outcome", "words"}}`` with
        ``outcome`` one of ``beats``, ``worse``, ``unclear``, ``undetermined``; empty without a
        reference or a real predictor.
    """
    real = real_predictors(data.predictors)
    if result is None:
        result = compute_tps(data, settings, q_z=q_z)
    best = best_reference(result)
    if best is None or not real:
        return {}
    table = compare(data, settings, baseline=best, predictors=real, n_boot=0, q_z=q_z, metrics=(),
                    result=result)
    crit = z_value(settings.level)
    unit = score_unit(settings.alpha, settings.beta)
    out = {}
    for name in real:
        r = table.loc[name]
        d, se, z = float(r.tps_delta), float(r.tps_se), float(r.tps_z)
        outcome = ("undetermined" if not math.isfinite(z) else
                   "beats" if z > crit else "worse" if z < -crit else "unclear")
        rec = {"reference": best, "delta": d, "se": se, "z": z, "n_runs": int(r.n_runs), "outcome": outcome}
        rec["words"] = versus_words(rec, unit, settings.level)
        out[name] = rec
    return out


def versus_own_references(data: TrajectoryData, labels, sides, settings: ScoreSettings) -> dict:
    """Each side's real predictors against the best of its *own* references, for comparing two logs or
    groups of runs (issue 46: "each side against its own references").

    The references of one side (``ref:*``, :func:`tpsviz.forecasts.references.add_references`) are
    fitted on that side's runs only, so a side is never judged by a yardstick that learnt from the
    other side's outcomes; then :func:`versus_best_reference` pairs each real predictor with the
    best of them on the side's runs.

    Parameters
    ----------
    data : TrajectoryData
        Both sides in one log (references it holds are replaced side by side).
    labels : array_like
        The side of each trajectory, aligned with ``data.trajectories``.
    sides : sequence
        The sides to compare (values of ``labels``).
    settings : ScoreSettings

    Returns
    -------
    dict
        ``{side: {predictor: record of versus_best_reference}}``; a side whose references cannot be
        formed (too few runs, one outcome only): ``{side: {"why": reason}}``; ``{}`` when the log has
        no real predictor.
    """
    if not real_predictors(data.predictors):
        return {}
    lab = np.asarray(labels, dtype=object)
    out = {}
    for side in sides:
        part = _own_predictors(data.subset(lab == side))
        if not real_predictors(part.predictors):
            out[side] = {"why": "no forecast of its own on this side"}
            continue
        try:
            out[side] = versus_best_reference(add_references(part, settings), settings)
        except ValueError as exc:
            out[side] = {"why": str(exc)}
    return out


def _own_predictors(data: TrajectoryData) -> TrajectoryData:
    """The log without the predictors it holds no forecast of (two logs joined: the other log's)."""
    empty = [p for p in data.predictors if not np.isfinite(data.forecasts(p)).any()]
    if not empty:
        return data
    return replace(data, steps=data.steps.drop(columns=[f"conf_{p}" for p in empty]),
                   predictors=[p for p in data.predictors if p not in empty])
