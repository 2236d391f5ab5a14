"""Reliability data: intervals against scipy.stats.binomtest, bins against a loop, the CORP
curve against the PAV fit, the consistency band's behaviour."""

import numpy as np
import pytest
from scipy import stats

from tpsviz.diagnostics.decomposition import pav
from tpsviz.diagnostics.reliability import (
    clopper_pearson_interval, corp_curve, forecast_histogram, reliability_bins, wilson_interval)

CASES = [(0, 1), (1, 1), (0, 7), (3, 7), (7, 7), (12, 40), (399, 400)]


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_intervals_match_scipy_binomtest(level):
    for k, n in CASES:
        ci = stats.binomtest(k, n).proportion_ci(level, method="wilson")
        lo, hi = wilson_interval(k, n, level)
        assert (float(lo), float(hi)) == pytest.approx((ci.low, ci.high), abs=1e-12)
        ci = stats.binomtest(k, n).proportion_ci(level, method="exact")
        lo, hi = clopper_pearson_interval(k, n, level)
        assert (float(lo), float(hi)) == pytest.approx((ci.low, ci.high), abs=1e-10)


def test_empty_bin_interval_is_nan_and_bad_level():
    assert np.isnan(wilson_interval(0, 0)[0]) and np.isnan(clopper_pearson_interval(0, 0)[1])
    with pytest.raises(ValueError):
        wilson_interval(1, 2, level=1.0)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("interval", ["wilson", "clopper-pearson"])
def test_bins_match_loop(strategy, interval):
    rng = np.random.default_rng(0)
    p = np.round(rng.beta(2, 5, 300), 2)
    y = (rng.random(300) < p).astype(float)
    df = reliability_bins(p, y, 8, strategy, interval, 0.9)
    assert list(df.columns) == ["bin_lo", "bin_hi", "n", "mean_forecast", "observed_rate",
                                "ci_low", "ci_high"]
    assert len(df) == 8 and df["n"].sum() == 300
    for _, row in df.iterrows():
        last = row["bin_hi"] == df["bin_hi"].iloc[-1]
        m = (p >= row["bin_lo"]) & ((p < row["bin_hi"]) | (last & (p == row["bin_hi"])))
        assert row["n"] == m.sum()
        if m.sum():
            assert row["mean_forecast"] == pytest.approx(p[m].mean())
            assert row["observed_rate"] == pytest.approx(y[m].mean())
            method = "wilson" if interval == "wilson" else "exact"
            ci = stats.binomtest(int(y[m].sum()), int(m.sum())).proportion_ci(0.9, method)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_empty_bins_kept_and_bad_args():
    df = reliability_bins([0.05, 0.95], [0, 1], 10)
    assert len(df) == 10 and df["n"].tolist() == [1] + [0] * 8 + [1]
    assert df["observed_rate"].isna().sum() == 8
    with pytest.raises(ValueError, match="interval"):
        reliability_bins([0.5], [1], interval="agresti")
    with pytest.raises(ValueError, match="n_bins"):
        reliability_bins([0.5], [1], n_bins=0)


def test_corp_curve_is_the_pav_fit_and_reproducible():
    rng = np.random.default_rng(1)
    p = np.round(rng.random(500), 3)
    y = (rng.random(500) < p).astype(float)
    df = corp_curve(p, y, n_boot=50, seed=5, max_points=1000)
    fit = pav(p, y)
    for x, r in zip(df["x"], df["recalibrated"]):
        assert r == pytest.approx(fit[p == x][0])
    assert df["n"].sum() == 500 and np.all(np.diff(df["recalibrated"]) >= 0)
    assert (df["band_low"] <= df["band_high"]).all()
    again = corp_curve(p, y, n_boot=50, seed=5, max_points=1000)
    assert again.equals(df)
    assert corp_curve(p, y, n_boot=0)["band_low"].isna().all()
    assert len(corp_curve(p, y, n_boot=0, max_points=40)) <= 40


def test_band_covers_calibrated_and_excludes_miscalibrated():
    rng = np.random.default_rng(2)
    p = rng.random(4000)
    y = (rng.random(4000) < p).astype(float)
    df = corp_curve(p, y, n_boot=200, seed=1, level=0.95)
    mid = df[(df["x"] > 0.1) & (df["x"] < 0.9)]
    inside = (mid["recalibrated"] >= mid["band_low"]) & (mid["recalibrated"] <= mid["band_high"])
    assert inside.mean() > 0.8
    # over-confident: reports p, truth is 0.5 + (p - 0.5) / 3
    y_bad = (rng.random(4000) < 0.5 + (p - 0.5) / 3).astype(float)
    bad = corp_curve(p, y_bad, n_boot=200, seed=1, level=0.95)
    hi = bad[bad["x"] > 0.85]
    assert (hi["recalibrated"] < hi["band_low"]).mean() > 0.8


def test_forecast_histogram_counts():
    p = np.array([0.0, 0.04, 0.05, 0.5, 0.99, 1.0, np.nan])
    df = forecast_histogram(p, 20)
    assert df["count"].sum() == 6
    for _, row in df.iterrows():
        last = row["bin_hi"] == 1.0
        want = sum(1 for v in p[:-1]
                   if row["bin_lo"] <= v < row["bin_hi"] or (last and v == 1.0))
        assert row["count"] == want
    assert forecast_histogram(p, [0, 0.5, 1])["count"].tolist() == [3, 3]
    with pytest.raises(ValueError):
        forecast_histogram(p, [0, 0.5, 0.5, 1])
