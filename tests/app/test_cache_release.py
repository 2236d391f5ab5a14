"""A log that a session replaces or removes, and no other session uses, leaves the shared cache at
once (issue 46, point 7: an upload's memory is released when the file is replaced;
pages/_ui/sources_in_use.py). Checked against the cache's keys as text (``repr``), not through the
matching the release uses."""

import gc
import weakref

import pytest
import streamlit as st

from pages._ui import loading as L
from pages._ui import memo
from pages._ui import sources_in_use as SU
from pages._ui import state as S
from pages._ui.results import Analysis
from tpsviz.io.loading import ReadOptions
from tests.app.apptest_helpers import DEMO, fresh, upload

RAW = (DEMO / "tau2-like.csv").read_bytes()


def _held(key: str) -> list:
    """The cache's keys whose text mentions ``key``."""
    return [k for k in memo.keys() if key in repr(k)]


def _functions(keys) -> set:
    return {k[0].rsplit(".", 1)[-1] for k in keys}


def _source(at):
    src = at.session_state["_source"]
    assert src is not None and src.kind == "upload"
    return src


def test_mentions_finds_a_key_whole_and_in_the_keys_made_from_it():
    a = S.upload_source((((RAW, "a.csv")),), ReadOptions(), None, None, None)
    b = S.upload_source((((RAW, "b.csv")),), ReadOptions(), None, None, None)
    both = S.upload_source(((RAW, "a.csv"), (RAW, "b.csv")), ReadOptions(), None, None, None)
    opts = S.upload_source(((RAW, "a.csv"),), ReadOptions(fmt="csv"), None, None, None)
    with_roll = S.upload_source(((RAW, "a.csv"),), ReadOptions(), None, RAW, "a.csv")
    assert opts.key != a.key and opts.file_key == a.key and with_roll.rollouts_key.startswith(a.key + ":")
    hit = SU.mentions([a.key])
    assert hit(a.key) and hit(L.result_key(a)) and hit(repr((L.result_key(a), (), ())))
    assert hit(L.result_key(with_roll))  # the log with another rollouts file is still this log
    assert not hit(b.key) and not hit(both.key) and not hit(opts.key) and not hit(L.result_key(opts))
    assert not hit(with_roll.rollouts_key)  # the same bytes uploaded as rollouts: another entry
    assert SU.mentions([with_roll.rollouts_key])(L.result_key(with_roll))
    assert SU.source_keys(S.demo_source("tau2-like")) == frozenset()  # demo logs are kept
    assert SU.source_keys(opts) == {opts.key, a.key}


def test_replacing_or_removing_an_upload_drops_its_entries_and_keeps_the_demos():
    at = fresh()
    demo_log = L.load_base(S.demo_source("tau2-like"))
    demo_keys = _held("demo:tau2-like")
    upload(at, ("a.csv", RAW, "text/csv"))
    at.switch_page("pages/views/reliability.py").run()
    assert not at.exception
    old = _source(at).key
    held = _held(old)
    # the loaded log, the prepared log, the Evaluation and its parts, the pages' results (results.py)
    assert {"_load", "_prepared", "_evaluation", "_part"} <= _functions(held), _functions(held)
    assert any(isinstance(part, Analysis) for k in held for part in k)
    log = weakref.ref(L.load_base(_source(at)))

    at.file_uploader(key="upload").set_value(("b.csv", RAW, "text/csv")).run()  # replaced by another upload
    assert not at.exception and _source(at).key != old
    assert _held(old) == []
    other = _source(at).key
    assert _held(other)
    at.run()  # (Streamlit keeps the last run's session state until the next run)
    gc.collect()
    assert log() is None  # nothing else kept the old log

    at.file_uploader(key="upload").clear().run()  # removed from the box
    assert not at.exception and at.session_state["_source"] is None
    assert _held(other) == []

    upload(at, ("a.csv", RAW, "text/csv"))
    assert _held(old)
    at.radio(key="src").set_value("Demo").run()  # replaced by the demo
    assert not at.exception and _held(old) == []
    assert L.load_base(S.demo_source("tau2-like")) is demo_log  # the demo's entries were kept…
    assert set(demo_keys) <= set(memo.keys())  # …all of them


@pytest.fixture
def two_sessions(monkeypatch):
    """AppTest gives every session the same id: tell them apart by a mark in their state."""
    monkeypatch.setattr(SU, "session_id", lambda: st.session_state.get("_test_session", "test session id"))
    sessions = []
    for name in ("one", "two"):
        at = fresh()
        at.session_state["_test_session"] = name
        upload(at, ("shared.csv", RAW, "text/csv"))
        sessions.append(at)
    return sessions


def test_a_log_another_session_uses_stays_until_the_last_one_leaves_it(two_sessions):
    one, two = two_sessions
    key = _source(one).key
    assert _source(two).key == key
    log = L.load_base(_source(two))
    held = set(_held(key))
    assert held

    one.radio(key="src").set_value("Demo").run()
    assert not one.exception
    assert held <= set(memo.keys())  # the other session's log and results are all still there
    before = memo.stats()["entries"]
    two.run()
    assert not two.exception and not two.error
    assert L.load_base(_source(two)) is log  # not read again
    assert memo.stats()["entries"] == before  # and nothing recomputed

    two.file_uploader(key="upload").set_value(("other.csv", RAW, "text/csv")).run()
    assert not two.exception and _held(key) == []  # the last session left it


def test_the_memory_is_given_back_when_released_at_the_end_of_the_run_and_at_the_next(monkeypatch):
    """What the session's last page held is let go after the release (measured on a server:
    bench/bench_upload_memory.py), so the memory is given back then too, once each."""
    calls = []
    monkeypatch.setattr(memo, "give_back", lambda: calls.append(len(memo.keys())))
    at = fresh()
    upload(at, ("a.csv", RAW, "text/csv"))
    assert calls == []
    at.radio(key="src").set_value("Demo").run()
    assert not at.exception and len(calls) == 2  # the release, the end of its run
    at.run()
    assert len(calls) == 3  # the start of the next run
    at.run()
    assert len(calls) == 3
