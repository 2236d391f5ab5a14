"""Continuous outcomes (tpsviz.outcomes.continuous): the CRPS of each form against an independent
computation (numerical integration, the closed form, brute-force loops of the definitions),
TPS-CRPS against a loop over runs and steps, propriety and PIT calibration by simulation on the
synthetic agent whose exact predictive distribution is known, and every malformed input."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import norm

from tpsviz.io.kinds.continuous_forms import MAX_MEMBERS
from tpsviz.io.kinds import is_continuous
from tpsviz.io.kinds.continuous import continuous_from_frame, read_continuous
from tpsviz.outcomes.continuous import crps_rows, tps_crps
from tpsviz.outcomes.continuous_pit import pit_histogram, pit_values
from tpsviz.core.errors import LogFormatError
from tpsviz.core.inference import bootstrap_sums
from tpsviz.core.schedules import Schedule, parse_schedule
from tpsviz.synthetic.continuous import QUANTILE_LEVELS, demo_frames, simulate_continuous


# ------------------------------------------------------------------------------------- helpers

def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def _gauss_log(y, mu, sigma) -> object:
    n = len(y)
    return continuous_from_frame(pd.DataFrame({"trajectory_id": [f"r{i:03d}" for i in range(n)], "step": 1,
                                               "outcome": y, "mu_g": mu, "sigma_g": sigma}))


def _crps_integral(cdf, y: float, lo: float, hi: float) -> float:
    """∫ (F(x) − 1{x ≥ y})² dx by quadrature, split at y."""
    a = integrate.quad(lambda x: cdf(x) ** 2, lo, y, limit=200)[0]
    b = integrate.quad(lambda x: (cdf(x) - 1.0) ** 2, y, hi, limit=200)[0]
    return a + b


def _pinball_loop(y: float, q: list[float], levels: list[float]) -> float:
    total = 0.0
    for tau, qj in zip(levels, q):
        u = y - qj
        total += tau * u if u >= 0 else (tau - 1.0) * u
    return 2.0 * total / len(levels)


def _energy_loop(y: float, x: list[float], fair: bool) -> float:
    m = len(x)
    e1 = sum(abs(a - y) for a in x) / m
    pair = sum(abs(a - b) for a in x for b in x)
    e2 = pair / (m * (m - 1)) if fair else pair / (m * m)
    return e1 - 0.5 * e2


# --------------------------------------------------------------------------------- the CRPS

def test_gaussian_crps_against_quadrature_and_closed_form():
    y = np.array([0.0, 1.3, -2.0, 10.0, 0.2])
    mu = np.array([0.1, 0.0, 1.0, 9.5, 0.2])
    sigma = np.array([0.4, 2.0, 0.5, 3.0, 1e-2])
    got = crps_rows(_gauss_log(y, mu, sigma), "g")
    for i in range(y.size):
        w = (y[i] - mu[i]) / sigma[i]
        closed = sigma[i] * (w * (2 * norm.cdf(w) - 1) + 2 * norm.pdf(w) - 1 / math.sqrt(math.pi))
        num = _crps_integral(lambda x: norm.cdf(x, mu[i], sigma[i]), y[i], mu[i] - 40 * sigma[i],
                             mu[i] + 40 * sigma[i])
        assert got[i] == pytest.approx(closed, rel=1e-10, abs=1e-12)
        assert got[i] == pytest.approx(num, rel=1e-6, abs=1e-9)
    # a published value (scoringrules' docstring: crps_normal(0.0, 0.1, 0.4))
    assert crps_rows(_gauss_log([0.0], [0.1], [0.4]), "g")[0] == pytest.approx(0.10339992515976162)


def test_quantile_crps_is_twice_the_mean_pinball_loss():
    rng = np.random.default_rng(3)
    levels = [0.1, 0.25, 0.5, 0.75, 0.9]
    rows = []
    for i in range(30):
        q = np.sort(rng.normal(size=5) * 2)
        y = float(rng.normal() * 2) if i % 7 else float(q[2])  # some outcomes exactly on a quantile
        rows.append({"trajectory_id": f"r{i:03d}", "step": 1, "outcome": y,
                     **{f"q{lv}_x": v for lv, v in zip(levels, q)}})
    log = continuous_from_frame(pd.DataFrame(rows))
    got = crps_rows(log, "x")
    want = [_pinball_loop(r["outcome"], [r[f"q{lv}_x"] for lv in levels], levels) for r in rows]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert log.levels["x"] == levels


def test_quantile_crps_approaches_the_crps_with_many_levels():
    """2·mean pinball loss over m equally spaced levels → CRPS = 2∫ρ_τ dτ as m grows."""
    mu, sigma, y = 0.3, 1.7, 1.1
    exact = crps_rows(_gauss_log([y], [mu], [sigma]), "g")[0]
    m = 999
    levels = (np.arange(1, m + 1) - 0.5) / m
    df = pd.DataFrame({"trajectory_id": ["a"], "step": [1], "outcome": [y],
                       **{f"q{float(lv)!r}_x": [mu + sigma * norm.ppf(lv)] for lv in levels}})
    approx = crps_rows(continuous_from_frame(df), "x")[0]
    assert approx == pytest.approx(exact, rel=2e-3)


def test_ensemble_crps_is_the_fair_estimator():
    rng = np.random.default_rng(7)
    members = [list(rng.normal(size=int(m))) for m in rng.integers(2, 12, size=40)]
    members[3] = [1.0, 1.0, 2.0, 2.0]  # ties, and an outcome on a member
    ys = [float(rng.normal()) for _ in members]
    ys[3] = 2.0
    df = pd.DataFrame({"trajectory_id": [f"r{i:03d}" for i in range(40)], "step": 1, "outcome": ys,
                       "samples_e": members})
    got = crps_rows(continuous_from_frame(df), "e")
    fair = [_energy_loop(y, x, fair=True) for y, x in zip(ys, members)]
    plain = [_energy_loop(y, x, fair=False) for y, x in zip(ys, members)]
    np.testing.assert_allclose(got, fair, rtol=1e-12, atol=1e-14)
    # the fair estimator is the plain one plus E|X - X'| / (2m) removed: never above it
    assert np.all(np.array(got) <= np.array(plain) + 1e-15)
    assert not np.allclose(got, plain)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=15),
       st.floats(-1e3, 1e3, allow_nan=False))
def test_ensemble_crps_property_fair_and_nonnegative(x, y):
    df = pd.DataFrame({"trajectory_id": ["a"], "step": [1], "outcome": [y], "samples_e": [x]})
    got = crps_rows(continuous_from_frame(df), "e")[0]
    assert got == pytest.approx(_energy_loop(y, x, fair=True), rel=1e-9, abs=1e-9)
    assert got >= -1e-9  # fair CRPS ≥ 0 by the triangle inequality


# ------------------------------------------------------------------------------------ TPS-CRPS

def _messy_log(seed: int = 11) -> tuple[pd.DataFrame, dict]:
    """Runs of several lengths, missing forecasts, censored runs, all three forms."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(25):
        n = int(rng.integers(1, 8))
        censored = i % 6 == 0
        y = np.nan if censored else float(rng.normal(5, 3))
        for s in range(1, n + 1):
            mu = float(rng.normal(5, 2))
            sd = float(rng.uniform(0.5, 3))
            q = np.sort(rng.normal(mu, sd, size=3))
            row = {"trajectory_id": f"run{i:02d}", "step": s, "outcome": y,
                   "mu_g": mu, "sigma_g": sd, "q0.1_q": q[0], "q0.5_q": q[1], "q0.9_q": q[2],
                   "samples_e": json.dumps([round(v, 6) for v in rng.normal(mu, sd, size=int(rng.integers(2, 6)))])}
            if rng.random() < 0.2:
                row["mu_g"] = row["sigma_g"] = np.nan
            if rng.random() < 0.2:
                row["q0.1_q"] = row["q0.5_q"] = row["q0.9_q"] = np.nan
            if rng.random() < 0.2:
                row["samples_e"] = ""
            rows.append(row)
    # a complete run where one predictor has no forecast at all
    for s in (1, 2):
        rows.append({"trajectory_id": "zz", "step": s, "outcome": 1.0, "mu_g": 1.0, "sigma_g": 1.0,
                     "q0.1_q": 0.0, "q0.5_q": 1.0, "q0.9_q": 2.0, "samples_e": None})
    return pd.DataFrame(rows).sample(frac=1.0, random_state=1), {}


def _tps_loop(df: pd.DataFrame, name: str, form: str, schedule: Schedule) -> dict:
    """Per-run −Σ_t w_t CRPS_t by the definitions, one run and one step at a time."""
    out = {}
    for tid, run in df.groupby("trajectory_id"):
        run = run.sort_values("step")
        y = run["outcome"].iloc[0]
        if pd.isna(y):
            continue
        T = len(run)
        total, scored = 0.0, 0
        for t, (_, r) in enumerate(run.iterrows(), start=1):
            w = float(schedule.weights(np.array([t]), np.array([T]))[0])
            if form == "gaussian":
                if pd.isna(r["mu_g"]):
                    continue
                c = _crps_integral(lambda x: norm.cdf(x, r["mu_g"], r["sigma_g"]), y,
                                   r["mu_g"] - 40 * r["sigma_g"], r["mu_g"] + 40 * r["sigma_g"])
            elif form == "quantile":
                if pd.isna(r["q0.1_q"]):
                    continue
                c = _pinball_loop(y, [r["q0.1_q"], r["q0.5_q"], r["q0.9_q"]], [0.1, 0.5, 0.9])
            else:
                if not isinstance(r["samples_e"], str) or not r["samples_e"]:
                    continue
                c = _energy_loop(y, json.loads(r["samples_e"]), fair=True)
            total -= w * c
            scored += w > 0
        if scored:  # a run counts when a forecast carries weight (endpoint: the last step has one)
            out[tid] = total
    return out


@pytest.mark.parametrize("spec", ["uniform", "linear", "front:0.8", "back:0.9:10", "endpoint", "per-length"])
def test_tps_crps_against_a_loop(spec):
    df, _ = _messy_log()
    log = continuous_from_frame(df)
    schedule = parse_schedule(spec)
    res = tps_crps(log, schedule, n_boot=0)
    n_cens = int(df.groupby("trajectory_id")["outcome"].first().isna().sum())
    assert n_cens > 0
    for name, form in (("g", "gaussian"), ("q", "quantile"), ("e", "ensemble")):
        want = _tps_loop(df, name, form, schedule)
        got = res.per_run[res.per_run["predictor"] == name].set_index("trajectory_id")["tps"]
        assert sorted(got.index) == sorted(want)
        np.testing.assert_allclose(got[sorted(want)].to_numpy(), [want[k] for k in sorted(want)],
                                   rtol=1e-6, atol=1e-9)
        row = res.summary.loc[name]
        assert row["tps_mean"] == pytest.approx(np.mean(list(want.values())), rel=1e-6)
        assert row["tps_se"] == pytest.approx(np.std(list(want.values()), ddof=1) / np.sqrt(len(want)), rel=1e-6)
        assert row["n_runs"] == len(want)
        assert row["n_excluded_censored"] == n_cens
        assert row["form"] == form
        # steps and missing counted on the complete runs
        complete = df[df["outcome"].notna()]
        col = {"g": "mu_g", "q": "q0.1_q", "e": "samples_e"}[name]
        present = complete[col].notna() & (complete[col] != "")
        assert row["n_steps"] == int(present.sum())
        assert row["n_missing"] == int((~present).sum())
    if spec != "endpoint":
        assert res.summary.loc["e", "n_no_forecast"] == 1  # run zz has no ensemble at all
    else:  # … and the runs whose last step has none are not scored a perfect 0
        last = df[df["outcome"].notna()].sort_values("step").groupby("trajectory_id").tail(1)
        none = last["samples_e"].isna() | (last["samples_e"] == "")
        assert res.summary.loc["e", "n_no_forecast"] == int(none.sum()) > 1
    assert any("censored" in n and "left out" in n for n in res.notes)
    assert any("different forms" in n for n in res.notes)


def test_crps_step_mean_and_bootstrap():
    df, _ = _messy_log(4)
    log = continuous_from_frame(df)
    res = tps_crps(log, Schedule("linear"), n_boot=500, seed=9)
    for name in log.predictors:
        pr = res.per_run[res.per_run["predictor"] == name]
        row = res.summary.loc[name]
        assert row["crps_step_mean"] == pytest.approx(-pr["tps"].sum() / pr["weight_sum"].sum())
        assert row["crps_step_mean"] > 0
        assert row["tps_ci_low"] < row["tps_mean"] < row["tps_ci_high"]
    # the g interval by hand: the same replicates over the complete runs, a ratio of sums
    runs = log.trajectories.index[~log.trajectories["censored"]].to_numpy()
    pr = res.per_run[res.per_run["predictor"] == "g"].set_index("traj")["tps"]
    v = pr.reindex(runs).to_numpy()
    ok = ~np.isnan(v)
    sums = bootstrap_sums(np.column_stack([np.where(ok, v, 0.0), ok.astype(float)]), 500, 9)
    reps = sums[:, 0] / sums[:, 1]
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert res.summary.loc["g", "tps_ci_low"] == pytest.approx(lo)
    assert res.summary.loc["g", "tps_ci_high"] == pytest.approx(hi)
    # scoring one predictor alone gives the same numbers (paired replicates from the seed only)
    alone = tps_crps(log, Schedule("linear"), n_boot=500, seed=9, predictors=["g"])
    pd.testing.assert_series_equal(alone.summary.loc["g"], res.summary.loc["g"])


def test_weights_that_underflow_are_refused_and_column_is_unavailable():
    df, _ = _messy_log()
    log = continuous_from_frame(df)
    with pytest.raises(ValueError, match="underflow"):
        tps_crps(log, Schedule("front", 1e-200), n_boot=0)
    with pytest.raises(ValueError, match="column"):
        tps_crps(log, Schedule("column"), n_boot=0)
    with pytest.raises(ValueError, match="no predictor"):
        tps_crps(log, predictors=["nope"])


# ------------------------------------------------------------------------ simulation: propriety

@pytest.fixture(scope="module")
def sim():
    log, truth = simulate_continuous(400, seed=20260407)
    return continuous_from_frame(log), log, truth


def test_truthful_beats_distorted_predictors_by_many_se(sim):
    log, _, _ = sim
    res = tps_crps(log, n_boot=0)
    m = res.per_run.pivot(index="trajectory_id", columns="predictor", values="tps")
    for other in ("overconfident", "biased"):
        d = m["truthful"] - m[other]
        z = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
        assert z > 5, (other, z)
    # the ensemble (fair CRPS, unbiased) is within noise of the truthful Gaussian
    d = m["truthful"] - m["ensemble"]
    assert abs(d.mean()) < 3 * d.std(ddof=1) / np.sqrt(len(d))
    assert abs(d.mean()) < 0.02 * abs(m["truthful"].mean())
    # the 19 equal-weight quantile levels give 2·mean_τ φ(Φ⁻¹(τ))·√π ≈ 1.048 × the CRPS of a
    # truthful Gaussian in expectation (both scale with σ)
    lv = np.array(QUANTILE_LEVELS)
    ratio = 2 * norm.pdf(norm.ppf(lv)).mean() * math.sqrt(math.pi)
    assert res.summary.loc["quantiles", "tps_mean"] / res.summary.loc["truthful", "tps_mean"] == pytest.approx(
        ratio, abs=0.015)
    assert res.summary.loc["quantiles", "tps_mean"] > res.summary.loc["overconfident", "tps_mean"]


@pytest.mark.parametrize("spec", ["linear", "front:0.9"])
def test_truthful_wins_under_other_proper_schedules(sim, spec):
    log, _, _ = sim
    res = tps_crps(log, parse_schedule(spec), n_boot=0)
    s = res.summary["tps_mean"]
    assert s["truthful"] > s["overconfident"] and s["truthful"] > s["biased"]


def test_simulation_is_deterministic_and_exact(sim):
    log, df, truth = sim
    again, truth2 = simulate_continuous(400, seed=20260407)
    pd.testing.assert_frame_equal(df, again)
    pd.testing.assert_frame_equal(truth, truth2)
    other, _ = simulate_continuous(400, seed=1)
    assert not other["mu_truthful"].equals(df["mu_truthful"].iloc[:len(other)])
    # the truthful predictor is the exact predictive; σ > 0 at the last step (evaluation noise)
    np.testing.assert_array_equal(df["mu_truthful"], truth["true_mu"])
    np.testing.assert_array_equal(df["sigma_truthful"], truth["true_sigma"])
    assert (df["sigma_truthful"] >= 1.0 - 1e-6).all()
    # the last step's predictive mean is S_T: the outcome minus the evaluation noise
    done = truth[~truth["censored"]]
    last = done.groupby("trajectory_id").tail(1)
    assert (last["step"] == last["planned_steps"]).all()
    # ~10% censored by the step budget; censored runs have no outcome
    share = df.groupby("trajectory_id")["censored"].first().mean()
    assert 0.03 < share < 0.16
    assert df.loc[df["censored"], "outcome"].isna().all()
    assert df.loc[~df["censored"], "outcome"].notna().all()
    # quantiles non-decreasing after %.6g; ensemble 20 members as JSON text
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format="%.6g")
    back = pd.read_csv(io.StringIO(buf.getvalue()))
    q = back[[f"q{lv:g}_quantiles" for lv in QUANTILE_LEVELS]].to_numpy()
    assert (np.diff(q, axis=1) >= 0).all()
    assert all(len(json.loads(s)) == 20 for s in back["samples_ensemble"].iloc[:50])
    frames = demo_frames()
    assert set(frames) == {"continuous-like.csv", "continuous-like_truth.csv"}


def test_demo_csv_reads_back_to_the_same_scores(sim, tmp_path):
    log, df, _ = sim
    path = tmp_path / "continuous-like.csv"
    df.to_csv(path, index=False, float_format="%.6g")
    back = read_continuous(path)
    assert back.predictors == log.predictors
    a = tps_crps(log, n_boot=0).summary
    b = tps_crps(back, n_boot=0).summary
    pd.testing.assert_frame_equal(a, b)


# ------------------------------------------------------------------------------------------ PIT

def test_pit_uniform_for_truthful_and_shaped_for_distortions(sim):
    log, _, _ = sim
    for name in ("truthful", "quantiles", "ensemble"):
        _, test = pit_histogram(log, name)
        assert test["p_value"] > 1e-3, name
        assert test["n_runs"] == log.n_runs - log.n_censored
        assert test["reading"] == "consistent with uniform"
    table, test = pit_histogram(log, "overconfident")
    edges = table["count"].iloc[[0, -1]].sum()
    assert edges > 2 * 2 * table["expected"].iloc[0]  # U-shaped: edge bins heavy (2.6x expected)
    assert test["p_value"] < 1e-6 and test["reading"] == "too narrow (U-shaped)"
    table, test = pit_histogram(log, "biased", which="last")
    assert table["count"].sum() == test["n_runs"]
    assert table["count"].iloc[:3].sum() > 2 * table["count"].iloc[-3:].sum()  # piled low: outcomes below
    assert test["p_value"] < 1e-6 and test["reading"].startswith("biased high")


def test_truthful_pit_uniform_over_seeds():
    for seed in (1, 2, 3):
        df, _ = simulate_continuous(250, seed=seed)
        log = continuous_from_frame(df)
        _, test = pit_histogram(log, "truthful", seed=seed)
        assert test["p_value"] > 1e-3


def test_pit_quantile_and_ensemble_by_hand():
    levels = [0.2, 0.5, 0.8]
    rows = [  # y below, between (interpolated), on two equal quantiles, above
        {"y": -5.0, "q": [0.0, 1.0, 2.0]},
        {"y": 0.5, "q": [0.0, 1.0, 2.0]},
        {"y": 1.0, "q": [1.0, 1.0, 2.0]},
        {"y": 9.0, "q": [0.0, 1.0, 2.0]},
        {"y": 1.5, "q": [0.0, 1.0, 2.0]},
    ]
    df = pd.DataFrame({"trajectory_id": [f"r{i:03d}" for i in range(5)], "step": 1,
                       "outcome": [r["y"] for r in rows],
                       **{f"q{lv}_x": [r["q"][j] for r in rows] for j, lv in enumerate(levels)},
                       "samples_e": [[0.0, 1.0, 1.0], [0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [0.0, 1.0, 2.0],
                                     [0.0, 1.0, 2.0]]})
    log = continuous_from_frame(df)
    u = np.random.default_rng(123).random(5)
    pit = pit_values(log, "x", seed=123)
    np.testing.assert_allclose(pit, [u[0] * 0.2, 0.35, 0.2 + u[2] * 0.3, 0.8 + u[3] * 0.2, 0.65])
    e = pit_values(log, "e", seed=123)
    # ((#< y) + U (#= y + 1)) / (m + 1)
    np.testing.assert_allclose(e, [(0 + u[0]) / 4, (1 + u[1]) / 4, (0 + 4 * u[2]) / 4, (3 + u[3]) / 4,
                                   (2 + u[4]) / 4])
    g = pit_values(_gauss_log([1.0, 3.0], [1.0, 1.0], [2.0, 2.0]), "g")
    np.testing.assert_allclose(g, [0.5, norm.cdf(1.0)])


def test_pit_histogram_rows_and_last_steps():
    df, _ = _messy_log(2)
    log = continuous_from_frame(df)
    pit = pit_values(log, "g")
    assert np.isnan(pit[~log.present("g")]).all()
    assert np.isnan(pit[log.trajectories["censored"].to_numpy()[log.steps["traj"].to_numpy()]]).all()
    table, test = pit_histogram(log, "g", n_bins=5)
    assert table["count"].sum() == test["n_rows"] == int((~np.isnan(pit)).sum())
    last, test2 = pit_histogram(log, "g", n_bins=5, which="last")
    assert last["count"].sum() == test["n_runs"] == tps_crps(log, n_boot=0).summary.loc["g", "n_runs"]
    assert test2["p_value"] == test["p_value"] and test["approximate"]
    with pytest.raises(ValueError):
        pit_histogram(log, "g", which="some")
    with pytest.raises(ValueError):
        pit_histogram(log, "g", n_bins=1)


# -------------------------------------------------------------------------------- reading files

def _small() -> pd.DataFrame:
    return pd.DataFrame({
        "trajectory_id": ["a", "a", "b", "b", "c"], "step": [1, 2, 1, 2, 1],
        "outcome": [3.0, 3.0, -1.5, -1.5, None],
        "mu_g": [2.0, 2.5, 0.0, -1.0, 1.0], "sigma_g": [1.0, 0.5, 2.0, 1.0, 1.0],
        "samples_e": [[1.0, 2.0, 4.0], [3.0, 3.5], None, [-1.0, -2.0, 0.5], [1.0, 2.0]],
    })


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_every_format_reads_the_samples(fmt, tmp_path):
    df = _small()
    path = tmp_path / f"log.{fmt}"
    if fmt == "csv":
        out = df.copy()
        out["samples_e"] = [json.dumps(v) if v is not None else "" for v in df["samples_e"]]
        out.to_csv(path, index=False)
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v)
                                              for k, v in r.items()}) for r in df.to_dict("records")))
    else:
        df.to_parquet(path)
    log = read_continuous(path)
    assert log.predictors == {"g": "gaussian", "e": "ensemble"}
    assert log.n_censored == 1
    want = continuous_from_frame(df)
    np.testing.assert_allclose(crps_rows(log, "e"), crps_rows(want, "e"), equal_nan=True)
    np.testing.assert_allclose(crps_rows(log, "g"), crps_rows(want, "g"), equal_nan=True)
    assert not any("nested type" in n for n in log.notes)
    # bytes with a name, and a DataFrame, read the same
    assert read_continuous((path.read_bytes(), path.name)).predictors == log.predictors
    assert read_continuous(df).n_runs == 3


def test_is_continuous():
    assert is_continuous(["trajectory_id", "mu_x", "sigma_x"])
    assert is_continuous(["q0.1_x", "q0.9_x"]) and is_continuous(["samples_e"])
    assert not is_continuous(["trajectory_id", "step", "outcome", "conf_a", "q_z"])
    assert not is_continuous(["q5_notes", "sigma_only"])
    assert not is_continuous(["conf_a__success", "conf_a__failure"])


def test_missing_forecasts_are_counted_and_said():
    df = _small()
    log = continuous_from_frame(df)
    assert log.present("e").tolist() == [True, True, False, True, True]
    assert any("'e'" in n and "no forecast" in n for n in log.notes)
    res = tps_crps(log, n_boot=0)
    assert res.summary.loc["e", "n_missing"] == 1 and res.summary.loc["e", "n_steps"] == 3


# ------------------------------------------------------------------------------- malformed input

SECRET = 7.123456


def _base(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({"trajectory_id": ["a"] * n, "step": list(range(1, n + 1)), "outcome": [2.0] * n,
                         "mu_x": [1.0] * n, "sigma_x": [1.0] * n})


def _error(df: pd.DataFrame) -> str:
    with pytest.raises(LogFormatError) as exc:
        continuous_from_frame(df, source="log.csv")
    msg = str(exc.value)
    assert msg.startswith("log.csv")
    assert "7.12" not in msg and "secret" not in msg.lower()
    return msg


def test_sigma_not_positive():
    df = _base()
    df.loc[1, "sigma_x"] = -SECRET
    msg = _error(df)
    assert "'sigma_x'" in msg and "> 0" in msg and "row 2" in msg
    df.loc[1, "sigma_x"] = 0.0
    assert "row 2" in _error(df)
    df.loc[1, "sigma_x"] = 1e-200  # (y − μ)/σ would overflow
    msg = _error(df)
    assert "at least 1e-100" in msg and "row 2" in msg


def test_decreasing_quantiles():
    df = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [1, 2], "outcome": [1.0, 1.0],
                       "q0.1_x": [0.0, SECRET], "q0.5_x": [1.0, 1.0], "q0.9_x": [2.0, 3.0]})
    msg = _error(df)
    assert "'x'" in msg and "decrease" in msg and "row 2" in msg and "row 1" not in msg


@pytest.mark.parametrize("cell,words", [
    ("secret words", "not a list of numbers"),
    ('["secret", 1]', "not a list of numbers"),
    ('{"a": 7.123456}', "not a list of numbers"),
    ("[7.123456]", "fewer than 2"),
    ("[1, NaN]", "not a finite number"),
    ("[1, true]", "not a list of numbers"),
    ([[1.0, 2.0], [3.0]], "not a list of numbers"),
    ("[1e999999, 2]", "not a finite number"),
    ("[" + "1" * 400 + ", 2]", "not a finite number"),
])
def test_samples_cell_not_a_list_of_numbers(cell, words):
    df = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [1, 2], "outcome": [1.0, 1.0],
                       "samples_x": [[1.0, 2.0], cell]})
    msg = _error(df)
    assert "'samples_x'" in msg and words in msg and "row 2" in msg


def test_too_many_members():
    big = "[" + ", ".join(["7.123456"] * (MAX_MEMBERS + 1)) + "]"
    df = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [1, 2], "outcome": [1.0, 1.0],
                       "samples_x": [big, list(np.zeros(MAX_MEMBERS + 1))]})
    msg = _error(df)
    assert "more than 10,000 members" in msg and "row 1, row 2" in msg


def test_too_many_members_in_parquet(tmp_path):
    df = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [1, 2], "outcome": [1.0, 1.0],
                       "samples_x": [[1.0, 2.0], list(np.full(MAX_MEMBERS + 1, SECRET))]})
    df.to_parquet(tmp_path / "log.parquet")
    with pytest.raises(LogFormatError, match="more than 10,000 members at row 2"):
        read_continuous(tmp_path / "log.parquet")


def test_non_numeric_outcome():
    df = _base()
    df["outcome"] = ["secret", "secret", "secret"]
    msg = _error(df)
    assert "'outcome'" in msg and "must be a number" in msg and "row 1" in msg
    df["outcome"] = [2.0, 2.0, np.inf]
    assert "row 3" in _error(df)
    df["outcome"] = [2.0, 2.0, -1e300]  # beyond ±1e100: the CRPS and its sums would overflow
    assert "within ±1e+100" in _error(df)
    df["outcome"] = [2.0, 2.0, 3.0]
    assert "changes within trajectory 'a'" in _error(df)


def test_mixed_forms_and_other_header_problems():
    df = _base()
    df["q0.5_x"] = 1.0
    df["q0.9_x"] = 2.0
    msg = _error(df)
    assert "'x' is given in more than one form" in msg
    df = _base().drop(columns="sigma_x")
    assert "has no matching 'sigma_x'" in _error(df)
    df = _base().rename(columns={"mu_x": "q0.5_x", "sigma_x": "q5_x"})
    msg = _error(df)
    assert "'q5_x'" in msg and "(0, 1)" in msg
    df = _base().rename(columns={"mu_x": "q0.5_x", "sigma_x": "q0.50_x"})
    assert "same quantile level" in _error(df)
    df = _base().rename(columns={"mu_x": "q0.5_x", "sigma_x": "other"})
    assert "at least 2 levels" in _error(df)
    assert "missing required column 'outcome'" in _error(_base().drop(columns="outcome"))


def test_half_given_rows_and_censoring_conflicts():
    df = _base()
    df.loc[0, "sigma_x"] = np.nan
    assert "one of 'mu_x', 'sigma_x' but not the other at row 1" in _error(df)
    df = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [1, 2], "outcome": [1.0, 1.0],
                       "q0.1_x": [0.0, np.nan], "q0.5_x": [1.0, 1.0]})
    assert "some but not all quantile columns are empty at row 2" in _error(df)
    df = _base()
    df["censored"] = True
    assert "'censored' is true while 'outcome' is present" in _error(df)
    df = _base()
    df["outcome"] = np.nan
    df["censored"] = False
    assert "'outcome' is empty" in _error(df)


def test_binary_and_multiclass_logs_point_to_their_commands():
    binary = pd.DataFrame({"trajectory_id": ["a"], "step": [1], "outcome": [1], "conf_v": [0.4]})
    assert "tpsviz score" in _error(binary)
    multi = pd.DataFrame({"trajectory_id": ["a"], "step": [1], "outcome": ["success"],
                          "conf_v__success": [0.4], "conf_v__failure": [0.6]})
    assert "tpsviz score" in _error(multi) and "multi-class" in _error(multi)


def test_every_problem_is_listed_once():
    df = _base(4).astype(object)
    df.loc[0, "sigma_x"] = -SECRET
    df.loc[1, "mu_x"] = "secret"
    df.loc[2, "outcome"] = "secret"
    msg = _error(df)
    assert "3 problems" in msg


def test_nested_json_lines_with_samples():
    raw = (b'{"trajectory_id": "a", "outcome": 2.5, "steps": [{"step": 1, "samples_x": [1, 2, 3]}, '
           b'{"step": 2, "samples_x": [2, 3]}]}\n'
           b'{"trajectory_id": "b", "outcome": null, "steps": [{"step": 1, "samples_x": [1, 2]}]}\n')
    log = read_continuous((raw, "nested.jsonl"))
    assert log.trajectories["censored"].tolist() == [False, True]
    got = crps_rows(log, "x")
    np.testing.assert_allclose(got[:2], [_energy_loop(2.5, [1, 2, 3], True), _energy_loop(2.5, [2, 3], True)])
    assert np.isnan(got[2])
    bad = b'{"trajectory_id": "a", "outcome": 2.5, "steps": [{"step": 1, "samples_x": [1, "7.123456"]}]}\n'
    with pytest.raises(LogFormatError) as exc:
        read_continuous((bad, "nested.jsonl"))
    assert "line 1, step entry 1" in str(exc.value) and "7.12" not in str(exc.value)
