"""Rates with their Monte-Carlo SEs from the logs ``bench/validate.py`` measured, and docs/validation.md.

Imported by ``bench/validate.py`` (a script's own folder is on sys.path).
"""

from __future__ import annotations

import collections
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np

from validate_measure import GROUPS, PAIRED_BASELINE, QUANTITIES
from tpsviz.synthetic.validation import EXPECTED_LABELS

GOAL_FALSE_ALARM = 0.05
GOAL_COVERAGE = (0.93, 0.97)
GOAL_BIAS = 0.02
#: goals on false alarms and coverage apply to scenarios with at least this many runs
GOAL_MIN_RUNS = 200
CALIBRATION_LABELS = ("optimistic", "pessimistic", "overconfident", "underconfident")
QUANTITY_WORDS = {"tps": "mean TPS", "skill": "skill", "paired": f"paired Δ (truthful − {PAIRED_BASELINE})",
                  "unpaired": f"unpaired Δ ({GROUPS[1]} − {GROUPS[0]})", "auroc": "AUROC"}


def _rate(k: float, n: int) -> dict:
    p = k / n if n else math.nan
    return {"rate": p, "se": math.sqrt(p * (1 - p) / n) if n else math.nan, "k": k, "n": n}


def _false_alarm(spec, labels: list[str]) -> dict:
    n = len(labels)
    c = collections.Counter(labels)
    out = _rate(n - c["trustworthy"], n)
    out["uninformative"] = _rate(c["uninformative"], n)
    out["calibration"] = _rate(sum(c[x] for x in CALIBRATION_LABELS), n)
    out["other"] = _rate(n - c["trustworthy"] - c["uninformative"] - out["calibration"]["k"], n)
    out["labels"] = dict(c)
    # the goal is on the labels that blame a truthful forecast (calibration and other); "uninformative" says
    # its discrimination was not shown, which is power, reported beside it (issue 45: separately)
    out["blaming"] = _rate(n - c["trustworthy"] - c["uninformative"], n)
    out["applies"] = spec.n_runs >= GOAL_MIN_RUNS
    out["met"] = bool(out["blaming"]["rate"] <= GOAL_FALSE_ALARM) if out["applies"] else None
    return out


def _power(labels: list[str], expected: tuple) -> dict:
    n = len(labels)
    c = collections.Counter(labels)
    hit = sum(c[x] for x in expected)
    out = _rate(hit, n) | {"expected": list(expected), "labels": dict(c)}
    out["trustworthy"] = _rate(c["trustworthy"], n)
    out["wrong"] = _rate(n - hit - c["trustworthy"], n)
    return out


def _coverage(spec, recs: list[dict], q: str, truth: dict) -> dict:
    value, tse = truth["value"][q], truth["se"][q]
    ivs = [r["intervals"][q] for r in recs]
    ok = [iv for iv in ivs if iv is not None and np.isfinite(iv[1]) and np.isfinite(iv[2])]
    hits = sum(lo <= value <= hi for _, lo, hi in ok)
    out = _rate(hits, len(ok)) | {"undefined": len(ivs) - len(ok), "truth": value, "truth_se": tse}
    half = np.median([(hi - lo) / 2 for _, lo, hi in ok]) if ok else math.nan
    out["median_half_width"] = float(half)
    out["truth_se_over_se"] = float(tse / (half / 1.96)) if ok and half > 0 else math.nan
    est = np.array([e for e, _, _ in ok])
    sd = float(est.std(ddof=1)) if est.size >= 2 else math.nan
    # why an interval misses: the estimates' mean off the truth (in SDs of the estimates), or the
    # intervals too narrow for the estimates' spread (their SD over the median SE the intervals imply)
    out["mean_estimate"] = float(est.mean()) if est.size else math.nan
    out["bias_over_sd"] = float((est.mean() - value) / sd) if sd > 0 else math.nan
    out["sd_over_se"] = float(sd / (half / 1.96)) if sd > 0 and half > 0 else math.nan
    out["above"] = _rate(sum(value > hi for _, lo, hi in ok), len(ok))["rate"]  # the CI misses low
    out["below"] = _rate(sum(value < lo for _, lo, hi in ok), len(ok))["rate"]
    out["applies"] = spec.n_runs >= GOAL_MIN_RUNS
    out["met"] = bool(GOAL_COVERAGE[0] <= out["rate"] <= GOAL_COVERAGE[1]) if out["applies"] and ok else None
    return out


def _conversions(recs: list[dict]) -> dict:
    out = {}
    for name in recs[0]["bias"]:
        b = np.array([r["bias"][name] for r in recs])
        labels = [r["labels"][name] for r in recs]
        c = collections.Counter(labels)
        out[name] = {"bias": float(b.mean()), "bias_se": float(b.std(ddof=1) / np.sqrt(b.size)),
                     "met": bool(abs(b.mean()) <= GOAL_BIAS), "trustworthy": _rate(c["trustworthy"], len(b)),
                     "labels": dict(c)}
    return out


def summarise(specs, records: list[dict], truth: dict, meta: dict) -> dict:
    """Every rate per scenario, with its MC SE and whether its goal is met; and the list of misses."""
    by = collections.defaultdict(list)
    for r in records:
        by[r["scenario"]].append(r)
    scenarios = []
    for spec in specs:
        recs = by[spec.name]
        labels = {name: [r["labels"][name] for r in recs] for name in recs[0]["labels"]}
        t = truth[spec.truth_key]
        scenarios.append(asdict(spec) | {
            "horizon": spec.horizon, "schedule_spec": spec.schedule_spec, "n_logs": len(recs),
            "censored": float(np.mean([r["censored"] for r in recs])),
            "seconds_per_log": float(np.mean([r["seconds"] for r in recs])),
            "false_alarm": _false_alarm(spec, labels["truthful"]),
            "power": {d: _power(labels[d], exp) for d, exp in EXPECTED_LABELS.items()},
            "coverage": {q: _coverage(spec, recs, q, t) for q in QUANTITIES},
            "conversions": _conversions(recs), "truth": t})
    results = {"meta": meta, "goals": {"false_alarm": GOAL_FALSE_ALARM, "coverage": list(GOAL_COVERAGE),
                                       "bias": GOAL_BIAS, "min_runs": GOAL_MIN_RUNS},
               "scenarios": scenarios}
    results["missed"] = missed(results)
    return results


def clearly(gap: float, se: float) -> str:
    """"clearly" when a miss is beyond 2 MC SE of the goal, else "within MC error" (it may be noise)."""
    return "clearly" if se > 0 and gap > 2 * se or se == 0 and gap > 0 else "within 2 MC SE"


def missed(results: dict) -> list[str]:
    """Every goal missed, in words: by how much (clearly: beyond 2 MC SE of the goal) and why."""
    out = []
    for s in results["scenarios"]:
        fa = s["false_alarm"]
        if fa["met"] is False:
            b = fa["blaming"]
            out.append(f"{s['name']}: false alarms (calibration and other labels) {pct(b)} > "
                       f"{GOAL_FALSE_ALARM:.0%}, "
                       f"{clearly(b['rate'] - GOAL_FALSE_ALARM, b['se'])} (besides uninformative "
                       f"{pct(fa['uninformative'])}; labels {fa['labels']})")
        for q, c in s["coverage"].items():
            if c["met"] is False:
                gap = max(GOAL_COVERAGE[0] - c["rate"], c["rate"] - GOAL_COVERAGE[1])
                out.append(f"{s['name']}: coverage of {QUANTITY_WORDS[q]} {pct(c)} outside "
                           f"{GOAL_COVERAGE[0]:.0%}–{GOAL_COVERAGE[1]:.0%}, {clearly(gap, c['se'])}"
                           f"{miss_side(c)}; {diagnosis(c)}")
        for name, c in s["conversions"].items():
            if not c["met"]:
                out.append(f"{s['name']}: {name} bias {c['bias']:+.3f} ± {c['bias_se']:.3f}, |bias| > {GOAL_BIAS}, "
                           f"{clearly(abs(c['bias']) - GOAL_BIAS, c['bias_se'])}")
    return out


def diagnosis(c: dict) -> str:
    """Why intervals miss, from the estimates over the logs: their SD against the SE the intervals imply,
    and their mean against the truth."""
    return (f"the estimates' SD is {c['sd_over_se']:.2f}× the SE the intervals imply, their mean "
            f"{c['bias_over_sd']:+.2f} SD off the truth")


def miss_side(c: dict) -> str:
    """Where the truth lies when an interval misses it, in words ("" without a miss)."""
    if not (c["above"] or c["below"]):
        return ""
    return (f" (truth above the interval in {100 * c['above']:.1f}%, below in {100 * c['below']:.1f}% of logs)")


def pct(r: dict) -> str:
    return f"{100 * r['rate']:.1f} ± {100 * r['se']:.1f}%" if np.isfinite(r["rate"]) else "n/a"


def cell(r: dict) -> str:
    return f"{100 * r['rate']:.1f} ± {100 * r['se']:.1f}" if np.isfinite(r["rate"]) else "n/a"


def mark(met) -> str:
    return {True: "met", False: "**missed**", None: "—"}[met]


def summary_text(results: dict) -> str:
    """A few lines: time, then per scenario the false alarms, worst coverage and conversion bias."""
    m = results["meta"]
    lines = [f"validation ({m['design']}): {sum(s['n_logs'] for s in results['scenarios'])} logs in "
             f"{m['seconds']:.0f} s on {m['workers']} workers (truths {m['truth_seconds']:.0f} s); "
             f"conversions fitted on {m['fit_population']}"]
    for s in results["scenarios"]:
        cov = min(s["coverage"].values(), key=lambda c: abs(c["rate"] - 0.95) if np.isfinite(c["rate"]) else 0)
        worst = next(q for q, c in s["coverage"].items() if c is cov)
        bias = max(s["conversions"].values(), key=lambda c: abs(c["bias"]))
        power = min(p["rate"] for p in s["power"].values())
        lines.append(f"  {s['name']:<27} {s['n_logs']:>4} logs  false alarms {cell(s['false_alarm']['blaming']):>11}%  "
                     f"least power {100 * power:5.1f}%  coverage furthest from 95%: {worst} {cell(cov)}%  "
                     f"largest |conversion bias| {bias['bias']:+.3f}")
    lines.append("goals missed:" if results["missed"] else "every goal met")
    lines += [f"  - {x}" for x in results["missed"]]
    return "\n".join(lines)
