"""The validated trajectory log every analysis works on (:class:`TrajectoryData`), and what every log
container shares whatever its outcome kind (:class:`RunLog`: binary here, multi-class in
``tpsviz.io.kinds.multiclass``, continuous in ``tpsviz.io.kinds.continuous``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["RunLog", "TrajectoryData"]


class RunLog:
    """The base of every log container: one row per run in ``trajectories`` (with a boolean
    ``censored`` column), one row per (run, step) in ``steps``, and the counts of both."""

    trajectories: pd.DataFrame
    steps: pd.DataFrame

    @property
    def n_runs(self) -> int:
        """Number of runs (trajectories)."""
        return len(self.trajectories)

    @property
    def n_trajectories(self) -> int:
        """Number of trajectories (:attr:`n_runs`)."""
        return len(self.trajectories)

    @property
    def n_steps(self) -> int:
        """Number of (run, step) rows."""
        return len(self.steps)

    @property
    def n_censored(self) -> int:
        """Number of censored runs (cut off before the outcome was known)."""
        return int(self.trajectories["censored"].sum())


@dataclass
class TrajectoryData(RunLog):
    """A validated trajectory log, sorted and typed once.

    Attributes
    ----------
    steps : DataFrame
        One row per (trajectory, step), sorted by trajectory then step. Columns:
        ``trajectory_id`` (str), ``step`` (int), ``t`` (1-based position within the run),
        ``traj`` (int code = row of ``trajectories``), ``conf_<name>`` (float in [0, 1], NaN
        = missing forecast), ``raw_<name>`` / ``unc_<name>`` (float), ``weight`` if given,
        and step-level metadata.
    trajectories : DataFrame
        One row per trajectory, in code order. Columns: ``trajectory_id``, ``outcome``
        (1.0 / 0.0 / NaN), ``censored`` (bool), ``q_z`` (float, NaN = not given),
        ``length`` (observed number of steps T, or the stopping step count Z),
        ``last_step``, ``file_order`` (the run's rank by its first row in the file, when read from a
        table) and trajectory-level metadata.
    predictors : list of str
        Names of the ``conf_<name>`` predictors.
    signals : dict
        ``{"raw_<name>": +1, "unc_<name>": -1}``: non-probability signals and their direction.
    source : str
        Where the data came from.
    notes : list of str
        Things the user should know (missing forecasts, filled outcomes, ignored q_z, …).
    reading : dict
        How the file was read: ``format`` and, for harness logs, the treatment table of
        termination reasons with counts, what was dropped and where forecasts come from
        (see :func:`tpsviz.io.harness.runs.runs_to_frame`).
    """

    steps: pd.DataFrame
    trajectories: pd.DataFrame
    predictors: list[str]
    signals: dict[str, int] = field(default_factory=dict)
    source: str = "<memory>"
    notes: list[str] = field(default_factory=list)
    reading: dict = field(default_factory=dict)

    @property
    def trajectory_ids(self) -> pd.Categorical:
        """Trajectory ids in code order, as a categorical (cheap to select from; cached)."""
        cached = self.__dict__.get("_ids")
        if cached is None or len(cached) != len(self.trajectories):
            ids = self.trajectories["trajectory_id"]
            cached = pd.Categorical.from_codes(np.arange(len(ids)), categories=pd.Index(ids))
            self.__dict__["_ids"] = cached
        return cached

    @property
    def row_outcome(self) -> np.ndarray:
        """The run's outcome Y (1.0 / 0.0 / NaN if censored) for every step row (cached)."""
        cached = self.__dict__.get("_row_outcome")
        if cached is None or cached.shape[0] != len(self.steps):
            cached = self.trajectories["outcome"].to_numpy(dtype=float)[
                self.steps["traj"].to_numpy()]
            cached.setflags(write=False)
            self.__dict__["_row_outcome"] = cached
        return cached

    @property
    def metadata_columns(self) -> list[str]:
        """Trajectory-level metadata columns (for filters and grouping)."""
        fixed = {"trajectory_id", "outcome", "censored", "q_z", "length", "last_step", "file_order"}
        return [c for c in self.trajectories.columns if c not in fixed]

    @property
    def step_metadata_columns(self) -> list[str]:
        """Step-level metadata columns: not ids, positions, forecasts, signals or weights (values that
        vary within a run, e.g. a timestamp per step)."""
        core = {"trajectory_id", "step", "traj", "t", "weight"}
        return [c for c in self.steps.columns if c not in core and not str(c).startswith(("conf_", "raw_", "unc_"))]

    def forecasts(self, name: str) -> np.ndarray:
        """F_t of predictor ``name`` for every step row (NaN where missing)."""
        return self.steps[f"conf_{name}"].to_numpy(dtype=float)

    def with_predictor(self, name: str, values: np.ndarray, note: str | None = None) -> "TrajectoryData":
        """A copy with one more predictor ``conf_<name>`` (e.g. a recalibrated one)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (self.n_steps,):
            raise ValueError(f"predictor {name!r} needs one value per step row ({self.n_steps})")
        if np.any((values < 0) | (values > 1)):
            raise ValueError(f"predictor {name!r} has values outside [0, 1]")
        steps = self.steps.copy(deep=False)  # copy-on-write: the original frame is not touched
        steps[f"conf_{name}"] = values
        preds = self.predictors + ([name] if name not in self.predictors else [])
        notes = self.notes + ([note] if note else [])
        return TrajectoryData(steps, self.trajectories, preds, dict(self.signals), self.source, notes,
                              self.reading)

    def subset(self, keep: np.ndarray) -> "TrajectoryData":
        """A copy restricted to the trajectories where the boolean array ``keep`` is True."""
        keep = np.asarray(keep, dtype=bool)
        if keep.all():
            return self
        trajs = self.trajectories[keep].reset_index(drop=True)
        new_code = np.full(len(keep), -1)
        new_code[keep] = np.arange(int(keep.sum()))
        rows = keep[self.steps["traj"].to_numpy()]
        steps = self.steps[rows].reset_index(drop=True)
        steps["traj"] = new_code[steps["traj"].to_numpy()]
        return TrajectoryData(steps, trajs, list(self.predictors), dict(self.signals), self.source,
                              list(self.notes), self.reading)

