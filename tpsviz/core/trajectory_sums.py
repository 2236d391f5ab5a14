"""Per-trajectory sums of a log in memory, and the TPS of each run from them (docs/theory.md §4).

For one (α, β, ε, schedule), what a run i needs for its TPS under every censoring mode and q_Z:

    A1_i = Σ_t w_t S(F_t, 1)      A0_i = Σ_t w_t S(F_t, 0)      W_i = Σ_t w_t

over its steps with a forecast; then TPS_i = ℓ_i·A1_i + (1 − ℓ_i)·A0_i with ℓ_i the run's label
under the censoring mode (:func:`tpsviz.core.censoring.labels_for_runs`: Y for a complete run, q_Z
for a censored one, NaN when left out), since the censored score is linear in q_Z.

:func:`trajectory_sums` is the one function that computes these sums from a log's step rows, with
the score kernels of :func:`tpsviz.core.scores.beta_score`: :func:`tpsviz.core.tps.compute_tps`
(the in-memory engine's scoring) and :func:`tpsviz.engines.memory.sums_in_memory` (the engines'
:class:`~tpsviz.engines.runsums.RunSums` of a loaded log) both call it. :func:`tps_from_sums` is the
one combination ℓ·A1 + (1 − ℓ)·A0, used by ``compute_tps`` and by the out-of-core engines'
:func:`~tpsviz.engines.runsums.score_from_sums` alike; :func:`scored_runs` adds which runs are scored.

A run reads only the branches its label needs (:class:`RunRows`: A1 where ℓ > 0, A0 where ℓ < 1),
so a branch that does not count is never computed, and an unbounded score there (ε = 0) never
meets a weight of 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpsviz.core.data import TrajectoryData
from tpsviz.core.schedules import Schedule
from tpsviz.core.scores import TABLE_MIN, beta_score
from tpsviz.core.weights import step_weights

__all__ = ["RunRows", "RowScores", "TrajectorySums", "RunLabels", "trajectory_sums", "contributions",
           "tps_from_sums", "mix_by_label", "scored_runs", "zero_branch", "where_or_self", "nan_unless"]


@dataclass
class RunRows:
    """The step rows of a log grouped by run, their weights, and the score branches each run needs.

    Build it with :meth:`of`. Rows are in the log's order (sorted by run), restricted to the runs
    that need some branch.

    Attributes
    ----------
    n_runs : int
        Runs of the log (the per-run arrays of :func:`trajectory_sums` have this length).
    need1, need0 : ndarray of bool
        Per run: A1 is needed (ℓ > 0), A0 is needed (ℓ < 1). A run that needs neither is left out.
    rows_in : ndarray of bool or None
        The log's step rows of the runs left in (None: every row).
    codes : ndarray of int
        The run of each row in scope.
    length : ndarray of int
        Rows in scope per run (0 for a run left out).
    starts : ndarray of int
        The first row of each run among the rows in scope.
    y : ndarray of float
        The branch scored first on each row in scope: 1.0 on the rows of runs that need A1, else 0.0.
    both : ndarray of bool or None
        Rows in scope of the runs that need both branches (None: no such run); their A0 is a second
        branch scored on them alone.
    w : ndarray of float or None
        w_t of every row in scope (None: uniform weights).
    wsum : ndarray of float
        Σ w_t per run over its rows in scope.
    has_rows : ndarray of bool
        Runs with rows in scope.
    only0 : ndarray of bool
        Runs that need A0 alone.
    both_codes : ndarray of int or None
        The run of each row of :attr:`both` (None: no such row), found once for every predictor.
    """

    n_runs: int
    need1: np.ndarray
    need0: np.ndarray
    rows_in: np.ndarray | None
    codes: np.ndarray
    length: np.ndarray
    starts: np.ndarray
    y: np.ndarray
    both: np.ndarray | None
    w: np.ndarray | None
    wsum: np.ndarray
    has_rows: np.ndarray | None = None
    only0: np.ndarray | None = None
    both_codes: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.has_rows = self.length > 0
        self.both_codes = None if self.both is None else self.codes[self.both]
        self._starts_has = self.starts if self.has_rows.all() else self.starts[self.has_rows]
        self.only0 = self.need0 & ~self.need1
        self._keep1, self._keep0 = nan_unless(self.need1), nan_unless(self.only0)

    @classmethod
    def of(cls, data: TrajectoryData, need1: np.ndarray, need0: np.ndarray, schedule: Schedule) -> "RunRows":
        """The rows of ``data`` for runs that need A1 (``need1``) or A0 (``need0``), weighted by ``schedule``.

        Parameters
        ----------
        data : TrajectoryData
        need1, need0 : ndarray of bool
            Per run (in the order of ``data.trajectories``).
        schedule : Schedule

        Returns
        -------
        RunRows
        """
        t = data.trajectories
        need1, need0 = np.asarray(need1, dtype=bool), np.asarray(need0, dtype=bool)
        scoped = need1 | need0
        codes_all = data.steps["traj"].to_numpy()
        rows_in = None if scoped.all() else scoped[codes_all]
        codes = codes_all if rows_in is None else codes_all[rows_in]
        length = (t["length"].to_numpy() * scoped).astype(np.int64)
        starts = np.r_[0, np.cumsum(length)[:-1]].astype(np.int64)
        both_t = need1 & need0
        outcome = t["outcome"].to_numpy(dtype=float)[scoped]
        if not both_t.any() and not np.isnan(outcome).any() and np.array_equal(need1[scoped], outcome == 1.0):
            # every run scored on its own outcome's branch: the log's cached row outcomes
            y = data.row_outcome if rows_in is None else data.row_outcome[rows_in]
        else:
            y = need1[codes].astype(float)
        w = None
        if schedule.name != "uniform":
            w_all = step_weights(data, schedule)
            w = w_all if rows_in is None else w_all[rows_in]
        rows = cls(len(t), need1, need0, rows_in, codes, length, starts, y,
                   both_t[codes] if both_t.any() else None, w, length.astype(float))
        if w is not None:
            rows.wsum = rows.by_run(w)
        return rows

    def sums_as_branches(self, first: np.ndarray, has: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(A1, A0) from the per-run sums of the branch scored first: A1 where the run needs it, A0
        where it needs A0 alone, NaN elsewhere and on the runs not in ``has`` (None: all)."""
        a1, a0 = first + self._keep1, first + self._keep0
        if has is not None:
            gone = nan_unless(has)
            a1 += gone
            a0 += gone
        return a1, a0

    def by_run(self, values: np.ndarray) -> np.ndarray:
        """Per-run sums of values on the rows in scope (0 for a run without rows)."""
        if not values.size:
            return np.zeros(self.n_runs)
        sums = np.add.reduceat(values, self._starts_has)
        if sums.size == self.n_runs:  # (every run has rows: the sums in run order)
            return sums
        out = np.zeros(self.n_runs)
        out[self.has_rows] = sums
        return out

    @property
    def table(self) -> bool:
        """Score by the verified tables (:func:`tpsviz.core.scores.beta_score`): one evaluation
        method for the whole log, whatever the size of the subsets scored."""
        return (self.codes.size if self.rows_in is None else self.rows_in.size) >= TABLE_MIN


def contributions(w: np.ndarray | None, s: np.ndarray) -> np.ndarray:
    """The per-row terms w_t·S that a run's sum adds up (S itself under uniform weights; a row
    of weight 0 contributes 0, also where S = −∞ with ε = 0)."""
    if w is None:
        return s
    with np.errstate(invalid="ignore"):
        c = w * s
    zero = w == 0
    if zero.any():
        c[zero] = 0.0
    return c


@dataclass
class RowScores:
    """The row scores behind one predictor's sums: each row in scope, as scored.

    Attributes
    ----------
    s : ndarray
        S(F_t, y) on each row in scope, y the branch :attr:`RunRows.y` (NaN: no forecast).
    forecast : ndarray
        The forecast as clipped for scoring (NaN: missing).
    s0 : ndarray or None
        S(F_t, 0) on the rows with a forecast of the runs that need both branches (``both_rows``).
    both_rows : ndarray of bool or None
        Those rows, among the rows in scope.
    """

    s: np.ndarray
    forecast: np.ndarray
    s0: np.ndarray | None
    both_rows: np.ndarray | None

    @classmethod
    def again(cls, s: np.ndarray, forecast: np.ndarray, rows: RunRows, alpha: float, beta: float) -> "RowScores":
        """The row scores :func:`trajectory_sums` returned, from their :attr:`s` and :attr:`forecast`
        alone: the second branch (:func:`zero_branch`) scored again, the same numbers. What a result
        keeps to give its row scores when asked for (:meth:`tpsviz.core.tps.TPSResult.row_scores`).

        Parameters
        ----------
        s, forecast : ndarray
            :attr:`s` and :attr:`forecast` of the row scores :func:`trajectory_sums` returned on ``rows``.
        rows : RunRows
            Equal to the rows they were scored on.
        alpha, beta : float
            The score they were scored with.

        Returns
        -------
        RowScores
        """
        missing = np.isnan(forecast)  # (the forecasts as scored: NaN where missing, as trajectory_sums found)
        both, s0 = zero_branch(rows, forecast, ~missing if missing.any() else None, alpha, beta, rows.table)
        return cls(s, forecast, s0, both)

    def expected(self, rows: RunRows, label: np.ndarray) -> np.ndarray:
        """Each row's score under the runs' labels ℓ: S(F_t, ℓ) where ℓ is 0 or 1, the expected
        score ℓ·S(F_t, 1) + (1 − ℓ)·S(F_t, 0) (:func:`tps_from_sums` on the row) where ℓ is a q_Z.

        Parameters
        ----------
        rows : RunRows
            The rows these scores were computed on.
        label : ndarray
            ℓ per run.

        Returns
        -------
        ndarray
            One score per row in scope (NaN: no forecast); :attr:`s` itself (not a copy) when no
            run needs both branches.
        """
        if self.both_rows is None:
            return self.s
        out = self.s.copy()
        b = self.both_rows
        ell = label[rows.both_codes if b is rows.both else rows.codes[b]]  # (ℓ of each row's run)
        if ((ell > 0.0) & (ell < 1.0)).all():
            # what tps_from_sums gives on these rows (its mixed branch, the same operations), without
            # its selection by label: every ℓ here is a q_Z strictly between 0 and 1
            with np.errstate(invalid="ignore", over="ignore"):
                out[b] = ell * self.s[b] + (1.0 - ell) * self.s0
        else:
            out[b] = tps_from_sums(self.s[b], self.s0, ell)
        return out

    def on_log(self, rows: RunRows, label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`expected` and :attr:`forecast` on every step row of the log (NaN on the rows out
        of scope).

        Parameters
        ----------
        rows : RunRows
            The rows these scores were computed on.
        label : ndarray
            ℓ per run.

        Returns
        -------
        scores, forecasts : ndarray
            One per step row of the log (the arrays in scope themselves when every row is).
        """
        s, pc = self.expected(rows, label), self.forecast
        if rows.rows_in is None:
            return s, pc
        s_full = np.full(rows.rows_in.shape, np.nan)
        pc_full = np.full(rows.rows_in.shape, np.nan)
        s_full[rows.rows_in], pc_full[rows.rows_in] = s, pc
        return s_full, pc_full


@dataclass
class TrajectorySums:
    """One predictor's per-trajectory sums (arrays per run, in the order of the log's runs).

    Attributes
    ----------
    a1, a0 : ndarray
        A1_i and A0_i; NaN where the run does not need that branch or has no forecast.
    wsum : ndarray
        W_i = Σ w_t over the steps with a forecast.
    n_present, n_clipped : ndarray of int
        Steps with a forecast; steps clipped to [ε, 1 − ε].
    last : ndarray or None
        The last forecast (NaN when none; None when not asked for).
    rows : RowScores or None
        The row scores the sums add up (when asked for).
    """

    a1: np.ndarray
    a0: np.ndarray
    wsum: np.ndarray
    n_present: np.ndarray
    n_clipped: np.ndarray
    last: np.ndarray | None = None
    rows: RowScores | None = None


def _clipped(p: np.ndarray, eps: float):
    """(missing rows or None, clipped rows or None, the forecasts clipped to [ε, 1 − ε])."""
    lo, hi = (float(p.min()), float(p.max())) if p.size else (0.5, 0.5)
    if lo >= eps and hi <= 1.0 - eps:  # the common case: nothing missing, nothing to clip
        return None, None, p
    missing = np.isnan(p)
    if eps > 0:
        clipped = (p < eps) | (p > 1.0 - eps)
        return (missing if missing.any() else None), (clipped if clipped.any() else None), np.clip(p, eps, 1.0 - eps)
    return (missing if missing.any() else None), None, p


def _last_forecast(p: np.ndarray, present: np.ndarray | None, rows: RunRows) -> np.ndarray:
    """The last forecast of each run among its rows in scope (NaN when none)."""
    out = np.full(rows.n_runs, np.nan)
    if present is None:
        has = rows.length > 0
        out[has] = p[rows.starts[has] + rows.length[has] - 1]
        return out
    idx = np.flatnonzero(present)
    if idx.size:
        codes = rows.codes[idx]
        fin = idx[np.r_[codes[1:] != codes[:-1], True]]
        out[rows.codes[fin]] = p[fin]
    return out


def trajectory_sums(p: np.ndarray, rows: RunRows, alpha: float, beta: float, eps: float, *,
                    last: bool = True, keep_rows: bool = False) -> TrajectorySums:
    """A1, A0, W, the steps with a forecast and clipped, and the last forecast of every run.

    Parameters
    ----------
    p : ndarray of float
        One predictor's forecast on every step row of the log (NaN: missing).
    rows : RunRows
        The rows, weights and branches (:meth:`RunRows.of`).
    alpha, beta : float
        The beta family's parameters.
    eps : float
        Forecasts are clipped to [ε, 1 − ε] before scoring (0: off).
    last : bool
        Also the last forecast of each run (unclipped).
    keep_rows : bool
        Also the row scores the sums add up (:class:`RowScores`).

    Returns
    -------
    TrajectorySums
    """
    table = rows.table  # (p has one forecast per step row of the log)
    p_in = p if rows.rows_in is None else p[rows.rows_in]
    missing, clipped, pc = _clipped(p_in, float(eps))
    present = None if missing is None else ~missing
    if present is None:
        s = beta_score(pc, rows.y, alpha, beta, table)
    else:
        s = np.full(pc.shape, np.nan)
        s[present] = beta_score(pc[present], rows.y[present], alpha, beta, table)
    c = contributions(rows.w, s)
    if present is not None:
        c = np.where(missing, 0.0, c)
    first = rows.by_run(c)  # A1 on runs that need it, else A0
    if present is None:
        n_present, wsum = rows.length, rows.wsum
    else:
        n_present = rows.by_run(present.astype(float)).astype(np.int64)
        wsum = rows.by_run(np.where(missing, 0.0, 1.0 if rows.w is None else rows.w))
    n_clipped = (np.zeros(rows.n_runs, dtype=np.int64) if clipped is None  # (NaN is never clipped)
                 else rows.by_run(clipped.astype(float)).astype(np.int64))
    has = rows.has_rows if present is None else n_present > 0
    a1, a0 = rows.sums_as_branches(first, None if has.all() else has)
    both, s0 = zero_branch(rows, pc, present, alpha, beta, table)
    if both is not None:  # A0 of the runs that need both branches
        c0 = contributions(None if rows.w is None else rows.w[both], s0)
        second = np.bincount(rows.both_codes if present is None else rows.codes[both], weights=c0,
                             minlength=rows.n_runs)
        sel = rows.need1 & rows.need0 & has
        a0[sel] = second[sel]
    return TrajectorySums(a1, a0, wsum, n_present, n_clipped,
                          _last_forecast(p_in, present, rows) if last else None,
                          RowScores(s, pc, s0, both) if keep_rows else None)


def zero_branch(rows: RunRows, pc: np.ndarray, present: np.ndarray | None, alpha: float, beta: float,
                table: bool) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The rows whose A0 is a second branch (:attr:`RunRows.both`, with a forecast) and S(F_t, 0) on them.

    Parameters
    ----------
    rows : RunRows
    pc : ndarray
        The forecasts of the rows in scope, clipped (NaN: missing).
    present : ndarray of bool or None
        Rows in scope with a forecast (None: every row).
    alpha, beta : float
    table : bool
        :attr:`RunRows.table`.

    Returns
    -------
    both : ndarray of bool or None
        Those rows among the rows in scope (None: no run needs both branches).
    s0 : ndarray or None
        S(F_t, 0) on them.
    """
    if rows.both is None:
        return None, None
    both = rows.both if present is None else rows.both & present
    return both, beta_score(pc[both], 0, alpha, beta, table)


def where_or_self(cond: np.ndarray, x: np.ndarray, other) -> np.ndarray:
    """``np.where(cond, x, other)``, or ``x`` itself (not a copy: read it only) where ``cond``
    holds on every run, as it mostly does: at millions of runs each copy costs more than the
    arithmetic (docs/architecture.md, "Scale")."""
    return x if cond.all() else np.where(cond, x, other)


def nan_unless(mask: np.ndarray) -> np.ndarray:
    """0.0 where ``mask`` holds, NaN elsewhere (0/1 and 0/0): added to an array, it keeps the items
    where ``mask`` holds and makes the others NaN at the cost of an addition. ``np.where`` or a
    masked copy by a mask as random as runs' outcomes mispredicts a branch on every other item:
    about 15 times slower at 100,000 runs."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.divide(0.0, mask.astype(float))


@dataclass
class RunLabels:
    """ℓ per run with what choosing A1 or A0 by it needs, worked out once for every predictor.

    Attributes
    ----------
    label : ndarray
        ℓ per run.
    keep1, keep0 : ndarray
        0 where ℓ = 1 (resp. ℓ = 0), NaN elsewhere (:func:`nan_unless`).
    mixed : ndarray of bool or None
        Runs whose ℓ is neither 0 nor 1 nor NaN (a censored run's q_Z); None when there is none.
        (A run whose ℓ is NaN, left out by complete-case, gets NaN from ``keep1`` and ``keep0`` alone.)
    """

    label: np.ndarray
    keep1: np.ndarray
    keep0: np.ndarray
    mixed: np.ndarray | None

    @classmethod
    def of(cls, label) -> "RunLabels":
        """The selection of ``label`` (ℓ per run; a :class:`RunLabels` is returned as it is)."""
        if isinstance(label, RunLabels):
            return label
        label = np.asarray(label, dtype=float)
        one, zero = label == 1.0, label == 0.0
        mixed = ~(one | zero | np.isnan(label))
        return cls(label, nan_unless(one), nan_unless(zero), mixed if mixed.any() else None)


def mix_by_label(out: np.ndarray, label: np.ndarray, mixed: np.ndarray, a1, a0) -> np.ndarray:
    """``out`` with ℓ·A1 + (1 − ℓ)·A0 on the runs ``mixed``, whose ℓ is neither 0 nor 1 (a censored
    run's q_Z, or NaN: then NaN).

    Parameters
    ----------
    out : ndarray
        A0 where ℓ = 0 and A1 where ℓ = 1 already; the rest is written here.
    label : ndarray
        ℓ per run.
    mixed : ndarray of bool
        The runs to write.
    a1, a0 : callable
        ``a1(m)``, ``a0(m)``: A1 and A0 of the runs ``m`` (a mask), so that a caller that forms
        them from other arrays forms them on those runs only.

    Returns
    -------
    ndarray
        ``out``.
    """
    if mixed.any():
        ell = label[mixed]
        with np.errstate(invalid="ignore", over="ignore"):
            out[mixed] = ell * a1(mixed) + (1.0 - ell) * a0(mixed)
    return out


def tps_from_sums(a1: np.ndarray, a0: np.ndarray, label, out: np.ndarray | None = None) -> np.ndarray:
    """TPS_i = ℓ_i·A1_i + (1 − ℓ_i)·A0_i: A1 where ℓ = 1, A0 where ℓ = 0 (a branch that does not
    count is never read: its NaN or −∞ never meets a factor 0), NaN where ℓ is NaN.

    Parameters
    ----------
    a1, a0 : ndarray
        A1 and A0 per run (read only where the label needs them).
    label : ndarray or RunLabels
        ℓ per run (:func:`tpsviz.core.censoring.labels_for_runs`), or its :class:`RunLabels` when
        several predictors are scored under one.
    out : ndarray, optional
        Where to write (e.g. memory mapped at once, :mod:`tpsviz.engines.pages`); default a new array.

    Returns
    -------
    ndarray
    """
    lab = RunLabels.of(label)
    out = np.empty(lab.label.size, float) if out is None else out
    # A1 + (0 or NaN) and A0 + (NaN or 0): fmax takes the one that is not NaN (no branch per run)
    np.add(a1, lab.keep1, out=out)
    np.fmax(out, a0 + lab.keep0, out=out)
    if lab.mixed is not None:
        mix_by_label(out, lab.label, lab.mixed, lambda m: a1[m], lambda m: a0[m])
    return out


def scored_runs(a1: np.ndarray, a0: np.ndarray, n_present: np.ndarray, label: np.ndarray, in_scope: np.ndarray,
                out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """TPS_i of every run from its sums, and the steps scored.

    Parameters
    ----------
    a1, a0, n_present : ndarray
        Per run (:class:`TrajectorySums`).
    label : ndarray or RunLabels
        ℓ per run (:func:`tps_from_sums`).
    in_scope : ndarray of bool
        Runs the censoring mode scores (complete-case leaves the censored ones out).
    out : ndarray, optional
        Where to write TPS_i (:func:`tps_from_sums`; default a new array): the array returned.

    Returns
    -------
    tps : ndarray
        TPS_i, NaN where the run is not scored (out of scope, or no forecast).
    n_scored : ndarray of int
        Steps scored, 0 where the run is not scored.
    """
    n_scored = where_or_self(in_scope, n_present, 0)
    valid = n_scored > 0
    tps = tps_from_sums(a1, a0, label, out)  # (under the labels worked out once: a run not scored is NaN below)
    if not valid.all():
        np.copyto(tps, np.nan, where=~valid)
    return tps, n_scored
