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

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    """The options of ``crps``."""
    from tpsviz.core.schedules import schedule_help

    p.description = ("Score every predictor of a log whose outcome is a number (a final reward or cost) with "
                     "TPS-CRPS = -sum_t w_t CRPS(F_t, Y) per run: in the outcome's units, higher is better, 0 is "
                     "perfect. Censored runs have no outcome and are left out (complete case). See "
                     "docs/continuous.md.")
    p.epilog = ("log format: one row per (run, step): trajectory_id, step, outcome (a number; empty = censored), "
                "optional censored, and per predictor <name> one of\n"
                "  mu_<name> and sigma_<name>          a Gaussian N(mu, sigma^2), sigma > 0\n"
                "  q<level>_<name> (2 or more levels)  quantiles, e.g. q0.1_x, q0.5_x, q0.9_x\n"
                "  samples_<name>                      an ensemble: a list (a JSON array text in CSV)")
    p.add_argument("path", help="the log: .csv, .tsv, .parquet or .jsonl")
    p.add_argument("--schedule", default="uniform",
                   help="weight schedule (default uniform; 'column' is not available here); one of:\n"
                        + schedule_help())
    p.add_argument("--bootstrap", "--n-boot", dest="bootstrap", type=int, default=2000, metavar="N",
                   help="bootstrap replicates over runs for the CIs (default 2000; 0 = none, else 50 to 20,000)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the bootstrap and of the randomised PIT (default fixed)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level of the CIs (default 0.95)")
    p.add_argument("--bins", type=int, default=10, help="PIT histogram bins (default 10; 2 to 100)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


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


def _check(args, fail):
    from tpsviz.cli.main import MAX_N_BOOT, MAX_SEED, MIN_N_BOOT
    from tpsviz.core.inference import DEFAULT_SEED
    from tpsviz.core.schedules import parse_schedule

    if not (args.bootstrap == 0 or MIN_N_BOOT <= args.bootstrap <= MAX_N_BOOT):
        raise fail(f"--bootstrap must be 0 (no bootstrap) or between {MIN_N_BOOT} and {MAX_N_BOOT:,}, "
                   f"got {args.bootstrap}")
    seed = DEFAULT_SEED if args.seed is None else args.seed
    if not 0 <= seed <= MAX_SEED:
        raise fail(f"--seed must be an integer between 0 and 2^63 - 1, got {args.seed}")
    if not (math.isfinite(args.level) and 0 < args.level < 1):
        raise fail(f"--level must be in (0, 1), got {args.level:g}")
    if not 2 <= args.bins <= 100:
        raise fail(f"--bins must be between 2 and 100, got {args.bins}")
    try:
        schedule = parse_schedule(args.schedule)
    except ValueError as exc:
        raise fail(str(exc)) from None
    return schedule, seed


def compute(args, fail) -> tuple:
    """(log, result, PIT per predictor, seed) for the command line's options."""
    from tpsviz.outcomes.continuous_pit import pit_histogram
    from tpsviz.io.continuous import read_continuous
    from tpsviz.outcomes.continuous import tps_crps
    from tpsviz.core.errors import LogFormatError

    schedule, seed = _check(args, fail)
    log = read_continuous(args.path)
    try:
        result = tps_crps(log, schedule, n_boot=args.bootstrap, level=args.level, seed=seed)
        pits = {}
        for name in log.predictors:
            table, test = pit_histogram(log, name, args.bins, seed, which="all")
            last, _ = pit_histogram(log, name, args.bins, seed, which="last")
            pits[name] = (table, last, test)
    except LogFormatError:
        raise
    except ValueError as exc:  # a schedule whose weights underflow, …
        raise fail(str(exc)) from None
    return log, result, pits, seed


def _order(summary) -> list[str]:
    """Predictors best first (highest TPS-CRPS; unscored last)."""
    key = summary["tps_mean"].fillna(-math.inf)
    return list(summary.index[(-key).argsort(kind="stable")])


def _histogram(table) -> list[dict]:
    return [{"bin_low": _num(r.bin_low), "bin_high": _num(r.bin_high), "count": int(r.count),
             "expected": _num(r.expected)} for r in table.itertuples()]


def as_json(log, result, pits, name_fn, bins: int) -> dict:
    """The JSON object printed by ``crps --json``."""
    s = result.summary
    predictors = {}
    for n in _order(s):
        r = s.loc[n]
        table, last, test = pits[n]
        predictors[name_fn(n)] = {
            "form": r["form"],
            **{k: _num(r[k]) for k in ("tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "crps_step_mean")},
            **{k: int(r[k]) for k in ("n_runs", "n_excluded_censored", "n_steps", "n_missing", "n_no_forecast")},
            "levels": log.levels.get(n),
            "pit": {"test": {k: (_num(v) if isinstance(v, float) else v) for k, v in test.items()},
                    "histogram_all_rows": _histogram(table), "histogram_last_steps": _histogram(last)},
        }
    settings = {k: v for k, v in result.settings.items()}
    settings.update({"file": name_fn(log.source), "n_runs": log.n_runs, "n_censored": log.n_censored,
                     "n_step_rows": len(log.steps), "pit_bins": bins})
    return {"settings": settings, "notes": [name_fn(t) for t in result.notes], "predictors": predictors}


def run(args, name_fn, fail) -> int:
    """Read the log, score it and print the text report (or JSON)."""
    from tpsviz.core.inference import normal_quantile

    log, result, pits, seed = compute(args, fail)
    if args.json:
        print(json.dumps(as_json(log, result, pits, name_fn, args.bins), indent=2, allow_nan=False))
        return 0
    s, st = result.summary, result.settings
    print(f"{name_fn(log.source)}: {log.n_runs:,} runs, {len(log.steps):,} step rows; "
          f"{log.n_censored:,} censored run(s) left out (no outcome: complete case)")
    print(f"schedule {st['schedule']}: {st['formula']} ({st['schedule_verdict']})")
    print("TPS-CRPS per run = -sum_t w_t CRPS(F_t, Y), in the outcome's units: higher is better, 0 is perfect")
    print()
    names = _order(s)
    z = normal_quantile(st["level"])
    nw = max([len(name_fn(n, 40)) for n in names] + [9])
    pct = f"{st['level'] * 100:g}% CI"
    header = (f"{'predictor':<{nw}}  {'form':<8}  {'TPS-CRPS':>10}  {pct:>22}  {'CRPS/step':>10}  {'runs':>6}  "
              f"{'steps':>8}  {'missing':>7}")
    print(header)
    print("-" * len(header))
    for n in names:
        r = s.loc[n]
        ci = (f"[{_g(r['tps_ci_low'])}, {_g(r['tps_ci_high'])}]" if math.isfinite(r["tps_ci_low"])
              else ("± " + _g(z * r["tps_se"]) if math.isfinite(r["tps_se"]) else "n/a"))
        print(f"{name_fn(n, 40):<{nw}}  {r['form']:<8}  {_g(r['tps_mean'], 10)}  {ci:>22}  "
              f"{_g(r['crps_step_mean'], 10)}  {int(r['n_runs']):>6,}  {int(r['n_steps']):>8,}  "
              f"{int(r['n_missing']):>7,}")
    boot = (f"percentile bootstrap over runs ({st['n_boot']:,} replicates, seed {seed})" if st["n_boot"]
            else f"no bootstrap (± {z:.3g} SE)")
    print(f"CRPS/step: sum w CRPS / sum w over the steps scored (lower is better); CI: {boot}")
    forms = sorted(set(s["form"]))
    for f in forms:
        print(f"  {f}: {st['estimators'][f]}")
    for note in result.notes:
        print(f"note: {name_fn(note)}")
    print()
    print(f"PIT (uniform when calibrated): chi-square test on the last scored step of each run ({args.bins} bins; "
          f"runs are independent, steps of a run are not)")
    for n in names:
        test = pits[n][2]
        p = test["p_value"]
        ptxt = "n/a" if p is None or not math.isfinite(p) else (f"{p:.2g}" if p < 0.01 else f"{p:.2f}")
        few = " (few runs per bin: approximate)" if test["approximate"] and test["n_runs"] else ""
        print(f"  {name_fn(n, 40):<{nw}}  p = {ptxt} on {test['n_runs']:,} runs{few}: {test['reading']}")
    return 0
