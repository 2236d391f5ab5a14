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

Consistency resampling: if F is truthful, P(ℓ = 1 | F_1, …, F_T) = F_T (the martingale
property), so drawing one ℓ* ~ Bernoulli(F_T) per run gives the exact null law of the whole
trace with its outcome; MCB* on these draws is the null distribution of MCB. This keeps the
dependence of the steps of one run, which a draw per step would ignore.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, replace

import numpy as np

from tpsviz.core.cancel import checkpoint
from tpsviz.diagnostics.leaderboard import run_labels, skill_table
from tpsviz.core.data import TrajectoryData
from tpsviz.core.censoring import default_censoring
from tpsviz.core.tps import ScoreSettings, TPSResult

__all__ = ["LABELS", "Verdict", "verdicts", "verdict_statistics", "statistics_for", "RULES", "MIN_RUNS",
           "MIN_CLASS"]

#: the fixed set of labels, in the order the rules try them
LABELS = ("too little data", "optimistic", "pessimistic", "uninformative", "overconfident",
          "underconfident", "trustworthy")
#: a verdict needs this many labelled runs …
MIN_RUNS = 20
#: … and this many of each outcome (expected counts for soft labels)
MIN_CLASS = 5
#: null replicates of the MCB (consistency) and DSC (permutation) tests
N_NULL = 200
#: the CORP tests (MCB, DSC) of a log with more runs use a seeded random subset of this many runs
#: (their power is ample there; the bias and the slope always use every run)
MAX_TEST_RUNS = 20_000
#: forecasts are kept in [c, 1 − c] for the logit of the calibration slope
LOGIT_CLIP = 1e-4

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
        Runs the CORP tests used (all, or a seeded subset of :data:`MAX_TEST_RUNS`).
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


# --------------------------------------------------------------------------- statistics
def _z(level: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(0.5 + level / 2))


def _clustered_bias(p: np.ndarray, lab: np.ndarray, runs: np.ndarray) -> tuple[float, float]:
    """mean(p − ℓ) over rows and its SE with run clusters (CR1 small-sample factor)."""
    d = p - lab
    n = d.size
    bias = float(d.mean())
    g = np.bincount(runs, weights=d - bias)
    k = g.size
    if k < 2:
        return bias, np.nan
    return bias, float(np.sqrt(k / (k - 1) * np.sum(g ** 2)) / n)


def _expit(eta: np.ndarray) -> np.ndarray:
    """1 / (1 + e^−η) without an overflow warning for a large −η (a separating fit goes there)."""
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-eta))


def calibration_slope(p, lab, runs) -> tuple[float, float, float]:
    """Logistic calibration fit logit P(ℓ = 1) = a + b·logit F, by Newton's method.

    Parameters
    ----------
    p : ndarray
        Forecasts F_t (clipped to [LOGIT_CLIP, 1 − LOGIT_CLIP] for the logit).
    lab : ndarray
        Labels ℓ in [0, 1] (soft labels are fitted as a quasi-likelihood).
    runs : ndarray of int
        Run code of every row, 0 … k−1 (for the clustered sandwich variance).

    Returns
    -------
    a, b, se_b : float
        Intercept, slope and the SE of the slope, clustered by run. NaN when the slope is not
        identified (a constant forecast) or the fit diverges (forecasts separate outcomes).
    """
    x = np.log(np.clip(p, LOGIT_CLIP, 1 - LOGIT_CLIP)) - np.log1p(-np.clip(p, LOGIT_CLIP,
                                                                          1 - LOGIT_CLIP))
    if x.size < 3 or np.ptp(x) < 1e-9:
        return np.nan, np.nan, np.nan
    X = np.column_stack([np.ones_like(x), x])
    theta = np.zeros(2)
    for _ in range(100):
        eta = X @ theta
        mu = _expit(eta)
        grad = X.T @ (lab - mu)
        H = (X * (mu * (1 - mu))[:, None]).T @ X
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            return np.nan, np.nan, np.nan
        theta = theta + step
        if not np.all(np.isfinite(theta)) or abs(theta[1]) > 1e3:
            return np.nan, np.nan, np.nan
        if np.max(np.abs(step)) < 1e-10:
            break
    else:
        return np.nan, np.nan, np.nan
    mu = _expit(X @ theta)
    H = (X * (mu * (1 - mu))[:, None]).T @ X
    scores = X * (lab - mu)[:, None]
    per_run = np.column_stack([np.bincount(runs, weights=scores[:, j]) for j in range(2)])
    k = per_run.shape[0]
    meat = k / max(k - 1, 1) * per_run.T @ per_run
    hinv = np.linalg.inv(H)
    cov = hinv @ meat @ hinv
    return float(theta[0]), float(theta[1]), float(np.sqrt(max(cov[1, 1], 0.0)))


def _pav(means: np.ndarray, weights: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """Weighted increasing isotonic fit of ``means`` (in forecast order), written into ``means``
    (a float64 array of the caller's own, overwritten) and returned; ``scratch``, an array of the
    same size, is overwritten with the kernel's working weights.

    The null distributions call this hundreds of times per predictor, so it uses scikit-learn's
    compiled PAV kernel directly (the public :func:`sklearn.isotonic.isotonic_regression` spends
    ~0.9 ms per call validating its arguments, 5× the fit itself); the public function, used by
    :func:`tpsviz.diagnostics.decomposition.pav_unique`, is the fallback and the test oracle.
    """
    try:
        from sklearn._isotonic import _inplace_contiguous_isotonic_regression as kernel
    except ImportError:  # pragma: no cover - a scikit-learn without the private kernel
        from tpsviz.diagnostics.decomposition import pav_unique

        return pav_unique(means, weights)
    np.copyto(scratch, weights)  # the kernel works in place on both
    kernel(means, scratch)
    return means


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Σ a·b without BLAS: OpenBLAS runs a dot product of more than 10,000 values on threads of
    its own, which then spin on the cores the verdict's two threads need (_fast/blas.py)."""
    return float(np.einsum("i,i->", a, b))


class _Corp:
    """CORP decomposition of the half Brier score for many label vectors on fixed forecasts.

    With m distinct forecasts x_j, n_j rows and label sum s_j at x_j, and Σℓ² over the rows, the
    half Brier loss of forecasts c_j (constant at each x_j) is ½ (Σ n_j c_j² − 2 Σ c_j s_j + Σℓ²) / n:
    one pass over the rows (the label sums) and a few over the m values per label vector, which the
    null loops draw hundreds of. Σ n_j x_j² does not depend on the labels and is kept.
    """

    def __init__(self, p: np.ndarray):
        self.xs, self.inv, counts = np.unique(p, return_inverse=True, return_counts=True)
        self.counts = counts.astype(float)
        self.n = float(p.size)
        self.p = p
        self._sq_xs = _dot(self.counts, self.xs * self.xs)  # Σ n_j x_j²
        self._scratch = np.empty_like(self.counts)  # the PAV kernel's weights (one _Corp a thread)

    def _losses(self, lab: np.ndarray, which: str) -> dict:
        """½ mean (c − ℓ)² for c = the forecasts ("f"), their PAV recalibration ("r") and the mean
        label ("u"), only those asked for (the null loops need two of the three)."""
        s1 = np.bincount(self.inv, weights=lab, minlength=self.xs.size)
        sq = _dot(lab, lab)

        def loss(sq_c: float, c_s: float) -> float:  # from Σ n_j c_j² and Σ c_j s_j
            return 0.5 * (sq_c - 2.0 * c_s + sq) / self.n

        r = _pav(s1 / self.counts, self.counts, self._scratch)  # (a fresh array of means)
        out = {"r": loss(_dot(self.counts, r * r), _dot(r, s1))}
        if "f" in which:
            out["f"] = loss(self._sq_xs, _dot(self.xs, s1))
        if "u" in which:
            total = float(s1.sum())
            u = total / self.n  # (n·(u·u), as n_j·(r_j·r_j) above: one forecast value gives DSC 0 exactly)
            out["u"] = loss(self.n * (u * u), u * total)
        return out

    def mcb_dsc(self, lab: np.ndarray) -> tuple[float, float, float]:
        """(MCB, DSC, UNC) of the half Brier score."""
        L = self._losses(lab, "fu")
        return max(L["f"] - L["r"], 0.0), max(L["u"] - L["r"], 0.0), L["u"]

    def mcb(self, lab: np.ndarray) -> float:
        """MCB alone (the consistency-resampling null)."""
        L = self._losses(lab, "f")
        return max(L["f"] - L["r"], 0.0)

    def dsc(self, lab: np.ndarray) -> float:
        """DSC alone (the permutation null)."""
        L = self._losses(lab, "u")
        return max(L["u"] - L["r"], 0.0)


#: a null stops once this many of its draws reach the observed value (and its p-value can no
#: longer fall below the test's threshold): Besag & Clifford's sequential Monte-Carlo test
H_STOP = 10


class _SequentialNull:
    """A Monte-Carlo null drawn one value at a time that stops early when the test cannot reject.

    After ``k`` of ``n`` draws reach the observed value, the p-value of all ``n_null`` draws is at
    least (1 + k) / (1 + n_null). Once that is ≥ ``threshold`` and k ≥ :data:`H_STOP`, no later
    draw can make the test reject, so the null stops (Besag & Clifford 1991) and its p-value is
    max(k / n, (1 + k) / (1 + n_null)): each term is a valid p-value, so their maximum is too, and
    it is never below the threshold, so every decision is the one the full null gives. A null
    that runs to the end gives the usual (1 + k) / (1 + n_null).
    """

    def __init__(self, observed: float, threshold: float, n_null: int):
        self.observed, self.n_null = observed, n_null
        self.tol = 1e-12 * (1.0 + abs(observed))  # a draw equal to the observed value up to rounding counts
        need = int(np.ceil(threshold * (1 + n_null) - 1 - 1e-9))  # k with (1 + k)/(1 + n_null) ≥ threshold
        self.h = max(H_STOP, need)
        self.k = self.n = 0

    @property
    def running(self) -> bool:
        return self.k < self.h and self.n < self.n_null

    def add(self, value: float) -> None:
        self.n += 1
        self.k += bool(value >= self.observed - self.tol)

    def p(self) -> float:
        full = (1 + self.k) / (1 + self.n_null)
        return full if self.n >= self.n_null else max(self.k / self.n, full)


def _tests(p, lab, runs, last_p, run_lab, rng, n_null, level: float = 0.95) -> dict:
    """MCB with its consistency-resampling p-value; DSC of F, and of the reversed 1 − F, with their
    permutation p-values (the same permutations). Each null stops once it cannot reject at the
    threshold :func:`_decide` uses (:class:`_SequentialNull`); while any null runs, every draw is
    made, so a null that runs to the end sees the same draws as without the stopping."""
    corp, rev = _Corp(p), _Corp(1.0 - p)
    mcb, dsc, unc = corp.mcb_dsc(lab)
    dsc_rev = rev.dsc(lab)
    alpha = 1 - level
    mcb_null = _SequentialNull(mcb, alpha / 3, n_null)  # the thresholds of _decide
    dsc_null, rev_null = _SequentialNull(dsc, alpha, n_null), _SequentialNull(dsc_rev, alpha, n_null)
    for b in range(n_null):
        if not (mcb_null.running or dsc_null.running or rev_null.running):
            break
        if b % 20 == 0:
            checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        star = (rng.random(last_p.size) < last_p).astype(float)
        if mcb_null.running:
            mcb_null.add(corp.mcb(star[runs]))
        perm = rng.permutation(run_lab)[runs]
        if dsc_null.running:
            dsc_null.add(corp.dsc(perm))
        if rev_null.running:
            rev_null.add(rev.dsc(perm))
    return {"mcb": mcb, "mcb_p": mcb_null.p(), "dsc": dsc, "dsc_p": dsc_null.p(),
            "unc": unc, "dsc_rev_p": rev_null.p()}


# --------------------------------------------------------------------------- rules
def _z_cal(level: float) -> float:
    """Two-sided critical value of each of the three calibration checks (Bonferroni over 3)."""
    return _z(1 - (1 - level) / 3)


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
def _rows(data: TrajectoryData, settings: ScoreSettings, q_z, name: str):
    """(forecast, label, run code 0…k−1, last forecast and label per run) of the scored rows."""
    lab_run = run_labels(data, settings, q_z)
    codes = data.steps["traj"].to_numpy()
    p = data.forecasts(name)
    lab = lab_run[codes]
    keep = np.flatnonzero(~np.isnan(p) & ~np.isnan(lab))
    p, lab, c = p[keep], lab[keep], codes[keep]
    uniq, runs = np.unique(c, return_inverse=True)
    last = np.r_[np.flatnonzero(runs[1:] != runs[:-1]), runs.size - 1] if runs.size else runs
    observed = data.trajectories["outcome"].to_numpy(dtype=float)[uniq]  # NaN: no outcome seen
    return p, lab, runs, p[last], lab[last], observed


def _separation(p, lab) -> int:
    """+1 if every success is forecast above every failure, −1 if below, else 0 (0/1 labels only)."""
    if not np.all((lab == 0) | (lab == 1)):
        return 0
    hi, lo = p[lab == 1], p[lab == 0]
    if hi.size == 0 or lo.size == 0:
        return 0
    if hi.min() > lo.max():
        return 1
    return -1 if hi.max() < lo.min() else 0


def _statistics(p, lab, runs, last_p, run_lab, observed, level, rng, n_null) -> dict:
    n_runs = int(run_lab.size)
    seen = observed[~np.isnan(observed)]
    s = {"n_runs": n_runs, "n_rows": int(p.size), "n_success": float(run_lab.sum()),
         "n_failure": float(n_runs - run_lab.sum()),
         "run_rate": float(run_lab.mean()) if n_runs else np.nan,
         # runs whose outcome was actually observed: a verdict needs evidence, not only q_Z labels
         "n_observed": int(seen.size), "n_observed_success": int(seen.sum())}
    nan = np.nan
    s.update(forecast_min=float(p.min()) if p.size else nan, forecast_max=float(p.max()) if p.size else nan,
             mean_forecast=float(p.mean()) if p.size else nan,
             success_rate=float(lab.mean()) if p.size else nan)
    if n_runs < 2:
        s.update(bias=nan, bias_se=nan, slope=nan, slope_se=nan, slope_ci_low=nan,
                 slope_ci_high=nan, separation=0, mcb=nan, mcb_p=nan, dsc=nan, dsc_p=nan, unc=nan, dsc_rev_p=nan,
                 n_test_runs=n_runs)
        return s
    s["bias"], s["bias_se"] = _clustered_bias(p, lab, runs)
    _, b, se = calibration_slope(p, lab, runs)
    z = _z(level)
    s.update(slope=b, slope_se=se, slope_ci_low=b - z * se, slope_ci_high=b + z * se,
             separation=_separation(p, lab))
    if n_runs > MAX_TEST_RUNS:  # the CORP tests on a seeded random subset of runs (stated in n_test_runs)
        keep_runs = np.zeros(n_runs, dtype=bool)
        keep_runs[rng.choice(n_runs, MAX_TEST_RUNS, replace=False)] = True
        rows = keep_runs[runs]
        new_code = np.cumsum(keep_runs) - 1
        s.update(_tests(p[rows], lab[rows], new_code[runs[rows]], last_p[keep_runs], run_lab[keep_runs],
                        rng, n_null, level))
    else:
        s.update(_tests(p, lab, runs, last_p, run_lab, rng, n_null, level))
    s["n_test_runs"] = min(n_runs, MAX_TEST_RUNS)
    return s


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
    return _statistics(*_rows(data, settings, q_z, name), settings.level, rng, int(n_null))


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
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

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
