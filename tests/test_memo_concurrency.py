"""Sessions asking for the same results at the same moment (pages/_ui/memo.py, pages/_ui/results.py).

docs/architecture.md, "Caching": one computation runs per key at a time, the others wait for it
and take its value from the cache; exceptions are never cached. A Streamlit rerun or stop raises
an exception derived from ``BaseException`` inside a computation: it must release the key's lock
and leave nothing behind. ``per_predictor`` results with ``split`` compute the predictors not
cached yet together and keep them one by one; several sessions missing the same (or overlapping)
predictors compute each predictor once, without deadlocks, also when a result's computation
asks for another result.

Every thread is a daemon joined with a timeout, so a deadlock fails a test instead of hanging it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from streamlit.runtime.scriptrunner import RerunException, StopException

from pages._ui import memo as M
from pages._ui import results as R
from tpsviz.core.cancel import Cancelled, cancel_when

TIMEOUT = 20.0   # seconds a test waits for its threads before calling it a deadlock


@pytest.fixture(autouse=True)
def _fresh_cache():
    M.clear_all()
    M._KEY_LOCKS.clear()  # a lock leaked by one test must fail that test, not the next ones
    yield
    M.clear_all()


@pytest.fixture
def fake_log(monkeypatch):
    """results.py computations read a stand-in for the prepared log (no Streamlit session)."""
    monkeypatch.setattr(R, "prepared", lambda src, filters, recal, refs=(), fit=(): ("DATA", []))


def _run_all(targets, timeout: float = TIMEOUT) -> list:
    """Start one daemon thread per target at the same moment; return what each returned or
    raised (a BaseException is a value here). Fails if a thread is still running at the timeout."""
    out = [None] * len(targets)
    go = threading.Barrier(len(targets))

    def run(i, fn):
        go.wait()
        try:
            out[i] = fn()
        except BaseException as e:  # noqa: BLE001 - a cancelled computation is an outcome here
            out[i] = e

    threads = [threading.Thread(target=run, args=(i, fn), daemon=True) for i, fn in enumerate(targets)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "threads still waiting: a deadlock"
    return out


def _in_thread(fn) -> tuple[threading.Thread, list]:
    """Start ``fn`` in a daemon thread; the list gets what it returned or raised."""
    box = []

    def run():
        try:
            box.append(fn())
        except BaseException as e:  # noqa: BLE001
            box.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def _a(*names: str) -> R.Analysis:
    return R.Analysis(data="fake", predictors=tuple(names))


# ----------------------------------------------------------------------------- memo
@pytest.mark.parametrize("stop", [StopException, RerunException, KeyboardInterrupt, MemoryError])
def test_memo_cancelled_computation_leaves_no_key_lock_and_is_not_cached(stop):
    calls = []

    @M.memo()
    def f(k):
        calls.append(k)
        if len(calls) == 1:
            raise stop(None) if stop is RerunException else stop()
        return k * 2

    with pytest.raises(stop):
        f(21)
    assert M._KEY_LOCKS == {}          # the lock entry does not leak
    assert M.stats()["entries"] == 0   # no exception is cached
    assert f(21) == 42 and calls == [21, 21]  # a later call computes
    assert f(21) == 42 and calls == [21, 21] and M._KEY_LOCKS == {}


def test_memo_waiters_compute_after_a_cancelled_computation():
    started, release = threading.Event(), threading.Event()
    calls = []

    @M.memo()
    def f(k):
        calls.append(k)
        if len(calls) == 1:
            started.set()
            release.wait(TIMEOUT)
            raise StopException()
        time.sleep(0.05)
        return "value"

    first, box = _in_thread(lambda: f("k"))
    assert started.wait(TIMEOUT)
    waiters = [_in_thread(lambda: f("k")) for _ in range(4)]
    time.sleep(0.3)  # the waiters are blocked on the key's lock
    release.set()
    for t, _ in [(first, box)] + waiters:
        t.join(TIMEOUT)
        assert not t.is_alive()
    assert isinstance(box[0], StopException)
    assert [b[0] for _, b in waiters] == ["value"] * 4
    assert calls == ["k", "k"]  # the cancelled attempt, then one computation for all four waiters
    assert M._KEY_LOCKS == {}


def test_memo_many_threads_many_keys_compute_each_key_once():
    calls = Counter()

    @M.memo(max_entries=100)
    def slow(k):
        calls[k] += 1
        time.sleep(0.2)
        return k

    out = _run_all([lambda i=i: slow(i % 3) for i in range(9)])
    assert out == [i % 3 for i in range(9)]
    assert calls == Counter({0: 1, 1: 1, 2: 1})
    assert M._KEY_LOCKS == {}


def test_memo_a_waiting_session_stops_waiting_when_it_no_longer_needs_the_result():
    # a session waiting for another's computation must not be stuck there after its user moved
    # a widget (state.cancel_when_unneeded): the wait is a checkpoint too
    started, release = threading.Event(), threading.Event()

    @M.memo()
    def f(k):
        started.set()
        release.wait(TIMEOUT)
        return k

    first, box = _in_thread(lambda: f("k"))
    assert started.wait(TIMEOUT)
    stop = threading.Event()

    def waiter():
        with cancel_when(stop.is_set):
            return f("k")

    t, got = _in_thread(waiter)
    time.sleep(0.2)
    stop.set()
    t.join(5.0)
    try:
        assert not t.is_alive(), "the waiter kept waiting for a result nobody needs"
        assert isinstance(got[0], Cancelled)
    finally:
        release.set()
        first.join(TIMEOUT)
    assert box == ["k"] and M._KEY_LOCKS == {}


# ----------------------------------------------------------------------------- results
def _fake_result(log: list, delay: float = 0.3, fail_first: type | None = None, inner=None,
                 name: str = "fake"):
    """A ``per_predictor`` result with ``split`` (as TPS and the metrics), logging each computation
    as the tuple of predictors it computed (``fail_first``: the first one raises that instead;
    ``inner``: a result it asks for, as ``tps`` asks for ``tps_points``). ``name`` is its
    qualified name, which keys its cache (as a module-level function's in results.py)."""

    def fake(a, x):
        assert x.data == "DATA"
        log.append(tuple(a.predictors))
        below = inner(a=a, src=x.src) if inner is not None else {}
        if fail_first is not None and len(log) == 1:
            time.sleep(delay)
            raise fail_first()
        time.sleep(delay)
        return {n: (n.upper(), below.get(n)) for n in a.predictors}

    fake.__qualname__ = name
    return R.result("fake…", keep=(), per_predictor=R._merge, split=R._item, max_entries=100)(fake)


def _computed(log: list) -> Counter:
    """How many times each predictor was computed."""
    return Counter(n for names in log for n in names)


def test_result_same_view_in_four_sessions_computes_each_predictor_once(fake_log):
    log = []
    fake = _fake_result(log)
    names = ("verbal", "logit", "oracle")
    out = _run_all([lambda: fake(a=_a(*names), src="src") for _ in range(4)])
    assert out == [{n: (n.upper(), None) for n in names}] * 4
    assert log == [names]  # one joint computation: the other three sessions waited and took it
    assert M._KEY_LOCKS == {}


def test_result_missing_predictors_are_computed_together_and_kept_one_by_one(fake_log):
    log = []
    fake = _fake_result(log, delay=0.0)
    fake(a=_a("b"), src="src")
    assert fake(a=_a("c", "a", "b", "d"), src="src") == {n: (n.upper(), None) for n in "cabd"}
    assert log == [("b",), ("c", "a", "d")]  # what was missing, jointly, in the asked order
    fake(a=_a("d"), src="src"), fake(a=_a("a", "c"), src="src")  # each kept on its own
    assert len(log) == 2


def test_result_overlapping_predictor_sets_compute_once_without_deadlock(fake_log):
    log = []
    fake = _fake_result(log, delay=0.2)
    sets = [("p1", "p2", "p3"), ("p3", "p2", "p4"), ("p4", "p1"), ("p5", "p2"), ("p3", "p5", "p1"),
            ("p2", "p1")]
    out = _run_all([lambda s=s: fake(a=_a(*s), src="src") for s in sets])
    for s, got in zip(sets, out):
        assert got == {n: (n.upper(), None) for n in s}
    assert _computed(log) == Counter({f"p{i}": 1 for i in range(1, 6)}), log
    assert M._KEY_LOCKS == {}


def test_result_nested_results_compute_once_without_deadlock(fake_log):
    # outer's computation asks for inner (as tps asks for tps_points) while other sessions ask
    # for inner directly, for overlapping predictor sets
    inner_log, outer_log = [], []
    inner = _fake_result(inner_log, delay=0.2, name="inner")
    outer = _fake_result(outer_log, delay=0.1, inner=inner, name="outer")
    calls = [(outer, ("p1", "p2", "p3")), (inner, ("p3", "p4", "p2")), (outer, ("p4", "p3")),
             (inner, ("p1", "p4")), (outer, ("p2", "p1", "p4")), (inner, ("p3", "p1"))]
    out = _run_all([lambda f=f, s=s: f(a=_a(*s), src="src") for f, s in calls])
    for (f, s), got in zip(calls, out):
        if f is outer:
            assert got == {n: (n.upper(), (n.upper(), None)) for n in s}
        else:
            assert got == {n: (n.upper(), None) for n in s}
    assert _computed(outer_log) == Counter({f"p{i}": 1 for i in range(1, 5)}), outer_log
    assert _computed(inner_log) == Counter({f"p{i}": 1 for i in range(1, 5)}), inner_log
    assert M._KEY_LOCKS == {}


def test_result_cancelled_joint_computation_is_computed_once_by_a_waiting_session(fake_log):
    log = []
    fake = _fake_result(log, delay=0.4, fail_first=StopException)
    names = ("verbal", "logit", "oracle")
    first, box = _in_thread(lambda: fake(a=_a(*names), src="src"))
    time.sleep(0.1)  # the first session is computing
    out = _run_all([lambda: fake(a=_a(*names), src="src") for _ in range(3)])
    first.join(TIMEOUT)
    assert isinstance(box[0], StopException)  # a rerun stopped the first session's computation
    assert out == [{n: (n.upper(), None) for n in names}] * 3
    assert log == [names, names]  # the cancelled attempt, then one computation for the three others
    assert M._KEY_LOCKS == {}


def test_result_cancelled_joint_computation_caches_nothing(fake_log):
    log = []
    fake = _fake_result(log, delay=0.0, fail_first=StopException)
    with pytest.raises(StopException):
        fake(a=_a("p1", "p2"), src="src")
    assert M._KEY_LOCKS == {} and M.stats()["entries"] == 0
    assert fake(a=_a("p1", "p2"), src="src") == {"p1": ("P1", None), "p2": ("P2", None)}
    assert log == [("p1", "p2"), ("p1", "p2")]
