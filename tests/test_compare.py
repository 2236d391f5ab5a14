"""compare: paired Δ, SE, Δ/SE against brute force (numpy, scikit-learn, explicit resampling)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from tpsviz import ScoreSettings, compute_tps, load
from tpsviz.diagnostics.compare import censoring_shift, compare, z_matrix
from tpsviz.core.inference import bootstrap_weights
from tpsviz.synthetic.agent import simulate

DEMO = Path(__file__).resolve().parents[1] / "demo_data"


@pytest.fixture(scope="module")
def small():
    return simulate("webshop-like", n_trajectories=60, seed=4).to_data()


def test_tps_delta_se_from_per_run_differences(small):
    s = ScoreSettings(censoring="simple")
    c = compare(small, s, baseline="truthful", n_boot=0)
    m = compute_tps(small, s).tps_matrix()
    for name in c.index:
        d = (m[name] - m["truthful"]).to_numpy()
        assert c.loc[name, "tps_delta"] == pytest.approx(d.mean(), rel=1e-12)
        se = d.std(ddof=1) / np.sqrt(d.size)
        assert c.loc[name, "tps_se"] == pytest.approx(se, rel=1e-10)
        assert c.loc[name, "tps_z"] == pytest.approx(d.mean() / se, rel=1e-10)
    assert "truthful" not in c.index and c.attrs["baseline"] == "truthful"


def test_auroc_paired_bootstrap_by_explicit_resampling(small):
    n_boot, seed = 40, 9
    c = compare(small, ScoreSettings(), baseline="verbal", predictors=["noisy"], n_boot=n_boot,
                seed=seed)
    st = small.steps
    y = small.trajectories.outcome.to_numpy()[st.traj.to_numpy()]
    ok = ~np.isnan(y)
    a, b, g = st.conf_noisy.to_numpy()[ok], st.conf_verbal.to_numpy()[ok], st.traj.to_numpy()[ok]
    yy = y[ok]
    assert c.loc["noisy", "auroc_delta"] == pytest.approx(
        roc_auc_score(yy, a) - roc_auc_score(yy, b), abs=1e-12)
    codes = np.unique(g)  # the complete runs, re-coded 0..n-1 in code order
    reps = []
    for w in np.vstack(list(bootstrap_weights(codes.size, n_boot, seed))):
        count = dict(zip(codes, w.astype(int)))
        rw = np.array([count[x] for x in g])
        idx = np.repeat(np.arange(g.size), rw)
        reps.append(roc_auc_score(yy[idx], a[idx]) - roc_auc_score(yy[idx], b[idx]))
    assert c.loc["noisy", "auroc_se"] == pytest.approx(np.std(reps, ddof=1), rel=1e-9)
    assert c.loc["noisy", "auroc_z"] == pytest.approx(
        c.loc["noisy", "auroc_delta"] / np.std(reps, ddof=1), rel=1e-9)
    assert np.isfinite(c.loc["noisy", "tece_z"])


def test_unknown_baseline(small):
    with pytest.raises(ValueError, match="unknown predictor"):
        compare(small, baseline="oracle")


def test_z_matrix_antisymmetric_and_consistent(small):
    s = ScoreSettings()
    z = z_matrix(small, s)
    assert np.allclose(z.to_numpy(), -z.to_numpy().T, equal_nan=True)
    c = compare(small, s, baseline="pessimistic", n_boot=0)
    for name in c.index:
        assert z.loc[name, "pessimistic"] == pytest.approx(c.loc[name, "tps_z"], rel=1e-12)
    za = z_matrix(small, s, metric="auroc", n_boot=100, seed=2)
    ca = compare(small, s, baseline="pessimistic", n_boot=100, seed=2)
    # no missing forecasts: pairwise and all-at-once bootstraps use the same rows/replicates
    for name in ca.index:
        if np.isfinite(ca.loc[name, "auroc_z"]):
            assert za.loc[name, "pessimistic"] == pytest.approx(ca.loc[name, "auroc_z"], rel=1e-9)


def test_censoring_shift_brute_force(small):
    s = ScoreSettings()
    out = censoring_shift(small, s, ["verbal"], n_boot=30, seed=3)
    full = compute_tps(small, ScoreSettings(censoring="simple", n_boot=0)).per_trajectory
    cc = compute_tps(small, ScoreSettings(censoring="complete", n_boot=0)).per_trajectory
    f = full[full.predictor == "verbal"].set_index("traj")
    c = cc[cc.predictor == "verbal"].set_index("traj")
    assert out.loc["verbal", "shift"] == pytest.approx(f.tps.mean() - c.tps.mean(), rel=1e-12)
    assert out.loc["verbal", "shift_step"] == pytest.approx(
        f.tps.sum() / f.weight_sum.sum() - c.tps.sum() / c.weight_sum.sum(), rel=1e-12)
    reps = []
    n = small.n_trajectories
    for w in np.vstack(list(bootstrap_weights(n, 30, 3))):
        idx = np.repeat(np.arange(n), w.astype(int))
        fi = f.tps.reindex(idx).to_numpy()
        ci = c.tps.reindex(idx).dropna().to_numpy()
        reps.append(fi.mean() - ci.mean())
    assert out.loc["verbal", "shift_se"] == pytest.approx(np.std(reps, ddof=1), rel=1e-9)
    assert out.loc["verbal", "n_to"] == n and out.loc["verbal", "n_from"] == n - small.n_censored


def test_reusing_a_tps_result_gives_the_same_numbers():
    from tpsviz.diagnostics.compare import compare, z_matrix
    from tpsviz.diagnostics.leaderboard import skill_table

    data = load(Path(__file__).resolve().parents[1] / "demo_data" / "tau2-like.csv")
    st = ScoreSettings(alpha=1.0, beta=1.0, n_boot=50)
    res = compute_tps(data, st)
    a = compare(data, st, baseline="verbal", metrics=(), n_boot=0)
    b = compare(data, st, baseline="verbal", metrics=(), n_boot=0, result=res)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(z_matrix(data, st), z_matrix(data, st, result=res))
    pd.testing.assert_frame_equal(skill_table(data, st, n_boot=20),
                                  skill_table(data, st, n_boot=20, result=res))
    with pytest.raises(ValueError, match="other settings"):
        compare(data, ScoreSettings(n_boot=0), baseline="verbal", metrics=(), result=res)


def test_complete_case_comparisons_cluster_the_runs_in_scope_by_their_own_tasks():
    """Complete-case mode scores only the complete runs: the paired Δ's clusters are theirs (a regression: the
    clusters of every run were indexed by the complete runs' mask). The SE against a loop over tasks."""
    from tpsviz import load
    from tpsviz.diagnostics.compare import compare, z_matrix

    data = load("demo_data/webshop-like.csv")
    st = ScoreSettings(censoring="complete", n_boot=0)
    table = compare(data, st, baseline="verbal", predictors=["truthful"], metrics=())
    t = data.trajectories
    done = t.loc[~t["censored"], ["trajectory_id", "task"]]
    mat = compute_tps(data, st, ["truthful", "verbal"]).tps_matrix().loc[done["trajectory_id"]]
    d = (mat["truthful"] - mat["verbal"]).to_numpy()
    e = pd.Series(d - d.mean()).groupby(done["task"].to_numpy()).sum().to_numpy()
    k = e.size
    se = np.sqrt(k / (k - 1) * np.sum(e ** 2)) / d.size
    assert table.loc["truthful", "n_runs"] == len(done)
    assert table.loc["truthful", "tps_se"] == pytest.approx(se, rel=1e-10)
    z = z_matrix(data, st, ["truthful", "verbal"])
    assert z.loc["truthful", "verbal"] == pytest.approx(d.mean() / se, rel=1e-10)
