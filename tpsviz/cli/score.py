"""``tpsviz score LOG``: every predictor of a log scored with TPS, with its verdict, skill, usual
metrics and rational-updating check (text, or one JSON object with ``--json``).

The log's kind decides the report (:func:`tpsviz.cli.logs.log_kind`): a binary log is scored here,
in memory or out of core (:mod:`tpsviz.cli.engine`); a multi-class or continuous-outcome log gets
the ``multiclass`` or ``crps`` report (:mod:`tpsviz.cli.kinds`). In memory, :func:`score_in_memory`
computes everything the report shows and :func:`score_json` / :func:`print_score` write it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from tpsviz.cli.common import Fail, fmt, name_width, num, safe
from tpsviz.cli.continuous import add_bins
from tpsviz.cli.engine import choose_engine, score_out_of_core
from tpsviz.cli.kinds import check_options_for, score_other
from tpsviz.cli.logs import log_kind, prepare, read_options
from tpsviz.cli.multiclass import add_label_options
from tpsviz.cli.options import add_engine_options, add_scoring_options, check_args
from tpsviz.cli.output import print_header, print_tps_table, reading_json, verdict_numbers
from tpsviz.core.tps import compute_tps
from tpsviz.diagnostics.verdict import RULES as VERDICT_RULES
from tpsviz.io.files import limits_from_env
from tpsviz.report.export import PER_TRAJECTORY_COLUMNS, write_safe_csv

__all__ = ["add_arguments", "run", "engine_for", "ScoreReport", "score_in_memory", "score_json", "print_score",
           "why_missing"]


def add_arguments(p) -> None:
    """The options of ``score``: scoring, engine, ``--per-trajectory`` and those of other outcomes."""
    add_scoring_options(p)
    add_engine_options(p, "score")
    p.add_argument("--per-trajectory", metavar="OUT.csv", default=None,
                   help="write per-trajectory TPS (trajectory_id, predictor, tps, censored, outcome: 1, 0 "
                        "or empty when censored); complete-case mode leaves censored runs out")
    g = p.add_argument_group("multi-class and continuous-outcome logs (docs/multiclass.md, docs/continuous.md): "
                             "the report of `multiclass` or `crps`")
    add_label_options(g)
    add_bins(g, "multi-class: bins of the one-vs-rest reliability (1 to 100); continuous: PIT histogram bins "
                "(2 to 100); default 10")


def engine_for(args):
    """(engine, why, dataset) of ``--engine`` for the command's log (:func:`tpsviz.cli.engine.choose_engine`).

    Sets ``args.map_pairs`` and ``args.percent_names`` from the reading options (the out-of-core
    engine reads them there).
    """
    options = read_options(args)
    args.map_pairs, args.percent_names = options.mapping, options.percent
    return choose_engine(args, limits_from_env())


def run(args) -> int:
    """``score``: read the log, score it and print the report; returns the exit code."""
    check_args(args)
    kind = log_kind(args)
    if kind != "binary":
        return score_other(args, kind)
    check_options_for(args, kind)
    engine, why, ds = engine_for(args)
    if engine in ("duckdb", "dask"):
        return score_out_of_core(args, ds, why, engine)
    data, settings, q_z, notes = prepare(args)
    report = score_in_memory(data, settings, q_z)
    if args.per_trajectory:
        write_per_trajectory(report, args.per_trajectory)
    if args.json:
        print(json.dumps(score_json(report, notes, why), indent=2))
        return 0
    print_score(report, notes, why)
    return 0


@dataclass
class ScoreReport:
    """Everything ``score`` reports on a log scored in memory.

    Attributes
    ----------
    data : TrajectoryData
    settings : ScoreSettings
    result : TPSResult
    metrics, skill : DataFrame
        :func:`tpsviz.diagnostics.leaderboard.metric_table` and ``skill_table``.
    verdict : dict
        Predictor -> :class:`tpsviz.diagnostics.verdict.Verdict`.
    warn : tpsviz.diagnostics.caveats.Caveats
    moves : DataFrame
        :func:`tpsviz.diagnostics.updating.excess_movement`.
    """

    data: object
    settings: object
    result: object
    metrics: object
    skill: object
    verdict: dict
    warn: object
    moves: object


def score_in_memory(data, settings, q_z=None) -> ScoreReport:
    """Score a log in memory: TPS, usual metrics, skill, verdicts, caveats and excess movement.

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings
    q_z : Series, optional
        q_Z of the censored runs from rollouts.

    Returns
    -------
    ScoreReport

    Raises
    ------
    Fail
        For what the core refuses (its message).
    """
    from tpsviz.diagnostics.caveats import caveats
    from tpsviz.diagnostics.leaderboard import metric_table, skill_table
    from tpsviz.diagnostics.updating import excess_movement
    from tpsviz.diagnostics.verdict import verdicts

    try:
        result = compute_tps(data, settings, q_z=q_z)
        metrics = metric_table(data, settings, n_bins=10, n_boot=0)
        skill = skill_table(data, settings, q_z=q_z, n_boot=max(settings.n_boot, 200), result=result)
        verdict = verdicts(data, settings, q_z=q_z, skill=skill)
        warn = caveats(data, settings, result.summary, skill)
        moves = excess_movement(data, list(result.summary.index))
    except ValueError as exc:
        raise Fail(str(exc)) from None
    return ScoreReport(data, settings, result, metrics, skill, verdict, warn, moves)


def write_per_trajectory(report: ScoreReport, path: str) -> None:
    """``--per-trajectory``: every scored run's TPS, with its outcome (1, 0, empty when censored)."""
    per = report.result.per_trajectory
    out = per.assign(  # (traj: the run's row in data.trajectories)
        outcome=report.data.trajectories["outcome"].to_numpy(dtype=float)[per["traj"].to_numpy()])
    write_safe_csv(out[PER_TRAJECTORY_COLUMNS], path)


def _reference(skill) -> tuple:
    """(rate, rule) of the base-rate reference, (None, None) without predictors."""
    if not len(skill):
        return None, None
    return float(skill["ref_rate"].iloc[0]), str(skill["ref_rule"].iloc[0])


def _settings_json(report: ScoreReport, notes, why: str) -> dict:
    data, settings = report.data, report.settings
    ref_rate, ref_rule = _reference(report.skill)
    return {
        **settings.describe(), "file": data.source, "engine": "memory", "engine_reason": why,
        "n_trajectories": data.n_trajectories, "n_steps": data.n_steps,
        "n_censored": data.n_censored, "notes": data.notes + notes,
        "reading": reading_json(data.reading),
        "units": "TPS per trajectory in the score's units (nats for the log "
                 "score); higher is better, 0 is perfect",
        "reference_rate": num(ref_rate), "reference_rule": ref_rule,
        "metrics": "auroc/auprc/tece_pooled pooled over (trajectory, step) "
                   "pairs of complete runs; *_final use each run's final "
                   "forecast; T-ECE with 10 equal-width bins; skill = 1 - "
                   "TPS/TPS_ref against the constant reference rate",
        "missing": "a null value is explained in the predictor's 'why_null'",
        "excess_movement": "mean over runs of sum (F_t+1 - F_t)^2 minus the uncertainty "
                           "resolved, F_1(1-F_1) - F_end(1-F_end) (a finished run ends at Y); "
                           "0 for a truthful forecast, > 0 over-reacts, < 0 under-reacts; "
                           "z = value / se across runs (docs/theory.md, Rational updating)",
        "verdict_rules": [f"{label}: {rule}" for label, rule in VERDICT_RULES]}


def _predictor_json(report: ScoreReport, pred: str, r) -> dict:
    skill, metrics, moves, v = report.skill, report.metrics, report.moves, report.verdict[pred]
    return {
        "tps_mean": num(r.tps_mean), "tps_se": num(r.tps_se),
        "tps_ci_low": num(r.tps_ci_low), "tps_ci_high": num(r.tps_ci_high),
        "tps_step_mean": num(r.tps_step_mean),
        "n_trajectories": int(r.n_trajectories), "n_censored": int(r.n_censored),
        "n_clipped": int(r.n_clipped), "n_steps": int(r.n_steps),
        "n_missing": int(r.n_missing), "n_qz_fallback": int(r.n_qz_fallback),
        "tps_ref": num(skill.loc[pred, "tps_ref"]),
        "skill": num(skill.loc[pred, "skill"]),
        **{k: num(metrics.loc[pred, k]) if k in metrics else None
           for k in ("auroc", "auprc", "auroc_final", "tece_pooled", "tece_final")},
        "why_null": why_missing(r, report.settings, skill.loc[pred], metrics.loc[pred]),
        "verdict": {"label": v.label, "text": safe(v.text), "numbers": verdict_numbers(v)},
        "excess_movement": {k: num(moves.loc[pred, k]) for k in ("value", "se", "z")}
        | {"n_runs": int(moves.loc[pred, "n_runs"])},
        "warnings": [safe(w) for w in report.warn.predictors[pred]],
    }


def score_json(report: ScoreReport, notes, why: str) -> dict:
    """The JSON object of ``score --json`` in memory.

    Parameters
    ----------
    report : ScoreReport
    notes : list of str
        The command's notes (recalibration, rollouts).
    why : str
        Why the memory engine scored the log.

    Returns
    -------
    dict
    """
    return {
        "settings": _settings_json(report, notes, why),
        "warnings": [safe(w) for w in report.warn.all()],
        "predictors": {pred: _predictor_json(report, pred, r) for pred, r in report.result.summary.iterrows()},
    }


def print_score(report: ScoreReport, notes, why: str) -> None:
    """The text report of ``score`` in memory: header, verdicts, TPS, skill and metrics, updating.

    Parameters
    ----------
    report : ScoreReport
    notes : list of str
    why : str
        Why the memory engine scored the log.
    """
    s = report.result.summary
    print_header(report.data, report.settings, notes, engine=why)
    nw = name_width(s.index)
    print()
    print("verdicts (rules: python -m tpsviz score --help, docs/theory.md section 8)")
    for pred in s.index:
        print(f"  {safe(report.verdict[pred].text)}")
    for w in report.warn.log:
        print(f"warning: {safe(w)}")
    print()
    order = print_tps_table(s, int(round(report.settings.level * 100)), nw)
    extra = s[(s.n_qz_fallback > 0) | (s.n_no_forecast > 0) | (s.n_missing > 0)]
    for pred, r in extra.iterrows():
        print(f"note: {safe(pred)}: {int(r.n_missing)} steps without forecast, "
              f"{int(r.n_no_forecast)} runs without any forecast (left out), "
              f"{int(r.n_qz_fallback)} censored runs scored with q_Z = 0 for want of q_z")
    print("per step = sum of TPS / sum of weights (a display normalisation)")
    print()
    _print_metrics(report, order, nw)
    print()
    _print_updating(report.moves, order, nw)
    pred_warn = [w for pred in order for w in report.warn.predictors[pred]]
    if pred_warn:
        print()
    for w in pred_warn:
        print(f"warning: {safe(w)}")


def _print_metrics(report: ScoreReport, order, nw: int) -> None:
    """The reference, the skill and usual metrics table, and why a value is n/a."""
    skill, metrics, s = report.skill, report.metrics, report.result.summary
    ref_rate, ref_rule = _reference(skill)
    if ref_rate is not None:
        print(f"base-rate reference: constant forecast {ref_rate:.4f} ({ref_rule}); "
              "skill = 1 - TPS/TPS_ref (> 0 beats the reference, 1 is perfect)")
    n_lab = int(metrics["n_trajectories"].max()) if len(metrics) else 0
    print(f"usual metrics on {n_lab} complete runs, pooled over steps unless 'final' "
          "(T-ECE: 10 equal-width bins, lower is better; blind to what TPS sees)")
    header = (f"{'predictor':<{nw}} {'TPS_ref':>9} {'skill':>8} {'AUROC':>7} {'AUPRC':>7} "
              f"{'AUROC fin':>9} {'T-ECE':>7} {'T-ECE fin':>9}")
    print(header)
    print("-" * len(header))
    for pred in order:
        m = metrics.loc[pred]
        k = skill.loc[pred]
        print(f"{safe(pred, nw):<{nw}} {fmt(k.tps_ref, 9, 3)} {fmt(k.skill, 8, 3)} "
              f"{fmt(m.auroc, 7, 3)} {fmt(m.auprc, 7, 3)} {fmt(m.auroc_final, 9, 3)} "
              f"{fmt(m.tece_pooled, 7, 3)} {fmt(m.tece_final, 9, 3)}")
    why = {pred: why_missing(s.loc[pred], report.settings, skill.loc[pred], metrics.loc[pred]) for pred in order}
    grouped: dict = {}
    for pred, reasons in why.items():
        for field_, reason in reasons.items():
            grouped.setdefault((field_, reason), []).append(pred)
    if grouped:
        print()
    for (field_, reason), names in grouped.items():
        who = "every predictor" if len(names) == len(why) > 1 else ", ".join(safe(n, 40) for n in names)
        print(f"n/a: {field_} of {who}: {reason}")


def _print_updating(moves, order, nw: int) -> None:
    """The rational-updating lines: excess movement per run with its SE and z."""
    print("rational updating: excess movement per run = sum (F_t+1 - F_t)^2 - [F_1(1-F_1) - F_end(1-F_end)]; "
          "0 if truthful, > 0 over-reacts, < 0 under-reacts (a constant forecast passes: this checks how F "
          "moves, TPS and skill how much it knows)")
    for pred in order:
        mv = moves.loc[pred]
        value = f"{mv.value:+9.4f}" if np.isfinite(mv.value) else f"{'n/a':>9}"
        se = f"{mv.se:.4f}" if np.isfinite(mv.se) else "n/a (fewer than 2 runs)"
        z = f"{mv.z:+6.1f}" if np.isfinite(mv.z) else "   n/a"
        print(f"  {safe(pred, nw):<{nw}} {value} ± {se}  z = {z}")


def why_missing(r, settings, k, m) -> dict:
    """Why a value of a predictor's row is not a finite number, so no result is ever a bare ``nan``.

    Parameters
    ----------
    r : Series
        The predictor's row of the TPS summary.
    settings : ScoreSettings
    k, m : Series
        Its rows of the skill and metric tables.

    Returns
    -------
    dict
        Field -> reason.
    """
    out = {}
    n = int(r.n_trajectories)
    mean = float(r.tps_mean)
    if n == 0:
        out["tps"] = ("no run was scored (the predictor has no forecast on the runs in scope)"
                      if int(r.n_no_forecast) else "no run is in scope")
    elif math.isinf(mean):
        out["tps"] = ("-inf: a forecast of exactly 0 or 1 was wrong under an unbounded score "
                      "with eps = 0; raise --eps or use a bounded score (--alpha 1 --beta 1)")
    elif n < 2:
        out["tps_se"] = "the SE and CI need at least 2 runs; only 1 was scored"
    elif settings.n_boot == 0:
        out["tps_ci"] = "no CI: the bootstrap is off (--n-boot 0); mean ± 1.96 SE is an alternative"
    elif not (math.isfinite(float(r.tps_ci_low)) and math.isfinite(float(r.tps_ci_high))):
        out["tps_ci"] = "no CI could be formed from the bootstrap replicates"
    if n and not math.isfinite(float(k.skill)):
        out["skill"] = (str(k.get("skill_note", "")) or
                        "skill is undefined when TPS or the reference's TPS is not finite")
    if not math.isfinite(float(m.get("auroc", math.nan))):
        out["auroc"] = ("AUROC needs complete runs with both outcomes (a success and a failure) "
                        "and a forecast")
    return out
