"""Issue 46, point 7: the q_Z sensitivity band is flat, with a note, on a log with no censored run (it was a
zigzag of rounding errors with one y tick "-6.715668866680235105"), and its y ticks are rounded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.core.tps import ScoreSettings, compute_tps
from tpsviz.diagnostics.populations import censoring_summary, qz_band
from tpsviz.report import figures as F
from tpsviz.report.figures.censoring import BAND_TICKS, NO_CENSORED_NOTE


def _log(tmp_path, censored: bool) -> tpsviz.TrajectoryData:
    rng = np.random.default_rng(46)
    rows = []
    for i in range(60):
        y = float(rng.random() < 0.4)
        cut = censored and i % 5 == 0
        for t in range(1, 2 + i % 7):
            rows.append({"trajectory_id": f"r{i}", "step": t, "outcome": None if cut else y,
                         "conf_a": float(rng.uniform(0.05, 0.95)), "conf_b": float(rng.uniform(0.3, 0.99))})
    path = tmp_path / f"log_{censored}.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return tpsviz.load(path)


def _ends(data):
    s = {m: compute_tps(data, ScoreSettings(n_boot=0, censoring=m)).summary["tps_mean"] for m in ("simple", "upper")}
    return s["simple"], s["upper"]


def test_the_band_is_the_straight_line_between_its_ends_and_flat_without_censored_runs():
    lo, hi = pd.Series({"a": -3.0, "b": -1.0}), pd.Series({"a": -1.0, "b": -1.5})
    band = qz_band(lo, hi, grid=5, n_censored=4)
    for name in ("a", "b"):
        b = band[band["predictor"] == name]
        np.testing.assert_allclose(b["tps_mean"], np.interp(b["q_z"], [0, 1], [lo[name], hi[name]]), rtol=1e-15)
    # no censored run: the upper end differs only by rounding, and the band is the simple mean exactly
    flat = qz_band(lo, lo + 1e-15, grid=5, n_censored=0)
    assert (flat.groupby("predictor")["tps_mean"].nunique() == 1).all()
    assert list(flat.groupby("predictor")["tps_mean"].first()) == [-3.0, -1.0]


def test_a_log_without_censored_runs_draws_flat_lines_with_a_note_and_rounded_ticks(tmp_path):
    data = _log(tmp_path, censored=False)
    n = censoring_summary(data)["n_censored"]
    assert n == 0
    lo, hi = _ends(data)
    np.testing.assert_allclose(lo, hi, rtol=1e-12)    # the same scores, up to the order of the sums
    fig = F.qz_band_figure(qz_band(lo, hi, n_censored=n), {"a": "#E69F00", "b": "#56B4E9"}, 0, 0, n_censored=n)
    assert len(fig.data) == 2
    for trace in fig.data:
        assert len(set(trace.y)) == 1                # flat, not a zigzag
    assert fig.layout.yaxis.tickformat == BAND_TICKS
    assert [a.text for a in fig.layout.annotations] == [NO_CENSORED_NOTE]
    # one flat line (the case): a range of its own, wide enough for distinct rounded ticks
    one = F.qz_band_figure(qz_band(lo[["a"]], hi[["a"]], n_censored=n), {"a": "#E69F00"}, 0, 0, n_censored=n)
    lo_y, hi_y = one.layout.yaxis.range
    assert hi_y - lo_y >= 0.02 and lo_y < lo["a"] < hi_y and one.layout.yaxis.tickformat == BAND_TICKS


def test_a_log_with_censored_runs_draws_its_band_without_the_note(tmp_path):
    data = _log(tmp_path, censored=True)
    n = censoring_summary(data)["n_censored"]
    assert n == 12
    lo, hi = _ends(data)
    fig = F.qz_band_figure(qz_band(lo, hi, n_censored=n), {"a": "#E69F00", "b": "#56B4E9"}, 0, 0, n_censored=n)
    assert fig.layout.yaxis.tickformat == BAND_TICKS and not fig.layout.annotations
    assert fig.layout.yaxis.range is None            # plotly's own range for a band that moves
    for trace, name in zip(fig.data, ("a", "b")):
        assert trace.y[0] == pytest.approx(lo[name]) and trace.y[-1] == pytest.approx(hi[name])
        assert trace.y[0] != pytest.approx(trace.y[-1])
