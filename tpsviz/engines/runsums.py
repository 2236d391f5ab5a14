"""Per-trajectory sums: what every engine computes, and everything that follows from them.

For one (α, β, ε, schedule), the sufficient statistics of a run i for its TPS under *every*
censoring mode and q_Z are (docs/architecture.md, "Engines"):

    A1_i = Σ_t w_t S(F_t, 1)      A0_i = Σ_t w_t S(F_t, 0)      W_i = Σ_t w_t

over the steps with a forecast, so that TPS_i = A1_i (Y = 1), A0_i (Y = 0) and, for a run
censored with q_Z, q_Z·A1_i + (1 − q_Z)·A0_i (docs/theory.md §4: the exact reduced score is
linear in q_Z). An engine only needs A1 where the run can end in success (Y = 1 or censored)
and A0 where it can end in failure. The base-rate reference of a run is W_i·S(r, ℓ_i). In memory
the sums come from :func:`tpsviz.core.trajectory_sums.trajectory_sums` (:mod:`tpsviz.engines.memory`,
and :func:`tpsviz.compute_tps` itself); TPS_i from them is
:func:`tpsviz.core.trajectory_sums.scored_runs` here and in ``compute_tps``.

The pooled rank and calibration metrics come from counts: positives and negatives per distinct
forecast value (exact) or per cell of a fine grid (with a stated bound on the error), and the
ten T-ECE bins' Σ (F − Y) and row counts. Final-forecast metrics use each run's last forecast.

Runs are kept sorted by trajectory id (as :func:`tpsviz.load` sorts them), so a bootstrap over
runs draws the same resamples whichever engine produced the sums.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tpsviz.diagnostics.leaderboard import RATE_RULES, skill_from_runs
from tpsviz.diagnostics.skill_rate import RateRefit
from tpsviz.core.inference import (bootstrap_sums, column_mean_intervals, group_sums, paired_difference,
                                   percentile_intervals)
from tpsviz.diagnostics.metrics import auprc, auroc, tece
from tpsviz.diagnostics.reliability import wilson_interval
from tpsviz.core.scores import beta_score
from tpsviz.core.censoring import labels_for_runs
from tpsviz.core.tps import ScoreSettings, summary_of_runs
from tpsviz.core.trajectory_sums import RunLabels, mix_by_label, scored_runs, where_or_self
from tpsviz.engines import pages

__all__ = ["RunSums", "PooledCounts", "DatasetScore", "score_from_sums", "rank_metrics", "run_groups",
           "reliability_from_counts", "paired_tps", "tps_of_runs",
           "GROUPED_MIN", "BOOT_GROUPS"]

#: above this many runs, the bootstrap resamples BOOT_GROUPS random groups of runs (run_groups)
GROUPED_MIN = 1_000_000
BOOT_GROUPS = 1 << 18


@dataclass
class PooledCounts:
    """Counts over the labelled (trajectory, step) rows of one predictor.

    Attributes
    ----------
    value : ndarray
        Distinct forecast values (``exact``) or grid cells in increasing order.
    pos, neg : ndarray
        Rows with Y = 1 and Y = 0 at each value or cell.
    exact : bool
        True when ``value`` holds the distinct forecasts themselves.
    grid : int
        Number of equal-width cells on [0, 1] when not exact (0 when exact).
    tece_gap, tece_n : ndarray
        Σ (F − Y) and rows in each of the T-ECE's equal-width bins.
    tece_pos : ndarray
        Rows with Y = 1 in each of those bins (with the two above: the reliability diagram).
    """

    value: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    exact: bool
    grid: int
    tece_gap: np.ndarray
    tece_n: np.ndarray
    tece_pos: np.ndarray


@dataclass
class RunSums:
    """Per-trajectory sums of every predictor under one (α, β, ε, schedule).

    Attributes
    ----------
    source : str
    engine : str
        ``memory``, ``duckdb`` or ``dask``.
    settings : ScoreSettings
        The settings the sums were computed under (censoring, n_boot, level, seed do not
        enter them).
    runs : DataFrame
        One row per run, sorted by ``trajectory_id``: ``trajectory_id``, ``length``,
        ``outcome`` (NaN when censored), ``censored``, ``q_z`` (the log's, NaN when none).
    predictors : list of str
    a1, a0, wsum, n_present, n_clipped, last : dict of ndarray
        Per predictor and run: A1, A0 (NaN where not needed), W, steps with a forecast, steps
        clipped to [ε, 1−ε], and the last forecast (NaN when none).
    pooled : dict of PooledCounts
        Per predictor, over the rows of complete runs that have a forecast.
    n_steps : int
        Rows of the log.
    notes : list of str
    """

    source: str
    engine: str
    settings: ScoreSettings
    runs: pd.DataFrame
    predictors: list
    a1: dict
    a0: dict
    wsum: dict
    n_present: dict
    n_clipped: dict
    last: dict
    pooled: dict
    n_steps: int
    notes: list = field(default_factory=list)

    @property
    def n_trajectories(self) -> int:
        """Number of runs."""
        return len(self.runs)

    @property
    def n_censored(self) -> int:
        """Number of censored runs."""
        return int(self.runs["censored"].sum())


@dataclass
class DatasetScore:
    """What ``tpsviz score`` reports, computed from :class:`RunSums` alone.

    Attributes
    ----------
    settings : ScoreSettings
    summary : DataFrame
        As :attr:`tpsviz.TPSResult.summary` (with bootstrap CIs).
    skill : DataFrame
        As :func:`tpsviz.skill_table`.
    metrics : DataFrame
        ``auroc``, ``auprc``, ``auroc_final``, ``tece_pooled``, ``tece_final``,
        ``auroc_bound``, ``auprc_bound`` (largest possible error of a grid count; 0 when
        exact), ``ranks_exact``, ``n_trajectories``, ``n_steps``.
    sums : RunSums
    ci_words : str
        How the intervals were computed (which bootstrap, over what).
    reliability : dict of DataFrame
        Per predictor, the reliability diagram's ten equal-width bins over the labelled rows, as
        :func:`tpsviz.diagnostics.reliability.reliability_bins` (from the bin counts; Wilson intervals).
    tps_runs : dict
        Per predictor, TPS_i of every run in ``sums.runs`` order, NaN where not scored
        (:func:`tps_of_runs`); read by :meth:`paired_tps`.
    n_scored : dict
        Per predictor and run, the steps scored (0 where the run is not scored).
    q_z_used : ndarray
        Per run, the q_Z its censored score used (NaN for complete runs).

    The per-trajectory table (:attr:`per_trajectory`) is built on first use: at millions of runs
    it costs seconds that a report without it does not pay (docs/architecture.md, "Scale").
    """

    settings: ScoreSettings
    summary: pd.DataFrame
    skill: pd.DataFrame
    metrics: pd.DataFrame
    sums: RunSums
    ci_words: str = ""
    reliability: dict = field(default_factory=dict)
    tps_runs: dict = field(default_factory=dict, repr=False)
    n_scored: dict = field(default_factory=dict, repr=False)
    q_z_used: np.ndarray | None = field(default=None, repr=False)
    _per_trajectory: pd.DataFrame | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def n_per_trajectory_rows(self) -> int:
        """Rows of :attr:`per_trajectory` (one per scored run and predictor), without building it."""
        return int(sum(int((v > 0).sum()) for v in self.n_scored.values()))

    @property
    def per_trajectory(self) -> pd.DataFrame:
        """``trajectory_id``, ``predictor``, ``tps``, ``censored``, ``outcome``, ``n_scored``,
        ``weight_sum``, ``q_z_used``: one row per scored run and predictor, predictor by predictor
        in the order of :attr:`RunSums.predictors`, runs in id order."""
        if self._per_trajectory is None:
            runs = self.sums.runs
            cens = runs["censored"].to_numpy(dtype=bool)
            outcome = runs["outcome"].to_numpy(dtype=float)  # (NaN when censored)
            frames = []
            for name in self.sums.predictors:
                n_scored = self.n_scored[name]
                valid = n_scored > 0
                frames.append(pd.DataFrame({
                    "trajectory_id": runs["trajectory_id"].array[valid], "predictor": name,  # no str per run
                    "tps": self.tps_runs[name][valid], "censored": cens[valid], "outcome": outcome[valid],
                    "n_scored": n_scored[valid], "weight_sum": self.sums.wsum[name][valid],
                    "q_z_used": self.q_z_used[valid]}))
            self._per_trajectory = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        return self._per_trajectory

    def paired_tps(self, baseline: str) -> pd.DataFrame:
        """Every other predictor against ``baseline`` on the runs both were scored on
        (:func:`paired_tps`)."""
        return paired_tps(self.tps_runs, baseline, self.settings.level)


def paired_tps(tps_runs: dict, baseline: str, level: float = 0.95) -> pd.DataFrame:
    """Every other predictor against ``baseline`` on the runs both were scored on.

    The TPS columns of :func:`tpsviz.diagnostics.compare.compare` without its bootstrap:
    Δ = mean_i [TPS_i(pred) − TPS_i(base)], SE = sd of the differences / √n, Δ/SE.

    Parameters
    ----------
    tps_runs : dict
        Per predictor, TPS_i of every run, NaN where not scored (:func:`tps_of_runs`).
    baseline : str
        One of its predictors.
    level : float
        Confidence level (enters nothing here but the estimate's record).

    Returns
    -------
    DataFrame
        Index predictor; ``tps_delta``, ``tps_se``, ``tps_z``, ``n_runs``.
    """

    if baseline not in tps_runs:
        raise ValueError(f"unknown baseline predictor {baseline!r}")
    base = tps_runs[baseline]
    rows = []
    for name, tps in tps_runs.items():
        if name == baseline:
            continue
        both = ~np.isnan(tps) & ~np.isnan(base)
        rec = {"predictor": name, "tps_delta": np.nan, "tps_se": np.nan, "tps_z": np.nan, "n_runs": int(both.sum())}
        if rec["n_runs"]:
            est, z = paired_difference(tps[both], base[both], n_boot=0, level=level)
            rec.update(tps_delta=est.mean, tps_se=est.se, tps_z=z)
        rows.append(rec)
    frame = pd.DataFrame(rows, columns=["predictor", "tps_delta", "tps_se", "tps_z", "n_runs"])
    return frame.set_index("predictor")


def tps_of_runs(sums: RunSums, settings: ScoreSettings | None = None, q_z=None) -> dict:
    """TPS_i of every run (``sums.runs`` order) per predictor, NaN where the run is not scored
    (no forecast; censored in complete-case mode): what :func:`score_from_sums` scores, without
    its summaries, bootstrap and metrics (``tpsviz compare`` out of core)."""
    return _scored_runs(sums, _checked(sums, settings), q_z)[0]


def _checked(sums: RunSums, settings: ScoreSettings | None) -> ScoreSettings:
    settings = settings or sums.settings
    key = ("alpha", "beta", "eps", "schedule")
    if any(getattr(settings, k) != getattr(sums.settings, k) for k in key):
        raise ValueError("the sums were computed under another α, β, ε or schedule")
    return settings


def _scored_runs(sums: RunSums, settings: ScoreSettings, q_z=None):
    """(TPS_i per predictor, NaN where not scored; steps scored per predictor, 0 where not
    scored; run labels ℓ_i, q_Z used, q_Z fallbacks, runs in scope): TPS_i from the sums by
    :func:`tpsviz.core.trajectory_sums.scored_runs`, as :func:`tpsviz.compute_tps` does."""
    cens = sums.runs["censored"].to_numpy(dtype=bool)
    label, q_used, fallback = run_labels_of(sums, settings, q_z)
    in_scope = ~cens if settings.censoring == "complete" else np.ones(len(cens), dtype=bool)
    tps_runs, n_scored = {}, {}
    labels = RunLabels.of(label)  # (worked out once for every predictor)
    for name in sums.predictors:
        out = pages.empty(len(cens), float)  # (a fresh array at millions of runs: mapped at once)
        tps_runs[name], n_scored[name] = scored_runs(sums.a1[name], sums.a0[name], sums.n_present[name], labels,
                                                     in_scope, out)
    return tps_runs, n_scored, label, q_used, fallback, in_scope


def run_groups(n: int, seed: int, n_groups: int = BOOT_GROUPS) -> np.ndarray:
    """A seeded random group (0 … n_groups − 1) for each of ``n`` runs in id order; groups
    differ in size by at most one run.

    With millions of runs a bootstrap over runs costs n × n_boot draws (minutes at 4M runs); it
    resamples these groups instead (docs/architecture.md, "Engines"). Runs are independent, so
    random groups of them are too, and the bootstrap of their sums estimates the same sampling
    distribution; its variance estimate carries a relative Monte-Carlo error of about
    √(2/n_groups) (0.3% at 2^18 groups), far below that of the percentiles of 2,000 replicates.
    """
    return (np.random.default_rng(seed).permutation(n) % n_groups).astype(np.intp)


def _grouped_intervals(cols: list, valids: list, groups: np.ndarray, settings: ScoreSettings):
    """Percentile intervals of each column's mean over its valid runs, resampling the groups of
    runs (:func:`run_groups`): what :func:`tpsviz.core.inference.column_mean_intervals` gives on the columns
    stacked, the same numbers, column by column (at millions of runs the stacked copies cost
    more than the sums; docs/architecture.md, "Scale").

    ``cols``: per predictor, TPS_i with 0 where not valid; ``valids``: where valid."""
    k = len(cols)
    lo, hi = np.full(k, np.nan), np.full(k, np.nan)
    if settings.n_boot <= 0 or groups.size < 2:
        return lo, hi
    g = int(groups.max()) + 1
    finite = np.array([bool(np.isfinite(c).all()) for c in cols])  # (0 where not valid)
    values = [c if ok else np.where(np.isfinite(c), c, 0.0) for c, ok in zip(cols, finite)]
    sizes = None  # the groups' sizes: the valid runs of a column valid on every run
    counts = []
    for valid in valids:
        if valid.all():
            sizes = np.bincount(groups, minlength=g) if sizes is None else sizes
            counts.append(sizes)
        else:
            counts.append(np.bincount(groups[valid], minlength=g))
    x = np.column_stack([group_sums(values, groups)] + [c.astype(float) for c in counts])
    sums = bootstrap_sums(x, settings.n_boot, settings.seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = sums[:, :k] / sums[:, k:]
    return percentile_intervals(reps, finite, np.array([int(v.sum()) for v in valids]), settings.level)


def _ref_per_run(w: np.ndarray, s1: float, s0: float, label: np.ndarray) -> np.ndarray:
    """The reference's TPS_ref,i = W_i·S(r, ℓ_i): :func:`tpsviz.core.trajectory_sums.tps_from_sums`
    of W·S(r, 1) and W·S(r, 0), the same numbers, without those two arrays."""
    one = label == 1.0
    out = pages.empty(one.size, float)
    with np.errstate(invalid="ignore"):  # (W = 0 with an infinite score: NaN, as W·S)
        np.multiply(w, s0, out=out)
        np.multiply(w, s1, out=out, where=one)
        return mix_by_label(out, label, ~one & (label != 0.0), lambda m: w[m] * s1, lambda m: w[m] * s0)


def run_labels_of(sums: RunSums, settings: ScoreSettings, q_z=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ℓ_i per run, q_Z used (NaN for complete runs), censored runs without q_Z: none, exact mode refuses
    them) by :func:`tpsviz.core.censoring.labels_for_runs`."""
    runs = sums.runs
    cens = runs["censored"].to_numpy(dtype=bool)
    given = runs["q_z"].to_numpy(dtype=float) if q_z is None else np.asarray(q_z, dtype=float)
    label, q = labels_for_runs(runs["outcome"].to_numpy(dtype=float), cens, given, settings.censoring)
    return label, q, np.zeros(cens.shape, dtype=bool)


def score_from_sums(sums: RunSums, settings: ScoreSettings | None = None, q_z=None,
                    skill_boot: int | None = None, intervals=None) -> DatasetScore:
    """TPS, skill and the usual metrics of every predictor from per-trajectory sums.

    Parameters
    ----------
    sums : RunSums
    settings : ScoreSettings, optional
        Censoring mode, bootstrap and level (α, β, ε and the schedule must be those of
        ``sums``). Default: ``sums.settings``.
    q_z : array_like, optional
        q_Z per run (in ``sums.runs`` order) for ``exact`` mode.
    skill_boot : int, optional
        Bootstrap replicates of the skill ratio (default max(n_boot, 200), as ``tpsviz score``).
    intervals : callable, optional
        ``intervals(values, valid, ids, settings) -> (low, high)``: the TPS intervals' bootstrap
        (default: the multinomial bootstrap over runs in id order, as :func:`tpsviz.compute_tps`;
        the Dask engine passes its Poisson bootstrap).

    Returns
    -------
    DatasetScore
    """
    settings = _checked(sums, settings)
    runs = sums.runs
    n = len(runs)
    cens = runs["censored"].to_numpy(dtype=bool)
    length = runs["length"].to_numpy(dtype=np.int64)
    tps_runs, n_scored_of, label, q_used, fallback, in_scope = _scored_runs(sums, settings, q_z)
    complete_case = settings.censoring == "complete"
    rows, cols, valids = [], [], []
    for name in sums.predictors:
        n_scored = n_scored_of[name]
        valid = n_scored > 0
        tps = tps_runs[name]
        rows.append(summary_of_runs(name, tps, n_scored, sums.wsum[name], sums.n_clipped[name], length, in_scope,
                                    cens, fallback, complete_case))
        cols.append(where_or_self(valid, tps, 0.0))
        valids.append(valid)
    summary = pd.DataFrame(rows).set_index("predictor")
    groups = run_groups(n, settings.seed) if n > GROUPED_MIN else None
    if groups is not None and intervals is None:
        words = (f"percentile bootstrap over {BOOT_GROUPS:,} random groups of runs (more than {GROUPED_MIN:,} "
                 f"runs; {settings.n_boot} replicates)")
    elif intervals is None:
        words = f"percentile bootstrap over runs ({settings.n_boot} replicates)"
    else:
        words = f"{getattr(intervals, 'words', 'bootstrap over runs')} ({settings.n_boot} replicates)" + (
            f"; skill CIs over {BOOT_GROUPS:,} random groups of runs" if groups is not None else "")
    words += "; SE by run (out of core, runs that repeat a task are not clustered by it: docs/theory.md §6.1)"
    if sums.predictors and groups is not None and intervals is None:
        summary["tps_ci_low"], summary["tps_ci_high"] = _grouped_intervals(cols, valids, groups, settings)
    elif sums.predictors:
        vals, ok = np.column_stack(cols), np.column_stack(valids)
        lo, hi = (column_mean_intervals(vals, ok, settings.n_boot, settings.level, settings.seed,
                                        interval="percentile")  # (the engines' kind: their words say so)
                  if intervals is None
                  else intervals(vals, ok, runs["trajectory_id"].to_numpy(), settings))
        summary["tps_ci_low"], summary["tps_ci_high"] = lo, hi
    skill = _skill(sums, settings, label, cols, valids,
                   max(settings.n_boot, 200) if skill_boot is None else int(skill_boot), groups)
    reliability = {name: reliability_from_counts(sums.pooled[name], settings.level) for name in sums.predictors}
    return DatasetScore(settings, summary, skill, rank_metrics(sums), sums, words, reliability, tps_runs,
                        n_scored_of, q_used)


def reliability_from_counts(c: PooledCounts, level: float = 0.95) -> pd.DataFrame:
    """The reliability diagram of :func:`tpsviz.diagnostics.reliability.reliability_bins` (ten equal-width
    bins) from bin counts: n, positives and Σ (F − Y), so Σ F = Σ (F − Y) + positives."""
    n, k = c.tece_n.astype(float), c.tece_pos.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_f, rate = (c.tece_gap + k) / n, k / n
    lo, hi = wilson_interval(k, n, level)
    edges = np.linspace(0.0, 1.0, n.size + 1)
    return pd.DataFrame({"bin_lo": edges[:-1], "bin_hi": edges[1:], "n": n.astype(np.int64),
                         "mean_forecast": mean_f, "observed_rate": rate, "ci_low": lo, "ci_high": hi})


def _skill(sums: RunSums, settings: ScoreSettings, label: np.ndarray, cols, valids,
           n_boot: int, groups: np.ndarray | None = None) -> pd.DataFrame:
    """Skill against the constant base rate r: TPS_ref,i = W_i·S(r, ℓ_i) on the predictor's rows."""
    labelled = label[~np.isnan(label)]
    if labelled.size == 0:
        raise ValueError("no run to score: every run is censored and complete-case leaves "
                         "censored runs out; choose another censoring mode (simple, exact or "
                         "upper)")
    rate = float(labelled.mean())
    eps = float(settings.eps)
    rc = min(max(rate, eps), 1.0 - eps) if eps > 0 else rate
    s1, s0 = (float(beta_score(rc, y, settings.alpha, settings.beta)) for y in (1, 0))
    values = {}
    for name, tps, valid in zip(sums.predictors, cols, valids):
        w = sums.wsum[name]
        ref = _ref_per_run(w, s1, s0, where_or_self(valid, label, 0.5))
        values[name] = (where_or_self(valid, tps, np.nan), where_or_self(valid, ref, np.nan))
    # the rate re-estimated in every replicate, as in memory (tpsviz.diagnostics.skill_rate)
    refit = RateRefit(label, {name: np.asarray(sums.wsum[name], dtype=float) for name in sums.predictors},
                      settings.alpha, settings.beta, eps)
    return skill_from_runs(values, rate, RATE_RULES[settings.censoring], settings.level, n_boot,
                           settings.seed, groups, refit)


def _grid_bounds(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """Largest error of AUROC and AUPRC computed on grid cells instead of distinct values.

    AUROC: a positive–negative pair within one cell is counted ½ and truly counts 0, ½ or 1,
    so the error is at most ½ Σ_c pos_c·neg_c / (P·N). AUPRC: within a cell, the precision at
    any threshold lies between TP/(TP + FP + neg_c) and (TP + pos_c)/(TP + FP + pos_c) (TP, FP
    counted above the cell), and the cell carries pos_c/P of the recall, so the error is at
    most Σ_c pos_c/P × (that range).
    """
    P, N = pos.sum(), neg.sum()
    au = 0.5 * float(pos @ neg) / (P * N) if P and N else np.nan
    tp = np.cumsum(pos[::-1])[::-1] - pos  # strictly above each cell (cells in increasing order)
    fp = np.cumsum(neg[::-1])[::-1] - neg
    with np.errstate(invalid="ignore", divide="ignore"):
        hi = np.where(tp + fp + pos > 0, (tp + pos) / (tp + fp + pos), 0.0)
        lo = np.where(tp + fp + neg > 0, tp / (tp + fp + neg), 0.0)
    ap = float((pos / P) @ (hi - lo)) if P else np.nan
    return au, ap


def rank_metrics(sums: RunSums, n_bins: int = 10) -> pd.DataFrame:
    """Pooled and final-forecast AUROC, AUPRC and T-ECE of every predictor from the counts.

    Labelled rows are the rows of complete runs that carry a forecast, as in
    :func:`tpsviz.metric_table`.
    """
    runs = sums.runs
    y_run = runs["outcome"].to_numpy(dtype=float)
    done = ~runs["censored"].to_numpy(dtype=bool)
    rows = []
    for name in sums.predictors:
        c = sums.pooled[name]
        rec = {"predictor": name}
        pf = sums.last[name]
        keep = done & ~np.isnan(pf)
        n_rows = int(c.pos.sum() + c.neg.sum())
        if n_rows:
            x = np.r_[c.value, c.value]
            yv = np.r_[np.ones(c.value.size), np.zeros(c.value.size)]
            wv = np.r_[c.pos, c.neg].astype(float)
            for col, fn in (("auroc", auroc), ("auprc", auprc)):
                try:
                    rec[col] = fn(x if c.exact else x / max(c.grid, 1), yv, sample_weight=wv)
                except ValueError:
                    rec[col] = np.nan
            rec["tece_pooled"] = float(np.abs(c.tece_gap).sum() / c.tece_n.sum())
            au_b, ap_b = (0.0, 0.0) if c.exact else _grid_bounds(c.pos.astype(float), c.neg.astype(float))
            rec.update(auroc_bound=au_b, auprc_bound=ap_b, ranks_exact=bool(c.exact))
        if keep.any():
            try:
                rec["auroc_final"] = auroc(pf[keep], y_run[keep])
            except ValueError:
                rec["auroc_final"] = np.nan
            rec["tece_final"] = tece(pf[keep], y_run[keep], n_bins)
        rec.update(n_trajectories=int(keep.sum()), n_steps=n_rows)
        rows.append(rec)
    cols = ["auroc", "auprc", "auroc_final", "tece_pooled", "tece_final", "auroc_bound",
            "auprc_bound", "ranks_exact", "n_trajectories", "n_steps"]
    return pd.DataFrame(rows).set_index("predictor").reindex(columns=cols)
