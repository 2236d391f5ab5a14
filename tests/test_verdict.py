"""Verdicts (tpsviz.diagnostics.verdict): each statistic against an independent computation, the rules on
synthetic agents whose distortion is known, and the validity of the consistency-resampling null."""

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpsviz.diagnostics.decomposition import decompose
from tpsviz.io.tables.longform import from_frame
from tpsviz.synthetic.agent import known_distortions, simulate
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics.corp_nulls import _Corp
from tpsviz.diagnostics.verdict import LABELS, MIN_CLASS, MIN_RUNS, verdicts
from tpsviz.diagnostics.verdict.checks import _clustered_bias, calibration_slope


def sig(x):
    return 1 / (1 + np.exp(-x))


def logit(p):
    return np.log(p) - np.log1p(-p)


def distorted_log(scenario="webshop-like", n=400, seed=0, budget=400):
    """A synthetic log whose predictors are known distortions of q_t (tpsviz.synthetic.agent)."""
    return known_distortions(scenario, n, seed, budget)


# --------------------------------------------------------------------------- statistics
def test_slope_matches_scikit_learn_unpenalised_logistic_fit():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    p = rng.uniform(0.02, 0.98, 3000)
    y = (rng.random(3000) < sig(0.3 + 0.7 * logit(p))).astype(float)
    runs = np.repeat(np.arange(600), 5)
    a, b, se = calibration_slope(p, y, runs)
    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=1000).fit(logit(p)[:, None], y)
    assert a == pytest.approx(lr.intercept_[0], abs=1e-6)
    assert b == pytest.approx(lr.coef_[0, 0], abs=1e-6)
    assert 0 < se < 0.2


def test_slope_se_is_clustered_by_run_like_a_run_bootstrap():
    # rows of a run share the outcome: the clustered SE must match a bootstrap over runs
    rng = np.random.default_rng(2)
    n_runs, k = 400, 6
    base = rng.normal(0, 1.2, n_runs)
    x = base[:, None] + rng.normal(0, 0.3, (n_runs, k))
    y = np.repeat((rng.random(n_runs) < sig(base)).astype(float), k)
    p = sig(x.ravel())
    runs = np.repeat(np.arange(n_runs), k)
    _, b, se = calibration_slope(p, y, runs)
    boot = []
    for _ in range(300):
        pick = rng.integers(0, n_runs, n_runs)
        rows = (pick[:, None] * k + np.arange(k)).ravel()
        boot.append(calibration_slope(p[rows], y[rows], np.repeat(np.arange(n_runs), k))[1])
    assert se == pytest.approx(np.std(boot, ddof=1), rel=0.2)
    # the naive row-level SE would be far too small: the clustered one is not
    assert se > 1.5 * _naive_slope_se(p, y, b)


def _naive_slope_se(p, y, b):
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=1000).fit(logit(p)[:, None], y)
    mu = lr.predict_proba(logit(p)[:, None])[:, 1]
    X = np.column_stack([np.ones_like(p), logit(p)])
    return float(np.sqrt(np.linalg.inv((X * (mu * (1 - mu))[:, None]).T @ X)[1, 1]))


def test_slope_undefined_for_constant_or_separating_forecasts():
    runs = np.arange(40)
    assert np.isnan(calibration_slope(np.full(40, 0.3), np.r_[np.ones(20), np.zeros(20)], runs)[1])
    p = np.r_[np.full(20, 0.9), np.full(20, 0.1)]
    y = np.r_[np.ones(20), np.zeros(20)]
    assert np.isnan(calibration_slope(p, y, runs)[1])  # perfect separation: no finite slope


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 1), st.integers(0, 6)),
                min_size=2, max_size=40))
def test_clustered_bias_matches_a_loop_over_runs(rows):
    p = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows], dtype=float)
    _, runs = np.unique([r[2] for r in rows], return_inverse=True)
    bias, se = _clustered_bias(p, y, runs)
    assert bias == pytest.approx(np.mean(p - y), abs=1e-12)
    k = runs.max() + 1
    if k < 2:
        assert np.isnan(se)
        return
    total = 0.0
    for g in range(k):
        m = runs == g
        total += (np.sum(p[m] - y[m]) - m.sum() * bias) ** 2
    assert se == pytest.approx(np.sqrt(k / (k - 1) * total) / p.size, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.3, 0.3, 0.6, 0.9]) | st.floats(0, 1),
                          st.integers(0, 1)), min_size=1, max_size=40))
def test_corp_brier_matches_decompose(rows):
    p = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows], dtype=float)
    mcb, dsc, unc = _Corp(p).mcb_dsc(y)
    ref = decompose(p, y, 1, 1)  # half Brier score
    assert mcb == pytest.approx(ref["mcb"], abs=1e-10)
    assert dsc == pytest.approx(ref["dsc"], abs=1e-10)
    assert unc == pytest.approx(ref["unc"], abs=1e-10)



@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.2, 0.5, 0.5, 0.7]) | st.floats(0, 1),
                          st.sampled_from([0.0, 1.0]) | st.floats(0, 1)), min_size=1, max_size=40))
def test_corp_losses_are_the_mean_squared_errors_row_by_row(rows):
    """The losses from per-value sums equal ½ mean (c − ℓ)² over the rows, with c the forecast,
    the mean label and the isotonic fit of ℓ on the forecast by scikit-learn's public
    isotonic_regression (labels in [0, 1]: the q_Z of censored runs)."""
    from sklearn.isotonic import isotonic_regression

    p = np.array([r[0] for r in rows])
    lab = np.array([r[1] for r in rows])
    got = _Corp(p)._losses(lab, "fu")
    values, at = np.unique(p, return_inverse=True)  # (one fitted value per distinct forecast)
    means = np.array([lab[at == j].mean() for j in range(values.size)])
    weights = np.array([float((at == j).sum()) for j in range(values.size)])
    fit = isotonic_regression(means, sample_weight=weights)[at]
    for key, c in (("f", p), ("u", np.full(p.size, lab.mean())), ("r", fit)):
        assert got[key] == pytest.approx(0.5 * np.mean((c - lab) ** 2), abs=1e-12), key


@pytest.mark.parametrize("value", [0.0, 0.3, 0.508, 1.0])
def test_one_forecast_value_discriminates_nothing_exactly(value):
    """A constant forecast (base rate) has DSC 0, not a rounding residue."""
    rng = np.random.default_rng(3)
    for n in (7, 450, 997):
        for lab in [rng.integers(0, 2, n).astype(float) for _ in range(20)] + [rng.random(n) for _ in range(20)]:
            corp = _Corp(np.full(lab.size, value))
            assert corp.mcb_dsc(lab)[1] == 0.0
            assert corp.dsc(lab) == 0.0


# --------------------------------------------------------------------------- rules
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rules_name_the_known_distortion(seed):
    data = distorted_log(seed=seed)
    v = verdicts(data, ScoreSettings(censoring="complete", n_boot=200))
    for name in ("truthful", "optimistic", "pessimistic", "overconfident", "underconfident",
                 "uninformative"):
        expected = "trustworthy" if name == "truthful" else name
        assert v[name].label == expected, v[name].text


@pytest.mark.slow
def test_truthful_is_trustworthy_and_the_mcb_null_is_valid_across_seeds():
    # the calibration checks share 1 − level = 5%: a truthful predictor is called trustworthy
    # in (about) 95% of logs; its MCB p-value is uniform (P(p < .05) ≈ .05)
    labels, mcb_p = [], []
    for seed in range(16):
        d = distorted_log("tau2-like", n=300, seed=100 + seed)
        v = verdicts(d, ScoreSettings(censoring="complete", n_boot=200), ["truthful"])["truthful"]
        labels.append(v.label)
        mcb_p.append(v.mcb_p)
    assert labels.count("trustworthy") >= 13, labels
    assert np.mean(np.array(mcb_p) < 0.05) <= 0.25, mcb_p
    assert np.median(mcb_p) > 0.2


def test_too_little_data():
    d = distorted_log(n=MIN_RUNS - 5, seed=3)
    v = verdicts(d, ScoreSettings(censoring="complete", n_boot=50))
    for x in v.values():
        assert x.label == "too little data"
        assert f"at least {MIN_RUNS} runs and {MIN_CLASS} of each outcome" in x.text


def test_one_outcome_class_is_too_little_data():
    rows = [{"trajectory_id": f"r{i}", "step": t, "outcome": 1, "conf_a": 0.7}
            for i in range(40) for t in (1, 2)]
    v = verdicts(from_frame(pd.DataFrame(rows)), ScoreSettings(censoring="complete", n_boot=50))
    assert v["a"].label == "too little data"
    assert "nan" not in v["a"].text.lower()


def test_labels_follow_the_censoring_mode():
    # budget-aware m_t is what the simple score rewards: trustworthy there; truthful q_t
    # counts censored runs as possible successes and is optimistic under the simple labels
    sim = simulate("webshop-like", n_trajectories=600, seed=5)
    data = sim.to_data()
    simple = verdicts(data, ScoreSettings(censoring="simple", n_boot=200),
                      ["truthful", "budget_aware"])
    assert simple["budget_aware"].label == "trustworthy", simple["budget_aware"].text
    assert simple["truthful"].label == "optimistic", simple["truthful"].text
    assert "within the budget" in simple["truthful"].text
    exact = verdicts(data, ScoreSettings(censoring="exact", n_boot=200), ["truthful"])
    assert "at q_Z" in exact["truthful"].text


def test_sentences_carry_their_numbers_and_never_nan():
    data = distorted_log(seed=4, n=300)
    v = verdicts(data, ScoreSettings(censoring="complete", n_boot=200))
    for x in v.values():
        assert x.label in LABELS
        assert x.text.startswith(f"{x.predictor}: {x.label} — ")
        assert not re.search(r"\b(nan|inf|-inf)\b", x.text.lower()), x.text
        assert f"says {100 * x.mean_forecast:.0f}% on average" in x.text
        assert f"always saying {100 * x.ref_rate:.0f}%" in x.text
        d = x.to_dict()
        assert d["label"] == x.label and all(v is None or v == v for v in d.values())


def test_verdict_does_not_depend_on_which_other_predictors_are_shown():
    data = distorted_log(seed=6, n=200)
    s = ScoreSettings(censoring="complete", n_boot=200)
    alone = verdicts(data, s, ["overconfident"])["overconfident"].to_dict()
    among = verdicts(data, s)["overconfident"].to_dict()
    assert alone.keys() == among.keys()
    for k, a in alone.items():  # the same resamples; a product over more columns may round the last bit
        b = among[k]
        if isinstance(a, float) and isinstance(b, float):
            assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) or (a != a and b != b), (k, a, b)
        else:
            assert a == b, (k, a, b)


def test_corp_tests_use_a_bounded_seeded_subset_of_runs(monkeypatch):
    import tpsviz.diagnostics.verdict as V
    import tpsviz.diagnostics.verdict.checks as checks

    monkeypatch.setattr(checks, "MAX_TEST_RUNS", 100)
    data = distorted_log(seed=8, n=300)
    s = ScoreSettings(censoring="complete", n_boot=0)
    a = V.verdict_statistics(data, s, "overconfident")
    b = V.verdict_statistics(data, s, "overconfident")
    assert a["n_test_runs"] == 100 and a["n_runs"] > 200
    assert a == b  # seeded: the same subset and the same p-values every time
    assert a["bias"] == V.verdict_statistics(data, s, "overconfident", n_null=10)["bias"]  # all runs


def test_statistics_for_several_predictors_in_threads_equals_one_at_a_time():
    """statistics_for computes predictors two at a time; each is seeded by its name, so the numbers
    are those of verdict_statistics called one by one, and a cancel predicate stops the workers."""
    from tpsviz.core.cancel import Cancelled, cancel_when
    from tpsviz.diagnostics.verdict import statistics_for, verdict_statistics

    data = simulate("tau2-like", n_trajectories=300, seed=21).to_data()
    settings = ScoreSettings(n_boot=0)
    names = list(data.predictors)
    threaded = statistics_for(data, settings, names, n_null=50, threads=2)
    assert list(threaded) == names
    for n in names:
        one = verdict_statistics(data, settings, n, n_null=50)
        assert threaded[n].keys() == one.keys()
        for k, v in one.items():  # equal to the bit, NaN where NaN
            assert threaded[n][k] == v or (isinstance(v, float) and math.isnan(v) and math.isnan(threaded[n][k])), k
    with cancel_when(lambda: True), pytest.raises(Cancelled):
        statistics_for(data, settings, names, n_null=50, threads=2)


# ----------------------------------------------------------------- sequential nulls (Besag–Clifford)
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_stopping_a_null_early_never_changes_a_decision(monkeypatch, level):
    """Every null of every predictor, stopped as _SequentialNull stops it and drawn to the end
    (H_STOP out of reach): a p-value below its threshold is the same number both ways, a p-value
    at or above it stays there, and so every verdict label is the same; the stopped nulls made
    fewer draws on these logs."""
    from tpsviz.diagnostics import corp_nulls as nulls

    calls = {"n": 0}
    dsc = nulls._Corp.dsc

    def counting(self, lab):
        calls["n"] += 1
        return dsc(self, lab)

    monkeypatch.setattr(nulls._Corp, "dsc", counting)
    alpha = 1 - level
    for seed in (0, 1):
        data = distorted_log("tau2-like", n=300, seed=40 + seed)
        st_ = ScoreSettings(censoring="complete", n_boot=0, level=level)
        calls["n"] = 0
        fast = verdicts(data, st_)
        n_fast = calls["n"]
        monkeypatch.setattr(nulls, "H_STOP", 10 ** 9)
        calls["n"] = 0
        full = verdicts(data, st_)
        n_full = calls["n"]
        monkeypatch.setattr(nulls, "H_STOP", 10)
        assert n_fast < n_full
        for name in full:
            a, b = fast[name], full[name]
            assert a.label == b.label, (name, a.label, b.label)
            for attr, thr in (("mcb_p", alpha / 3), ("dsc_p", alpha), ("dsc_rev_p", alpha)):
                pa_, pb = getattr(a, attr), getattr(b, attr)
                if pb < thr:
                    assert pa_ == pb, (name, attr, pa_, pb)
                else:
                    assert pa_ >= thr, (name, attr, pa_, pb)


def test_a_stopped_null_gives_a_valid_p_value():
    """Under the null (observed and draws from one law) P(p ≤ a) ≤ a for the sequential p-value,
    within Monte-Carlo error (3,000 tests a threshold), at several a; a null stopped early has a
    p-value at or above its threshold; and a null that never stops gives
    (1 + k) / (1 + B) exactly."""
    from tpsviz.diagnostics.corp_nulls import _SequentialNull

    rng = np.random.default_rng(7)
    for threshold in (0.05 / 3, 0.05, 0.1):
        ps = []
        for _ in range(3000):
            s = _SequentialNull(rng.random(), threshold, 200)
            while s.running:
                s.add(rng.random())
            ps.append(s.p())
            if s.n < 200:  # stopped early: it can no longer reject
                assert s.p() >= threshold, (threshold, s.k, s.n, s.p())
        ps = np.array(ps)
        for a in (0.01, 0.05, 0.1, 0.25, 0.5):
            assert np.mean(ps <= a) <= a + 3 * math.sqrt(a * (1 - a) / ps.size), (threshold, a, np.mean(ps <= a))
        assert np.mean(ps <= 0.5) > 0.4  # not conservative to the point of uselessness
    s = _SequentialNull(0.999, 0.05, 50)
    draws = np.random.default_rng(1).random(50)
    for x in draws:
        s.add(x)
    assert s.p() == (1 + np.sum(draws >= 0.999 - s.tol)) / 51
