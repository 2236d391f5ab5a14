"""``python -m tpsviz score|compare PATH --engine auto|memory|duckdb|dask``: which engine scores a
log, and the reports of the out-of-core engines (docs/architecture.md, "Engines").

``auto`` reads a log into memory when it fits the row limit (``TPSVIZ_MAX_ROWS``) and scores a
larger Parquet/CSV dataset (a folder, a glob pattern or one big file) out of core with DuckDB; it
says which it picked and why. The out-of-core report has the in-memory report's TPS table,
reference, skill and usual metrics, computed from per-trajectory sums; the verdicts, which need
the step rows, are decided on a random sample of runs (the report says so).
``compare --baseline`` out of core gives the paired TPS differences on all runs; its paired AUROC
needs the step rows and is left out (the report says so).
"""

from __future__ import annotations

import dataclasses
import json
from contextlib import ExitStack

import numpy as np

from tpsviz.cli.common import Fail, fmt, name_width, num, safe
from tpsviz.cli.wording import CLI, say, say_all
from tpsviz.cli.logs import settings_from, settings_of
from tpsviz.cli.output import print_paired_tps, print_tps_table
from tpsviz.cli.unscored import unpaired_why, unscored_why
from tpsviz.core.clusters import by_run
from tpsviz.core.errors import LogFormatError
from tpsviz.core.tps import settings_words
from tpsviz.engines import ENGINE_NAMES, get_engine
from tpsviz.evaluation import engine_choice
from tpsviz.evaluation.out_of_core import BY_RUN, DatasetEvaluation, evaluate_dataset, refuse_in_memory_settings
from tpsviz.evaluation.record import reading_json
from tpsviz.io.dataset import Dataset
from tpsviz.io.files import Limits
from tpsviz.report.export import PER_TRAJECTORY_COLUMNS, write_safe_csv

__all__ = ["choose_engine", "score_out_of_core", "score_json_out_of_core", "compare_out_of_core", "print_header",
           "ENGINES"]

ENGINES = ("auto", *ENGINE_NAMES)
def _se_json(n_runs: int) -> dict:
    """The ``se`` entry of an out-of-core JSON: by run, and why."""
    return by_run(n_runs, say(BY_RUN)).to_json()


def choose_engine(args, limits: Limits) -> tuple[str, str, Dataset | None]:
    """(engine, why, dataset) for ``args.path`` under ``--engine``: the front door's choice
    (:func:`tpsviz.evaluation.engine_choice.choose_engine`)."""
    try:
        return engine_choice.choose_engine(args.path, args.format, args.engine, limits)
    except ValueError as exc:
        raise Fail(say(exc)) from None


def score_out_of_core(args, ds: Dataset, why: str, engine: str = "duckdb") -> int:
    """``score`` through the engine's per-trajectory sums (:func:`tpsviz.engines.get_engine`); prints the report."""
    return _score_out_of_core(args, ds, why, engine)


def score_json_out_of_core(args, ds: Dataset, why: str, engine: str = "duckdb") -> dict:
    """The JSON object ``score --json`` prints out of core (``check`` reads it), nothing printed."""
    return evaluation_out_of_core(args, ds, why, engine).to_json(CLI)


def evaluation_out_of_core(args, ds: Dataset, why: str, engine: str = "duckdb") -> DatasetEvaluation:
    """The out-of-core Evaluation of ``ds`` under the command's options: what ``tpsviz.evaluate``
    returns for it (:func:`tpsviz.evaluation.out_of_core.evaluate_dataset`).

    Raises
    ------
    Fail
        For a setting out of core refuses (named as an option), or a Dask scheduler it cannot reach.
    """
    settings, read = settings_of(args)
    try:
        return evaluate_dataset(ds, settings, read, engine, why, args.scheduler)
    except OSError as exc:  # no scheduler at that address
        raise Fail(f"--scheduler {safe(args.scheduler)}: cannot connect ({safe(exc, 200)})") from None
    except LogFormatError:
        raise
    except ValueError as exc:
        raise Fail(say(exc)) from None


def compare_out_of_core(args, ds: Dataset, why: str, engine: str = "duckdb") -> int:
    """``compare --baseline NAME`` out of core: the paired TPS differences on all runs
    (:func:`tpsviz.engines.runsums.paired_tps`, the TPS columns of
    :func:`tpsviz.diagnostics.compare.compare`). The paired AUROC needs the step rows (a trajectory
    bootstrap of pooled ranks), so it is left out, and the report says so."""
    return _on_engine(args, engine, lambda eng: _compare_out_of_core(args, ds, why, eng))


def _on_engine(args, engine: str, work):
    """``work(engine)`` on the open engine named ``engine`` (Dask: on ``--scheduler`` or a local cluster)."""
    with ExitStack() as stack:
        try:
            eng = stack.enter_context(get_engine(engine, scheduler=args.scheduler))
        except OSError as exc:  # no scheduler at that address
            raise Fail(f"--scheduler {safe(args.scheduler)}: cannot connect ({safe(exc, 200)})") from None
        return work(eng)


def _sums(args, ds: Dataset, engine, counts: bool = True):
    """(RunSums, settings, intervals) of ``ds`` under the command's settings: ``intervals`` is the
    engine's bootstrap (None: the in-memory multinomial one). Without ``counts``, the pooled-metric
    counts may be left out."""
    try:
        refuse_in_memory_settings(*settings_of(args))
    except ValueError as exc:
        raise Fail(say(exc)) from None
    probe = settings_from(args, has_qz=False)
    mapping = [(t, c) for t, c in args.map_pairs]
    percent = args.percent_names
    sums = engine.runsums(ds, probe, mapping=mapping, percent=percent, counts=counts)
    has_qz = bool((sums.runs["censored"] & sums.runs["q_z"].notna()).any())
    # by run, every SE of the report: the sums' and the sample's verdicts' alike (BY_RUN)
    # (and percentile CIs: the engines' only kind, said in their words)
    return sums, dataclasses.replace(settings_from(args, has_qz=has_qz), cluster_by="run", interval="percentile"), \
        engine.intervals


def _score_out_of_core(args, ds: Dataset, why: str, engine: str) -> int:
    ev = evaluation_out_of_core(args, ds, why, engine)
    res = ev.result
    if getattr(args, "per_trajectory", None):
        write_safe_csv(res.per_trajectory[PER_TRAJECTORY_COLUMNS], args.per_trajectory)
    nothing = unscored_why(dict(res.summary["n_trajectories"]), res.settings.censoring, res.sums.n_censored)
    if args.json:
        print(json.dumps(ev.to_json(CLI) | ({"nothing_scored": nothing.json()} if nothing else {}), indent=2))
    elif nothing is None:
        _print(ev)
    if nothing is not None:  # exit 2: a CI gate must not pass on nothing
        raise nothing
    return 0


#: what compare's out-of-core report says of the paired AUROC
AUROC_LEFT_OUT = ("AUROC delta: not computed out of core (its paired trajectory bootstrap needs the step "
                  "rows); each predictor's AUROC on all runs is in `score`")


def _compare_out_of_core(args, ds: Dataset, why: str, engine) -> int:
    from tpsviz.engines.duck import predictor_names  # (here: the in-memory commands never load the engines)

    names = predictor_names(ds, args.map_pairs, args.percent_names)  # (an unknown baseline is named before the pass)
    if args.baseline not in names:
        raise Fail(f"unknown baseline {safe(args.baseline)!r}: the log's predictors are "
                    f"{', '.join(safe(p, 40) for p in names)}")
    # (the engines load duckdb: imported when an engine is asked for)
    from tpsviz.engines.runsums import paired_tps, tps_of_runs

    # (per-run TPS alone: no pooled counts, summaries or bootstrap; the paired TPS SE is sd/sqrt(n)
    # of the per-run differences, as in memory)
    sums, settings, _ = _sums(args, ds, engine, counts=False)
    settings = dataclasses.replace(settings, n_boot=0)  # (reported: no bootstrap here)
    try:
        runs = tps_of_runs(sums, settings)
        table = paired_tps(runs, args.baseline, settings.level)
    except ValueError as exc:
        raise Fail(say(exc)) from None
    words = engine.describe(why, intervals=False)
    nothing = unpaired_why(table, args.baseline, int((~np.isnan(runs[args.baseline])).sum()), settings.censoring,
                           sums.n_censored)
    if args.json:
        obj = {
            "baseline": args.baseline,
            "settings": {**settings.describe(), "file": ds.label, "engine": sums.engine, "engine_reason": why,
                         "engine_words": words, "se": _se_json(sums.n_trajectories),
                         "n_trajectories": sums.n_trajectories,
                         "n_censored": sums.n_censored, "notes": say_all(sums.notes),
                         "reading": reading_json({"format": ds.fmt}),
                         "definition": "delta = predictor - baseline on the same runs; TPS: mean of per-run "
                                       "differences, SE = sd/sqrt(n); z = delta/SE; " + AUROC_LEFT_OUT},
            "predictors": {
                name: {k: num(r[k]) for k in ("tps_delta", "tps_se", "tps_z")}
                | {"auroc_delta": None, "auroc_se": None, "auroc_z": None, "n_runs": int(r["n_runs"])}
                for name, r in table.iterrows()
            },
        }
        print(json.dumps(obj | ({"nothing_scored": nothing.json()} if nothing else {}), indent=2))
    if nothing is not None:  # exit 2: nothing was compared (main prints why)
        raise nothing
    if args.json:
        return 0
    print_header(ds, sums, settings, words)
    print()
    print(f"paired comparison with baseline {safe(args.baseline)!r} on all runs: delta = predictor - baseline "
          "(TPS: higher is better; SE = sd/sqrt(n) of the per-run differences)")
    print_paired_tps(table, count_width=10)
    print(AUROC_LEFT_OUT)
    return 0


def print_header(ds: Dataset, sums, settings, words: str) -> None:
    """The head of an out-of-core report: the dataset once (runs, steps, censored runs), the engine
    with why it ran (its files and rows: said there only), the settings in words and the notes.

    Parameters
    ----------
    ds : Dataset
    sums : RunSums
    settings : ScoreSettings
    words : str
        The engine's words (:meth:`tpsviz.engines.interface.Engine.describe`).
    """
    print(f"{safe(ds.label)}: {sums.n_trajectories:,} trajectories, {sums.n_steps:,} steps, "
          f"{sums.n_censored:,} censored")
    print(f"engine: {safe(words)}")
    w = settings_words(settings)
    print(f"score: {w['score']}, {w['unit']}; {w['direction']}")
    print(f"schedule: {w['schedule']} -> {w['schedule_status']}")
    if not settings.schedule.verdict.is_strictly_proper:
        print(f"  note: {w['schedule_reason']}")
    print(f"censoring: {w['censoring']}; eps = {w['eps']}")
    print(f"uncertainty: SE by run ({say(BY_RUN)})")
    for note in sums.notes:
        print(f"note: {safe(say(note))}")


def _print(ev: DatasetEvaluation) -> None:
    res, ds, ranks, verdict, sample_words = ev.result, ev.dataset, ev.ranks, ev.verdicts, say(ev.sample_words)
    sums, s, sk, m, settings = res.sums, res.summary, res.skill, res.metrics, res.settings
    print_header(ds, sums, settings, ev.engine_words)
    print()
    print(f"verdicts {sample_words}")
    for name in s.index:
        if verdict and name in verdict:
            print(f"  {safe(verdict[name].text)}")
    pct = int(round(settings.level * 100))
    nw = name_width(s.index)
    print()
    order = print_tps_table(s, pct, nw, count_width=9)
    print(f"per step = sum of TPS / sum of weights (a display normalisation); CIs: {res.ci_words}")
    print()
    if len(sk):
        print(f"constant forecast (base rate): {float(sk['ref_rate'].iloc[0]):.4f} "
              f"({safe(sk['ref_rule'].iloc[0])}); skill = 1 - TPS/TPS_ref (> 0 beats it, 1 is "
              "perfect)")
    n_lab = int(m["n_trajectories"].max()) if len(m) else 0
    print(f"usual metrics on {n_lab:,} complete runs, pooled over steps unless 'final' (T-ECE: 10 equal-"
          f"width bins, lower is better; blind to what TPS sees); {ranks}")
    header = (f"{'predictor':<{nw}} {'TPS_ref':>9} {'skill':>8} {'AUROC':>7} {'AUPRC':>7} "
              f"{'AUROC fin':>9} {'T-ECE':>7} {'T-ECE fin':>9}")
    print(header)
    print("-" * len(header))
    for name in order:
        k, mm = sk.loc[name], m.loc[name]
        print(f"{safe(name, nw):<{nw}} {fmt(k.tps_ref, 9, 3)} {fmt(k.skill, 8, 3)} {fmt(mm.auroc, 7, 3)} "
              f"{fmt(mm.auprc, 7, 3)} {fmt(mm.auroc_final, 9, 3)} {fmt(mm.tece_pooled, 7, 3)} "
              f"{fmt(mm.tece_final, 9, 3)}")
