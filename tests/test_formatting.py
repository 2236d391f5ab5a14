"""How numbers are written (tpsviz.core.formatting): never "None" or "nan" on a page."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tpsviz.core.formatting import fmt, interval, num, pct, pm


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none(), st.text(max_size=3)))
def test_no_cell_says_none_or_nan(v):
    for text in (num(v), interval(v, v), pm(v, v), fmt(v if isinstance(v, float) or v is None else None)):
        assert "None" not in text and "nan" not in text.lower()


def test_values():
    assert num(-math.inf) == "−∞" and num(math.inf) == "+∞" and num(None) == "—" and num(0.123456) == "0.1235"
    assert interval(-1, 2, ".1f") == "[-1.0, 2.0]" and interval(np.nan, 1) == "—" and interval(-np.inf, 1) == "—"
    assert pm(0.5, 0.01) == "0.500 ± 0.010" and pm(0.5, np.nan) == "0.500" and pm(-np.inf, 0.1) == "−∞"
    assert fmt(-np.inf) == "−∞" and fmt(np.nan) == "n/a" and fmt(1234.5678) == "1235"


@pytest.mark.parametrize("k,n,want", [(0, 10, "0%"), (1, 1000, "0.1%"), (1, 200, "0.5%"), (45, 100, "45%"),
                                      (271, 600, "45%"), (17, 200, "8.5%"), (3, 0, "n/a")])
def test_pct(k, n, want):
    assert pct(k, n) == want


def test_settings_words_one_description_of_the_settings():
    from tpsviz import ScoreSettings, Schedule
    from tpsviz.core.tps import settings_words

    w = settings_words(ScoreSettings(alpha=1, beta=1, schedule=Schedule("back", 0.9, 30), censoring="complete",
                                     eps=0.0, n_boot=0))
    assert w["score"] == "brier (α=1, β=1)" and w["unit"] == "half-Brier units"
    assert w["schedule"] == "back:0.9:30: w_t = 0.9^(30-t)" and w["schedule_status"] == "strictly proper"
    assert w["censoring"].startswith("complete-case") and w["eps"] == "0 (clipping off)"
    assert w["bootstrap"].startswith("off")
    w = settings_words(ScoreSettings(alpha=0.3, beta=0.0, schedule=Schedule("per-length")), censoring="exact (x)")
    assert w["score"] == "custom (α=0.3, β=0)" and w["unit"].startswith("beta-score units")
    assert w["schedule_status"] != "strictly proper" and w["censoring"] == "exact (x)"
    assert w["bootstrap"] == "2000 replicates over trajectories (tasks where runs repeat them), seed 20260101"


def test_a_nonzero_value_never_reads_as_zero():
    # helper-26: "SE 0.0000" beside "Δ/SE −7.0" read as an error; the SE was 4.3e-05
    assert num(4.3e-05) == "4.3e-05" and num(-4.3e-05, "+.4f") == "-4.3e-05" and num(4.3e-05, "+.4f") == "+4.3e-05"
    assert num(0.0) == "0.0000" and num(-0.0, "+.1f") == "-0.0" and num(0.00005) == "0.0001"
    assert pm(1.0, 3e-05, ".3f") == "1.000 ± 3e-05" and pm(-1.0, 0.02, "+.3f") == "-1.000 ± 0.020"
    assert num(12345.678, ".0f") == "12346" and num(0.3, ".0f") == "0.3"


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.integers(0, 6), st.booleans())
def test_a_fixed_cell_is_the_value_to_its_precision(v, places, signed):
    spec = ("+" if signed else "") + f".{places}f"
    text = num(v, spec)
    if v == 0 or abs(v) >= 0.5 * 10 ** -places:  # (what fixed point writes as non-zero, or a true 0)
        assert float(text) == pytest.approx(v, abs=0.5 * 10 ** -places + 1e-9)
    else:  # two significant digits, never a zero
        assert float(text) != 0 and float(text) == pytest.approx(v, rel=0.05)
