"""A verdict per predictor: can its confidence be trusted, and if not, how is it wrong.

The rules are stated in docs/theory.md §8 and decided in this order (the first that holds wins):

1. ``too little data``: fewer than :data:`MIN_RUNS` scored runs with a label, or fewer than
   :data:`MIN_CLASS` of either outcome.
2. ``optimistic`` / ``pessimistic``: calibration in the large fails. The bias
   b̄ = mean over labelled step rows of (F_t − ℓ) is significantly above (below) 0, with a
   standard error clustered by trajectory, tested by the studentized bootstrap by run
   (:func:`~tpsviz.diagnostics.verdict.checks.bias_test`: the law of b̄/SE where a few long runs carry it). (Step-weighted on purpose: for a truthful F,
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

What the predictor is (:mod:`tpsviz.diagnostics.verdict.kinds`) may name it before rules 2–7: a
reference forecaster (``ref:*``) is a ``yardstick`` whatever the rules find (its sentence says what
they find, too little data included); with enough data (rule 1), a forecast with one value on every
step is ``constant``, and a conversion ``<src>@<method>`` that ranks runs worse than chance or
clearly worse than its source is ``too weak to convert`` (its source not shown better than chance)
or ``conversion failed``. The rules' own label is kept (:attr:`Verdict.rules_label`), and the
sentence of every conversion says what was converted and how.

The three calibration checks (2, 4, 5) share the error rate 1 − level (Bonferroni: each at
(1 − level)/3); discrimination (3) is tested at 1 − level. How often they wrongly blame a truthful
predictor is measured by simulation (:data:`ERROR_RATE_WORDS`, docs/validation.md).

Labels ℓ follow the censoring mode of the score, so the verdict judges the forecast the score
rewards: complete runs count Y; censored runs count 0 (simple), 1 (upper), q_Z (exact) or are
left out (complete-case).

The numbers behind the rules are computed in :mod:`tpsviz.diagnostics.verdict.checks` (bias, slope,
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
from tpsviz.diagnostics.verdict.checks import MIN_CLASS, MIN_RUNS, row_statistics, verdict_rows, z_value
from tpsviz.diagnostics.verdict.kinds import conversion_statistics, predictor_kind
from tpsviz.diagnostics.verdict.words import kind_sentence, sentence
import contextvars
from concurrent.futures import ThreadPoolExecutor

__all__ = ["LABELS", "LABEL_KEYS", "RULE_LABELS", "ERROR_RATE_WORDS", "Verdict", "verdicts", "verdict_statistics", "statistics_for",
           "RULES", "MIN_RUNS", "MIN_CLASS"]

#: the labels of the calibration and discrimination rules, in the order they are tried
RULE_LABELS = ("too little data", "optimistic", "pessimistic", "uninformative", "overconfident",
               "underconfident", "trustworthy")
#: the fixed set of labels, in the order they are tried: what the predictor is, then the rules
LABELS = ("yardstick", "too little data", "constant", "too weak to convert", "conversion failed") + RULE_LABELS[1:]
#: a stable machine-readable key of every label (the JSON's ``verdict.key``)
LABEL_KEYS = {label: label.replace(" ", "_") for label in LABELS}

#: the measured error rate of the calibration checks, in words: the figures of docs/validation.md (a test
#: checks them against docs/validation.json, written by bench/validate.py with the tables)
ERROR_RATE_WORDS = ("together they wrongly blame a truthful predictor in 2–5% of logs of 200 runs with 40% cut off "
                    "by the step budget, under every censoring mode, and in up to 11% where a few long runs carry "
                    "the score (measured by simulation with known truth: docs/validation.md)")
#: the rules in words (for the page, the README and the report)
RULES = (
    ("yardstick", "a reference forecaster (ref:step, ref:task, ref:task+step) fitted on other runs' "
                  "outcomes: the bar a real signal has to clear, not the agent's confidence; the "
                  "sentence says what the rules below find of it as a forecast"),
    ("too little data", f"fewer than {MIN_RUNS} runs with an outcome, or fewer than "
                        f"{MIN_CLASS} successes or failures"),
    ("constant", "the same forecast at every step: it cannot tell runs apart, so it is uninformative "
                 "by construction; the sentence gives its value against the base rate"),
    ("too weak to convert / conversion failed", "a signal converted to a probability (name@method) "
                                                "ranks runs worse than chance (its AUROC's CI below 0.5) "
                                                "or clearly worse than the signal by itself, or neither "
                                                "is shown to rank runs better than chance: the "
                                                "conversion is judged, not the agent's signal (too weak "
                                                "to convert: the signal alone is not shown better than "
                                                "chance)"),
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
                    f"checks pass; {ERROR_RATE_WORDS}) and informative (discrimination test; skill above 0 "
                    "by its estimate, the sentence saying when its interval reaches 0)"),
)


@dataclass(frozen=True)
class Verdict:
    """The verdict on one predictor and the numbers behind it.

    Attributes
    ----------
    predictor, label, text : str
        The predictor, its label (one of :data:`LABELS`) and one plain sentence.
    rule : str
        Which rule decided the label (``reference``, ``constant``, ``conversion`` when what the
        predictor is named it: :mod:`tpsviz.diagnostics.verdict.kinds`).
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
    bias_p : float
        Its p-value by the studentized bootstrap by run
        (:func:`tpsviz.diagnostics.verdict.checks.bias_test`; NaN: the normal z decides).
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
    auroc : float
        AUROC on the same labelled step rows as the discrimination test (soft labels weighted:
        :func:`~tpsviz.diagnostics.verdict.checks.label_auroc`); the sentence quotes it.
    auroc_complete : float
        AUROC on the step rows of the runs whose outcome was observed, the rows of the leaderboard's
        AUROC (the same as ``auroc`` when no run with a forecast was cut off, or in complete-case mode).
    n_test_runs : int
        Runs the CORP tests used (all, or a seeded subset of
        :data:`~tpsviz.diagnostics.verdict.checks.MAX_TEST_RUNS`).
    skill, skill_se, skill_ci_low, skill_ci_high, ref_rate : float
        Skill against the base-rate reference F ≡ ref_rate (:func:`skill_table`).
    level : float
        Confidence level of every interval and test (tests at 1 − level).
    rules_label : str
        The label of the calibration and discrimination rules alone (one of :data:`RULE_LABELS`),
        also where what the predictor is named it (a yardstick, a constant, a conversion at fault).
    source, conversion : str
        For a recalibration ``<src>@<method>``: the signal or predictor converted, and how in words
        ("" otherwise).
    conversion_auroc, conversion_auroc_ci_low, conversion_auroc_ci_high : float
        The conversion's AUROC on complete runs' step rows and its bootstrap CI by run (NaN when
        it is no conversion).
    source_auroc, source_auroc_ci_low, source_auroc_ci_high : float
        The source's own AUROC on the same rows and its CI.
    conversion_delta_z : float
        AUROC(conversion) − AUROC(source) over the SE of its paired replicates.
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
    rules_label: str = ""
    auroc: float = np.nan
    auroc_complete: float = np.nan
    source: str = ""
    conversion: str = ""
    conversion_auroc: float = np.nan
    conversion_auroc_ci_low: float = np.nan
    conversion_auroc_ci_high: float = np.nan
    source_auroc: float = np.nan
    source_auroc_ci_low: float = np.nan
    source_auroc_ci_high: float = np.nan
    conversion_delta_z: float = np.nan
    bias_p: float = np.nan

    @property
    def key(self) -> str:
        """The label's stable machine-readable key (:data:`LABEL_KEYS`: ``too_weak_to_convert``)."""
        return LABEL_KEYS.get(self.label, self.label.replace(" ", "_"))

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
    pb = s.get("bias_p", np.nan)  # the studentized bootstrap's p-value; else the normal z
    if np.isfinite(zb) and (pb < alpha_cal if np.isfinite(pb) else abs(zb) > z):
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
    s = row_statistics(*verdict_rows(data, settings, q_z, name), settings.level, rng, int(n_null))
    return s | conversion_statistics(data, name, settings.level, settings.seed)


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
        out[name] = _verdict(name, s, settings.level, settings.censoring if data.n_censored else "complete")
    return out


def _verdict(name: str, s: dict, level: float, mode: str) -> Verdict:
    """The verdict of one predictor from its statistics and skill: the rules' label, then what the
    predictor is where that names it; ``mode`` words the success ("within the budget" only when some
    run was cut off)."""
    rules_label, rules_rule = _decide(s, level)
    kind = predictor_kind(name, s, rules_label, level)
    if kind is None:
        label, rule = rules_label, rules_rule
        text = sentence(name, label, rule, s, level, mode)
    else:
        label, rule = kind
        text = kind_sentence(name, label, s, level, mode, rules_label, rules_rule)
    return Verdict(predictor=name, label=label, text=text, rule=rule, level=level, rules_label=rules_label, **s)
