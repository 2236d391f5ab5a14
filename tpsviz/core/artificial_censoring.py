"""The artificial-censoring check (docs/theory.md §4): complete runs cut after a budget B and scored
as censored, against the closed-form decomposition of the simple censored score.

    TPS_full - TPS_cen,simple(B) = Σ_{t<=B} w_t Y [S(F_t,1) - S(F_t,0)] + Σ_{t>B} w_t S(F_t,Y)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.scores import beta_score
from tpsviz.core.tps import ScoreSettings, TPSResult, compute_tps, step_weights

__all__ = ["artificial_censoring_check"]

COLUMNS = ["trajectory_id", "predictor", "tps_full", "tps_cen_simple", "direct", "closed_form", "abs_error"]


def _censor_at(data: TrajectoryData, keep_t: np.ndarray, budget: int) -> TrajectoryData:
    """The runs selected by ``keep_t``, cut after position ``budget`` and marked censored."""
    sub = data.subset(keep_t)
    steps = sub.steps[sub.steps["t"].to_numpy() <= budget].reset_index(drop=True)
    traj = sub.trajectories.copy()
    traj["outcome"] = np.nan
    traj["censored"] = True
    traj["q_z"] = np.nan
    traj["length"] = np.bincount(steps["traj"].to_numpy(), minlength=len(traj))
    traj["last_step"] = steps.groupby("traj")["step"].max().reindex(range(len(traj))).to_numpy()
    return TrajectoryData(steps, traj, list(sub.predictors), dict(sub.signals), sub.source, [])


def artificial_censoring_check(
    data: TrajectoryData, budget: int, settings: ScoreSettings | None = None,
    predictors: list[str] | None = None,
) -> pd.DataFrame:
    """Censor complete runs longer than ``budget`` after position B and check the closed-form
    decomposition of the simple censored score (docs/theory.md §4):

        TPS_full - TPS_cen,simple(B) = Σ_{t<=B} w_t Y [S(F_t,1) - S(F_t,0)] + Σ_{t>B} w_t S(F_t,Y)

    The left side is computed directly: the full runs and the artificially censored copies
    are each scored with :func:`compute_tps`. The right side is the closed form from per-step
    scores. They agree to floating-point precision.

    Parameters
    ----------
    data : TrajectoryData
    budget : int
        Artificial step budget B >= 1 (position within the run).
    settings : ScoreSettings, optional
        The schedule must fix w_t by t alone (not ``per-length`` or ``endpoint``, whose
        weights change when a run is cut).
    predictors : list of str, optional

    Returns
    -------
    DataFrame
        Per (trajectory, predictor): ``trajectory_id``, ``predictor``, ``tps_full``,
        ``tps_cen_simple``, ``direct``, ``closed_form``, ``abs_error``. Empty when no complete
        run is longer than B.
    """
    settings = settings or ScoreSettings()
    budget = int(budget)
    if budget < 1:
        raise ValueError("the artificial budget B must be an integer >= 1")
    if settings.schedule.name in ("per-length", "endpoint"):
        raise ValueError(f"the artificial-censoring check needs weights fixed by the step index; "
                         f"schedule {settings.schedule.spec!r} depends on the run's length")
    traj = data.trajectories
    keep = (~traj["censored"].to_numpy()) & (traj["length"].to_numpy() > budget)
    if not keep.any():
        return pd.DataFrame(columns=COLUMNS)
    full_data = data.subset(keep)
    quiet = replace(settings, n_boot=0)
    full = compute_tps(full_data, replace(quiet, censoring="complete"), predictors)
    cen = compute_tps(_censor_at(data, keep, budget), replace(quiet, censoring="simple"), predictors)
    w = step_weights(full_data, settings.schedule)
    return pd.concat([_compare(full_data, w, full, cen, name, budget, settings) for name in full.summary.index],
                     ignore_index=True)


def _closed_form(full_data: TrajectoryData, w: np.ndarray, pc: np.ndarray, budget: int,
                 settings: ScoreSettings) -> np.ndarray:
    """Per run: the right side of the decomposition from the weights ``w`` and clipped forecasts
    ``pc`` of every row."""
    codes = full_data.steps["traj"].to_numpy()
    t = full_data.steps["t"].to_numpy()
    y = full_data.trajectories["outcome"].to_numpy(dtype=float)[codes]
    n = full_data.n_trajectories
    ok = ~np.isnan(pc)
    s1 = np.zeros(pc.shape)
    s0 = np.zeros(pc.shape)
    s1[ok] = beta_score(pc[ok], 1, settings.alpha, settings.beta)
    s0[ok] = beta_score(pc[ok], 0, settings.alpha, settings.beta)
    early, late = ok & (t <= budget), ok & (t > budget)
    return (np.bincount(codes, weights=np.where(early, w * y * (s1 - s0), 0.0), minlength=n)
            + np.bincount(codes, weights=np.where(late, w * np.where(y == 1, s1, s0), 0.0), minlength=n))


def _compare(full_data: TrajectoryData, w: np.ndarray, full: TPSResult, cen: TPSResult, name: str, budget: int,
             settings: ScoreSettings) -> pd.DataFrame:
    """One predictor's rows of :func:`artificial_censoring_check`."""
    closed = _closed_form(full_data, w, full.row_scores(name)[1], budget, settings)
    f = full.per_trajectory[full.per_trajectory["predictor"] == name].set_index("traj")["tps"]
    c = cen.per_trajectory[cen.per_trajectory["predictor"] == name].set_index("traj")["tps"]
    both = f.index.intersection(c.index)
    direct = f[both] - c[both]
    return pd.DataFrame({
        "trajectory_id": full_data.trajectories["trajectory_id"].to_numpy()[both],
        "predictor": name, "tps_full": f[both].to_numpy(), "tps_cen_simple": c[both].to_numpy(),
        "direct": direct.to_numpy(), "closed_form": closed[both],
        "abs_error": np.abs(direct.to_numpy() - closed[both]),
    })
