"""The engine interface: what the memory, DuckDB and Dask engines each give (docs/architecture.md,
"Engines").

An engine computes the per-trajectory sums of a log under one (α, β, ε, schedule)
(:meth:`Engine.runsums`: :class:`~tpsviz.engines.runsums.RunSums`, from which
:func:`~tpsviz.engines.runsums.score_from_sums` gives every number of ``tpsviz score`` the same way
for all engines), draws a seeded random sample of whole runs for what needs the step rows
(:meth:`Engine.sample`), and says which bootstrap its intervals take (:attr:`Engine.intervals`)
and how it ran (:meth:`Engine.describe`). An engine is a context manager: the Dask engine holds a
cluster while it is open. :func:`tpsviz.engines.get_engine` gives an engine by name.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import pandas as pd

from tpsviz.core.tps import ScoreSettings
from tpsviz.engines.runsums import RunSums
from tpsviz.io.dataset import Dataset
from tpsviz.io.dataset.sample import sample_runs

__all__ = ["Engine", "EngineBase"]


@runtime_checkable
class Engine(Protocol):
    """One way of computing per-trajectory sums.

    Attributes
    ----------
    name : str
        ``memory``, ``duckdb`` or ``dask`` (:attr:`RunSums.engine`).
    intervals : callable or None
        The TPS intervals' bootstrap for :func:`~tpsviz.engines.runsums.score_from_sums`
        (``intervals(values, valid, ids, settings) -> (low, high)``, with a ``words`` attribute
        saying which bootstrap it is); None: the multinomial bootstrap over runs.
    """

    name: str
    intervals: Callable | None

    def __enter__(self) -> Engine: ...

    def __exit__(self, *exc) -> None: ...

    def runsums(self, source, settings: ScoreSettings, *, mapping=(), percent=(),
                counts: bool = True) -> RunSums:
        """Per-trajectory sums A1, A0, W of every predictor of ``source`` under ``settings``.

        Parameters
        ----------
        source : Dataset
            From :func:`tpsviz.io.dataset.open_dataset` (the memory engine also takes a loaded
            log, a :class:`~tpsviz.core.data.TrajectoryData`).
        settings : ScoreSettings
            α, β, ε and the schedule.
        mapping : sequence of (target, column), optional
            ``--map`` pairs.
        percent : iterable of str, optional
            Predictors given in percent (``--percent``).
        counts : bool
            Whether the pooled AUROC/AUPRC/T-ECE counts are needed (an engine may count them
            anyway).

        Returns
        -------
        RunSums
        """
        ...

    def sample(self, source: Dataset, n_runs: int, seed: int = 0, *, max_rows: int | None = None,
               mapping=()) -> tuple[pd.DataFrame, dict]:
        """The step rows of a seeded random sample of whole runs (:func:`tpsviz.io.dataset.sample.sample_runs`)."""
        ...

    def describe(self, why: str, intervals: bool = True) -> str:
        """Which engine ran, where and why (``why``); with ``intervals``, its bootstrap too."""
        ...


class EngineBase:
    """What the engines share: no resource held while open, the multinomial bootstrap, and the
    sample of runs every engine draws alike.

    The sample is DuckDB's draw over the dataset's files (the ``n_runs`` ids with the smallest
    ``hash(id, seed)``), on the client for the Dask engine too: it depends on the ids and the seed
    only, so the runs are the same whichever engine scored the dataset (and the dashboard's).
    """

    name = ""
    intervals = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def sample(self, source: Dataset, n_runs: int, seed: int = 0, *, max_rows: int | None = None,
               mapping=()) -> tuple[pd.DataFrame, dict]:
        """The step rows of a seeded random sample of whole runs.

        Parameters
        ----------
        source : Dataset
        n_runs : int
            Runs to draw (all of them when the dataset has fewer).
        seed : int
            Seed of the draw.
        max_rows : int, optional
            Most step rows read.
        mapping : sequence of (target, column), optional
            ``--map`` pairs (only the trajectory id's is used here).

        Returns
        -------
        frame, info
            As :func:`tpsviz.io.dataset.sample.sample_runs`.
        """
        return sample_runs(source, n_runs, seed, max_rows=max_rows, mapping=mapping)

    def describe(self, why: str, intervals: bool = True) -> str:
        """Which engine ran and why.

        Parameters
        ----------
        why : str
            Why this engine was chosen.
        intervals : bool
            Whether to name the intervals' bootstrap (where it is not the usual one).

        Returns
        -------
        str
        """
        return f"{self.name} ({why})"
