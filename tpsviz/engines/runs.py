"""The per-run result of the DuckDB engine's main pass as numpy columns in the order of the runs'
ids (docs/architecture.md, "Engines" and "Scale").

The pass returns its runs in no order (an ``ORDER BY`` there sorts every aggregate with the ids:
measured at 4.3M runs, +2.7–3.3 s against 0.7–1.0 s for sorting the ids alone). :class:`Runs`
finds the permutation that sorts the ids and puts each column in that order while converting
it, by one gather into an array whose memory is mapped at once (:mod:`tpsviz.engines.pages`).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tpsviz.engines import pages

__all__ = ["Runs"]

_STRING_TYPES = ("string", "large_string", "string_view")  # Arrow type names the ids arrive as


class Runs:
    """The per-run result as numpy columns in the order of the runs' ids (nulls as NaN); absent
    columns read as a default.

    The table's rows may come in any order: ``Runs.sorted_by_id`` finds the permutation that
    sorts them by id, and each column is put in that order as it is converted, by one gather
    into a fresh array. Sorting the whole table instead (an ``ORDER BY`` or a take) copies every
    column once more, which at millions of runs costs more than the sort
    (docs/architecture.md, "Scale"). Each column is converted once (the checks read some of
    them several times).

    Parameters
    ----------
    table : pyarrow.Table
        One row per run, its id in column ``tid``.
    order : ndarray, optional
        The permutation that sorts ``table`` by id (None: it is sorted already).

    Attributes
    ----------
    table : pyarrow.Table
        The result as it came (its rows in any order).
    n_rows : int
        Runs.
    merged_ids : int
        Stored ids that were one run once stripped of whitespace.
    ids_changed : bool
        Whether stripping whitespace changed an id.
    """

    def __init__(self, table, order: np.ndarray | None = None):
        self.n_rows = table.num_rows
        self.table = table
        self._order = order  # None: the table is sorted by id already
        self._num: dict = {}
        self._scratch: dict = {}  # one array per dtype, reused by every column's gather
        self._ids = None
        self.merged_ids = 0  # stored ids that were one run once stripped of whitespace
        self.ids_changed = False  # whether stripping whitespace changed an id

    @staticmethod
    def id_order(ids) -> np.ndarray:
        """The permutation that sorts ``ids`` (the bytes of UTF-8: the order of Python's ``str``,
        as an ``ORDER BY`` in DuckDB)."""
        return pc.sort_indices(ids).to_numpy().astype(np.intp, copy=False)

    @classmethod
    def sorted_by_id(cls, table, order: np.ndarray | None = None) -> "Runs":
        """Runs of ``table`` (any order) in the order of their ids; ``order``: that permutation,
        if already found (:meth:`id_order` of the table's ``tid``)."""
        return cls(table, cls.id_order(table.column("tid")) if order is None else order)

    def __contains__(self, name: str) -> bool:
        return name in self.table.column_names

    def _column(self, name: str, dtype, scratch: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Column ``name`` as ``dtype``, in the order of the ids. ``scratch``: an array of
        ``n_rows`` of ``dtype`` the column may be converted into before its gather; ``out``: the
        array to fill (a fresh one if None)."""
        col = self.table.column(name)
        if col.type == "bool":  # (with nulls, a bool column converts to Python objects)
            col = col.cast("double")
        dtype = np.dtype(dtype)
        if out is None:
            out = pages.empty(self.n_rows, dtype)
        if col.num_chunks == 1 and not col.null_count and col.type.to_pandas_dtype() == dtype:
            flat = col.chunk(0).to_numpy()  # (the Arrow buffer itself: no copy before the gather)
        else:
            flat = out if self._order is None or scratch is None else scratch
            at = 0
            for chunk in col.chunks:  # a chunk's nulls come as NaN (the column is float where it has any)
                flat[at:at + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
                at += len(chunk)
        if self._order is None:
            if flat is not out:
                out[:] = flat
            return out
        # (mode="clip": numpy buffers the output of take in its default mode, which is one more copy)
        return np.take(flat, self._order, out=out, mode="clip")

    def _buf(self, dtype) -> np.ndarray | None:
        """The scratch array of ``dtype`` the columns are converted into before their gather."""
        if self._order is None:
            return None
        dtype = np.dtype(dtype)
        if dtype not in self._scratch:
            self._scratch[dtype] = pages.empty(self.n_rows, dtype)
        return self._scratch[dtype]

    @staticmethod
    def _todo(table) -> list:
        """(key, name, dtype) of every column but the ids: counts (integers without a null) as
        int64 under the key (name, "count"), the others as float under their name."""
        todo = []
        for name in table.column_names:
            if name == "tid":
                continue
            whole = pa.types.is_integer(table.schema.field(name).type) and not table.column(name).null_count
            todo.append(((name, "count") if whole else name, name, np.int64 if whole else float))
        return todo

    @classmethod
    def reserve(cls, table) -> dict:
        """The memory of every column's copy in id order, mapped now (:func:`pages.empty`), for
        :meth:`prefetch`: :func:`tpsviz.engines.onepass.run_pass` maps it while the ids sort,
        on the core the sort leaves idle."""
        return {key: pages.empty(table.num_rows, dtype) for key, _, dtype in cls._todo(table)}

    def prefetch(self, reserved: dict | None = None) -> None:
        """Convert every column but the ids at once, two at a time (:meth:`num` and
        :meth:`count` then return them), into the arrays ``reserved`` where given
        (:meth:`reserve`). A gather into the ids' order waits on memory, one cache miss a run,
        and numpy releases the GIL while it gathers: two threads take about half the time of
        one (docs/architecture.md, "Scale")."""
        reserved = reserved or {}
        todo = [item for item in self._todo(self.table) if item[1] not in self._num and (item[1], "count") not in self._num]
        if not todo:
            return
        scratch = threading.local()  # (one array a thread, reused by its columns' gathers)

        def convert(item):
            key, name, dtype = item
            bufs = scratch.__dict__.setdefault("bufs", {})
            buf = bufs.get(np.dtype(dtype))
            if buf is None:
                buf = bufs[np.dtype(dtype)] = pages.empty(self.n_rows, dtype)
            return key, self._column(name, dtype, buf, reserved.get(key))

        with ThreadPoolExecutor(max_workers=2) as pool:
            ids = pool.submit(self.sorted_ids)  # (the ids' gather too: Arrow's take releases the GIL as well)
            for key, values in pool.map(convert, todo):
                self._num[key] = values
            ids.result()

    def num(self, name: str, default: float = np.nan) -> np.ndarray:
        """Column ``name`` as float; an absent one reads as ``default`` everywhere (a read-only
        view of one number: a fresh array costs a page fault per 4 KB)."""
        if name not in self.table.column_names:
            return np.broadcast_to(np.float64(default), (self.n_rows,))
        if name not in self._num:
            whole = self._num.get((name, "count"))  # (prefetched as counts)
            self._num[name] = pages.filled(self.n_rows, whole) if whole is not None else self._column(name, float, self._buf(float))
        return self._num[name]

    def count(self, name: str) -> np.ndarray:
        """A column of counts (never null: ``count()``) as int64."""
        key = (name, "count")
        if key not in self._num:
            self._num[key] = self._column(name, np.int64, self._buf(np.int64))
        return self._num[key]

    def sorted_ids(self):
        """The ids (an Arrow array) in the order of the runs."""
        if self._ids is None:
            tid = self.table.column("tid")
            self._ids = tid if self._order is None else tid.take(self._order)
        return self._ids

    def ids(self) -> pd.Series:
        """The ids as a pandas string column (the Arrow buffers, not one Python str per run:
        0.7 s less at 4.3M runs)."""
        string = pd.Series(dtype="str").dtype
        return self.sorted_ids().to_pandas(types_mapper=lambda t: string if t in _STRING_TYPES else None)

    def first_id(self, mask: np.ndarray) -> str:
        """The id of the first run where ``mask`` holds (for messages)."""
        return str(self.sorted_ids()[int(np.flatnonzero(mask)[0])].as_py())
