"""``tpsviz monitor``: TPS and skill over time in sliding windows, and a CUSUM alarm (tpsviz.diagnostics.monitoring.monitor).

Prints, per predictor, the windows (thinned to at most ``--rows`` lines) with TPS and skill and their
intervals, the success rate and the mean forecast, then the alarm's setting, its measured false-alarm
rate and the alarms raised. ``--json`` gives every window and every alarm.
"""

from __future__ import annotations

import json
import math

import numpy as np

from tpsviz.cli.common import Fail, safe
from tpsviz.cli.wording import say
from tpsviz.cli.score import evaluation_or_exit
from tpsviz.cli.options import add_scoring_options, check_args, hidden_alias
from tpsviz.cli.unscored import unscored_why
from tpsviz.core.formatting import json_number
from tpsviz.core.tps import settings_words
from tpsviz.diagnostics.monitoring.cusum import N_SIM
from tpsviz.diagnostics.monitoring.monitor import log_time_column, monitor, order_sentence
from tpsviz.evaluation.engine_choice import memory_reason

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    """The log and scoring options of ``score``, and the monitoring options."""
    p.description = ("TPS and skill over the log's own time (else run order), in sliding windows with intervals, and a "
                     "one-sided CUSUM alarm on degradation whose threshold is set for a false-alarm rate and whose "
                     "false-alarm rate is measured on the in-control runs (docs/theory.md section 11).")
    add_scoring_options(p)
    g = p.add_argument_group("monitoring (docs/theory.md section 11)")
    g.add_argument("--order-by", dest="by", metavar="COLUMN", default=None,
                   help="column to order runs by: a time (ISO 8601 or any date-time pandas reads) or a number "
                        "(default: the time the log records, e.g. a harness's or a trace's start_time or a table's "
                        "timestamp column, else the order in which runs first appear in the file; the output says "
                        "which)")
    hidden_alias(g, "--by", "by")  # (its name before: compare's --by groups runs, this one orders them)
    g.add_argument("--window", type=int, default=100, metavar="N", help="runs per window (default 100)")
    g.add_argument("--stride", type=int, default=None, metavar="N",
                   help="runs between the starts of two windows (default window/4)")
    g.add_argument("--predictor", action="append", default=None, metavar="NAME",
                   help="only this predictor (repeatable; default all)")
    g.add_argument("--alarm-on", metavar="NAME", default=None,
                   help="the predictor the alarm watches (default the first; 'none' for no alarm)")
    g.add_argument("--baseline-runs", type=int, default=None, metavar="N",
                   help="in-control runs at the start (default a quarter of the runs, at least one window)")
    hidden_alias(g, "--baseline", "baseline_runs", int)  # (its name before compare's --baseline NAME)
    g.add_argument("--shift", type=float, default=0.5, metavar="D",
                   help="the drop the alarm is tuned to, in SDs of the in-control runs (default 0.5)")
    g.add_argument("--arl", type=float, default=1000.0, metavar="RUNS",
                   help="in-control runs per false alarm the threshold is set for (default 1000)")
    g.add_argument("--rows", type=int, default=12, metavar="N",
                   help="text output: at most N windows per predictor (default 12; the JSON has all)")


_num = json_number  # a finite float, else None (JSON has no NaN)


def _key(v) -> str | float | None:
    """An order value for output: a timestamp as ISO 8601 text, a number as a number."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if hasattr(v, "isoformat"):
        return v.isoformat().replace("+00:00", "Z")
    x = _num(v)
    return int(x) if x is not None and x.is_integer() and abs(x) < 2**53 else x


def run(args) -> int:
    """Read the log, monitor it and print the windows and the alarm (or one JSON object)."""
    check_args(args)
    if args.window < 2:
        raise Fail(f"--window must be at least 2 runs, got {args.window}")
    if args.stride is not None and args.stride < 1:
        raise Fail(f"--stride must be at least 1 run, got {args.stride}")
    if args.rows < 1:
        raise Fail(f"--rows must be at least 1, got {args.rows}")
    ev = evaluation_or_exit(args, memory_reason(args.path), complete=False)  # the Evaluation `score` prints; its TPS alone is read
    data, settings, notes = ev.data, ev.settings, list(ev.notes)  # the log's (a dataset's skipped files …) and the loading's
    names = args.predictor or list(data.predictors)
    unknown = [n for n in names if n not in data.predictors]
    if unknown:
        raise Fail(f"no predictor {', '.join(safe(n, 40) for n in unknown)} in this log "
                   f"(it has {', '.join(safe(n, 40) for n in data.predictors) or 'none'})")
    alarm_on = None if args.alarm_on is None else ("" if args.alarm_on.lower() == "none" else args.alarm_on)
    if alarm_on and alarm_on not in names:
        raise Fail(f"--alarm-on {safe(alarm_on, 40)}: not one of the monitored predictors")
    by = args.by if args.by is not None else log_time_column(data)   # the log's own time by default
    order = order_sentence(data, by)   # said in the first line and in the JSON's settings
    try:
        res = monitor(data, settings, by=by, window=args.window, stride=args.stride, predictors=names,
                      alarm_on=alarm_on, baseline=args.baseline_runs, shift=args.shift, target_arl=args.arl, q_z=ev.q_z, result=ev.points)
    except ValueError as exc:
        raise Fail(safe(say(exc), 400)) from None
    words = settings_words(settings)
    scored = res.windows.groupby("predictor", sort=False)["n_runs"].max() if len(res.windows) else {}
    nothing = unscored_why({n: int(scored.get(n, 0)) for n in names}, settings.censoring, data.n_censored)
    if args.json:
        print(json.dumps(_json(res, data, words, notes, by, order) | ({"nothing_scored": nothing.json()} if nothing else {}),
                         indent=2))
    elif nothing is None:
        _print(res, data, words, notes, args.rows, order)
    if nothing is not None:  # exit 2: no window has a scored run (main prints why)
        raise nothing
    return 0


def _json(res, data, words, notes, by, order) -> dict:
    windows = {}
    for name, tab in res.windows.groupby("predictor", sort=False):
        windows[safe(name)] = [
            {"window": int(r.window), "first": int(r.first), "last": int(r.last), "from": _key(r.key_first),
             "to": _key(r.key_last), "n_runs": int(r.n_runs),
             **{c: _num(getattr(r, c)) for c in ("tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "skill",
                                                 "skill_se", "skill_ci_low", "skill_ci_high", "rate",
                                                 "mean_forecast")}}
            for r in tab.itertuples()]
    a = res.alarm
    alarm = None
    if a is not None:
        alarm = {"predictor": safe(a.predictor), "reason": a.reason or None, "statistic": "lower CUSUM of "
                 "TPS_i - TPS_ref,i (TPS_ref: the constant forecast at the in-control success rate)", "n_baseline": a.n_baseline,
                 "rate0": _num(a.rate0), "mu0": _num(a.mu0), "sd0": _num(a.sd0), "shift_sd": a.shift,
                 "k": _num(a.shift / 2), "h": _num(a.h), "target_arl": a.target_arl,
                 "false_alarm_rate": _num(a.false_alarm_rate), "false_alarm_se": _num(a.false_alarm_se),
                 "in_control_alarms": a.in_control_alarms, "chance_alarms": _num(a.chance_alarms),
                 "count_p": _num(a.count_p),
                 "alarms": [{"position": int(r.position), "trajectory_id": safe(r.trajectory_id),
                             "at": _key(r.key), "start_position": int(r.start_position), "start": _key(r.start_key),
                             "in_control": bool(r.in_control)} for r in a.alarms.itertuples()]
                 if len(a.alarms) else []}
    return {"settings": {"file": safe(data.source), "order": safe(res.order), "order_by": None if by is None else safe(by),
                         "order_source": safe(order), "window": res.window,
                         "stride": res.stride, "level": res.settings.level, "score": words["score"],
                         "schedule": words["schedule"], "censoring": words["censoring"],
                         "intervals": "window TPS: mean ± z·SE over the window's runs; skill: against the "
                                      "window's own success rate, delta method"},
            "n_runs": int(len(res.runs)), "n_excluded": res.n_excluded,
            "notes": [safe(say(n)) for n in notes] + [say(n) for n in res.notes],
            "runs": [{"trajectory_id": safe(r.trajectory_id), "at": _key(r.key)} for r in res.runs.itertuples()],
            "windows": windows, "alarm": alarm}


def _print(res, data, words, notes, rows: int, order: str) -> None:
    pct = int(round(res.settings.level * 100))
    print(f"{safe(data.source)}: {len(res.runs):,} {safe(order)}; windows of {res.window} runs "
          f"every {res.stride}; {words['score']}, {words['schedule']}, censoring {words['censoring']}")
    for note in list(notes) + res.notes:
        print(f"note: {safe(say(note), 300)}")
    for name, tab in res.windows.groupby("predictor", sort=False):
        print()
        print(f"{safe(name, 60)}  (TPS per run with {pct}% CI; skill against each window's success rate)")
        header = f"{'from':>20} {'to':>20} {'runs':>5} {'TPS':>8} {f'{pct}% CI':>18} {'skill':>7} {f'{pct}% CI':>16} " \
                 f"{'rate':>5} {'mean F':>6}"
        print(header)
        print("-" * len(header))
        pick = np.unique(np.linspace(0, len(tab) - 1, min(rows, len(tab))).round().astype(int))
        for r in tab.iloc[pick].itertuples():
            print(f"{_short(r.key_first):>20} {_short(r.key_last):>20} {r.n_runs:>5} {r.tps_mean:>8.3f} "
                  f"{_ci(r.tps_ci_low, r.tps_ci_high, 3):>18} {_fmt(r.skill, 3):>7} "
                  f"{_ci(r.skill_ci_low, r.skill_ci_high, 3):>16} {_fmt(r.rate, 2):>5} {_fmt(r.mean_forecast, 2):>6}")
        if len(pick) < len(tab):
            print(f"({len(pick)} of {len(tab)} windows shown; --json gives all)")
    a = res.alarm
    if a is None:
        return
    print()
    print(safe(a.words(), 600))
    if a.reason:
        return
    if not len(a.alarms):
        print("no alarm raised")
        return
    after = int((~a.alarms["in_control"]).sum())
    print(f"{after} alarm(s) after the in-control part, where chance alone gives {a.chance_alarms:.2f} on average "
          f"(as many or more by chance: p = {a.count_p:.2g}, from {N_SIM} simulated in-control streams)")
    print(f"{len(a.alarms)} alarm(s); the excursion start estimates where the change began:")
    for r in a.alarms.head(10).itertuples():
        where = " (inside the in-control part: a false alarm)" if r.in_control else ""
        print(f"  alarm at run {r.position + 1:,} ({_short(r.key)}, {safe(r.trajectory_id, 40)}); excursion from run "
              f"{r.start_position + 1:,} ({_short(r.start_key)}){where}")
    if len(a.alarms) > 10:
        print(f"  … and {len(a.alarms) - 10} more (--json gives all)")


def _short(v) -> str:
    k = _key(v)
    if isinstance(k, str):
        return k[:19].replace("T", " ")
    return "n/a" if k is None else f"{k:g}"


def _fmt(v, digits: int) -> str:
    return "n/a" if not np.isfinite(v) else f"{v:.{digits}f}"


def _ci(lo, hi, digits: int) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "n/a"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"
