"""Weight schedules: formulas, verdicts, parsing."""

import numpy as np
import pytest

from tpsviz.core.schedules import SCHEDULE_NAMES, Schedule, parse_schedule, schedule_help


def test_weights_formulas():
    t = np.array([1, 2, 3, 1, 2])
    T = np.array([3, 3, 3, 2, 2])
    np.testing.assert_array_equal(Schedule("uniform").weights(t, T), 1.0)
    np.testing.assert_array_equal(Schedule("linear").weights(t, T), t)
    np.testing.assert_allclose(Schedule("front", 0.5).weights(t, T), 0.5 ** (t - 1))
    np.testing.assert_allclose(Schedule("back", 0.9, 5).weights(t, T), 0.9 ** (5 - t))
    np.testing.assert_array_equal(Schedule("endpoint").weights(t, T), [0, 0, 1, 0, 1])
    np.testing.assert_allclose(Schedule("per-length").weights(t, T), 1 / T)
    np.testing.assert_array_equal(Schedule("column").weights(t, T, np.arange(5.0)), np.arange(5.0))
    with pytest.raises(ValueError, match="weight"):
        Schedule("column").weights(t, T)


def test_verdicts():
    for s in (Schedule("uniform"), Schedule("linear"), Schedule("front", 0.9),
              Schedule("back", 0.9, 30)):
        assert s.verdict.is_strictly_proper and s.verdict.reason
    assert Schedule("endpoint").verdict.status == "final forecast only"
    assert Schedule("per-length").verdict.status == "not proper"
    assert "E[Y/T" in Schedule("per-length").verdict.reason
    assert Schedule("column").verdict.status == "your responsibility"
    assert not Schedule("column").verdict.is_strictly_proper


@pytest.mark.parametrize("spec,expected", [
    ("uniform", Schedule("uniform")), ("linear", Schedule("linear")),
    ("front:0.9", Schedule("front", 0.9)), ("back:0.8:30", Schedule("back", 0.8, 30)),
    ("endpoint", Schedule("endpoint")), ("per-length", Schedule("per-length")),
    ("column", Schedule("column")), (" FRONT:0.5 ", Schedule("front", 0.5)),
])
def test_parse(spec, expected):
    assert parse_schedule(spec) == expected
    assert parse_schedule(expected.spec) == expected


@pytest.mark.parametrize("spec,msg", [
    ("weird", "unknown schedule"), ("front", "front:G"), ("back:0.9", "back:G:H"),
    ("front:x", "must be a number"), ("back:0.9:2.5", "integer"), ("front:-1", "γ > 0"),
    ("back:0.9:0", "budget"), ("uniform:3", "malformed"),
])
def test_parse_errors(spec, msg):
    with pytest.raises(ValueError, match=msg):
        parse_schedule(spec)


def test_help_lists_every_schedule():
    text = schedule_help()
    for name in SCHEDULE_NAMES:
        assert name in text
