"""``tpsviz multiclass PATH``: TPS-k of a log whose outcome is one of k labels (tpsviz.outcomes.multiclass).

Prints a header (file, labels, runs, censored, rule, schedule with its propriety verdict,
censoring in words), one row per predictor best first (TPS-k with its interval, runs, steps,
missing, excluded) and per predictor a one-vs-rest reliability line; ``--json`` gives the same
numbers and the whole one-vs-rest tables (never NaN: null).
"""

from __future__ import annotations

import json
import math

from tpsviz.cli.common import Fail, safe, say, say_all
from tpsviz.cli.options import (add_censoring, add_json, add_level, add_n_boot, add_schedule, add_seed,
                                check_numbers, hidden_alias)
from tpsviz.core.formatting import json_number
from tpsviz.core.inference import DEFAULT_SEED, summary_interval
from tpsviz.core.schedules import parse_schedule
from tpsviz.io.files import limits_from_env
from tpsviz.io.loading import read_source
from tpsviz.io.kinds import is_multiclass
from tpsviz.io.multiclass import read_multiclass
from tpsviz.io.tables import format_of, table_columns
from tpsviz.outcomes.multiclass import CENSORING_MODES, RULES, tps_k
from tpsviz.outcomes.multiclass_reliability import ovr_summary, reliability_ovr

__all__ = ["add_arguments", "add_label_options", "add_eps", "compute", "order", "print_header", "run", "EPILOG"]

MIN_BIN_ROWS = 20  # a bin's gap is reported in the text output from this many step rows on

EPILOG = """\
multi-class log (CSV, TSV, Parquet or JSON Lines; one row per (run, step)):
  trajectory_id            required  run id
  step                     required  whole number, unique within a run
  outcome                  required  the run's label (the same on every row); empty if censored
  censored                 optional  true/false; default: censored <=> outcome empty
  conf_<name>__<label>     >= 2      predictor <name>: probability that the run ends with <label>;
                                     over the labels a row sums to 1 (or is empty: no forecast)
  q_z__<label>             optional  a censored run's label distribution (exact censoring)
Scores are rewards: higher is better, 0 is perfect. See docs/multiclass.md.
"""

CENSORING_HELP = ("complete: leave censored runs out; simple: a censored run counts as "
                  "--censored-label; exact: score it with its q_z__<label> vector (default: exact "
                  "when the log has q vectors, else complete)")


def add_label_options(p) -> None:
    """``--rule`` and ``--censored-label``: the multi-class score and the label of a censored run."""
    p.add_argument("--rule", choices=RULES, default="log",
                   help="multi-class score: log = ln P_y in nats (default); brier = -1/4 sum_j (P_j - 1[j=y])^2 "
                        "(two labels: exactly the binary half-Brier score)")
    p.add_argument("--censored-label", default=None, metavar="LABEL",
                   help="multi-class: the label a censored run counts as (simple mode; exact mode for runs "
                        "without q)")


def add_eps(p) -> None:
    """``--eps`` of the multi-class log rule."""
    p.add_argument("--eps", type=float, default=1e-6,
                   help="log rule: probabilities are clipped to [eps, 1] (default 1e-6; 0 = no clipping)")


def add_arguments(p) -> None:
    """The options of ``multiclass``."""
    p.description = ("TPS-k = sum_t w_t S(P_t, Y) for a log whose runs end with one of k labels "
                     "(e.g. success / partial / failure): multi-class log or Brier score, weight "
                     "schedules and censoring as for binary logs. `tpsviz score` reads such a log too.")
    p.epilog = EPILOG
    p.add_argument("path", help="the log (.csv, .tsv, .parquet, .jsonl)")
    add_label_options(p)
    add_schedule(p)
    add_censoring(p, CENSORING_MODES, CENSORING_HELP)
    add_n_boot(p)
    hidden_alias(p, "--bootstrap", "n_boot", int)
    add_seed(p)
    add_level(p)
    p.add_argument("--bins", type=int, default=10, help="bins of the one-vs-rest reliability (default 10)")
    add_eps(p)
    add_json(p)


_num = json_number  # a finite float, else None (JSON has no NaN)


def _check(args) -> None:
    check_numbers(args)
    bins = getattr(args, "bins", 10)  # (compare has no --bins: it prints no reliability)
    if not 1 <= bins <= 100:
        raise Fail(f"--bins must be between 1 and 100, got {bins}")
    if args.censoring is not None and args.censoring not in CENSORING_MODES:
        raise Fail(f"--censoring {args.censoring}: a multi-class log takes {', '.join(CENSORING_MODES)}")
    if args.seed is None:
        args.seed = DEFAULT_SEED


def _read(path: str):
    """The validated log; a binary log is refused with a pointer to ``score``."""
    limits = limits_from_env()
    raw, source = read_source(path, None, limits)
    fmt = format_of(source, "a multi-class log")
    header = table_columns(raw, source, fmt)
    if header and not is_multiclass(header):
        binary = any(str(c).lower().startswith("conf_") for c in header)
        raise Fail(f"{safe(source)}: no multi-class forecast column (conf_<name>__<label>)"
                   + ("; this is a binary log (conf_<name> = probability of success): use "
                      f"`python -m tpsviz score {safe(path)}`" if binary else
                      "; a binary log (conf_<name>) is scored with `python -m tpsviz score`"))
    return read_multiclass((raw, source), source, limits, fmt=fmt)


def compute(args):
    """TPS-k of the command line's log under its options.

    Parameters
    ----------
    args : Namespace
        ``path``, ``rule``, ``schedule``, ``censoring``, ``censored_label``, ``n_boot``, ``seed``,
        ``level``, ``eps``, ``bins``.

    Returns
    -------
    log : MulticlassLog
    result : MulticlassResult
    censoring : str
        The censoring mode used (the default decided from the log).

    Raises
    ------
    Fail
    """
    _check(args)
    try:
        schedule = parse_schedule(args.schedule)
    except ValueError as exc:
        raise Fail(f"--schedule: {say(exc)}") from None
    log = _read(args.path)
    if args.censored_label is not None and args.censored_label not in log.labels:
        raise Fail(f"--censored-label must be one of the log's labels: "
                   f"{', '.join(safe(lab, 40) for lab in log.labels)}")
    censoring = args.censoring
    if censoring is None:
        censoring = "exact" if (log.has_q and bool(log.trajectories["censored"].any())) else "complete"
    try:
        res = tps_k(log, rule=args.rule, schedule=schedule, censoring=censoring,
                    censored_label=args.censored_label, n_boot=args.n_boot, level=args.level,
                    seed=args.seed, eps=args.eps)
    except ValueError as exc:
        msg = say(exc).replace("censored_label", "--censored-label")
        raise Fail(f"{safe(log.source)}: {msg}") from None
    return log, res, censoring


def order(summary) -> list:
    """The predictors best first (highest TPS-k; unscored last).

    Parameters
    ----------
    summary : DataFrame
        ``MulticlassResult.summary``.

    Returns
    -------
    list of str
    """
    return sorted(summary.index, key=lambda n: (-summary.loc[n, "tps_mean"]
                                                 if math.isfinite(summary.loc[n, "tps_mean"]) else math.inf))


def run(args) -> int:
    """Score the log and print text or JSON."""
    log, res, censoring = compute(args)
    tables = {n: reliability_ovr(log, n, n_bins=args.bins, n_boot=min(args.n_boot, 1000), level=args.level,
                                 seed=args.seed) for n in log.predictors}
    gaps = {n: ovr_summary(t, MIN_BIN_ROWS) for n, t in tables.items()}
    ranked = order(res.summary)
    if args.json:
        print(json.dumps(_as_json(log, res, tables, gaps, ranked, censoring), indent=2, allow_nan=False))
        return 0
    _print_text(log, res, gaps, ranked, args)
    return 0


def _table_row(r: dict) -> dict:
    """A row of a one-vs-rest table for JSON: the label as text, counts as int, numbers or null."""
    return {k: (safe(v) if k == "label" else int(v) if k in ("bin", "n", "n_runs") else _num(v))
            for k, v in r.items()}


def _as_json(log, res, tables, gaps, ranked, censoring) -> dict:
    keys = ["tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "tps_step_mean", "n_runs", "n_censored",
            "n_excluded_censored", "n_no_forecast", "n_q_fallback", "n_steps", "n_missing", "n_clipped"]
    settings = {k: (_num(v) if isinstance(v, float) else v) for k, v in res.settings.items()}
    settings["labels"] = [safe(lab) for lab in log.labels]
    if settings.get("censored_label") is not None:
        settings["censored_label"] = safe(settings["censored_label"])
    settings["censoring_words"] = safe(settings["censoring_words"])
    settings["reliability"] = ("one-vs-rest, complete runs only, step rows binned by P_t[label]; interval: "
                               "percentile run bootstrap")
    out = {
        "file": safe(log.source),
        "labels": [safe(lab) for lab in log.labels],
        "n_runs": log.n_runs,
        "n_censored": log.n_censored,
        "censoring": censoring,
        "settings": settings,
        "ranking": [safe(n) for n in ranked],
        "notes": say_all(log.notes),
        "predictors": {},
    }
    for n in log.predictors:
        row = res.summary.loc[n]
        rec = {k: (int(row[k]) if k.startswith("n_") else _num(row[k])) for k in keys}
        rec["reliability"] = [_table_row(r) for r in tables[n].to_dict("records")]
        rec["ovr"] = {safe(lab): {"ece": _num(g["ece"]), "max_gap": _num(g["max_gap"]),
                                  "max_gap_bin": None if _num(g["max_gap_bin"]) is None else int(g["max_gap_bin"]),
                                  "n": int(g["n"])}
                      for lab, g in gaps[n].iterrows()}
        out["predictors"][safe(n)] = rec
    return out


def print_header(log, res, args) -> None:
    """The log (labels, runs, censored), the score, the schedule and the censoring in words.

    Parameters
    ----------
    log : MulticlassLog
    res : MulticlassResult
    args : Namespace
        ``rule`` and ``eps``.
    """
    s = res.settings
    labels = ", ".join(safe(lab, 30) for lab in log.labels)
    print(f"{safe(log.source)}: {len(log.labels)} labels ({labels}); {log.n_runs} runs, "
          f"{log.n_censored} censored")
    score = ("log score ln P_y" if args.rule == "log" else "Brier -1/4 sum_j (P_j - 1[j=y])^2")
    eps = f"; probabilities clipped to [{args.eps:g}, 1]" if args.rule == "log" else ""
    print(f"score: TPS-k, {score} ({s['unit']}; higher is better, 0 is perfect){eps}")
    print(f"schedule: {s['schedule']}: {s['formula']} ({s['schedule_verdict']})")
    if s["schedule_verdict"] != "strictly proper":
        print(f"  {s['schedule_reason']}")
    print(f"censoring: {safe(s['censoring_words'])}")


def _print_text(log, res, gaps, ranked, args) -> None:
    print_header(log, res, args)
    pct = f"{args.level * 100:g}%"
    boot = (f"percentile bootstrap over runs, {args.n_boot} replicates, seed {args.seed}" if args.n_boot
            else "bootstrap off: mean ± z·SE")
    nw = max([len(safe(n, 40)) for n in ranked] + [9])
    head = (f"{'predictor':<{nw}} {'TPS-k':>10} {pct + ' CI':>22} {'runs':>6} {'steps':>7} {'missing':>7} "
            f"{'excluded':>8}" + (f" {'clipped':>7}" if args.rule == "log" else ""))
    print()
    print(head)
    print("-" * len(head))
    for n in ranked:
        r = res.summary.loc[n]
        lo, hi, _ = summary_interval(r, args.level)
        ci = f"[{lo:.4f}, {hi:.4f}]" if math.isfinite(lo) and math.isfinite(hi) else "n/a"
        excluded = int(r["n_excluded_censored"]) + int(r["n_no_forecast"])
        mean = f"{r['tps_mean']:.4f}" if math.isfinite(r["tps_mean"]) else str(r["tps_mean"])
        print(f"{safe(n, 40):<{nw}} {mean:>10} {ci:>22} {int(r['n_runs']):>6} {int(r['n_steps']):>7} "
              f"{int(r['n_missing']):>7} {excluded:>8}" + (f" {int(r['n_clipped']):>7}" if args.rule == "log" else ""))
    print(f"TPS-k: mean per run; CI: {boot}; excluded: runs left out (censored in complete-case mode, or "
          "without any forecast)" + ("; clipped: step rows whose scored probability was raised to eps"
                                     if args.rule == "log" else ""))
    fb = int(res.summary["n_q_fallback"].max()) if len(res.summary) else 0
    if fb:
        print(f"{fb} censored run(s) had no q vector and were scored as label {safe(args.censored_label)}")
    print()
    print(f"one-vs-rest reliability (complete runs; per label the largest |observed - forecast| over bins "
          f"with >= {MIN_BIN_ROWS} step rows, and the ECE):")
    for n in ranked:
        parts = []
        for lab, g in gaps[n].iterrows():
            gap = f"{g['max_gap']:.3f}" if math.isfinite(g["max_gap"]) else "n/a"
            parts.append(f"{safe(lab, 30)} {gap} (ECE {g['ece']:.3f})")
        print(f"  {safe(n, 40):<{nw}} " + ("; ".join(parts) if parts else "no complete run with a forecast"))
    for note in log.notes:
        print(f"note: {safe(say(note))}")
