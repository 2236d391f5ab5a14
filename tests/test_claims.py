"""Text that never overclaims (tpsviz.diagnostics.claims): every sentence is conditioned on the Δ/SE it quotes,
at one threshold, and never shows NaN, ∞ or "from x to x"."""

import re

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import tpsviz
from tpsviz.diagnostics import demonstrators as D
from tpsviz.diagnostics.claims import Z_CLEAR, change_text, disagreements, is_clear, z_text

BAD = re.compile(r"\b(nan|inf)\b|∞", re.IGNORECASE)


def test_threshold_and_z_text():
    assert is_clear(Z_CLEAR) and is_clear(-2.5) and not is_clear(1.99)
    assert not is_clear(float("nan")) and not is_clear(None) and not is_clear(float("inf"))
    assert z_text(2.83) == "Δ/SE = +2.8"
    assert z_text(float("nan")) == "Δ/SE not available"


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True, width=32),
       st.floats(allow_nan=True, allow_infinity=True, width=32),
       st.floats(min_value=-1, max_value=10, width=32) | st.just(float("nan")))
def test_change_text_never_nan_and_never_from_x_to_x(before, after, se):
    s = change_text("mean TPS", before, after, se)
    assert not BAD.search(s), s
    m = re.search(r"from (\S+) to (\S+)", s)
    if m:
        assert m.group(1) != m.group(2), s
        delta = float(after) - float(before)
        assert abs(delta / se) >= Z_CLEAR  # "rises/drops" only when the difference is clear


def test_change_text_words_follow_z():
    assert change_text("TPS", -3.0, -3.5, 0.1).startswith("TPS drops from -3.000 to -3.500")
    assert change_text("TPS", -3.0, -3.5, 0.4).startswith("TPS does not change clearly")
    # two values that print the same at 3 decimals get more digits
    assert "-3.0810 to -3.0814" in change_text("TPS", -3.0810, -3.0814, 0.0001)
    assert change_text("TPS", -3.081, -3.081, 0.1) == "TPS stays at -3.081 (Δ = 0)"


def _frame(rows):
    return pd.DataFrame(rows).set_index("predictor")


def test_disagreements_are_conditioned_on_both_z():
    raw = _frame([
        {"predictor": "a", "tps_delta": 1.0, "tps_z": 3.0, "auroc_delta": 0.001, "auroc_z": 0.3},
        {"predictor": "b", "tps_delta": 1.0, "tps_z": 1.5, "auroc_delta": -0.05, "auroc_z": -3.0},
        {"predictor": "c", "tps_delta": 1.0, "tps_z": 4.0, "auroc_delta": -0.05, "auroc_z": -2.8},
        {"predictor": "d", "tps_delta": 1.0, "tps_z": 3.0, "auroc_delta": 0.05, "auroc_z": 3.0},
        {"predictor": "e", "tps_delta": 1.0, "tps_z": 3.0, "auroc_delta": -0.05, "auroc_z": -0.7},
        {"predictor": "f", "tps_delta": 1.0, "tps_z": np.nan, "auroc_delta": np.nan, "auroc_z": np.nan},
    ])
    out = disagreements(raw, "base", "nats")
    joined = " ".join(out)
    assert not BAD.search(joined)
    assert out[0].startswith("Rank flip: c vs base") and "Δ/SE = -2.8" in out[0]
    assert not any(s.startswith("Rank flip") and "e vs" in s for s in out)  # Δ/SE -0.7: no flip
    assert any(s.startswith("a vs base: AUROC does not tell them apart clearly") for s in out)
    assert not any(s.startswith(("b vs", "d vs", "f vs")) for s in out)  # TPS not clear / agree / n.a.


def test_demonstrations_do_not_need_a_truthful_predictor_and_never_say_nan():
    data = tpsviz.load("demo_data/tau2-like.csv")
    keep = [p for p in data.predictors if p != "truthful"]
    steps = data.steps.drop(columns=["conf_truthful"])
    from tpsviz.core.data import TrajectoryData

    other = TrajectoryData(steps, data.trajectories, keep, dict(data.signals), data.source,
                           list(data.notes), data.reading)
    for fn in (D.monotone_distortion, D.bin_mean_forecast, D.phi_mean_manipulation):
        text = fn(other).explanation
        assert "truthful" not in text, text
        assert not BAD.search(text), text
    phi = D.phi_mean_manipulation(other).explanation
    assert "taken as the truth" in phi


def test_bin_mean_text_says_not_clear_when_the_difference_is_not():
    data = tpsviz.load("demo_data/tau2-like.csv").subset(np.arange(450) < 30)
    d = D.bin_mean_forecast(data)
    if is_clear(d.comparison["z"]):
        assert "clearly ranks it" in d.explanation
    else:
        assert "does not separate it clearly" in d.explanation
        assert "throw away" not in d.explanation


def test_a_claims_delta_has_the_tables_decimals():
    # helper-26: "Δ = +1 beta-score units" beside a table saying +1.0030
    raw = _frame([{"predictor": "a", "tps_delta": 1.003, "tps_z": 7.1, "auroc_delta": -0.006, "auroc_z": -3.0}])
    assert "(Δ = +1.003 nats per run, Δ/SE = +7.1)" in disagreements(raw, "base", "nats")[0]


def test_a_gamed_last_report_that_gains_on_the_runs_is_explained():
    """helper-26: on a real log the Φ_mean demonstration said TPS 'drops in expectation' next to a
    realised gain. A forecaster timid at the last step (0.6–0.8 / 0.2–0.4 where the outcome is known)
    gains from the change; the text must say what that means."""
    data = tpsviz.load("demo_data/tau2-like.csv")
    codes = data.steps["traj"].to_numpy()
    y = data.trajectories["outcome"].to_numpy()[codes]
    last = np.r_[codes[1:] != codes[:-1], True]  # (rows of a run are contiguous, in step order)
    lean = np.random.default_rng(3).uniform(0.1, 0.3, len(y))  # (runs gain unequally: an SE above 0)
    timid = np.where(last & (y == 1), 0.5 + lean, np.where(last & (y == 0), 0.5 - lean, 0.5))
    d = D.phi_mean_manipulation(data.with_predictor("timid", timid), truthful="timid")
    assert d.comparison["delta"] > 0 and is_clear(d.comparison["z"])
    assert "the changed trace scores higher" in d.explanation and "timid is miscalibrated at the last step" in d.explanation
    assert not BAD.search(d.explanation)
    honest = D.phi_mean_manipulation(data)  # (the demo's truthful q_t: the change loses, no such sentence)
    assert "scores higher" not in honest.explanation
    assert D.bin_mean_forecast(data).comparison["reference"] == "truthful"


def test_two_values_that_differ_past_six_decimals_still_print_apart():
    # found by the property test above (issue 45 review): before, "drops from -0.000 to -0.000"
    s = change_text("mean TPS", -0.0, -1e-12, 2.5e-39)
    m = re.search(r"from (\S+) to (\S+) ", s)
    assert m and m.group(1) != m.group(2) and float(m.group(1)) == 0.0 and float(m.group(2)) == -1e-12, s
