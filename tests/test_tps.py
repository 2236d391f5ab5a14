"""TPS against a brute-force loop; censoring modes; inference; the artificial-censoring identity."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

from tpsviz import ScoreSettings, Schedule, artificial_censoring_check, compute_tps, from_frame
from tpsviz.core.inference import mean_estimate, paired_difference
from tpsviz.synthetic.agent import simulate


def quad_score(p, y, a, b):
    """Independent score: the Schervish integral by quadrature (bounded cases only)."""
    if y == 1:
        return -integrate.quad(lambda c: c ** (a - 1) * (1 - c) ** b, p, 1, epsrel=1e-12)[0]
    return -integrate.quad(lambda c: c ** a * (1 - c) ** (b - 1), 0, p, epsrel=1e-12)[0]


def brute_tps(df, name, a, b, schedule, mode, eps=1e-6):
    """One trajectory at a time, one step at a time, plain Python."""
    out = {}
    for tid, g in df.groupby("trajectory_id"):
        g = g.sort_values("step")
        cens = bool(g["censored"].iloc[0])
        if cens and mode == "complete":
            continue
        T = len(g)
        q = {"simple": 0.0, "upper": 1.0}.get(mode)
        if mode == "exact" and cens:
            q = g["q_z"].iloc[0]
            assert not math.isnan(q)  # exact mode is exact: every censored run has its q_Z
        total, any_scored = 0.0, False
        for pos, (_, r) in enumerate(g.iterrows(), start=1):
            p = r[f"conf_{name}"]
            if math.isnan(p):
                continue
            any_scored = True
            p = min(max(p, eps), 1 - eps)
            w = {"uniform": 1.0, "linear": float(pos), "front": 0.8 ** (pos - 1),
                 "back": 0.9 ** (20 - pos), "endpoint": float(pos == T), "per-length": 1.0 / T,
                 "column": r.get("weight", np.nan)}[schedule]
            if cens:
                s = q * quad_score(p, 1, a, b) + (1 - q) * quad_score(p, 0, a, b)
            else:
                s = quad_score(p, int(r["outcome"]), a, b)
            total += w * s
        if any_scored:
            out[tid] = total
    return out


SCHEDULES = {"uniform": Schedule("uniform"), "linear": Schedule("linear"),
             "front": Schedule("front", 0.8), "back": Schedule("back", 0.9, 20),
             "endpoint": Schedule("endpoint"), "per-length": Schedule("per-length"),
             "column": Schedule("column")}


@pytest.fixture(scope="module")
def small():
    sim = simulate("webshop-like", n_trajectories=40, seed=11)
    df = sim.steps.copy()
    rng = np.random.default_rng(0)
    df.loc[rng.random(len(df)) < 0.05, "conf_noisy"] = np.nan  # some missing forecasts
    df["weight"] = rng.uniform(0.5, 2.0, len(df))
    return df


@pytest.fixture(scope="module")
def partial_qz(small):
    """The small log with 3 of its censored runs without q_z."""
    df = small.copy()
    cens_ids = df.loc[df["censored"], "trajectory_id"].unique()[:3]
    df.loc[df["trajectory_id"].isin(cens_ids), "q_z"] = np.nan
    return df


@pytest.mark.parametrize("sched", list(SCHEDULES))
@pytest.mark.parametrize("mode", ["complete", "simple", "exact", "upper"])
@pytest.mark.parametrize("ab", [(1.0, 1.0), (2.0, 0.5), (0.7, 3.0)])
def test_against_brute_force(small, sched, mode, ab):
    a, b = ab
    data = from_frame(small)
    st = ScoreSettings(alpha=a, beta=b, schedule=SCHEDULES[sched], censoring=mode, n_boot=0)
    res = compute_tps(data, st, predictors=["noisy", "verbal"])
    for name in ("noisy", "verbal"):
        ref = brute_tps(small, name, a, b, sched, mode)
        got = res.per_trajectory[res.per_trajectory.predictor == name].set_index("trajectory_id")
        assert set(got.index) == set(ref)
        for tid, v in ref.items():
            assert got.loc[tid, "tps"] == pytest.approx(v, rel=1e-9, abs=1e-12)
        assert res.summary.loc[name, "tps_mean"] == pytest.approx(np.mean(list(ref.values())),
                                                                  rel=1e-9)


def test_counts_and_step_mean(small):
    data = from_frame(small)
    res = compute_tps(data, ScoreSettings(censoring="exact", n_boot=0))
    s = res.summary
    n_missing = int(small["conf_noisy"].isna().sum())
    assert s.loc["noisy", "n_missing"] == n_missing
    assert s.loc["noisy", "n_steps"] == len(small) - n_missing
    assert s.loc["verbal", "n_qz_fallback"] == 0
    n_cens = small.groupby("trajectory_id")["censored"].first().sum()
    assert s.loc["verbal", "n_censored"] == n_cens
    pt = res.per_trajectory[res.per_trajectory.predictor == "verbal"]
    assert s.loc["verbal", "tps_step_mean"] == pytest.approx(pt.tps.sum() / pt.weight_sum.sum())
    cc = compute_tps(data, ScoreSettings(censoring="complete", n_boot=0)).summary
    assert cc.loc["verbal", "n_censored"] == 0
    assert cc.loc["verbal", "n_excluded_censored"] == n_cens
    assert cc.loc["verbal", "n_trajectories"] == data.n_trajectories - n_cens


@pytest.mark.parametrize("sched", ["uniform", "linear", "endpoint"])
@pytest.mark.parametrize("mode", ["complete", "simple", "exact"])
def test_step_contributions_sum_to_tps(small, sched, mode):
    res = compute_tps(from_frame(small), ScoreSettings(schedule=SCHEDULES[sched], censoring=mode,
                                                       n_boot=0))
    contrib = res.step_contributions()
    if mode == "complete":
        assert not contrib.trajectory_id.isin(small.loc[small.censored, "trajectory_id"]).any()
    sums = contrib.groupby(["predictor", "trajectory_id"])["contribution"].sum()
    pt = res.per_trajectory.set_index(["predictor", "trajectory_id"])["tps"]
    np.testing.assert_allclose(sums.loc[pt.index].to_numpy(), pt.to_numpy(), rtol=1e-12)
    assert set(contrib.columns) >= {"trajectory_id", "step", "t", "predictor", "weight", "score",
                                    "contribution"}


def test_exact_mode_refuses_a_censored_run_without_qz(partial_qz):
    """Exact mode is exact: a censored run without q_Z is refused with the counts and the remedies, never
    scored as if q_Z were 0 (issue 45); the log's default mode is then simple."""
    from tpsviz import default_censoring
    from tpsviz.core.censoring import MissingQz
    data = from_frame(partial_qz)
    n_cens = int(data.trajectories["censored"].sum())
    with pytest.raises(MissingQz) as e:
        compute_tps(data, ScoreSettings(censoring="exact", n_boot=0))
    assert (e.value.n_missing, e.value.n_censored) == (3, n_cens)
    assert f"3 of the {n_cens} censored runs have none" in str(e.value)
    assert "rollouts" in str(e.value) and "censoring='simple'" in str(e.value)
    assert default_censoring(data) == "simple"
    assert default_censoring(from_frame(partial_qz.assign(q_z=np.where(partial_qz.censored, 0.3, np.nan)))) == "exact"
    # one value for every censored run makes it exact again, and that value is what is scored
    ids = data.trajectories.trajectory_id[data.trajectories.censored]
    res = compute_tps(data, ScoreSettings(censoring="exact", n_boot=0), q_z=pd.Series(0.25, index=ids))
    assert (res.per_trajectory.loc[res.per_trajectory.censored, "q_z_used"] == 0.25).all()


def test_qz_bounds_band(small):
    """TPS_cen is linear in q_Z, so q_Z = 0 and 1 bound the exact score of every run."""
    data = from_frame(small)
    lo = compute_tps(data, ScoreSettings(censoring="simple", n_boot=0)).per_trajectory
    hi = compute_tps(data, ScoreSettings(censoring="upper", n_boot=0)).per_trajectory
    ex = compute_tps(data, ScoreSettings(censoring="exact", n_boot=0)).per_trajectory
    a, b, c = (f.set_index(["predictor", "trajectory_id"])["tps"] for f in (lo, hi, ex))
    assert ((c >= np.minimum(a, b) - 1e-12) & (c <= np.maximum(a, b) + 1e-12)).all()


def test_qz_override_series(small):
    data = from_frame(small)
    ids = data.trajectories.trajectory_id[data.trajectories.censored]
    q = pd.Series(0.5, index=ids)
    res = compute_tps(data, ScoreSettings(censoring="exact", n_boot=0), q_z=q)
    assert (res.per_trajectory.loc[res.per_trajectory.censored, "q_z_used"] == 0.5).all()
    assert res.summary["n_qz_fallback"].eq(0).all()
    with pytest.raises(ValueError, match="\\[0, 1\\]"):
        compute_tps(data, ScoreSettings(censoring="exact"), q_z=q * 3)


def test_eps_zero_gives_honest_minus_inf():
    df = pd.DataFrame({"trajectory_id": ["a", "b"], "step": [1, 1], "outcome": [1, 0],
                       "conf_x": [0.0, 0.2]})
    data = from_frame(df)
    res = compute_tps(data, ScoreSettings(eps=0.0, n_boot=0))
    assert res.summary.loc["x", "tps_mean"] == -np.inf
    assert res.summary.loc["x", "n_clipped"] == 0
    res = compute_tps(data, ScoreSettings(eps=1e-6, n_boot=100))
    assert res.summary.loc["x", "tps_mean"] == pytest.approx((np.log(1e-6) + np.log(0.8)) / 2)
    assert res.summary.loc["x", "n_clipped"] == 1


def test_endpoint_zero_weights_with_infinite_scores():
    df = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [1, 2], "outcome": [1, 1],
                       "conf_x": [0.0, 0.9]})
    res = compute_tps(from_frame(df), ScoreSettings(eps=0.0, schedule=Schedule("endpoint"),
                                                    n_boot=0))
    assert res.summary.loc["x", "tps_mean"] == pytest.approx(np.log(0.9))


def test_bootstrap_is_seeded_and_covers():
    rng = np.random.default_rng(3)
    v = rng.normal(-1.0, 0.5, 300)
    e1 = mean_estimate(v, n_boot=1000, seed=5)
    e2 = mean_estimate(v, n_boot=1000, seed=5)
    assert e1 == e2
    assert e1.ci_low < e1.mean < e1.ci_high
    assert e1.se == pytest.approx(v.std(ddof=1) / np.sqrt(v.size))
    # percentile CI width close to the normal-theory width
    assert (e1.ci_high - e1.ci_low) == pytest.approx(2 * 1.96 * e1.se, rel=0.15)
    d, z = paired_difference(v + 0.1, v)
    assert d.mean == pytest.approx(0.1) and np.isnan(z)  # zero-variance differences


def test_summary_ci_matches_mean_estimate(small):
    data = from_frame(small)
    st = ScoreSettings(n_boot=500, seed=9, censoring="simple")
    res = compute_tps(data, st, predictors=["truthful"])
    v = res.per_trajectory.tps.to_numpy()
    e = mean_estimate(v, n_boot=500, seed=9)
    row = res.summary.loc["truthful"]
    assert row.tps_ci_low == pytest.approx(e.ci_low) and row.tps_ci_high == pytest.approx(e.ci_high)


@pytest.mark.parametrize("sched", ["uniform", "linear", "front", "back", "column"])
@pytest.mark.parametrize("ab", [(0.0, 0.0), (1.0, 1.0), (-0.5, 2.0)])
def test_artificial_censoring_identity(small, sched, ab):
    data = from_frame(small)
    st = ScoreSettings(alpha=ab[0], beta=ab[1], schedule=SCHEDULES[sched], n_boot=0)
    out = artificial_censoring_check(data, 4, st)
    assert len(out) > 10
    assert out["abs_error"].max() < 1e-10
    assert not np.allclose(out["direct"], 0)


def test_artificial_censoring_rejects_length_dependent_schedule(small):
    with pytest.raises(ValueError, match="depends on the run's length"):
        artificial_censoring_check(from_frame(small), 3,
                                   ScoreSettings(schedule=Schedule("per-length")))


def test_settings_validation():
    with pytest.raises(ValueError, match="censoring"):
        ScoreSettings(censoring="drop")
    with pytest.raises(ValueError, match="eps"):
        ScoreSettings(eps=0.7)
    with pytest.raises(ValueError, match="greater than -1"):
        ScoreSettings(alpha=-3)


def test_complete_case_with_every_run_censored_is_empty_not_an_error():
    df = pd.DataFrame({"trajectory_id": ["a", "a", "b"], "step": [1, 2, 1],
                       "outcome": [np.nan] * 3, "conf_x": [0.2, 0.3, 0.9]})
    res = compute_tps(from_frame(df), ScoreSettings(censoring="complete"))
    row = res.summary.loc["x"]
    assert row.n_trajectories == 0 and np.isnan(row.tps_mean) and row.n_excluded_censored == 2
    assert res.per_trajectory.empty


def test_predictor_without_any_forecast_in_a_run_is_left_out_and_counted():
    df = pd.DataFrame({"trajectory_id": ["a", "a", "b"], "step": [1, 2, 1], "outcome": [1, 1, 0],
                       "conf_x": [np.nan, np.nan, 0.4], "conf_z": [0.5, 0.6, 0.3]})
    res = compute_tps(from_frame(df), ScoreSettings(n_boot=0))
    assert res.summary.loc["x", "n_no_forecast"] == 1
    assert res.summary.loc["x", "n_trajectories"] == 1
    assert res.summary.loc["x", "tps_mean"] == pytest.approx(np.log(0.6))
    assert res.summary.loc["z", "n_trajectories"] == 2


@pytest.mark.parametrize("mode", ["complete", "exact"])
def test_the_long_frame_is_built_only_when_asked_for_and_splits_like_the_whole(small, mode):
    """``per_trajectory`` is built on first access (an α nudge of the dashboard never asks for it);
    a result restricted to some predictors, combined from parts or given its intervals gives the
    rows the whole result's frame holds for them, with every run's columns (ids, counts, Σ w_t,
    q_Z) in place."""
    from tpsviz.core.tps import TPSResult

    data = from_frame(small)
    res = compute_tps(data, ScoreSettings(censoring=mode, n_boot=0), predictors=["noisy", "verbal", "truthful"])
    assert res._per_trajectory is None and res.with_intervals(50)._per_trajectory is None
    whole = res.per_trajectory
    assert res._per_trajectory is whole  # built once
    assert list(whole.columns) == ["trajectory_id", "traj", "predictor", "tps", "censored", "n_scored",
                                   "weight_sum", "q_z_used"]
    for names in (["verbal"], ["truthful", "noisy"]):
        got = res.only(names).per_trajectory
        want = pd.concat([whole[whole.predictor == n] for n in names], ignore_index=True)
        pd.testing.assert_frame_equal(got, want)
    both = TPSResult.combine([res.only(["truthful"]), res.only(["noisy", "verbal"])]).per_trajectory
    pd.testing.assert_frame_equal(both, pd.concat([whole[whole.predictor == n] for n in ("truthful", "noisy", "verbal")],
                                                  ignore_index=True))
    # the columns against the log: the runs each predictor scored, the rows it scored in each
    noisy = whole[whole.predictor == "noisy"].set_index("trajectory_id")
    scored = small.dropna(subset=["conf_noisy"])
    if mode == "complete":
        scored = scored[~scored["censored"]]
    counts = scored.groupby("trajectory_id").size()
    assert set(noisy.index.astype(str)) == set(counts.index.astype(str))
    assert (noisy["n_scored"].to_numpy() == counts.reindex(noisy.index.astype(str)).to_numpy()).all()
