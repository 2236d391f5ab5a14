"""demonstrators: each why-not-AUROC demonstration checked independently (sklearn, exact truth)."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from tpsviz import ScoreSettings, load
from tpsviz.diagnostics.demonstrators import bin_mean_forecast, monotone_distortion, phi_mean_manipulation
from tpsviz.diagnostics.metrics import tece
from tpsviz.core.scores import expected_score
from tpsviz.synthetic.agent import simulate

DEMO = Path(__file__).resolve().parents[1] / "demo_data"


@pytest.fixture(scope="module")
def tau():
    return load(DEMO / "tau2-like.csv")


def _complete(data, name):
    y = data.trajectories.outcome.to_numpy()[data.steps.traj.to_numpy()]
    ok = ~np.isnan(y)
    return data.forecasts(name)[ok], y[ok]


def test_monotone_distortion(tau):
    demo = monotone_distortion(tau, strength=3.0)
    orig, new = demo.table.index
    p, y = _complete(demo.data, orig)
    q, _ = _complete(demo.data, new)
    assert roc_auc_score(y, p) == pytest.approx(roc_auc_score(y, q), abs=1e-12)
    assert demo.table.loc[orig, "auroc"] == pytest.approx(demo.table.loc[new, "auroc"], abs=1e-12)
    assert demo.comparison["z"] < -3  # over-confident distortion costs TPS clearly
    assert "AUROC stays" in demo.explanation and demo.explanation.count(".") >= 1
    np.testing.assert_allclose(demo.forecasts, 1 / (1 + (1 / p_all(tau) - 1) ** 3.0), rtol=1e-9)
    with pytest.raises(ValueError):
        monotone_distortion(tau, strength=1)


def p_all(data):
    return np.clip(data.forecasts("truthful"), 1e-12, 1 - 1e-12)


@pytest.mark.parametrize("file", ["tau2-like.csv", "webshop-like.csv"])
def test_bin_mean_forecast(file):
    data = load(DEMO / file)
    demo = bin_mean_forecast(data, n_bins=10)
    name = "verbal (bin means)"
    p, y = _complete(demo.data, name)
    assert tece(p, y, 10) < 1e-12                      # ECE "perfect"
    assert demo.table.loc["truthful", "tece_pooled"] > 0.01
    assert demo.table.loc[name, "tps_mean"] < demo.table.loc["truthful", "tps_mean"]
    assert demo.comparison["z"] < -2
    # brute force: each forecast is the outcome rate of its bin among complete rows
    v, _ = _complete(data, "verbal")
    b = np.minimum((v * 10).astype(int), 9)
    for k in np.unique(b):
        assert np.allclose(p[b == k], y[b == k].mean())


def test_phi_mean_manipulation_on_synthetic_truth():
    sim = simulate("tau2-like", n_trajectories=300, seed=9)
    data = sim.to_data()
    np.testing.assert_allclose(data.forecasts("truthful"), sim.rows.q.to_numpy())
    demo = phi_mean_manipulation(data, ScoreSettings(alpha=0, beta=0))
    new = demo.forecasts
    q = sim.rows.q.to_numpy()
    st = data.steps.assign(q=q, new=new,
                           y=data.trajectories.outcome.to_numpy()[data.steps.traj.to_numpy()])
    done = st[st.y.notna()]
    n_better = 0
    for _, g in done.groupby("traj"):
        qT = g.q.iloc[-1]
        # only the last report differs; it is the past-only compensation
        np.testing.assert_array_equal(g.new.iloc[:-1], g.q.iloc[:-1])
        T = len(g)
        assert g.new.iloc[-1] == pytest.approx(np.clip(T * qT - g.q.iloc[:-1].sum(), 0, 1))
        # expected half-Brier of Φ_mean given H_T: closer to q_T is never worse
        e_truth = expected_score(g.q.mean(), qT, 1, 1)
        e_game = expected_score(g.new.mean(), qT, 1, 1)
        assert e_game >= e_truth - 1e-15
        n_better += e_game > e_truth + 1e-12
        # expected TPS (log) is lower: only the last step changes
        fT = np.clip(g.new.iloc[-1], 1e-6, 1 - 1e-6)
        assert expected_score(fT, qT, 0, 0) <= expected_score(qT, qT, 0, 0) + 1e-15
    assert n_better > 0.9 * done.traj.nunique()
    t = demo.table
    truth, game = t.index
    assert t.loc[game, "scal_brier_mean_expected"] > t.loc[truth, "scal_brier_mean_expected"]
    assert t.loc[game, "tps_expected"] < t.loc[truth, "tps_expected"]
    assert t.loc[game, "tps_mean"] < t.loc[truth, "tps_mean"]  # realised too
    assert "Brier" in demo.explanation
