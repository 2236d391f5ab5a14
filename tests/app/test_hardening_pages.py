"""Issue 8 (hardening), dashboard cases (Streamlit AppTest), by the issue's numbering."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import APP, DEMO, fresh, texts

PAGES = ["pages/views/overview.py", "pages/views/reliability.py", "pages/views/steps.py",
         "pages/views/censoring.py", "pages/views/lab.py", "pages/views/recalibration.py",
         "pages/views/export.py"]
SECRET = "TOPSECRET-7f3a9"


def _fresh(qp=None) -> AppTest:
    return fresh(qp)


def _all_text(at) -> str:
    parts = [texts(at)] + [c.value for c in at.code]
    parts += [str(w.label) for w in at.sidebar.text_input]
    return "\n".join(parts)


def _upload(at, name: str, raw: bytes) -> None:
    at.radio(key="src").set_value("Upload").run()
    at.file_uploader(key="upload").set_value((name, raw, "text/csv")).run()


# ----------------------------------------------------------------------------- 1. disclosure
def test_1_server_path_is_off_without_data_roots(monkeypatch):
    monkeypatch.delenv("TPSVIZ_DATA_ROOTS", raising=False)
    at = _fresh({"src": "Server path", "path": "/proc/self/environ", "rpath": "/etc/shadow"})
    t = _all_text(at)
    assert "Server paths are off" in t and "TPSVIZ_DATA_ROOTS" in t
    assert "PATH=" not in t and "root:" not in t
    assert "path" not in at.query_params and "rpath" not in at.query_params


@pytest.fixture
def root(tmp_path, monkeypatch):
    r = tmp_path / "logs"
    r.mkdir()
    (r / "tau2.csv").write_bytes((DEMO / "tau2-like.csv").read_bytes())
    (r / "rollouts.csv").write_bytes((DEMO / "webshop-like_rollouts.csv").read_bytes())
    (tmp_path / "secret.csv").write_text(f"user,password\nroot,{SECRET}\n", encoding="utf-8")
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(r))
    return r


def test_1_a_path_under_a_root_loads_and_is_kept_in_the_url(root):
    at = _fresh({"src": "Server path", "path": "tau2.csv"})
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "450"
    assert at.query_params["path"] == "tau2.csv"


@pytest.mark.parametrize("path", ["/proc/self/environ", "/etc/shadow", "/etc/passwd", "../secret.csv",
                                  "/dev/zero", "nope.csv", "..", "/proc/self/cwd"])
def test_1_paths_outside_the_roots_get_one_message_and_leave_the_url(root, path):
    at = _fresh({"src": "Server path", "path": path})
    t = _all_text(at)
    assert "cannot open this path" in t
    assert SECRET not in t and "PATH=" not in t and "root:" not in t and "no such file" not in t
    assert "path" not in at.query_params  # not bound to the URL outside a root
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception


def test_1_a_root_itself_opens_as_a_dataset_of_its_files(root):
    """"." (the first root) is a dataset folder like any other (helper-24: a team's dataset
    directory set as the root was refused); it reads only the root's files."""
    (root / "rollouts.csv").unlink()  # (the root's other file has other columns: a dataset needs the same)
    (root / "sub").mkdir()
    (root / "sub" / "more.csv").write_bytes((DEMO / "tau2-like.csv").read_bytes().replace(b"tau-", b"more-"))
    at = _fresh({"src": "Server path", "path": "."})
    assert not at.exception and "cannot open this path" not in _all_text(at)
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "900"  # (both files: 450 runs each)
    assert SECRET not in _all_text(at)


@pytest.mark.parametrize("rpath", ["/proc/self/environ", "/etc/shadow", "../secret.csv"])
def test_1_rollouts_path_outside_the_roots(root, rpath):
    at = _fresh({"src": "Server path", "path": "tau2.csv", "rpath": rpath, "cens": "exact", "qzs": "rollouts"})
    at.switch_page("pages/views/censoring.py").run()
    assert not at.exception
    t = _all_text(at)
    assert SECRET not in t and "PATH=" not in t and "root:" not in t
    assert "rpath" not in at.query_params


def test_1_upload_name_is_not_shared_between_sessions():
    raw = b"trajectory_id,step\nt1,1\n"
    a = _fresh()
    _upload(a, "alice-private-name.csv", raw)
    b = _fresh()
    _upload(b, "bob.csv", raw)
    assert "bob" in _all_text(b) and "alice" not in _all_text(b)


# ----------------------------------------------------------------------------- 2. memory
def test_2_a_memory_error_is_not_cached(monkeypatch):
    import tpsviz

    real = tpsviz.load
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise MemoryError
        return real(*args, **kwargs)

    monkeypatch.setattr(tpsviz, "load", flaky)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    assert "ran out of memory" in _all_text(at)
    at.run()  # the next rerun (or the next user) loads the demo
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "450"


def test_2_cancelled_work_ends_the_page_quietly(monkeypatch):
    import tpsviz
    from tpsviz.core.cancel import Cancelled

    at = _fresh()

    def cancelled(*a, **k):
        raise Cancelled("the result is no longer needed")

    monkeypatch.setattr(tpsviz, "compute_tps", cancelled)
    at.slider(key="a").set_value(0.5).run()
    assert not at.exception and not at.error


def test_2_session_end_is_detected(monkeypatch):
    from streamlit.runtime import Runtime

    from pages._ui import state as S

    class Fake:
        active = True

        def is_active_session(self, sid):
            return self.active

    fake = Fake()
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))
    monkeypatch.setattr(Runtime, "instance", classmethod(lambda cls: fake))
    gone = S._session_gone("abc")
    assert gone() is False
    fake.active = False
    assert gone() is True


def test_2_a_newer_run_cancels_the_work_in_progress():
    """Issue 11: a slider moved during a bootstrap starts the page over at once. Streamlit's own rule
    decides what preempts a run: a full rerun or a stop does, a fragment's timer run does not."""
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

    from pages._ui import state as S

    req = ScriptRequests()
    pending = S._rerun_pending(req)
    assert pending() is False
    req.request_rerun(RerunData(fragment_id="timer"))  # a fragment's timer: the page keeps running
    assert pending() is False
    req.request_rerun(RerunData())  # a widget changed: the whole page runs again
    assert pending() is True
    assert req.on_scriptrunner_yield() is not None  # Streamlit takes the request: nothing pending
    assert pending() is False
    req.request_stop()
    assert pending() is True


def test_2_cancel_context_stops_a_bootstrap_once_a_rerun_is_requested(monkeypatch):
    """The context app.py runs each page in: a checkpoint raises once a newer run is requested."""
    import threading

    import numpy as np
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

    from pages._ui import state as S
    from tpsviz.core.cancel import Cancelled
    from tpsviz.core.inference import bootstrap_sums

    class Ctx:
        session_id = "s1"
        script_requests = ScriptRequests()

    monkeypatch.setattr("streamlit.runtime.scriptrunner.get_script_run_ctx", lambda: Ctx)
    monkeypatch.setattr(S, "_session_gone", lambda sid: (lambda: False))
    x = np.random.default_rng(0).normal(size=(20_000, 3))
    threading.Timer(0.2, lambda: Ctx.script_requests.request_rerun(RerunData())).start()
    with pytest.raises(Cancelled), S.cancel_when_unneeded():
        bootstrap_sums(x, 20_000, seed=123)  # seconds of work when not cancelled


# ----------------------------------------------------------------------------- 3. crashes
LOGS = {
    "every run censored (one run)": b"trajectory_id,step,outcome,conf_a\nt1,1,,0.6\n",
    "every run censored": b"trajectory_id,step,outcome,conf_a\nt1,1,,0.6\nt1,2,,0.5\nt2,1,,0.3\n",
    "predictor without forecasts": (b"trajectory_id,step,outcome,conf_a,conf_b\nt1,1,1,0.6,\n"
                                    b"t2,1,0,0.3,\nt2,2,0,0.2,\n"),
    "a single run": b"trajectory_id,step,outcome,conf_a\nt1,1,1,0.6\nt1,2,1,0.7\n",
}


@pytest.mark.parametrize("case", list(LOGS))
def test_3_valid_logs_render_every_page(case):
    at = _fresh()
    _upload(at, "case.csv", LOGS[case])
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        bugs = [e.value for e in at.error if "Something went wrong" in e.value]
        assert not bugs, (page, bugs)


# ----------------------------------------------------------------------------- 5. rendering
def test_5_log_text_in_widget_labels_is_escaped():
    csv = ("trajectory_id,step,outcome,conf_a,![t](http://127.0.0.1:9/x.png)\n"
           + "".join(f"r{i},1,{i % 2},0.5,v{i % 3}\n" for i in range(12))).encode()
    at = _fresh()
    _upload(at, "![f](http://127.0.0.1:9/f.png).csv", csv)
    labels = [w.label for w in at.sidebar.multiselect]
    assert any("\\!\\[t\\]" in lab for lab in labels), labels
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception
        for m in list(at.markdown) + list(at.caption):
            assert "](http://127.0.0.1:9" not in m.value


def test_adv_a_failed_recalibration_from_a_link_is_escaped_and_the_rest_still_scores():
    evil = "![x](http://127.0.0.1:9/recal.png)|platt|5|pooled"
    at = _fresh({"recal": evil})
    for m in list(at.markdown) + list(at.caption) + list(at.warning):
        assert "](http://127.0.0.1:9" not in m.value
    assert not [e.value for e in at.error if "cannot be applied" in e.value or "Something went wrong" in e.value]
    assert len(at.dataframe) and "truthful = true probability (synthetic)" in set(at.dataframe[0].value["predictor"])


def test_adv3_numeric_metadata_with_infinity_keeps_the_sidebar():
    rows = "".join(f"r{i},1,{i % 2},0.5,{'inf' if i == 0 else i}\n" for i in range(30))
    at = _fresh()
    _upload(at, "inf.csv", ("trajectory_id,step,outcome,conf_a,cost\n" + rows).encode())
    assert not [e.value for e in at.sidebar.error]
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "30"


def test_adv4_a_link_cannot_ask_for_unbounded_recalibrations():
    from apptest_helpers import fresh

    from pages._ui import state as S

    specs = [f"{src}|{m}|{k}|pooled" for src in ("verbal", "noisy", "pessimistic", "flat", "budget_aware")
             for m in ("platt", "isotonic") for k in (2, 3)]
    specs += ["verbal@platt|isotonic|2|pooled", "verbal@platt@isotonic|platt|2|pooled"]  # chains
    from streamlit.testing.v1 import AppTest

    from apptest_helpers import APP

    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["recal"] = specs
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    kept = at.session_state["recal"]
    assert len(kept) == S.MAX_RECAL
    assert not any("@" in S.parse_recal(s)["source"] for s in kept)
    assert len({S.parse_recal(s)["name"] for s in kept}) == len(kept)  # one per name
    assert any("were not applied" in c.value for c in at.sidebar.caption)
    assert fresh() is not None


def test_adv4_results_are_cached_with_their_rollouts_file():
    # two rollouts files for the same log must not share cached scores (q_Z comes from them)
    import io

    import pandas as pd

    from apptest_helpers import DEMO, fresh

    log = (DEMO / "webshop-like.csv").read_bytes()
    real = (DEMO / "webshop-like_rollouts.csv").read_bytes()
    ones = pd.read_csv(io.BytesIO(real)).assign(outcome=1)
    all_one = ones.to_csv(index=False).encode()

    def verbal_tps(rollouts: bytes) -> str:
        at = fresh()
        at.radio(key="src").set_value("Upload").run()
        at.file_uploader(key="upload").set_value(("webshop-like.csv", log, "text/csv"))
        at.file_uploader(key="upload_rollouts").set_value(("r.csv", rollouts, "text/csv")).run()
        at.selectbox(key="cens").set_value("exact").run()
        at.radio(key="qzs").set_value("rollouts").run()
        assert not at.exception, [e.value for e in at.exception]
        lb = at.dataframe[0].value.set_index("predictor")
        return lb.loc["verbal", "TPS"]

    first, second = verbal_tps(real), verbal_tps(all_one)  # one server: the shared cache
    assert first != second
    assert float(first) == pytest.approx(-33.0443, abs=1e-3)
    assert float(second) == pytest.approx(-5.1135, abs=1e-3)


def _page_that_fails(exc_type: str, root: str):
    """A page whose body raises (AppTest runs this function's source as the script)."""
    import sys

    sys.path[:0] = [root, root + "/pages"]
    from _ui.common import show_page_error

    error = {"runtime": RuntimeError, "value": ValueError}[exc_type]
    try:
        raise error("Original Line: SECRET-cell,1,1 in /srv/private/log.csv")
    except Exception as e:  # noqa: BLE001 (what the pages do around their body)
        show_page_error(e)


def test_an_unexpected_error_is_shown_by_its_type_never_its_message():
    """An unexpected exception's message may quote a file (DuckDB's errors quote the line they
    stopped at) or a server path: the page names its type only; the log has the rest."""
    from pathlib import Path

    at = AppTest.from_function(_page_that_fails, args=("runtime", str(Path(APP).parent)), default_timeout=30)
    at.run()
    shown = " ".join(e.value for e in at.error)
    assert "Something went wrong" in shown and "RuntimeError" in shown
    assert "SECRET" not in shown and "/srv/private" not in shown


def test_a_validation_message_is_still_shown_whole():
    from pathlib import Path

    at = AppTest.from_function(_page_that_fails, args=("value", str(Path(APP).parent)), default_timeout=30)
    at.run()
    assert "cannot be applied to this log" in " ".join(e.value for e in at.error)


@pytest.mark.parametrize("raw,mendable", [
    (b"trajectory_id,step,outcome,conf_a\nt1,1,1,0.5\nt1,2,1,0.6,0.7,extra\n", True),    # a delimiter may help
    (b"trajectory_id,step,outcome,conf_a\nt1,1,1,0.5\nt\xff\xfe1,2,1,0.6\n", False),      # not UTF-8
    (b"PAR1\x00\x01garbage-not-a-footer", False),                                          # a damaged Parquet file
])
def test_reading_options_are_offered_only_where_they_can_help(raw, mendable):
    """helper-24: a damaged file or one that is not UTF-8 was told to try the Reading options."""
    at = fresh()
    _upload(at, "log.parquet" if raw.startswith(b"PAR1") else "log.csv", raw)
    assert not at.exception
    err = " ".join(e.value for e in at.error)
    assert "This log cannot be used" in err
    assert ("Reading options" in err) is mendable
    assert ("save or export it again" in err) is (not mendable)
