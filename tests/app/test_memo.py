"""The dashboard's shared result cache (pages/_ui/memo.py): byte budget, idle lifetime,
exceptions never cached, one computation per key."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from pages._ui import memo as M


@pytest.fixture(autouse=True)
def _fresh_cache():
    M.clear_all()
    yield
    M.configure()
    M.clear_all()


def test_results_are_reused_and_keyed_without_underscore_arguments():
    calls = []

    @M.memo(max_entries=4)
    def f(key, _big):
        calls.append(key)
        return np.zeros(10)

    a = f("k", _big=object())
    b = f("k", _big=object())
    assert a is b and calls == ["k"]
    f("other", None)
    assert calls == ["k", "other"]


def test_byte_budget_evicts_least_recently_used():
    M.configure(budget=3 * 8_000 + 500, ttl=3600)

    @M.memo(max_entries=100)
    def arr(i):
        return np.zeros(1000)  # 8,000 bytes

    for i in range(5):
        arr(i)
    s = M.stats()
    assert s["entries"] == 3 and s["bytes"] <= s["budget"]
    calls = []

    @M.memo(max_entries=100)
    def big():
        calls.append(1)
        return np.zeros(10_000)  # larger than the whole budget: returned, not kept

    big(), big()
    assert len(calls) == 2 and M.stats()["entries"] <= 3


def test_max_entries_per_function():
    @M.memo(max_entries=2)
    def f(i):
        return i

    for i in range(5):
        f(i)
    assert M.stats()["entries"] == 2


def test_idle_entries_are_swept():
    M.configure(ttl=10)

    @M.memo()
    def f(i):
        return np.ones(100)

    f(1)
    assert M.sweep(now=time.monotonic() + 5) == 0
    assert M.sweep(now=time.monotonic() + 11) == 1 and M.stats()["entries"] == 0


def test_exceptions_are_never_cached():
    n = {"calls": 0}

    @M.memo()
    def flaky():
        n["calls"] += 1
        if n["calls"] == 1:
            raise MemoryError
        return "ok"

    with pytest.raises(MemoryError):
        flaky()
    assert flaky() == "ok" and n["calls"] == 2


def test_one_computation_per_key_across_threads():
    calls = []

    @M.memo()
    def slow(k):
        calls.append(k)
        time.sleep(0.3)
        return k

    threads = [threading.Thread(target=slow, args=("x",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["x"]


def test_size_estimate_counts_frames_and_skips_a_referenced_log():
    import pandas as pd

    import tpsviz
    from tpsviz.synthetic.agent import simulate

    data = simulate("tau2-like", n_trajectories=50, seed=1).to_data()
    res = tpsviz.compute_tps(data, tpsviz.ScoreSettings(n_boot=0))
    df = pd.DataFrame({"a": np.zeros(1000), "b": ["x"] * 1000})
    assert M.approx_bytes(df) >= 8_000 + 64 * 1000
    assert M.approx_bytes(data) > M.approx_bytes(data.steps) * 0.9
    # the result references the log; the log is counted where it is cached itself
    assert M.approx_bytes(res) < M.approx_bytes(data) + M.approx_bytes(res.per_trajectory) * 3


def test_adv4_a_filtered_copy_of_the_log_counts_against_the_budget():
    # _prepared returns (data, problems) where data is a new filtered/recalibrated copy: it must be
    # counted (it was skipped as "cached elsewhere"), once
    import numpy as np

    import tpsviz
    from pages._ui.memo import approx_bytes

    data = tpsviz.load("demo_data/tau2-like.csv")
    copy = data.subset(np.arange(data.n_trajectories) < 300)
    first = approx_bytes((copy, []))
    assert first > copy.steps.memory_usage(deep=False).sum()
    assert approx_bytes((copy, [])) < 1000  # the same object again: shared, not counted twice
