"""The text report of ``score`` on a log whose outcome is a number (TPS-CRPS,
tpsviz.outcomes.continuous). ``crps PATH`` is an old spelling of ``score PATH``.

The numbers are the :class:`~tpsviz.evaluation.outcome_kinds.ContinuousEvaluation`'s: the file, the
runs scored and left out (censored runs have no outcome), the schedule with its propriety verdict,
then per predictor, best first: its form, TPS-CRPS (mean over runs of −Σ_t w_t CRPS_t, in the
outcome's units, higher is better) with a bootstrap CI, the mean CRPS per weighted step, the steps
scored and missing, and a PIT line (χ² test of uniformity on the last scored step of each run, and
the histogram's shape in words). ``--json`` prints its ``to_json()``.
"""

from __future__ import annotations

import math

from tpsviz.cli.common import safe
from tpsviz.cli.wording import say
from tpsviz.core.inference import normal_quantile

__all__ = ["add_bins", "print_header", "print_text", "EPILOG"]

EPILOG = ("continuous-outcome log: one row per (run, step): trajectory_id, step, outcome (a number; empty = "
          "censored), optional censored, and per predictor <name> one of\n"
          "  mu_<name> and sigma_<name>          a Gaussian N(mu, sigma^2), sigma > 0\n"
          "  q<level>_<name> (2 or more levels)  quantiles, e.g. q0.1_x, q0.5_x, q0.9_x\n"
          "  samples_<name>                      an ensemble: a list (a JSON array text in CSV)")


def add_bins(p, what: str = "PIT histogram bins (default 10; 2 to 100)") -> None:
    """``--bins N`` (default 10)."""
    p.add_argument("--bins", type=int, default=10, help=what)


def _g(x, width: int = 0) -> str:
    """A number in the outcome's units for a table (4 significant digits)."""
    if x is None or not math.isfinite(float(x)):
        return f"{'n/a':>{width}}"
    text = f"{float(x):#.4g}"
    return f"{text:>{width}}"


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


def print_text(ev) -> None:
    """The text report of ``score`` on a continuous-outcome log.

    Parameters
    ----------
    ev : tpsviz.evaluation.outcome_kinds.ContinuousEvaluation
    """
    log, result, pits, seed, bins = ev.log, ev.result, ev.pits, ev.seed, ev.bins
    s, st = result.summary, result.settings
    print_header(log, result)
    print()
    names = ev.order
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
    print(f"PIT (uniform when calibrated): chi-square test on the last scored step of each run ({bins} bins; "
          f"runs are independent, steps of a run are not)")
    for n in names:
        test = pits[n][2]
        p = test["p_value"]
        ptxt = "n/a" if p is None or not math.isfinite(p) else (f"{p:.2g}" if p < 0.01 else f"{p:.2f}")
        few = " (few runs per bin: approximate)" if test["approximate"] and test["n_runs"] else ""
        print(f"  {safe(n, 40):<{nw}}  p = {ptxt} on {test['n_runs']:,} runs{few}: {test['reading']}")
