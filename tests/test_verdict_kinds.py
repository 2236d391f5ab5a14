"""Verdicts that name what they judge (issue 37): a reference forecaster is a yardstick, a constant forecast
is a constant, a conversion of a weak signal is "too weak to convert" and not "optimistic", and every
conversion's sentence says what was converted and how; a truthful signal keeps its label."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import tpsviz
from tpsviz.cli.main import main
from tpsviz.core import schema
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics.calibrate import add_recalibrated, conversion_words
from tpsviz.diagnostics.verdict import LABEL_KEYS, LABELS, RULE_LABELS, verdicts
from tpsviz.diagnostics.verdict.kinds import conversion_fault, lost_ranking
from tpsviz.diagnostics.verdict.words import kind_sentence
from tpsviz.evaluation.record import BinaryEvaluation
from tpsviz.evaluation.tables import verdict_rows
from tpsviz.forecasts import references
from tpsviz.io.tables.longform import from_frame
from tpsviz.synthetic.agent import known_distortions

SIMPLE = ScoreSettings(censoring="simple", n_boot=200)


def weak_unc_rows(seed: int = 16, n: int = 101, budget: int = 12) -> pd.DataFrame:
    """A HotpotQA-like log (issue 37): 101 runs, half cut off by the budget, about 15% of runs succeed,
    and one raw uncertainty signal ``unc_uala`` that is noise (nothing to convert)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        cut = rng.random() < 0.5
        length = budget if cut else int(rng.integers(2, budget))
        y = None if cut else int(rng.random() < 0.3)
        rows += [{"trajectory_id": f"r{i}", "step": t, "outcome": "" if y is None else y, "censored": cut,
                  "unc_uala": rng.normal()} for t in range(1, length + 1)]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def weak():
    data, _ = add_recalibrated(from_frame(weak_unc_rows(), source="hotpot-like"), "unc_uala", "platt")
    return data, verdicts(data, SIMPLE, ["uala@platt"])["uala@platt"]


def _complete_rows(data):
    """The step rows of complete runs, their outcome and run (the rows the leaderboard's AUROC uses)."""
    y = data.trajectories["outcome"].to_numpy(dtype=float)[data.steps["traj"].to_numpy()]
    keep = ~np.isnan(y)
    return keep, y[keep], data.steps["traj"].to_numpy()[keep]


# --------------------------------------------------------------------------- the weak signal
def test_a_weak_signal_converted_below_chance_is_too_weak_to_convert_not_optimistic(weak):
    data, v = weak
    assert v.n_runs == 101 and 0.12 <= v.run_rate <= 0.18  # the real log's shape: 101 runs, ~15% succeed
    # issue 37's headline was "optimistic", from a map fitted on complete runs only; fitted on the simple
    # score's population (issue 45) the noise signal's conversion is no longer biased, only uninformative
    assert v.rules_label == "uninformative" and abs(v.bias) < 2 * v.bias_se
    assert (v.label, v.key, v.rule) == ("too weak to convert", "too_weak_to_convert", "conversion")
    # the numbers against scikit-learn on the complete runs' rows
    keep, y, runs = _complete_rows(data)
    a_conv = roc_auc_score(y, data.forecasts("uala@platt")[keep])
    a_src = roc_auc_score(y, -data.steps["unc_uala"].to_numpy()[keep])  # unc_: higher = less confident
    assert v.conversion_auroc == pytest.approx(a_conv, abs=1e-12) and a_conv < 0.35
    assert v.source_auroc == pytest.approx(a_src, abs=1e-12)
    assert v.conversion_auroc_ci_high < 0.5 < v.source_auroc_ci_high and v.source_auroc_ci_low < 0.5
    # the sentence names the conversion, how, both rankings with their intervals and their runs (the complete
    # ones: about half the runs were cut off), and whose fault it is
    n_complete = np.unique(runs).size
    assert v.n_observed == n_complete < v.n_runs
    assert v.text.startswith("uala@platt: too weak to convert — unc_uala converted to a probability by Platt "
                             "scaling, fitted on all 101 runs, the "
                             f"{data.n_censored} cut off counted as failures, each run's map on other runs "
                             "(cross-fitted), ranks runs worse "
                             f"than chance on the {n_complete} complete runs, as in the leaderboard (AUROC "
                             f"{a_conv:.2f}, 95% CI ")
    assert f"unc_uala by itself ranks them no better than chance (AUROC {a_src:.2f}, 95% CI " in v.text
    assert "too weak a signal to convert, so this judges the conversion, not the agent's signal" in v.text
    assert f"the conversion says {100 * v.mean_forecast:.0f}% on average" in v.text
    assert "optimistic" not in v.text and "nan" not in v.text.lower()


def test_the_conversion_intervals_match_a_bootstrap_loop_over_runs(weak):
    data, v = weak
    keep, y, runs = _complete_rows(data)
    p, s = data.forecasts("uala@platt")[keep], -data.steps["unc_uala"].to_numpy()[keep]
    ids = np.unique(runs)
    rows_of = {r: np.flatnonzero(runs == r) for r in ids}
    rng = np.random.default_rng(3)
    conv, src = [], []
    for _ in range(800):
        rows = np.concatenate([rows_of[r] for r in rng.choice(ids, ids.size)])
        if 0 < y[rows].sum() < rows.size:
            conv.append(roc_auc_score(y[rows], p[rows]))
            src.append(roc_auc_score(y[rows], s[rows]))
    for (lo, hi), reps in (((v.conversion_auroc_ci_low, v.conversion_auroc_ci_high), conv),
                           ((v.source_auroc_ci_low, v.source_auroc_ci_high), src)):
        assert (lo, hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), abs=0.04)


BASE = dict(conversion_auroc=0.62, conversion_auroc_ci_low=0.55, conversion_auroc_ci_high=0.69,
            source_auroc=0.64, source_auroc_ci_low=0.57, source_auroc_ci_high=0.71, conversion_delta_z=-1.0)


@pytest.mark.parametrize("change, fault", [
    ({}, None),                                                            # a fine conversion of a signal
    ({"conversion_delta_z": -3.0}, None),                                  # significant but small loss
    ({"conversion_auroc": 0.55, "conversion_auroc_ci_low": 0.49, "conversion_delta_z": -3.0},
     "conversion failed"),                                                 # kept under half of 0.14
    ({"conversion_auroc": 0.40, "conversion_auroc_ci_low": 0.33, "conversion_auroc_ci_high": 0.47},
     "conversion failed"),                                                 # worse than chance, good source
    ({"conversion_auroc": 0.40, "conversion_auroc_ci_low": 0.33, "conversion_auroc_ci_high": 0.47,
      "source_auroc": 0.52, "source_auroc_ci_low": 0.45}, "too weak to convert"),
    ({"conversion_auroc": 0.52, "conversion_auroc_ci_low": 0.44, "source_auroc": 0.52,
      "source_auroc_ci_low": 0.45}, "too weak to convert"),                # nothing shown to convert
    ({"conversion_auroc": 0.58, "conversion_auroc_ci_low": 0.51, "source_auroc": 0.52,
      "source_auroc_ci_low": 0.45}, None),                                 # the conversion shows a ranking
    ({"conversion_auroc": np.nan}, None),                                  # not measured
    # weak on the complete runs alone, informative on the runs the score scores (issue 45): no fault
    ({"conversion_auroc": 0.52, "conversion_auroc_ci_low": 0.44, "source_auroc": 0.52,
      "source_auroc_ci_low": 0.45, "dsc_p": 0.005, "auroc": 0.68}, None),
    ({"conversion_auroc": 0.45, "conversion_auroc_ci_low": 0.40, "conversion_auroc_ci_high": 0.49,
      "dsc_p": 0.005, "auroc": 0.66}, None),
    # the discrimination test passes but the scored runs' AUROC is not above 0.5: still at fault
    ({"conversion_auroc": 0.52, "conversion_auroc_ci_low": 0.44, "source_auroc": 0.52,
      "source_auroc_ci_low": 0.45, "dsc_p": 0.005, "auroc": 0.49}, "too weak to convert"),
    # a lost ranking is a fault whatever the scored runs show (a relative loss against the source)
    ({"conversion_auroc": 0.55, "conversion_auroc_ci_low": 0.49, "conversion_delta_z": -3.0, "dsc_p": 0.005,
      "auroc": 0.6}, "conversion failed"),
])
def test_a_conversion_is_at_fault_by_its_intervals(change, fault):
    s = BASE | change
    assert conversion_fault(s, 0.95) == fault
    assert lost_ranking(s, 0.95) == (change.get("conversion_delta_z", 0) < -1.96 and s["conversion_auroc"] < 0.57)


def test_a_conversion_that_lost_its_ranking_says_so_and_names_the_source():
    s = BASE | {"conversion_auroc": 0.55, "conversion_auroc_ci_low": 0.49, "conversion_delta_z": -3.0,
                "source": "raw_logprob", "conversion": "raw_logprob converted to a probability by isotonic "
                "regression, one map per step, each run's map fitted on other runs (cross-fitted)",
                "mean_forecast": 0.4, "success_rate": 0.38, "run_rate": 0.38, "skill": 0.01, "skill_se": 0.02,
                "skill_ci_low": -0.03, "skill_ci_high": 0.05, "ref_rate": 0.38}
    text = kind_sentence("logprob@isotonic-step", "conversion failed", s, 0.95, "complete", "trustworthy", "all")
    assert text.startswith("logprob@isotonic-step: conversion failed — raw_logprob converted to a probability by "
                           "isotonic regression, one map per step")
    assert ("lost most of its ranking (AUROC 0.55, 95% CI 0.49–0.69, against 0.64 for raw_logprob by itself; "
            "the difference is -3.0 standard errors)") in text
    assert "raw_logprob by itself ranks them better than chance (AUROC 0.64, 95% CI 0.57–0.71)" in text


# --------------------------------------------------------------------------- a truthful signal
def test_an_informative_conversion_keeps_the_rules_label_and_says_how_it_was_made():
    data = tpsviz.load("demo_data/tau2-like.csv")
    data, _ = add_recalibrated(data, "raw_logprob", "platt")
    data, _ = add_recalibrated(data, "verbal", "isotonic", per_step=True, name="verbal@isotonic-step")
    out = verdicts(data, SIMPLE, ["logprob@platt", "verbal@isotonic-step"])
    v = out["logprob@platt"]
    assert v.label == v.rules_label == "trustworthy" and v.rule == "all"
    assert v.text.startswith("logprob@platt: trustworthy — raw_logprob converted to a probability by Platt "
                             f"scaling, fitted on all 450 runs, the {data.n_censored} cut off counted as failures, "
                             f"each run's map on other runs (cross-fitted); says {100 * v.mean_forecast:.0f}% on average")
    assert abs(v.mean_forecast - v.success_rate) < 0.01  # fitted on the scored population: calibrated in the large
    assert v.conversion_auroc > 0.6 and v.conversion_auroc_ci_low > 0.5  # measured, not at fault
    w = out["verbal@isotonic-step"]
    assert w.label == w.rules_label and w.text.startswith(
        f"verbal@isotonic-step: {w.label} — verbal recalibrated by isotonic regression, one map per step, fitted "
        f"on all 450 runs, the {data.n_censored} cut off counted as failures, each run's map on other runs "
        "(cross-fitted); says ")
    assert conversion_words(data, "verbal") is None


def test_known_distortions_keep_their_labels_and_keys():
    out = verdicts(known_distortions("webshop-like", 400, 0, 400), ScoreSettings(censoring="complete", n_boot=200))
    assert [out[n].label for n in ("truthful", "optimistic", "overconfident")] == ["trustworthy", "optimistic",
                                                                                 "overconfident"]
    for v in out.values():
        assert v.label == v.rules_label and v.rule not in ("reference", "constant", "conversion")
        assert v.key == v.label.replace(" ", "_") and v.source == "" and np.isnan(v.conversion_auroc)
    assert set(LABEL_KEYS) == set(LABELS) and len(set(LABEL_KEYS.values())) == len(LABELS)


# --------------------------------------------------------------------------- the constant
def test_the_demo_flat_forecast_is_a_constant_at_the_base_rate_not_optimistic():
    data = tpsviz.load("demo_data/tau2-like.csv")
    v = verdicts(data, SIMPLE, ["flat"])["flat"]
    value = np.unique(data.forecasts("flat"))
    t = data.trajectories
    run_rate = float(np.where(t["censored"], 0.0, t["outcome"]).mean())  # simple: cut off = failure
    assert value.size == 1 and round(100 * value[0]) == 51 and round(100 * run_rate) == 49
    assert (v.label, v.key, v.rule, v.rules_label) == ("constant", "constant", "constant", "optimistic")
    assert v.text.startswith(f"flat: constant — says 51% at every step, against {100 * v.success_rate:.0f}% "
                             "success within the budget over the same steps (49% of runs; long runs fail more "
                             "often); the base rate, uninformative by construction: one value cannot tell runs "
                             "apart; ")


def test_a_constant_far_from_the_base_rate_says_which_way():
    rows = [{"trajectory_id": f"r{i}", "step": t, "outcome": int(i % 2 == 0), "conf_hopeful": 0.9}
            for i in range(60) for t in (1, 2, 3)]
    v = verdicts(from_frame(pd.DataFrame(rows)), ScoreSettings(censoring="complete", n_boot=200))["hopeful"]
    assert v.label == "constant" and v.rules_label == "optimistic"
    assert ("says 90% at every step, against 50% success over the same steps; above the base rate (50% of runs), "
            "uninformative by construction") in v.text


# --------------------------------------------------------------------------- the references
def test_reference_forecasters_are_yardsticks_with_what_the_rules_find():
    assert references.is_reference is schema.is_reference  # one name test, below every layer
    data = references.add_references(tpsviz.load("demo_data/tau2-like.csv"), ScoreSettings(censoring="simple"))
    refs = [p for p in data.predictors if schema.is_reference(p)]
    out = verdicts(data, SIMPLE, refs + ["truthful"])
    assert len(refs) == 3 and out["truthful"].label == "trustworthy"
    for name in refs:
        v = out[name]
        assert (v.label, v.key, v.rule) == ("yardstick", "yardstick", "reference") and v.rules_label in RULE_LABELS
        assert v.text.startswith(f"{name}: yardstick — a reference forecaster fitted on other runs' outcomes, not "
                                 "the agent's confidence: the bar a real signal has to clear; as a forecast it is "
                                 f"{v.rules_label}: ")
    assert not schema.is_reference("reference") and not schema.is_reference("refined")


# --------------------------------------------------------------------------- where the labels go
def test_the_json_and_the_tables_carry_the_key_the_rules_label_and_the_conversion(weak):
    data, _ = weak
    ev = BinaryEvaluation.compute(data, SIMPLE)
    obj = json.loads(json.dumps(ev.to_json(), allow_nan=False))
    rec = obj["predictors"]["uala@platt"]["verdict"]
    assert (rec["label"], rec["key"], rec["rules_label"]) == ("too weak to convert", "too_weak_to_convert",
                                                              "uninformative")
    conv = rec["conversion"]
    assert conv["source"] == "unc_uala" and conv["how"].startswith("unc_uala converted to a probability by Platt")
    assert conv["conversion_auroc_ci_high"] < 0.5 < conv["source_auroc_ci_high"]
    assert rec["numbers"]["rule"] == "conversion"
    assert any(r.startswith("too weak to convert / conversion failed:") for r in obj["settings"]["verdict_rules"])
    row = next(r for r in verdict_rows(ev) if r["name"] == "uala@platt")
    assert row["key"] == "too_weak_to_convert" and row["reason"].startswith("unc_uala converted to a probability")


def test_the_cli_prints_the_weak_conversion_by_its_label(tmp_path, capsys):
    path = tmp_path / "hotpot.csv"
    weak_unc_rows().to_csv(path, index=False)
    assert main(["score", str(path), "--recalibrate", "platt", "--censoring", "simple", "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "  uala@platt: too weak to convert — unc_uala converted to a probability by Platt scaling" in out
    assert "uala@platt: optimistic" not in out
