"""The reference forecasters are leak-free on every generated log (issue 48 point 6; docs/forecasts.md §1).

``ref:step``, ``ref:task`` and ``ref:task+step`` are cross-fitted on folds of runs, and ``ref:task``
leaves the run itself out of its task's count. So changing run i's outcome (a finished run's Y, or
a censored run's q_Z in exact mode) must leave run i's own reference forecasts bit-identical,
whatever the log, the run, the censoring mode, the number of folds and the seed. tests/
test_references.py proves it on one fixed log; here hypothesis draws the log too (runs, tasks,
lengths, outcomes, censoring, q_Z).

The property would hold for references that ignore outcomes, so it comes with its converse: the
change does reach the runs of the other folds (their ``ref:step`` at t = 1 counts run i's label).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import ScoreSettings
from tpsviz.forecasts.references import REFERENCES, add_references, run_folds
from tpsviz.io.tables.longform import from_frame


@st.composite
def logs(draw):
    """A log of 4–24 runs on 1–4 tasks (some runs without one), lengths 1–6, some runs censored."""
    n_runs = draw(st.integers(4, 24))
    n_tasks = draw(st.integers(1, 4))
    rows = []
    for i in range(n_runs):
        kind = draw(st.sampled_from(["success", "failure", "failure", "censored"]))
        task = draw(st.one_of(st.integers(0, n_tasks - 1).map(lambda k: f"k{k}"), st.just(None)))
        q_z = draw(st.sampled_from([0.0, 0.2, 0.5, 0.9])) if kind == "censored" else np.nan
        for t in range(1, draw(st.integers(1, 6)) + 1):
            rows.append({"trajectory_id": f"r{i:02d}", "step": t,
                         "outcome": {"success": 1.0, "failure": 0.0, "censored": np.nan}[kind],
                         "censored": kind == "censored", "q_z": q_z, "task": task,
                         "conf_agent": draw(st.sampled_from([0.1, 0.5, 0.8]))})
    return from_frame(pd.DataFrame(rows), source="generated")


def changed(data: TrajectoryData, i: int, new_q_z: float) -> TrajectoryData:
    """The log with run i's outcome flipped (a finished run) or its q_Z set to ``new_q_z`` (censored)."""
    t = data.trajectories.copy()
    if bool(t.loc[i, "censored"]):
        t.loc[i, "q_z"] = new_q_z
    else:
        t.loc[i, "outcome"] = 1.0 - float(t.loc[i, "outcome"])
    return TrajectoryData(data.steps, t, list(data.predictors), dict(data.signals), data.source,
                          list(data.notes), dict(data.reading))


def label_moves(data: TrajectoryData, i: int, mode: str, new_q_z: float) -> bool:
    """Whether the change moves run i's label under the mode (docs/theory.md §4)."""
    if not bool(data.trajectories.loc[i, "censored"]):
        return True
    return mode == "exact" and new_q_z != float(data.trajectories.loc[i, "q_z"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=logs(), pick=st.integers(0, 10**6), mode=st.sampled_from(["simple", "exact", "upper", "complete"]),
       folds=st.integers(2, 6), seed=st.integers(0, 2**31 - 1), new_q_z=st.sampled_from([0.0, 0.35, 1.0]))
def test_a_runs_own_outcome_never_reaches_its_own_references(data, pick, mode, folds, seed, new_q_z):
    i = pick % data.n_trajectories
    s = ScoreSettings(censoring=mode, n_boot=0, seed=seed)
    before = add_references(data, s, folds=folds)
    after = add_references(changed(data, i, new_q_z), s, folds=folds)
    names = [n for n in before.predictors if n in REFERENCES]
    assert names == [n for n in after.predictors if n in REFERENCES]  # what is offered never depends on Y
    assume(names)  # (a log where no reference is offered has nothing to leak)
    traj = data.steps["traj"].to_numpy()
    own = traj == i
    for name in names:
        assert np.array_equal(before.forecasts(name)[own], after.forecasts(name)[own]), (name, mode, i)
    # the converse: the change reaches every other fold's ref:step at t = 1 when run i's label moves
    fold = run_folds(data.n_trajectories, folds, seed)
    other_first = (fold[traj] != fold[i]) & (data.steps["t"].to_numpy() == 1)
    moved = label_moves(data, i, mode, new_q_z) and not (mode == "complete" and data.trajectories.loc[i, "censored"])
    a, b = before.forecasts("ref:step")[other_first], after.forecasts("ref:step")[other_first]
    if moved:
        assert other_first.any() and not np.any(a == b), (mode, i)
    else:  # a label that does not move moves nothing anywhere
        for name in names:
            assert np.array_equal(before.forecasts(name), after.forecasts(name)), name


def _few_tasks_log(folds: int, seed: int) -> TrajectoryData:
    """Six runs of one step: the runs of fold 0 name no task, the others tasks k0, k0, k1 (so the log
    offers ref:task: two tasks, one with two runs), and fold 1's training runs name none."""
    fold = run_folds(6, folds, seed)
    named = np.flatnonzero(fold != 0)
    task = {int(i): ("k0", "k0", "k1", "k1", "k0")[j] for j, i in enumerate(named)}
    rows = [{"trajectory_id": f"r{i:02d}", "step": 1, "outcome": float(i % 2), "task": task.get(i), "conf_a": 0.5}
            for i in range(6)]
    return from_frame(pd.DataFrame(rows), source="few tasks")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), mode=st.sampled_from(["simple", "exact", "upper", "complete"]))
def test_a_fold_whose_training_runs_name_no_task_is_said_not_refused(seed, mode):
    """Found while testing the property above: when every training run of some fold names no task, the
    fold's Beta prior has nothing to fit and add_references raised ValueError ("the beta-binomial prior
    needs at least one task with a labelled run") instead of leaving ref:task out with the reason (fixed in
    tpsviz.forecasts.references.reference_forecasts)."""
    fold = run_folds(6, 2, seed)
    assume(3 <= (fold != 0).sum() <= 5)
    data = _few_tasks_log(2, seed)
    out = add_references(data, ScoreSettings(censoring=mode, n_boot=0, seed=seed), folds=2)
    assert "ref:step" in out.predictors and "ref:task" not in out.predictors
    why = out.reading["references"]["not_offered"]["ref:task"]
    assert "task" in why and "fold" in why
