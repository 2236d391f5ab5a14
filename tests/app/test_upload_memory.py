"""An upload's bytes are held once, by Streamlit, and let go with the file (issue 46, point 7).

A refused upload leaves nothing of its bytes behind: the shared cache keeps the refusal (the bytes
decide it), never the bytes. Through Streamlit's real upload path (AppTest): the session keeps the
bytes of Streamlit's upload store, not the copy ``st.file_uploader`` returns on every run, for the
log, its forecasts table and the Overview's second log; and a file whose box is no longer drawn
leaves Streamlit's store. bench/bench_upload_memory.py measures the server's memory."""

import gc
import sys

from pages._ui import loading as L
from pages._ui import state as S
from tpsviz.io.loading import ReadOptions


def _referrers(obj, *ignore) -> list:
    return [r for r in gc.get_referrers(obj) if not any(r is i for i in ignore) and not isinstance(r, type(sys._getframe()))]


def test_a_refused_upload_leaves_no_reference_to_its_bytes(monkeypatch):
    monkeypatch.setenv("TPSVIZ_MAX_FILE_MB", "1")
    raw = b"trajectory_id,step,outcome,conf_a\n" + b"r1,1,1,0.5\n" * 200_000  # 2.2 MB, over the limit
    src = S.upload_source(((raw, "big.csv"),), ReadOptions(), None, None, None)
    out = L.load_base(src)
    assert L.is_failure(out) and "TPSVIZ_MAX_FILE_MB" in out.problems[0]
    assert all(len(p) < 300 for p in out.problems)  # a message, never the file's contents
    assert not any(isinstance(v, (bytes, bytearray, memoryview)) for v in vars(out).values())
    assert L.load_base(src) is out  # the refusal is cached under the bytes' key…
    del src
    gc.collect()
    assert _referrers(raw, globals(), locals()) == []  # …and nothing keeps the bytes


def _copies(raw: bytes) -> int:
    """How many bytes objects other than ``raw`` hold its contents (found through every container
    the garbage collector tracks: session state, caches, frames, exceptions)."""
    found = set()
    for o in gc.get_objects():
        for r in gc.get_referents(o):
            if type(r) is bytes and len(r) == len(raw) and r is not raw and id(r) not in found and r == raw:
                found.add(id(r))
    return len(found)


def test_the_dashboard_keeps_no_copy_of_an_upload_and_drops_it_with_the_file(monkeypatch):
    """Through Streamlit's real upload path (AppTest registers the file in Streamlit's upload store and
    the box's value is deep-copied on every run): the session's Source holds the very bytes the store
    holds, not the copy ``st.file_uploader`` returns, so a refused file costs one copy (Streamlit's)
    while it is in the box and none of ours once it is removed (bench/bench_upload_memory.py)."""
    from tests.app.apptest_helpers import fresh

    monkeypatch.setenv("TPSVIZ_MAX_FILE_MB", "1")
    raw = b"trajectory_id,step,outcome,conf_a\n" + b"r1,1,1,0.5\n" * 200_000  # 2.2 MB, over the limit
    at = fresh()
    at.radio(key="src").set_value("Upload").run()
    at.file_uploader(key="upload").set_value(("big.csv", raw, "text/csv")).run()
    assert not at.exception and any("cannot be used" in e.value for e in at.error)
    assert at.session_state["_source"].raw is raw  # Streamlit's own bytes, not a copy of them
    gc.collect()
    assert _copies(raw) == 0
    at.file_uploader(key="upload").clear().run()
    assert not at.exception and at.session_state["_source"] is None
    gc.collect()
    assert _copies(raw) == 0


def test_the_side_tables_and_the_candidate_log_are_not_copied_either():
    """The forecasts table's box (Reading options) and the second log's box of the Overview keep the
    bytes of Streamlit's upload store too (S.upload_bytes), not the copy each run returns."""
    import pandas as pd

    from tests.app.apptest_helpers import DEMO, fresh, upload

    raw = (DEMO / "tau2-like.csv").read_bytes()
    log = pd.read_csv(DEMO / "tau2-like.csv")
    fraw = log[["trajectory_id", "step"]].assign(conf_side=0.5).to_csv(index=False).encode()
    at = fresh()
    upload(at, ("tau2-like.csv", raw, "text/csv"), forecasts=("side.csv", fraw, "text/csv"))
    assert not at.error
    src = at.session_state["_source"]
    assert src.raw is raw and src.forecasts_raw[0] is fraw
    at = fresh({"demo": "tau-bench-airline"})
    at.session_state["ov_groups"] = True
    at.run()
    at.radio(key="grp_mode").set_value("this log with a second log").run()
    at.file_uploader(key="cand_upload").set_value(("other.csv", raw, "text/csv")).run()
    assert not at.exception
    assert at.session_state["_kept_cand_upload"][0] is raw


def test_switching_to_the_demo_gives_the_uploaded_file_back_to_streamlits_store(monkeypatch):
    """Streamlit's upload store keeps a file until the browser session ends, also once its box is no
    longer drawn (the data source switched to the demo: the box's value is forgotten, the file cannot
    be seen again). The dashboard removes it from the store then (S.release_uploads)."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.testing.v1 import local_script_runner

    from tests.app.apptest_helpers import DEMO, fresh, upload

    stores = []

    class Recorded(MemoryUploadedFileManager):  # each run's store (AppTest makes one per run)
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            stores.append(self)

    monkeypatch.setattr(local_script_runner, "MemoryUploadedFileManager", Recorded)
    raw = (DEMO / "tau2-like.csv").read_bytes()
    at = fresh()
    upload(at, ("tau2-like.csv", raw, "text/csv"))
    held = [f for s in stores[-1:] for files in s.file_storage.values() for f in files.values()]
    assert [f.data is raw for f in held] == [True]  # the store holds the file while its box is drawn
    at.radio(key="src").set_value("Demo").run()
    assert not at.exception and at.session_state["_source"].kind == "demo"
    assert [f for files in stores[-1].file_storage.values() for f in files.values()] == []
