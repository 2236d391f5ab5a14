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

from tpsviz.core import tps as TP
from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import ScoreSettings, TPSResult
from tpsviz.diagnostics import caveats as CV
from tpsviz.diagnostics import leaderboard as LB
from tpsviz.diagnostics import updating as UP
from tpsviz.diagnostics import verdict as VD
from tpsviz.forecasts import versus as VS

__all__ = ["DEPENDS", "PER_PREDICTOR", "ONE_LOG", "PartsMemo", "LazyParts", "evaluation_parts", "part_key", "qz_digest", "log_digest"]

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
#: the parts kept one predictor at a time, each computed alone as in a joint call: a new selection of
#: predictors finds every part it had (the others are kept for the whole selection)
PER_PREDICTOR = ("tps_points", "metrics", "skill", "statistics")
#: of those, the parts whose pieces combine only from one log object (``TPSResult.combine``): each
#: predictor's piece is identified by the whole log (:meth:`PartsMemo.token` without a predictor)
ONE_LOG = ("tps_points",)


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
    the parts a change of settings leaves as they were. One computation runs per key at a time
    (:meth:`get`): a second thread asking for a part being computed waits for it and takes it.

    A subclass keeps the parts elsewhere by overriding :meth:`token`, :meth:`find`, :meth:`keep` and
    :meth:`get` (the dashboard's keeps them in its shared cache: ``pages/_ui/evaluation.py``).

    Parameters
    ----------
    max_entries : int
        Parts kept (a part kept per predictor counts once per predictor: an Evaluation of six
        predictors is 29 entries).

    Attributes
    ----------
    computed : list of str
        The parts computed (not found in the memo), in order, since the memo was made or
        :meth:`clear` ed (what the tests read).
    """

    def __init__(self, max_entries: int = 256):
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

    def token(self, data: TrajectoryData, predictor: str | None = None) -> str:
        """What identifies ``data`` in the keys: :func:`log_digest`, computed once per log object (a
        log read again from the same file has the same token, whichever predictors it selects).

        Parameters
        ----------
        data : TrajectoryData
        predictor : str, optional
            The predictor of a part kept per predictor (a subclass may identify the log by less
            than all of it for that predictor).

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

    def find(self, key: tuple) -> tuple[bool, object]:
        """(True, the part) when ``key`` is kept, else (False, None)."""
        with self._lock:
            if key in self._store:
                self._store.move_to_end(key)
                return True, self._store[key]
        return False, None

    def keep(self, key: tuple, value, part: str) -> None:
        """Keep ``value`` under ``key`` (the least recently used part goes when the memo is full)."""
        with self._lock:
            self._store[key] = value
            self.computed.append(part)
            while len(self._store) > self.max_entries:
                self._store.popitem(last=False)

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
        hit, value = self.find(k)
        if hit:
            return value
        with self._lock:
            lock = self._pending.setdefault(k, threading.Lock())
        try:
            with lock:
                hit, value = self.find(k)
                if hit:
                    return value
                value = compute()
                self.keep(k, value, part)
                return value
        finally:
            with self._lock:
                if self._pending.get(k) is lock and not lock.locked():
                    del self._pending[k]

    def get_each(self, part: str, data: TrajectoryData, key: tuple, names: list, compute, split, combine):
        """A part kept one predictor at a time: the predictors not kept are computed together
        (``compute(missing)``) and kept one by one (``split(joint, name)``); the result is the joint
        one when none was kept, else ``combine`` of every predictor's part, in the order of ``names``.

        Parameters
        ----------
        part : str
        data : TrajectoryData
        key : tuple
        names : list of str
        compute : callable
            ``compute(names)``: the part of several predictors.
        split, combine : callable
            One predictor's part of a joint one; one part from a list of predictors' parts.

        Returns
        -------
        object
        """
        keys = {n: (part, self.token(data, None if part in ONE_LOG else n), key, n) for n in names}
        found = {}
        for n, k in keys.items():
            hit, value = self.find(k)
            if hit:
                found[n] = value
        missing = [n for n in names if n not in found]
        if not missing:
            return combine([found[n] for n in names])
        joint = compute(missing)
        for n in missing:
            self.keep(keys[n], split(joint, n), part)
        if not found:
            return joint
        return combine([found[n] if n in found else split(joint, n) for n in names])


def log_digest(data: TrajectoryData) -> str:
    """A digest of a log's step and run tables, signals and source, not of which predictors it selects
    (a log object that cannot be hashed, e.g. one holding unhashable metadata, is identified by its
    identity instead).

    Parameters
    ----------
    data : TrajectoryData

    Returns
    -------
    str
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((sorted(data.signals.items()), str(data.source))).encode())
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

    @staticmethod
    def get_each(part, data, key, names, compute, split, combine):
        return compute(names)


def _row(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    return frame.loc[[name]]


def _concat(parts: list) -> pd.DataFrame:
    return pd.concat(parts)


def _item(d: dict, name: str) -> dict:
    return {name: d[name]}


def _merge(parts: list) -> dict:
    return {k: v for p in parts for k, v in p.items()}


def _only(result: TPSResult, name: str) -> TPSResult:
    return result.only([name])


#: how a part kept per predictor is cut and put together again
_SPLIT = {"tps_points": (_only, TPSResult.combine), "metrics": (_row, _concat), "skill": (_row, _concat),
          "statistics": (_item, _merge)}


def evaluation_parts(data: TrajectoryData, settings: ScoreSettings, q_z=None, cache=None) -> dict:
    """Every part of the Evaluation of ``data`` under ``settings``, each from ``cache`` when it holds it.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
    q_z : Series or ndarray, optional
        q_Z of censored runs in exact mode.
    cache : PartsMemo, optional
        Or any object with the same ``get`` and ``get_each``; None: compute every part.

    Returns
    -------
    dict
        ``result, metrics, skill, verdicts, versus, warnings, excess_movement``.
    """
    parts = LazyParts(data, settings, q_z, cache)
    return {name: parts[name] for name in LazyParts.NAMES}


class LazyParts:
    """The parts of one Evaluation, each computed when it is first read (with the parts it needs) and
    then kept: an Evaluation asked only for its TPS (``compare``, ``monitor``) never runs the verdicts'
    tests. Safe across threads (one computation of a part at a time).

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
    q_z : Series or ndarray, optional
        q_Z of censored runs in exact mode.
    cache : PartsMemo, optional
        Or any object with the same ``get`` and ``get_each``; None: every part computed once here.
    """

    #: the parts, by the names :class:`~tpsviz.evaluation.record.BinaryEvaluation` reads them
    NAMES = ("result", "metrics", "skill", "verdicts", "versus", "warnings", "excess_movement")

    def __init__(self, data: TrajectoryData, settings: ScoreSettings, q_z=None, cache=None):
        self.data, self.settings, self.q_z = data, settings, q_z
        self._cache = cache if cache is not None else _Direct()
        self._names = list(data.predictors)
        self._got: dict = {}
        self._lock = threading.RLock()

    def __getitem__(self, name: str):
        with self._lock:
            if name not in self._got:
                self._got[name] = getattr(self, f"_{name}")()
            return self._got[name]

    def computed(self) -> tuple:
        """The parts read so far (each computed or taken from the cache once)."""
        with self._lock:
            return tuple(self._got)

    def _get(self, part: str, compute):
        c, key = self._cache, part_key(part, self.settings, self.q_z)
        if part in PER_PREDICTOR:
            return c.get_each(part, self.data, key, self._names, compute, *_SPLIT[part])
        return c.get(part, self.data, key + (("predictors", tuple(self._names)),), compute)

    def _points(self):
        d, s, q = self.data, self.settings, self.q_z
        return self._get("tps_points", lambda ns: TP.compute_tps(d, replace(s, n_boot=0), ns, q_z=q))

    def _result(self):
        s, points = self.settings, self["points"]
        return self._get("tps", lambda: points.with_intervals(s.n_boot, s.seed, s.level))

    def _metrics(self):
        return self._get("metrics", lambda ns: LB.metric_table(self.data, self.settings, ns, n_bins=10, n_boot=0))

    def _skill(self):
        d, s, q, result = self.data, self.settings, self.q_z, self["result"]
        return self._get("skill", lambda ns: LB.skill_table(d, s, ns, q_z=q, n_boot=max(s.n_boot, 200), result=result))

    def _statistics(self):
        d, s, q = self.data, self.settings, self.q_z
        return self._get("statistics", lambda ns: VD.statistics_for(d, replace(s, n_boot=0), ns, q))

    def _verdicts(self):
        skill, stats = self["skill"], self["statistics"]
        return self._get("verdicts", lambda: VD.verdicts(self.data, self.settings, q_z=self.q_z, skill=skill,
                                                          statistics=stats))

    def _versus(self):
        result = self["result"]
        return self._get("versus", lambda: VS.versus_best_reference(self.data, self.settings, self.q_z, result))

    def _warnings(self):
        result, skill = self["result"], self["skill"]
        return self._get("warnings", lambda: CV.caveats(self.data, self.settings, result.summary, skill))

    def _excess_movement(self):
        return self._get("excess_movement",
                         lambda: UP.excess_movement(self.data, self._names, self.settings.cluster_by))
