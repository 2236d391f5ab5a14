"""One BLAS thread while tpsviz's own threads compute (tpsviz/core/_fast/blas.py)."""

from __future__ import annotations

import threading

import numpy as np
from threadpoolctl import threadpool_info

from tpsviz.core._fast import blas
from tpsviz.core._fast.blas import one_blas_thread


def _blas_threads() -> list[int]:
    np.dot(np.ones(3), np.ones(3))  # (numpy's BLAS is loaded)
    info = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert info, "no BLAS library found: numpy's wheels bring OpenBLAS"
    return info


def test_blas_has_one_thread_inside_and_its_threads_again_after():
    """On this (main) thread, where the bootstrap of the CLI runs: the real limit."""
    before = _blas_threads()
    with one_blas_thread():
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before


def test_the_limit_is_lifted_when_the_block_raises():
    before = _blas_threads()
    try:
        with one_blas_thread():
            raise KeyError("stop")
    except KeyError:
        pass
    assert _blas_threads() == before


class _Limiter:
    def __init__(self, log):
        self.log = log
        log.append("set")

    def restore_original_limits(self):
        self.log.append("restore")


def test_the_limit_is_set_by_the_first_thread_in_and_lifted_by_the_last_out(monkeypatch):
    """Two callers on two threads, leaving in the order they did not enter: one limit, lifted
    only after both have left (a limit per caller would be lifted while the other still runs, or
    kept for ever when the second restored what the first had set)."""
    log = []
    monkeypatch.setattr(blas, "_limit", lambda: _Limiter(log))
    a_in, a_may_leave, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with one_blas_thread():
            a_in.set()
            a_may_leave.wait(10)
        a_out.set()

    t = threading.Thread(target=a)
    t.start()
    a_in.wait(10)
    with one_blas_thread():
        a_may_leave.set()
        a_out.wait(10)
        assert log == ["set"]  # a has left, this caller is still inside
    t.join(10)
    assert log == ["set", "restore"]
    with one_blas_thread():  # and again from the start
        pass
    assert log == ["set", "restore", "set", "restore"]
