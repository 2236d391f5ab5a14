"""``tpsviz check LOG``: gate a release on the agent's confidence, for CI pipelines.

The log is scored as ``score`` scores it (same options, same numbers: the checks read the object
``score --json`` prints), then every predictor must meet every rule given:

- ``--require trustworthy``: the predictor's verdict (:mod:`tpsviz.diagnostics.verdict`) is exactly
  ``trustworthy``, i.e. none of the verdict rules 1-6 holds: "too little data" fails too (a gate
  needs evidence), and so does a predictor without a verdict (out of core with
  ``--verdict-sample 0``, which is refused up front);
- ``--min-skill X``: its skill against the constant forecast (base rate) is >= X (a skill that cannot be
  computed fails);
- ``--max-drop X`` with ``--baseline-score FILE`` (an earlier ``score --json`` output under the same
  alpha, beta, schedule, censoring and eps, else exit 2): its TPS per run is at least the
  baseline's minus X. A predictor of the baseline that is missing from the log fails; a predictor
  new in the log has nothing to drop from and is not checked by this rule (a note says so).

The predictors are every predictor of the log (its ``conf_<name>`` columns, and ``<name>@<method>``
with ``--recalibrate``; the constant forecast (base rate) is not one), or those named with ``--predictor``.
Exit 0 when all pass; exit 1 with one line per failing predictor saying why, and for nothing else;
exit 2 for bad input or usage, and when none of the predictors checked was scored (a gate must not pass
on nothing: :mod:`tpsviz.cli.unscored`); exit 3 for an unexpected failure (a bug:
:data:`tpsviz.cli.common.EXIT_BUG`). ``--json`` prints the checks as one object (same exit codes; with
``nothing_scored`` saying why when nothing was scored).
"""

from __future__ import annotations

import json
import math
import shlex

from tpsviz.cli.common import EXIT_BAD_INPUT, Fail, safe
from tpsviz.cli.wording import CLI, say
from tpsviz.cli.engine import score_json_out_of_core
from tpsviz.cli.kinds import KIND_WORDS
from tpsviz.cli.logs import log_kind
from tpsviz.cli.options import add_engine_options, add_references_option, add_scoring_options, check_args, hidden_alias
from tpsviz.evaluation.front_door import NothingToScore
from tpsviz.cli.score import engine_for, evaluation_for, refuse_references_out_of_core
from tpsviz.cli.unscored import NothingScored, refuse_unscored
from tpsviz.evaluation.reading import no_forecast_reason
from tpsviz.forecasts.references import how_to_add_forecast
from tpsviz.io.files import read_file

__all__ = ["add_arguments", "run", "EXIT_FAILED", "SETTINGS_COMPARED", "evaluate_checks"]

#: the exit code of a check that ran and failed
EXIT_FAILED = 1
#: the settings that make two TPS values comparable (--max-drop refuses a baseline scored otherwise)
SETTINGS_COMPARED = ("alpha", "beta", "schedule", "censoring", "eps")
TRUSTWORTHY = "trustworthy"

EPILOG = ("rules (all given must hold for every predictor):\n"
          "  --require trustworthy  the verdict is exactly 'trustworthy' (none of the rules of `score --help` holds;\n"
          "                         'too little data' fails)\n"
          "  --min-skill X          skill against the constant forecast (base rate) >= X (n/a fails)\n"
          "  --max-drop X           TPS per run >= the baseline's - X (--baseline-score FILE: an earlier\n"
          "                         `score --json` output with the same alpha, beta, schedule, censoring and eps);\n"
          "                         a predictor of the baseline missing from the log fails, a new one is not\n"
          "                         checked by this rule\n"
          "exit codes: 0 every predictor passes; 1 some fail (one line each, saying why); 2 bad input or usage\n"
          "  (a file, an option, a baseline scored otherwise) or nothing scored (no predictor checked has a\n"
          "  scored run: the message says why and what to do); 3 an unexpected failure (a bug in tpsviz)")


def add_arguments(p) -> None:
    """The options of ``score`` (the log is scored the same way) and the rules."""
    add_scoring_options(p)
    add_references_option(p)
    add_engine_options(p, "check")
    g = p.add_argument_group("rules (all given must hold for every predictor)")
    g.add_argument("--require", choices=(TRUSTWORTHY,), default=None,
                   help="every predictor's verdict must be 'trustworthy'")
    g.add_argument("--min-skill", type=float, default=None, metavar="X",
                   help="every predictor's skill must be >= X (1 - TPS/TPS_ref; > 0 beats the base rate)")
    g.add_argument("--max-drop", type=float, default=None, metavar="X",
                   help="with --baseline-score: TPS per run may drop at most X (>= 0) below the baseline's")
    g.add_argument("--baseline-score", metavar="FILE", default=None,
                   help="an earlier `python -m tpsviz score --json` output, for --max-drop")
    # (its first name: compare's --baseline is a predictor, so this file was renamed apart from it)
    hidden_alias(g, "--baseline", "baseline_score")
    g.add_argument("--predictor", action="append", default=None, metavar="NAME",
                   help="check only this predictor (repeatable; default every predictor of the log but the "
                        "references ref:*, which are yardsticks, not the agent's)")


def _check_rules(args) -> None:
    if args.require is None and args.min_skill is None and args.max_drop is None:
        raise Fail("check needs at least one rule: --require trustworthy, --min-skill X or --max-drop X")
    if args.min_skill is not None and not math.isfinite(args.min_skill):
        raise Fail(f"--min-skill must be a finite number, got {args.min_skill:g}")
    if args.max_drop is not None and not (math.isfinite(args.max_drop) and args.max_drop >= 0):
        raise Fail(f"--max-drop must be a number >= 0, got {args.max_drop:g}")
    if (args.max_drop is None) != (args.baseline_score is None):
        raise Fail("--max-drop X and --baseline-score FILE go together: the drop is measured from the baseline's TPS")
    if args.require and getattr(args, "verdict_sample", 1) <= 0:
        raise Fail("--require trustworthy needs the verdicts: --verdict-sample must be at least 1")


def _read_baseline(path: str) -> dict:
    """The baseline ``score --json`` object, checked to have what --max-drop reads."""
    raw = read_file(path, label=f"--baseline-score {safe(path)}")
    try:
        obj = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        obj = None
    ok = (isinstance(obj, dict) and isinstance(obj.get("settings"), dict) and isinstance(obj.get("predictors"), dict)
          and all(k in obj["settings"] for k in SETTINGS_COMPARED)
          and all(isinstance(r, dict) and "tps_mean" in r for r in obj["predictors"].values()))
    if not ok:
        raise Fail(f"--baseline-score {safe(path)} is not the output of `python -m tpsviz score --json` on a binary log "
                   "(an object with 'settings' and per-predictor 'tps_mean')")
    return obj


def _comparable(base: dict, now: dict, path: str) -> None:
    """Refuse a baseline scored under other settings: its TPS is in other units or weights."""
    differ = [f"{k} {safe(base[k], 40)} there, {safe(now[k], 40)} here" for k in SETTINGS_COMPARED
              if base.get(k) != now.get(k)]
    if differ:
        raise Fail(f"--baseline-score {safe(path)} was scored under other settings ({'; '.join(differ)}): TPS values "
                   "are not comparable; score the log with the baseline's settings")


def _score_object(args) -> dict:
    """The object ``score --json`` prints for this log (in memory or out of core).

    Raises
    ------
    NothingScored
        The log has no forecast, and no reference forecaster could be formed.
    """
    kind = log_kind(args)
    if kind != "binary":
        raise Fail(f"{safe(args.path)} is a {KIND_WORDS[kind]} log; check gates binary logs (verdict, skill, "
                   "TPS of success probabilities)")
    engine, why, ds = engine_for(args)
    if engine in ("duckdb", "dask"):
        refuse_references_out_of_core(args, engine)
        return score_json_out_of_core(args, ds, why, engine)
    try:
        return evaluation_for(args, why).to_json(CLI)
    except NothingToScore as none:  # as `score` says it (its exit 2), not the library's advice
        raise NothingScored(no_forecast_reason(none.data),
                            say(how_to_add_forecast(shlex.quote(args.path)))) from None


def _refuse_unscored(now: dict, names: list[str]) -> None:
    """Exit 2 when none of the predictors checked has a scored run: a gate must not pass (or fail) on nothing.

    Raises
    ------
    NothingScored
    """
    present = [n for n in names if n in now["predictors"]]  # (one only in the baseline fails --max-drop: exit 1)
    if present:
        s = now["settings"]
        refuse_unscored({n: now["predictors"][n].get("n_trajectories") or 0 for n in present},
                        s.get("censoring"), int(s.get("n_censored") or 0))


def _value(x) -> float:
    """A number of the JSON output as a float (null -> NaN, "-inf"/"inf" -> infinity)."""
    try:
        return math.nan if x is None else float(x)
    except (TypeError, ValueError):
        return math.nan


def _check_verdict(rec: dict) -> dict:
    v = rec.get("verdict")
    label = v.get("label") if isinstance(v, dict) else None
    why = (f"verdict {label}, not {TRUSTWORTHY}" if label else "no verdict")
    return {"rule": "require_trustworthy", "passed": label == TRUSTWORTHY, "value": label,
            "threshold": TRUSTWORTHY, "why": None if label == TRUSTWORTHY else why}


def _check_skill(rec: dict, x: float) -> dict:
    k = _value(rec.get("skill"))
    if math.isnan(k):
        reason = (rec.get("why_null") or {}).get("skill", "it cannot be computed")
        return {"rule": "min_skill", "passed": False, "value": None, "threshold": x,
                "why": f"skill n/a ({safe(reason, 200)})"}
    ok = k >= x
    return {"rule": "min_skill", "passed": ok, "value": k, "threshold": x,
            "why": None if ok else f"skill {k:.4g} < {x:g}"}


def _check_drop(rec: dict | None, base: dict, x: float) -> dict:
    b = _value(base.get("tps_mean"))
    if rec is None:
        return {"rule": "max_drop", "passed": False, "value": None, "baseline": b if math.isfinite(b) else None,
                "threshold": x, "why": "in the baseline but not in this log"}
    t = _value(rec.get("tps_mean"))
    if math.isnan(t) or math.isnan(b):
        which = "this log's" if math.isnan(t) else "the baseline's"
        return {"rule": "max_drop", "passed": False, "value": None, "baseline": None, "threshold": x,
                "why": f"TPS per run n/a in {which} score"}
    ok = t >= b - x
    drop = b - t
    return {"rule": "max_drop", "passed": ok, "value": rec.get("tps_mean"), "baseline": base.get("tps_mean"),
            "threshold": x, "why": None if ok else f"TPS per run {t:.4g} is {drop:.4g} below the baseline's {b:.4g} "
                                                   f"(at most {x:g})"}


def evaluate_checks(now: dict, base: dict | None, names, require: str | None, min_skill: float | None,
                    max_drop: float | None) -> tuple[dict, list[str]]:
    """The checks of every predictor, from ``score --json`` objects.

    Parameters
    ----------
    now : dict
        This log's ``score --json`` object.
    base : dict or None
        The baseline's (with ``max_drop``).
    names : list of str
        The predictors checked (of ``now``; with a baseline and no choice, the baseline's too).
    require, min_skill, max_drop
        The rules (None: not checked).

    Returns
    -------
    checks : dict
        Predictor -> list of check records (``rule``, ``passed``, ``value``, ``threshold``, ``why``).
    notes : list of str
        Predictors new in the log (the drop is not checked for them).
    """
    checks, notes = {}, []
    for pred in names:
        rec = now["predictors"].get(pred)
        out = []
        if rec is not None and require:
            out.append(_check_verdict(rec))
        if rec is not None and min_skill is not None:
            out.append(_check_skill(rec, min_skill))
        if max_drop is not None:
            if pred in base["predictors"]:
                out.append(_check_drop(rec, base["predictors"][pred], max_drop))
            else:
                notes.append(f"{pred}: not in the baseline, --max-drop not checked")
        checks[pred] = out
    return checks, notes


def _names(args, now: dict, base: dict | None) -> list[str]:
    have = list(now["predictors"])
    if args.predictor:
        unknown = [n for n in args.predictor if n not in have]
        if unknown:
            raise Fail(f"no predictor {', '.join(safe(n, 40) for n in unknown)} in this log "
                       f"(it has {', '.join(safe(n, 40) for n in have) or 'none'})")
        return list(dict.fromkeys(args.predictor))
    own = [n for n in have if not now["predictors"][n].get("reference")]
    gone = [n for n, rec in (base or {}).get("predictors", {}).items() if n not in have and not rec.get("reference")]
    if not own + gone:
        raise Fail(f"{safe(args.path)} holds no forecast of its own, only the reference forecasters "
                   f"({', '.join(safe(n, 40) for n in have)}): nothing to check (name one with --predictor to "
                   "gate it; docs/forecasts.md says how to get a forecast)")
    return own + gone


def run(args) -> int:
    """``check``: 0 when every predictor passes, 1 when some fail (bad input raises :class:`Fail`: 2)."""
    check_args(args)
    _check_rules(args)
    base = _read_baseline(args.baseline_score) if args.baseline_score else None
    try:
        now = _score_object(args)
        names = _names(args, now, base)
        _refuse_unscored(now, names)
    except NothingScored as exc:
        if args.json:  # the checks' object still, with why nothing was scored; then exit 2 (main says why)
            print(json.dumps({"passed": False, "exit_code": EXIT_BAD_INPUT, "rules": _rules_json(args),
                              "nothing_scored": exc.json()}, indent=2, allow_nan=False))
        raise
    if base is not None:
        _comparable(base["settings"], now["settings"], args.baseline_score)
    checks, notes = evaluate_checks(now, base, names, args.require, args.min_skill, args.max_drop)
    failures = [f"{safe(p)}: " + "; ".join(c["why"] for c in cs if not c["passed"])
                for p, cs in checks.items() if not all(c["passed"] for c in cs)]
    code = EXIT_FAILED if failures else 0
    if args.json:
        print(json.dumps(_as_json(args, now, checks, failures, notes, code), indent=2, allow_nan=False))
        return code
    for line in failures:
        print(line)
    if not failures:
        rules = ", ".join(_rule_words(args))
        print(f"ok: {len(checks)} predictor{'s' if len(checks) != 1 else ''} pass ({rules}): "
              + ", ".join(safe(p, 40) for p in checks))
    for note in notes:
        print(f"note: {safe(note)}")
    return code


def _rule_words(args) -> list[str]:
    return ([f"--require {args.require}"] if args.require else []) + (
        [f"--min-skill {args.min_skill:g}"] if args.min_skill is not None else []) + (
        [f"--max-drop {args.max_drop:g} from {safe(args.baseline_score)}"] if args.max_drop is not None else [])


def _rules_json(args) -> dict:
    return {"require": args.require, "min_skill": args.min_skill, "max_drop": args.max_drop,
            "baseline": args.baseline_score}


def _as_json(args, now: dict, checks: dict, failures: list, notes: list, code: int) -> dict:
    s = now["settings"]
    return {
        "passed": not failures, "exit_code": code,
        "rules": _rules_json(args),
        "settings": {k: s.get(k) for k in ("file", "engine", *SETTINGS_COMPARED, "n_boot", "level", "seed",
                                           "n_trajectories")},
        "predictors": {safe(p): {"passed": all(c["passed"] for c in cs), "checks": cs} for p, cs in checks.items()},
        "failures": failures, "notes": [safe(n) for n in notes],
    }
