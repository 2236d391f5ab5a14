"""The :class:`~tpsviz.evaluation.base.Evaluation` of a binary dataset scored out of core
(:class:`DatasetEvaluation`): what ``tpsviz.evaluate(..., engine="duckdb")`` and ``score --engine
duckdb|dask`` return (docs/architecture.md, "Engines").

TPS, the reference, skill and the usual metrics come from per-trajectory sums
(:func:`tpsviz.engines.runsums.score_from_sums`); the verdicts, which need the step rows, are decided
on a seeded random sample of runs, and the JSON says so. Every SE is by run and every interval a
percentile bootstrap (the engines' kind). What needs the step rows in memory (recalibration, rollouts,
references, harness and trace reading options, clusters by a column) is refused by name.
"""

from __future__ import annotations

import dataclasses
import html
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tpsviz.core.clusters import by_run
from tpsviz.core.errors import SettingError
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.tps import settings_words
from tpsviz.core.wording import PYTHON, Wording, setting, word
from tpsviz.diagnostics.verdict import verdicts
from tpsviz.engines import get_engine
from tpsviz.evaluation.base import Evaluation
from tpsviz.evaluation.options import ReadSettings, Settings
from tpsviz.evaluation.record import json_value, reading_json, verdict_numbers
from tpsviz.core.schema import plain_text
from tpsviz.evaluation.reading import read_options
from tpsviz.evaluation.settings import score_settings
from tpsviz.io.dataset import Dataset
from tpsviz.io.loading import apply_mapping
from tpsviz.io.tables.longform import from_frame
from tpsviz.report.html import Section, build_report

__all__ = ["DatasetEvaluation", "evaluate_dataset", "refuse_in_memory_settings", "BY_RUN"]

#: why every SE out of core is by run (the in-memory path clusters by task, docs/theory.md §6.1)
BY_RUN = f"out of core: every SE and bootstrap is by run ({setting('cluster_by')} applies in memory)"
_METRICS = ("auroc", "auprc", "auroc_final", "tece_pooled", "tece_final", "auroc_bound", "auprc_bound")


@dataclass(frozen=True, eq=False)
class DatasetEvaluation(Evaluation):
    """Every report of ``score`` on a binary dataset scored out of core.

    Attributes
    ----------
    dataset : tpsviz.io.dataset.Dataset
    result : tpsviz.engines.runsums.DatasetScore
        TPS, skill, metrics and reliability from the per-trajectory sums.
    engine_reason : str
        Why the engine ran.
    engine_words : str
        The engine in words (its files and rows).
    ranks : str
        How AUROC and AUPRC were counted.
    verdicts : dict or None
        The verdicts on the sample (None: not decided; :attr:`sample_words` says why).
    sample_words : str
    """

    dataset: Dataset
    result: object
    engine_reason: str
    engine_words: str
    ranks: str
    verdicts: dict | None
    sample_words: str

    kind = "binary"

    @property
    def summary(self) -> pd.DataFrame:
        return self.result.summary

    @property
    def settings(self):
        """The :class:`~tpsviz.core.tps.ScoreSettings` scored under (SE by run, percentile CIs)."""
        return self.result.settings

    @property
    def leaderboard(self) -> pd.DataFrame:
        out = self.summary.join(self.result.skill.drop(columns=["tps_mean", "n_trajectories"], errors="ignore"))
        out = out.join(self.result.metrics[[k for k in _METRICS if k in self.result.metrics]])
        out["verdict"] = pd.Series({n: v.label for n, v in (self.verdicts or {}).items()}, dtype=object)
        return out.reindex(index=self.order)

    def verdict_sentences(self) -> list[str]:
        if not self.verdicts:
            return [f"{plain_text(n, 40)}: verdict {word(self.sample_words)}" for n in self.summary.index]
        return [self.verdicts[n].text if n in self.verdicts else f"{plain_text(n, 40)}: no verdict on the sample"
                for n in self.summary.index]

    def headline(self) -> str:
        sums, w = self.result.sums, settings_words(self.settings)
        return (f"{plain_text(self.dataset.label)}: {sums.n_trajectories:,} runs, {sums.n_steps:,} steps, "
                f"{sums.n_censored:,} censored · {self.engine_words} · score {w['score']} · schedule "
                f"{w['schedule']} ({w['schedule_status']}) · censoring {w['censoring']}")

    def to_json(self, wording: Wording = PYTHON) -> dict:
        res, ds = self.result, self.dataset
        sums, sk = res.sums, res.skill
        return {
            "settings": {**res.settings.describe(), "file": ds.label, "engine": sums.engine,
                         "engine_reason": word(self.engine_reason, wording), "engine_words": self.engine_words,
                         "se": by_run(sums.n_trajectories, word(BY_RUN, wording)).to_json(),
                         "dataset": {"files": ds.n_files, "bytes": ds.n_bytes, "skipped": ds.skipped},
                         "n_trajectories": sums.n_trajectories, "n_steps": sums.n_steps,
                         "n_censored": sums.n_censored,
                         "notes": [plain_text(word(n, wording)) for n in sums.notes],
                         "reading": reading_json({"format": ds.fmt}),
                         "units": "TPS per trajectory in the score's units (nats for the log score); "
                                  "higher is better, 0 is perfect",
                         "reference_rate": json_value(float(sk["ref_rate"].iloc[0])) if len(sk) else None,
                         "reference_rule": str(sk["ref_rule"].iloc[0]) if len(sk) else None,
                         "metrics": "auroc/auprc/tece_pooled pooled over (trajectory, step) pairs of complete "
                                    "runs; *_final use each run's final forecast; T-ECE with 10 equal-width "
                                    "bins; " + self.ranks,
                         "verdicts": word(self.sample_words, wording), "intervals": res.ci_words},
            "predictors": {name: self._predictor_json(name, r, wording) for name, r in res.summary.iterrows()},
        }

    def _predictor_json(self, name: str, r, wording: Wording) -> dict:
        sk, m, v = self.result.skill, self.result.metrics, (self.verdicts or {}).get(name)
        exact = m.loc[name, "ranks_exact"]
        return {
            "tps_mean": json_value(r.tps_mean), "tps_se": json_value(r.tps_se),
            "tps_ci_low": json_value(r.tps_ci_low), "tps_ci_high": json_value(r.tps_ci_high),
            "tps_step_mean": json_value(r.tps_step_mean), "n_trajectories": int(r.n_trajectories),
            "n_censored": int(r.n_censored), "n_clipped": int(r.n_clipped), "n_steps": int(r.n_steps),
            "n_missing": int(r.n_missing), "n_qz_fallback": int(r.n_qz_fallback),
            "tps_ref": json_value(sk.loc[name, "tps_ref"]), "skill": json_value(sk.loc[name, "skill"]),
            "skill_ci_low": json_value(sk.loc[name, "skill_ci_low"]),
            "skill_ci_high": json_value(sk.loc[name, "skill_ci_high"]),
            **{k: json_value(m.loc[name, k]) for k in _METRICS},
            "ranks_exact": bool(exact) if exact == exact else None,
            "reliability": ([{k: json_value(x) for k, x in b.items()}
                             for b in self.result.reliability[name].to_dict("records")]
                            if name in self.result.reliability else None),
            "verdict": ({"label": v.label, "key": v.key, "rules_label": v.rules_label or v.label,
                         "text": plain_text(v.text), "numbers": verdict_numbers(v),
                         "sample": word(self.sample_words, wording)}
                        if v is not None else None),
        }

    def to_html(self, title: str | None = None) -> str:
        board = self.leaderboard.reset_index()
        sections = [Section("Leaderboard (out of core)", table=board,
                            caption=f"TPS per run, best first; CIs: {self.result.ci_words}")]
        return build_report(title or f"tpsviz report — {plain_text(self.dataset.label)}",
                            {"log": self.headline()}, sections,
                            notes=[f"verdicts {word(self.sample_words)}"] + self.verdict_sentences())

    def _repr_html_(self) -> str:
        return Evaluation._repr_html_(self) + f"<p>{html.escape('verdicts ' + word(self.sample_words))}</p>"


def refuse_in_memory_settings(s: Settings, r: ReadSettings) -> None:
    """Refuse, by name, the settings the out-of-core engines do not apply (never silently ignored).

    Parameters
    ----------
    s : Settings
    r : ReadSettings

    Raises
    ------
    SettingError
    """
    bad = _unsupported(s, r)
    if bad:
        one = len(bad) == 1
        raise SettingError(f"{', '.join(bad)} {'is' if one else 'are'} not available with the out-of-core engine "
                           f"({'it needs' if one else 'they need'} the step rows in memory); drop "
                           f"{'it' if one else 'them'} or use {setting('in_memory')} on a log within TPSVIZ_MAX_ROWS")


def _unsupported(s: Settings, r: ReadSettings) -> list[str]:
    """The settings the out-of-core engines do not apply."""
    given = [("recalibrate", s.recalibrate), ("rollouts", s.rollouts is not None), ("q_z", s.q_z is not None),
             ("references", s.references), ("forecasts", r.forecasts is not None), ("conf", r.conf),
             ("treat", r.treat), ("scorer", r.scorer), ("success_threshold", r.success_threshold is not None),
             ("run_by", r.run_by), ("step_spans", r.step_spans), ("outcome", r.outcome),
             ("outcomes", r.outcomes is not None), ("censor_when", r.censor_when)]
    bad = [setting(name) for name, on in given if on]
    if s.cluster_by not in ("auto", "run"):
        bad.append(setting("cluster_by", s.cluster_by))
    return bad


def _ranks_words(metrics) -> str:
    if metrics.empty or bool(metrics["ranks_exact"].dropna().all()):  # (NaN: no forecast, nothing to bound)
        return "AUROC/AUPRC from exact counts on the distinct forecast values"
    au = float(np.nanmax(metrics["auroc_bound"].to_numpy(float)))
    ap = float(np.nanmax(metrics["auprc_bound"].to_numpy(float)))
    from tpsviz.engines.pooled import GRID  # (the engines load duckdb: imported when an engine is asked for)

    return (f"AUROC/AUPRC from counts on a grid of {GRID:,} equal cells of [0, 1] (too many distinct "
            f"forecasts to count exactly): error at most {au:.1e} (AUROC) and {ap:.1e} (AUPRC)")


def _sample_verdicts(engine, ds: Dataset, sums, settings, n_sample: int, mapping, percent):
    """Verdicts on a seeded random sample of the runs (they need the step rows), and the words that say
    so; (None, reason) when the sample is off."""
    n_runs = sums.n_trajectories
    k = min(int(n_sample), n_runs)
    if k <= 0:
        return None, f"not computed ({setting('verdict_sample', 0)})"
    seed = settings.seed if settings.seed is not None else DEFAULT_SEED
    # the dashboard's draw (io/sample.py): the same seed gives the same runs in both
    frame, _ = engine.sample(ds, k, seed, mapping=mapping)
    data = from_frame(apply_mapping(frame, mapping, ds.label), source=ds.label, percent=percent)
    try:
        out = verdicts(data, settings)
    except ValueError as exc:
        return None, f"not computed on the sample: {word(exc)}"
    if k == n_runs:
        return out, f"on all {n_runs:,} runs"
    return out, (f"on a random sample of {k:,} of {n_runs:,} runs (seed {seed}; {setting('verdict_sample')} sets "
                 "the size): their numbers describe the sample")


def evaluate_dataset(ds: Dataset, s: Settings, r: ReadSettings, engine: str = "duckdb", why: str = "",
                     scheduler: str | None = None) -> DatasetEvaluation:
    """Score a binary dataset out of core on ``engine`` (``duckdb`` or ``dask``).

    Parameters
    ----------
    ds : tpsviz.io.dataset.Dataset
    s : Settings
    r : ReadSettings
        Only ``mapping`` and ``percent`` apply out of core.
    engine : {"duckdb", "dask"}
    why : str
        Why the engine runs (said in the JSON).
    scheduler : str, optional
        The Dask scheduler's address (default: a local cluster).

    Returns
    -------
    DatasetEvaluation

    Raises
    ------
    SettingError
        For a setting the out-of-core engines do not apply, naming it.
    """
    refuse_in_memory_settings(s, r)
    # (the engines load duckdb: imported when an engine is asked for)
    from tpsviz.engines.runsums import score_from_sums

    options = read_options(mapping=r.mapping, percent=r.percent)
    mapping, percent = list(options.mapping), options.percent
    with ExitStack() as stack:
        eng = stack.enter_context(get_engine(engine, scheduler=scheduler))
        probe = score_settings(False, s.alpha, s.beta, s.score, s.schedule, s.censoring, s.eps, s.n_boot, s.seed,
                               s.level)
        sums = eng.runsums(ds, probe, mapping=mapping, percent=percent)
        has_qz = bool((sums.runs["censored"] & sums.runs["q_z"].notna()).any())
        # every SE by run (BY_RUN), every CI a percentile bootstrap: the engines' kind, said in their words
        settings = dataclasses.replace(
            score_settings(has_qz, s.alpha, s.beta, s.score, s.schedule, s.censoring, s.eps, s.n_boot, s.seed,
                           s.level), cluster_by="run", interval="percentile")
        res = score_from_sums(sums, settings, intervals=eng.intervals)
        verdict, sample_words = _sample_verdicts(eng, ds, sums, settings, s.verdict_sample, mapping, percent)
        words = eng.describe(why)
    return DatasetEvaluation(ds, res, why, words, _ranks_words(res.metrics), verdict, sample_words)
