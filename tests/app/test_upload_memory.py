"""A refused upload leaves nothing of its bytes behind (issue 46, point 7): the shared cache keeps
the refusal (the bytes decide it), never the bytes, and no object of the loading path refers to them
once the run's Source is gone. bench/bench_upload_memory.py measures the server's memory."""

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
