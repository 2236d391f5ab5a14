"""Reading a binary log for an evaluation: the reading options from Python values or command-line
texts (:func:`read_options`), the log read (:func:`read_log`), its cross-fitted recalibrations
(:func:`recalibrated`) and its reference forecasters (:func:`with_references`); what a log gets by
default, the same on every face (:func:`default_forecasts`: its raw signals converted, its references).

A message names a setting by a marker of :mod:`tpsviz.core.wording` (``SettingError``,
``wording.Text`` notes), worded by each front end (docs/architecture.md, "Messages").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tpsviz.core.censoring import default_censoring, population_words
from tpsviz.core.data import TrajectoryData
from tpsviz.core.errors import SettingError
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.schedules import Schedule
from tpsviz.core.schema import plain_text
from tpsviz.core.tps import ScoreSettings
from tpsviz.core.wording import setting, text
from tpsviz.diagnostics.calibrate import (FITS_KEY, METHOD_WORDS, add_all_recalibrated, add_recalibrated,
                                         recalibration_source)
from tpsviz.forecasts.references import DEFAULT_FOLDS, add_references, real_predictors
from tpsviz.io.harness.runs import ReadOptions, parse_conf, parse_mapping, parse_treat
from tpsviz.io.loading import load
from tpsviz.io.traces.options import TraceOptions, parse_rules

__all__ = ["read_options", "read_log", "recalibrated", "with_references", "no_forecast_reason", "DefaultForecasts",
           "default_forecasts", "default_converted", "own_predictors", "converted_signals", "as_decided", "decided",
           "DECIDED_KEY"]

#: the key of ``TrajectoryData.reading`` saying that the caller chose the log's forecasts (its conversions and
#: references, as the dashboard's sidebar does): the defaults are not applied to it again (:func:`as_decided`)
DECIDED_KEY = "forecasts_decided"

#: how a raw signal is converted when nothing else is asked (docs/theory.md §6)
DEFAULT_METHOD = "platt"


@dataclass(frozen=True)
class DefaultForecasts:
    """What a log is scored with when nothing else is asked, the same in Python, on the command line
    and in the dashboard (:func:`default_forecasts`).

    Attributes
    ----------
    signals : tuple of str
        The raw signals converted to probabilities (empty when the log has a probability of its own).
    method : str or None
        Their conversion (``"platt"``), None when nothing is converted.
    folds : int
        Its cross-fitting folds: at most the folds asked for, fewer (at least 2) when a class has fewer
        complete runs, so that every training fold holds both outcomes.
    references : bool
        Whether the reference forecasters (``ref:*``) are always scored: the log has no probability
        of its own, only converted signals or no forecast at all.
    """

    signals: tuple = ()
    method: str | None = None
    folds: int = DEFAULT_FOLDS
    references: bool = False

    def words(self) -> str | None:
        """The conversion in one sentence ("raw signal unc_uala converted to a probability by Platt
        scaling, cross-fitted by run (…)"), or None when nothing is converted."""
        if not self.signals:
            return None
        one = len(self.signals) == 1
        names = ", ".join(plain_text(s, 40) for s in self.signals)
        refs = (f"; the reference forecasters (ref:*) are scored beside {'it' if one else 'them'}, the bar "
                "a real signal has to clear" if self.references else "")
        return (f"raw signal{'' if one else 's'} {names} converted to {'a probability' if one else 'probabilities'} "
                f"by {METHOD_WORDS.get(self.method, self.method)}, cross-fitted by run ({self.folds} folds; "
                f"docs/theory.md §6), as the log has no probability column of its own{refs}")


def own_predictors(data: TrajectoryData) -> list[str]:
    """The log's own probability predictors: neither a reference (``ref:*``) nor a conversion of one of
    its raw signals (``<name>@<method>``), in order."""
    return [p for p in real_predictors(data.predictors)
            if recalibration_source(data, p) is None or recalibration_source(data, p) not in data.signals]


def default_forecasts(data: TrajectoryData, folds: int = DEFAULT_FOLDS) -> DefaultForecasts:
    """What ``data`` is scored with by default: its raw signals converted by a cross-fitted Platt
    scaling when it has no probability of its own, and its references whenever it has no probability
    of its own (only converted signals, or nothing). The one decision every face follows.

    Parameters
    ----------
    data : TrajectoryData
        The log as read, or already converted (a conversion of a signal is not a probability of its own).
    folds : int
        The cross-fitting folds asked for (at most; fewer when a class has fewer complete runs).

    Returns
    -------
    DefaultForecasts
        ``signals`` empty and ``method`` None when the log has a probability of its own.
    """
    own = bool(own_predictors(data))
    if own or not data.signals:
        return DefaultForecasts(folds=int(folds), references=not own)
    runs = data.trajectories.loc[~data.trajectories["censored"], "outcome"]
    fewest = min(int((runs == 1).sum()), int((runs == 0).sum()))
    return DefaultForecasts(signals=tuple(data.signals), method=DEFAULT_METHOD,
                            folds=int(min(int(folds), max(2, fewest))), references=True)


def converted_signals(data: TrajectoryData) -> set:
    """The raw signals of ``data`` converted already: the source of a predictor ``<name>@<method>`` of the
    log, or of a conversion its reading records (:func:`tpsviz.diagnostics.calibrate.recalibration_mode`)."""
    fits = (data.reading or {}).get(FITS_KEY) or {}
    return {recalibration_source(data, n) for n in [*data.predictors, *fits]} & set(data.signals)


def as_decided(data: TrajectoryData) -> TrajectoryData:
    """``data`` marked as a log whose forecasts were chosen by its caller (:data:`DECIDED_KEY`):
    :func:`tpsviz.evaluate` scores its predictors as they are, adding neither a conversion nor a reference."""
    return replace(data, reading={**(data.reading or {}), DECIDED_KEY: True})


def decided(data: TrajectoryData) -> bool:
    """Whether ``data`` is marked by :func:`as_decided`."""
    return bool((data.reading or {}).get(DECIDED_KEY))


def default_converted(data: TrajectoryData, folds: int = DEFAULT_FOLDS, seed: int | None = None,
                      censoring: str | None = None, q_z=None) -> tuple[TrajectoryData, list]:
    """The log with its raw signals converted as :func:`default_forecasts` says (nothing else asked),
    each map fitted on the population of the censoring mode (docs/theory.md §6), and the notes: the
    conversion in one sentence (:meth:`DefaultForecasts.words`), a signal that could not be converted.

    Parameters
    ----------
    data : TrajectoryData
    folds : int
        The folds asked for (at most: :func:`default_forecasts`).
    seed : int, optional
        Seed of the folds (default: the bootstrap's).
    censoring : str, optional
        The mode the conversions are scored under (default :func:`tpsviz.default_censoring`).
    q_z : array_like or Series, optional
        q_Z of the censored runs in exact mode.

    Returns
    -------
    data : TrajectoryData
        ``data`` itself when it has a probability of its own, no raw signal left to convert, or its
        forecasts were chosen by its caller (:func:`as_decided`).
    notes : list of str
    """
    plan = default_forecasts(data, folds)
    todo = [s for s in plan.signals if s not in converted_signals(data)]
    if not todo or decided(data):
        return data, []
    before, done, notes = list(data.notes), [], []
    mode = censoring or default_censoring(data)
    for sig in todo:
        try:
            data, _ = add_recalibrated(data, sig, plan.method, plan.folds, seed=seed if seed is not None else DEFAULT_SEED,
                                       censoring=mode, q_z=q_z)
        except ValueError as exc:  # a constant signal, too few runs for the folds, exact mode without q_Z
            notes.append(f"{plain_text(sig, 40)} could not be converted to a probability: {exc}")
            continue
        done.append(sig)
    said = replace(plan, signals=tuple(done)).words()
    return replace(data, notes=before + ([said] if said else [])), notes


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
    probability predictor of its own, a conversion of its raw signals aside (:func:`default_forecasts`;
    :func:`tpsviz.forecasts.references.add_references`).

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
    outcome) is returned without predictors; its notes say why (:func:`no_forecast_reason`). A log
    marked by :func:`as_decided` gets them only when asked for.
    """
    # a conversion of a raw signal is not a forecast of its own; a log whose caller chose its forecasts keeps them
    automatic = default_forecasts(data).references and not decided(data)
    if not (requested or automatic):
        return data, []
    out = add_references(data, settings, q_z, folds=folds, seed=seed, automatic=not real_predictors(data.predictors))
    converted = {recalibration_source(data, p) for p in data.predictors}
    left = [s for s in data.signals if s not in converted]
    notes = []
    if automatic and left:
        notes.append(text(f"raw signals {', '.join(plain_text(s, 40) for s in left)} are not scored as "
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
