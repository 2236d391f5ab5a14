"""Metrics against scikit-learn and brute-force loops; bootstrap replicates against a
reconstruction from the same trajectory weights."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

import tpsviz.diagnostics.metric_bootstrap as MB
from tpsviz.core.inference import bootstrap_weights
from tpsviz.diagnostics.metric_bootstrap import bootstrap_metric, metric_replicates, paired_metric_difference
from tpsviz.diagnostics.metrics import auprc, auroc, bin_edges, bin_index, scalarised_score, tece
from tpsviz.core.scores import beta_score


def _data(kind, n=600, n_traj=60, seed=0):
    rng = np.random.default_rng(seed)
    g = np.sort(rng.integers(0, n_traj, n))
    g = np.unique(g, return_inverse=True)[1]
    yt = rng.integers(0, 2, g.max() + 1)
    y = yt[g].astype(float)
    if kind == "continuous":
        p = np.clip(rng.beta(2, 2, n) * 0.6 + 0.3 * y, 0, 1)
    elif kind == "ties":
        p = rng.integers(0, 5, n) / 4.0
        p[y == 1] = np.minimum(1, p[y == 1] + 0.25)
    else:  # rounded: many distinct values, many ties
        p = np.round(np.clip(rng.random(n) * 0.7 + 0.3 * y, 0, 1), 2)
    return p, y, g


KINDS = ["continuous", "ties", "rounded"]


@pytest.mark.parametrize("kind", KINDS)
def test_auroc_auprc_match_sklearn(kind):
    p, y, g = _data(kind)
    assert auroc(p, y) == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert auprc(p, y) == pytest.approx(average_precision_score(y, p), abs=1e-12)
    rng = np.random.default_rng(1)
    for w in (rng.integers(0, 4, p.size).astype(float), rng.random(p.size)):
        assert auroc(p, y, w) == pytest.approx(roc_auc_score(y, p, sample_weight=w), abs=1e-12)
        assert auprc(p, y, w) == pytest.approx(
            average_precision_score(y, p, sample_weight=w), abs=1e-12)


def test_integer_weights_equal_repeated_rows():
    p, y, _ = _data("ties")
    w = np.random.default_rng(2).integers(0, 4, p.size)
    rep = np.repeat(np.arange(p.size), w)
    assert auroc(p, y, w) == pytest.approx(auroc(p[rep], y[rep]), abs=1e-12)
    assert auprc(p, y, w) == pytest.approx(auprc(p[rep], y[rep]), abs=1e-12)
    assert tece(p, y, 7, "uniform", w) == pytest.approx(tece(p[rep], y[rep], 7), abs=1e-12)


def test_rank_metrics_invariant_to_increasing_transform():
    p, y, _ = _data("continuous")
    assert auroc(p**3, y) == pytest.approx(auroc(p, y), abs=1e-12)
    assert auprc(np.sqrt(p), y) == pytest.approx(auprc(p, y), abs=1e-12)


def _tece_loop(p, y, n_bins, strategy):
    if strategy == "uniform":
        edges = [k / n_bins for k in range(n_bins + 1)]
    else:
        edges = list(np.quantile(p, np.linspace(0, 1, n_bins + 1)))
    total = 0.0
    for k in range(n_bins):
        lo, hi = edges[k], edges[k + 1]
        members = [i for i in range(len(p))
                   if (lo <= p[i] < hi) or (k == n_bins - 1 and p[i] == hi)]
        if members:
            mf = sum(p[i] for i in members) / len(members)
            my = sum(y[i] for i in members) / len(members)
            total += len(members) / len(p) * abs(mf - my)
    return total


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 0.6, 0.7, 0.99, 1.0])
                          | st.floats(0, 1), st.integers(0, 1)), min_size=1, max_size=40),
       st.integers(1, 12), st.sampled_from(["uniform", "quantile"]))
def test_tece_matches_brute_force(rows, n_bins, strategy):
    p = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows], dtype=float)
    assert tece(p, y, n_bins, strategy) == pytest.approx(
        _tece_loop(p, y, n_bins, strategy), abs=1e-12)


def test_round_forecasts_fall_in_their_own_bin():
    p = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    np.testing.assert_array_equal(bin_index(p, bin_edges(p, 10)),
                                  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9])


def test_tece_hand_value():
    # bins [0, .5) and [.5, 1]: |(.1+.3)/2 - .5| * 2/4 + |(.6+.8)/2 - .5| * 2/4
    assert tece([.1, .3, .6, .8], [0, 1, 1, 0], 2) == pytest.approx(0.15 + 0.1)


@pytest.mark.parametrize("bad", [
    dict(p=[0.1, 0.2], y=[0]),
    dict(p=[0.1, 0.2], y=[0, 2]),
    dict(p=[0.1, np.nan], y=[0, 1]),
    dict(p=[0.1, 1.2], y=[0, 1]),
])
def test_bad_input_raises(bad):
    for fn in (auroc, auprc, tece):
        with pytest.raises(ValueError):
            fn(bad["p"], bad["y"])


def test_one_class_and_bin_arguments_raise():
    with pytest.raises(ValueError, match="one class"):
        auroc([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="no positive"):
        auprc([0.1, 0.2], [0, 0])
    with pytest.raises(ValueError, match="n_bins"):
        tece([0.1, 0.2], [0, 1], n_bins=0)
    with pytest.raises(ValueError, match="strategy"):
        tece([0.1, 0.2], [0, 1], strategy="kmeans")


@pytest.mark.parametrize("phi", ["last", "mean", "min"])
@pytest.mark.parametrize("ab", [(0.0, 0.0), (1.0, 1.0), (2.0, 0.5)])
def test_scalarised_score_matches_loop(phi, ab):
    rng = np.random.default_rng(3)
    codes = np.array([7, 3, 3, 9, 9, 9, 7, 12])  # unsorted, non-contiguous codes
    p = rng.random(codes.size)
    y_of = {3: 1.0, 7: 0.0, 9: 1.0, 12: 0.0}
    y = np.array([y_of[c] for c in codes])
    got = scalarised_score(p, y, codes, phi, *ab)
    want = []
    for c in sorted(y_of):
        f = [p[i] for i in range(codes.size) if codes[i] == c]
        v = {"last": f[-1], "mean": sum(f) / len(f), "min": min(f)}[phi]
        want.append(float(beta_score(v, y_of[c], *ab)))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_scalarised_score_rejects_inconsistent_outcome_and_phi():
    with pytest.raises(ValueError, match="constant"):
        scalarised_score([.1, .2], [0, 1], [0, 0])
    with pytest.raises(ValueError, match="phi"):
        scalarised_score([.1, .2], [0, 1], [0, 1], phi="max")


def _replicate_reference(metric, p, y, g, n_boot, seed):
    fn = {"auroc": lambda w: roc_auc_score(y, p, sample_weight=w),
          "auprc": lambda w: average_precision_score(y, p, sample_weight=w),
          "tece": lambda w: tece(p, y, 10, "uniform", w)}[metric]
    n = g.max() + 1
    return np.array([fn(w[g]) for wc in bootstrap_weights(n, n_boot, seed) for w in wc])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("metric", ["auroc", "auprc", "tece"])
@pytest.mark.parametrize("dense", [True, False])
def test_replicates_equal_weighted_metric_of_resampled_trajectories(kind, metric, dense,
                                                                    monkeypatch):
    monkeypatch.setattr(MB, "_DENSE_CELLS", 10**9 if dense else 0)
    monkeypatch.setattr(MB, "_DENSE_PER_ROW", 10**9 if dense else 0)
    p, y, g = _data(kind, seed=4)
    got = metric_replicates(metric, p, y, g, n_boot=25, seed=11)
    want = _replicate_reference(metric, p, y, g, 25, 11)
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_group_codes_are_recoded():
    p, y, g = _data("continuous", seed=5)
    a = metric_replicates("auroc", p, y, g, n_boot=10, seed=1)
    b = metric_replicates("auroc", p, y, g * 10 + 3, n_boot=10, seed=1)
    np.testing.assert_array_equal(a, b)


def test_bootstrap_metric_estimate():
    p, y, g = _data("rounded", n=2000, n_traj=200, seed=6)
    est = bootstrap_metric("auroc", p, y, g, n_boot=300, seed=2)
    assert est.mean == pytest.approx(auroc(p, y))
    assert est.n == 200
    assert 0 < est.se < 0.1
    assert est.ci_low < est.mean < est.ci_high
    reps = metric_replicates("auroc", p, y, g, n_boot=300, seed=2)
    assert est.se == pytest.approx(np.std(reps, ddof=1))


def test_paired_difference_is_paired():
    p, y, g = _data("continuous", n=2000, n_traj=200, seed=7)
    rng = np.random.default_rng(0)
    q = np.clip(p + rng.normal(0, 0.05, p.size), 0, 1)
    res = paired_metric_difference("auroc", p, q, y, g, n_boot=200, seed=3)
    assert res.delta == pytest.approx(auroc(p, y) - auroc(q, y))
    ra = metric_replicates("auroc", p, y, g, n_boot=200, seed=3)
    rb = metric_replicates("auroc", q, y, g, n_boot=200, seed=3)
    assert res.se == pytest.approx(np.std(ra - rb, ddof=1))
    assert res.z == pytest.approx(res.delta / res.se)
    # pairing: the SE of the difference is far below the unpaired one
    assert res.se < 0.5 * np.hypot(np.std(ra, ddof=1), np.std(rb, ddof=1))
    same = paired_metric_difference("tece", p, p, y, g, n_boot=50)
    assert same.delta == 0 and same.se == 0 and np.isnan(same.z)


def test_unknown_metric_raises():
    p, y, g = _data("continuous")
    with pytest.raises(ValueError, match="metric"):
        bootstrap_metric("brier", p, y, g, n_boot=5)


def _clustered_log(n_traj, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 12, n_traj)
    g = np.repeat(np.arange(n_traj), lengths)
    y = (rng.random(n_traj) < 0.4).astype(float)[g]
    p = np.clip(rng.beta(2, 3, g.size) + 0.3 * y + 0.1 * rng.standard_normal(n_traj)[g], 0, 1)
    return np.round(p, 3), y, g


def test_linear_auroc_replicates_track_the_exact_ones():
    """Same resampling counts: the first-order replicates follow the exact ones closely."""
    p, y, g = _clustered_log(3000, 4)
    exact = metric_replicates("auroc", p, y, g, n_boot=300, seed=1, method="exact")
    lin = metric_replicates("auroc", p, y, g, n_boot=300, seed=1, method="linear")
    assert np.corrcoef(exact, lin)[0, 1] > 0.99
    assert lin.std() == pytest.approx(exact.std(), rel=0.05)
    assert np.median(np.abs(lin - exact)) < 0.05 * exact.std()
    assert np.abs(lin - exact).max() < 0.5 * exact.std()
    assert lin.mean() == pytest.approx(auroc(p, y), abs=0.2 * exact.std())


def test_linear_auroc_is_used_automatically_for_large_logs(monkeypatch):
    p, y, g = _clustered_log(400, 5)
    exact = MB.metric_replicates("auroc", p, y, g, n_boot=50, seed=2, method="exact")
    lin = MB.metric_replicates("auroc", p, y, g, n_boot=50, seed=2, method="linear")
    # small: exact replicates
    np.testing.assert_array_equal(MB.metric_replicates("auroc", p, y, g, 50, 2), exact)
    monkeypatch.setattr(MB, "LINEAR_MIN_CELLS", 100)
    # many rows × replicates but fewer runs than the linear replicates were checked at
    np.testing.assert_array_equal(MB.metric_replicates("auroc", p, y, g, 50, 2), exact)
    monkeypatch.setattr(MB, "LINEAR_MIN_TRAJECTORIES", 400)
    np.testing.assert_array_equal(MB.metric_replicates("auroc", p, y, g, 50, 2), lin)
    with pytest.raises(ValueError, match="method"):
        MB.metric_replicates("auroc", p, y, g, n_boot=5, method="fast")


def test_linear_auprc_replicates_track_the_exact_ones():
    from tpsviz.diagnostics.metric_bootstrap import _AuprcLinearStat
    p, y, g = _clustered_log(3000, 6)
    stat = _AuprcLinearStat(p, y, g, 3000)
    assert stat.a == pytest.approx(auprc(p, y), rel=1e-12)
    assert abs(stat.psi.sum()) < 1e-12  # AP is scale-free in the weights
    exact = metric_replicates("auprc", p, y, g, n_boot=300, seed=1, method="exact")
    lin = metric_replicates("auprc", p, y, g, n_boot=300, seed=1, method="linear")
    assert np.corrcoef(exact, lin)[0, 1] > 0.99
    assert lin.std() == pytest.approx(exact.std(), rel=0.05)
    assert np.median(np.abs(lin - exact)) < 0.05 * exact.std()


@pytest.mark.parametrize("kind", KINDS)
def test_unweighted_counts_are_the_weighted_ones_with_unit_weights(kind):
    """Unweighted, the negatives are counted as rows less positives (no weight arrays): the
    same numbers to the last bit as weights of 1."""
    p, y, _ = _data(kind, n=5000)
    ones = np.ones_like(p)
    assert auroc(p, y) == auroc(p, y, ones)
    assert auprc(p, y) == auprc(p, y, ones)
