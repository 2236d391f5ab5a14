"""Reading a binary log for an evaluation: the reading options from Python values or command-line
texts (:func:`read_options`), the log read (:func:`read_log`), its cross-fitted recalibrations
(:func:`recalibrated`) and its reference forecasters (:func:`with_references`).

A message names a setting by a marker of :mod:`tpsviz.core.wording` (``SettingError``,
``wording.Text`` notes), worded by each front end (docs/architecture.md, "Messages").
"""

from __future__ import annotations

from dataclasses import replace

from tpsviz.core.censoring import default_censoring, population_words
from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import SettingError
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.schedules import Schedule
from tpsviz.core.schema import plain_text
from tpsviz.core.tps import ScoreSettings
from tpsviz.core.wording import setting, text
from tpsviz.diagnostics.calibrate import add_all_recalibrated
from tpsviz.forecasts.references import add_references, real_predictors
from tpsviz.io.harness.runs import ReadOptions, parse_conf, parse_mapping, parse_treat
from tpsviz.io.loading import load
from tpsviz.io.traces.options import TraceOptions, parse_rules

__all__ = ["read_options", "read_log", "recalibrated", "with_references", "no_forecast_reason"]


def _pairs(value) -> list:
    """A dict ``{a: b}`` as ``["a=b"]``; a single ``"a=b"`` as a list; a list as it is."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [f"{k}={v}" for k, v in value.items()]
    return [value] if isinstance(value, str) else list(value)

def read_options(fmt: str | None = None, success_threshold: float | None = None, treat=(),
                 scorer: str | None = None, conf=(), mapping=(), percent=(), run_by: str | None = None,
                 step_spans=(), outcome: str | None = None, censor_when=()) -> ReadOptions:
    """The reading options of a log (docs/harness.md), from Python values or command-line texts.

    Parameters
    ----------
    fmt : str, optional
        Force a format (``csv``, ``tsv``, ``parquet``, ``jsonl``, ``tau2``, ``tau-bench``,
        ``inspect``); None or ``"auto"`` detects it.
    success_threshold : float, optional
        A recorded reward counts as success when ≥ this.
    treat : dict or list of str
        Treatment of termination reasons, ``{"max_steps": "failure"}`` or ``["max_steps=failure"]``.
    scorer : str, optional
        Inspect AI: the scorer whose value is the outcome.
    conf : dict or list of str
        Per-step forecasts from message fields, ``{"verbal": "metadata.confidence"}``.
    mapping : dict or list of str
        Tables with other column names, ``{"trajectory_id": "run"}``.
    percent : list of str or str
        Predictors given in percent (comma-separated names allowed).
    run_by, step_spans, outcome, censor_when : optional
        Trace files (docs/traces.md): :class:`tpsviz.io.traces.options.TraceOptions`; the rules
        as ``["name=chat*", "ATTRIBUTE=VALUE"]`` or one comma-separated text.

    Returns
    -------
    tpsviz.io.harness.runs.ReadOptions

    Raises
    ------
    ValueError
        For a malformed pair, an unknown treatment or a threshold that is not finite.
    """
    names = [percent] if isinstance(percent, str) else list(percent or ())
    pct = tuple(p.strip() for item in names for p in str(item).split(",") if p.strip())
    return ReadOptions(fmt=None if fmt in (None, "auto") else fmt, success_threshold=success_threshold,
                       treat=parse_treat(_pairs(treat)), scorer=scorer, conf=parse_conf(_pairs(conf)),
                       mapping=tuple(parse_mapping(_pairs(mapping))), percent=pct,
                       traces=TraceOptions(run_by=run_by or None, step_spans=parse_rules(step_spans, "step_spans"),
                                           outcome=outcome or None,
                                           censor_when=parse_rules(censor_when, "censor_when")))

def read_log(source, options: ReadOptions | None = None, forecasts=None, recalibrate: str | None = None,
             folds: int = 5, seed: int | None = None, schedule: str | Schedule = "uniform",
             allow_empty: bool = False, outcomes=None, censoring: str | None = None,
             q_z=None) -> tuple[TrajectoryData, list]:
    """Read a log (:func:`tpsviz.load`) and add its cross-fitted recalibrations (:func:`recalibrated`).

    Parameters
    ----------
    source : path or TrajectoryData
        A log :func:`tpsviz.load` reads, or a log already read (not modified).
    options, forecasts
        Reading options and a forecasts sidecar table (paths only).
    recalibrate : {"platt", "isotonic", "beta"}, optional
        Add ``<name>@<method>`` for every predictor and raw signal (docs/theory.md).
    folds, seed
        Cross-fitting folds and seed of the recalibration (seed default: the bootstrap's).
    schedule : str or Schedule
        The weight schedule: ``column`` needs a ``weight`` column.
    allow_empty : bool
        Return a log without any probability predictor (the caller adds the references:
        :func:`with_references`) instead of refusing it.
    outcomes : path, optional
        Trace files: a table ``trajectory_id, outcome[, censored]`` (docs/traces.md).
    censoring, q_z
        The censoring mode the recalibrated predictors will be scored under, and q_Z in exact mode:
        their maps are fitted on that mode's population (default: the log's default mode).

    Returns
    -------
    data : TrajectoryData
    notes : list of str
        What the recalibration skipped.

    Raises
    ------
    ValueError
        When nothing can be scored (tpsviz.core.errors.LogFormatError for an unreadable log).
    """
    if isinstance(source, TrajectoryData):
        if options is not None or forecasts is not None or outcomes is not None:
            raise ValueError("reading options and a forecasts table apply to a file; this log is "
                             "already read (a TrajectoryData)")
        data = source
    else:
        data = load(source, options=options, forecasts=forecasts, outcomes=outcomes)
    if not data.predictors and not recalibrate and not allow_empty:
        raise SettingError(_no_predictor(data))
    name = schedule.name if isinstance(schedule, Schedule) else str(schedule).strip().lower()
    if name == "column" and "weight" not in data.steps:
        raise ValueError("schedule 'column' needs a 'weight' column in the log; this file has none")
    if not recalibrate:
        return data, []
    return recalibrated(data, recalibrate, folds, seed, censoring, q_z)

def _no_predictor(data: TrajectoryData) -> str:
    """Why a log without a probability predictor cannot be scored here."""
    if data.signals:
        return (f"{plain_text(data.source)} has no probability column, only raw signals "
                f"({', '.join(plain_text(s, 40) for s in data.signals)}): add "
                f"{setting('recalibrate', 'platt')} (or isotonic) to score them as cross-fitted "
                "probabilities <name>@<method>")
    return (f"{plain_text(data.source)} holds no forecast: score it with its reference forecasters "
            "(docs/forecasts.md, section 1)")

def with_references(data: TrajectoryData, settings: ScoreSettings, q_z=None, requested: bool = False,
                    folds: int = 5, seed: int | None = None) -> tuple[TrajectoryData, list]:
    """The log with its reference forecasters (``ref:*``) when asked for, and always when it has no
    probability predictor of its own (:func:`tpsviz.forecasts.references.add_references`).

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
        The censoring mode says how censored runs enter the references; the seed seeds the folds
        unless ``seed`` is given.
    q_z : array_like or Series, optional
        q_Z estimates in exact mode.
    requested : bool
        Add them to a log that has forecasts too (``references=True``, ``--references``).
    folds, seed
        Folds of runs and their seed.

    Returns
    -------
    data : TrajectoryData
    notes : list of str
        On raw signals left unscored (the references' own notes are the log's).

    A log without any forecast whose references cannot be formed (fewer than two runs with an
    outcome) is returned without predictors; its notes say why (:func:`no_forecast_reason`).
    """
    automatic = not real_predictors(data.predictors)
    if not (requested or automatic):
        return data, []
    out = add_references(data, settings, q_z, folds=folds, seed=seed, automatic=automatic)
    notes = []
    if automatic and data.signals:
        notes.append(text(f"raw signals {', '.join(plain_text(s, 40) for s in data.signals)} are not scored as "
                          f"they are: a cross-fitted recalibration ({setting('recalibrate', 'platt')}) makes them "
                          "probabilities"))
    return out, notes

def no_forecast_reason(data: TrajectoryData) -> str:
    """Why a log without any forecast has no reference either (after :func:`with_references`)."""
    info = data.reading.get("references") or {}
    why = "; ".join(sorted(set((info.get("not_offered") or {}).values()))) or "no reference was added"
    return (f"{plain_text(data.source)} holds no forecast, and its reference forecasters cannot be formed: "
            f"{why}")

def recalibrated(data: TrajectoryData, method: str, folds: int = 5, seed: int | None = None,
                 censoring: str | None = None, q_z=None) -> tuple[TrajectoryData, list]:
    """The log with a cross-fitted recalibration ``<name>@<method>`` of every predictor and raw
    signal, fitted on the population of the censoring mode (docs/theory.md §6), and notes.

    Parameters
    ----------
    data : TrajectoryData
    method : {"platt", "isotonic", "beta"}
    folds, seed
        Cross-fitting folds and their seed (default: the bootstrap's).
    censoring : str, optional
        The mode the new predictors are scored under (default :func:`tpsviz.default_censoring`).
    q_z : array_like or Series, optional
        q_Z of the censored runs in exact mode (default: the log's column).

    Returns
    -------
    data : TrajectoryData
    notes : list of str
        What the recalibration skipped.

    Raises
    ------
    SettingError
        When no predictor results, or exact mode lacks a censored run's q_Z.
    """
    before = list(data.notes)
    mode = censoring or default_censoring(data)
    data, reports = add_all_recalibrated(data, method, folds=folds,
                                         seed=seed if seed is not None else DEFAULT_SEED, censoring=mode, q_z=q_z)
    added = [p for p in data.predictors if p.endswith(f"@{method}")]
    if not data.predictors:
        why = "; ".join(f"{plain_text(s, 40)}: {plain_text(r, 200)}" for s, r in reports.items()
                        if isinstance(r, str))
        raise SettingError(f"{setting('recalibrate', method)} gave no predictor to score"
                           + (f" ({why})" if why else "") + f"; try another method or fewer {setting('folds')}")
    data = replace(data, notes=before + [  # one line instead of one note per recalibrated predictor
        f"added {len(added)} predictors by cross-fitted {method} recalibration "
        f"({folds} folds by trajectory, fitted on {population_words(data, mode)}): {', '.join(added)}"])
    return data, [f"recalibration of {src} {rep}" for src, rep in reports.items() if isinstance(rep, str)]
