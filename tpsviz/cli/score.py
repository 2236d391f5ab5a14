"""``tpsviz score LOG``: every predictor of a log scored with TPS, with its verdict, skill, usual
metrics and rational-updating check (text, or one JSON object with ``--json``).

The log's kind decides the report (:func:`tpsviz.cli.logs.log_kind`): a binary log is scored here,
in memory or out of core (:mod:`tpsviz.cli.engine`); a multi-class or continuous-outcome log gets
the ``multiclass`` or ``crps`` report (:mod:`tpsviz.cli.kinds`). In memory, the
:class:`~tpsviz.evaluation.record.Evaluation` of the log (what ``tpsviz.evaluate`` returns) holds every
number: ``--json`` prints its ``to_json()``, :func:`print_score` writes its fields as text.
"""

from __future__ import annotations

import json
import shlex

import numpy as np

from tpsviz.cli.common import Fail, fmt, name_width, safe
from tpsviz.cli.wording import CLI, say
from tpsviz.cli.continuous import add_bins
from tpsviz.cli.engine import choose_engine, score_out_of_core
from tpsviz.cli.kinds import check_options_for, score_other
from tpsviz.cli.logs import log_kind, read_options, settings_of
from tpsviz.cli.multiclass import add_label_options
from tpsviz.cli.options import add_engine_options, add_references_option, add_scoring_options, check_args
from tpsviz.cli.output import print_header, print_tps_table
from tpsviz.cli.unscored import NothingScored, unscored_why
from tpsviz.core.errors import LogFormatError
from tpsviz.evaluation.front_door import NothingToScore, evaluate_binary
from tpsviz.evaluation.record import REFERENCE_WORDS, BinaryEvaluation, reading_json
from tpsviz.evaluation.reading import no_forecast_reason
from tpsviz.forecasts.references import how_to_add_forecast
from tpsviz.io.files import limits_from_env
from tpsviz.report.export import write_safe_csv

__all__ = ["add_arguments", "run", "engine_for", "evaluation_for", "print_score", "refuse_references_out_of_core",
           "print_nothing_scored"]


def add_arguments(p) -> None:
    """The options of ``score``: scoring, engine, ``--per-trajectory`` and those of other outcomes."""
    add_scoring_options(p)
    add_references_option(p)
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
        refuse_references_out_of_core(args, engine)
        return score_out_of_core(args, ds, why, engine)
    ev = evaluation_or_exit(args, why)
    data = ev.data
    nothing = unscored_why(dict(ev.summary["n_trajectories"]), ev.settings.censoring, data.n_censored)
    if args.per_trajectory and nothing is None:
        write_safe_csv(ev.per_trajectory_table(), args.per_trajectory)
    if args.json:
        print(json.dumps(ev.to_json(CLI) | ({"nothing_scored": nothing.json()} if nothing else {}), indent=2))
    elif nothing is not None:  # how the log was read (its notes say what was left out), then why: exit 2
        print_header(ev.data, ev.settings, ev.notes, engine=ev.engine_reason)
    else:
        print_score(ev, args.path)
    if nothing is not None:
        raise nothing
    return 0


def evaluation_or_exit(args, why: str, complete: bool = True) -> BinaryEvaluation:
    """:func:`evaluation_for`, or, for a log without any forecast whose references cannot be formed,
    its report and the exit 2 (:func:`print_nothing_scored`): what ``score``, ``compare`` and
    ``monitor`` stand on. Its parts are computed when read (``compare`` and ``monitor`` read TPS only).

    Parameters
    ----------
    args : Namespace
    why : str
        Why the memory engine scores the log.
    complete : bool
        As in :func:`evaluation_for`.

    Returns
    -------
    BinaryEvaluation

    Raises
    ------
    NothingScored, Fail
    """
    try:
        return evaluation_for(args, why, complete)
    except NothingToScore as none:  # no forecast, and too few runs for a reference
        print_nothing_scored(args, none.data, none.settings, none.notes, why)


def print_nothing_scored(args, data, settings, notes, why: str) -> None:
    """The report of a log without any forecast whose references cannot be formed: how it was read
    (text, or JSON with no predictor and ``nothing_scored``), then the exit 2 with why nothing is
    scored and how to add a forecast.

    Raises
    ------
    NothingScored
    """
    reason = no_forecast_reason(data)
    how = say(how_to_add_forecast(shlex.quote(args.path)))
    nothing = NothingScored(reason, how)
    if args.json:
        print(json.dumps({"settings": {**settings.describe(), "file": data.source, "engine": "memory",
                                       "engine_reason": why, "n_trajectories": data.n_trajectories,
                                       "n_steps": data.n_steps, "n_censored": data.n_censored,
                                       "notes": [say(n) for n in list(data.notes) + list(notes)], "reading": reading_json(data.reading),
                                       "references": {"names": [], "no_forecast": True, "why_none": reason,
                                                      "how_to_add_forecast": how}},
                          "warnings": [], "predictors": {}, "nothing_scored": nothing.json()}, indent=2))
    else:
        print_header(data, settings, list(data.notes) + list(notes), engine=why)
    raise nothing


def refuse_references_out_of_core(args, engine: str) -> None:
    """``--references`` needs the step rows in memory: refused out of core, with what to do.

    Raises
    ------
    Fail
    """
    if getattr(args, "references", False):
        raise Fail(f"--references: the reference forecasters are fitted on the step rows in memory, not with "
                   f"--engine {engine}; use --engine memory on a log within TPSVIZ_MAX_ROWS (or a sample of it)")


def evaluation_for(args, why: str, complete: bool = True) -> BinaryEvaluation:
    """The in-memory Evaluation of the command's binary log under its options: what
    ``tpsviz.evaluate`` returns for it (:func:`tpsviz.evaluation.front_door.evaluate_binary`).

    Parameters
    ----------
    args : Namespace
    why : str
        Why the memory engine scores the log.
    complete : bool
        Compute every part now (``score``: what the core refuses is said before anything is
        printed); False: TPS only, the other parts when read (``compare``, ``monitor``).

    Returns
    -------
    BinaryEvaluation

    Raises
    ------
    NothingToScore
        The log has no forecast, and no reference forecaster could be formed.
    Fail
        For what the core refuses (its message).
    """
    settings, read = settings_of(args)
    try:
        ev = evaluate_binary(args.path, settings, read, why)
        return ev.complete() if complete else ev
    except (LogFormatError, NothingToScore):
        raise
    except ValueError as exc:
        raise Fail(say(exc)) from None


def print_score(ev: BinaryEvaluation, path: str | None = None) -> None:
    """The text report of ``score`` in memory: header, verdicts, TPS, skill and metrics, updating.

    Parameters
    ----------
    ev : Evaluation
        The log scored (:func:`evaluation_for`).
    path : str, optional
        The log as given on the command line (named in the line on how to add a forecast).
    """
    s = ev.summary
    print_header(ev.data, ev.settings, ev.notes, engine=ev.engine_reason)
    nw = name_width(s.index)
    print()
    print("verdicts (rules: python -m tpsviz score --help, docs/theory.md section 8)")
    for sentence in ev.verdict_sentences():
        print(f"  {safe(sentence)}")
    if ev.references:
        print(f"{', '.join(ev.references)} {'are' if len(ev.references) > 1 else 'is'} {REFERENCE_WORDS}")
    if not ev.has_forecasts:
        print("no forecast in this log, so only the references are scored; "
              + safe(say(how_to_add_forecast(shlex.quote(path or ev.data.source)))))
    for w in ev.warnings.log:
        print(f"warning: {safe(say(w))}")
    print()
    print_tps_table(s, int(round(ev.settings.level * 100)), nw)
    extra = s[(s.n_qz_fallback > 0) | (s.n_no_forecast > 0) | (s.n_missing > 0)]
    for pred, r in extra.iterrows():
        print(f"note: {safe(pred)}: {int(r.n_missing)} steps without forecast, "
              f"{int(r.n_no_forecast)} runs without any forecast (left out), "
              f"{int(r.n_qz_fallback)} censored runs scored with q_Z = 0 for want of q_z")
    print("per step = sum of TPS / sum of weights (a display normalisation)")
    print()
    _print_metrics(ev, nw)
    print()
    _print_updating(ev.excess_movement, ev.order, nw)
    pred_warn = [w for pred in ev.order for w in ev.warnings.predictors[pred]]
    if pred_warn:
        print()
    for w in pred_warn:
        print(f"warning: {safe(w)}")


def _print_metrics(ev: BinaryEvaluation, nw: int) -> None:
    """The reference, the skill and usual metrics table, and why a value is n/a."""
    skill, metrics = ev.skill, ev.metrics
    if ev.reference_rate is not None:
        print(f"constant forecast (base rate): {ev.reference_rate:.4f} ({ev.reference_rule}); "
              "skill = 1 - TPS/TPS_ref (> 0 beats it, 1 is perfect)")
    n_lab = int(metrics["n_trajectories"].max()) if len(metrics) else 0
    print(f"usual metrics on {n_lab} complete runs, pooled over steps unless 'final' "
          "(T-ECE: 10 equal-width bins, lower is better; blind to what TPS sees)")
    header = (f"{'predictor':<{nw}} {'TPS_ref':>9} {'skill':>8} {'AUROC':>7} {'AUPRC':>7} "
              f"{'AUROC fin':>9} {'T-ECE':>7} {'T-ECE fin':>9}")
    print(header)
    print("-" * len(header))
    for pred in ev.order:
        m = metrics.loc[pred]
        k = skill.loc[pred]
        print(f"{safe(pred, nw):<{nw}} {fmt(k.tps_ref, 9, 3)} {fmt(k.skill, 8, 3)} "
              f"{fmt(m.auroc, 7, 3)} {fmt(m.auprc, 7, 3)} {fmt(m.auroc_final, 9, 3)} "
              f"{fmt(m.tece_pooled, 7, 3)} {fmt(m.tece_final, 9, 3)}")
    grouped: dict = {}
    for pred in ev.order:
        for field_, reason in ev.why_null(pred, CLI).items():
            grouped.setdefault((field_, reason), []).append(pred)
    if grouped:
        print()
    for (field_, reason), names in grouped.items():
        who = "every predictor" if len(names) == len(ev.order) > 1 else ", ".join(safe(n, 40) for n in names)
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
