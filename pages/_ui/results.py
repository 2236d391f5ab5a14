"""Every result a page shows, computed by the core and cached once (docs/architecture.md, "Analysis").

An :class:`Analysis` is a frozen, hashable description of what is analysed: the log (its key
with its rollouts), the metadata filters, the recalibrations, the predictors and the
``ScoreSettings`` (with the q_Z source of exact mode). Each result below is one core call,
declared with :func:`result`, which caches it in the shared cache (``memo``) under the parts of
the analysis it depends on, and nothing else:

- ``keep`` names those parts; reliability diagrams keep none of the score's settings, so moving
  α or β recomputes nothing there, and a verdict's tests keep only the labels (censoring, q_Z);
- ``per_predictor`` results are cached one predictor at a time and combined, so deselecting a
  predictor or adding a recalibrated one computes only what is new.

Pages call a result with no analysis for the current settings (``tps()``), or with one they
changed (``tps(analysis(censoring="exact"))``). A computation receives the analysis reduced to
its key (so it cannot use what it is not keyed on) and an :class:`Inputs` (the prepared log, the
source, the q_Z of exact mode).
"""

from __future__ import annotations

import functools
import threading
from contextlib import nullcontext
from dataclasses import dataclass, fields, replace

import pandas as pd
import streamlit as st

import tpsviz
from tpsviz.core.censoring import CENSORING_LABELS
from tpsviz.core.tps import ScoreSettings, TPSResult
from tpsviz.diagnostics import audit as AU
from tpsviz.diagnostics import combine as CB
from tpsviz.diagnostics import compare as CP
from tpsviz.diagnostics import decomposition as DC
from tpsviz.diagnostics import demonstrators as D
from tpsviz.diagnostics import groups as GR
from tpsviz.diagnostics import reliability as RL
from tpsviz.diagnostics import updating as UP
from tpsviz.diagnostics import versus_runs as VR
from tpsviz.diagnostics.monitoring import deferral as DF
from tpsviz.diagnostics.monitoring import monitor as MO
from tpsviz.forecasts import versus as VS
from tpsviz.report import figures as F

from .loading import cfg_fit, cfg_refs, get_data, get_rollouts, is_failure, load_base, prepared, qz_choice, result_key
from .memo import approx_bytes, memo
from .references import keep_refs
from .state import SEED, Config, Source, current, current_source
from .wording import say

SETTINGS = tuple(f.name for f in fields(ScoreSettings))   # alpha, beta, schedule, censoring, eps, n_boot, level, seed
ALL = SETTINGS + ("qz",)   # "qz": the q_Z source counts even when the censoring mode is not exact
_NO_BOOT = tuple(f for f in SETTINGS if f != "n_boot")   # point results: the bootstrap plays no part
_DEFAULT = ScoreSettings()


@dataclass(frozen=True)
class Analysis:
    """What is analysed: hashable, the key of every cached result.

    Attributes
    ----------
    data : str
        The log and its rollouts (``loading.result_key``).
    filters, recal : tuple
        Metadata filters (``selection.filter_mask``) and recalibration specs (``state.parse_recal``).
    predictors : tuple of str
    settings : ScoreSettings
        α, β, schedule, censoring, ε, bootstrap replicates, level, seed.
    qz : tuple
        (source, constant) of q_Z in exact mode (``tpsviz.diagnostics.audit.qz_for_source``).
    refs : tuple
        The reference forecasters added to the log (``references.refs_key``; () = none).
    fit : tuple
        The censoring mode (and q_Z source) the recalibrations' maps are fitted for
        (``loading.fit_key``; () = no recalibration): the sidebar's, whatever ``settings`` scores.
    """

    data: str
    filters: tuple = ()
    recal: tuple = ()
    predictors: tuple = ()
    settings: ScoreSettings = _DEFAULT
    qz: tuple = ("log", 0.5)
    refs: tuple = ()
    fit: tuple = ()

    def key(self, keep: tuple) -> "Analysis":
        """This analysis reduced to the parts in ``keep`` (the others at their defaults). q_Z
        counts only in exact mode unless ``"qz"`` is kept explicitly."""
        s = ScoreSettings(**{f: getattr(self.settings if f in keep else _DEFAULT, f) for f in SETTINGS})
        exact = "censoring" in keep and s.censoring == "exact"
        return replace(self, settings=s, qz=self.qz if ("qz" in keep or exact) else (),
                       refs=keep_refs(self.refs, self.predictors))


def analysis(cfg: Config | None = None, src: Source | None = None, *, predictors=None,
             censoring: str | None = None, n_boot: int | None = None) -> Analysis:
    """The analysis of the current settings (the sidebar's), optionally changed."""
    cfg = cfg or current()
    src = src or current_source()
    return Analysis(data=result_key(src), filters=cfg.filters, recal=cfg.recal,
                    predictors=tuple(cfg.predictors if predictors is None else predictors),
                    settings=cfg.score_settings(censoring=censoring, n_boot=n_boot),
                    qz=(cfg.qz_source, float(cfg.qz_const)), refs=cfg_refs(cfg), fit=cfg_fit(cfg))


@dataclass(frozen=True)
class Inputs:
    """What a computation reads besides its analysis: the prepared log and its source."""

    data: object
    src: Source
    qz: tuple

    def q_z(self, censoring: str | None = None, settings: ScoreSettings | None = None):
        """``q_z`` for compute_tps: the chosen q_Z source in exact mode (``censoring``), else None."""
        if (censoring or (settings.censoring if settings else "exact")) != "exact" or not self.qz:
            return None
        return qz_choice(self.data, self.src, self.qz)[0]


_NESTING = threading.local()   # results being computed by this thread (only the outermost shows a spinner)


def result(spinner: str, keep: tuple = SETTINGS, max_entries: int = 24, per_predictor=None, split=None,
           one_log: bool = False):
    """Declare a cached result: ``fn(a, x, *args, **kw)`` → ``fn(*args, a=None, src=None, **kw)``.

    Parameters
    ----------
    spinner : str
        Shown while it is computed.
    keep : tuple of str
        The parts of the analysis it depends on: fields of ScoreSettings (default: all; the q_Z
        source then counts in exact mode only) and ``"qz"`` (always).
    max_entries : int
        Most results kept (per predictor for ``per_predictor`` results).
    per_predictor : callable, optional
        Cache one result per predictor and combine the list with this function.
    split : callable, optional
        ``split(result, name)``: one predictor's part of a result computed for several. The
        predictors not cached yet are then computed together (one bootstrap over all their
        columns, the same numbers as one at a time) and kept one by one.
    one_log : bool
        Its parts combine only from one log object (``TPSResult.combine``): every key keeps the
        references' part; else only a reference's key does (the others score the same without).
    """

    def wrap(fn):
        def compute(key: Analysis, args: tuple, kw: tuple, _src: Source):
            data, _ = prepared(_src, key.filters, key.recal, key.refs, key.fit)
            return fn(key, Inputs(data, _src, key.qz), *args, **dict(kw))

        compute.__module__, compute.__qualname__ = fn.__module__, fn.__qualname__
        cached = memo(max_entries=max_entries)(compute)

        @functools.wraps(fn)
        def call(*args, a: Analysis | None = None, src: Source | None = None, **kw):
            a = a or analysis()
            src = src or current_source()
            k, kw = a.key(keep), tuple(sorted(kw.items()))
            names = list(dict.fromkeys(k.predictors))
            keys = [k] if per_predictor is None or not names else [
                replace(k, predictors=(n,), refs=k.refs if one_log else keep_refs(k.refs, (n,))) for n in names]
            # one spinner for all that is missing, and none inside another result's (each costs a timer)
            depth = getattr(_NESTING, "depth", 0)
            missing = [x for x in keys if not cached.has(x, args, kw, src)]
            _NESTING.depth = depth + 1
            try:
                with st.spinner(spinner) if depth == 0 and missing else nullcontext():
                    joint = _joint(cached, compute, split, missing, (args, kw, src)) if split and len(missing) > 1 else {}
                    parts = [joint[x] if x in joint else cached(x, args, kw, src) for x in keys]
            finally:
                _NESTING.depth = depth
            if per_predictor is None or not names:
                return parts[0]
            uncut = [(x, p) for x, p in zip(keys, parts) if isinstance(p, JointPart) and not p.cut]
            out = assemble(parts, per_predictor, split)
            for x, p in uncut:  # measured again: the copy cut out of the joint result counts from now on
                if p.cut:
                    cached.store(p, x, args, kw, src)
            return out

        return call

    return wrap


class JointPart:
    """One predictor's part of a result computed jointly for several (:func:`_joint`), kept in the
    cache as a reference to the joint result and cut out of it only when used on its own.

    A page that asks again for the same predictors gets the joint result itself
    (:func:`assemble`), with no copy of each predictor's rows and no concatenation of them back
    (on the demo, 40% of the time of scoring a new α went to that). Its cache size is its share of
    the joint result, so that the parts together count the joint result once, plus the part cut
    out of it once it has been (:attr:`cut`; the cache measures the entry again then: ``result``).
    While any part is cached the whole joint result stays in memory, so after some of its parts
    have been evicted the survivors count less than they hold (at most the joint result).

    Parameters
    ----------
    joint : object
        The result computed for several predictors.
    name : str
        This part's predictor.
    names : tuple of str
        The predictors of ``joint``, in its order.
    split : callable
        ``split(joint, name)``: the part on its own.
    share : int
        Bytes counted for this part (``memo.approx_bytes``).
    """

    __slots__ = ("joint", "name", "names", "split", "share", "_value")

    def __init__(self, joint, name: str, names: tuple, split, share: int):
        self.joint, self.name, self.names, self.split, self.share = joint, name, names, split, share
        self._value = None

    def value(self):
        """The part on its own (cut out once, then kept)."""
        if self._value is None:
            self._value = self.split(self.joint, self.name)
        return self._value

    @property
    def cut(self) -> bool:
        """Has the part been cut out of the joint result (and kept)?"""
        return self._value is not None

    def approx_bytes(self) -> int:
        """The memory this part accounts for in the cache (``memo.approx_bytes``): its share of
        the joint result, and the part cut out of it once it has been."""
        return self.share + (approx_bytes(self._value) if self._value is not None else 0)


def assemble(parts: list, per_predictor, split):
    """One result from per-predictor parts: the joint result itself when the parts are all of one,
    in its order (what ``per_predictor`` of the split parts would give), else ``per_predictor`` of
    the parts, each cut out of its joint result where it is a :class:`JointPart`.

    Parameters
    ----------
    parts : list
        Per-predictor results (cached values or :class:`JointPart`).
    per_predictor : callable
        Combines a list of parts.
    split : callable or None
        The result's ``split`` (None: parts are never joint).

    Returns
    -------
    object
    """
    first = parts[0] if parts else None
    if (split is not None and isinstance(first, JointPart)
            and all(isinstance(p, JointPart) and p.joint is first.joint for p in parts)
            and tuple(p.name for p in parts) == first.names):
        return first.joint
    return per_predictor([p.value() if isinstance(p, JointPart) else p for p in parts])


def _joint(cached, compute, split, missing: list, rest: tuple) -> dict:
    """Compute the predictors still missing together and keep them one by one.

    One computation per key also here (docs/architecture.md, "Caching"): the keys' locks in the
    cache are held while they are computed, so a session missing some of the same predictors
    waits and then takes them from the cache. The locks are taken in the order of the predictor
    names, the same in every thread, so sessions missing overlapping sets cannot wait for each
    other; a nested result (``tps`` asking for ``tps_points``) takes the locks of another
    function, further down. What another session computed while this one waited is not computed
    again; a single predictor left is computed through the cache as usual. A computation that
    raises (a rerun stopping it) releases the locks and keeps nothing. Each predictor is kept as a
    :class:`JointPart` of the joint result.

    Parameters
    ----------
    cached : callable
        The result's cached computation (``memo``), keyed on (analysis, args, kw, src).
    compute : callable
        The same computation, uncached.
    split : callable
        ``split(result, name)``: one predictor's part of the joint result.
    missing : list of Analysis
        Per-predictor keys not cached when the call began (two or more).
    rest : tuple
        The call's other arguments: (args, kw as sorted items, src).

    Returns
    -------
    dict
        {per-predictor key: its JointPart} of what this thread computed (possibly empty).
    """
    order = sorted(missing, key=lambda x: x.predictors[0])
    with cached.hold([(x, *rest) for x in order]):
        still = [x for x in missing if not cached.has(x, *rest)]
        if len(still) < 2:
            return {}
        names = tuple(x.predictors[0] for x in still)
        refs = next((x.refs for x in still if x.refs), ())  # the log with its references if one is missing
        both = compute(replace(still[0], predictors=names, refs=refs), *rest)
        share = approx_bytes(both) // len(still)
        parts = {x: JointPart(both, x.predictors[0], names, split, share) for x in still}
        for x, part in parts.items():
            cached.store(part, x, *rest)
        return parts


def _only(result: TPSResult, name: str) -> TPSResult:
    return result.only([name])


def _row(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    return frame.loc[[name]]


def _item(d: dict, name: str) -> dict:
    return {name: d[name]}


def _concat(parts):
    return pd.concat(parts) if parts else pd.DataFrame()


def _merge(parts):
    return {k: v for p in parts for k, v in p.items()}


# ----------------------------------------------------------------------------- TPS and skill
@result("Scoring…", keep=_NO_BOOT, per_predictor=TPSResult.combine, split=_only,
        max_entries=192, one_log=True)
def tps_points(a, x):
    """tps.compute_tps without the bootstrap (means and SEs): what a page shows first."""
    return tpsviz.compute_tps(x.data, replace(a.settings, n_boot=0), list(a.predictors),
                              q_z=x.q_z(settings=a.settings))


@result("Bootstrap CIs of TPS…", per_predictor=TPSResult.combine, split=_only, max_entries=192,
        one_log=True)
def tps(a, x):
    """tps.compute_tps under the analysis: the point result with its bootstrap CIs added
    (TPSResult.with_intervals; the same numbers, the log is not scored again)."""
    return tps_points(a=a, src=x.src).with_intervals(a.settings.n_boot)


@result("Drift of the forecasts…", keep=())
def drift(a, x, by: str):
    """updating.drift_table of each predictor, by forecast bin or by step (steps above 30 pooled)."""
    return {n: UP.drift_table(x.data, n, by=by, max_step=30) for n in a.predictors}


@result("Deferral curves…", keep=("n_boot", "level", "seed"))
def deferral_curves(a, x, utility: tuple, censored: str):
    """deferral.deferral of each predictor under one utility table (success, failure, hand-off,
    per step); the bootstrap is capped at 1,000 replicates (the best τ's CI)."""
    u = DF.Utility(*utility)
    n_boot = min(a.settings.n_boot, 1000)
    return {n: DF.deferral(x.data, n, u, censored=censored, n_boot=n_boot, level=a.settings.level,
                        seed=a.settings.seed) for n in a.predictors}


@result("Monitoring over time…", keep=("alpha", "beta", "schedule", "censoring", "eps", "level", "seed"))
def monitoring(a, x, by, window: int, alarm_on: str, baseline, shift: float, target_arl: float):
    """monitor.monitor of the analysis's predictors: windows and the CUSUM alarm (no bootstrap)."""
    return MO.monitor(x.data, a.settings, by=by, window=window, predictors=list(a.predictors), alarm_on=alarm_on,
                   baseline=baseline, shift=shift, target_arl=target_arl, q_z=x.q_z(settings=a.settings))


# ----------------------------------------------------------------------------- groups and logs
@result("Scoring each group…", max_entries=12)
def groups(a, x, by: str, base: str | None, pair_on: str):
    """groups.group_table split by ``by`` and group_difference of every group against ``base``
    (default: groups.default_base)."""
    q = x.q_z(settings=a.settings)
    table = GR.group_table(x.data, by, a.settings, list(a.predictors), q_z=q)
    names = list(dict.fromkeys(table.index.get_level_values("group")))
    base = base if base in names else GR.default_base(table)
    diffs = {g: GR.group_difference(x.data, by, base, g, a.settings, list(a.predictors), q_z=q, pair_on=pair_on)
             for g in names if g != base}
    return table, base, diffs


@result("Fitting each group's own references…", max_entries=6)
def own_references_groups(a, x, by: str):
    """forecasts.versus.versus_own_references of the groups of ``by``: each group's real predictors against
    references fitted on that group's runs only."""
    labels = GR.group_labels(x.data, by)
    return VS.versus_own_references(x.data, labels, list(dict.fromkeys(labels)), a.settings)


def _both_logs(a: Analysis, src: Source, cand: Source):
    """(both logs in one, the column naming the log), or the candidate's LoadFailure."""
    got = load_base(cand)
    if is_failure(got):
        return got
    base, _ = prepared(src, a.filters, a.recal, a.refs, a.fit)
    column = CB.free_column(base, got)  # "log", or "log_2" … when a log has a column of that name
    return CB.combine_logs(base, got, column=column, allow_no_predictor=True), column  # success needs no forecast


@memo(max_entries=4, spinner="Fitting each log's own references…")
def _own_two_logs(a: Analysis, cand_key: str, _src: Source, _cand: Source):
    got = _both_logs(a, _src, _cand)
    if is_failure(got):
        return {}
    both, column = got
    return VS.versus_own_references(both, GR.group_labels(both, column), ["baseline", "candidate"], a.settings)


def own_references_two_logs(cand: Source, a: Analysis | None = None) -> dict:
    """Each log's real predictors against references fitted on that log's runs only ({} when the candidate
    cannot be read: two_logs says why)."""
    a = (a or analysis()).key(ALL)
    return _own_two_logs(a, cand.key, current_source(), cand)


@memo(max_entries=6, spinner="Reading the candidate log and scoring both…")
def _two_logs(a: Analysis, cand_key: str, pair_on: str, _src: Source, _cand: Source):
    got = _both_logs(a, _src, _cand)
    if is_failure(got):
        return got
    both, column = got
    vs = VR.versus_runs(both, column, "baseline", "candidate", GR.group_labels(both, column), pair_on=pair_on,
                        cluster_by=a.settings.cluster_by)
    if not (names := [p for p in a.predictors if p in both.predictors]):  # success, steps, cost, duration only
        return None, "baseline", {}, list(a.predictors), vs
    table = GR.group_table(both, column, a.settings, names)
    diff = GR.group_difference(both, column, "baseline", "candidate", a.settings, names,
                               pair_on=pair_on if vs.attrs["same_tasks"] else None)  # never across task sets
    return table, "baseline", {"candidate": diff}, [p for p in a.predictors if p not in names], vs


def two_logs(cand: Source, pair_on: str = "auto", a: Analysis | None = None):
    """The current log (baseline, filtered, recalibrated) against a second log (candidate): (table or None, base,
    {"candidate": difference} or {}, predictors left out, versus_runs' table), or the candidate's LoadFailure."""
    a = (a or analysis()).key(ALL)
    return _two_logs(a, cand.key, pair_on, current_source(), cand)


@result("Shift between censoring treatments…", keep=ALL)  # q_Z of exact mode whatever the current mode
def shift(a, x, from_mode: str, to_mode: str):
    """compare.censoring_shift between two modes (q_Z of exact mode from the chosen source)."""
    return CP.censoring_shift(x.data, a.settings, list(a.predictors), from_mode, to_mode, q_z=x.q_z("exact"))


@result("Monte-Carlo audit…", max_entries=12)
def mc_audit(a, x):
    """audit.mc_audit of the source's rollouts (call only when loading.get_rollouts() is a table)."""
    return AU.mc_audit(x.data, get_rollouts(x.src), a.settings, list(a.predictors))


def metric_boot(cfg: Config | None = None) -> int:
    """Bootstrap replicates of AUROC/AUPRC/T-ECE: the sidebar value, or 'auto' = the TPS value."""
    cfg = cfg or current()
    return int(cfg.metric_boot) if cfg.metric_boot >= 0 else int(cfg.n_boot)


def metric_boot_note(cfg: Config | None = None) -> str:
    nb = metric_boot(cfg)
    if nb == 0:
        return "metric CIs off (0 replicates; raise 'Metric bootstrap' in the sidebar's Uncertainty box)"
    return f"metric CIs from {nb} replicates"


# ----------------------------------------------------------------------------- why-not-AUROC demos
@result("Building the why-not-AUROC demonstrations…", keep=_NO_BOOT, max_entries=12)
def demos(a, x):
    """tpsviz.diagnostics.demonstrators on the log; a failing demonstration gives its message instead."""
    out = {}
    for k, fn in (("distortion", D.monotone_distortion), ("binmean", D.bin_mean_forecast),
                  ("phimean", D.phi_mean_manipulation)):
        try:
            out[k] = fn(x.data, replace(a.settings, n_boot=0))
        except ValueError as e:
            out[k] = say(e)
    return out


# ----------------------------------------------------------------------------- step contributions
@result("Aggregating per-step contributions…", keep=_NO_BOOT, max_entries=12)
def step_means(a, x):
    """figures.prepare_step_means of the per-step contributions w_t·S."""
    return F.prepare_step_means(tps_points(a=a, src=x.src).step_contributions(list(a.predictors)))


@result("Building the heatmap…", keep=_NO_BOOT, max_entries=12)
def heatmap(a, x, pred: str):
    """figures.prepare_heatmap of one predictor's per-step contributions."""
    return F.prepare_heatmap(tps_points(a=a, src=x.src).step_contributions([pred]), x.data.trajectories)


# ----------------------------------------------------------------------------- reliability
@result("Reliability diagrams (CORP curves and consistency bands)…", keep=("seed",), max_entries=12)
def reliability(a, x, scope: str, step, pseudo: bool, n_bins: int = 10):
    """reliability.reliability_panels (200 consistency-band replicates)."""
    return RL.reliability_panels(x.data, list(a.predictors), scope, step, pseudo, n_bins=n_bins, n_boot=200,
                              seed=SEED)


@result("CORP decomposition…", keep=("alpha", "beta", "eps"))
def decomposition(a, x, scope: str, step, pseudo: bool, by_step: bool = True):
    """decomposition.decompose_scope under the analysis's α, β and ε."""
    s = a.settings
    return DC.decompose_scope(x.data, list(a.predictors), s.alpha, s.beta, s.eps, scope, step, pseudo, by_step)


# ----------------------------------------------------------------------------- words and colours
def censoring_label(cfg: Config | None = None, censoring: str | None = None) -> str:
    """The censoring mode in words, with the q_Z source that is really used in exact mode."""
    cfg = cfg or current()
    mode = censoring or cfg.censoring
    if mode != "exact":
        return CENSORING_LABELS[mode]
    if cfg.qz_source == "constant":
        return f"exact (q_Z = {cfg.qz_const:g} for every censored run)"
    if cfg.qz_source == "rollouts":
        src = current_source()
        ro = get_rollouts(src) if src is not None else None
        if ro is not None and not is_failure(ro):
            return "exact (q_Z = Monte-Carlo mean of the rollouts)"
        return "exact (no usable rollouts: q_Z from the log)"
    return CENSORING_LABELS["exact"]


def colors(data=None) -> dict:
    """Colour per predictor of the whole dataset (stable under selection)."""
    if data is None:
        data, _ = get_data()
    return F.predictor_colors(list(getattr(data, "predictors", [])))


def selected_colors(cfg: Config | None = None, data=None) -> dict:
    cfg = cfg or current()
    allc = colors(data)
    return {p: allc[p] for p in cfg.predictors if p in allc}
