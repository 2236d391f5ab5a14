"""tpsviz.engines.pages: large arrays mapped in one call behave as numpy's own, are resident
at once, and give their memory back when dropped."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from tpsviz.engines import pages


def _resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("n", [0, 1, 1_000])
def test_an_array_of_any_size_reads_and_writes_as_numpy(monkeypatch, dtype, n):
    monkeypatch.setattr(pages, "MIN_BYTES", 0)  # (every size through the mapping)
    a = pages.empty(n, dtype)
    assert a.shape == (n,) and a.dtype == np.dtype(dtype) and a.flags.writeable
    values = (np.arange(n) % 3).astype(dtype)
    a[:] = values
    np.testing.assert_array_equal(a, values)
    view = a[1:]  # a view keeps the memory alive after the array is gone
    del a
    np.testing.assert_array_equal(view, values[1:])


def test_a_large_array_is_resident_at_once_and_returned_when_dropped():
    before = _resident_mb()
    a = pages.empty(64 * 2**20 // 8)  # 64 MB, not yet written
    assert isinstance(a.base.obj, mmap.mmap)  # (numpy holds a memoryview of the mapping)
    assert _resident_mb() - before > 60  # mapped populated: resident before any write
    a[:] = 1.0
    assert a.sum() == a.size
    del a
    assert _resident_mb() - before < 8


def test_a_small_array_is_numpys_own():
    a = pages.empty(10)
    assert a.base is None and a.shape == (10,)
