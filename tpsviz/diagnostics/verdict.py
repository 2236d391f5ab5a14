"""A verdict per predictor: can its confidence be trusted, and if not, how is it wrong.

The rules are stated in docs/theory.md §8 and decided in this order (the first that holds wins):

1. ``too little data``: fewer than :data:`MIN_RUNS` scored runs with a label, or fewer than
   :data:`MIN_CLASS` of either outcome.
2. ``optimistic`` / ``pessimistic``: calibration in the large fails. The bias
   b̄ = mean over labelled step rows of (F_t − ℓ) is significantly above (below) 0, with a
   standard error clustered by trajectory. (Step-weighted on purpose: for a truthful F,
   E[Σ_{t≤T} (F_t − Y)] = 0 at any stopping time T; a mean per run is not 0 when the length of
   a run depends on its outcome.)
3. ``uninformative``: no discrimination. The CORP discrimination DSC (half Brier score) is not
   above what the same forecasts reach on outcomes shuffled across runs (permutation test).
4. ``overconfident`` / ``underconfident``: the calibration slope b of the logistic fit
   logit P(ℓ = 1) = a + b·logit F_t is significantly below (above) 1 (SE clustered by run):
   too extreme (too timid) both ways.
5. ``overconfident`` / ``underconfident`` / ``optimistic`` / ``pessimistic``: the CORP
   miscalibration MCB is significant under the consistency-resampling null, i.e. the forecasts
   are miscalibrated in a shape steps 2 and 4 missed; the label names the larger of the two
   deviations (bias or slope, in SE units). Forecasts that separate the outcomes perfectly
   have slope +∞ (no fit): ``underconfident``.
6. ``uninformative``: calibrated, but the skill against the constant base-rate forecast is not
   above 0 (no better than always saying the base rate).
7. ``trustworthy``: none of the above.

The three calibration checks (2, 4, 5) share the error rate 1 − level (Bonferroni: each at
(1 − level)/3), so a truthful predictor is called ``trustworthy`` in about ``level`` of logs
where it is informative; discrimination (3) is tested at 1 − level.

Labels ℓ follow the censoring mode of the score, so the verdict judges the forecast the score
rewards: complete runs count Y; censored runs count 0 (simple), 1 (upper), q_Z (exact) or are
left out (complete-case).

The numbers behind the rules are computed in :mod:`tpsviz.diagnostics.verdict_checks` (bias, slope,
separation) and :mod:`tpsviz.diagnostics.corp_nulls` (the CORP tests: consistency resampling for
MCB, permutations for DSC); this module decides the label and says it in one sentence.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, replace

import numpy as np

from tpsviz.core.cancel import checkpoint
from tpsviz.core.data import TrajectoryData
from tpsviz.core.censoring import default_censoring
from tpsviz.core.tps import ScoreSettings, TPSResult
from tpsviz.diagnostics.corp_nulls import N_NULL
from tpsviz.diagnostics.leaderboard import skill_table
from tpsviz.diagnostics.verdict_checks import row_statistics, verdict_rows, z_value
import contextvars
from concurrent.futures import ThreadPoolExecutor

__all__ = ["LABELS", "Verdict", "verdicts", "verdict_statistics", "statistics_for", "RULES", "MIN_RUNS",
           "MIN_CLASS"]

#: the fixed set of labels, in the order the rules try them
LABELS = ("too little data", "optimistic", "pessimistic", "uninformative", "overconfident",
          "underconfident", "trustworthy")
#: a verdict needs this many labelled runs …
MIN_RUNS = 20
#: … and this many of each outcome (expected counts for soft labels)
MIN_CLASS = 5

#: the rules in words (for the page, the README and the report)
RULES = (
    ("too little data", f"fewer than {MIN_RUNS} runs with an outcome, or fewer than "
                        f"{MIN_CLASS} successes or failures"),
    ("optimistic / pessimistic", "the mean forecast is significantly above / below the success "
                                 "rate (bias F − Y with a CI clustered by run)"),
    ("uninformative", "the forecasts separate successes from failures no better than on "
                      "shuffled outcomes (CORP discrimination, permutation test), or they are "
                      "calibrated but their skill against always saying the base rate is not "
                      "above 0"),
    ("overconfident / underconfident", "the calibration slope (logistic fit of the outcome on "
                                       "logit F) has a CI below / above 1: too extreme / too "
                                       "timid both ways; or the CORP miscalibration test "
                                       "(consistency resampling) fails and this is the larger "
                                       "deviation"),
    ("trustworthy", "none of the above: calibrated (the bias, slope and CORP miscalibration "
                    "checks pass; together they wrongly fail a truthful predictor in about "
                    "5% of logs) and informative (discrimination test, skill above 0)"),
)

#: what counts as success under each censoring mode's labels
_SUCCESS = {
    "complete": "success",
    "simple": "success within the budget",
    "upper": "success (cut-off runs counted as successes)",
    "exact": "success (cut-off runs counted at q_Z)",
}


@dataclass(frozen=True)
class Verdict:
    """The verdict on one predictor and the numbers behind it.

    Attributes
    ----------
    predictor, label, text : str
        The predictor, its label (one of :data:`LABELS`) and one plain sentence.
    rule : str
        Which rule decided the label.
    n_runs, n_rows : int
        Labelled runs and step rows with a forecast.
    n_success, n_failure : float
        Outcome counts (expected counts for soft labels of the exact mode).
    n_observed, n_observed_success : int
        Runs whose outcome was observed (complete runs), and their successes: rule 1 needs
        enough of these too, so censored runs labelled by q_Z alone never make a verdict.
    forecast_min, forecast_max : float
        Smallest and largest forecast over the labelled step rows.
    mean_forecast, success_rate : float
        Mean F_t and mean label ℓ over the labelled step rows (step-weighted: the pair the
        bias compares).
    run_rate : float
        Mean label over the labelled runs (each run once).
    bias, bias_se : float
        mean(F_t − ℓ) and its SE clustered by run (> 0: optimistic).
    slope, slope_se, slope_ci_low, slope_ci_high : float
        Calibration slope b (1 = calibrated; NaN for a constant or separating forecast).
    separation : int
        +1 when every success is forecast above every failure (outcome labels 0/1; the slope
        is then +∞, not estimable), −1 when every success is forecast below every failure, else 0.
    mcb, mcb_p, dsc, dsc_p, unc : float
        CORP decomposition of the half Brier score and the two test p-values.
    dsc_rev_p : float
        Permutation p-value of the discrimination of the reversed forecast 1 − F (small: the
        forecasts point the wrong way).
    n_test_runs : int
        Runs the CORP tests used (all, or a seeded subset of
        :data:`~tpsviz.diagnostics.verdict_checks.MAX_TEST_RUNS`).
    skill, skill_se, skill_ci_low, skill_ci_high, ref_rate : float
        Skill against the base-rate reference F ≡ ref_rate (:func:`skill_table`).
    level : float
        Confidence level of every interval and test (tests at 1 − level).
    """

    predictor: str
    label: str
    text: str
    rule: str
    n_runs: int
    n_rows: int
    n_success: float
    n_failure: float
    n_observed: int
    n_observed_success: int
    forecast_min: float
    forecast_max: float
    mean_forecast: float
    success_rate: float
    run_rate: float
    bias: float
    bias_se: float
    slope: float
    slope_se: float
    slope_ci_low: float
    slope_ci_high: float
    separation: int
    mcb: float
    mcb_p: float
    dsc: float
    dsc_p: float
    unc: float
    dsc_rev_p: float
    n_test_runs: int
    skill: float
    skill_se: float
    skill_ci_low: float
    skill_ci_high: float
    ref_rate: float
    level: float

    def to_dict(self) -> dict:
        """Plain dict (NaN → None), for JSON."""
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                for k, v in asdict(self).items()}


# --------------------------------------------------------------------------- rules
def _z_cal(level: float) -> float:
    """Two-sided critical value of each of the three calibration checks (Bonferroni over 3)."""
    return z_value(1 - (1 - level) / 3)


def _decide(s: dict, level: float) -> tuple[str, str]:
    """(label, rule) from the statistics of one predictor (the rules of the module docstring)."""
    alpha_cal = (1 - level) / 3  # bias, slope and MCB share the error rate 1 − level
    z = _z_cal(level)
    n_obs, k_obs = s.get("n_observed", s["n_runs"]), s.get("n_observed_success", s["n_success"])
    if (s["n_runs"] < MIN_RUNS or min(s["n_success"], s["n_failure"]) < MIN_CLASS
            or n_obs < MIN_RUNS or min(k_obs, n_obs - k_obs) < MIN_CLASS):
        return "too little data", "data"
    zb = s["bias"] / s["bias_se"] if s["bias_se"] > 0 else np.nan
    if np.isfinite(zb) and abs(zb) > z:
        return ("optimistic" if zb > 0 else "pessimistic"), "bias"
    if not s["dsc_p"] < 1 - level:
        return "uninformative", "dsc"
    zs = (s["slope"] - 1) / s["slope_se"] if s["slope_se"] > 0 else np.nan
    if np.isfinite(zs) and abs(zs) > z:
        return ("overconfident" if zs < 0 else "underconfident"), "slope"
    if s["mcb_p"] < alpha_cal:
        if not np.isfinite(zs) and s.get("separation", 0):
            # the outcomes are separated perfectly: the slope is ±∞, not a bias (adversarial pass 7:
            # F = 0.6 / 0.4 on certain successes / failures was called optimistic or pessimistic by
            # the sign of an insignificant bias)
            return ("underconfident" if s["separation"] > 0 else "overconfident"), "mcb"
        if np.isfinite(zs) and not (np.isfinite(zb) and abs(zb) > abs(zs)):
            return ("overconfident" if zs < 0 else "underconfident"), "mcb"
        if np.isfinite(zb):
            return ("optimistic" if zb > 0 else "pessimistic"), "mcb"
        return "overconfident", "mcb"
    if not s["skill"] > 0:
        return "uninformative", "skill"
    return "trustworthy", "all"


def _p(p: float) -> str:
    """A Monte-Carlo p-value: 'p ≤ 0.005' at the smallest value its replicates can give."""
    return f"p ≤ {p:.3f}" if p <= 1 / (1 + N_NULL) + 1e-12 else f"p = {p:.2f}"


def _pct(v: float) -> str:
    return f"{100 * v:.0f}%"


def _signed(v: float) -> str:
    """+0.13, −1.70; two significant digits below 0.01 (+0.0042), never a bare +0.00."""
    return f"{v:+.2f}" if abs(v) >= 0.01 or v == 0 else f"{v:+.2g}"


def _skill_words(s: dict) -> str:
    r = _pct(s["ref_rate"])
    sk, se = s["skill"], s["skill_se"]
    if sk == -np.inf:
        return (f"worse than always saying {r}: a forecast of exactly 0 or 1 turned out wrong, which this "
                "unbounded score punishes without limit (ε = 0)")
    if not np.isfinite(sk):
        return f"skill against always saying {r} is undefined"
    pm = f" ± {_signed(se)[1:]}" if np.isfinite(se) else ""
    if s["skill_ci_low"] > 0:
        word = "better than"
    elif s["skill_ci_high"] < 0:
        word = "worse than"
    else:
        word = "not clearly better than"
    return f"{word} always saying {r} (skill {_signed(sk)}{pm})"


def _right_on_average(s: dict) -> bool:
    """True when the mean forecast is within 5 points of the success rate over the same steps."""
    return abs(s["mean_forecast"] - s["success_rate"]) < 0.05


def _sentence(name: str, label: str, rule: str, s: dict, level: float, mode: str) -> str:
    """One plain sentence with the numbers behind the label (no NaN, no 'from x to x')."""
    if label == "too little data":
        n_obs, k_obs = s.get("n_observed", s["n_runs"]), s.get("n_observed_success", 0)
        return (f"{name}: too little data — {n_obs} runs with an observed outcome "
                f"({k_obs} successes, {n_obs - k_obs} failures) among the {s['n_runs']} it forecasts; "
                f"a verdict needs at least {MIN_RUNS} runs and {MIN_CLASS} of each outcome")
    head = (f"{name}: {label} — says {_pct(s['mean_forecast'])} on average, against "
            f"{_pct(s['success_rate'])} {_SUCCESS[mode]} over the same steps")
    if _pct(s["success_rate"]) != _pct(s["run_rate"]):
        # the two rates a reader sees (steps here, runs in "always saying r") differ: say why
        longer = "long runs fail more often" if s["success_rate"] < s["run_rate"] else \
            "long runs succeed more often"
        head += f" ({_pct(s['run_rate'])} of runs; {longer})"
    slope = (f"calibration slope {s['slope']:.2f} ± {s['slope_se']:.2f}"
             if np.isfinite(s["slope_se"]) else "")
    why = {
        "bias": "",
        "dsc": (f"its forecasts point the wrong way: runs it rates higher fail more often (reversed, "
                f"1 − F separates successes from failures: discrimination test {_p(s['dsc_rev_p'])}); as "
                "reported they carry no usable signal"
                if s["dsc_rev_p"] < 1 - level else
                f"its forecasts separate successes from failures no better than on shuffled "
                f"outcomes (discrimination test {_p(s['dsc_p'])})"),
        "slope": ("right on average, but " if _right_on_average(s) else "")
                 + ("too extreme both ways" if label == "overconfident"
                    else "too timid, hugging the middle") + (f" ({slope}; 1 = calibrated)"
                                                            if slope else ""),
        "mcb": (f"too timid: it rates every success above every failure, yet its forecasts stay between "
                f"{_pct(s.get('forecast_min', np.nan))} and {_pct(s.get('forecast_max', np.nan))} (CORP "
                f"miscalibration test {_p(s['mcb_p'])})"
                if label == "underconfident" and s.get("separation", 0) > 0 and not slope else
                f"miscalibrated (CORP miscalibration test {_p(s['mcb_p'])}"
                + (f", {slope}" if slope else "") + ")"),
        "skill": "calibrated, but",  # skill <= 0
        "all": ("calibrated" + (f" ({slope})" if slope else "") + " and informative "
                f"(discrimination test {_p(s['dsc_p'])}); "
                + ("" if s["skill_ci_low"] > 0 else "but ")),
    }[rule]
    skill = _skill_words(s)
    reversed_ = (rule != "dsc" and s.get("dsc_rev_p", 1.0) < 1 - level
                 and not s.get("dsc_p", 0.0) < 1 - level)
    if reversed_:  # whatever else is wrong, say that the signal runs backwards
        why = (why + "; " if why else "") + (
            f"its forecasts point the wrong way: runs it rates higher fail more often (discrimination "
            f"of 1 − F: {_p(s['dsc_rev_p'])})")
    if rule == "skill":
        return f"{head}; {why} {skill}"
    if rule == "all":
        return f"{head}; {why}{skill}"
    return f"{head}; " + (f"{why}; " if why else "") + skill


# --------------------------------------------------------------------------- entry point
def verdict_statistics(data: TrajectoryData, settings: ScoreSettings, name: str, q_z=None,
                       n_null: int = N_NULL) -> dict:
    """The statistics behind one predictor's verdict (all but the skill).

    They depend on the labels (censoring mode, q_Z), the level and the seed, not on α, β, the
    schedule or ε, so a dashboard can keep them while those move.

    Returns
    -------
    dict
        ``n_runs``, ``n_rows``, ``n_success``, ``n_failure``, ``run_rate``, ``mean_forecast``,
        ``success_rate``, ``bias``, ``bias_se``, ``slope`` (+ ``_se``, ``_ci_low``,
        ``_ci_high``), ``mcb``, ``mcb_p``, ``dsc``, ``dsc_p``, ``unc`` (see :class:`Verdict`).
    """
    # seeded by the predictor's name: its verdict does not depend on which others are shown
    rng = np.random.default_rng([int(settings.seed) % 2 ** 63,
                                 zlib.crc32(name.encode("utf-8", "replace"))])
    return row_statistics(*verdict_rows(data, settings, q_z, name), settings.level, rng, int(n_null))


STAT_THREADS = 2   # predictors whose statistics are computed at once (the null loops release the GIL in
                   # numpy and the PAV kernel: 3 predictors × 5,000 runs, 3.25 s → 1.86 s on 2 cores)


def statistics_for(data: TrajectoryData, settings: ScoreSettings, names: list[str], q_z=None,
                   n_null: int = N_NULL, threads: int = STAT_THREADS) -> dict:
    """:func:`verdict_statistics` of several predictors, up to ``threads`` at once.

    Each predictor's statistics are seeded by its name, so the result is the same as one at a time;
    the worker threads run in copies of the caller's context, so its cancel predicate
    (:mod:`tpsviz.core.cancel`) still stops them.
    """
    names = list(names)
    if threads <= 1 or len(names) <= 1:
        return {n: verdict_statistics(data, settings, n, q_z, n_null) for n in names}

    with ThreadPoolExecutor(min(threads, len(names)), thread_name_prefix="tpsviz-verdict") as ex:
        futures = {n: ex.submit(contextvars.copy_context().run, verdict_statistics, data, settings, n, q_z, n_null)
                   for n in names}
        return {n: f.result() for n, f in futures.items()}


def verdicts(data: TrajectoryData, settings: ScoreSettings | None = None,
             predictors: list[str] | None = None, q_z=None, skill=None,
             result: TPSResult | None = None, n_null: int = N_NULL,
             statistics: dict | None = None) -> dict[str, Verdict]:
    """The verdict on every predictor, decided by the stated rules (module docstring, docs/theory.md §8).

    Parameters
    ----------
    data : TrajectoryData
    settings : ScoreSettings, optional
        The score: the censoring mode sets the labels ℓ, the level sets every test and
        interval; the skill uses α, β, schedule and ε. The bias, slope and CORP tests do not
        depend on α, β or the schedule (CORP uses the half Brier score).
    predictors : list of str, optional
        Default: every predictor.
    q_z : array_like or Series, optional
        q_Z estimates for exact mode (as in :func:`~tpsviz.core.tps.compute_tps`).
    skill : DataFrame, optional
        :func:`~tpsviz.diagnostics.leaderboard.skill_table` already computed under ``settings`` with a
        bootstrap (saves recomputing it); rule 6 uses its point estimate, the sentence its SE.
    result : TPSResult, optional
        TPS already computed under ``settings`` (passed on to the skill table).
    n_null : int
        Replicates of the MCB and DSC null distributions (seeded by ``settings.seed``).
    statistics : dict, optional
        ``{name: verdict_statistics(...)}`` already computed under the same labels.

    Returns
    -------
    dict of str to Verdict
        In the order of ``predictors``.
    """
    settings = settings or ScoreSettings(censoring=default_censoring(data))
    names = list(data.predictors if predictors is None else predictors)
    if skill is None or not np.isfinite(skill.get("skill_se", np.nan)).any():
        boot = replace(settings, n_boot=max(int(settings.n_boot), 200))
        skill = skill_table(data, boot, names, q_z=q_z, result=result)
    missing = [n for n in names if not (statistics and n in statistics)]
    statistics = {**(statistics or {}), **statistics_for(data, settings, missing, q_z, n_null)}
    out = {}
    for name in names:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        s = dict(statistics[name])
        k = skill.loc[name]
        s.update(skill=float(k["skill"]), skill_se=float(k["skill_se"]),
                 skill_ci_low=float(k["skill_ci_low"]), skill_ci_high=float(k["skill_ci_high"]),
                 ref_rate=float(k["ref_rate"]))
        label, rule = _decide(s, settings.level)
        # "within the budget" and the like only when some run was actually cut off
        words = settings.censoring if data.n_censored else "complete"
        text = _sentence(name, label, rule, s, settings.level, words)
        out[name] = Verdict(predictor=name, label=label, text=text, rule=rule,
                            level=settings.level, **s)
    return out
