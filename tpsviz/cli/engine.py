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

from tpsviz.cli.common import Fail, fmt, name_width, num, safe, say, say_all
from tpsviz.cli.logs import settings_from
from tpsviz.cli.output import print_paired_tps, print_tps_table
from tpsviz.cli.unscored import unpaired_why, unscored_why
from tpsviz.engines import ENGINE_NAMES, OUT_OF_CORE, get_engine
from tpsviz.evaluation.record import reading_json, verdict_numbers
from tpsviz.evaluation.settings import dataset_for_engine
from tpsviz.io.dataset import Dataset
from tpsviz.report.export import PER_TRAJECTORY_COLUMNS, write_safe_csv
from tpsviz.io.files import Limits
from tpsviz.core.clusters import by_run
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.tps import settings_words
from tpsviz.diagnostics.verdict import verdicts
from tpsviz.io.loading import apply_mapping
from tpsviz.io.longform import from_frame

__all__ = ["choose_engine", "score_out_of_core", "score_json_out_of_core", "compare_out_of_core", "print_header",
           "ENGINES"]

ENGINES = ("auto", *ENGINE_NAMES)
#: why every SE out of core is by run (the in-memory path clusters by task, docs/theory.md §6.1)
BY_RUN = "out of core: every SE and bootstrap is by run (--cluster-by applies in memory)"


def _se_json(n_runs: int) -> dict:
    """The ``se`` entry of an out-of-core JSON: by run, and why."""
    return by_run(n_runs, BY_RUN).to_json()


def _unsupported(args) -> list[str]:
    """Options the out-of-core engine does not apply (named, never silently ignored)."""
    given = [("--recalibrate", args.recalibrate), ("--rollouts", args.rollouts),
             ("--q-z", getattr(args, "q_z", None) is not None),
             ("--forecasts", args.forecasts), ("--conf", args.conf),
             ("--treat", args.treat), ("--scorer", args.scorer),
             ("--success-threshold", args.success_threshold is not None),
             ("--run-by", getattr(args, "run_by", None)), ("--step-spans", getattr(args, "step_spans", None)),
             ("--outcome", getattr(args, "outcome", None)), ("--outcomes", getattr(args, "outcomes", None)),
             ("--censor-when", getattr(args, "censor_when", None)),
             ("--cluster-by COLUMN", getattr(args, "cluster_by", "auto") not in ("auto", "run"))]
    return [flag for flag, on in given if on]


def choose_engine(args, limits: Limits) -> tuple[str, str, Dataset | None]:
    """(engine, why, dataset) for ``args.path`` under ``--engine`` (the automatic choice is the
    core's, :func:`tpsviz.evaluation.settings.dataset_for_engine`)."""
    engine = args.engine
    if engine == "memory":
        return "memory", "asked for with --engine memory", None
    too_large, words, ds = dataset_for_engine(args.path, args.format, limits)
    if too_large is None:
        if engine in OUT_OF_CORE:
            raise Fail(f"--engine {engine} reads Parquet, CSV and TSV tables (a file, a folder or a glob "
                        "pattern of them); read harness logs and JSON Lines with --engine memory")
        return "memory", words, None
    if engine in OUT_OF_CORE:
        return engine, f"asked for with --engine {engine}; {words}", ds
    if too_large:
        return "duckdb", (f"auto: {words}, more than the {limits.max_rows:,} rows read into memory "
                          "(TPSVIZ_MAX_ROWS)"), ds
    return "memory", f"auto: {words}, within the {limits.max_rows:,} rows read into memory", None


def score_out_of_core(args, ds: Dataset, why: str, engine: str = "duckdb") -> int:
    """``score`` through the engine's per-trajectory sums (:func:`tpsviz.engines.get_engine`); prints the report."""
    return _on_engine(args, engine, lambda eng: _score_out_of_core(args, ds, why, eng))


def score_json_out_of_core(args, ds: Dataset, why: str, engine: str = "duckdb") -> dict:
    """The JSON object ``score --json`` prints out of core (``check`` reads it), nothing printed."""
    return _on_engine(args, engine, lambda eng: _json(*_score_parts(args, ds, why, eng)))


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
    bad = _unsupported(args)
    if bad:
        one = len(bad) == 1
        raise Fail(f"{', '.join(bad)} {'is' if one else 'are'} not available with the out-of-core engine "
                    f"({'it needs' if one else 'they need'} the step rows in memory); drop "
                    f"{'it' if one else 'them'} or use --engine memory on a log within TPSVIZ_MAX_ROWS")
    probe = settings_from(args, has_qz=False)
    mapping = [(t, c) for t, c in args.map_pairs]
    percent = args.percent_names
    sums = engine.runsums(ds, probe, mapping=mapping, percent=percent, counts=counts)
    has_qz = bool((sums.runs["censored"] & sums.runs["q_z"].notna()).any())
    # by run, every SE of the report: the sums' and the sample's verdicts' alike (BY_RUN)
    # (and percentile CIs: the engines' only kind, said in their words)
    return sums, dataclasses.replace(settings_from(args, has_qz=has_qz), cluster_by="run", interval="percentile"), \
        engine.intervals


def _scored(args, ds: Dataset, engine):
    """The out-of-core :class:`~tpsviz.engines.runsums.DatasetScore` of ``ds``."""
    # (the engines load duckdb: imported when an engine is asked for)
    from tpsviz.engines.runsums import score_from_sums

    sums, settings, intervals = _sums(args, ds, engine)
    try:
        return score_from_sums(sums, settings, intervals=intervals)
    except ValueError as exc:
        raise Fail(say(exc)) from None


def _score_parts(args, ds: Dataset, why: str, engine) -> tuple:
    """(result, dataset, why, ranks words, verdicts, sample words) of the out-of-core score."""
    res = _scored(args, ds, engine)
    sums, settings = res.sums, res.settings
    if getattr(args, "per_trajectory", None):
        write_safe_csv(res.per_trajectory[PER_TRAJECTORY_COLUMNS], args.per_trajectory)
    ranks = _ranks_words(res.metrics)
    verdict, sample_words = _sample_verdicts(args, ds, sums, settings, engine)
    res.engine_words = engine.describe(why)
    return res, ds, why, ranks, verdict, sample_words


def _score_out_of_core(args, ds: Dataset, why: str, engine) -> int:
    parts = _score_parts(args, ds, why, engine)
    res = parts[0]
    nothing = unscored_why(dict(res.summary["n_trajectories"]), res.settings.censoring, res.sums.n_censored)
    if args.json:
        print(json.dumps(_json(*parts) | ({"nothing_scored": nothing.json()} if nothing else {}), indent=2))
    elif nothing is None:
        _print(*parts)
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
    print(f"uncertainty: SE by run ({BY_RUN})")
    for note in sums.notes:
        print(f"note: {safe(say(note))}")


def _sample_verdicts(args, ds: Dataset, sums, settings, engine):
    """Verdicts on a seeded random sample of the runs (they need the step rows), and the words
    that say so; (None, reason) when the sample is off."""
    n_runs = sums.n_trajectories
    k = min(int(args.verdict_sample), n_runs)
    if k <= 0:
        return None, "not computed (--verdict-sample 0)"
    seed = DEFAULT_SEED if args.seed is None else args.seed
    # the dashboard's draw (io/sample.py): the same seed gives the same runs in both
    frame, _ = engine.sample(ds, k, seed, mapping=args.map_pairs)
    frame = apply_mapping(frame, args.map_pairs, ds.label)
    data = from_frame(frame, source=ds.label, percent=args.percent_names)
    try:
        out = verdicts(data, settings)
    except ValueError as exc:
        return None, f"not computed on the sample: {say(exc)}"
    if k == n_runs:
        return out, f"on all {n_runs:,} runs"
    return out, (f"on a random sample of {k:,} of {n_runs:,} runs (seed {seed}; --verdict-sample sets the size): "
                 "their numbers describe the sample")


def _ranks_words(metrics) -> str:
    if metrics.empty or bool(metrics["ranks_exact"].dropna().all()):  # (NaN: no forecast, nothing to bound)
        return "AUROC/AUPRC from exact counts on the distinct forecast values"
    au = float(np.nanmax(metrics["auroc_bound"].to_numpy(float)))
    ap = float(np.nanmax(metrics["auprc_bound"].to_numpy(float)))
    from tpsviz.engines.pooled import GRID  # (the engines load duckdb: imported when an engine is asked for)

    return (f"AUROC/AUPRC from counts on a grid of {GRID:,} equal cells of [0, 1] (too many distinct "
            f"forecasts to count exactly): error at most {au:.1e} (AUROC) and {ap:.1e} (AUPRC)")


def _json(res, ds: Dataset, why: str, ranks: str, verdict, sample_words: str) -> dict:
    sums, s, sk, m = res.sums, res.summary, res.skill, res.metrics
    ref_rate = float(sk["ref_rate"].iloc[0]) if len(sk) else None
    return {
        "settings": {**res.settings.describe(), "file": ds.label, "engine": sums.engine, "engine_reason": why,
                     "engine_words": res.engine_words, "se": _se_json(sums.n_trajectories),
                     "dataset": {"files": ds.n_files, "bytes": ds.n_bytes, "skipped": ds.skipped},
                     "n_trajectories": sums.n_trajectories, "n_steps": sums.n_steps,
                     "n_censored": sums.n_censored, "notes": say_all(sums.notes),
                     "reading": reading_json({"format": ds.fmt}),
                     "units": "TPS per trajectory in the score's units (nats for the log score); "
                              "higher is better, 0 is perfect",
                     "reference_rate": num(ref_rate),
                     "reference_rule": str(sk["ref_rule"].iloc[0]) if len(sk) else None,
                     "metrics": "auroc/auprc/tece_pooled pooled over (trajectory, step) pairs of complete "
                                "runs; *_final use each run's final forecast; T-ECE with 10 equal-width "
                                "bins; " + ranks,
                     "verdicts": sample_words, "intervals": res.ci_words},
        "predictors": {
            name: {
                "tps_mean": num(r.tps_mean), "tps_se": num(r.tps_se),
                "tps_ci_low": num(r.tps_ci_low), "tps_ci_high": num(r.tps_ci_high),
                "tps_step_mean": num(r.tps_step_mean), "n_trajectories": int(r.n_trajectories),
                "n_censored": int(r.n_censored), "n_clipped": int(r.n_clipped), "n_steps": int(r.n_steps),
                "n_missing": int(r.n_missing), "n_qz_fallback": int(r.n_qz_fallback),
                "tps_ref": num(sk.loc[name, "tps_ref"]), "skill": num(sk.loc[name, "skill"]),
                "skill_ci_low": num(sk.loc[name, "skill_ci_low"]),
                "skill_ci_high": num(sk.loc[name, "skill_ci_high"]),
                **{k: num(m.loc[name, k]) for k in ("auroc", "auprc", "auroc_final", "tece_pooled",
                                                      "tece_final", "auroc_bound", "auprc_bound")},
                "ranks_exact": bool(m.loc[name, "ranks_exact"]) if m.loc[name, "ranks_exact"] == m.loc[
                    name, "ranks_exact"] else None,
                "reliability": [{k: num(v) for k, v in b.items()}
                                for b in res.reliability[name].to_dict("records")] if name in res.reliability else None,
                "verdict": ({"label": verdict[name].label, "key": verdict[name].key,
                             "rules_label": verdict[name].rules_label or verdict[name].label,
                             "text": safe(verdict[name].text),
                             "numbers": verdict_numbers(verdict[name]), "sample": sample_words}
                            if verdict and name in verdict else None),
            }
            for name, r in s.iterrows()
        },
    }


def _print(res, ds: Dataset, why: str, ranks: str, verdict, sample_words: str) -> None:
    sums, s, sk, m, settings = res.sums, res.summary, res.skill, res.metrics, res.settings
    print_header(ds, sums, settings, res.engine_words)
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
        print(f"base-rate reference: constant forecast {float(sk['ref_rate'].iloc[0]):.4f} "
              f"({safe(sk['ref_rule'].iloc[0])}); skill = 1 - TPS/TPS_ref (> 0 beats the reference, 1 is "
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
