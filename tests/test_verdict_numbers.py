"""Words that agree with numbers (issue 45, point 4): the AUROC a verdict quotes is taken on the rows of its
discrimination test, and the leaderboard's AUROC (complete runs) is named where its runs differ; no
trustworthy predictor is said to be no better than always saying the base rate, and every skill clause is
conditioned on the interval it quotes."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics.leaderboard import metric_table
from tpsviz.diagnostics.verdict import verdicts
from tpsviz.diagnostics.verdict.checks import label_auroc
from tpsviz.diagnostics.verdict.words import kind_sentence, sentence
from tpsviz.forecasts.references import add_references
from tpsviz.synthetic.agent import known_distortions, simulate

SIMPLE = ScoreSettings(censoring="simple", n_boot=200)


# --------------------------------------------------------------------------- the AUROC of soft labels
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.3, 0.5, 0.7, 0.9]),
                          st.sampled_from([0.0, 1.0, 0.25, 0.6])), min_size=2, max_size=25))
def test_label_auroc_counts_every_pair_of_rows_weighted_by_its_labels(rows):
    p, lab = map(np.array, zip(*rows))
    num = den = 0.0  # Σ_i Σ_j ℓ_i (1 − ℓ_j) (1{F_i > F_j} + ½ 1{F_i = F_j}), over every pair of rows
    for i in range(p.size):
        for j in range(p.size):
            w = lab[i] * (1 - lab[j])
            num += w * ((p[i] > p[j]) + 0.5 * (p[i] == p[j]))
            den += w
    want = num / den if lab.sum() > 0 and (1 - lab).sum() > 0 else np.nan
    got = label_auroc(p, lab)
    assert (np.isnan(want) and np.isnan(got)) or got == pytest.approx(want, abs=1e-12)
    hard = np.isin(lab, (0.0, 1.0))
    if hard.all() and 0 < lab.sum() < lab.size:
        assert got == pytest.approx(roc_auc_score(lab, p), abs=1e-12)


# --------------------------------------------------------------------------- issue 45's case, reproduced
@pytest.fixture(scope="module")
def cut_off_log():
    """webshop-like, 150 runs, seed 9, references under the simple score: 72 runs cut off by the budget.
    Before: ref:step "trustworthy … informative (discrimination test p ≤ 0.005)" beside a leaderboard
    AUROC of 0.43 (`score LOG --references --censoring simple`)."""
    data = add_references(simulate("webshop-like", n_trajectories=150, seed=9).to_data(), SIMPLE)
    names = ["ref:step", "budget_aware", "truthful"]
    return data, verdicts(data, SIMPLE, names), metric_table(data, SIMPLE, names, n_boot=0)


def test_the_verdict_auroc_is_on_its_own_rows_and_the_leaderboards_is_named(cut_off_log):
    data, v, board = cut_off_log
    t = data.trajectories
    traj = data.steps["traj"].to_numpy()
    cut = t["censored"].to_numpy(dtype=bool)
    label = np.where(cut, 0.0, t["outcome"].to_numpy(dtype=float))[traj]  # simple: cut off = failure
    n_cut, n_complete = int(cut.sum()), int((~cut).sum())
    for name in ("ref:step", "budget_aware", "truthful"):
        p = data.forecasts(name)
        rows = ~np.isnan(p)
        assert v[name].auroc == pytest.approx(roc_auc_score(label[rows], p[rows]), abs=1e-12)
        complete = rows & ~cut[traj]
        assert v[name].auroc_complete == pytest.approx(roc_auc_score(label[complete], p[complete]), abs=1e-12)
        assert v[name].auroc_complete == pytest.approx(board.loc[name, "auroc"], abs=1e-12)  # the leaderboard's
    r = v["ref:step"]
    # the disagreement: informative on the score's labels, below 0.5 on the complete runs alone
    assert (r.label, r.rules_label) == ("yardstick", "trustworthy") and r.auroc_complete < 0.5 < r.auroc
    m = re.search(r"informative \(discrimination test p [^,]+, AUROC (\d\.\d\d) on these steps, (\d+) cut-off runs "
                  r"included; (\d\.\d\d) on the (\d+) complete runs alone", r.text)
    assert m, r.text
    assert m.groups() == (f"{r.auroc:.2f}", str(n_cut), f"{r.auroc_complete:.2f}", str(n_complete))


def test_one_population_quotes_one_auroc():
    s = ScoreSettings(censoring="complete", n_boot=200)
    # complete-case: the verdict's rows are the leaderboard's, even where runs were cut off
    data = simulate("webshop-like", n_trajectories=150, seed=9).to_data()
    v = verdicts(data, s, ["truthful"])["truthful"]
    assert data.n_censored and v.auroc == v.auroc_complete == pytest.approx(
        metric_table(data, s, ["truthful"], n_boot=0).loc["truthful", "auroc"], abs=1e-12)
    # a log without a budget: one AUROC in the sentence of a trustworthy predictor
    data = known_distortions("webshop-like", 300, 0, 400)
    v = verdicts(data, s, ["truthful"])["truthful"]
    assert v.auroc == pytest.approx(metric_table(data, s, ["truthful"], n_boot=0).loc["truthful", "auroc"], abs=1e-12)
    assert v.label == "trustworthy" and f"AUROC {v.auroc:.2f})" in v.text and "complete runs alone" not in v.text


def _stats(**change) -> dict:
    """The statistics of a calibrated, informative predictor (a verdict's keys), changed by ``change``."""
    s = dict(n_runs=200, n_observed=200, n_success=80.0, n_failure=120.0, n_observed_success=80,
             forecast_min=0.05, forecast_max=0.95, mean_forecast=0.41, success_rate=0.40, run_rate=0.40,
             bias=0.01, bias_se=0.01, slope=1.02, slope_se=0.1, slope_ci_low=0.82, slope_ci_high=1.22,
             separation=0, mcb=0.001, mcb_p=0.6, dsc=0.02, dsc_p=0.005, unc=0.12, dsc_rev_p=1.0,
             n_test_runs=200, auroc=0.66, auroc_complete=0.66, skill=0.08, skill_se=0.03,
             skill_ci_low=0.02, skill_ci_high=0.14, ref_rate=0.40)
    return s | change


def test_an_uninformative_verdict_names_both_populations_too():
    # the other way round: no discrimination on the score's labels, some on the complete runs alone
    s = _stats(dsc_p=0.31, auroc=0.53, auroc_complete=0.61, n_observed=140)
    text = sentence("x", "uninformative", "dsc", s, 0.95, "simple")
    assert text.startswith("x: uninformative — ")
    m = re.search(r"discrimination test p = (0\.\d\d), AUROC (0\.\d\d) on these steps, (\d+) cut-off runs included; "
                  r"(0\.\d\d) on the (\d+) complete runs alone", text)
    assert m and m.groups() == ("0.31", "0.53", "60", "0.61", "140"), text


def test_informative_by_the_test_but_not_by_rank_says_so():
    text = sentence("x", "trustworthy", "all", _stats(auroc=0.48, auroc_complete=0.48), 0.95, "complete")
    assert "informative (" not in text and "not by rank (AUROC 0.48)" in text


# --------------------------------------------------------------------------- skill words and the label
_CLAIMS_BETTER = re.compile(r"(?<!no )(?<!clearly )better than always saying")
_DENIES_BETTER = re.compile(r"no better than always saying|not clearly better than always saying|worse than always")


def _ci(text: str):
    m = re.search(r"95% CI ([+-][0-9.e+-]+) to ([+-][0-9.e+-]+)\)", text)
    return None if m is None else tuple(map(float, m.groups()))


@settings(max_examples=200, deadline=None)
@given(sk=st.floats(-0.3, 0.3), lo=st.floats(-0.4, 0.4), width=st.floats(0.0, 0.4),
       rule=st.sampled_from(["all", "skill", "yardstick", "constant"]))
def test_skill_words_follow_the_point_and_the_interval_and_never_deny_a_trustworthy_label(sk, lo, width, rule):
    hi = lo + width
    s = _stats(skill=sk, skill_ci_low=lo, skill_ci_high=hi)
    if rule == "yardstick":  # what the rules found, in a yardstick's sentence
        label, rules = ("trustworthy", "all") if sk > 0 else ("uninformative", "skill")
        text = kind_sentence("ref:step", "yardstick", s, 0.95, "complete", label, rules)
    elif rule == "constant":
        label, text = "constant", kind_sentence("c", "constant", _stats(skill=sk, skill_ci_low=lo, skill_ci_high=hi,
                                                                           forecast_max=0.05), 0.95, "complete",
                                                "uninformative", "dsc")
    else:
        if (rule == "all") != (sk > 0):  # rule 6: trustworthy needs a skill above 0 (its point)
            return
        label = "trustworthy" if rule == "all" else "uninformative"
        text = sentence("x", label, rule, s, 0.95, "complete")
    claims, denies = bool(_CLAIMS_BETTER.search(text)), bool(_DENIES_BETTER.search(text))
    assert claims == (sk > 0 and lo > 0), text  # "better than" only when point and interval lie above 0
    assert bool(re.search(r"worse than always saying", text)) == (sk < 0 and hi < 0), text
    if "trustworthy" in text:
        assert not denies, text  # never "trustworthy" and "no better than the base rate" in one sentence
    if sk > 0 and not lo > 0:  # above 0 by its point, not clearly: the interval it rests on is quoted
        assert "above 0, but not clearly" in text and _ci(text) == pytest.approx((lo, hi), abs=0.0051), text
    assert f"skill {sk:+.2f}" in text or f"skill {sk:+.2g}" in text


def test_a_trustworthy_predictor_whose_skill_interval_reaches_0_is_not_called_no_better():
    # tau2-like, 150 runs, seed 3, simple: truthful, budget_aware and ref:step are trustworthy with a skill
    # interval that reaches 0; before, each sentence said "… but not clearly better than always saying 47%"
    data = add_references(simulate("tau2-like", n_trajectories=150, seed=3).to_data(), SIMPLE)
    out = verdicts(data, SIMPLE, ["truthful", "budget_aware", "ref:step"])
    unclear = [v for v in out.values() if v.rules_label == "trustworthy" and v.skill_ci_low <= 0 < v.skill]
    assert len(unclear) >= 2, [(v.predictor, v.rules_label, v.skill_ci_low) for v in out.values()]
    for v in unclear:
        assert "as a forecast it is trustworthy" in v.text or v.label == "trustworthy"
        assert not _DENIES_BETTER.search(v.text) and not _CLAIMS_BETTER.search(v.text), v.text
        assert f"skill {v.skill:+.2f} ± {v.skill_se:.2f}" in v.text
        assert _ci(v.text) == pytest.approx((v.skill_ci_low, v.skill_ci_high), abs=0.0051), v.text
