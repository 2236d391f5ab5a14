"""Command line: ``python -m tpsviz score PATH …`` and friends.

Bad input exits with code 2 and a one-paragraph message on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from .io import LogFormatError, load
from .schedules import parse_schedule, schedule_help
from .tps import CENSORING_LABELS, ScoreSettings, compute_tps, default_censoring

EXIT_BAD_INPUT = 2

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


def _add_scoring_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="trajectory log (.csv, .tsv, .parquet, .jsonl)")
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
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap replicates (default 2000)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m tpsviz``."""
    parser = argparse.ArgumentParser(
        prog="python -m tpsviz", description=_DESCRIPTION, epilog=_LOG_FORMAT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    score = sub.add_parser(
        "score", help="score every predictor of a log with TPS",
        description=_DESCRIPTION, epilog=_LOG_FORMAT,
        formatter_class=argparse.RawTextHelpFormatter)
    _add_scoring_options(score)
    score.add_argument("--per-trajectory", metavar="OUT.csv", default=None,
                       help="write per-trajectory TPS (trajectory_id, predictor, tps, censored); "
                            "complete-case mode leaves censored runs out")
    demo = sub.add_parser("demo-data", help="regenerate the synthetic demo logs (byte-identical)")
    demo.add_argument("--out", default="demo_data", help="output folder (default demo_data)")
    return parser


class _Fail(Exception):
    pass


def _settings(args, data) -> ScoreSettings:
    try:
        schedule = parse_schedule(args.schedule)
        kwargs = dict(alpha=args.alpha, beta=args.beta, schedule=schedule,
                      censoring=args.censoring or default_censoring(data), eps=args.eps,
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


def _score(args) -> int:
    data = load(args.path)
    if args.schedule.strip().lower() == "column" and "weight" not in data.steps:
        raise _Fail("schedule 'column' needs a 'weight' column in the log; this file has none")
    settings = _settings(args, data)
    try:
        result = compute_tps(data, settings)
    except ValueError as exc:
        raise _Fail(str(exc)) from None
    if args.per_trajectory:
        out = result.per_trajectory[["trajectory_id", "predictor", "tps", "censored"]]
        Path(args.per_trajectory).write_text(out.to_csv(index=False, lineterminator="\n"),
                                             encoding="utf-8")
    s = result.summary
    if args.json:
        obj = {
            "settings": {**settings.describe(), "file": data.source,
                         "n_trajectories": data.n_trajectories, "n_steps": data.n_steps,
                         "n_censored": data.n_censored, "notes": data.notes,
                         "units": "TPS per trajectory in the score's units (nats for the log "
                                  "score); higher is better, 0 is perfect"},
            "predictors": {
                name: {
                    "tps_mean": _num(r.tps_mean), "tps_se": _num(r.tps_se),
                    "tps_ci_low": _num(r.tps_ci_low), "tps_ci_high": _num(r.tps_ci_high),
                    "tps_step_mean": _num(r.tps_step_mean),
                    "n_trajectories": int(r.n_trajectories), "n_censored": int(r.n_censored),
                    "n_clipped": int(r.n_clipped), "n_steps": int(r.n_steps),
                    "n_missing": int(r.n_missing), "n_qz_fallback": int(r.n_qz_fallback),
                }
                for name, r in s.iterrows()
            },
        }
        print(json.dumps(obj, indent=2))
        return 0
    v = settings.schedule.verdict
    print(f"{data.source}: {data.n_trajectories} trajectories, {data.n_steps} steps, "
          f"{data.n_censored} censored")
    print(f"score: beta family alpha={settings.alpha:g}, beta={settings.beta:g}"
          + ("  (log score, nats)" if settings.alpha == 0 and settings.beta == 0 else ""))
    print(f"schedule: {settings.schedule.spec} ({settings.schedule.formula}) -> {v.status}")
    if not v.is_strictly_proper:
        print(f"  note: {v.reason}")
    print(f"censoring: {CENSORING_LABELS[settings.censoring]}; eps = {settings.eps:g}")
    for note in data.notes:
        print(f"note: {note}")
    pct = int(round(settings.level * 100))
    print()
    print("TPS per trajectory (higher is better, 0 is perfect)")
    header = (f"{'predictor':<20} {'mean':>10} {'± SE':>8} {f'{pct}% CI':>21} {'per step':>9} "
              f"{'runs':>6} {'cens':>5} {'clip':>5}")
    print(header)
    print("-" * len(header))
    for name, r in s.sort_values("tps_mean", ascending=False).iterrows():
        ci = f"[{r.tps_ci_low:.3f}, {r.tps_ci_high:.3f}]"
        print(f"{name:<20} {r.tps_mean:>10.4f} {r.tps_se:>8.4f} {ci:>21} {r.tps_step_mean:>9.4f} "
              f"{int(r.n_trajectories):>6} {int(r.n_censored):>5} {int(r.n_clipped):>5}")
    extra = s[(s.n_qz_fallback > 0) | (s.n_no_forecast > 0) | (s.n_missing > 0)]
    for name, r in extra.iterrows():
        print(f"note: {name}: {int(r.n_missing)} steps without forecast, {int(r.n_no_forecast)} runs "
              f"without any forecast (left out), {int(r.n_qz_fallback)} censored runs scored with "
              "q_Z = 0 for want of q_z")
    print("per step = sum of TPS / sum of weights (a display normalisation)")
    return 0


def _demo(args) -> int:
    from .synthetic import write_demo

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
        if args.command == "demo-data":
            return _demo(args)
    except LogFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except _Fail as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, MemoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug: say so in one line (TPSVIZ_DEBUG=1 shows the traceback)
        if os.environ.get("TPSVIZ_DEBUG"):
            raise
        print(f"error: unexpected failure ({type(exc).__name__}: {exc}); this is a bug in "
              "tpsviz, please report it with the command you ran", file=sys.stderr)
        return 1
    parser.print_help()
    return EXIT_BAD_INPUT
