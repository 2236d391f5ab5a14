"""core.trajectory_sums, the one function that sums a log's step rows per run in memory, against a
plain loop over runs and steps (scores by numerical integration); and TPS_i = ℓ·A1 + (1 − ℓ)·A0."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

from tpsviz import Schedule, from_frame
from tpsviz.core.trajectory_sums import RunRows, trajectory_sums


def quad_score(p, y, a, b):
    """The Schervish integral by quadrature (bounded cases only)."""
    if y == 1:
        return -integrate.quad(lambda c: c ** (a - 1) * (1 - c) ** b, p, 1, epsrel=1e-12)[0]
    return -integrate.quad(lambda c: c ** a * (1 - c) ** (b - 1), 0, p, epsrel=1e-12)[0]


def _log(seed=5):
    """Censored runs, missing forecasts, forecasts at 0 and 1 (clipped), weights with zeros."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(30):
        cens = i % 3 == 0
        y = None if cens else int(rng.random() < 0.5)
        for k in range(int(rng.integers(1, 7))):
            p = rng.choice([np.nan, 0.0, 1.0, rng.random(), rng.random()])
            rows.append({"trajectory_id": f"r{i:02d}", "step": k + 1, "outcome": y, "censored": cens,
                         "conf_a": p, "weight": float(rng.integers(0, 3))})
    return pd.DataFrame(rows)


def _loop(df, need1, need0, a, b, eps, ids):
    """Per run (in ``ids`` order): A1, A0 (NaN where not needed or no forecast), W, present, clipped, last."""
    out = {k: [] for k in ("a1", "a0", "wsum", "n_present", "n_clipped", "last")}
    for i, tid in enumerate(ids):
        g = df[df.trajectory_id == tid].sort_values("step")
        if not (need1[i] or need0[i]):
            for k, v in zip(out, (np.nan, np.nan, 0.0, 0, 0, np.nan)):
                out[k].append(v)
            continue
        s1 = s0 = w_sum = 0.0
        n = n_clip = 0
        last = np.nan
        for _, r in g.iterrows():
            p = r["conf_a"]
            if math.isnan(p):
                continue
            n += 1
            n_clip += p < eps or p > 1 - eps
            last = p
            pc = min(max(p, eps), 1 - eps)
            w = r["weight"]
            w_sum += w
            s1 += w * quad_score(pc, 1, a, b) if need1[i] else 0.0
            s0 += w * quad_score(pc, 0, a, b) if need0[i] else 0.0
        out["a1"].append(s1 if need1[i] and n else np.nan)
        out["a0"].append(s0 if need0[i] and n else np.nan)
        for k, v in zip(("wsum", "n_present", "n_clipped", "last"), (w_sum, n, n_clip, last)):
            out[k].append(v)
    return out


@pytest.mark.parametrize("ab", [(1.0, 1.0), (2.0, 0.5)])
@pytest.mark.parametrize("need", ["outcome", "label q", "complete-case"])
def test_sums_against_a_loop(ab, need):
    a, b = ab
    df = _log()
    data = from_frame(df)
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    y = t["outcome"].to_numpy(dtype=float)
    if need == "outcome":  # the engines' sums: A1 where the run can end in success, A0 in failure
        need1, need0 = cens | (y == 1), cens | (y == 0)
    elif need == "label q":  # a label per run: q = 0, 1 or in between on censored runs
        label = np.where(cens, np.resize([0.0, 0.4, 1.0], len(t)), y)
        need1, need0 = label > 0, label < 1
    else:
        need1, need0 = ~cens & (y == 1), ~cens & (y == 0)
    rows = RunRows.of(data, need1, need0, Schedule("column"))
    got = trajectory_sums(data.forecasts("a"), rows, a, b, 1e-6)
    want = _loop(df, need1, need0, a, b, 1e-6, t["trajectory_id"].to_numpy())
    for k, v in want.items():
        np.testing.assert_allclose(getattr(got, k), np.asarray(v, dtype=float), rtol=1e-9, atol=1e-12,
                                   err_msg=k)
    # every case is exercised: both branches, clipped and missing forecasts, zero weights
    assert not np.isnan(want["a1"]).all() and not np.isnan(want["a0"]).all()
    assert got.n_clipped.sum() > 0 and df["conf_a"].isna().any() and (df["weight"] == 0).any()


def test_row_scores_add_up_to_the_sums_and_mix_by_label():
    """The row scores the sums add up: Σ w·S(F, 1) over a run's rows is A1; where ℓ is a q_Z the row
    score is ℓ·S(F, 1) + (1 − ℓ)·S(F, 0), whose weighted sum is ℓ·A1 + (1 − ℓ)·A0."""
    df = _log(7)
    data = from_frame(df)
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    label = np.where(cens, 0.3, t["outcome"].to_numpy(dtype=float))
    rows = RunRows.of(data, label > 0, label < 1, Schedule("column"))
    got = trajectory_sums(data.forecasts("a"), rows, 1.0, 1.0, 1e-6, keep_rows=True)
    s = got.rows.expected(rows, label)
    codes, w = data.steps["traj"].to_numpy(), data.steps["weight"].to_numpy()
    p = np.clip(data.forecasts("a"), 1e-6, 1 - 1e-6)
    for i in range(len(t)):
        m = (codes == i) & ~np.isnan(p)
        if not m.any():
            continue
        ell = label[i]
        want = [ell * quad_score(x, 1, 1, 1) + (1 - ell) * quad_score(x, 0, 1, 1) for x in p[m]]
        np.testing.assert_allclose(s[m], want, rtol=1e-9, atol=1e-12)
        tps = (ell * got.a1[i] if ell > 0 else 0.0) + ((1 - ell) * got.a0[i] if ell < 1 else 0.0)
        assert np.sum(w[m] * s[m]) == pytest.approx(tps, rel=1e-9, abs=1e-12)


def _same(a, b):
    """Equal to the last bit (NaN where NaN)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert ((a == b) | (np.isnan(a) & np.isnan(b))).all()


@pytest.mark.parametrize("eps", [1e-6, 0.0])
def test_expected_row_scores_are_the_combination_by_label_on_each_row(eps):
    """RowScores.expected: ℓ·S(F, 1) + (1 − ℓ)·S(F, 0) on the rows of runs that need both branches, the
    same numbers as tps_from_sums on those rows; also where such a run's ℓ is 0 or 1 (the engines'
    sums need both branches of every censored run), where the branch that does not count may be −∞."""
    from tpsviz.core.trajectory_sums import RunLabels, tps_from_sums

    df = _log(11)
    data = from_frame(df)
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    y = t["outcome"].to_numpy(dtype=float)
    rows = RunRows.of(data, cens | (y == 1), cens | (y == 0), Schedule("column"))
    got = trajectory_sums(data.forecasts("a"), rows, 0.0, 0.0, eps, keep_rows=True)
    b = got.rows.both_rows
    assert b is not None and b.sum() > 0
    for q in ([0.25, 0.7], [0.0, 0.6, 1.0]):
        label = np.where(cens, np.resize(q, len(t)), y)
        want = got.rows.s.copy()
        with np.errstate(invalid="ignore"):
            want[b] = tps_from_sums(got.rows.s[b], got.rows.s0, RunLabels.of(label[rows.codes[b]]))
        _same(got.rows.expected(rows, label), want)


@pytest.mark.parametrize("need", ["label q", "complete-case"])
def test_row_scores_found_again_and_on_the_log(need):
    """RowScores.again gives the row scores trajectory_sums returned from S and the forecasts alone
    (the second branch scored again: the same numbers); on_log puts them on every row of the log."""
    from tpsviz.core.trajectory_sums import RowScores

    df = _log(13)
    data = from_frame(df)
    t = data.trajectories
    cens = t["censored"].to_numpy(dtype=bool)
    y = t["outcome"].to_numpy(dtype=float)
    label = np.where(cens, 0.4 if need == "label q" else np.nan, y)
    rows = RunRows.of(data, label > 0, label < 1, Schedule("column"))
    got = trajectory_sums(data.forecasts("a"), rows, 2.0, 0.5, 1e-6, keep_rows=True).rows
    again = RowScores.again(got.s, got.forecast, rows, 2.0, 0.5)
    for k in ("s0", "both_rows"):
        x, w = getattr(again, k), getattr(got, k)
        assert (x is None) == (w is None) == (need == "complete-case")
        if w is not None:
            _same(x, w)
    s, pc = again.on_log(rows, label)
    assert s.shape == pc.shape == (data.n_steps,)
    if rows.rows_in is None:
        _same(s, got.expected(rows, label))
    else:
        assert need == "complete-case" and np.isnan(s[~rows.rows_in]).all() and np.isnan(pc[~rows.rows_in]).all()
        _same(s[rows.rows_in], got.expected(rows, label))
        _same(pc[rows.rows_in], got.forecast)


def test_scored_runs_writes_where_it_is_told_and_nan_where_not_scored():
    from tpsviz.core.trajectory_sums import RunLabels, scored_runs, tps_from_sums

    a1, a0 = np.array([-1.0, -2.0, np.nan, -4.0, -5.0]), np.array([-0.5, np.nan, -3.0, -np.inf, -6.0])
    label = np.array([0.25, 1.0, 0.0, np.nan, 0.5])
    n_present = np.array([3, 2, 1, 4, 0])
    in_scope = np.array([True, True, True, False, True])
    labels = RunLabels.of(label)
    assert labels.mixed.tolist() == [True, False, False, False, True]  # (NaN: NaN from keep1/keep0 alone)
    out = np.full(5, 7.0)
    tps, n_scored = scored_runs(a1, a0, n_present, labels, in_scope, out)
    assert tps is out and n_scored.tolist() == [3, 2, 1, 0, 0]
    _same(tps, [0.25 * -1.0 + 0.75 * -0.5, -2.0, -3.0, np.nan, np.nan])
    _same(scored_runs(a1, a0, n_present, label, in_scope)[0], tps)
    _same(tps_from_sums(a1, a0, label)[:3], tps[:3])


def test_row_scores_of_a_result_are_formed_when_asked_for():
    """compute_tps keeps what forms the row scores (TPSResult.row_scores): the same numbers as the
    row scores of the sums, under exact and complete-case censoring, with missing forecasts."""
    from tpsviz import ScoreSettings, compute_tps
    from tpsviz.core.censoring import mode_labels

    df = _log(17)
    cens_ids = df.loc[df["censored"], "trajectory_id"].unique()
    df["q_z"] = np.where(df["censored"], df["trajectory_id"].map(dict(zip(cens_ids, np.resize([0.2, 0.9, 1.0], len(cens_ids))))), np.nan)
    data = from_frame(df)
    for mode in ("exact", "complete", "simple"):
        settings = ScoreSettings(alpha=0.5, beta=2.0, censoring=mode, n_boot=0, schedule=Schedule("column"))
        res = compute_tps(data, settings)
        label = mode_labels(data, mode)
        rows = RunRows.of(data, label > 0, label < 1, settings.schedule)
        sums = trajectory_sums(data.forecasts("a"), rows, 0.5, 2.0, settings.eps, keep_rows=True)
        s, pc = res.row_scores("a")
        want_s, want_pc = sums.rows.on_log(rows, label)
        _same(s, want_s)
        _same(pc, want_pc)
        ok = ~np.isnan(s)
        w = data.steps["weight"].to_numpy()
        per_run = np.bincount(data.steps["traj"].to_numpy()[ok], weights=w[ok] * s[ok], minlength=len(label))
        tps = res.per_trajectory.set_index("traj")["tps"]
        np.testing.assert_allclose(per_run[tps.index], tps.to_numpy(), rtol=1e-12, atol=1e-12)
