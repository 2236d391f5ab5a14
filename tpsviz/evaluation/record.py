"""The :class:`BinaryEvaluation`: every report of ``python -m tpsviz score`` on a binary log, with its JSON
(``to_json()``, the object ``score --json`` prints), its offline HTML report (``to_html()``) and a
compact notebook view (``_repr_html_``). Texts in the JSON are the command line's, word for word,
except the names of settings: ``to_json()`` names them as Python does (``n_boot``), ``to_json(CLI)``
as the command line does (``--n-boot``; :mod:`tpsviz.core.wording`).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd

from tpsviz.core.clusters import Clusters, run_clusters
from tpsviz.core.data import TrajectoryData
from tpsviz.core.tps import ScoreSettings, TPSResult, settings_words
from tpsviz.core.wording import PYTHON, Wording, setting, word
from tpsviz.diagnostics.caveats import Caveats
from tpsviz.diagnostics.compare import compare, z_matrix
from tpsviz.diagnostics.leaderboard import metric_table
from tpsviz.diagnostics.verdict import RULES, Verdict
from tpsviz.evaluation.base import Evaluation
from tpsviz.evaluation.parts import LazyParts
from tpsviz.evaluation.report import report_sections, report_settings
from tpsviz.forecasts.references import how_to_add_forecast, is_reference, real_predictors
from tpsviz.forecasts.versus import best_reference, versus_best_reference
from tpsviz.core.schema import plain_text
from tpsviz.evaluation.engine_choice import memory_reason
from tpsviz.evaluation.tables import report_table
from tpsviz.report.export import PER_TRAJECTORY_COLUMNS
from tpsviz.report.html import build_report, html_table

__all__ = ["BinaryEvaluation", "json_value", "verdict_numbers", "conversion_numbers", "reading_json", "LEADERBOARD_COLUMNS"]


def json_value(v):
    """A number for JSON: a finite float, ``"inf"``/``"-inf"``, or None for NaN and None.

    Parameters
    ----------
    v : float or None

    Returns
    -------
    float, str or None
    """
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else (None if math.isnan(v) else ("-inf" if v < 0 else "inf"))


def verdict_numbers(v: Verdict) -> dict:
    """The statistics behind a verdict, for JSON (a missing or infinite value is None).

    Parameters
    ----------
    v : tpsviz.diagnostics.verdict.Verdict

    Returns
    -------
    dict
    """
    d = v.to_dict()
    # auroc: on the rows of the discrimination test; auroc_complete: on the n_observed complete runs'
    # rows, the leaderboard's (docs/theory.md §8)
    return {k: d[k] for k in ("n_runs", "n_observed", "n_success", "n_failure", "mean_forecast",
                              "success_rate", "run_rate", "bias", "bias_se", "slope",
                              "slope_se", "mcb", "mcb_p", "dsc", "dsc_p", "auroc", "auroc_complete",
                              "skill", "skill_se", "skill_ci_low", "skill_ci_high", "ref_rate", "rule")}


def conversion_numbers(v: Verdict) -> dict | None:
    """What a conversion's verdict rests on, for JSON: the source converted, how (in words), and the
    AUROC of the conversion and of its source with their CIs (None for a predictor that is no
    conversion ``<src>@<method>``).

    Parameters
    ----------
    v : tpsviz.diagnostics.verdict.Verdict

    Returns
    -------
    dict or None
    """
    if not v.source:
        return None
    keys = ("conversion_auroc", "conversion_auroc_ci_low", "conversion_auroc_ci_high", "source_auroc",
            "source_auroc_ci_low", "source_auroc_ci_high", "conversion_delta_z")
    return {"source": v.source, "how": plain_text(v.conversion)} | {k: json_value(getattr(v, k)) for k in keys}


def reading_json(reading: dict) -> dict:
    """How the log was read (``TrajectoryData.reading``) as plain values for JSON.

    Parameters
    ----------
    reading : dict

    Returns
    -------
    dict
        ``reading`` without its ``notes`` and ``dropped_ids``.
    """
    return {k: v for k, v in reading.items() if k not in ("notes", "dropped_ids")}


# ----------------------------------------------------------------------------- the evaluation
_UNITS = "TPS per trajectory in the score's units (nats for the log score); higher is better, 0 is perfect"
_METRICS = ("auroc/auprc/tece_pooled pooled over (trajectory, step) pairs of complete runs; *_final use each "
            "run's final forecast; T-ECE with 10 equal-width bins; skill = 1 - TPS/TPS_ref against the "
            "constant forecast (base rate)")
_MOVEMENT = ("mean over runs of sum (F_t+1 - F_t)^2 minus the uncertainty resolved, F_1(1-F_1) - F_end(1-F_end) "
             "(a finished run ends at Y); 0 for a truthful forecast, > 0 over-reacts, < 0 under-reacts; "
             "z = value / se across runs, the se clustered as settings.se says (docs/theory.md, Rational updating)")
_METRIC_KEYS = ("auroc", "auprc", "auroc_final", "tece_pooled", "tece_final")
#: the columns of :attr:`Evaluation.leaderboard`
LEADERBOARD_COLUMNS = ("tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "tps_step_mean", "tps_ref", "skill",
                       "skill_se", "skill_ci_low", "skill_ci_high") + _METRIC_KEYS + (
                      "verdict", "excess_movement", "n_trajectories", "n_censored", "n_steps", "n_missing",
                      "n_clipped", "n_qz_fallback", "reference")
#: what the JSON and the text say of the references (docs/forecasts.md §1)
REFERENCE_WORDS = ("reference forecasters computed from the other runs' outcomes (docs/forecasts.md "
                   "section 1), not the agent's forecasts")


@dataclass(frozen=True, eq=False, repr=False)
class BinaryEvaluation(Evaluation):
    """Every report of ``python -m tpsviz score`` on a binary log (success/failure), as Python objects
    (the :class:`~tpsviz.evaluation.base.Evaluation` of a binary log).

    Attributes
    ----------
    data : TrajectoryData
        The log scored (with its recalibrated predictors).
    settings : ScoreSettings
    result : TPSResult
        TPS of every predictor (:attr:`summary`, :attr:`per_trajectory`, per-step contributions).
    metrics : DataFrame
        The usual metrics per predictor (:func:`tpsviz.diagnostics.leaderboard.metric_table`:
        AUROC, AUPRC, T-ECE, pooled and final; point estimates).
    skill : DataFrame
        Skill against the base-rate reference per predictor (``tps_ref``, ``skill``, its SE and
        CI, ``ref_rate``, ``ref_rule``).
    verdicts : dict of str to tpsviz.diagnostics.verdict.Verdict
        The verdict of every predictor (docs/theory.md §8).
    excess_movement : DataFrame
        Rational updating per predictor: ``value``, ``se``, ``z``, ``n_runs``.
    warnings : tpsviz.diagnostics.caveats.Caveats
        Warnings about the log (``log``) and per predictor (``predictors``).
    notes : tuple of str
        What to know about the reading, the recalibration and the q_Z source.
    q_z : Series, ndarray or None
        The q_Z of censored runs used in exact mode (None: the log's ``q_z`` column).
    engine_reason : str
        Why the log was scored in memory (``settings.engine_reason`` of the JSON).
    versus : dict
        Each real predictor against the best reference (``ref:*``), when the log has references:
        ``{name: {"reference", "delta", "se", "z", "n_runs", "outcome", "words"}}``
        (:func:`tpsviz.forecasts.versus.versus_best_reference`); the verdict's text ends with its words.
    parts : tpsviz.evaluation.parts.LazyParts
        Where the attributes above come from: each computed when first read.
    metrics_given : DataFrame or None
        The usual metrics given by :meth:`with_metrics` (None: the points of :attr:`parts`).

    Every attribute from ``result`` to ``versus`` is computed when it is first read.
    """

    data: TrajectoryData
    settings: ScoreSettings
    parts: LazyParts
    notes: tuple = ()
    q_z: object = None
    engine_reason: str = "a TrajectoryData given in memory"
    metrics_given: pd.DataFrame | None = None

    kind = "binary"

    @classmethod
    def compute(cls, data: TrajectoryData, settings: ScoreSettings, q_z=None, notes=(),
                engine_reason: str | None = None, cache=None) -> "BinaryEvaluation":
        """The Evaluation of ``data`` under ``settings`` (what ``score`` computes). Each part is
        computed when first read (:class:`~tpsviz.evaluation.parts.LazyParts`), except TPS without
        its bootstrap (:attr:`points`), scored here so that a setting the log cannot take raises
        from this call: a caller that reads only :attr:`points` (``compare``, ``monitor``) never runs
        the verdicts' tests; :meth:`complete` computes every part at once.

        Parameters
        ----------
        data : TrajectoryData
        settings : ScoreSettings
        q_z : Series or ndarray, optional
            q_Z of censored runs in exact mode (:func:`qz_source`).
        notes : sequence of str
            Notes of the reading, after ``data.notes``.
        engine_reason : str, optional
            Default :func:`memory_reason` of ``data``.
        cache : tpsviz.evaluation.parts.PartsMemo, optional
            Keeps every part under the settings it depends on
            (:data:`tpsviz.evaluation.parts.DEPENDS`): a later call with one setting moved
            recomputes only the parts that depend on it, and returns the same numbers as a call
            without it.

        Returns
        -------
        Evaluation
        """
        ev = cls(data, settings, LazyParts(data, settings, q_z, cache), tuple(data.notes) + tuple(notes), q_z,
                 engine_reason or memory_reason(data))
        ev.parts["points"]  # scored now: a setting the log cannot take is refused by the call, not by a later read
        return ev

    def complete(self) -> "BinaryEvaluation":
        """Compute every part now (e.g. before the Evaluation is kept in a cache sized by its bytes).

        Returns
        -------
        BinaryEvaluation
            ``self``.
        """
        for name in LazyParts.NAMES:
            self.parts[name]
        return self

    @property
    def result(self) -> TPSResult:
        """TPS of every predictor (:attr:`summary`, :attr:`per_trajectory`, per-step contributions)."""
        return self.parts["result"]

    @property
    def points(self) -> TPSResult:
        """TPS of every predictor without the bootstrap's intervals (its SEs analytic): all that a
        comparison or a monitor of per-run TPS reads, at a fraction of :attr:`result`'s cost."""
        return self.parts["points"]

    @property
    def metrics(self) -> pd.DataFrame:
        """The usual metrics per predictor (:func:`tpsviz.diagnostics.leaderboard.metric_table`)."""
        return self.parts["metrics"] if self.metrics_given is None else self.metrics_given

    @property
    def skill(self) -> pd.DataFrame:
        """Skill against the base-rate reference per predictor."""
        return self.parts["skill"]

    @property
    def excess_movement(self) -> pd.DataFrame:
        """Rational updating per predictor: ``value``, ``se``, ``z``, ``n_runs``."""
        return self.parts["excess_movement"]

    @property
    def warnings(self) -> Caveats:
        """Warnings about the log (``log``) and per predictor (``predictors``)."""
        return self.parts["warnings"]

    @property
    def versus(self) -> dict:
        """Each real predictor against the best reference (``ref:*``), when the log has references."""
        return self.parts["versus"]

    @cached_property
    def verdicts(self) -> dict:
        """The verdict of every predictor (docs/theory.md §8); a real predictor's text ends with its
        comparison to the best reference (:attr:`versus`)."""
        versus = self.versus
        return {n: replace(v, text=f"{v.text}; {versus[n]['words']}") if n in versus else v
                for n, v in self.parts["verdicts"].items()}

    def with_metrics(self, metrics: pd.DataFrame) -> "BinaryEvaluation":
        """The same Evaluation with the usual metrics replaced, e.g. by :meth:`metric_intervals`
        (the dashboard's every-column table; :meth:`compute` gives point estimates).

        Parameters
        ----------
        metrics : DataFrame
            One row for every predictor of :attr:`summary`.

        Returns
        -------
        BinaryEvaluation

        Raises
        ------
        ValueError
            When ``metrics`` lacks a predictor.
        """
        lacking = [n for n in self.summary.index if n not in metrics.index]
        if lacking:
            raise ValueError(f"metrics has no row for {', '.join(map(repr, lacking[:5]))}")
        return replace(self, metrics_given=metrics)

    # ---------------------------------------------------------------- comparisons (compare, the dashboard)
    def compare(self, baseline: str, predictors=None, metrics=("auroc", "tece"), n_boot: int | None = None) -> pd.DataFrame:
        """Every predictor against ``baseline`` on the same runs: Δ, SE and Δ/SE of TPS (from
        :attr:`points`, not scored again) and of the rank/binned ``metrics`` by paired bootstrap
        (:func:`tpsviz.diagnostics.compare.compare`; what ``tpsviz compare --baseline`` prints).

        Parameters
        ----------
        baseline : str
            One of the Evaluation's predictors.
        predictors : list of str, optional
            Default: every other predictor.
        metrics : sequence of {"auroc", "auprc", "tece"}
        n_boot : int, optional
            Replicates of the paired bootstraps (default ``settings.n_boot``; 0: analytic TPS SE alone).

        Returns
        -------
        DataFrame
            Index predictor; ``tps_delta, tps_se, tps_z, tps_ci_low, tps_ci_high, n_runs`` and
            ``m_delta, m_se, m_z, …`` per metric.
        """
        return compare(self.data, self.settings, baseline=baseline, predictors=predictors, n_boot=n_boot,
                       q_z=self.q_z, metrics=tuple(metrics), result=self.points)

    def z_matrix(self, predictors=None, metric: str = "tps", n_boot: int | None = None) -> pd.DataFrame:
        """Δ/SE of every ordered pair of predictors (entry [a, b] is for a − b;
        :func:`tpsviz.diagnostics.compare.z_matrix`, TPS from :attr:`points`).

        Parameters
        ----------
        predictors : list of str, optional
        metric : {"tps", "auroc", "auprc", "tece"}
        n_boot : int, optional

        Returns
        -------
        DataFrame
        """
        return z_matrix(self.data, self.settings, predictors=predictors, metric=metric, n_boot=n_boot,
                        q_z=self.q_z, result=self.points)

    def metric_intervals(self, n_boot: int, predictors=None) -> pd.DataFrame:
        """The usual metrics with bootstrap CIs by trajectory (:attr:`metrics` holds their points):
        :func:`tpsviz.diagnostics.leaderboard.metric_table` with ``n_boot`` replicates.

        Parameters
        ----------
        n_boot : int
        predictors : list of str, optional
            Default: every predictor.

        Returns
        -------
        DataFrame
        """
        names = list(self.summary.index if predictors is None else predictors)
        return metric_table(self.data, self.settings, names, n_bins=10, n_boot=int(n_boot))

    def __repr__(self) -> str:
        d = self.data
        return (f"<BinaryEvaluation of {plain_text(d.source, 60)!r}: {d.n_trajectories} runs, "
                f"{len(self.summary)} predictors, best first {self.order[:3]}{'…' if len(self.order) > 3 else ''}>")

    # ---------------------------------------------------------------- the numbers
    @property
    def summary(self) -> pd.DataFrame:
        """TPS per predictor (``TPSResult.summary``), in the log's order of predictors."""
        return self.result.summary

    @property
    def per_trajectory(self) -> pd.DataFrame:
        """TPS per (run, predictor) (``TPSResult.per_trajectory``)."""
        return self.result.per_trajectory

    @property
    def clusters(self) -> Clusters:
        """The unit of every SE and interval (by run, or by task: docs/theory.md §6.1)."""
        return self.result.clusters or run_clusters(self.data, self.settings.cluster_by)

    @property
    def reference_rate(self) -> float | None:
        """The constant forecast skill is measured against (None without a predictor)."""
        return float(self.skill["ref_rate"].iloc[0]) if len(self.skill) else None

    @property
    def references(self) -> list:
        """The reference forecasters scored (``ref:*``), in the log's order."""
        return [n for n in self.summary.index if is_reference(n)]

    @property
    def has_forecasts(self) -> bool:
        """Whether the log has a predictor of its own (not only references)."""
        return bool(real_predictors(self.summary.index))

    @property
    def reference_rule(self) -> str | None:
        """How :attr:`reference_rate` was chosen, in words."""
        return str(self.skill["ref_rule"].iloc[0]) if len(self.skill) else None

    @property
    def reference_mean(self) -> float:
        """The reference's mean TPS over the runs of the predictor scored on the most runs (all
        runs, usually): the line the leaderboard figure draws (NaN without a predictor)."""
        if not len(self.skill):
            return np.nan
        return float(self.skill.loc[self.skill["n_trajectories"].idxmax(), "tps_ref"])

    @property
    def leaderboard(self) -> pd.DataFrame:
        """One row per predictor, best first (:attr:`order`), columns :data:`LEADERBOARD_COLUMNS`:
        the TPS summary, the reference's TPS and skill, the usual metrics, the verdict's label and
        the excess movement, then the counts (every column: :attr:`summary`, :attr:`skill`,
        :attr:`metrics`)."""
        out = self.summary.join(self.skill.drop(columns=["tps_mean", "n_trajectories"], errors="ignore"))
        out = out.join(self.metrics[[k for k in _METRIC_KEYS if k in self.metrics]])
        out["verdict"] = pd.Series({n: v.label for n, v in self.verdicts.items()}, dtype=object)
        out["excess_movement"] = self.excess_movement["value"]
        out["reference"] = [is_reference(n) for n in out.index]
        return out.reindex(index=self.order, columns=list(LEADERBOARD_COLUMNS))

    def verdict_sentences(self) -> list[str]:
        """The verdict of every predictor in one plain sentence each, in the log's order."""
        return [self.verdicts[name].text for name in self.summary.index]

    def why_null(self, name: str, wording: Wording = PYTHON) -> dict:
        """Why a value of predictor ``name`` is not a finite number: field → reason.

        Parameters
        ----------
        name : str
        wording : tpsviz.core.wording.Wording
            How a reason names a setting (default: as :func:`tpsviz.evaluate` does).

        Returns
        -------
        dict
            E.g. ``{"auroc": "AUROC needs complete runs with both outcomes …"}``; empty when
            every value is a number.
        """
        r, k, m = self.summary.loc[name], self.skill.loc[name], self.metrics.loc[name]
        out = {}
        n, mean = int(r.n_trajectories), float(r.tps_mean)
        if n == 0:
            out["tps"] = ("no run was scored (the predictor has no forecast on the runs in scope)"
                          if int(r.n_no_forecast) else "no run is in scope")
        elif math.isinf(mean):
            out["tps"] = ("-inf: a forecast of exactly 0 or 1 was wrong under an unbounded score "
                          f"with eps = 0; raise {setting('eps')} or use a bounded score ({setting('alpha', 1)} "
                          f"{setting('beta', 1)})")
        elif n < 2:
            out["tps_se"] = "the SE and CI need at least 2 runs; only 1 was scored"
        elif self.settings.n_boot == 0:
            out["tps_ci"] = f"no CI: the bootstrap is off ({setting('n_boot', 0)}); mean ± 1.96 SE is an alternative"
        elif not (math.isfinite(float(r.tps_ci_low)) and math.isfinite(float(r.tps_ci_high))):
            out["tps_ci"] = "no CI could be formed from the bootstrap replicates"
        if n and not math.isfinite(float(k.skill)):
            out["skill"] = (str(k.get("skill_note", "")) or
                            "skill is undefined when TPS or the constant forecast's TPS is not finite")
        if not math.isfinite(float(m.get("auroc", math.nan))):
            out["auroc"] = ("AUROC needs complete runs with both outcomes (a success and a failure) "
                            "and a forecast")
        return {k: word(v, wording) for k, v in out.items()}

    def per_trajectory_table(self) -> pd.DataFrame:
        """Each run's TPS per predictor with its outcome (``score --per-trajectory``): columns
        ``trajectory_id, predictor, tps, censored, outcome`` (NaN outcome when censored)."""
        pt = self.per_trajectory
        y = self.data.trajectories["outcome"].to_numpy(dtype=float)[pt["traj"].to_numpy()]
        return pt.assign(outcome=y)[PER_TRAJECTORY_COLUMNS]

    def censoring_words(self) -> str:
        """The censoring mode in words, with the q_Z source used in exact mode."""
        if self.settings.censoring == "exact" and isinstance(self.q_z, pd.Series):
            return "exact (q_Z = Monte-Carlo mean of the rollouts)"
        if self.settings.censoring == "exact" and self.q_z is not None and len(self.q_z):
            return f"exact (q_Z = {float(np.asarray(self.q_z)[0]):g} for every censored run)"
        return settings_words(self.settings)["censoring"]

    # ---------------------------------------------------------------- JSON
    def to_json(self, wording: Wording = PYTHON) -> dict:
        """The object ``python -m tpsviz score LOG --json`` prints: plain values, ``"inf"``/``"-inf"``
        for an infinite score, None where a value is missing (``why_null`` says why).

        Parameters
        ----------
        wording : tpsviz.core.wording.Wording
            How a text names a setting (default: as :func:`tpsviz.evaluate` does; the command line
            passes its own).

        Returns
        -------
        dict
        """
        data = self.data
        settings = {
            **self.settings.describe(), "file": data.source, "engine": "memory",
            "engine_reason": word(self.engine_reason, wording), "n_trajectories": data.n_trajectories,
            "n_steps": data.n_steps, "n_censored": data.n_censored, "notes": [word(n, wording) for n in self.notes],
            "reading": reading_json(data.reading), "units": _UNITS, "se": self.clusters.to_json(),
            "reference_rate": json_value(self.reference_rate), "reference_rule": self.reference_rule,
            "metrics": _METRICS, "missing": "a null value is explained in the predictor's 'why_null'",
            "excess_movement": _MOVEMENT, "verdict_rules": [f"{label}: {rule}" for label, rule in RULES],
            **self._references_json(wording)}
        return {"settings": settings, "warnings": [plain_text(word(w, wording)) for w in self.warnings.all()],
                "predictors": {name: self._predictor_json(name, wording) for name in self.summary.index}}

    def _references_json(self, wording: Wording) -> dict:
        """The settings' entries on the references (none without them)."""
        if not self.references:
            return {}
        vs = {n: {k: (json_value(x) if k in ("delta", "se", "z") else x) for k, x in rec.items() if k != "words"}
              for n, rec in self.versus.items()}
        return {"references": {"names": self.references, "best": best_reference(self.result),
                               "words": f"ref:* predictors are {REFERENCE_WORDS}", "no_forecast": not self.has_forecasts,
                               "how_to_add_forecast": None if self.has_forecasts else word(how_to_add_forecast(
                                   plain_text(self.data.source)), wording),
                               "versus_best_reference": vs}}

    def _predictor_json(self, name: str, wording: Wording) -> dict:
        r, v, mv = self.summary.loc[name], self.verdicts[name], self.excess_movement.loc[name]
        rec = self.versus.get(name)
        versus = None if rec is None else {
            "reference": rec["reference"], "delta": json_value(rec["delta"]), "se": json_value(rec["se"]),
            "z": json_value(rec["z"]), "n_runs": rec["n_runs"], "outcome": rec["outcome"]}
        return {"reference": is_reference(name), "versus_best_reference": versus,
            "tps_mean": json_value(r.tps_mean), "tps_se": json_value(r.tps_se),
            "tps_ci_low": json_value(r.tps_ci_low), "tps_ci_high": json_value(r.tps_ci_high),
            "tps_step_mean": json_value(r.tps_step_mean),
            "n_trajectories": int(r.n_trajectories), "n_censored": int(r.n_censored),
            "n_clipped": int(r.n_clipped), "n_steps": int(r.n_steps),
            "n_missing": int(r.n_missing), "n_qz_fallback": int(r.n_qz_fallback),
            "tps_ref": json_value(self.skill.loc[name, "tps_ref"]),
            "skill": json_value(self.skill.loc[name, "skill"]),
            **{k: json_value(self.metrics.loc[name, k]) if k in self.metrics else None for k in _METRIC_KEYS},
            "why_null": self.why_null(name, wording),
            "verdict": {"label": v.label, "key": v.key, "rules_label": v.rules_label or v.label,
                        "text": plain_text(v.text), "numbers": verdict_numbers(v),
                        "conversion": conversion_numbers(v)},
            "excess_movement": {k: json_value(mv[k]) for k in ("value", "se", "z")} | {"n_runs": int(mv["n_runs"])},
            "warnings": [plain_text(word(w, wording)) for w in self.warnings.predictors[name]],
        }

    # ---------------------------------------------------------------- HTML
    def display_table(self) -> pd.DataFrame:
        """The leaderboard as text cells, best first, with the verdicts (the report's and the
        notebook's table: :func:`tpsviz.evaluation.tables.report_table`)."""
        return report_table(self)

    def headline(self) -> str:
        """The log and the settings in one line: runs, steps, censored, score, schedule, censoring."""
        d, w = self.data, settings_words(self.settings, self.censoring_words())
        return (f"{plain_text(d.source)}: {d.n_trajectories:,} runs, {d.n_steps:,} steps, {d.n_censored:,} censored "
                f"· score {w['score']} · schedule {w['schedule']} ({w['schedule_status']}) · censoring {w['censoring']}")

    def _repr_html_(self) -> str:
        """A compact notebook view: the log, the settings, the verdicts and the leaderboard."""
        esc = html.escape
        head = f"<p><b>tpsviz evaluation</b> of {esc(self.headline())}</p>"
        items = "".join(f"<li>{esc(plain_text(s))}</li>" for s in self.verdict_sentences())
        warn = "".join(f"<p>warning: {esc(plain_text(x))}</p>" for x in self.warnings.log)
        return f"<div class='tpsviz-evaluation'>{head}<ul>{items}</ul>{html_table(self.display_table())}{warn}</div>"

    def to_html(self, title: str | None = None) -> str:
        """The offline HTML report (plotly.js embedded): settings, verdicts, warnings, leaderboard,
        reliability diagrams, mean contribution by step and rational updating.

        Parameters
        ----------
        title : str, optional
            Default ``"tpsviz report — <file>"``.

        Returns
        -------
        str
            A complete HTML document (:func:`tpsviz.report.html.build_report`).
        """
        return build_report(title or f"tpsviz report — {plain_text(self.data.source)}", report_settings(self),
                            report_sections(self), notes=[f"Loader note: {n}" for n in self.notes])
