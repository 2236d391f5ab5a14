"""``tpsviz crps``: score a log whose outcome is a number with the CRPS (tpsviz.outcomes.continuous).

Prints the file, the runs scored and left out (censored runs have no outcome), the schedule with
its propriety verdict, then per predictor, best first: its form, TPS-CRPS (mean over runs of
−Σ_t w_t CRPS_t, in the outcome's units, higher is better) with a bootstrap CI, the mean CRPS per
weighted step, the steps scored and missing, and a PIT line (χ² test of uniformity on the last
scored step of each run, and the histogram's shape in words). ``--json`` prints the same and the
PIT histograms as one JSON object (no NaN: null).
"""

from __future__ import annotations

import json
import math

from tpsviz.cli.common import Fail, safe, say, say_all
from tpsviz.cli.options import add_json, add_level, add_n_boot, add_schedule, add_seed, check_numbers, hidden_alias
from tpsviz.core.errors import LogFormatError
from tpsviz.core.inference import DEFAULT_SEED, normal_quantile
from tpsviz.core.schedules import parse_schedule
from tpsviz.io.continuous import read_continuous
from tpsviz.outcomes.continuous import tps_crps
from tpsviz.outcomes.continuous_pit import pit_histogram

__all__ = ["add_arguments", "add_bins", "compute", "score_log", "print_header", "run", "EPILOG"]

EPILOG = ("continuous-outcome log: one row per (run, step): trajectory_id, step, outcome (a number; empty = "
          "censored), optional censored, and per predictor <name> one of\n"
          "  mu_<name> and sigma_<name>          a Gaussian N(mu, sigma^2), sigma > 0\n"
          "  q<level>_<name> (2 or more levels)  quantiles, e.g. q0.1_x, q0.5_x, q0.9_x\n"
          "  samples_<name>                      an ensemble: a list (a JSON array text in CSV)")


def add_bins(p, what: str = "PIT histogram bins (default 10; 2 to 100)") -> None:
    """``--bins N`` (default 10)."""
    p.add_argument("--bins", type=int, default=10, help=what)


def add_arguments(p) -> None:
    """The options of ``crps``."""
    p.description = ("Score every predictor of a log whose outcome is a number (a final reward or cost) with "
                     "TPS-CRPS = -sum_t w_t CRPS(F_t, Y) per run: in the outcome's units, higher is better, 0 is "
                     "perfect. Censored runs have no outcome and are left out (complete case). See "
                     "docs/continuous.md. `tpsviz score` reads such a log too.")
    p.epilog = EPILOG
    p.add_argument("path", help="the log: .csv, .tsv, .parquet or .jsonl")
    add_schedule(p, "; 'column' is not available here")
    add_n_boot(p)
    hidden_alias(p, "--bootstrap", "n_boot", int)
    add_seed(p, "seed of the bootstrap and of the randomised PIT")
    add_level(p)
    add_bins(p)
    add_json(p)


def _num(x):
    """A number for JSON: None for NaN or infinity."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _g(x, width: int = 0) -> str:
    """A number in the outcome's units for a table (4 significant digits)."""
    if x is None or not math.isfinite(float(x)):
        return f"{'n/a':>{width}}"
    text = f"{float(x):#.4g}"
    return f"{text:>{width}}"


def _check(args):
    check_numbers(args)
    seed = DEFAULT_SEED if args.seed is None else args.seed
    bins = getattr(args, "bins", 10)  # (compare has no --bins: it draws no PIT)
    if not 2 <= bins <= 100:
        raise Fail(f"--bins must be between 2 and 100, got {bins}")
    try:
        schedule = parse_schedule(args.schedule)
    except ValueError as exc:
        raise Fail(say(exc)) from None
    return schedule, seed


def score_log(args) -> tuple:
    """TPS-CRPS of the command line's log under its options.

    Parameters
    ----------
    args : Namespace
        ``path``, ``schedule``, ``n_boot``, ``seed``, ``level``, ``bins``.

    Returns
    -------
    log : ContinuousLog
    result : ContinuousResult
    seed : int
        The seed used (the fixed default when ``--seed`` is not given).

    Raises
    ------
    Fail
    """
    schedule, seed = _check(args)
    log = read_continuous(args.path)
    try:
        result = tps_crps(log, schedule, n_boot=args.n_boot, level=args.level, seed=seed)
    except LogFormatError:
        raise
    except ValueError as exc:  # a schedule whose weights underflow, …
        raise Fail(say(exc)) from None
    return log, result, seed


def compute(args) -> tuple:
    """(log, result, PIT per predictor, seed) for the command line's options (:func:`score_log`
    and the PIT histograms of every predictor)."""
    log, result, seed = score_log(args)
    pits = {}
    try:
        for pred in log.predictors:
            table, test = pit_histogram(log, pred, args.bins, seed, which="all")
            last, _ = pit_histogram(log, pred, args.bins, seed, which="last")
            pits[pred] = (table, last, test)
    except LogFormatError:
        raise
    except ValueError as exc:
        raise Fail(say(exc)) from None
    return log, result, pits, seed


def _order(summary) -> list[str]:
    """Predictors best first (highest TPS-CRPS; unscored last)."""
    key = summary["tps_mean"].fillna(-math.inf)
    return list(summary.index[(-key).argsort(kind="stable")])


def _histogram(table) -> list[dict]:
    return [{"bin_low": _num(r.bin_low), "bin_high": _num(r.bin_high), "count": int(r.count),
             "expected": _num(r.expected)} for r in table.itertuples()]


def as_json(log, result, pits, bins: int) -> dict:
    """The JSON object printed by ``crps --json``."""
    s = result.summary
    predictors = {}
    for n in _order(s):
        r = s.loc[n]
        table, last, test = pits[n]
        predictors[safe(n)] = {
            "form": r["form"],
            **{k: _num(r[k]) for k in ("tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "crps_step_mean")},
            **{k: int(r[k]) for k in ("n_runs", "n_excluded_censored", "n_steps", "n_missing", "n_no_forecast")},
            "levels": log.levels.get(n),
            "pit": {"test": {k: (_num(v) if isinstance(v, float) else v) for k, v in test.items()},
                    "histogram_all_rows": _histogram(table), "histogram_last_steps": _histogram(last)},
        }
    settings = {k: v for k, v in result.settings.items()}
    settings.update({"file": safe(log.source), "n_runs": log.n_runs, "n_censored": log.n_censored,
                     "n_step_rows": len(log.steps), "pit_bins": bins})
    return {"settings": settings, "notes": say_all(result.notes), "predictors": predictors}


def print_header(log, result) -> None:
    """The log (runs, step rows, censored runs left out), the schedule and the score in words.

    Parameters
    ----------
    log : ContinuousLog
    result : ContinuousResult
    """
    st = result.settings
    print(f"{safe(log.source)}: {log.n_runs:,} runs, {len(log.steps):,} step rows; "
          f"{log.n_censored:,} censored run(s) left out (no outcome: complete case)")
    print(f"schedule {st['schedule']}: {st['formula']} ({st['schedule_verdict']})")
    print("TPS-CRPS per run = -sum_t w_t CRPS(F_t, Y), in the outcome's units: higher is better, 0 is perfect")


def run(args) -> int:
    """Read the log, score it and print the text report (or JSON)."""
    log, result, pits, seed = compute(args)
    if args.json:
        print(json.dumps(as_json(log, result, pits, args.bins), indent=2, allow_nan=False))
        return 0
    s, st = result.summary, result.settings
    print_header(log, result)
    print()
    names = _order(s)
    z = normal_quantile(st["level"])
    nw = max([len(safe(n, 40)) for n in names] + [9])
    pct = f"{st['level'] * 100:g}% CI"
    header = (f"{'predictor':<{nw}}  {'form':<8}  {'TPS-CRPS':>10}  {pct:>22}  {'CRPS/step':>10}  {'runs':>6}  "
              f"{'steps':>8}  {'missing':>7}")
    print(header)
    print("-" * len(header))
    for n in names:
        r = s.loc[n]
        ci = (f"[{_g(r['tps_ci_low'])}, {_g(r['tps_ci_high'])}]" if math.isfinite(r["tps_ci_low"])
              else ("± " + _g(z * r["tps_se"]) if math.isfinite(r["tps_se"]) else "n/a"))
        print(f"{safe(n, 40):<{nw}}  {r['form']:<8}  {_g(r['tps_mean'], 10)}  {ci:>22}  "
              f"{_g(r['crps_step_mean'], 10)}  {int(r['n_runs']):>6,}  {int(r['n_steps']):>8,}  "
              f"{int(r['n_missing']):>7,}")
    boot = (f"percentile bootstrap over runs ({st['n_boot']:,} replicates, seed {seed})" if st["n_boot"]
            else f"no bootstrap (± {z:.3g} SE)")
    print(f"CRPS/step: sum w CRPS / sum w over the steps scored (lower is better); CI: {boot}")
    forms = sorted(set(s["form"]))
    for f in forms:
        print(f"  {f}: {st['estimators'][f]}")
    for note in result.notes:
        print(f"note: {safe(say(note))}")
    print()
    print(f"PIT (uniform when calibrated): chi-square test on the last scored step of each run ({args.bins} bins; "
          f"runs are independent, steps of a run are not)")
    for n in names:
        test = pits[n][2]
        p = test["p_value"]
        ptxt = "n/a" if p is None or not math.isfinite(p) else (f"{p:.2g}" if p < 0.01 else f"{p:.2f}")
        few = " (few runs per bin: approximate)" if test["approximate"] and test["n_runs"] else ""
        print(f"  {safe(n, 40):<{nw}}  p = {ptxt} on {test['n_runs']:,} runs{few}: {test['reading']}")
    return 0
