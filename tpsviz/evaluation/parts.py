"""The parts of a binary log's :class:`~tpsviz.evaluation.record.BinaryEvaluation`, each computed by
one function and keyed by exactly the settings it depends on, and :class:`PartsMemo`, a bounded memo
that keeps them from one call of :func:`tpsviz.evaluate` to the next.

``BinaryEvaluation.compute(…, cache=memo)`` (and ``tpsviz.evaluate(…, cache=memo)``) asks the memo
for every part under the key :data:`DEPENDS` names for it, so a second call with one setting moved
recomputes only the parts that depend on that setting: moving α rescores TPS and its skill, never
the usual metrics (ε only), the verdicts' tests (the labels: censoring, q_Z, level, seed) or the
excess movement (the SE's clusters only). The memoised Evaluation is the one a fresh call returns,
number for number (``tests/test_parts.py`` proves both, setting by setting). The dashboard passes its
own memo, bounded for a team server (``pages/_ui/evaluation.py``; docs/deployment.md).

A part is identified by the log it is computed on (:meth:`PartsMemo.token`: a digest of the log's
rows, so a log read again from the same file finds its parts), the part's name and the values of
its settings.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import replace

import numpy as np
import pandas as pd

from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import ScoreSettings, compute_tps
from tpsviz.diagnostics.caveats import caveats
from tpsviz.diagnostics.leaderboard import metric_table, skill_table
from tpsviz.diagnostics.updating import excess_movement
from tpsviz.diagnostics.verdict import statistics_for, verdicts
from tpsviz.forecasts.versus import versus_best_reference

__all__ = ["DEPENDS", "PartsMemo", "evaluation_parts", "part_key", "qz_digest"]

#: the settings TPS depends on, without its bootstrap; ``"q_z"``: the q_Z of censored runs (exact mode only)
SCORE = ("alpha", "beta", "schedule", "censoring", "eps", "cluster_by", "interval", "q_z")
#: the bootstrap's settings
BOOT = ("n_boot", "level", "seed")
#: every part of the Evaluation → the settings it depends on (its memo key); computed in this order
DEPENDS = {
    "tps_points": SCORE,                       # compute_tps without the bootstrap
    "tps": SCORE + BOOT,                       # … with its intervals (TPSResult.with_intervals)
    "metrics": ("eps", "cluster_by"),          # AUROC, AUPRC, T-ECE: labelled runs only, no bootstrap
    "skill": SCORE + BOOT,                     # against the base rate, bootstrapped (≥ 200 replicates)
    "statistics": ("censoring", "q_z", "level", "seed"),  # the verdicts' tests: the labels ℓ only
    "verdicts": SCORE + BOOT,                  # the rules, from the tests and the skill
    "versus": SCORE + BOOT,                    # each real predictor against the best reference
    "warnings": SCORE + BOOT,                  # caveats
    "excess_movement": ("cluster_by",),        # rational updating: the forecasts alone
}


def qz_digest(q_z) -> object:
    """A hashable stand-in for the q_Z argument of :func:`tpsviz.compute_tps` (None: the log's column).

    Parameters
    ----------
    q_z : Series, ndarray, sequence or None

    Returns
    -------
    None or str
        A digest of the values (and of the index of a Series).
    """
    if q_z is None:
        return None
    h = hashlib.blake2b(digest_size=16)
    if isinstance(q_z, pd.Series):
        h.update(b"series")
        h.update(pd.util.hash_pandas_object(q_z, index=True).to_numpy().tobytes())
    else:
        h.update(np.ascontiguousarray(np.asarray(q_z, dtype=float)).tobytes())
    return h.hexdigest()


def part_key(part: str, settings: ScoreSettings, q_z=None) -> tuple:
    """The key of ``part`` under ``settings``: the values of the settings :data:`DEPENDS` names for it.

    The q_Z source counts in exact mode only: in the other modes no censored run's score or label
    uses it.

    Parameters
    ----------
    part : str
        A key of :data:`DEPENDS`.
    settings : ScoreSettings
    q_z : Series, ndarray or None

    Returns
    -------
    tuple of (name, value)
    """
    exact = settings.censoring == "exact"
    return tuple((name, (qz_digest(q_z) if exact else None) if name == "q_z" else getattr(settings, name))
                 for name in DEPENDS[part])


class PartsMemo:
    """A bounded memo of an Evaluation's parts (least recently used first out), safe across threads.

    Pass one to ``tpsviz.evaluate(…, cache=memo)`` (or :meth:`BinaryEvaluation.compute`) to reuse
    the parts a change of settings leaves as they were. One computation runs per key at a time: a
    second thread asking for a part being computed waits for it and takes it.

    Parameters
    ----------
    max_entries : int
        Parts kept (every part of one call is one entry; an Evaluation has nine).

    Attributes
    ----------
    computed : list of str
        The parts computed (not found in the memo), in order, since the memo was made or
        :meth:`clear` ed (what the tests read).
    """

    def __init__(self, max_entries: int = 72):
        if int(max_entries) < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = int(max_entries)
        self.computed: list[str] = []
        self._store: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict = {}
        self._tokens: dict = {}   # id(log) → (weak reference to it, its token)

    def __len__(self) -> int:
        return len(self._store)

    def clear(self) -> None:
        """Forget every part (and :attr:`computed`)."""
        with self._lock:
            self._store.clear()
            self.computed.clear()

    def token(self, data: TrajectoryData) -> str:
        """What identifies ``data`` in the keys: a digest of its rows, predictors and source, computed
        once per log object (a log read again from the same file has the same token).

        Parameters
        ----------
        data : TrajectoryData

        Returns
        -------
        str
        """
        with self._lock:
            seen = self._tokens.get(id(data))
            if seen is not None and seen[0]() is data:
                return seen[1]
        tok = log_digest(data)
        with self._lock:
            self._tokens = {k: v for k, v in self._tokens.items() if v[0]() is not None}
            self._tokens[id(data)] = (weakref.ref(data), tok)
        return tok

    def get(self, part: str, data: TrajectoryData, key: tuple, compute):
        """The part ``part`` of ``data`` under ``key``, from the memo or ``compute()`` (then kept).

        Parameters
        ----------
        part : str
        data : TrajectoryData
        key : tuple
            :func:`part_key` of the part (hashable).
        compute : callable
            Computes the part (no argument).

        Returns
        -------
        object
        """
        k = (part, self.token(data), key)
        with self._lock:
            if k in self._store:
                self._store.move_to_end(k)
                return self._store[k]
            lock = self._pending.setdefault(k, threading.Lock())
        try:
            with lock:
                with self._lock:
                    if k in self._store:
                        return self._store[k]
                value = compute()
                with self._lock:
                    self._store[k] = value
                    self.computed.append(part)
                    while len(self._store) > self.max_entries:
                        self._store.popitem(last=False)
                return value
        finally:
            with self._lock:
                if self._pending.get(k) is lock and not lock.locked():
                    del self._pending[k]


def log_digest(data: TrajectoryData) -> str:
    """A digest of a log's step and run tables, predictors, signals and source (a log object that
    cannot be hashed, e.g. one holding unhashable metadata, is identified by its identity instead).

    Parameters
    ----------
    data : TrajectoryData

    Returns
    -------
    str
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((list(data.predictors), sorted(data.signals.items()), str(data.source))).encode())
    try:
        for frame in (data.steps, data.trajectories):
            h.update(repr(list(frame.columns)).encode())
            h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    except TypeError:
        return f"id:{id(data)}"
    return h.hexdigest()


class _Direct:
    """No memo: every part computed (what ``compute`` does without ``cache``)."""

    @staticmethod
    def get(part, data, key, compute):
        return compute()


def evaluation_parts(data: TrajectoryData, settings: ScoreSettings, q_z=None, cache=None) -> dict:
    """Every part of the Evaluation of ``data`` under ``settings``, each from ``cache`` when it holds it.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
    q_z : Series or ndarray, optional
        q_Z of censored runs in exact mode.
    cache : PartsMemo, optional
        Or any object with the same ``get(part, data, key, compute)``; None: compute every part.

    Returns
    -------
    dict
        ``result, metrics, skill, verdicts, versus, warnings, excess_movement``.
    """
    c = cache if cache is not None else _Direct()

    def get(part, compute):
        return c.get(part, data, part_key(part, settings, q_z), compute)

    names = list(data.predictors)
    points = get("tps_points", lambda: compute_tps(data, replace(settings, n_boot=0), q_z=q_z))
    result = get("tps", lambda: points.with_intervals(settings.n_boot, settings.seed, settings.level))
    metrics = get("metrics", lambda: metric_table(data, settings, n_bins=10, n_boot=0))
    skill = get("skill", lambda: skill_table(data, settings, q_z=q_z, n_boot=max(settings.n_boot, 200),
                                             result=result))
    stats = get("statistics", lambda: statistics_for(data, replace(settings, n_boot=0), names, q_z))
    verdict = get("verdicts", lambda: verdicts(data, settings, q_z=q_z, skill=skill, statistics=stats))
    versus = get("versus", lambda: versus_best_reference(data, settings, q_z, result))
    warn = get("warnings", lambda: caveats(data, settings, result.summary, skill))
    moves = get("excess_movement", lambda: excess_movement(data, names, settings.cluster_by))
    return dict(result=result, metrics=metrics, skill=skill, verdicts=verdict, versus=versus, warnings=warn,
                excess_movement=moves)
