"""forecasts.versus.versus_own_references: each side of a comparison against references fitted on its own
runs only (issue 46, point 3), checked against the two steps done by hand on each side alone."""

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.diagnostics.combine import combine_logs
from tpsviz.diagnostics.groups import group_labels
from tpsviz.forecasts.references import add_references
from tpsviz.forecasts.versus import versus_best_reference, versus_own_references

SETTINGS = tpsviz.ScoreSettings(censoring="simple", n_boot=0)


def _log(seed: int, n: int = 80, with_verbal: bool = True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        q = rng.uniform(0.1, 0.9)
        y = int(rng.random() < q)
        for t in range(1, 6):
            row = {"trajectory_id": f"s{seed}-{i}", "step": t, "outcome": y, "task": f"task-{i % 10}"}
            if with_verbal:
                row["conf_verbal"] = float(np.clip(q + rng.normal(0, 0.1), 0.01, 0.99))
            rows.append(row)
    return pd.DataFrame(rows)


def _both(a: pd.DataFrame, b: pd.DataFrame):
    both = combine_logs(tpsviz.from_frame(a), tpsviz.from_frame(b), allow_no_predictor=True)
    return both, group_labels(both, "log")


def test_each_side_equals_its_references_fitted_on_its_runs_alone():
    both, labels = _both(_log(1), _log(2))
    own = versus_own_references(both, labels, ["baseline", "candidate"], SETTINGS)
    for side, frame in (("baseline", _log(1)), ("candidate", _log(2))):
        alone = versus_best_reference(add_references(tpsviz.from_frame(frame), SETTINGS), SETTINGS)
        assert own[side]["verbal"]["reference"] == alone["verbal"]["reference"]
        assert own[side]["verbal"]["delta"] == pytest.approx(alone["verbal"]["delta"], rel=1e-12)
        assert own[side]["verbal"]["se"] == pytest.approx(alone["verbal"]["se"], rel=1e-12)


def test_the_other_sides_outcomes_never_reach_a_sides_references():
    a, b = _log(3), _log(4)
    flipped = b.assign(outcome=1 - b["outcome"])
    one = versus_own_references(*_both(a, b), ["baseline"], SETTINGS)
    two = versus_own_references(*_both(a, flipped), ["baseline"], SETTINGS)
    assert one["baseline"]["verbal"]["delta"] == pytest.approx(two["baseline"]["verbal"]["delta"], rel=1e-12)


def test_a_side_without_forecasts_says_why_and_a_log_without_any_gives_nothing():
    both, labels = _both(_log(5), _log(6).assign(conf_verbal=np.nan))  # a column without a forecast
    own = versus_own_references(both, labels, ["baseline", "candidate"], SETTINGS)
    assert "verbal" in own["baseline"]
    assert own["candidate"] == {"why": "no forecast of its own on this side"}
    bare, labels = _both(_log(7, with_verbal=False), _log(8, with_verbal=False))
    assert versus_own_references(bare, labels, ["baseline", "candidate"], SETTINGS) == {}
