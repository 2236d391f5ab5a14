"""``tpsviz defer``: the value of handing off when the forecast falls below τ (tpsviz.diagnostics.monitoring.deferral).

Prints, per predictor, the best τ (a range "0.00–0.50, flat" when the mean utility is flat at its
maximum) with its bootstrap interval, the mean utility per run there and
never handing off, the share handed off and the area under the risk–coverage curve; ``--json``
adds the whole curve over τ.
"""

from __future__ import annotations

import json

import numpy as np

from tpsviz.cli.common import Fail, safe
from tpsviz.cli.wording import say
from tpsviz.cli.logs import load_log
from tpsviz.cli.options import RULE_OPTIONS, add_log_options, check_args, refuse_options, refused_given
from tpsviz.cli.unscored import unscored_why
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.diagnostics.monitoring.deferral import Utility, deferral

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    """The log, the utility table and the policy options of ``defer``; the score's rule options
    (``--alpha`` … ``--rollouts``) are refused by name: the policy uses the forecasts alone."""
    add_log_options(p)
    refuse_options(p, RULE_OPTIONS)
    g = p.add_argument_group("hand-off policy: stop at the first step with F < tau (docs/theory.md section 10)")
    g.add_argument("--success", type=float, default=1.0, help="value of a success (default 1)")
    g.add_argument("--failure", type=float, default=1.0, help="cost of a failure, as a positive number (default 1)")
    g.add_argument("--handoff", type=float, default=0.3, help="cost of a hand-off (default 0.3)")
    g.add_argument("--step-cost", type=float, default=0.0, help="cost of each step the agent runs (default 0)")
    g.add_argument("--censored-runs", choices=("failure", "exclude"), default="failure",
                   help="a censored run that is not handed off: a failure (default) or left out")
    g.add_argument("--predictor", action="append", default=None, metavar="NAME",
                   help="only this predictor (repeatable; default all)")


def run(args) -> int:
    """Read the log, compute and print (or print as JSON) the deferral results."""
    refused = refused_given(args, RULE_OPTIONS)
    if refused:
        raise Fail(f"defer does not take {', '.join(refused)}: the hand-off policy uses the forecasts F_t "
                   "alone, so the score's rule (alpha, beta, schedule, censoring, eps, rollouts) does not enter "
                   "its result (docs/theory.md section 10); drop "
                   + ("it" if len(refused) == 1 else "them") + " (censored runs: --censored-runs)")
    check_args(args)
    try:
        utility = Utility(args.success, args.failure, args.handoff, args.step_cost)
    except ValueError as exc:
        raise Fail(say(exc)) from None
    data, notes = load_log(args, args.path)
    notes = list(data.notes) + list(notes)  # the log's (a dataset's skipped files …) and the loading's
    seed = DEFAULT_SEED if args.seed is None else args.seed
    names = args.predictor or list(data.predictors)
    unknown = [n for n in names if n not in data.predictors]
    if unknown:
        raise Fail(f"no predictor {', '.join(safe(n, 40) for n in unknown)} in this log "
                   f"(it has {', '.join(safe(n, 40) for n in data.predictors)})")
    n_boot = min(args.n_boot, 2000)
    res = {n: deferral(data, n, utility, censored=args.censored_runs, n_boot=n_boot, level=args.level,
                       seed=seed) for n in names}
    # a predictor without any forecast never hands off: its "result" is the log's outcomes, not a policy
    nothing = unscored_why({n: res[n].n_runs if np.isfinite(data.forecasts(n)).any() else 0 for n in names},
                           "", 0)
    if args.json:
        print(json.dumps(_as_json(data, utility, res, args, n_boot, notes)
                         | ({"nothing_scored": nothing.json()} if nothing else {}), indent=2))
    elif nothing is None:
        _print(data, utility, res, names, args, n_boot, notes)
    if nothing is not None:  # exit 2 (main prints why)
        raise nothing
    return 0


def _num(x):
    x = float(x)
    return x if np.isfinite(x) else None


def _as_json(data, utility, res, args, n_boot: int, notes) -> dict:
    return {
        "settings": {"file": safe(data.source), "utility": vars(utility), "censored_runs": args.censored_runs,
                     "n_boot": n_boot, "level": args.level, "policy": "hand off at the first step with F < tau",
                     "notes": [safe(say(n)) for n in notes]},
        "predictors": {safe(n): {
            "best_tau": _num(r.best_tau), "best_tau_low": _num(r.best_tau_low),
            "best_tau_high": _num(r.best_tau_high), "best_tau_label": r.best_tau_label(),
            "best_tau_ci": [_num(x) for x in r.best_tau_ci],
            "best_utility": _num(r.best_utility), "best_utility_ci": [_num(x) for x in r.best_utility_ci],
            "never_handoff_utility": _num(r.curve["utility"].iloc[0]), "aurc": _num(r.aurc),
            "n_runs": r.n_runs, "n_excluded": r.n_excluded,
            "curve": [{k: bool(v) if k == "best" else _num(v) for k, v in row.items()}
                      for row in r.curve.to_dict("records")]}
            for n, r in res.items()}}


def _print(data, utility, res, names, args, n_boot: int, notes) -> None:
    u = utility
    print(f"{safe(data.source)}: hand off at the first step with F < tau; utility per run: success +{u.success:g}, "
          f"failure -{u.failure:g}, hand-off -{u.handoff:g}, per step -{u.per_step:g}; censored runs not handed "
          f"off: {'failures' if args.censored_runs == 'failure' else 'left out'}")
    for note in notes:
        print(f"note: {safe(say(note), 300)}")
    nw = max([len(safe(n, 40)) for n in names] + [9])
    labels = {n: r.best_tau_label() for n, r in res.items()}
    bw = max([len(x) for x in labels.values()] + [8])
    pct = int(round(args.level * 100))
    header = (f"{'predictor':<{nw}} {'best tau':>{bw}} {f'{pct}% CI':>14} {'utility':>9} {'never':>9} "
              f"{'handed off':>10} {'AURC':>6}")
    print(header)
    print("-" * len(header))
    for n, r in sorted(res.items(), key=lambda kv: -kv[1].best_utility):
        lo, hi = r.best_tau_ci
        ci = f"[{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else "n/a"
        share = float(r.curve.loc[r.curve["tau"] == r.best_tau, "handoff_rate"].iloc[0])
        print(f"{safe(n, 40):<{nw}} {labels[n]:>{bw}} {ci:>14} {r.best_utility:>+9.3f} "
              f"{r.curve['utility'].iloc[0]:>+9.3f} {share:>10.0%} {r.aurc:>6.3f}")
    print(f"best tau: a range 'a–b, flat' when the mean utility is the same for every tau in it; utility: mean "
          f"per run at the best tau; never: tau = 0; handed off: at the smallest best tau; CI of the best tau: "
          f"percentile bootstrap over runs ({n_boot} replicates; a replicate with several best tau counts with "
          "its whole range); AURC: area under risk (failure rate of the runs kept) against coverage, i.e. the "
          "failure rate among the runs kept averaged over coverage (lower is better)")
