"""The reference forecasters in the dashboard (issue 34, docs/forecasts.md §1): when they are added,
what part of the cache key they are, and each real predictor's verdict against the best of them.

- A log without a probability of its own (no ``conf_``: no forecast, or raw signals only, converted)
  always gets them, as on the command line (``tpsviz.evaluation.reading.default_forecasts``): every page
  then scores ``ref:step``, ``ref:task``, ``ref:task+step``. A log with a probability of its own gets
  them when the sidebar's switch :data:`SWITCH` is on.
- They are fitted on the prepared log (filtered, recalibrated) with the labels of the session's
  censoring mode, q_Z in exact mode and seed (:func:`refs_key`): a part of the analysis of its own
  (``results.Analysis.refs``), kept in a result's key only when that result scores a reference, so
  moving the censoring mode recomputes the references' results and nothing of the log's own
  predictors.
- They are never counted as the agent's: their names start with ``ref:`` and every list of
  predictors says "reference forecaster" beside them (``tpsviz.report.figures.display_name``).
"""

from __future__ import annotations


from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import ScoreSettings
from tpsviz.evaluation.reading import default_forecasts
from tpsviz.forecasts.references import REF_STEP, REF_TASK, REF_TASK_STEP, is_reference, task_column

__all__ = ["SWITCH", "SWITCH_HELP", "has_own_forecasts", "references_on", "refs_key", "offered", "keep_refs"]

#: the sidebar switch's label
SWITCH = "Add reference forecasters"
SWITCH_HELP = ("Yardsticks computed from this log alone, scored beside your predictors: ref:step (the success "
               "rate of the other runs still going at step t), ref:task (the task's other trials, shrunk toward "
               "the base rate) and ref:task+step (both). Fitted on folds of runs: a run's own outcome never "
               "enters its own forecast. A real signal should beat the best of them. Always on for a log "
               "without a probability of its own.")


def has_own_forecasts(data: TrajectoryData) -> bool:
    """Whether the log as read has a forecast of its own: a probability predictor or a raw signal
    (a signal is recalibrated into one: the sidebar's automatic Platt recalibration)."""
    return bool([p for p in data.predictors if not is_reference(p)] or data.signals)


def references_on(data: TrajectoryData, switch: bool) -> bool:
    """Whether the references are added: always for a log without a probability of its own (no forecast,
    or raw signals only: ``tpsviz.evaluation.reading.default_forecasts``, as on the command line), else
    by the switch."""
    return bool(switch) or default_forecasts(data).references


def refs_key(on: bool, settings: ScoreSettings, qz: tuple) -> tuple:
    """The part of an analysis that the references depend on: () when off, else (censoring mode,
    seed) and, in exact mode, the q_Z source and constant (``results.Analysis.qz``)."""
    if not on:
        return ()
    return (settings.censoring, int(settings.seed)) + (tuple(qz) if settings.censoring == "exact" else ())


def refs_settings(key: tuple) -> tuple[ScoreSettings, tuple]:
    """(the settings, the q_Z source) that :func:`refs_key` describes: what ``add_references`` needs."""
    censoring, seed = key[0], key[1]
    return ScoreSettings(censoring=censoring, seed=seed), tuple(key[2:]) or ("log", 0.5)


def offered(data: TrajectoryData) -> list[str]:
    """The references a log can have, for the sidebar's list of predictors before they are fitted:
    ``ref:step`` always; ``ref:task`` and ``ref:task+step`` when a task column names at least two
    tasks and some task has two runs. (Under complete-case censoring or narrow filters a reference
    may still not be offered: the page then says it is not in this log, and the loader's notes why.)"""
    col = task_column(data)
    if col is None:
        return [REF_STEP]
    counts = data.trajectories[col].dropna().astype(str).str.strip()
    counts = counts[counts != ""].value_counts()
    if len(counts) >= 2 and counts.max() >= 2:
        return [REF_STEP, REF_TASK, REF_TASK_STEP]
    return [REF_STEP]


def keep_refs(refs: tuple, predictors: tuple) -> tuple:
    """The references' part of a result's key: kept when the result scores a reference, or the whole
    log (no predictor named); dropped otherwise (the log's own predictors score the same with or
    without them)."""
    if refs and (not predictors or any(is_reference(p) for p in predictors)):
        return refs
    return ()
