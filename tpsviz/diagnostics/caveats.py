"""Warnings that keep real data honest, shown wherever the number they qualify is shown.

Each rule is stated in docs/theory.md §8 ("Warnings"). :func:`caveats` returns plain sentences:
one list for the log (too few runs, a schedule that is not proper) and one per predictor
(forecasts clipped, skill not above 0, a recalibration that inverted the ranking of its signal
or was fitted on another censoring mode's population than the one it is scored under).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tpsviz.core.cancel import checkpoint
from tpsviz.diagnostics.calibrate import recalibration_mode, recalibration_source, source_values
from tpsviz.diagnostics.leaderboard import labelled_rows
from tpsviz.diagnostics.metric_bootstrap import paired_metric_difference
from tpsviz.diagnostics.metrics import auroc
from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import ScoreSettings

__all__ = ["Caveats", "caveats", "schedule_caveat", "recalibration_source", "MIN_COMPLETE", "MIN_EACH",
           "Z_FELL"]

#: fewer complete runs than this, or fewer of either outcome than :data:`MIN_EACH`, is a warning
MIN_COMPLETE = 100
MIN_EACH = 20
#: a recalibration whose AUROC fell against its own signal by Δ/SE below this, and by at least
#: MIN_FALL, is flagged: cross-fitted maps cost a signal a little of its ranking (the demo's three
#: raw signals under Platt lose 0.006-0.008 at Δ/SE -2.4 to -2.7), which is no reason to act
Z_FELL = -2.0
MIN_FALL = 0.01


@dataclass
class Caveats:
    """The warnings of one analysis.

    Attributes
    ----------
    log : list of str
        Warnings about the log or the settings (apply to every number).
    predictors : dict of str to list of str
        Warnings about one predictor's numbers.
    """

    log: list = field(default_factory=list)
    predictors: dict = field(default_factory=dict)

    def all(self) -> list:
        """Every warning as one list (predictor warnings start with the predictor's name)."""
        return list(self.log) + [w for ws in self.predictors.values() for w in ws]


def _data_caveats(data: TrajectoryData, settings: ScoreSettings) -> list:
    t = data.trajectories
    comp = t.loc[~t["censored"], "outcome"]
    n, k = len(comp), int(comp.sum())
    out = []
    if n < MIN_COMPLETE or min(k, n - k) < MIN_EACH:
        out.append(f"Few runs with an outcome: {n} complete runs ({k} successes, {n - k} "
                   f"failures). Below {MIN_COMPLETE} runs or {MIN_EACH} of either outcome, "
                   "intervals are wide and rankings can change with a few runs.")
    if (schedule := schedule_caveat(settings)) is not None:
        out.append(schedule)
    return out


def schedule_caveat(settings: ScoreSettings) -> str | None:
    """The warning on a weight schedule that is not strictly proper (None for one that is).

    Parameters
    ----------
    settings : ScoreSettings

    Returns
    -------
    str or None
    """
    v = settings.schedule.verdict
    if v.is_strictly_proper:
        return None
    return (f"The weight schedule {settings.schedule.spec} is {v.status}: {v.reason} "
            "TPS under it does not reward reporting the true probability at every step.")


def recalibration_hint(method: str) -> str:
    """What to try when a cross-fitted recalibration ranks runs worse than its source: fewer folds
    (larger held-out folds, whose base rates vary less: a weak signal's maps are close to those base
    rates and invert the ranking across folds), or the other kind of map, or the source as it is."""
    other = "Platt recalibration (a smooth map)" if method == "isotonic" else "isotonic recalibration"
    return f"Try fewer folds or {other}, or keep the signal as it is."


def _recalibration_caveats(data, settings, name, src, n_boot) -> list:
    labelled, y = labelled_rows(data)
    p, s = data.forecasts(name), source_values(data, src)
    rows = np.flatnonzero(labelled & np.isfinite(p) & np.isfinite(s))
    out = []
    yv = y[rows]
    if rows.size < 2 or yv.min() == yv.max():
        return out
    a = auroc(p[rows], yv)
    hint = recalibration_hint(name.rsplit("@", 1)[-1].split("-")[0])  # (…@isotonic-step: per step)
    if a < 0.5:
        out.append(f"{name}: AUROC {a:.3f} is below 0.5, so the recalibrated forecasts rank runs "
                   f"worse than chance. Cross-fitting a weak signal can invert its ranking. "
                   + hint)
    else:
        d = paired_metric_difference("auroc", p[rows], s[rows], yv,
                                     data.steps["traj"].to_numpy()[rows], n_boot=n_boot,
                                     seed=settings.seed, level=settings.level)
        if np.isfinite(d.z) and d.z < Z_FELL and d.delta <= -MIN_FALL:
            out.append(f"{name}: AUROC fell from {a - d.delta:.3f} ({src}) to {a:.3f} "
                       f"(Δ/SE = {d.z:.1f}): the cross-fitted maps disagree across folds. "
                       + hint)
    fit = recalibration_mode(data, name)
    if data.n_censored and fit and fit["censoring"] != settings.censoring:
        out.append(f"{name}: its map was fitted on {fit['population']} ({fit['censoring']} censoring), but it "
                   f"is scored under {settings.censoring} censoring: it converts the signal into the other "
                   "mode's target, so its calibration is judged against the wrong one; recalibrate under "
                   f"{settings.censoring} censoring.")
    return out


def caveats(data: TrajectoryData, settings: ScoreSettings, summary=None, skill=None,
            predictors: list[str] | None = None, n_boot: int = 200) -> Caveats:
    """The warnings of an analysis (rules in docs/theory.md §8).

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
    summary : DataFrame, optional
        :attr:`TPSResult.summary` of the predictors (for clipped forecasts when ε > 0).
    skill : DataFrame, optional
        :func:`~tpsviz.diagnostics.leaderboard.skill_table` (for skill not above 0).
    predictors : list of str, optional
        Default: every predictor of ``data``.
    n_boot : int
        Replicates of the paired AUROC bootstrap of a recalibration against its signal.

    Returns
    -------
    Caveats
    """
    names = list(data.predictors if predictors is None else predictors)
    out = Caveats(_data_caveats(data, settings), {n: [] for n in names})
    for name in names:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        ws = out.predictors[name]
        if settings.eps > 0 and summary is not None and name in summary.index:
            k = int(summary.loc[name, "n_clipped"])
            if k:
                ws.append(f"{name}: {k:,} forecasts were clipped to [{settings.eps:g}, "
                          f"1 − {settings.eps:g}] before scoring.")
        elif settings.eps == 0:  # nothing is clipped: say how many forecasts are exactly 0 or 1
            p = data.forecasts(name)
            k = int(np.count_nonzero((p == 0.0) | (p == 1.0)))
            if k:
                ws.append(f"{name}: {k:,} forecasts are exactly 0 or 1 and ε = 0: a wrong one "
                          "costs an unbounded penalty under an unbounded score.")
        if summary is not None and name in summary.index and int(summary.loc[name, "n_missing"]):
            k, n = int(summary.loc[name, "n_missing"]), int(summary.loc[name, "n_missing"] + summary.loc[name, "n_steps"])
            ws.append(f"{name}: {k:,} of {n:,} steps have no forecast. TPS sums the steps a predictor forecasts, "
                      "so its TPS is not comparable with a predictor that forecasts every step; its skill is "
                      "(measured against the constant forecast (base rate) on the same steps).")
        if skill is not None and name in skill.index:
            sk = float(skill.loc[name, "skill"])
            if np.isfinite(sk) and sk <= 0:
                shown = f"{sk:+.2f}" if abs(sk) >= 0.01 or sk == 0 else f"{sk:+.1e}"
                ws.append(f"{name}: skill {shown} is not above 0: always saying "
                          f"{100 * float(skill.loc[name, 'ref_rate']):.0f}% scores as well "
                          "or better.")
        src = recalibration_source(data, name)
        if src is not None:
            ws.extend(_recalibration_caveats(data, settings, name, src, n_boot))
    return out
