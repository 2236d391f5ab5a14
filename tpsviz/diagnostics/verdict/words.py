"""The verdict's sentence: one plain sentence per predictor with the numbers behind its label.

:func:`sentence` says what the rules of :mod:`tpsviz.diagnostics.verdict` found; :func:`kind_sentence`
says what the predictor is when that names it (:mod:`tpsviz.diagnostics.verdict.kinds`: a yardstick,
a constant, a conversion at fault). A conversion's sentence always says what was converted and how.
No sentence holds a NaN or a "from x to x".
"""

from __future__ import annotations

import numpy as np

from tpsviz.diagnostics.corp_nulls import N_NULL
from tpsviz.diagnostics.verdict.checks import MIN_CLASS, MIN_RUNS, z_value
from tpsviz.diagnostics.verdict.kinds import lost_ranking

__all__ = ["SUCCESS_WORDS", "sentence", "kind_sentence", "rates_words", "ranking_words"]

#: what counts as success under each censoring mode's labels
SUCCESS_WORDS = {
    "complete": "success",
    "simple": "success within the budget",
    "upper": "success (cut-off runs counted as successes)",
    "exact": "success (cut-off runs counted at q_Z)",
}


def _p(p: float) -> str:
    """A Monte-Carlo p-value: 'p ≤ 0.005' at the smallest value its replicates can give."""
    return f"p ≤ {p:.3f}" if p <= 1 / (1 + N_NULL) + 1e-12 else f"p = {p:.2f}"


def _pct(v: float) -> str:
    return f"{100 * v:.0f}%"


def _signed(v: float) -> str:
    """+0.13, −1.70; two significant digits below 0.01 (+0.0042), never a bare +0.00."""
    return f"{v:+.2f}" if abs(v) >= 0.01 or v == 0 else f"{v:+.2g}"


def _skill_words(s: dict, level: float) -> str:
    """The skill against always saying the base rate, in words conditioned on its point and interval.

    "better than" only when the interval lies above 0, "worse than" only when it lies below, "no
    better than" for a point at or below 0, and "above 0, but not clearly" for a point above 0 whose
    interval reaches 0: rule 6 bars a point at or below 0 (docs/theory.md §8), so a trustworthy
    predictor is never said to be no better than the base rate.
    """
    r = _pct(s["ref_rate"])
    sk, se = s["skill"], s["skill_se"]
    lo, hi = s.get("skill_ci_low", np.nan), s.get("skill_ci_high", np.nan)
    if sk == -np.inf:
        return (f"worse than always saying {r}: a forecast of exactly 0 or 1 turned out wrong, which this "
                "unbounded score punishes without limit (ε = 0)")
    if not np.isfinite(sk):
        return f"skill against always saying {r} is undefined"
    num = f"skill {_signed(sk)}" + (f" ± {_signed(se)[1:]}" if np.isfinite(se) else "")
    if sk > 0 and lo > 0:
        return f"better than always saying {r} ({num})"
    if sk < 0 and hi < 0:
        return f"worse than always saying {r} ({num})"
    if sk > 0:
        ci = (f"{level:.0%} CI {_signed(lo)} to {_signed(hi)}" if np.isfinite(lo) and np.isfinite(hi)
              else "no interval")
        return f"{num} against always saying {r}: above 0, but not clearly ({ci})"
    return f"no better than always saying {r} ({num})"


def ranking_words(s: dict) -> str:
    """The AUROC on the rows of the verdict's discrimination test and, where the leaderboard's AUROC
    counts other runs (the complete ones only), that one too, each with its runs named.

    Parameters
    ----------
    s : dict
        A verdict's statistics (``auroc``, ``auroc_complete``, ``n_runs``, ``n_observed``).

    Returns
    -------
    str
        "AUROC 0.68" (one population), "AUROC 0.68 on these steps, 72 cut-off runs included; 0.43 on
        the 78 complete runs alone, as in the leaderboard", or "" without an AUROC.
    """
    a = s.get("auroc", np.nan)
    if not np.isfinite(a):
        return ""
    n, n_obs = s["n_runs"], s.get("n_observed", s["n_runs"])
    if n_obs >= n:
        return f"AUROC {a:.2f}"
    ac = s.get("auroc_complete", np.nan)
    other = f"{ac:.2f}" if np.isfinite(ac) else "undefined"
    return (f"AUROC {a:.2f} on these steps, {n - n_obs} cut-off runs included; {other} on the {n_obs} complete "
            "runs alone, as in the leaderboard")


def _informative(s: dict) -> str:
    """"informative (discrimination test p …, AUROC …)", said by rank only when the AUROC on the same
    rows is above 0.5."""
    test, rank = f"discrimination test {_p(s['dsc_p'])}", ranking_words(s)
    if not rank:
        return f"informative ({test})"
    if s["auroc"] > 0.5:
        return f"informative ({test}, {rank})"
    return f"informative by the {test}, but not by rank ({rank})"


def _right_on_average(s: dict) -> bool:
    """True when the mean forecast is within 5 points of the success rate over the same steps."""
    return abs(s["mean_forecast"] - s["success_rate"]) < 0.05


def rates_words(s: dict, mode: str, says: str | None = None) -> str:
    """"says 27% on average, against 15% success within the budget over the same steps (22% of runs;
    long runs fail more often)".

    Parameters
    ----------
    s : dict
        A verdict's statistics (``mean_forecast``, ``success_rate``, ``run_rate``).
    mode : str
        The censoring mode whose success the labels count (a key of :data:`SUCCESS_WORDS`).
    says : str, optional
        What the forecast says, in place of "says X% on average" (a constant: "says 51% at every step").

    Returns
    -------
    str
    """
    out = (f"{says or 'says ' + _pct(s['mean_forecast']) + ' on average'}, against "
           f"{_pct(s['success_rate'])} {SUCCESS_WORDS[mode]} over the same steps")
    if _pct(s["success_rate"]) != _pct(s["run_rate"]):
        # the two rates a reader sees (steps here, runs in "always saying r") differ: say why
        longer = "long runs fail more often" if s["success_rate"] < s["run_rate"] else \
            "long runs succeed more often"
        out += f" ({_pct(s['run_rate'])} of runs; {longer})"
    return out


def _lead(name: str, label: str, s: dict) -> str:
    """"name: label — " and, for a conversion, what was converted and how."""
    conv = s.get("conversion") or ""
    return f"{name}: {label} — " + (f"{conv}; " if conv else "")


def _why(label: str, rule: str, s: dict, level: float) -> str:
    """The reason of a rule's label, after the rates."""
    slope = (f"calibration slope {s['slope']:.2f} ± {s['slope_se']:.2f}"
             if np.isfinite(s["slope_se"]) else "")
    rank = ranking_words(s)
    rank = f", {rank}" if rank else ""
    if rule == "dsc":
        return (f"its forecasts point the wrong way: runs it rates higher fail more often (reversed, "
                f"1 − F separates successes from failures: discrimination test {_p(s['dsc_rev_p'])}{rank}); as "
                "reported they carry no usable signal"
                if s["dsc_rev_p"] < 1 - level else
                f"its forecasts separate successes from failures no better than on shuffled "
                f"outcomes (discrimination test {_p(s['dsc_p'])}{rank})")
    if rule == "slope":
        return (("right on average, but " if _right_on_average(s) else "")
                + ("too extreme both ways" if label == "overconfident" else "too timid, hugging the middle")
                + (f" ({slope}; 1 = calibrated)" if slope else ""))
    if rule == "mcb":
        if label == "underconfident" and s.get("separation", 0) > 0 and not slope:
            return (f"too timid: it rates every success above every failure, yet its forecasts stay between "
                    f"{_pct(s.get('forecast_min', np.nan))} and {_pct(s.get('forecast_max', np.nan))} (CORP "
                    f"miscalibration test {_p(s['mcb_p'])})")
        return f"miscalibrated (CORP miscalibration test {_p(s['mcb_p'])}" + (f", {slope}" if slope else "") + ")"
    if rule == "skill":  # skill <= 0
        return "calibrated, but"
    if rule == "all":
        return "calibrated" + (f" ({slope})" if slope else "") + f" and {_informative(s)}"
    return ""  # bias: the rates say it


def sentence(name: str, label: str, rule: str, s: dict, level: float, mode: str) -> str:
    """The sentence of a label of the rules (:data:`tpsviz.diagnostics.verdict.RULE_LABELS`).

    Parameters
    ----------
    name, label, rule : str
        The predictor, its label and the rule that decided it.
    s : dict
        Its statistics and skill.
    level : float
    mode : str
        Whose success the labels count (a key of :data:`SUCCESS_WORDS`).

    Returns
    -------
    str
        "name: label — reason" (the reason first says how a conversion was made).
    """
    lead = _lead(name, label, s)
    if label == "too little data":
        n_obs, k_obs = s.get("n_observed", s["n_runs"]), s.get("n_observed_success", 0)
        return (f"{lead}{n_obs} runs with an observed outcome "
                f"({k_obs} successes, {n_obs - k_obs} failures) among the {s['n_runs']} it forecasts; "
                f"a verdict needs at least {MIN_RUNS} runs and {MIN_CLASS} of each outcome")
    head = lead + rates_words(s, mode)
    why = _why(label, rule, s, level)
    skill = _skill_words(s, level)
    reversed_ = (rule != "dsc" and s.get("dsc_rev_p", 1.0) < 1 - level
                 and not s.get("dsc_p", 0.0) < 1 - level)
    if reversed_:  # whatever else is wrong, say that the signal runs backwards
        rank = ranking_words(s)
        why = (why + "; " if why else "") + (
            f"its forecasts point the wrong way: runs it rates higher fail more often (discrimination "
            f"of 1 − F: {_p(s['dsc_rev_p'])}" + (f"; {rank}" if rank else "") + ")")
    if rule == "skill":
        return f"{head}; {why} {skill}"
    return f"{head}; " + (f"{why}; " if why else "") + skill


def _auroc(a: float, lo: float, hi: float, level: float) -> str:
    ci = f", {level:.0%} CI {lo:.2f}–{hi:.2f}" if np.isfinite(lo) and np.isfinite(hi) else ""
    return f"AUROC {a:.2f}{ci}"


def _ranks(lo: float, hi: float) -> str:
    """How a signal ranks runs against chance, conditioned on its interval."""
    if lo > 0.5:
        return "better than chance"
    if hi < 0.5:
        return "worse than chance"
    return "no better than chance"


def _conversion_reason(label: str, s: dict, level: float) -> str:
    """Why a conversion is at fault: its ranking, its source's, and whose fault it is."""
    src = s["source"]
    a_c, lo_c, hi_c = s["conversion_auroc"], s["conversion_auroc_ci_low"], s["conversion_auroc_ci_high"]
    a_s, lo_s, hi_s = s["source_auroc"], s["source_auroc_ci_low"], s["source_auroc_ci_high"]
    dz = s.get("conversion_delta_z", np.nan)
    conv = s.get("conversion") or f"the conversion of {src}"
    n, n_obs = s.get("n_runs", 0), s.get("n_observed", 0)
    on = f" on the {n_obs} complete runs, as in the leaderboard" if 0 < n_obs < n else ""  # its rows
    if hi_c < 0.5:
        how = f"ranks runs worse than chance{on} ({_auroc(a_c, lo_c, hi_c, level)})"
    elif lost_ranking(s, level):
        how = (f"lost most of its ranking{on} ({_auroc(a_c, lo_c, hi_c, level)}, against {a_s:.2f} for {src} by "
               f"itself; the difference is {dz:.1f} standard errors)")
    else:
        how = f"does not rank runs better than chance{on} ({_auroc(a_c, lo_c, hi_c, level)})"
    out = f"{conv}, {how}; {src} by itself ranks them {_ranks(lo_s, hi_s)} ({_auroc(a_s, lo_s, hi_s, level)}): "
    if label == "too weak to convert":
        return out + "too weak a signal to convert, so this judges the conversion, not the agent's signal"
    return out + (f"the cross-fitted maps lost most of its ranking: judge {src} by its own ranking, or try fewer "
                  "folds or the other method")


def _constant_sentence(name: str, s: dict, level: float, mode: str) -> str:
    """A constant against the base rate of runs (what "always saying r" says), within the binomial noise
    of that rate at ``level``."""
    c, r, n = s["forecast_min"], s["run_rate"], max(s["n_runs"], 1)
    near = abs(c - r) <= z_value(level) * np.sqrt(max(r * (1 - r), 0.0) / n) if np.isfinite(r) else True
    where = "the base rate" if near else f"{'above' if c > r else 'below'} the base rate ({_pct(r)} of runs)"
    return (f"{_lead(name, 'constant', s)}{rates_words(s, mode, f'says {_pct(c)} at every step')}; {where}, "
            f"uninformative by construction: one value cannot tell runs apart; {_skill_words(s, level)}")


def kind_sentence(name: str, label: str, s: dict, level: float, mode: str, rules_label: str, rules_rule: str) -> str:
    """The sentence of a label that names what the predictor is (:mod:`tpsviz.diagnostics.verdict.kinds`).

    Parameters
    ----------
    name : str
    label : str
        ``yardstick``, ``constant``, ``too weak to convert`` or ``conversion failed``.
    s : dict
        The predictor's statistics and skill.
    level : float
    mode : str
        Whose success the labels count (a key of :data:`SUCCESS_WORDS`).
    rules_label, rules_rule : str
        What the rules found (a yardstick's sentence says it).

    Returns
    -------
    str
    """
    if label == "yardstick":
        found = sentence(name, rules_label, rules_rule, s, level, mode).split(" — ", 1)[1]
        return (f"{name}: yardstick — a reference forecaster fitted on other runs' outcomes, not the agent's "
                f"confidence: the bar a real signal has to clear; as a forecast it is {rules_label}: {found}")
    if label == "constant":
        return _constant_sentence(name, s, level, mode)
    reason = _conversion_reason(label, s, level)
    return f"{name}: {label} — {reason}; the conversion {rates_words(s, mode)}; {_skill_words(s, level)}"
