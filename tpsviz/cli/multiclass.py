"""The text report of ``score`` on a log whose outcome is one of k labels (TPS-k,
tpsviz.outcomes.multiclass), and the options of such logs. ``multiclass PATH`` is an old spelling
of ``score PATH``.

The numbers are the :class:`~tpsviz.evaluation.outcome_kinds.MulticlassEvaluation`'s: a header
(file, labels, runs, censored, rule, schedule with its propriety verdict, censoring in words), one
row per predictor best first (TPS-k with its interval, runs, steps, missing, excluded) and per
predictor a one-vs-rest reliability line; ``--json`` prints its ``to_json()``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from tpsviz.cli.common import safe
from tpsviz.cli.wording import say
from tpsviz.core.inference import summary_interval
from tpsviz.evaluation.outcome_kinds import MIN_BIN_ROWS
from tpsviz.outcomes.multiclass import RULES

__all__ = ["add_label_options", "print_header", "print_text", "EPILOG"]

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

def add_label_options(p) -> None:
    """``--rule`` and ``--censored-label``: the multi-class score and the label of a censored run."""
    p.add_argument("--rule", choices=RULES, default="log",
                   help="multi-class score: log = ln P_y in nats (default); brier = -1/4 sum_j (P_j - 1[j=y])^2 "
                        "(two labels: exactly the binary half-Brier score)")
    p.add_argument("--censored-label", default=None, metavar="LABEL",
                   help="multi-class: the label a censored run counts as (simple mode; exact mode for runs "
                        "without q)")


def print_header(ev) -> None:
    """The log (labels, runs, censored), the score, the schedule and the censoring in words.

    Parameters
    ----------
    ev : tpsviz.evaluation.outcome_kinds.MulticlassEvaluation
    """
    log, s = ev.log, ev.result.settings
    labels = ", ".join(safe(lab, 30) for lab in log.labels)
    print(f"{safe(log.source)}: {len(log.labels)} labels ({labels}); {log.n_runs} runs, "
          f"{log.n_censored} censored")
    score = ("log score ln P_y" if s["rule"] == "log" else "Brier -1/4 sum_j (P_j - 1[j=y])^2")
    eps = f"; probabilities clipped to [{s['eps']:g}, 1]" if s["rule"] == "log" else ""
    print(f"score: TPS-k, {score} ({s['unit']}; higher is better, 0 is perfect){eps}")
    print(f"schedule: {s['schedule']}: {s['formula']} ({s['schedule_verdict']})")
    if s["schedule_verdict"] != "strictly proper":
        print(f"  {s['schedule_reason']}")
    print(f"censoring: {safe(s['censoring_words'])}")


def print_text(ev) -> None:
    """The text report of ``score`` on a multi-class log.

    Parameters
    ----------
    ev : tpsviz.evaluation.outcome_kinds.MulticlassEvaluation
    """
    log, res, gaps, ranked = ev.log, ev.result, ev.gaps, ev.order
    args = SimpleNamespace(**{k: res.settings[k] for k in ("rule", "n_boot", "seed", "level", "censored_label")})
    print_header(ev)
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
