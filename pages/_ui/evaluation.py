"""The :class:`~tpsviz.evaluation.record.BinaryEvaluation` of the sidebar's settings: what
``tpsviz.evaluate`` returns for the current log and settings, and nothing assembled here.

- The log handed to ``tpsviz.evaluate`` is the one the dashboard prepared (``loading.prepared``:
  filters, recalibrations fitted for the censoring mode, references), restricted to the selected
  predictors; the settings are the sidebar's.
- The Evaluation is kept in the shared cache (``memo``, bounded in bytes for a team server) under
  the ``evaluate`` call: the log's key, the predictors and the settings.
- Its parts are kept in the same cache, each under the settings it depends on
  (:mod:`tpsviz.evaluation.parts`): ``evaluate(…, cache=SharedParts(…))``. An α nudge finds the
  metrics, the verdicts' tests and the excess movement there and rescores only TPS and what follows
  from it; recalibration maps are fitted in ``loading.prepared`` for the censoring mode and never for α.

The Overview, the report and the Export page read this one object (the Overview first without its
verdicts, :class:`BoardFirst`, so the leaderboard shows before the verdicts' tests end); its tables are
built in the core (:mod:`tpsviz.evaluation.tables`).
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

import tpsviz
from tpsviz.evaluation.parts import PartsMemo, log_digest
from tpsviz.evaluation.reading import as_decided
from tpsviz.evaluation.record import BinaryEvaluation
from tpsviz.forecasts.references import is_reference

from .loading import cfg_fit, cfg_refs, get_rollouts, is_failure, prepared, result_key
from .memo import memo
from .state import SEED, Config, Source, current, current_source

__all__ = ["evaluation", "evaluation_and_key", "log_key", "evaluate_settings", "SharedParts", "BoardFirst", "compare_tps", "compare_metrics",
           "metric_intervals"]


class SharedParts(PartsMemo):
    """The parts of the Evaluation in the dashboard's shared cache (``memo``: bounded in bytes and in
    idle time, one computation per key across sessions), for ``tpsviz.evaluate(…, cache=…)``.

    A part is identified by the prepared log's key (no digest of its rows is needed); a part kept
    per predictor by that key without the references, except for a reference (``ref:*``): the
    log's own predictors score the same with or without them, so a change that refits the
    references (the censoring mode) recomputes only theirs.

    Parameters
    ----------
    log : tuple
        The prepared log's key: (result key, filters, recalibrations, references, fit).
    data : TrajectoryData
        The log handed to ``tpsviz.evaluate`` (another log object is identified by its digest).
    """

    def __init__(self, log: tuple, data):
        super().__init__()
        self._log, self._data = log, data

    def token(self, data, predictor: str | None = None) -> str:
        if data is not self._data:
            return log_digest(data)
        if predictor is not None and not is_reference(predictor):
            return repr(self._log[:3] + self._log[4:])  # (the references' part left out)
        return repr(self._log)

    def find(self, key: tuple):
        if not _part.has(key[0], key[1], key[2:], None):
            return False, None
        try:
            return True, _part(key[0], key[1], key[2:], _gone)
        except _Gone:  # dropped from the cache in between
            return False, None

    def keep(self, key: tuple, value, part: str) -> None:
        _part.store(value, key[0], key[1], key[2:], None)

    def get(self, part, data, key, compute):
        return _part(part, self.token(data), (key,), compute)


class _Gone(Exception):
    """A part found in the cache and dropped before it was read (never cached: an exception)."""


def _gone():
    raise _Gone()


@memo(max_entries=1000)
def _part(part: str, token: str, key: tuple, _compute):
    """One part of an Evaluation (``tpsviz.evaluation.parts``), cached under its log and its settings."""
    return _compute()


def evaluate_settings(cfg: Config, src: Source, n_boot: int | None = None) -> tpsviz.Settings:
    """The ``tpsviz.Settings`` of the sidebar: α, β, the schedule, the censoring mode with its q_Z
    source (the rollouts table in memory), ε, the bootstrap; no recalibration or references (the
    prepared log holds them).

    Parameters
    ----------
    cfg : Config
    src : Source
    n_boot : int, optional
        Default: the sidebar's.

    Returns
    -------
    tpsviz.Settings
    """
    qz = {}
    if cfg.censoring == "exact":
        ro = get_rollouts(src) if cfg.qz_source == "rollouts" else None
        if cfg.qz_source == "constant":
            qz = dict(q_z=float(cfg.qz_const))
        elif ro is not None and not is_failure(ro):
            qz = dict(q_z="rollouts", rollouts=ro)
    return tpsviz.Settings(alpha=float(cfg.alpha), beta=float(cfg.beta), schedule=cfg.schedule_obj,
                           censoring=cfg.censoring, eps=float(cfg.eps),
                           n_boot=int(cfg.n_boot if n_boot is None else n_boot), seed=SEED, **qz)


class BoardFirst(SharedParts):
    """:class:`SharedParts` that leave the verdicts undecided (their tests are the slowest part of a
    large log): the Overview draws the leaderboard from it first, then asks for the whole Evaluation,
    which finds every other part in the shared cache."""

    LATER = ("statistics", "verdicts", "versus")

    def get(self, part, data, key, compute):
        return {} if part in self.LATER else super().get(part, data, key, compute)

    def get_each(self, part, data, key, names, compute, split, combine):
        if part in self.LATER:
            return {}
        return super().get_each(part, data, key, names, compute, split, combine)


@memo(max_entries=24)
def _evaluation(log: tuple, predictors: tuple, key: tuple, verdicts: bool, _data, _settings):
    """``tpsviz.evaluate`` of the prepared log, cached under the call (log, predictors, settings);
    ``verdicts=False``: the same without the verdicts (:class:`BoardFirst`). Its parts are computed when
    a page reads them and are kept (and counted) in the shared cache as :class:`SharedParts`."""
    # the sidebar chose the forecasts (conversions, references): scored as they are, nothing added by default
    data = as_decided(replace(_data, predictors=list(predictors)))
    parts = (SharedParts if verdicts else BoardFirst)(log, data)
    return tpsviz.evaluate(data, settings=_settings, cache=parts)


def _call(cfg: Config | None, ci: bool, predictors=None) -> tuple:
    """(log key, predictors, settings key, prepared log, settings) of the ``evaluate`` call of ``cfg``."""
    cfg = cfg or current()
    src = current_source()
    refs, fit = cfg_refs(cfg), cfg_fit(cfg)
    data, _ = prepared(src, cfg.filters, cfg.recal, refs, fit)
    s = evaluate_settings(cfg, src, None if ci else 0)
    log = (result_key(src), cfg.filters, cfg.recal, refs, fit)
    chosen = cfg.predictors if predictors is None else predictors
    names = tuple(p for p in chosen if p in data.predictors)
    key = tuple((k, v) for k, v in vars(s).items() if k != "rollouts") + (("rollouts", src.rollouts_key),)
    return log, names, key, data, s


def evaluation(cfg: Config | None = None, *, ci: bool = True, verdicts: bool = True,
               predictors=None) -> BinaryEvaluation:
    """The Evaluation of the current log under ``cfg`` (default: the sidebar's settings).

    Parameters
    ----------
    cfg : Config, optional
    ci : bool
        With the bootstrap (the sidebar's replicates); False: ``n_boot=0`` (TPS ± z·SE), what a
        large log shows first.
    verdicts : bool
        False: the verdicts left undecided (an empty dict), for a page that draws the leaderboard
        first (the Overview).
    predictors : sequence of str, optional
        Default: the sidebar's selection (the Recalibration page asks for a pair).

    Returns
    -------
    BinaryEvaluation
        ``tpsviz.evaluate`` of the prepared log with the selected predictors under these settings.
    """
    return evaluation_and_key(cfg, ci=ci, verdicts=verdicts, predictors=predictors)[0]


def evaluation_and_key(cfg: Config | None = None, *, ci: bool = True, verdicts: bool = True,
                       predictors=None) -> tuple:
    """:func:`evaluation` and the key of its call (log, predictors, settings): what a result computed
    from that Evaluation is cached under (the prepared log is looked up once for both).

    Parameters
    ----------
    cfg : Config, optional
    ci, verdicts : bool
    predictors : sequence of str, optional

    Returns
    -------
    (BinaryEvaluation, tuple)
    """
    log, names, key, data, s = _call(cfg, ci, predictors)
    if _evaluation.has(log, names, key, verdicts, data, s):
        return _evaluation(log, names, key, verdicts, data, s), (log, names, key)
    with st.spinner("Scoring…"):
        return _evaluation(log, names, key, verdicts, data, s), (log, names, key)


def log_key(cfg: Config | None = None) -> tuple:
    """The key of the prepared log of ``cfg`` (source, filters, recalibrations, references, their fit):
    what a result read from the log alone, whatever the score's settings, is cached under."""
    return _call(cfg, False)[0]


# ----------------------------------------------------------------------------- parts read on demand
#: the settings a paired bootstrap of the usual metrics depends on (never α, β, the schedule or censoring)
_METRIC_SETTINGS = ("eps", "level", "seed", "cluster_by")


def _metric_key(key: tuple) -> tuple:
    return tuple((k, v) for k, v in key if k in _METRIC_SETTINGS)


@memo(max_entries=12, spinner="Paired TPS comparison…")
def _compared_tps(log: tuple, names: tuple, key: tuple, baseline: str, _ev):
    return _ev.compare(baseline, metrics=(), n_boot=0), _ev.z_matrix()


@memo(max_entries=12, spinner="Paired bootstrap of AUROC and T-ECE against the baseline…")
def _compared_metrics(log: tuple, names: tuple, key: tuple, baseline: str, n_boot: int, _ev):
    t = _ev.compare(baseline, metrics=("auroc", "tece"), n_boot=n_boot)
    return t[[c for c in t.columns if c.startswith(("auroc_", "tece_"))]]


@memo(max_entries=24, spinner="Computing AUROC / AUPRC / T-ECE…")
def _metric_intervals(log: tuple, names: tuple, key: tuple, n_boot: int, _ev):
    return _ev.metric_intervals(n_boot)


def compare_tps(baseline: str, cfg: Config | None = None, predictors=None):
    """(``ev.compare(baseline)`` of TPS alone — Δ, the analytic SE and Δ/SE —, ``ev.z_matrix()``) of the
    Evaluation without the bootstrap (:meth:`BinaryEvaluation.compare`); ``baseline`` is compared
    even when it is not selected."""
    selected = list((cfg or current()).predictors if predictors is None else predictors)
    chosen = tuple(dict.fromkeys(selected + [baseline]))
    ev, (log, names, key) = evaluation_and_key(cfg, ci=False, verdicts=False, predictors=chosen)
    table, z = _compared_tps(log, names, key, baseline, ev)
    shown = [n for n in names if n in selected]  # the heatmap: the selected predictors alone
    return table, z.loc[shown, shown]


def compare_metrics(baseline: str, n_boot: int, cfg: Config | None = None, predictors=None):
    """The AUROC and T-ECE columns of ``ev.compare(baseline)`` by a paired bootstrap of ``n_boot``
    replicates, kept under the settings they depend on (an α nudge finds them)."""
    selected = list((cfg or current()).predictors if predictors is None else predictors)
    chosen = tuple(dict.fromkeys(selected + [baseline]))
    ev, (log, names, key) = evaluation_and_key(cfg, ci=False, verdicts=False, predictors=chosen)
    return _compared_metrics(log, names, _metric_key(key), baseline, int(n_boot), ev)


def metric_intervals(n_boot: int, cfg: Config | None = None, predictors=None):
    """``ev.metric_intervals(n_boot)``: the usual metrics with bootstrap CIs, kept under the settings
    they depend on (an α nudge finds them); ``n_boot=0``: the points."""
    ev, (log, names, key) = evaluation_and_key(cfg, ci=False, verdicts=False, predictors=predictors)
    return _metric_intervals(log, names, _metric_key(key), int(n_boot), ev)
