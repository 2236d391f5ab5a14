"""The Overview's summary line (issue 37), without Streamlit: the success rate counted by hand from
the file, the verdict clause from labels, and model X vs model Y called a win only where |Δ/SE| ≥ 2."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tpsviz.core.schedules import Schedule
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics import groups as GR
from tpsviz.diagnostics.leaderboard import reference_rate
from tpsviz.evaluation import summary as SM
from tpsviz.io.loading import load

ROOT = Path(__file__).resolve().parents[1]
TAU2 = ROOT / "demo_data" / "tau2-like.csv"
DRIFT = ROOT / "demo_data" / "drift-like.csv"


@pytest.fixture(scope="module")
def tau2():
    return load(str(TAU2))


def _runs(path: Path) -> pd.DataFrame:
    """One row per run, read with pandas alone (the oracle of the counts)."""
    raw = pd.read_csv(path)
    return raw.groupby("trajectory_id").agg(outcome=("outcome", "last"), censored=("censored", "last"))


@pytest.mark.parametrize("mode", ["simple", "complete", "upper"])
def test_the_success_rate_is_counted_as_the_mode_defines_it(tau2, mode):
    runs = _runs(TAU2)
    cut = runs["censored"].astype(bool)
    wins = int(((runs["outcome"] == 1) & ~cut).sum())
    n, c = len(runs), int(cut.sum())
    assert c > 0
    settings = ScoreSettings(censoring=mode)
    rate, _ = reference_rate(tau2, settings)
    text = SM.success_words(tau2, settings, rate)
    if mode == "simple":
        assert text.startswith(f"{wins} of the {n} runs ({round(100 * wins / n)}%) succeeded within the step budget")
        assert f"(the {c} runs it cut off count as failures)" in text
    elif mode == "complete":
        assert text.startswith(f"{wins} of the {n - c} runs ({round(100 * wins / (n - c))}%) that finished")
        assert "left out" in text
    else:
        assert text.startswith(f"{wins + c} of the {n} runs")
        assert "count as successes" in text


def test_a_log_without_cut_off_runs_has_a_plain_rate():
    data = SimpleNamespace(n_trajectories=10, n_censored=0)
    assert SM.success_words(data, ScoreSettings(censoring="simple"), 0.3) == "3 of the 10 runs (30%) succeeded"


def test_settings_in_one_line_of_plain_words():
    line = SM.settings_line(ScoreSettings(censoring="simple"), n_censored=4)
    assert line == "log (α=0, β=0) score, every step weighs the same, runs cut off by the step budget count as failures"
    brier = SM.settings_line(ScoreSettings(alpha=1, beta=1, schedule=Schedule("linear"), censoring="upper"), 0)
    assert brier == "brier (α=1, β=1) score, later steps weigh more"  # no cut-off run: the mode changes nothing
    for symbol in ("q_Z", "ε", "w_t", "nats"):  # (α and β follow the family's name)
        assert symbol not in line and symbol not in brier


def _verdict(name, label, says=0.5, steps=0.5, runs=0.5):
    return SimpleNamespace(predictor=name, label=label, mean_forecast=says, success_rate=steps, run_rate=runs)


def test_the_verdict_clause_counts_the_agents_signals_not_the_yardsticks():
    v = {"truthful": _verdict("truthful", "trustworthy"),
         "ref:step": _verdict("ref:step", "trustworthy"),
         "verbal": _verdict("verbal", "optimistic", 0.94, 0.36, 0.49),
         "pess": _verdict("pess", "pessimistic", 0.20, 0.36, 0.49),
         "aware": _verdict("aware", "trustworthy")}
    text = SM.verdict_words(v)
    assert text.startswith("1 of 3 signals is trustworthy (aware); verbal is over-optimistic — it says 94% on "
                           "average, against 36% success at the same steps")
    assert "long runs fail more often" in text  # the rate per step is named by how it differs
    assert "truthful" not in text and "ref:step" not in text
    v["aware"] = _verdict("aware", "overconfident")
    assert SM.verdict_words(v).startswith("none of the 3 signals is trustworthy; verbal")
    only = {"ref:task": _verdict("ref:task", "trustworthy")}
    assert "no signal of the agent's own" in SM.verdict_words(only)
    one = {"x": _verdict("x", "overconfident")}
    assert SM.verdict_words(one) == ("the agent's one signal is not trustworthy: x is overconfident — its forecasts "
                                     "are too extreme both ways")
    # a label the rules may add later is named as it is
    assert SM.verdict_words({"w": _verdict("w", "too weak to convert")}) == (
        "the agent's one signal, w, is labelled too weak to convert")
    # a constant (a base rate) is a baseline, not one of the agent's signals
    v["flat"] = _verdict("flat", "constant")
    assert SM.verdict_words(v).startswith("none of the 3 signals is trustworthy; verbal")
    assert "no signal of the agent's own" in SM.verdict_words({"c": _verdict("c", "constant")})


def _diff(rows: dict) -> pd.DataFrame:
    return pd.DataFrame({p: {"tps_delta": d, "tps_se": se, "tps_z": d / se} for p, (d, se) in rows.items()}).T


def test_a_difference_is_a_win_only_beyond_two_standard_errors():
    win = SM.comparison_words({"B": _diff({"verbal": (0.3, 0.1)})}, "A", "nats", by="model")
    assert win == "by model: B scores better than A (by 0.30 ± 0.10 nats a run)"
    loss = SM.comparison_words({"B": _diff({"verbal": (-0.3, 0.1)})}, "A", "nats", by="model")
    assert loss == "by model: B scores worse than A (by 0.30 ± 0.10 nats a run)"
    tie = SM.comparison_words({"B": _diff({"verbal": (0.19, 0.1)})}, "A", "nats", by="model")  # Δ/SE 1.9
    assert tie == "by model: B and A are not clearly different (+0.19 ± 0.10 nats a run)"
    several = SM.comparison_words({"B": _diff({"truthful": (9.0, 0.1), "v": (0.5, 0.1), "w": (-0.05, 0.1)})},
                                  "A", "nats", by="agent")
    # the yardstick's difference is not the models' answer; the largest |Δ/SE| among the signals is
    assert several == ("by agent: B scores better than A on v (by 0.50 ± 0.10 nats a run; clearly better on 1 of 2 "
                        "signals, clearly worse on 0)")
    logs = SM.comparison_words({"candidate": _diff({"v": (0.05, 0.1), "w": (0.01, 0.1)})}, "baseline", "nats",
                               names={"candidate": "the candidate log", "baseline": "this log"})
    assert logs.startswith("the candidate log and this log are not clearly different on any of 2 signals")


def test_the_model_column_is_found_by_its_name_and_needs_two_groups():
    drift = load(str(DRIFT))
    assert SM.model_column(drift) == "model_version"
    raw = pd.read_csv(TAU2)
    first = raw.groupby("trajectory_id").ngroup()
    for name, values in (("Model", np.where(first % 2, "gpt-4o", "claude")), ("agent", np.full(len(raw), "one"))):
        data = load(raw.assign(**{name: values}).to_csv(index=False).encode(), name="with_model.csv")
        assert SM.model_column(data) == (name if name == "Model" else None)


def test_the_summary_line_answers_model_x_vs_y_on_the_drift_demo():
    """v2 of the drift demo is over-confident by construction (demo_data/README.md): the line says v2
    scores worse than v1 on the agent's signal, with the group difference's own Δ and SE."""
    data = load(str(DRIFT))
    settings = ScoreSettings(censoring="simple", n_boot=0)
    diff = GR.group_difference(data, "model_version", "v1", "v2", settings)
    words = SM.comparison_words({"v2": diff}, "v1", "nats", by="model_version")
    d, se = diff.loc["agent", "tps_delta"], diff.loc["agent", "tps_se"]
    assert d / se < -2
    assert words == f"by model_version: v2 scores worse than v1 on agent (by {abs(d):.2f} ± {se:.2f} nats a run)"


def test_a_constant_forecast_is_no_models_signal():
    v = {"flat": SimpleNamespace(forecast_min=0.49, forecast_max=0.49),
         "verbal": SimpleNamespace(forecast_min=0.5, forecast_max=0.99),
         "empty": SimpleNamespace(forecast_min=float("nan"), forecast_max=float("nan"))}
    assert SM.constant_predictors(v) == {"flat"}
    diffs = {"B": _diff({"flat": (-4.0, 0.5), "verbal": (0.1, 0.1)})}
    said = SM.comparison_words(diffs, "A", "nats", by="model", skip={"flat"})
    assert said == "by model: B and A are not clearly different on verbal (+0.10 ± 0.10 nats a run)"
