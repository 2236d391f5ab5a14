"""diagnostics: metric table against scikit-learn and brute-force loops; reference and skill."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from tpsviz import ScoreSettings, from_frame, load
from tpsviz.diagnostics.leaderboard import (
    METRIC_INFO, base_rate_reference, leaderboard, metric_table, skill_table)
from tpsviz.diagnostics.metric_bootstrap import bootstrap_metric
from tpsviz.synthetic.agent import simulate

from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "demo_data"


@pytest.fixture(scope="module")
def web():
    return load(DEMO / "webshop-like.csv")


@pytest.fixture(scope="module")
def small():
    # a small log with censored runs and a missing forecast
    sim = simulate("webshop-like", n_trajectories=80, seed=11)
    df = sim.steps.copy()
    df.loc[5, "conf_noisy"] = np.nan
    return from_frame(df)


def _long(data):
    st = data.steps.copy()
    tr = data.trajectories
    st["y"] = tr["outcome"].to_numpy()[st["traj"].to_numpy()]
    st["cens"] = tr["censored"].to_numpy()[st["traj"].to_numpy()]
    return st


def _brute_tece(p, y, edges):
    total = 0.0
    k = len(edges) - 1
    for b in range(k):
        lo, hi = edges[b], edges[b + 1]
        sel = [(lo <= pi < hi) or (b == k - 1 and pi == hi) for pi in p]
        sel = np.array(sel)
        if sel.any():
            total += sel.sum() / len(p) * abs(p[sel].mean() - y[sel].mean())
    return total


def test_metric_points_against_sklearn_and_loops(small):
    mt = metric_table(small, ScoreSettings(), n_bins=10, n_boot=0)
    st = _long(small)
    for name in small.predictors:
        d = st[st.y.notna() & st[f"conf_{name}"].notna()]
        p, y = d[f"conf_{name}"].to_numpy(), d["y"].to_numpy()
        last = d.groupby("traj").tail(1)
        pf, yf = last[f"conf_{name}"].to_numpy(), last["y"].to_numpy()
        row = mt.loc[name]
        if len(np.unique(p)) > 1:
            assert row.auroc == pytest.approx(roc_auc_score(y, p), abs=1e-12)
            assert row.auroc_final == pytest.approx(roc_auc_score(yf, pf), abs=1e-12)
        assert row.auprc == pytest.approx(average_precision_score(y, p), abs=1e-12)
        edges = np.arange(11) / 10
        assert row.tece_pooled == pytest.approx(_brute_tece(p, y, edges), abs=1e-12)
        assert row.tece_final == pytest.approx(_brute_tece(pf, yf, edges), abs=1e-12)
        assert row.tece_pooled_mass == pytest.approx(
            _brute_tece(p, y, np.quantile(p, np.linspace(0, 1, 11))), abs=1e-12)
        assert row.n_trajectories == d.traj.nunique() and row.n_steps == len(d)
        # scalarised scores by a groupby
        pc = np.clip(d[f"conf_{name}"], 1e-6, 1 - 1e-6)
        grp = pd.DataFrame({"traj": d.traj, "p": pc, "y": d.y}).groupby("traj")
        yy = grp.y.first()
        for phi, f in (("last", grp.p.last()), ("mean", grp.p.mean()), ("min", grp.p.min())):
            log = np.where(yy == 1, np.log(f), np.log(1 - f)).mean()
            brier = (-0.5 * (f - yy) ** 2).mean()
            assert row[f"scal_log_{phi}"] == pytest.approx(log, abs=1e-10)
            assert row[f"scal_brier_{phi}"] == pytest.approx(brier, abs=1e-10)
    assert set(METRIC_INFO) <= set(mt.columns)
    assert (mt["labels"] == "observed outcomes (complete runs only)").all()


def test_pseudo_labels_count_censored_as_failures(small):
    mt = metric_table(small, ScoreSettings(), n_boot=0, pseudo_labels=True)
    st = _long(small)
    y = np.where(st.cens, 0.0, st.y)
    p = st["conf_truthful"].to_numpy()
    assert mt.loc["truthful", "auroc"] == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert mt.loc["truthful", "n_trajectories"] == small.n_trajectories
    assert mt.loc["truthful", "n_pseudo"] == small.n_censored
    assert "pseudo-labels" in mt.loc["truthful", "labels"]


def test_bootstrap_cis_match_metrics_module(small):
    mt = metric_table(small, ScoreSettings(seed=5), n_boot=300)
    st = _long(small)
    d = st[st.y.notna()]
    est = bootstrap_metric("auroc", d.conf_verbal, d.y, d.traj, n_boot=300, seed=5)
    r = mt.loc["verbal"]
    assert (r.auroc_se, r.auroc_ci_low, r.auroc_ci_high) == pytest.approx(
        (est.se, est.ci_low, est.ci_high), rel=1e-12)
    for m in ("auroc", "auprc", "tece_pooled", "tece_final", "scal_log_mean", "scal_brier_last"):
        assert r[f"{m}_ci_low"] <= r[m] + 1e-12 and r[m] <= r[f"{m}_ci_high"] + 1e-12, m
        assert r[f"{m}_se"] > 0


@pytest.mark.parametrize("mode", ["complete", "simple", "exact", "upper"])
def test_base_rate_reference_brute_force(small, mode):
    s = ScoreSettings(censoring=mode, n_boot=0)
    ref = base_rate_reference(small, s)
    tr = small.trajectories
    cens = tr.censored.to_numpy()
    y = tr.outcome.to_numpy()
    qz = {"simple": 0.0, "upper": 1.0}.get(mode)
    if mode == "complete":
        rate = y[~cens].mean()
    elif mode == "exact":
        rate = np.where(cens, np.nan_to_num(tr.q_z.to_numpy()), y).mean()
    else:
        rate = np.where(cens, qz, y).mean()
    assert ref.rate == pytest.approx(rate, abs=1e-12)
    # TPS of the constant, by a loop over runs (log score, uniform weights)
    vals = []
    for i, row in tr.iterrows():
        T = int(row.length)
        if row.censored:
            if mode == "complete":
                continue
            q = {"simple": 0.0, "upper": 1.0}.get(mode, row.q_z if not np.isnan(row.q_z) else 0.0)
            vals.append(T * (q * np.log(rate) + (1 - q) * np.log(1 - rate)))
        else:
            vals.append(T * (np.log(rate) if row.outcome == 1 else np.log(1 - rate)))
    assert ref.summary.tps_mean == pytest.approx(np.mean(vals), rel=1e-10)


def test_skill_and_leaderboard(web):
    s = ScoreSettings(censoring="simple", n_boot=200)
    sk = skill_table(web, s)
    ref = base_rate_reference(web, s)
    from tpsviz import compute_tps
    summ = compute_tps(web, s).summary
    for name in web.predictors:
        assert sk.loc[name, "tps_ref"] == pytest.approx(ref.summary.tps_mean, rel=1e-12)
        assert sk.loc[name, "skill"] == pytest.approx(
            1 - summ.loc[name, "tps_mean"] / ref.summary.tps_mean, rel=1e-12)
        assert sk.loc[name, "skill_ci_low"] <= sk.loc[name, "skill"] <= sk.loc[name, "skill_ci_high"]
    assert sk.loc["truthful", "skill"] > 0 > sk.loc["verbal", "skill"]
    lb = leaderboard(web, s, n_boot=50)
    assert list(lb.tps_mean) == sorted(lb.tps_mean, reverse=True)
    for col in ("tps_mean", "tps_ref", "skill", "auroc", "tece_final_mass", "metric_labels"):
        assert col in lb.columns


def test_unknown_predictor(web):
    with pytest.raises(ValueError, match="unknown predictor"):
        metric_table(web, predictors=["nope"], n_boot=0)
