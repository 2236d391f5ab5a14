"""The settings and the reading of an evaluation: what ``python -m tpsviz score`` accepts, checked and
turned into a :class:`~tpsviz.core.tps.ScoreSettings`, a read log and the q_Z of its censored runs.

Every step is public so the command line composes them. A message names a setting by a marker of
:mod:`tpsviz.core.wording` (``SettingError``, ``wording.Text`` notes): ``n_boot`` and
``recalibrate='platt'`` from Python, ``--n-boot`` and ``--recalibrate platt`` once the command line
words it (docs/architecture.md, "Messages"). The notes these steps write end up in
``Evaluation.to_json()``.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from tpsviz.core.censoring import MissingQz, default_censoring, population_words, qz_coverage
from tpsviz.core.data import TrajectoryData
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.schedules import Schedule, parse_schedule
from tpsviz.core.schema import clean_text, show_id
from tpsviz.core.scores import PRESETS
from tpsviz.core.tps import ScoreSettings
from tpsviz.core.errors import SettingError
from tpsviz.core.wording import setting, text
from tpsviz.diagnostics.audit import qz_for_source, rollout_qz_series
from tpsviz.diagnostics.calibrate import add_all_recalibrated
from tpsviz.forecasts.references import add_references, real_predictors
from tpsviz.io.dataset import DATASET_FORMATS, Dataset, is_dataset_spec, open_dataset
from tpsviz.io.files import Limits, limits_from_env
from tpsviz.io.harness.runs import ReadOptions, parse_conf, parse_mapping, parse_treat
from tpsviz.io.loading import load
from tpsviz.io.traces.options import TraceOptions, parse_rules

__all__ = ["check_settings", "read_options", "read_log", "recalibrated", "with_references", "no_forecast_reason", "qz_source", "score_settings",
           "plain_text", "memory_reason", "dataset_for_engine", "dataset_size", "MIN_N_BOOT", "MAX_N_BOOT", "MAX_SEED",
           "CSV_BYTES_PER_ROW", "RECALIBRATIONS"]

MAX_N_BOOT = 20_000      # bootstrap replicates accepted
MIN_N_BOOT = 50          # fewer replicates make no 95% percentile interval (adversarial pass 7)
MAX_SEED = 2 ** 63 - 1
#: bytes of CSV per row assumed when a CSV dataset's row count is unknown before reading
CSV_BYTES_PER_ROW = 40
#: cross-fitted recalibrations that add predictors ``<name>@<method>``
RECALIBRATIONS = ("platt", "isotonic", "beta")

def plain_text(s, limit: int | None = None) -> str:
    """Text from a log (id, column or file name) for a terminal or JSON: no control characters,
    no line breaks or tabs, cut to ``limit`` characters.

    Parameters
    ----------
    s : object
    limit : int, optional

    Returns
    -------
    str
    """
    return clean_text(s, limit).replace("\n", " ").replace("\t", " ")


# ----------------------------------------------------------------------------- settings and reading
def check_settings(n_boot: int = 2000, seed: int | None = None, eps: float = 1e-6, folds: int = 5,
                   level: float = 0.95) -> None:
    """Refuse setting values before any file is read, naming the setting.

    Parameters
    ----------
    n_boot : int
        0 (no bootstrap) or between :data:`MIN_N_BOOT` and :data:`MAX_N_BOOT`.
    seed : int, optional
        Between 0 and 2^63 − 1.
    eps : float
        In [0, 0.5).
    folds : int
        Cross-fitting folds of a recalibration, 2 to 50.
    level : float
        Confidence level, in (0, 1).

    Raises
    ------
    ValueError
        For the first value out of range.
    """
    for name, v in (("n_boot", n_boot), ("seed", seed), ("folds", folds)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise SettingError(f"{setting(name)} must be an integer, got {v!r}")
    if not (n_boot == 0 or MIN_N_BOOT <= n_boot <= MAX_N_BOOT):
        raise SettingError(f"{setting('n_boot')} must be 0 (no bootstrap) or between {MIN_N_BOOT} and "
                         f"{MAX_N_BOOT:,}, got {n_boot}: the 2.5% and 97.5% percentiles of fewer "
                         "replicates are not a 95% interval")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise SettingError(f"{setting('seed')} must be an integer between 0 and 2^63 - 1, got {seed}")
    eps, level = _float("eps", eps), _float("level", level)
    if not (math.isfinite(eps) and 0 <= eps < 0.5):
        raise SettingError(f"{setting('eps')} must be in [0, 0.5), got {eps:g}")
    if not 0 < level < 1:
        raise SettingError(f"{setting('level')} must be in (0, 1), got {level:g}")
    if not 2 <= folds <= 50:
        raise SettingError(f"{setting('folds')} must be between 2 and 50, got {folds}")


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


def qz_source(data: TrajectoryData, q_z=None, rollouts=None, censoring: str | None = None) -> tuple[object, str | None, list]:
    """The q_Z of censored runs in exact mode, the censoring mode it implies, and notes.

    Parameters
    ----------
    data : TrajectoryData
    q_z : {"column", "rollouts"} or float, optional
        The log's ``q_z`` column (default without ``rollouts``); the Monte-Carlo mean of
        ``rollouts`` (default with them); or one probability for every censored run.
    rollouts : str, Path or DataFrame, optional
        A rollouts table ``trajectory_id, outcome`` (docs/formats.md).
    censoring : str, optional
        The censoring mode asked for; None: ``exact`` when a q_Z source other than the column
        is given, else decided by :func:`score_settings`.

    Returns
    -------
    q_z : Series, ndarray or None
        The ``q_z`` argument of :func:`tpsviz.compute_tps` (None: the log's column).
    censoring : str or None
    notes : list of str
    """
    source = q_z if q_z is not None else ("rollouts" if rollouts is not None else "column")
    if isinstance(source, str):
        if source not in ("column", "rollouts"):
            raise SettingError(f"{setting('q_z')} must be 'column', 'rollouts' or a probability in [0, 1], "
                             f"got {source!r}")
        if source == "rollouts" and rollouts is None:
            raise SettingError(f"{setting('q_z', 'rollouts')} needs a rollouts table ({setting('rollouts')})")
        if source == "column":
            if rollouts is not None:
                raise SettingError(f"{setting('rollouts')} given with {setting('q_z', 'column')}: choose one")
            return None, censoring, _column_qz(data, censoring)
        return _rollouts(data, rollouts, censoring)
    if isinstance(source, bool) or not isinstance(source, (int, float, np.number)):
        raise SettingError(f"{setting('q_z')} must be 'column', 'rollouts' or a probability in [0, 1], "
                         f"got {source!r}")
    if rollouts is not None:
        raise SettingError(f"{setting('rollouts')} given with a constant {setting('q_z')}: choose one")
    q, words = qz_for_source(data, "constant", float(source))
    censoring = censoring or "exact"
    note = f"{words} (exact mode)" if censoring == "exact" else \
        f"q_Z = {float(source):g}: not used, censoring is {censoring}"
    return q, censoring, [note]


def _column_qz(data: TrajectoryData, censoring: str | None) -> list:
    """Notes on the log's q_z column; :class:`MissingQz` when exact mode is asked for and some censored
    run has no q_z (exact mode is exact: docs/theory.md §4)."""
    with_qz, n_cens = qz_coverage(data)
    if censoring == "exact" and with_qz < n_cens:
        raise MissingQz(n_cens - with_qz, n_cens)
    if censoring is None and 0 < with_qz < n_cens:
        return [text(f"q_z is given for {with_qz:,} of the {n_cens:,} censored runs: exact censoring needs "
                     f"every one, so the log is scored {setting('censoring', 'simple')} (a cut-off run counts "
                     "as a failure)")]
    return []


def _rollouts(data: TrajectoryData, rollouts, censoring: str | None):
    """(q_z, censoring, notes) of a rollouts table: exact mode by default (docs/theory.md)."""
    q_z, info = rollout_qz_series(data, rollouts)
    censoring = censoring or "exact"
    notes = [f"rollouts: q_Z estimated for {info['n_with_rollouts']} of {info['n_censored']} censored runs"]
    if info["censored_without"] and censoring == "exact":  # exact mode is exact (docs/theory.md §4)
        raise MissingQz(len(info["censored_without"]), info["n_censored"])
    if info["unknown_ids"]:
        notes.append(f"rollouts: {len(info['unknown_ids'])} trajectory id(s) not in the log "
                     f"were ignored (e.g. {', '.join(show_id(i) for i in info['unknown_ids'][:3])})")
    if censoring != "exact":
        notes.append(text(f"rollouts: not used, censoring is {censoring} (use {setting('censoring', 'exact')})"))
    return q_z, censoring, notes


def score_settings(has_qz: bool, alpha=None, beta=None, score: str | None = None,
                   schedule: str | Schedule = "uniform", censoring: str | None = None, eps: float = 1e-6,
                   n_boot: int = 2000, seed: int | None = None, level: float = 0.95) -> ScoreSettings:
    """The :class:`ScoreSettings` of the settings; censoring defaults to exact when the log has q_z.

    Parameters
    ----------
    has_qz : bool
        The log has a q_z value for some censored run (:func:`tpsviz.default_censoring`).
    alpha, beta : float, optional
        Beta-family parameters (default 0, 0: the log score).
    score : str, optional
        A preset instead of α, β: ``log``, ``brier``, ``boosting``, ``asym-high``, ``asym-low``.
    schedule : str or Schedule
        A weight schedule (:func:`tpsviz.parse_schedule`).
    censoring : {"complete", "simple", "exact", "upper"}, optional
    eps, n_boot, seed, level
        Clipping, bootstrap replicates and seed, confidence level.

    Returns
    -------
    ScoreSettings

    Raises
    ------
    ValueError
        For an unknown preset, a preset given with α or β, or a value ScoreSettings refuses.
    """
    if score is not None:
        if alpha is not None or beta is not None:
            raise SettingError(f"give {setting('score')} (a preset) or {setting('alpha')} and {setting('beta')}, "
                             "not both")
        if score not in PRESETS:
            raise ValueError(f"unknown score {score!r}: the presets are {', '.join(PRESETS)}")
        alpha, beta = PRESETS[score].alpha, PRESETS[score].beta
    sched = schedule if isinstance(schedule, Schedule) else parse_schedule(str(schedule))
    kwargs = dict(alpha=_float("alpha", 0.0 if alpha is None else alpha),
                  beta=_float("beta", 0.0 if beta is None else beta), schedule=sched,
                  censoring=censoring or ("exact" if has_qz else "simple"), eps=_float("eps", eps),
                  n_boot=int(n_boot), level=_float("level", level))
    if seed is not None:
        kwargs["seed"] = int(seed)
    return ScoreSettings(**kwargs)


def _float(name: str, v) -> float:
    if isinstance(v, bool):
        raise SettingError(f"{setting(name)} must be a number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise SettingError(f"{setting(name)} must be a number, got {v!r}") from None


def dataset_size(ds: Dataset) -> tuple[int, str]:
    """Rows of a dataset (estimated from the bytes of CSV files) and the size in words.

    Parameters
    ----------
    ds : tpsviz.io.dataset.Dataset

    Returns
    -------
    rows : int
    words : str
        ``"15,792 rows in 1 file"`` or ``"about 15,792 rows (1 MB of text) in 1 file"``.
    """
    rows = ds.n_rows if ds.n_rows is not None else ds.n_bytes // CSV_BYTES_PER_ROW
    what = (f"{ds.n_rows:,} rows" if ds.n_rows is not None else f"about {rows:,} rows ({ds.n_bytes / 2**20:,.0f} MB "
            "of text)") + f" in {ds.n_files} file{'s' if ds.n_files != 1 else ''}"
    return rows, what


def dataset_for_engine(source, fmt: str | None = None, limits: Limits | None = None
                       ) -> tuple[bool | None, str, Dataset | None]:
    """Whether a source is a table dataset too large to read into memory: the automatic engine
    choice of ``score --engine auto`` and of :func:`memory_reason`.

    Parameters
    ----------
    source : path, TrajectoryData or other source of :func:`tpsviz.load`
    fmt : str, optional
        The forced format.
    limits : tpsviz.io.files.Limits, optional
        Default: from the environment (``TPSVIZ_MAX_ROWS``).

    Returns
    -------
    too_large : bool or None
        None when the source is not a table dataset (it is read in memory, ``words`` say why);
        else whether its rows or bytes exceed what is read into memory.
    words : str
        Why it is read in memory, or the dataset's size (``"15,792 rows in 1 file"``).
    dataset : Dataset or None
        The opened dataset of a table source.
    """
    if isinstance(source, TrajectoryData):
        return None, "a TrajectoryData given in memory", None
    if not isinstance(source, (str, os.PathLike)):
        return None, "a log given as bytes is read in memory", None
    table_like = is_dataset_spec(source) or (Path(source).is_file()
                                             and Path(source).suffix.lower() in DATASET_FORMATS)
    if not table_like or fmt not in (None, "auto", "csv", "tsv", "parquet"):
        return None, "a harness log or JSON Lines file is read in memory", None
    limits = limits or limits_from_env()
    ds = open_dataset(source)
    rows, what = dataset_size(ds)
    return rows > limits.max_rows or ds.n_bytes > limits.max_bytes * max(ds.n_files, 1), what, ds


def memory_reason(source, fmt: str | None = None, limits: Limits | None = None) -> str:
    """Why a log is scored in memory, in the words of ``score --engine auto``.

    Parameters
    ----------
    source : path, TrajectoryData or other source of :func:`tpsviz.load`
    fmt : str, optional
        The forced format.
    limits : tpsviz.io.files.Limits, optional
        Default: from the environment (``TPSVIZ_MAX_ROWS``).

    Returns
    -------
    str
    """
    limits = limits or limits_from_env()
    too_large, words, _ = dataset_for_engine(source, fmt, limits)
    if too_large is None:
        return words
    if too_large:
        return text(f"{words}, read into memory (above TPSVIZ_MAX_ROWS, score it out of core with "
                    f"{setting('out_of_core')})")
    return f"auto: {words}, within the {limits.max_rows:,} rows read into memory"
