"""The two groups of settings of :func:`tpsviz.evaluate`: :class:`Settings` (how a log is scored)
and :class:`ReadSettings` (how it is read), and the keywords that override their fields.

``evaluate(source, settings=Settings(score="brier"), read=ReadSettings(mapping={...}), n_boot=500)``:
a keyword names a field of either group (``n_boot`` is a field of :class:`Settings`); an unknown
keyword is refused with the nearest valid name (:func:`resolve`). The fields and their defaults are
those of ``python -m tpsviz score`` (docs/api.md). A setting that has no meaning for the log's
outcome kind is refused by name, never ignored (:func:`check_for_kind`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, fields, replace

from tpsviz.core.errors import SettingError
from tpsviz.core.wording import setting

__all__ = ["Settings", "ReadSettings", "resolve", "check_for_kind", "KINDS", "ENGINES"]

#: the outcome kinds a log may hold (:func:`tpsviz.io.kinds.outcome_kind`)
KINDS = ("binary", "multiclass", "continuous")
#: the engines ``evaluate`` and ``score --engine`` choose from
ENGINES = ("auto", "memory", "duckdb", "dask")


@dataclass(frozen=True)
class Settings:
    """How a log is scored: the settings of ``python -m tpsviz score`` (docs/api.md).

    Attributes
    ----------
    alpha, beta : float, optional
        Beta-family parameters > −1 (default 0, 0: the log score; 1, 1: half the Brier score).
    score : str, optional
        A preset instead of α and β: ``log``, ``brier``, ``boosting``, ``asym-high``, ``asym-low``.
    schedule : str or Schedule
        The weight schedule (default ``uniform``; :func:`tpsviz.parse_schedule`).
    censoring : str, optional
        ``complete``, ``simple``, ``exact`` or ``upper``; default: exact when every censored run has
        a q_Z, else simple (multi-class: exact with q vectors, else complete; continuous: complete).
    eps : float
        Forecasts are clipped to [ε, 1 − ε] (default 1e-6; 0 = off).
    n_boot, seed, level
        Bootstrap replicates (0, or 50 to 20,000), its seed, the level of intervals and tests.
    q_z : {"column", "rollouts"} or float, optional
        q_Z of censored runs in exact mode.
    rollouts : str, Path or DataFrame, optional
        A rollouts table ``trajectory_id, outcome``.
    recalibrate : {"platt", "isotonic", "beta", "none"}, optional
        Add a cross-fitted recalibration ``<name>@<method>`` of every predictor and raw signal,
        fitted on the censoring mode's population (docs/theory.md §6). ``"none"``: no
        recalibration, and a log of raw signals only is not converted by default either (its
        references are still scored).
    folds : int
        Cross-fitting folds (2 to 50).
    references : bool
        Add the reference forecasters ``ref:*`` (always added to a log without any forecast).
    cluster_by, interval : str
        The unit of SEs (``auto``, ``run`` or a column) and the bootstrap CI of a mean
        (``studentized`` or ``percentile``).
    rule, censored_label : str
        Multi-class logs: the score (``log`` or ``brier``) and the label a censored run counts as.
    bins : int
        Multi-class: bins of the one-vs-rest reliability (1 to 100); continuous: PIT bins (2 to 100).
    verdict_sample : int
        Out of core: the verdicts need the step rows, so they are decided on a seeded random sample
        of this many runs (0: no verdicts).
    """

    alpha: float | None = None
    beta: float | None = None
    score: str | None = None
    schedule: object = "uniform"
    censoring: str | None = None
    eps: float = 1e-6
    n_boot: int = 2000
    seed: int | None = None
    level: float = 0.95
    q_z: object = None
    rollouts: object = None
    recalibrate: str | None = None
    folds: int = 5
    references: bool = False
    cluster_by: str = "auto"
    interval: str = "studentized"
    rule: str = "log"
    censored_label: str | None = None
    bins: int = 10
    verdict_sample: int = 20_000


@dataclass(frozen=True)
class ReadSettings:
    """How a log is read: the reading options of ``python -m tpsviz score`` (docs/harness.md,
    docs/traces.md).

    Attributes
    ----------
    fmt : str, optional
        Force a format (``csv``, ``tsv``, ``parquet``, ``jsonl``, ``tau2``, ``tau-bench``,
        ``inspect``, ``otlp``, ``openinference``, ``langfuse``); None detects it.
    mapping : dict or list of str
        Tables (and DataFrames) with other column names: ``{"trajectory_id": "run"}``.
    percent : list of str or str
        Predictors given in percent.
    success_threshold, treat, scorer, conf
        Harness logs: a reward counted as success from this value on, the treatment of termination
        reasons, the Inspect AI scorer, per-step forecasts from message fields.
    forecasts : path, optional
        A sidecar table ``trajectory_id, step, conf_*`` joined on (trajectory_id, step).
    run_by, step_spans, outcome, outcomes, censor_when
        Trace files: how spans make runs and steps, and where the outcome is.
    """

    fmt: str | None = None
    mapping: object = ()
    percent: object = ()
    success_threshold: float | None = None
    treat: object = ()
    scorer: str | None = None
    conf: object = ()
    forecasts: object = None
    run_by: str | None = None
    step_spans: object = ()
    outcome: str | None = None
    outcomes: object = None
    censor_when: object = ()


_SCORE_FIELDS = tuple(f.name for f in fields(Settings))
_READ_FIELDS = tuple(f.name for f in fields(ReadSettings))

#: the settings that apply to some outcome kinds only (every other field applies to every kind)
_KIND_FIELDS = {
    **{k: ("binary",) for k in ("alpha", "beta", "score", "q_z", "rollouts", "recalibrate", "folds", "references",
                                "cluster_by", "interval", "verdict_sample")},
    **{k: ("binary",) for k in _READ_FIELDS},
    "censoring": ("binary", "multiclass"), "eps": ("binary", "multiclass"),
    "rule": ("multiclass",), "censored_label": ("multiclass",), "bins": ("multiclass", "continuous"),
}


def _nearest(name: str) -> str:
    """The valid keyword nearest to ``name`` in words, for a message."""
    close = difflib.get_close_matches(name, _SCORE_FIELDS + _READ_FIELDS + ("engine",), n=1, cutoff=0.5)
    return f"did you mean {close[0]!r}? " if close else ""


def resolve(settings: Settings | None = None, read: ReadSettings | None = None,
            overrides: dict | None = None) -> tuple[Settings, ReadSettings]:
    """The settings and reading options of one call, each keyword overriding its field.

    Parameters
    ----------
    settings : Settings, optional
    read : ReadSettings, optional
    overrides : dict, optional
        Field name → value; a name of :class:`Settings` or :class:`ReadSettings`.

    Returns
    -------
    (Settings, ReadSettings)

    Raises
    ------
    SettingError
        For a keyword that names no field (with the nearest valid name), or a group of the wrong type.
    """
    settings = Settings() if settings is None else settings
    read = ReadSettings() if read is None else read
    if not isinstance(settings, Settings):
        raise SettingError(f"settings must be a tpsviz.Settings, got {type(settings).__name__}")
    if not isinstance(read, ReadSettings):
        raise SettingError(f"read must be a tpsviz.ReadSettings, got {type(read).__name__}")
    overrides = dict(overrides or {})
    unknown = [k for k in overrides if k not in _SCORE_FIELDS and k not in _READ_FIELDS]
    if unknown:
        k = unknown[0]
        raise SettingError(f"unknown setting {k!r}: {_nearest(k)}the settings are the fields of tpsviz.Settings "
                           "and tpsviz.ReadSettings (docs/api.md)")
    settings = replace(settings, **{k: v for k, v in overrides.items() if k in _SCORE_FIELDS})
    read = replace(read, **{k: v for k, v in overrides.items() if k in _READ_FIELDS})
    return settings, read


def _given(value, default) -> bool:
    """Whether a field was set to something other than its default (an empty list or mapping, and
    ``fmt="auto"``, are not set)."""
    if isinstance(value, (tuple, list, dict)) and not value:
        return False
    if hasattr(value, "shape"):  # a table (rollouts, outcomes) given in memory
        return True
    return value != default and value != "auto"


def check_for_kind(settings: Settings, read: ReadSettings, kind: str) -> None:
    """Refuse the settings given that have no meaning for a log of this outcome kind, naming them.

    Parameters
    ----------
    settings : Settings
    read : ReadSettings
    kind : {"binary", "multiclass", "continuous"}

    Raises
    ------
    SettingError
    """
    bad = []
    for group, defaults in ((settings, Settings()), (read, ReadSettings())):
        for f in fields(group):
            kinds = _KIND_FIELDS.get(f.name)
            if kinds and kind not in kinds and _given(getattr(group, f.name), getattr(defaults, f.name)):
                bad.append(setting(f.name))
    if bad:
        words = {"binary": "binary (success/failure)", "multiclass": "multi-class", "continuous": "continuous-outcome"}
        one = len(bad) == 1
        raise SettingError(f"{', '.join(bad)} {'does' if one else 'do'} not apply to a {words[kind]} log: "
                           f"drop {'it' if one else 'them'} (docs/multiclass.md, docs/continuous.md)")
