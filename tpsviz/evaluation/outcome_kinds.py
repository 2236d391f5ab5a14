"""The :class:`~tpsviz.evaluation.base.Evaluation` of a log whose outcome is one of k labels
(:class:`MulticlassEvaluation`: TPS-k, docs/multiclass.md) or a number (:class:`ContinuousEvaluation`:
TPS-CRPS, docs/continuous.md), and the functions that compute them from a read log.

``to_json()`` is the object ``score --json`` prints for such a log (the same as the old spellings
``multiclass --json`` and ``crps --json``). These logs get no verdict label yet: their sentences
say the score with its interval and what the calibration check found, and say that no verdict is
decided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from tpsviz.core.errors import SettingError
from tpsviz.core.formatting import json_number
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.schedules import parse_schedule
from tpsviz.core.wording import PYTHON, Wording, setting, word
from tpsviz.evaluation.base import Evaluation
from tpsviz.evaluation.options import Settings
from tpsviz.core.schema import plain_text
from tpsviz.outcomes.continuous import tps_crps
from tpsviz.outcomes.continuous_pit import pit_histogram
from tpsviz.outcomes.multiclass import CENSORING_MODES, tps_k
from tpsviz.outcomes.multiclass_reliability import ovr_summary, reliability_ovr
from tpsviz.report.html import Section, build_report

__all__ = ["MulticlassEvaluation", "ContinuousEvaluation", "evaluate_multiclass", "evaluate_continuous",
           "MIN_BIN_ROWS"]

MIN_BIN_ROWS = 20  # a one-vs-rest bin's gap is reported from this many step rows on
_NO_VERDICT = "no verdict label is decided for a {what} log yet"
_MC_KEYS = ("tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "tps_step_mean", "n_runs", "n_censored",
            "n_excluded_censored", "n_no_forecast", "n_q_fallback", "n_steps", "n_missing", "n_clipped")


def _ci_words(r, level: float) -> str:
    """``mean (95% CI lo to hi)`` of a summary row, or the mean alone."""
    mean, lo, hi = float(r["tps_mean"]), float(r["tps_ci_low"]), float(r["tps_ci_high"])
    if not math.isfinite(mean):
        return "not scored"
    ci = f" ({level * 100:g}% CI {lo:.4g} to {hi:.4g})" if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{mean:.4g}{ci}"


def _schedule(spec):
    try:
        return parse_schedule(spec) if isinstance(spec, str) else spec
    except ValueError as exc:
        raise SettingError(f"{setting('schedule')}: {exc}") from None


def _display(board: pd.DataFrame, what: str, level: float, check: dict, check_name: str) -> pd.DataFrame:
    """Text cells of a leaderboard: the score with its interval, runs, steps, missing, the check."""
    rows = []
    for n, r in board.iterrows():
        lo, hi = float(r["tps_ci_low"]), float(r["tps_ci_high"])
        rows.append({"predictor": plain_text(n, 40), what: f"{float(r['tps_mean']):.4g}",
                     f"{level * 100:g}% CI": f"[{lo:.4g}, {hi:.4g}]" if math.isfinite(lo) and math.isfinite(hi) else "n/a",
                     "runs": f"{int(r['n_runs']):,}", "steps": f"{int(r['n_steps']):,}",
                     "missing": f"{int(r['n_missing']):,}", check_name: check[n]})
    return pd.DataFrame(rows)


def _largest_gap(gaps: pd.DataFrame) -> str:
    """The largest one-vs-rest gap over labels, with its label, or why there is none."""
    finite = gaps[gaps["max_gap"].map(lambda v: math.isfinite(float(v)))] if len(gaps) else gaps
    if not len(finite):
        return f"no bin of {MIN_BIN_ROWS} rows"
    lab = finite["max_gap"].astype(float).idxmax()
    return f"{float(finite.loc[lab, 'max_gap']):.3f} ({plain_text(lab, 30)})"


def _pit_words(test: dict) -> str:
    p = test["p_value"]
    return "n/a" if p is None or not math.isfinite(p) else f"p = {p:.2g}: {test['reading']}"


# ----------------------------------------------------------------------------- multi-class
@dataclass(frozen=True, eq=False)
class MulticlassEvaluation(Evaluation):
    """TPS-k of every predictor of a multi-class log, with its one-vs-rest reliability.

    Attributes
    ----------
    log : tpsviz.io.kinds.multiclass.MulticlassLog
    result : tpsviz.outcomes.multiclass.MulticlassResult
    censoring : str
        The censoring mode used.
    tables, gaps : dict
        Per predictor, the one-vs-rest reliability table and its summary per label.
    level : float
    """

    log: object
    result: object
    censoring: str
    tables: dict
    gaps: dict
    level: float = 0.95

    kind = "multiclass"

    @property
    def summary(self) -> pd.DataFrame:
        return self.result.summary

    @property
    def leaderboard(self) -> pd.DataFrame:
        return self.summary.reindex(index=self.order, columns=list(_MC_KEYS))

    def verdict_sentences(self) -> list[str]:
        out = []
        for n in self.summary.index:
            r, g = self.summary.loc[n], self.gaps[n]
            finite = g[g["max_gap"].map(lambda v: math.isfinite(float(v)))] if len(g) else g
            if len(finite):
                lab = finite["max_gap"].astype(float).idxmax()
                cal = (f"largest one-vs-rest gap {float(finite.loc[lab, 'max_gap']):.3f} for label "
                       f"{plain_text(lab, 30)!r} (ECE {float(finite.loc[lab, 'ece']):.3f})")
            else:
                cal = f"no one-vs-rest bin has {MIN_BIN_ROWS} step rows"
            out.append(f"{plain_text(n, 40)}: mean TPS-k {_ci_words(r, self.level)} over {int(r['n_runs']):,} runs; "
                       f"{cal}; {_NO_VERDICT.format(what='multi-class')}")
        return out

    def display_table(self) -> pd.DataFrame:
        """The leaderboard as text cells, best first: TPS-k with its interval, the counts and the
        largest one-vs-rest gap (the notebook view's and the report's table)."""
        return _display(self.leaderboard, "TPS-k", self.level,
                        {n: _largest_gap(self.gaps[n]) for n in self.order}, "largest one-vs-rest gap")

    def headline(self) -> str:
        s = self.result.settings
        return (f"{plain_text(self.log.source)}: {len(self.log.labels)} labels, {self.log.n_runs:,} runs, "
                f"{self.log.n_censored:,} censored · TPS-k, {s['rule']} rule · schedule {s['schedule']} "
                f"({s['schedule_verdict']}) · censoring {plain_text(s['censoring_words'])}")

    def to_json(self, wording: Wording = PYTHON) -> dict:
        log, res = self.log, self.result
        settings = {k: (json_number(v) if isinstance(v, float) else v) for k, v in res.settings.items()}
        settings["labels"] = [plain_text(lab) for lab in log.labels]
        if settings.get("censored_label") is not None:
            settings["censored_label"] = plain_text(settings["censored_label"])
        settings["censoring_words"] = plain_text(settings["censoring_words"])
        settings["reliability"] = ("one-vs-rest, complete runs only, step rows binned by P_t[label]; interval: "
                                   "percentile run bootstrap")
        out = {"file": plain_text(log.source), "labels": [plain_text(lab) for lab in log.labels],
               "n_runs": log.n_runs, "n_censored": log.n_censored, "censoring": self.censoring,
               "settings": settings, "ranking": [plain_text(n) for n in self.order],
               "notes": [plain_text(word(n, wording)) for n in log.notes], "predictors": {}}
        for n in log.predictors:
            row = res.summary.loc[n]
            rec = {k: (int(row[k]) if k.startswith("n_") else json_number(row[k])) for k in _MC_KEYS}
            rec["reliability"] = [_table_row(r) for r in self.tables[n].to_dict("records")]
            rec["ovr"] = {plain_text(lab): {"ece": json_number(g["ece"]), "max_gap": json_number(g["max_gap"]),
                                            "max_gap_bin": None if json_number(g["max_gap_bin"]) is None
                                            else int(g["max_gap_bin"]), "n": int(g["n"])}
                          for lab, g in self.gaps[n].iterrows()}
            out["predictors"][plain_text(n)] = rec
        return out

    def to_html(self, title: str | None = None) -> str:
        sections = [Section("TPS-k per predictor", table=self.display_table(),
                            caption="mean TPS-k per run, best first; higher is better, 0 is perfect")]
        sections += [Section(f"one-vs-rest reliability: {plain_text(n, 40)}", table=self.gaps[n].reset_index())
                     for n in self.order]
        return build_report(title or f"tpsviz report — {plain_text(self.log.source)}", {"log": self.headline()},
                            sections, notes=self.verdict_sentences())


def _table_row(r: dict) -> dict:
    """A row of a one-vs-rest table for JSON: the label as text, counts as int, numbers or null."""
    return {k: (plain_text(v) if k == "label" else int(v) if k in ("bin", "n", "n_runs") else json_number(v))
            for k, v in r.items()}


def evaluate_multiclass(log, s: Settings) -> MulticlassEvaluation:
    """TPS-k of a multi-class log under the settings (``rule``, ``schedule``, ``censoring``,
    ``censored_label``, ``n_boot``, ``seed``, ``level``, ``eps``, ``bins``).

    Parameters
    ----------
    log : tpsviz.io.kinds.multiclass.MulticlassLog
    s : Settings

    Returns
    -------
    MulticlassEvaluation

    Raises
    ------
    SettingError
        For a setting out of range or that does not fit the log.
    """
    if not 1 <= s.bins <= 100:
        raise SettingError(f"{setting('bins')} must be between 1 and 100, got {s.bins}")
    if s.censoring is not None and s.censoring not in CENSORING_MODES:
        raise SettingError(f"{setting('censoring', s.censoring)}: a multi-class log takes {', '.join(CENSORING_MODES)}")
    if s.censored_label is not None and s.censored_label not in log.labels:
        raise SettingError(f"{setting('censored_label')} must be one of the log's labels: "
                           f"{', '.join(plain_text(lab, 40) for lab in log.labels)}")
    seed = DEFAULT_SEED if s.seed is None else s.seed
    censoring = s.censoring
    if censoring is None:
        censoring = "exact" if (log.has_q and bool(log.trajectories["censored"].any())) else "complete"
    res = tps_k(log, rule=s.rule, schedule=_schedule(s.schedule), censoring=censoring,
                censored_label=s.censored_label, n_boot=s.n_boot, level=s.level, seed=seed, eps=s.eps)
    tables = {n: reliability_ovr(log, n, n_bins=s.bins, n_boot=min(s.n_boot, 1000), level=s.level, seed=seed)
              for n in log.predictors}
    gaps = {n: ovr_summary(t, MIN_BIN_ROWS) for n, t in tables.items()}
    return MulticlassEvaluation(log, res, censoring, tables, gaps, s.level)


# ----------------------------------------------------------------------------- continuous
@dataclass(frozen=True, eq=False)
class ContinuousEvaluation(Evaluation):
    """TPS-CRPS of every predictor of a continuous-outcome log, with its PIT histograms.

    Attributes
    ----------
    log : tpsviz.io.kinds.continuous.ContinuousLog
    result : tpsviz.outcomes.continuous.ContinuousResult
    pits : dict
        Per predictor: (PIT histogram of all rows, of each run's last scored row, the uniformity test).
    bins : int
    seed : int
    """

    log: object
    result: object
    pits: dict
    bins: int = 10
    seed: int = DEFAULT_SEED

    kind = "continuous"

    @property
    def summary(self) -> pd.DataFrame:
        return self.result.summary

    @property
    def leaderboard(self) -> pd.DataFrame:
        cols = ["form", "tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "crps_step_mean", "n_runs",
                "n_excluded_censored", "n_steps", "n_missing", "n_no_forecast"]
        return self.summary.reindex(index=self.order, columns=cols)

    def verdict_sentences(self) -> list[str]:
        out, level = [], float(self.result.settings["level"])
        for n in self.summary.index:
            r, test = self.summary.loc[n], self.pits[n][2]
            pit = f"PIT uniformity on the last steps of {test['n_runs']:,} runs: {_pit_words(test)}"
            out.append(f"{plain_text(n, 40)}: mean TPS-CRPS {_ci_words(r, level)} over {int(r['n_runs']):,} runs; "
                       f"{pit}; {_NO_VERDICT.format(what='continuous-outcome')}")
        return out

    def display_table(self) -> pd.DataFrame:
        """The leaderboard as text cells, best first: TPS-CRPS with its interval, the counts and the PIT
        test (the notebook view's and the report's table)."""
        pit = {n: _pit_words(self.pits[n][2]) for n in self.order}
        return _display(self.leaderboard, "TPS-CRPS", float(self.result.settings["level"]), pit, "PIT (last steps)")

    def headline(self) -> str:
        st = self.result.settings
        return (f"{plain_text(self.log.source)}: {self.log.n_runs:,} runs, {len(self.log.steps):,} step rows, "
                f"{self.log.n_censored:,} censored (left out) · TPS-CRPS · schedule {st['schedule']} "
                f"({st['schedule_verdict']})")

    def to_json(self, wording: Wording = PYTHON) -> dict:
        log, result = self.log, self.result
        predictors = {}
        for n in self.order:
            r = result.summary.loc[n]
            table, last, test = self.pits[n]
            predictors[plain_text(n)] = {
                "form": r["form"],
                **{k: json_number(r[k]) for k in ("tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "crps_step_mean")},
                **{k: int(r[k]) for k in ("n_runs", "n_excluded_censored", "n_steps", "n_missing", "n_no_forecast")},
                "levels": log.levels.get(n),
                "pit": {"test": {k: (json_number(v) if isinstance(v, float) else v) for k, v in test.items()},
                        "histogram_all_rows": _histogram(table), "histogram_last_steps": _histogram(last)},
            }
        settings = dict(result.settings)
        settings.update({"file": plain_text(log.source), "n_runs": log.n_runs, "n_censored": log.n_censored,
                         "n_step_rows": len(log.steps), "pit_bins": self.bins})
        return {"settings": settings, "notes": [plain_text(word(n, wording)) for n in result.notes],
                "predictors": predictors}

    def to_html(self, title: str | None = None) -> str:
        sections = [Section("TPS-CRPS per predictor", table=self.display_table(),
                            caption="mean TPS-CRPS per run in the outcome's units, best first; higher is better")]
        sections += [Section(f"PIT histogram (last scored step): {plain_text(n, 40)}", table=self.pits[n][1])
                     for n in self.order]
        return build_report(title or f"tpsviz report — {plain_text(self.log.source)}", {"log": self.headline()},
                            sections, notes=self.verdict_sentences())


def _histogram(table) -> list[dict]:
    return [{"bin_low": json_number(r.bin_low), "bin_high": json_number(r.bin_high), "count": int(r.count),
             "expected": json_number(r.expected)} for r in table.itertuples()]


def evaluate_continuous(log, s: Settings) -> ContinuousEvaluation:
    """TPS-CRPS of a continuous-outcome log under the settings (``schedule``, ``n_boot``, ``seed``,
    ``level``, ``bins``), with the PIT histograms of every predictor.

    Parameters
    ----------
    log : tpsviz.io.kinds.continuous.ContinuousLog
    s : Settings

    Returns
    -------
    ContinuousEvaluation

    Raises
    ------
    SettingError
        For a setting out of range.
    """
    if not 2 <= s.bins <= 100:
        raise SettingError(f"{setting('bins')} must be between 2 and 100, got {s.bins}")
    seed = DEFAULT_SEED if s.seed is None else s.seed
    result = tps_crps(log, _schedule(s.schedule), n_boot=s.n_boot, level=s.level, seed=seed)
    pits = {}
    for pred in log.predictors:
        table, test = pit_histogram(log, pred, s.bins, seed, which="all")
        last, _ = pit_histogram(log, pred, s.bins, seed, which="last")
        pits[pred] = (table, last, test)
    return ContinuousEvaluation(log, result, pits, s.bins, seed)
