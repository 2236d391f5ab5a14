"""Command line: ``python -m tpsviz score PATH …``, ``compare PATH --baseline NAME`` and friends.

Bad input exits with code 2 and a one-paragraph message on stderr, never a traceback.
Every number printed here is computed by the core (``tps``, ``diagnostics``, ``compare``,
``calibrate``, ``audit``), the same functions the dashboard calls.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

from tpsviz.report.export import PER_TRAJECTORY_COLUMNS, write_safe_csv
from tpsviz.io.harness import FORMAT_CHOICES
from tpsviz.io.harness.runs import ReadOptions, parse_conf, parse_mapping, parse_treat
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.core.errors import LogFormatError
from tpsviz.io.loading import load
from tpsviz.core.schedules import parse_schedule, schedule_help
from tpsviz.core.schema import clean_text, show_id
from tpsviz.core.censoring import default_censoring
from tpsviz.core.tps import ScoreSettings, compute_tps, settings_words
from tpsviz.diagnostics.verdict import RULES as VERDICT_RULES

EXIT_BAD_INPUT = 2
MAX_N_BOOT = 20_000      # bootstrap replicates accepted by --n-boot
MIN_N_BOOT = 50          # fewer replicates make no 95% percentile interval (adversarial pass 7)
MAX_SEED = 2 ** 63 - 1

_DESCRIPTION = """\
tpsviz scores an agent's step-by-step success probabilities F_t with the Trajectory Proper
Score (TPS): TPS = sum_t w_t S_ab(F_t, Y), a strictly proper rule for the whole trace.
Scores are rewards: higher is better, 0 is perfect (nats per trajectory for the log score).
"""

_LOG_FORMAT = """\
log format (CSV, TSV, Parquet or JSON Lines; one row per (trajectory, step)):
  trajectory_id  required  run id
  step           required  integer >= 1 (0 allowed for a prior), unique within a run
  outcome        required  1/0 for finished runs, empty for censored runs
  censored       optional  true/false; default: censored <=> outcome empty
  q_z            optional  continuation success estimate for censored runs, in [0, 1]
  conf_<name>    >= 1      predictor <name>: probability of eventual success, in [0, 1]
  raw_<name>/unc_<name>    non-probability signals (higher = more/less confident)
  anything else            metadata
Nested JSON Lines (one run per line with a "steps" list) are read too.
"""


def _add_reading_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("reading logs (docs/harness.md)")
    g.add_argument("--format", choices=FORMAT_CHOICES, default="auto",
                   help="force the log's format (default: detected from the content)")
    g.add_argument("--success-threshold", type=float, default=None, metavar="T",
                   help="a recorded reward/score counts as success when >= T (default 1 - 1e-6)")
    g.add_argument("--treat", action="append", default=[], metavar="REASON=TREATMENT",
                   help="treatment of a termination reason: outcome, censored, failure or dropped "
                        "(e.g. --treat max_steps=failure); repeatable")
    g.add_argument("--scorer", default=None, help="Inspect AI: the scorer whose value is the outcome "
                                                  "(default: the first)")
    g.add_argument("--conf", action="append", default=[], metavar="NAME=FIELD",
                   help="a per-step forecast from a field of the agent's messages, e.g. "
                        "verbal=metadata.confidence (NAME may be raw_<x>/unc_<x> for a raw "
                        "signal); repeatable")
    g.add_argument("--forecasts", metavar="FILE", default=None,
                   help="a table trajectory_id, step, conf_*/raw_*/unc_* joined on (trajectory_id, step)")
    g.add_argument("--map", action="append", default=[], metavar="TARGET=COLUMN",
                   help="tables with other column names, e.g. trajectory_id=run,step=turn,"
                        "outcome=success,conf_verbal=p_success; repeatable")
    g.add_argument("--percent", action="append", default=[], metavar="NAME",
                   help="predictor(s) given in percent (0-100): divided by 100; repeatable or comma-separated")


def _read_options(args) -> ReadOptions:
    try:
        mapping = parse_mapping(args.map)
        percent = tuple(p.strip() for item in args.percent for p in str(item).split(",") if p.strip())
        if args.success_threshold is not None and not math.isfinite(args.success_threshold):
            raise ValueError("--success-threshold must be a finite number")
        return ReadOptions(fmt=None if args.format == "auto" else args.format,
                           success_threshold=args.success_threshold, treat=parse_treat(args.treat),
                           scorer=args.scorer, conf=parse_conf(args.conf), mapping=tuple(mapping),
                           percent=percent)
    except ValueError as exc:
        raise _Fail(str(exc)) from None


def _add_scoring_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="trajectory log: a table (.csv, .tsv, .parquet, .jsonl), a dataset (a "
                                "folder or quoted glob pattern of .parquet/.csv/.tsv files with the same "
                                "columns) or a harness log (tau2-bench results .json or folder, tau-bench "
                                ".json, Inspect AI .eval/.json)")
    p.add_argument("--alpha", type=float, default=0.0,
                   help="beta-family alpha > -1 (default 0; alpha=beta=0 is the log score)")
    p.add_argument("--beta", type=float, default=0.0,
                   help="beta-family beta > -1 (default 0; alpha=beta=1 is half the Brier score)")
    p.add_argument("--schedule", default="uniform",
                   help="weight schedule (default uniform); one of:\n" + schedule_help())
    p.add_argument("--censoring", choices=("complete", "simple", "exact", "upper"), default=None,
                   help="censored runs: complete = leave out, simple = q_Z 0, exact = q_Z from the "
                        "q_z column (simple where missing), upper = q_Z 1. Default: exact when "
                        "the log has q_z, else simple")
    p.add_argument("--eps", type=float, default=1e-6,
                   help="clip forecasts to [eps, 1-eps] before scoring (default 1e-6; 0 = off, "
                        "unbounded scores may then be -inf)")
    p.add_argument("--seed", type=int, default=None, help="bootstrap seed (default fixed)")
    p.add_argument("--n-boot", type=int, default=2000,
                   help=f"bootstrap replicates (default 2000; 0 = no CI, else {MIN_N_BOOT} to {MAX_N_BOOT:,})")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--recalibrate", choices=("platt", "isotonic", "beta"), default=None,
                   help="add a cross-fitted recalibration of every predictor and raw_/unc_ "
                        "signal as predictor <name>@<method> (fitted on complete runs, folds "
                        "grouped by trajectory; beta skips raw signals)")
    p.add_argument("--folds", type=int, default=5,
                   help="cross-fitting folds for --recalibrate (default 5)")
    p.add_argument("--rollouts", metavar="FILE", default=None,
                   help="Monte-Carlo rollouts table (trajectory_id, outcome 0/1 per rollout): "
                        "q_Z of censored runs = mean rollout outcome, used in exact mode "
                        "(the default censoring when this is given)")
    _add_reading_options(p)


_VERDICT_HELP = "verdict of each predictor (first rule that holds; docs/theory.md section 8):\n" + "\n".join(
    f"  {label}: {rule}" for label, rule in VERDICT_RULES)


def _add_engine_options(p: argparse.ArgumentParser, command: str) -> None:
    what = ("TPS, skill and metrics" if command == "score"
            else "the paired TPS differences; the paired AUROC needs the rows")
    p.add_argument("--engine", choices=("auto", "memory", "duckdb", "dask"), default="auto",
                   help="where the rows are scored: memory (read into memory: every report"
                        + (", verdicts included" if command == "score" else "") + "), duckdb (out of core "
                        f"over a Parquet/CSV file, folder or glob pattern: {what}; docs/architecture.md, "
                        "Engines), dask (the same as a map-reduce on a cluster, --scheduler) or auto (default: "
                        "duckdb above TPSVIZ_MAX_ROWS rows, else memory; says which)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="with --engine dask: an existing Dask scheduler (default: a local cluster of 2 "
                        "worker processes, started and stopped for this command)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m tpsviz``."""
    parser = argparse.ArgumentParser(
        prog="python -m tpsviz", description=_DESCRIPTION, epilog=_LOG_FORMAT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    score = sub.add_parser(
        "score", help="score every predictor of a log with TPS",
        description=_DESCRIPTION, epilog=_LOG_FORMAT + "\n\n" + _VERDICT_HELP,
        formatter_class=argparse.RawTextHelpFormatter)
    _add_scoring_options(score)
    _add_engine_options(score, "score")
    score.add_argument("--verdict-sample", type=int, default=20_000, metavar="N",
                       help="out of core: the verdicts need the step rows, so they are decided on a seeded "
                            "random sample of N runs (default 20,000; 0 = no verdicts)")
    score.add_argument("--per-trajectory", metavar="OUT.csv", default=None,
                       help="write per-trajectory TPS (trajectory_id, predictor, tps, censored, outcome: 1, 0 "
                            "or empty when censored); "
                            "complete-case mode leaves censored runs out")
    cmp_ = sub.add_parser(
        "compare", help="compare every predictor with a baseline: delta, SE, delta/SE",
        description="Paired comparison on the same runs, delta = predictor - baseline. TPS: "
                    "mean of per-run differences, SE = sd/sqrt(n); AUROC: paired trajectory "
                    "bootstrap over complete runs (pooled over steps).",
        epilog=_LOG_FORMAT, formatter_class=argparse.RawTextHelpFormatter)
    _add_scoring_options(cmp_)
    cmp_.add_argument("candidate", nargs="?", default=None, metavar="CANDIDATE",
                      help="a second log: compare the two logs (candidate - baseline log, PATH "
                           "being the baseline) on their common predictors")
    cmp_.add_argument("--baseline", metavar="NAME", default=None,
                      help="predictor every other one is compared with (may be <name>@<method> "
                           "with --recalibrate); not with --by or a second log")
    cmp_.add_argument("--by", metavar="COLUMN", default=None,
                      help="compare groups of runs given by a metadata column (model, agent, "
                           "prompt, task family): the leaderboard per group and each group minus "
                           "the base group, with SE")
    cmp_.add_argument("--base-group", metavar="GROUP", default=None,
                      help="with --by: the group the others are compared with (default: the first)")
    _add_engine_options(cmp_, "compare")
    cmp_.add_argument("--pair-on", metavar="COLUMN", default="auto",
                      help="pair runs by this task column where both groups ran the same tasks "
                           "(default auto: a column named task/task_id/task_name with at least 10 "
                           "common tasks; 'none' = unpaired)")
    defer = sub.add_parser(
        "defer", help="what handing off below a confidence threshold is worth: best tau, utility, risk-coverage",
        description="Policy: hand the task to a person at the first step with F < tau. For a utility table "
                    "(value of a success, costs of a failure, a hand-off and a step) the mean utility per run over "
                    "tau, the best tau with a bootstrap CI and the risk-coverage curve (docs/theory.md section 10). "
                    "The score options (alpha, beta, schedule) do not enter.",
        epilog=_LOG_FORMAT, formatter_class=argparse.RawTextHelpFormatter)
    _add_scoring_options(defer)
    from tpsviz.cli.defer import add_arguments as _defer_arguments

    _defer_arguments(defer)
    for command, module, help_ in _OUTCOME_COMMANDS:
        sp = sub.add_parser(command, help=help_, formatter_class=argparse.RawTextHelpFormatter)
        importlib.import_module(module).add_arguments(sp)
    demo = sub.add_parser("demo-data", help="regenerate the synthetic demo logs (byte-identical)")
    demo.add_argument("--out", default="demo_data", help="output folder (default demo_data)")
    return parser


# subcommands with their own module: (command, module with add_arguments(p) and run(args, name_fn, fail), help)
_OUTCOME_COMMANDS = (
    ("multiclass", "tpsviz.cli.multiclass", "score a log whose outcome is one of k labels (TPS-k: multi-class Brier or log)"),
    ("crps", "tpsviz.cli.continuous", "score a log whose outcome is a number (final reward, cost) with the CRPS"),
    ("monitor", "tpsviz.cli.monitor", "TPS and skill over time in sliding windows, with a degradation alarm"),
)


class _Fail(Exception):
    pass


def _name(s, limit: int | None = None) -> str:
    """Text from a log (id, column or file name) for the terminal: no control characters."""
    return clean_text(s, limit).replace("\n", " ").replace("\t", " ")


def _file_id(path: Path):
    """(device, inode) of a file, or None."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return None


def _input_files(path: Path) -> list[Path]:
    """The files an input path stands for (a tau2-bench folder: its index and simulations)."""
    if not path.is_dir():
        return [path]
    sims = path / "simulations"
    return [path / "results.json"] + (sorted(sims.glob("*.json")) if sims.is_dir() else [])


def _check_args(args) -> None:
    """Refuse option values before any file is read, naming the option."""
    if not (args.n_boot == 0 or MIN_N_BOOT <= args.n_boot <= MAX_N_BOOT):
        raise _Fail(f"--n-boot must be 0 (no bootstrap) or between {MIN_N_BOOT} and {MAX_N_BOOT:,}, got "
                    f"{args.n_boot}: the 2.5% and 97.5% percentiles of fewer replicates are not a 95% interval")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise _Fail(f"--seed must be an integer between 0 and 2^63 - 1, got {args.seed}")
    if not (math.isfinite(args.eps) and 0 <= args.eps < 0.5):
        raise _Fail(f"--eps must be in [0, 0.5), got {args.eps:g}")
    if not 2 <= args.folds <= 50:
        raise _Fail(f"--folds must be between 2 and 50, got {args.folds}")
    out = getattr(args, "per_trajectory", None)
    if out:
        target = Path(out)
        if target.is_dir():
            raise _Fail(f"--per-trajectory {_name(out)} is a folder; give a file name")
        if target.exists() and not target.is_file():  # a pipe would block the run; a device is no table
            raise _Fail(f"--per-trajectory {_name(out)} is not a regular file; give a file name")
        inputs = [args.path] + [p for p in (args.rollouts, getattr(args, "forecasts", None)) if p]
        real_out = os.path.realpath(out)
        out_id = _file_id(target) if target.exists() else None
        for src in inputs:
            real_src = os.path.realpath(src)
            inside = Path(src).is_dir() and os.path.commonpath([real_out, real_src]) == real_src
            files = _input_files(Path(src))
            same = out_id is not None and any(_file_id(f) == out_id for f in files)  # hard links too
            if real_out == real_src or inside or same:
                raise _Fail(f"--per-trajectory would write over (or into) the input {_name(src)}; the "
                            "input is never modified: choose another file name")


def _settings(args, data) -> ScoreSettings:
    return _settings_from(args, default_censoring(data) == "exact")


def _settings_from(args, has_qz: bool) -> ScoreSettings:
    """The settings of the options; censoring defaults to exact when the log has q_z."""
    try:
        schedule = parse_schedule(args.schedule)
        kwargs = dict(alpha=args.alpha, beta=args.beta, schedule=schedule,
                      censoring=args.censoring or ("exact" if has_qz else "simple"), eps=args.eps,
                      n_boot=args.n_boot)
        if args.seed is not None:
            kwargs["seed"] = args.seed
        return ScoreSettings(**kwargs)
    except ValueError as exc:
        raise _Fail(str(exc)) from None


def _num(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else (None if math.isnan(v) else ("-inf" if v < 0 else "inf"))


def _prepare(args):
    """Load the log, add recalibrated predictors, read rollouts, build the settings."""
    data, notes = _load_log(args, args.path)
    q_z = None
    if args.rollouts:
        q_z = _rollouts(args, data, notes)
    settings = _settings(args, data)
    return data, settings, q_z, notes


def _rollouts(args, data, notes: list):
    """q_Z of the censored runs from --rollouts (exact mode by default); notes say what was used."""
    from tpsviz.diagnostics.audit import rollout_qz_series

    q_z, info = rollout_qz_series(data, args.rollouts)
    if args.censoring is None:
        args.censoring = "exact"
    notes.append(f"rollouts: q_Z estimated for {info['n_with_rollouts']} of "
                 f"{info['n_censored']} censored runs")
    if info["censored_without"]:
        notes.append(f"rollouts: {len(info['censored_without'])} censored runs have no "
                     "rollouts and are scored with q_Z = 0")
    if info["unknown_ids"]:
        notes.append(f"rollouts: {len(info['unknown_ids'])} trajectory id(s) not in the log "
                     f"were ignored (e.g. {', '.join(show_id(i) for i in info['unknown_ids'][:3])})")
    if args.censoring != "exact":
        notes.append(f"rollouts: not used, censoring is {args.censoring} (use --censoring "
                     "exact)")
    return q_z


def _load_log(args, path):
    """One log with its recalibrated predictors (--recalibrate), and the notes of the loading."""
    data = load(path, options=_read_options(args), forecasts=args.forecasts)
    if not data.predictors and not args.recalibrate:
        raise _Fail(f"{_name(data.source)} has no probability column, only raw signals "
                    f"({', '.join(_name(s, 40) for s in data.signals)}): add --recalibrate platt (or "
                    "isotonic) to score them as cross-fitted probabilities <name>@<method>")
    if args.schedule.strip().lower() == "column" and "weight" not in data.steps:
        raise _Fail("schedule 'column' needs a 'weight' column in the log; this file has none")
    notes = []
    if args.recalibrate:
        from tpsviz.diagnostics.calibrate import add_all_recalibrated

        before = list(data.notes)
        try:
            data, reports = add_all_recalibrated(data, args.recalibrate, folds=args.folds,
                                                 seed=args.seed if args.seed is not None
                                                 else DEFAULT_SEED)
        except ValueError as exc:
            raise _Fail(str(exc)) from None
        added = [p for p in data.predictors if p.endswith(f"@{args.recalibrate}")]
        if not data.predictors:
            why = "; ".join(f"{_name(s, 40)}: {_name(r, 200)}" for s, r in reports.items() if isinstance(r, str))
            raise _Fail(f"--recalibrate {args.recalibrate} gave no predictor to score"
                        + (f" ({why})" if why else "") + "; try another method or fewer --folds")
        data.notes = before + [  # one line instead of one note per recalibrated predictor
            f"added {len(added)} predictors by cross-fitted {args.recalibrate} recalibration "
            f"({args.folds} folds by trajectory, fitted on complete runs): {', '.join(added)}"]
        for src, rep in reports.items():
            if isinstance(rep, str):
                notes.append(f"recalibration of {src} {rep}")
    return data, notes


def _engine_for(args):
    """(engine, why, dataset) of ``--engine`` for the command's log (``cli_engine.choose_engine``);
    sets ``args.map_pairs`` and ``args.percent_names`` from the reading options."""
    from tpsviz.cli.engine import choose_engine
    from tpsviz.io.files import limits_from_env

    options = _read_options(args)
    args.map_pairs, args.percent_names = options.mapping, options.percent
    return choose_engine(args, limits_from_env())


def _score(args) -> int:
    from tpsviz.diagnostics.caveats import caveats
    from tpsviz.diagnostics.leaderboard import metric_table, skill_table
    from tpsviz.diagnostics.updating import excess_movement
    from tpsviz.diagnostics.verdict import verdicts

    from tpsviz.cli.engine import score_out_of_core

    _check_args(args)
    engine, why, ds = _engine_for(args)
    if engine in ("duckdb", "dask"):
        return score_out_of_core(args, ds, why, engine)
    data, settings, q_z, notes = _prepare(args)
    try:
        result = compute_tps(data, settings, q_z=q_z)
        metrics = metric_table(data, settings, n_bins=10, n_boot=0)
        skill = skill_table(data, settings, q_z=q_z, n_boot=max(settings.n_boot, 200),
                            result=result)
        verdict = verdicts(data, settings, q_z=q_z, skill=skill)
        warn = caveats(data, settings, result.summary, skill)
        moves = excess_movement(data, list(result.summary.index))
    except ValueError as exc:
        raise _Fail(str(exc)) from None
    if args.per_trajectory:
        out = result.per_trajectory.assign(  # (traj: the run's row in data.trajectories)
            outcome=data.trajectories["outcome"].to_numpy(dtype=float)[result.per_trajectory["traj"].to_numpy()])
        write_safe_csv(out[PER_TRAJECTORY_COLUMNS], args.per_trajectory)
    s = result.summary
    ref_rate = float(skill["ref_rate"].iloc[0]) if len(skill) else None
    ref_rule = str(skill["ref_rule"].iloc[0]) if len(skill) else None
    if args.json:
        obj = {
            "settings": {**settings.describe(), "file": data.source, "engine": "memory", "engine_reason": why,
                         "n_trajectories": data.n_trajectories, "n_steps": data.n_steps,
                         "n_censored": data.n_censored, "notes": data.notes + notes,
                         "reading": reading_json(data.reading),
                         "units": "TPS per trajectory in the score's units (nats for the log "
                                  "score); higher is better, 0 is perfect",
                         "reference_rate": _num(ref_rate), "reference_rule": ref_rule,
                         "metrics": "auroc/auprc/tece_pooled pooled over (trajectory, step) "
                                    "pairs of complete runs; *_final use each run's final "
                                    "forecast; T-ECE with 10 equal-width bins; skill = 1 - "
                                    "TPS/TPS_ref against the constant reference rate",
                         "missing": "a null value is explained in the predictor's 'why_null'",
                         "excess_movement": "mean over runs of sum (F_t+1 - F_t)^2 minus the uncertainty "
                                            "resolved, F_1(1-F_1) - F_end(1-F_end) (a finished run ends at Y); "
                                            "0 for a truthful forecast, > 0 over-reacts, < 0 under-reacts; "
                                            "z = value / se across runs (docs/theory.md, Rational updating)",
                         "verdict_rules": [f"{label}: {rule}" for label, rule in VERDICT_RULES]},
            "warnings": [_name(w) for w in warn.all()],
            "predictors": {
                name: {
                    "tps_mean": _num(r.tps_mean), "tps_se": _num(r.tps_se),
                    "tps_ci_low": _num(r.tps_ci_low), "tps_ci_high": _num(r.tps_ci_high),
                    "tps_step_mean": _num(r.tps_step_mean),
                    "n_trajectories": int(r.n_trajectories), "n_censored": int(r.n_censored),
                    "n_clipped": int(r.n_clipped), "n_steps": int(r.n_steps),
                    "n_missing": int(r.n_missing), "n_qz_fallback": int(r.n_qz_fallback),
                    "tps_ref": _num(skill.loc[name, "tps_ref"]),
                    "skill": _num(skill.loc[name, "skill"]),
                    **{k: _num(metrics.loc[name, k]) if k in metrics else None
                       for k in ("auroc", "auprc", "auroc_final", "tece_pooled", "tece_final")},
                    "why_null": _why_missing(r, settings, skill.loc[name], metrics.loc[name]),
                    "verdict": {"label": verdict[name].label, "text": _name(verdict[name].text),
                                "numbers": _verdict_numbers(verdict[name])},
                    "excess_movement": {k: _num(moves.loc[name, k]) for k in ("value", "se", "z")}
                    | {"n_runs": int(moves.loc[name, "n_runs"])},
                    "warnings": [_name(w) for w in warn.predictors[name]],
                }
                for name, r in s.iterrows()
            },
        }
        print(json.dumps(obj, indent=2))
        return 0
    _print_header(data, settings, notes, engine=why)
    pct = int(round(settings.level * 100))
    nw = _name_width(s.index)
    print()
    print("verdicts (rules: python -m tpsviz score --help, docs/theory.md section 8)")
    for name in s.index:
        print(f"  {_name(verdict[name].text)}")
    for w in warn.log:
        print(f"warning: {_name(w)}")
    print()
    order = print_tps_table(s, pct, nw)
    extra = s[(s.n_qz_fallback > 0) | (s.n_no_forecast > 0) | (s.n_missing > 0)]
    for name, r in extra.iterrows():
        print(f"note: {_name(name)}: {int(r.n_missing)} steps without forecast, "
              f"{int(r.n_no_forecast)} runs without any forecast (left out), "
              f"{int(r.n_qz_fallback)} censored runs scored with q_Z = 0 for want of q_z")
    print("per step = sum of TPS / sum of weights (a display normalisation)")
    print()
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
    for name in order:
        m = metrics.loc[name]
        k = skill.loc[name]
        print(f"{_name(name, nw):<{nw}} {_fmt(k.tps_ref, 9, 3)} {_fmt(k.skill, 8, 3)} "
              f"{_fmt(m.auroc, 7, 3)} {_fmt(m.auprc, 7, 3)} {_fmt(m.auroc_final, 9, 3)} "
              f"{_fmt(m.tece_pooled, 7, 3)} {_fmt(m.tece_final, 9, 3)}")
    why = {name: _why_missing(s.loc[name], settings, skill.loc[name], metrics.loc[name])
           for name in order}
    grouped: dict = {}
    for name, reasons in why.items():
        for field_, reason in reasons.items():
            grouped.setdefault((field_, reason), []).append(name)
    if grouped:
        print()
    for (field_, reason), names in grouped.items():
        who = "every predictor" if len(names) == len(why) > 1 else ", ".join(
            _name(n, 40) for n in names)
        print(f"n/a: {field_} of {who}: {reason}")
    print()
    print("rational updating: excess movement per run = sum (F_t+1 - F_t)^2 - [F_1(1-F_1) - F_end(1-F_end)]; "
          "0 if truthful, > 0 over-reacts, < 0 under-reacts (a constant forecast passes: this checks how F "
          "moves, TPS and skill how much it knows)")
    for name in order:
        mv = moves.loc[name]
        value = f"{mv.value:+9.4f}" if np.isfinite(mv.value) else f"{'n/a':>9}"
        se = f"{mv.se:.4f}" if np.isfinite(mv.se) else "n/a (fewer than 2 runs)"
        z = f"{mv.z:+6.1f}" if np.isfinite(mv.z) else "   n/a"
        print(f"  {_name(name, nw):<{nw}} {value} ± {se}  z = {z}")
    pred_warn = [w for name in order for w in warn.predictors[name]]
    if pred_warn:
        print()
    for w in pred_warn:
        print(f"warning: {_name(w)}")
    return 0


def print_tps_table(s, pct: int, nw: int, count_width: int = 6):
    """The TPS table (best first); returns the predictors in that order."""
    print("TPS per trajectory (higher is better, 0 is perfect)")
    cw = count_width
    header = (f"{'predictor':<{nw}} {'mean':>10} {'± SE':>8} {f'{pct}% CI':>21} {'per step':>9} "
              f"{'runs':>{cw}} {'cens':>{cw - 1}} {'clip':>{cw - 1}}")
    print(header)
    print("-" * len(header))
    order = s["tps_mean"].fillna(-np.inf).sort_values(ascending=False, kind="stable").index
    for name in order:
        r = s.loc[name]
        ci = _interval(r.tps_ci_low, r.tps_ci_high, 21)
        print(f"{_name(name, nw):<{nw}} {_fmt(r.tps_mean, 10, 4)} {_fmt(r.tps_se, 8, 4)} {ci} "
              f"{_fmt(r.tps_step_mean, 9, 4)} {int(r.n_trajectories):>{cw}} {int(r.n_censored):>{cw - 1}} "
              f"{int(r.n_clipped):>{cw - 1}}")
    return order


def _verdict_numbers(v) -> dict:
    """The statistics behind a verdict, for JSON (NaN -> null)."""
    d = v.to_dict()
    return {k: d[k] for k in ("n_runs", "n_success", "n_failure", "mean_forecast",
                              "success_rate", "run_rate", "bias", "bias_se", "slope",
                              "slope_se", "mcb", "mcb_p", "dsc", "dsc_p", "skill", "skill_se",
                              "ref_rate", "rule")}


def _name_width(names) -> int:
    """Width of the predictor column: the longest name (so `x` and `x@platt` never look alike),
    between 20 and 48 characters."""
    return max(20, min(48, max((len(_name(n)) for n in names), default=0)))


def _why_missing(r, settings, k, m) -> dict:
    """Why a value of a predictor's row is not a finite number (field -> reason), so no result
    is ever a bare ``nan``."""
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


def _interval(lo, hi, width: int) -> str:
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{'n/a':>{width}}"
    return f"{'[' + _short(lo, 3) + ', ' + _short(hi, 3) + ']':>{width}}"


def _short(v: float, digits: int) -> str:
    """A number in fixed notation, or in scientific notation when fixed would show 0."""
    if v != 0 and abs(v) < 0.5 * 10 ** -digits:
        return f"{v:.{max(digits - 1, 1)}e}"
    return f"{v:.{digits}f}"


def _fmt(v, width: int, digits: int) -> str:
    v = float(v)
    if math.isnan(v):
        return f"{'n/a':>{width}}"
    if math.isinf(v):
        return f"{'-inf' if v < 0 else 'inf':>{width}}"
    return f"{_short(v, digits):>{width}}"


def _print_header(data, settings, notes, engine: str | None = None) -> None:
    v = settings.schedule.verdict
    print(f"{_name(data.source)}: {data.n_trajectories} trajectories, {data.n_steps} steps, "
          f"{data.n_censored} censored")
    if engine:
        print(f"engine: memory ({_name(engine)})")
    _print_reading(data.reading)
    w = settings_words(settings)
    print(f"score: {w['score']}, {w['unit']}; {w['direction']}")
    print(f"schedule: {w['schedule']} -> {w['schedule_status']}")
    if not v.is_strictly_proper:
        print(f"  note: {w['schedule_reason']}")
    print(f"censoring: {w['censoring']}; eps = {w['eps']}")
    for note in data.notes + notes:
        print(f"note: {_name(note)}")


def _print_reading(reading: dict) -> None:
    """How a harness log was read: the treatment table with counts, and forecast sources."""
    if "treatment" not in reading:
        return
    print(f"read as {reading['format']}: {reading['runs_read']} runs read, {reading['runs_kept']} kept")
    print(f"  {'termination reason':<26} {'treatment':<10} {'runs':>6}")
    for row in reading["treatment"]:
        mark = "" if row["default"] else "  (set by --treat)"
        print(f"  {_name(row['reason'], 26):<26} {row['treatment']:<10} {row['runs']:>6}{mark}")
    for col, src in reading.get("forecasts", {}).items():
        print(f"  forecast {_name(col)}: {_name(src)}")


def reading_json(reading: dict) -> dict:
    """The reading record for --json (plain values)."""
    return {k: v for k, v in reading.items() if k not in ("notes", "dropped_ids")}


def _compare(args) -> int:
    from tpsviz.diagnostics.compare import compare

    _check_args(args)
    if args.by is not None or args.candidate is not None:
        if args.engine in ("duckdb", "dask"):
            raise _Fail(f"--engine {args.engine}: out of core, compare takes --baseline NAME (predictors on the "
                        "same runs); groups of runs (--by) and a second log are compared in memory "
                        "(--engine memory, on logs within TPSVIZ_MAX_ROWS)")
        return _compare_groups(args)
    if args.baseline is None:
        raise _Fail("compare needs --baseline NAME (a predictor), --by COLUMN (groups of runs) or "
                    "a second log (compare BASELINE.csv CANDIDATE.csv)")
    from tpsviz.cli.engine import compare_out_of_core

    engine, why, ds = _engine_for(args)
    if engine in ("duckdb", "dask"):
        return compare_out_of_core(args, ds, why, engine)
    data, settings, q_z, notes = _prepare(args)
    if args.baseline not in data.predictors:
        raise _Fail(f"unknown baseline {_name(args.baseline)!r}: the log's predictors are "
                    f"{', '.join(_name(p, 40) for p in data.predictors)}")
    try:
        table = compare(data, settings, baseline=args.baseline, q_z=q_z, metrics=("auroc",))
    except ValueError as exc:
        raise _Fail(str(exc)) from None
    if args.json:
        obj = {
            "baseline": args.baseline,
            "settings": {**settings.describe(), "file": data.source,
                         "n_trajectories": data.n_trajectories, "n_censored": data.n_censored,
                         "notes": data.notes + notes, "reading": reading_json(data.reading),
                         "definition": "delta = predictor - baseline on the same runs; TPS: "
                                       "mean of per-run differences, SE = sd/sqrt(n); AUROC "
                                       "pooled over steps of complete runs, SE from a paired "
                                       "trajectory bootstrap; z = delta/SE"},
            "predictors": {
                name: {k: _num(r[k]) for k in ("tps_delta", "tps_se", "tps_z", "auroc_delta",
                                                 "auroc_se", "auroc_z")}
                | {"n_runs": int(r["n_runs"])}
                for name, r in table.iterrows()
            },
        }
        print(json.dumps(obj, indent=2))
        return 0
    _print_header(data, settings, notes)
    print()
    print(f"paired comparison with baseline {args.baseline!r}: delta = predictor - baseline "
          "(TPS: higher is better; AUROC: complete runs, paired trajectory bootstrap with "
          f"{settings.n_boot} replicates)")
    nw = _name_width(table.index)
    header = (f"{'predictor':<{nw}} {'TPS delta':>10} {'SE':>8} {'delta/SE':>9}   "
              f"{'AUROC delta':>11} {'SE':>8} {'delta/SE':>9} {'runs':>6}")
    print(header)
    print("-" * len(header))
    for name, r in table.sort_values("tps_delta", ascending=False).iterrows():
        print(f"{_name(name, nw):<{nw}} {_fmt(r.tps_delta, 10, 4)} {_fmt(r.tps_se, 8, 4)} "
              f"{_fmt(r.tps_z, 9, 2)}   {_fmt(r.auroc_delta, 11, 4)} {_fmt(r.auroc_se, 8, 4)} "
              f"{_fmt(r.auroc_z, 9, 2)} {int(r.n_runs):>6}")
    return 0


def _group_data(args):
    """(data, settings, q_z, notes, by) of a group comparison: one log split --by a column, or two
    logs combined with a column 'log' (tpsviz.diagnostics.groups.combine_logs)."""
    from tpsviz.diagnostics.combine import combine_logs, free_column

    if args.baseline is not None:
        raise _Fail("--baseline compares predictors; with --by or a second log every predictor is "
                    "compared between groups of runs")
    if args.candidate is None:
        data, settings, q_z, notes = _prepare(args)
        return data, settings, q_z, notes, args.by
    if args.by is not None:
        raise _Fail("give either --by COLUMN or a second log, not both")
    if args.rollouts:
        raise _Fail("--rollouts refers to the runs of one log; it cannot be used with two logs")
    if args.per_trajectory if hasattr(args, "per_trajectory") else False:
        raise _Fail("--per-trajectory is not available with two logs")
    a, notes_a = _load_log(args, args.path)
    b, notes_b = _load_log(args, args.candidate)
    column = free_column(a, b)  # "log", or "log_2" … when a log has a column of that name
    try:
        data = combine_logs(a, b, column=column)
    except ValueError as exc:
        raise _Fail(str(exc)) from None
    notes = [f"baseline: {n}" for n in notes_a] + [f"candidate: {n}" for n in notes_b]
    return data, _settings(args, data), None, notes, column


def _compare_groups(args) -> int:
    from tpsviz.diagnostics.groups import default_base, difference_words, group_difference, group_table

    data, settings, q_z, notes, by = _group_data(args)
    pair_on = args.pair_on  # "none": unpaired (tpsviz.diagnostics.groups)
    try:
        table = group_table(data, by, settings, q_z=q_z)
        groups = list(dict.fromkeys(table.index.get_level_values("group")))
        base = (args.base_group if args.base_group is not None else
                "baseline" if args.candidate is not None else default_base(table))
        diffs = {g: group_difference(data, by, base, g, settings, q_z=q_z, pair_on=pair_on)
                 for g in groups if g != base}
    except ValueError as exc:
        raise _Fail(str(exc)) from None
    if args.json:
        print(json.dumps(_groups_json(data, settings, notes, by, base, table, diffs), indent=2))
        return 0
    _print_header(data, settings, notes)
    print()
    print(f"groups of {_name(by, 40)}: TPS per trajectory (higher is better) and skill against each "
          "group's own success rate")
    nw = max(_name_width(table.index.get_level_values("predictor")), 12)
    gw = min(max(len(_name(g, 30)) for g in groups), 30)
    header = (f"{'group':<{gw}} {'predictor':<{nw}} {'TPS':>10} {'± SE':>8} {'skill':>8} "
              f"{'± SE':>7} {'runs':>6} {'success':>8}")
    print(header)
    print("-" * len(header))
    for (g, name), r in table.iterrows():
        print(f"{_name(g, gw):<{gw}} {_name(name, nw):<{nw}} {_fmt(r.tps_mean, 10, 4)} "
              f"{_fmt(r.tps_se, 8, 4)} {_fmt(r.skill, 8, 3)} {_fmt(r.skill_se, 7, 3)} "
              f"{int(r.n_scored):>6} {_fmt(r.success_rate, 8, 3)}")
    small = table.attrs.get("small_groups") or {}
    if small:
        print(f"left out (fewer than 2 runs): {', '.join(f'{_name(g, 30)} ({n})' for g, n in small.items())}")
    for g, d in diffs.items():
        print()
        print(f"{_name(g, 40)} - {_name(base, 40)}: {_name(d.attrs['pairing'], 300)}")
        header = (f"{'predictor':<{nw}} {'TPS delta':>10} {'SE':>8} {'delta/SE':>9}   "
                  f"{'skill delta':>11} {'SE':>7} {'delta/SE':>9}")
        print(header)
        print("-" * len(header))
        for name, r in d.iterrows():
            print(f"{_name(name, nw):<{nw}} {_fmt(r.tps_delta, 10, 4)} {_fmt(r.tps_se, 8, 4)} "
                  f"{_fmt(r.tps_z, 9, 2)}   {_fmt(r.skill_delta, 11, 3)} {_fmt(r.skill_se, 7, 3)} "
                  f"{_fmt(r.skill_z, 9, 2)}")
        for name, r in d.iterrows():
            print(f"  {_name(name, nw)}: {_name(difference_words(r, base, g))}")
    return 0


def _groups_json(data, settings, notes, by, base, table, diffs) -> dict:
    from tpsviz.diagnostics.groups import why_missing

    def rec(r, keys):
        return {k: (_num(r[k]) if not isinstance(r[k], (str, bool, np.bool_)) else
                    (bool(r[k]) if isinstance(r[k], (bool, np.bool_)) else _name(r[k])))
                for k in keys}

    tkeys = ("n_runs", "n_complete", "n_censored", "success_rate", "n_scored", "tps_mean",
             "tps_se", "tps_ci_low", "tps_ci_high", "skill", "skill_se", "skill_ci_low",
             "skill_ci_high", "ref_rate")
    dkeys = ("tps_a", "tps_b", "tps_delta", "tps_se", "tps_z", "tps_ci_low", "tps_ci_high",
             "skill_a", "skill_b", "skill_delta", "skill_se", "skill_z", "skill_ci_low",
             "skill_ci_high", "paired", "n_pairs", "n_a", "n_b", "n_left_out", "n_no_task")
    groups: dict = {}
    for (g, name), r in table.iterrows():
        groups.setdefault(_name(g), {})[_name(name)] = rec(r, tkeys)
    return {
        "settings": {**settings.describe(), "file": _name(data.source),
                     "n_trajectories": data.n_trajectories, "notes": [_name(n) for n in
                                                                      data.notes + notes],
                     "by": _name(by), "base_group": _name(base),
                     "definition": "per group: mean TPS per run (SE = sd/sqrt(n)) and skill = 1 - "
                                   "TPS/TPS_ref against the group's own success rate; delta = group "
                                   "- base group, unpaired (SE = sqrt(se_a^2 + se_b^2)) or paired by "
                                   "task (SE = sd of task differences / sqrt(K))"},
        "groups": groups,
        "left_out_groups": {_name(g): int(n) for g, n in (table.attrs.get("small_groups") or {}).items()},
        "differences": {
            _name(g): {"pairing": _name(d.attrs["pairing"]),
                       "predictors": {_name(name): rec(r, dkeys) | {"why_null": {
                           k: _name(v) for k, v in why_missing(r, base, g).items()}}
                                      for name, r in d.iterrows()}}
            for g, d in diffs.items()},
    }


def _demo(args) -> int:
    from tpsviz.synthetic.demo import write_demo

    for path in write_demo(args.out):
        print(path)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        if args.command == "score":
            return _score(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "demo-data":
            return _demo(args)
        for command, module, _ in _OUTCOME_COMMANDS:
            if args.command == command:
                return importlib.import_module(module).run(args, _name, _Fail)
        if args.command == "defer":
            from tpsviz.cli.defer import run as _defer

            _check_args(args)
            data, settings, _, _ = _prepare(args)
            return _defer(args, data, settings, _name, _Fail)
    except (LogFormatError, _Fail, OSError) as exc:
        print(f"error: {clean_text(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("error: not enough memory for this log; lower TPSVIZ_MAX_ROWS or split the log",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug: say so in one line (TPSVIZ_DEBUG=1 shows the traceback)
        if os.environ.get("TPSVIZ_DEBUG"):
            raise
        print(f"error: unexpected failure ({type(exc).__name__}: {clean_text(exc, 300)}); this is a bug in "
              "tpsviz, please report it with the command you ran", file=sys.stderr)
        return 1
    parser.print_help()
    return EXIT_BAD_INPUT
