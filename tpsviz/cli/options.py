"""The options the commands share, each spelt, typed and defaulted in one place, and the checks of
their values before any file is read.

A shared concept has one spelling on every command that has it: ``--n-boot``, ``--seed``,
``--level``, ``--schedule``, ``--censoring``, ``--json``, ``--engine``
(``tests/test_cli_options.py`` walks every parser). An older spelling that scripts may use stays
as a hidden alias (:func:`hidden_alias`, not in ``--help``); an option a command used to take but
that never entered its result is refused by name (:func:`refuse_options`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tpsviz.cli.common import Fail, safe
from tpsviz.cli.wording import CLI, say
from tpsviz.core.inference import INTERVALS
from tpsviz.core.schedules import schedule_help
from tpsviz.diagnostics.verdict import RULES as VERDICT_RULES
from tpsviz.evaluation.settings import MAX_N_BOOT, MIN_N_BOOT, check_settings
from tpsviz.io.harness import FORMAT_CHOICES

__all__ = ["DESCRIPTION", "LOG_FORMAT", "VERDICT_HELP", "ENGINES", "BINARY_CENSORING", "hidden_alias",
           "add_n_boot", "add_seed", "add_level", "add_schedule", "add_censoring", "add_json",
           "add_engine_options", "add_harness_options", "add_reading_options", "add_trace_options", "add_log_options", "add_rule_options",
           "add_scoring_options", "refuse_options", "refused_given", "flag", "check_numbers", "check_args",
           "add_references_option", "add_cluster_by", "add_interval"]

ENGINES = ("auto", "memory", "duckdb", "dask")
#: censoring modes of a binary log (a multi-class log takes the first three, docs/multiclass.md)
BINARY_CENSORING = ("complete", "simple", "exact", "upper")

DESCRIPTION = """\
tpsviz scores an agent's step-by-step success probabilities F_t with the Trajectory Proper
Score (TPS): TPS = sum_t w_t S_ab(F_t, Y), a strictly proper rule for the whole trace.
Scores are rewards: higher is better, 0 is perfect (nats per trajectory for the log score).
"""

LOG_FORMAT = """\
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

VERDICT_HELP = "verdict of each predictor (first rule that holds; docs/theory.md section 8):\n" + "\n".join(
    f"  {label}: {rule}" for label, rule in VERDICT_RULES)

PATH_HELP = ("trajectory log: a table (.csv, .tsv, .parquet, .jsonl), a dataset (a folder or quoted glob "
             "pattern of .parquet/.csv/.tsv files with the same columns) or a harness log (tau2-bench results "
             ".json or folder, tau-bench .json, Inspect AI .eval/.json) or traces (OTLP JSON, OpenInference "
             "spans, a Langfuse export)")


def hidden_alias(p: argparse.ArgumentParser, flag: str, dest: str, type_=str) -> None:
    """An older spelling of an option: parsed into the same ``dest``, left out of ``--help``.

    Parameters
    ----------
    p : ArgumentParser
    flag : str
        The old spelling, e.g. ``"--bootstrap"``.
    dest : str
        The attribute of the option it stands for, e.g. ``"n_boot"``.
    type_ : callable
        The option's type.
    """
    p.add_argument(flag, dest=dest, type=type_, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def add_n_boot(p, what: str = "bootstrap replicates over runs") -> None:
    """``--n-boot N`` (default 2000; 0 = none, else :data:`MIN_N_BOOT` to :data:`MAX_N_BOOT`)."""
    p.add_argument("--n-boot", type=int, default=2000, metavar="N",
                   help=f"{what} (default 2000; 0 = no CI, else {MIN_N_BOOT} to {MAX_N_BOOT:,})")


def add_seed(p, what: str = "bootstrap seed") -> None:
    """``--seed S`` (default None: the fixed seed :data:`tpsviz.core.inference.DEFAULT_SEED`)."""
    p.add_argument("--seed", type=int, default=None, help=f"{what} (default fixed)")


def add_level(p) -> None:
    """``--level L``, the confidence level of every interval (default 0.95)."""
    p.add_argument("--level", type=float, default=0.95, help="confidence level of intervals and tests (default 0.95)")


def add_schedule(p, extra: str = "") -> None:
    """``--schedule SPEC`` (default uniform), with the list of schedules in the help."""
    p.add_argument("--schedule", default="uniform", metavar="SPEC",
                   help=f"weight schedule (default uniform{extra}); one of:\n" + schedule_help())


def add_cluster_by(p) -> None:
    """``--cluster-by {auto,run,COLUMN}``: the unit of every SE and bootstrap (docs/theory.md §6.1)."""
    p.add_argument("--cluster-by", metavar="{auto,run,COLUMN}", default="auto",
                   help="the unit of SEs and bootstrap CIs: auto (default: the task column, e.g. task_id or an "
                        "Inspect sample id, when runs repeat tasks; else the run), run, or a run-level column. "
                        "Runs of one task are not independent: an SE by run is then too small (docs/theory.md "
                        "section 6.1). Out of core, SEs are by run")


def add_interval(p) -> None:
    """``--interval {studentized,percentile}``: the bootstrap CI of a mean (docs/theory.md §6.1)."""
    p.add_argument("--interval", choices=INTERVALS, default="studentized",
                   help="the bootstrap CI of a mean TPS and of differences: studentized (default, the bootstrap-t: "
                        "it follows the skew of a mean a few long runs carry; docs/validation.md) or percentile "
                        "(the out-of-core engines' kind)")


def add_censoring(p, choices=BINARY_CENSORING, words: str = "") -> None:
    """``--censoring MODE`` (default None: decided from the log, exact when it has q_z)."""
    p.add_argument("--censoring", choices=choices, default=None, help=words)


def add_json(p) -> None:
    """``--json``: one JSON object instead of text."""
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def add_engine_options(p, command: str) -> None:
    """``--engine``, ``--scheduler`` and, where verdicts are reported, ``--verdict-sample``."""
    what = ("TPS, skill and metrics" if command != "compare"
            else "the paired TPS differences; the paired AUROC needs the rows")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="where the rows are scored: memory (read into memory: every report"
                        + (", verdicts included" if command != "compare" else "") + "), duckdb (out of core "
                        f"over a Parquet/CSV file, folder or glob pattern: {what}; docs/architecture.md, "
                        "Engines), dask (the same as a map-reduce on a cluster, --scheduler) or auto (default: "
                        "duckdb above TPSVIZ_MAX_ROWS rows, else memory; says which)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="with --engine dask: an existing Dask scheduler (default: a local cluster of 2 "
                        "worker processes, started and stopped for this command)")
    if command != "compare":
        p.add_argument("--verdict-sample", type=int, default=20_000, metavar="N",
                       help="out of core: the verdicts need the step rows, so they are decided on a seeded "
                            "random sample of N runs (default 20,000; 0 = no verdicts)")


def add_references_option(p) -> None:
    """``--references``: add the reference forecasters computed from the log's outcomes alone."""
    p.add_argument("--references", action="store_true",
                   help="add the reference forecasters ref:step, ref:task and ref:task+step, computed from the "
                        "other runs' outcomes alone (docs/forecasts.md section 1; --folds and --seed set their "
                        "folds); every verdict then says whether the predictor beats the best of them. A log "
                        "without any forecast always gets them")


def add_harness_options(g) -> None:
    """How a harness log is read (an argument group or a parser): ``--format``,
    ``--success-threshold``, ``--treat``, ``--scorer``."""
    g.add_argument("--format", choices=FORMAT_CHOICES, default="auto",
                   help="force the log's format (default: detected from the content)")
    g.add_argument("--success-threshold", type=float, default=None, metavar="T",
                   help="a recorded reward/score counts as success when >= T (default 1 - 1e-6)")
    g.add_argument("--treat", action="append", default=[], metavar="REASON=TREATMENT",
                   help="treatment of a termination reason: outcome, censored, failure or dropped "
                        "(e.g. --treat max_steps=failure); repeatable")
    g.add_argument("--scorer", default=None, help="Inspect AI: the scorer whose value is the outcome "
                                                  "(default: the first)")


def add_reading_options(p: argparse.ArgumentParser) -> None:
    """How a log is read: format, harness treatments, forecast sources, column mapping, percent."""
    g = p.add_argument_group("reading logs (docs/harness.md)")
    add_harness_options(g)
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
    add_trace_options(p)


def add_trace_options(p: argparse.ArgumentParser) -> None:
    """How a trace file (OTLP, OpenInference, Langfuse) maps onto runs, steps and outcomes:
    ``--run-by``, ``--step-spans``, ``--outcome``, ``--outcomes``, ``--censor-when``
    (docs/traces.md)."""
    g = p.add_argument_group("reading traces: OTLP, OpenInference, Langfuse (docs/traces.md)")
    g.add_argument("--run-by", metavar="ATTRIBUTE", default=None,
                   help="group traces into runs by this attribute, e.g. gen_ai.conversation.id or session.id "
                        "(default: one run per trace)")
    g.add_argument("--step-spans", action="append", default=[], metavar="RULE",
                   help="the spans that are steps: name=PATTERN or ATTRIBUTE=VALUE, any of them (default: the "
                        "model calls; tool spans are never steps); repeatable or comma-separated")
    g.add_argument("--outcome", metavar="NAME", default=None,
                   help="the score, evaluation or attribute holding a run's outcome: 0/1, true/false, or a number "
                        "(success when >= --success-threshold)")
    g.add_argument("--outcomes", metavar="FILE", default=None,
                   help="a table trajectory_id, outcome[, censored] with the runs' outcomes")
    g.add_argument("--censor-when", action="append", default=[], metavar="ATTRIBUTE=VALUE",
                   help="a run without an outcome is censored when a span or trace has this attribute value "
                        "(e.g. agent.stop_reason=max_turns); other runs without one are dropped, and counted")


def add_log_options(p: argparse.ArgumentParser) -> None:
    """A binary log and what every command reading one takes: the path, the bootstrap, the level,
    ``--json``, recalibration and the reading options."""
    p.add_argument("path", help=PATH_HELP)
    add_seed(p)
    add_n_boot(p)
    add_level(p)
    add_json(p)
    p.add_argument("--recalibrate", choices=("platt", "isotonic", "beta", "none"), default=None,
                   help="add a cross-fitted recalibration of every predictor and raw_/unc_ "
                        "signal as predictor <name>@<method> (fitted on the runs the --censoring mode "
                        "scores, with its labels; folds grouped by trajectory; beta skips raw signals); "
                        "none: no recalibration, and raw signals of a log without probabilities are not "
                        "converted by default (its references are still scored)")
    p.add_argument("--folds", type=int, default=5,
                   help="cross-fitting folds for --recalibrate (default 5)")
    add_reading_options(p)


#: the options of the score's rule (:func:`add_rule_options`), with their attributes
RULE_OPTIONS = (("--alpha", "alpha"), ("--beta", "beta"), ("--schedule", "schedule"),
                ("--censoring", "censoring"), ("--eps", "eps"), ("--rollouts", "rollouts"), ("--q-z", "q_z"))


def add_rule_options(p: argparse.ArgumentParser) -> None:
    """The scoring rule of a binary log: beta family, schedule, censoring, clipping, rollouts."""
    p.add_argument("--alpha", type=float, default=0.0,
                   help="beta-family alpha > -1 (default 0; alpha=beta=0 is the log score)")
    p.add_argument("--beta", type=float, default=0.0,
                   help="beta-family beta > -1 (default 0; alpha=beta=1 is half the Brier score)")
    add_schedule(p)
    add_censoring(p, words="censored runs: complete = leave out, simple = q_Z 0, exact = q_Z from the "
                           "q_z column, --rollouts or --q-z (every censored run needs one), upper = q_Z 1. "
                           "Default: exact when every censored run has a q_Z, else simple")
    p.add_argument("--eps", type=float, default=1e-6,
                   help="clip forecasts to [eps, 1-eps] before scoring (default 1e-6; 0 = off, "
                        "unbounded scores may then be -inf)")
    p.add_argument("--rollouts", metavar="FILE", default=None,
                   help="Monte-Carlo rollouts table (trajectory_id, outcome 0/1 per rollout): "
                        "q_Z of censored runs = mean rollout outcome, used in exact mode "
                        "(the default censoring when this is given)")
    p.add_argument("--q-z", dest="q_z", type=float, metavar="VALUE", default=None,
                   help="one q_Z in [0, 1] for every censored run, used in exact mode (the default "
                        "censoring when this is given); not with --rollouts")


def add_scoring_options(p: argparse.ArgumentParser) -> None:
    """Everything that scores a binary log: :func:`add_log_options`, :func:`add_rule_options` and
    ``--cluster-by`` and ``--interval``."""
    add_rule_options(p)
    add_log_options(p)
    add_cluster_by(p)
    add_interval(p)


def refuse_options(p: argparse.ArgumentParser, options) -> None:
    """Options a command does not take, parsed (hidden) so that :func:`refused_given` can name them.

    Parameters
    ----------
    p : ArgumentParser
    options : iterable of (flag, dest)
    """
    for flag, dest in options:
        p.add_argument(flag, dest=f"refused_{dest}", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def refused_given(args, options) -> list[str]:
    """The flags of :func:`refuse_options` given on the command line.

    Parameters
    ----------
    args : Namespace
    options : iterable of (flag, dest)

    Returns
    -------
    list of str
    """
    return [flag for flag, dest in options if hasattr(args, f"refused_{dest}")]


def flag(name: str, value=None) -> str:
    """How a message names a setting on the command line (the command line's wording of a setting marker).

    Parameters
    ----------
    name : str
        The setting, e.g. ``n_boot``.
    value : optional
        A value to suggest.

    Returns
    -------
    str
        ``--n-boot``, or ``--recalibrate platt`` with a value.
    """
    return CLI.name(name, None if value is None else str(value))


def check_numbers(args) -> None:
    """Refuse values of the shared numeric options a command has, naming the option
    (:func:`tpsviz.evaluation.settings.check_settings`).

    Parameters
    ----------
    args : Namespace
        ``n_boot``, ``seed``, ``eps``, ``folds`` and ``level`` are checked where present.

    Raises
    ------
    Fail
    """
    try:
        check_settings(getattr(args, "n_boot", 0), getattr(args, "seed", None), getattr(args, "eps", 0.0),
                       getattr(args, "folds", 5), getattr(args, "level", 0.95))
    except ValueError as exc:
        raise Fail(say(exc)) from None


def check_args(args) -> None:
    """Refuse option values of a binary log's command before any file is read, naming the option.

    Parameters
    ----------
    args : Namespace
        The options of :func:`add_log_options` (and of :func:`add_rule_options`, and
        ``per_trajectory``, where the command has them).

    Raises
    ------
    Fail
    """
    check_numbers(args)
    out = getattr(args, "per_trajectory", None)
    if out:
        _check_output(args, out)


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


def _check_output(args, out: str) -> None:
    """``--per-trajectory OUT``: a regular file (or a new one) that is none of the inputs."""
    target = Path(out)
    if target.is_dir():
        raise Fail(f"--per-trajectory {safe(out)} is a folder; give a file name")
    if target.exists() and not target.is_file():  # a pipe would block the run; a device is no table
        raise Fail(f"--per-trajectory {safe(out)} is not a regular file; give a file name")
    inputs = [args.path] + [p for p in (getattr(args, "rollouts", None), getattr(args, "forecasts", None)) if p]
    real_out = os.path.realpath(out)
    out_id = _file_id(target) if target.exists() else None
    for src in inputs:
        real_src = os.path.realpath(src)
        inside = Path(src).is_dir() and os.path.commonpath([real_out, real_src]) == real_src
        files = _input_files(Path(src))
        same = out_id is not None and any(_file_id(f) == out_id for f in files)  # hard links too
        if real_out == real_src or inside or same:
            raise Fail(f"--per-trajectory would write over (or into) the input {safe(src)}; the "
                       "input is never modified: choose another file name")
