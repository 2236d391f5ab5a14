"""Multi-class terminal outcomes (TPS-k): scores and TPS-k against brute-force loops, the exact
identity with the binary TPS on two labels, propriety by simulation, one-vs-rest reliability
against pandas, the demo generator against an independent Bayes computation, and every malformed
input as a clear error that never echoes a cell value."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tpsviz
import tpsviz.io.files
from tpsviz.synthetic.agent import simulate
from tpsviz.core.errors import LogFormatError
from tpsviz.core.inference import bootstrap_weights
from tpsviz.outcomes.multiclass import BRIER_FACTOR, expected_score_k, score_k, score_matrix, tps_k
from tpsviz.io.kinds import is_multiclass
from tpsviz.io.kinds.multiclass import multiclass_from_frame, read_multiclass
from tpsviz.outcomes.multiclass_reliability import reliability_ovr
from tpsviz.core.schedules import Schedule
from tpsviz.synthetic.multiclass import (
    EMISSION, HAZARD, LABEL_LAW, LABELS, PRIOR, SIGNALS, demo_frames, simulate_multiclass)

LAB = ["win", "draw", "loss"]


# ---------------------------------------------------------------- fixtures and brute-force oracles

def _random_log(seed: int = 0, n_runs: int = 40, with_q: bool = True) -> pd.DataFrame:
    """Two predictors over three labels; censored runs (some with a q vector), missing forecasts,
    exact zeros (clipped by the log score), step gaps and shuffled rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_runs):
        cens = i % 5 == 0
        y = None if cens else LAB[int(rng.integers(3))]
        q = rng.dirichlet([1, 1, 1]) if (cens and with_q and i % 10 == 0) else None
        steps = np.sort(rng.choice(np.arange(0, 15), size=int(rng.integers(1, 8)), replace=False))
        for s in steps:
            row = {"trajectory_id": f"r{i:02d}", "step": int(s), "outcome": y, "censored": cens}
            for name, conc in (("a", 2.0), ("b", 0.4)):
                p = rng.dirichlet([conc] * 3)
                if name == "b" and rng.random() < 0.2:
                    p = np.zeros(3)
                    p[int(rng.integers(3))] = 1.0  # a certain forecast: ln 0 on the other labels
                if rng.random() < 0.15:
                    p = [np.nan] * 3  # a missing forecast
                for lab, v in zip(LAB, p):
                    row[f"conf_{name}__{lab}"] = v
            for j, lab in enumerate(LAB):
                row[f"q_z__{lab}"] = q[j] if q is not None else np.nan
            rows.append(row)
    df = pd.DataFrame(rows)
    if not with_q:
        df = df.drop(columns=[f"q_z__{lab}" for lab in LAB])
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _weight(schedule: Schedule, t: int, T: int) -> float:
    """w_t written out (the formulas of docs/theory.md), not Schedule.weights."""
    g, H = schedule.gamma, schedule.horizon
    if schedule.name == "front":
        return g ** (t - 1)
    if schedule.name == "back":
        return g ** (H - t)
    return {"uniform": 1.0, "linear": float(t), "endpoint": float(t == T), "per-length": 1.0 / T}[schedule.name]


def _S(p, j: int, rule: str, eps: float) -> float:
    """One score by plain Python."""
    if rule == "log":
        v = max(p[j], eps)
        return -math.inf if v == 0 else math.log(v)
    return -0.25 * sum((p[i] - (1.0 if i == j else 0.0)) ** 2 for i in range(len(p)))


def _brute_tps(df, name, rule, schedule, censoring, label=None, eps=1e-6):
    """{run: TPS-k} and the counts, walking every run's steps."""
    out, clipped, missing, steps = {}, 0, 0, 0
    for tid, run in df.groupby("trajectory_id"):
        run = run.sort_values("step")
        cens = bool(run["censored"].iloc[0])
        if cens and censoring == "complete":
            continue
        y = run["outcome"].iloc[0]
        q = [run[f"q_z__{lab}"].iloc[0] for lab in LAB] if f"q_z__{LAB[0]}" in run else [np.nan] * 3
        if cens:
            law = (q if censoring == "exact" and not np.isnan(q[0]) else
                   [1.0 if lab == label else 0.0 for lab in LAB])
        else:
            law = [1.0 if lab == y else 0.0 for lab in LAB]
        T, total, scored = len(run), 0.0, 0
        for t, (_, r) in enumerate(run.iterrows(), start=1):
            p = [r[f"conf_{name}__{lab}"] for lab in LAB]
            if np.isnan(p[0]):
                missing += 1
                continue
            scored += 1
            s = sum(law[j] * _S(p, j, rule, eps) for j in range(3) if law[j] > 0)
            if rule == "log" and any(law[j] > 0 and p[j] < eps for j in range(3)):
                clipped += 1
            w = _weight(schedule, t, T)
            total += 0.0 if w == 0 else w * s
        steps += scored
        if scored:
            out[tid] = total
    return out, {"n_clipped": clipped, "n_missing": missing, "n_steps": steps}


# ---------------------------------------------------------------- scores

def test_score_k_against_loops_and_known_values():
    rng = np.random.default_rng(3)
    P = rng.dirichlet([0.7] * 4, size=200)
    P[:5] = np.eye(4)[[0, 1, 2, 3, 0]]  # certain forecasts
    y = rng.integers(0, 4, size=200)
    for rule in ("log", "brier"):
        got = score_k(P, y, rule)
        want = [_S(P[i], int(y[i]), rule, 1e-6) for i in range(200)]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
        M = score_matrix(P, rule)
        for j in range(4):
            np.testing.assert_allclose(M[:, j], score_k(P, np.full(200, j), rule), rtol=1e-14)
    assert score_k([[0.5, 0.3, 0.2]], [1], "log")[0] == pytest.approx(math.log(0.3), rel=1e-15)
    assert score_k([[0.5, 0.3, 0.2]], [1], "brier")[0] == pytest.approx(-(0.25 + 0.49 + 0.04) / 4, rel=1e-15)
    assert score_k([[1.0, 0.0, 0.0]], [0], "brier")[0] == 0.0 and score_k([[1.0, 0.0]], [0], "log")[0] == 0.0
    assert score_k([[0.0, 1.0]], [0], "log", eps=0)[0] == -math.inf
    assert score_k([[0.0, 1.0]], [0], "log")[0] == pytest.approx(math.log(1e-6))
    Q = rng.dirichlet([1] * 4, size=200)
    Q[:3] = np.eye(4)[[1, 2, 3]]
    for rule in ("log", "brier"):
        want = [sum(Q[i, j] * _S(P[i], j, rule, 1e-6) for j in range(4) if Q[i, j] > 0) for i in range(200)]
        np.testing.assert_allclose(expected_score_k(P, Q, rule), want, rtol=1e-13, atol=1e-15)


def test_score_k_refuses_bad_vectors():
    with pytest.raises(ValueError, match="sum to 1"):
        score_k([[0.5, 0.4]], [0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        score_k([[1.5, -0.5]], [0])
    with pytest.raises(ValueError, match="label index"):
        score_k([[0.5, 0.5]], [2])
    with pytest.raises(ValueError, match="rule"):
        score_k([[0.5, 0.5]], [0], "spherical")


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 5), st.lists(st.floats(0.01, 1.0), min_size=5, max_size=5),
       st.lists(st.floats(0.0, 1.0), min_size=5, max_size=5), st.sampled_from(["log", "brier"]))
def test_expected_score_is_maximised_at_the_truth(k, qw, pw, rule):
    """Σ_j q_j S(p, j) < Σ_j q_j S(q, j) for every p ≠ q (strict propriety)."""
    q = np.array(qw[:k]) / sum(qw[:k])
    assume(sum(pw[:k]) > 0)
    p = np.array(pw[:k]) / sum(pw[:k])
    assume(np.abs(p - q).max() > 1e-3)
    at_p = expected_score_k(p[None], q[None], rule, eps=0)[0]
    at_q = expected_score_k(q[None], q[None], rule, eps=0)[0]
    assert at_p < at_q


# ---------------------------------------------------------------- TPS-k against brute force

SCHEDULES = [Schedule(), Schedule("linear"), Schedule("front", 0.8), Schedule("back", 0.9, 12),
             Schedule("endpoint"), Schedule("per-length")]


@pytest.mark.parametrize("rule", ["log", "brier"])
@pytest.mark.parametrize("censoring", ["complete", "simple", "exact"])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: s.spec)
def test_tps_k_against_a_brute_force_loop(rule, censoring, schedule):
    df = _random_log(seed=1)
    log = multiclass_from_frame(df)
    res = tps_k(log, rule, schedule, censoring, censored_label="loss", n_boot=0)
    for name in ("a", "b"):
        want, counts = _brute_tps(df, name, rule, schedule, censoring, "loss")
        got = res.per_run[res.per_run["predictor"] == name].set_index("trajectory_id")["tps"]
        assert sorted(got.index) == sorted(want)
        for tid, v in want.items():
            assert got[tid] == pytest.approx(v, rel=1e-12, abs=1e-14)
        row = res.summary.loc[name]
        assert row["tps_mean"] == pytest.approx(np.mean(list(want.values())), rel=1e-12)
        for key, v in counts.items():
            assert row[key] == v, key
        n_cens = int(df.groupby("trajectory_id")["censored"].first().sum())
        assert row["n_excluded_censored"] == (n_cens if censoring == "complete" else 0)
        assert row["n_runs"] == len(want)
    if censoring == "exact":  # runs without q counted as the label given
        assert res.summary["n_q_fallback"].max() > 0


def test_exact_mode_without_q_needs_a_label():
    log = multiclass_from_frame(_random_log(seed=2))
    n_without = int((log.trajectories["censored"] & log.trajectories["q_z__win"].isna()).sum())
    with pytest.raises(ValueError, match=f"{n_without} of .* censored run.* no q vector"):
        tps_k(log, censoring="exact")
    with pytest.raises(ValueError, match="needs censored_label"):
        tps_k(log, censoring="simple")
    with pytest.raises(ValueError, match="not one of the labels"):
        tps_k(log, censoring="simple", censored_label="lose")
    with pytest.raises(ValueError, match="column"):
        tps_k(log, schedule=Schedule("column"))


def test_bootstrap_interval_is_the_projects_trajectory_bootstrap():
    log = multiclass_from_frame(_random_log(seed=4, n_runs=60))
    res = tps_k(log, "brier", censoring="complete", n_boot=500, seed=11)
    runs = res.per_run[res.per_run["predictor"] == "a"]
    # the same percentile bootstrap, by hand from the project's resampling counts over all runs
    codes = log.trajectories["trajectory_id"].tolist()
    v = np.zeros(len(codes))
    valid = np.zeros(len(codes), dtype=bool)
    pos = {t: i for i, t in enumerate(codes)}
    for tid, x in zip(runs["trajectory_id"], runs["tps"]):
        v[pos[tid]], valid[pos[tid]] = x, True
    reps = np.concatenate([(c @ v) / (c @ valid) for c in bootstrap_weights(len(codes), 500, 11)])
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert res.summary.loc["a", "tps_ci_low"] == pytest.approx(lo, rel=1e-12)
    assert res.summary.loc["a", "tps_ci_high"] == pytest.approx(hi, rel=1e-12)
    assert res.summary.loc["a", "tps_se"] == pytest.approx(runs["tps"].std(ddof=1) / np.sqrt(len(runs)), rel=1e-12)


# ---------------------------------------------------------------- the 2-class identity

def _two_label_frame(steps: pd.DataFrame, pred: str, with_q: bool = False) -> pd.DataFrame:
    df = pd.DataFrame({"trajectory_id": steps["trajectory_id"], "step": steps["step"],
                       "outcome": steps["outcome"].map({1.0: "success", 0.0: "failure"}),
                       "censored": steps["censored"],
                       f"conf_{pred}__success": steps[f"conf_{pred}"],
                       f"conf_{pred}__failure": 1.0 - steps[f"conf_{pred}"]})
    if with_q:
        df["q_z__success"] = steps["q_z"]
        df["q_z__failure"] = 1.0 - steps["q_z"]
    return df


@pytest.fixture(scope="module")
def tau2():
    steps = simulate("tau2-like", n_trajectories=200).steps
    return steps, tpsviz.from_frame(steps)


@pytest.mark.parametrize("pred", ["truthful", "noisy"])
@pytest.mark.parametrize("rule,ab", [("log", (0.0, 0.0)), ("brier", (1.0, 1.0))])
@pytest.mark.parametrize("schedule", [Schedule(), Schedule("front", 0.8), Schedule("endpoint")], ids=lambda s: s.spec)
@pytest.mark.parametrize("mode", ["complete", "simple"])
def test_two_labels_score_exactly_as_the_binary_tps(tau2, pred, rule, ab, schedule, mode):
    """TPS-k on {success, failure} = compute_tps with α=β=0 (log) / α=β=1 (Brier = ¼ Σ_j (P_j − 1[j=y])²),
    per run; simple mode with censored_label="failure" is the binary q_Z = 0."""
    steps, data = tau2
    assert data.trajectories["censored"].any()
    log = multiclass_from_frame(_two_label_frame(steps, pred))
    res = tps_k(log, rule, schedule, mode, censored_label="failure", n_boot=300)
    binary = tpsviz.compute_tps(data, tpsviz.ScoreSettings(alpha=ab[0], beta=ab[1], schedule=schedule,
                                                           censoring=mode, n_boot=300, cluster_by="run",
                                                           interval="percentile"),
                                 predictors=[pred])  # (multi-class: SEs by run, percentile CIs)
    got = res.per_run.set_index("trajectory_id")["tps"]
    want = binary.per_trajectory.set_index("trajectory_id")["tps"]
    assert sorted(got.index) == sorted(want.index)
    rel = (got - want.reindex(got.index)).abs() / want.reindex(got.index).abs().clip(lower=1e-300)
    assert rel.max() <= 1e-12
    for key in ("tps_ci_low", "tps_ci_high", "tps_se"):  # the same runs, the same bootstrap
        assert res.summary.loc[pred, key] == pytest.approx(binary.summary.loc[pred, key], rel=1e-12)
    assert BRIER_FACTOR == 0.25


def test_two_labels_exact_mode_matches_the_binary_exact_mode():
    steps = simulate("webshop-like", n_trajectories=150).steps
    data = tpsviz.from_frame(steps)
    assert data.trajectories["q_z"].notna().any()
    log = multiclass_from_frame(_two_label_frame(steps, "verbal", with_q=True))
    for rule, ab in (("log", (0, 0)), ("brier", (1, 1))):
        # every censored run has its q_z here (binary exact mode refuses one without: docs/theory.md §4)
        res = tps_k(log, rule, censoring="exact", censored_label="failure", n_boot=0)
        binary = tpsviz.compute_tps(data, tpsviz.ScoreSettings(*ab, censoring="exact", n_boot=0), ["verbal"])
        got = res.per_run.set_index("trajectory_id")["tps"].sort_index()
        want = binary.per_trajectory.set_index("trajectory_id")["tps"].sort_index()
        np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12)


# ---------------------------------------------------------------- propriety by simulation

@pytest.fixture(scope="module")
def sim2000():
    log, truth = simulate_multiclass(n_runs=2000, seed=5)
    return multiclass_from_frame(log), truth


@pytest.mark.parametrize("rule", ["log", "brier"])
@pytest.mark.parametrize("censoring", ["complete", "exact"])
def test_truthful_beats_distorted_predictors_by_several_se(sim2000, rule, censoring):
    log, _ = sim2000
    res = tps_k(log, rule, censoring=censoring, n_boot=0)
    wide = res.per_run.pivot(index="trajectory_id", columns="predictor", values="tps")
    for other in ("overconfident", "flat", "binary_view"):
        d = wide["truthful"] - wide[other]  # paired: the same runs
        z = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
        assert z > 4.0, (other, z)
    assert res.summary["tps_mean"].idxmax() == "truthful"


# ---------------------------------------------------------------- the demo generator

def _bayes_q(signals: list[int], t: int, survive: int) -> np.ndarray:
    """q by an explicit loop: P(K | o_1..o_t, survived `survive` steps) mixed over the label laws."""
    post = []
    for K in range(3):
        v = PRIOR[K]
        for o in signals[:t]:
            v *= EMISSION[K][o]
        v *= (1 - HAZARD[K]) ** survive
        post.append(v)
    post = np.array(post) / sum(post)
    return post @ LABEL_LAW


def test_generator_truthful_is_the_exact_bayes_posterior():
    log, truth = simulate_multiclass(n_runs=120, seed=9)
    assert truth["censored"].any()
    sig = {s: i for i, s in enumerate(SIGNALS)}
    for tid, run in list(log.groupby("trajectory_id"))[:60]:
        o = [sig[s] for s in run["signal"]]
        for t in range(1, len(run) + 1):
            want = _bayes_q(o, t, t - 1)
            got = run[[f"conf_truthful__{lab}" for lab in LABELS]].iloc[t - 1].to_numpy()
            np.testing.assert_allclose(got, want, atol=1.5e-6)
        tr = truth.set_index("trajectory_id").loc[tid]
        if tr["censored"]:
            want = _bayes_q(o, len(o), len(o))  # stopped by the budget: T > B
            got = run[[f"q_z__{lab}" for lab in LABELS]].iloc[0].to_numpy()
            np.testing.assert_allclose(got, want, atol=1.5e-6)
            assert pd.isna(run["outcome"]).all()
        else:
            assert (run["outcome"] == tr["label"]).all()


def test_generator_is_deterministic_and_survives_writing():
    a, ta = simulate_multiclass(n_runs=300, seed=1)
    b, tb = simulate_multiclass(n_runs=300, seed=1)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(ta, tb)
    assert 0.08 <= ta["censored"].mean() <= 0.25
    frames = demo_frames()
    assert set(frames) == {"multiclass-like.csv", "multiclass-like_truth.csv"}
    assert {"type", "label", "censored"} <= set(frames["multiclass-like_truth.csv"].columns)
    assert frames["multiclass-like_truth.csv"]["label"].notna().all()  # also for censored runs
    text = a.to_csv(index=False, float_format="%.6g").encode()
    back = read_multiclass((text, "mc.csv"))
    assert back.labels == list(LABELS) and back.n_censored == int(ta["censored"].sum())
    for name in back.predictors:
        P = back.forecasts(name)
        assert np.abs(P.sum(axis=1) - 1).max() <= 1e-12
        np.testing.assert_array_equal(P, multiclass_from_frame(a).forecasts(name))
    q = back.q_vectors()[back.trajectories["censored"].to_numpy()]
    assert np.abs(q.sum(axis=1) - 1).max() <= 1e-12


# ---------------------------------------------------------------- reliability

def test_reliability_ovr_against_pandas():
    log_df, _ = simulate_multiclass(n_runs=150, seed=3)
    log = multiclass_from_frame(log_df)
    table = reliability_ovr(log, "overconfident", n_bins=8, n_boot=300, seed=7)
    comp = log_df[log_df["outcome"].notna()]
    runs = sorted(comp["trajectory_id"].unique())
    edges = np.linspace(0, 1, 9)
    for lab in LABELS:
        p = comp[f"conf_overconfident__{lab}"]
        b = pd.cut(p, edges, right=False, labels=False).fillna(7).astype(int)  # p = 1: the last bin
        d = pd.DataFrame({"run": comp["trajectory_id"], "p": p, "hit": (comp["outcome"] == lab).astype(float), "b": b})
        want = d.groupby("b").agg(mean_forecast=("p", "mean"), observed=("hit", "mean"), n=("p", "size"),
                                  n_runs=("run", "nunique"))
        got = table[table["label"] == lab].set_index("bin")
        assert list(got.index) == list(want.index)
        np.testing.assert_allclose(got["mean_forecast"], want["mean_forecast"], rtol=1e-12)
        np.testing.assert_allclose(got["observed"], want["observed"], rtol=1e-12)
        assert (got["n"] == want["n"]).all() and (got["n_runs"] == want["n_runs"]).all()
        # the interval: whole runs resampled with the project's counts
        per = d.groupby(["run", "b"]).agg(s=("hit", "sum"), n=("hit", "size")).unstack(fill_value=0)
        per = per.reindex(runs, fill_value=0)
        C = np.vstack(list(bootstrap_weights(len(runs), 300, 7)))
        for k in want.index:
            with np.errstate(invalid="ignore"):  # a replicate without a row in the bin
                ratio = (C @ per[("s", k)].to_numpy()) / (C @ per[("n", k)].to_numpy())
            ratio = ratio[np.isfinite(ratio)]
            if want.loc[k, "n_runs"] >= 2:
                lo, hi = np.quantile(ratio, [0.025, 0.975])
                assert got.loc[k, "ci_low"] == pytest.approx(lo, rel=1e-12, abs=1e-15)
                assert got.loc[k, "ci_high"] == pytest.approx(hi, rel=1e-12, abs=1e-15)
    one = reliability_ovr(log, "overconfident", label="partial", n_bins=8, n_boot=300, seed=7)
    pd.testing.assert_frame_equal(one.reset_index(drop=True),
                                  table[table["label"] == "partial"].reset_index(drop=True))


# ---------------------------------------------------------------- reading and malformed input

def _good() -> pd.DataFrame:
    return pd.DataFrame({
        "trajectory_id": ["r1", "r1", "r2", "r2", "r3"],
        "step": [1, 2, 1, 2, 1],
        "outcome": ["win", "win", "loss", "loss", None],
        "conf_m__win": [0.5, 0.6, 0.2, 0.1, 0.3],
        "conf_m__draw": [0.3, 0.3, 0.3, 0.3, 0.3],
        "conf_m__loss": [0.2, 0.1, 0.5, 0.6, 0.4],
    })


def test_reading_a_good_frame_and_files(tmp_path):
    df = _good()
    log = multiclass_from_frame(df)
    assert log.labels == ["win", "draw", "loss"] and log.predictors == ["m"]
    assert list(log.trajectories["censored"]) == [False, False, True]
    assert list(log.outcome_index) == [0, 2, -1]
    assert list(log.steps.columns[:4]) == ["trajectory_id", "step", "t", "traj"]
    assert is_multiclass(df.columns) and not is_multiclass(["trajectory_id", "conf_m", "conf___x"])
    for ext, write in (("csv", lambda p: df.to_csv(p, index=False)),
                       ("tsv", lambda p: df.to_csv(p, index=False, sep="\t")),
                       ("jsonl", lambda p: df.to_json(p, orient="records", lines=True)),
                       ("parquet", lambda p: df.to_parquet(p))):
        path = tmp_path / f"log.{ext}"
        write(path)
        got = read_multiclass(str(path))
        assert got.source == f"log.{ext}" and got.labels == log.labels
        np.testing.assert_array_equal(got.forecasts("m"), log.forecasts("m"))
        assert list(got.trajectories["outcome"].fillna("-")) == ["win", "loss", "-"]
    # numeric labels keep their text ("1", not 1.0)
    num = df.rename(columns=lambda c: c.replace("__win", "__1").replace("__draw", "__2").replace("__loss", "__3"))
    num["outcome"] = [1, 1, 3, 3, None]
    assert list(multiclass_from_frame(num).outcome_index) == [0, 2, -1]
    # the size limit of read_source applies
    with pytest.raises(LogFormatError, match="larger than"):
        read_multiclass((df.to_csv(index=False).encode(), "x.csv"), limits=tpsviz.io.files.Limits(max_bytes=50))


def _error(df: pd.DataFrame) -> str:
    with pytest.raises(LogFormatError) as exc:
        multiclass_from_frame(df, source="bad.csv")
    msg = str(exc.value)
    assert msg.startswith("bad.csv")
    return msg


def test_rows_not_summing_to_one():
    df = _good()
    df.loc[3, "conf_m__win"] = 0.123457
    msg = _error(df)
    assert "sum to 1" in msg and "row 4" in msg and "'m'" in msg and "0.123457" not in msg


def test_partly_empty_vector():
    df = _good()
    df.loc[1, "conf_m__draw"] = np.nan
    msg = _error(df)
    assert "partly empty" in msg and "row 2" in msg and "'m'" in msg


def test_a_fully_empty_vector_is_a_missing_forecast():
    df = _good()
    df.loc[1, ["conf_m__win", "conf_m__draw", "conf_m__loss"]] = np.nan
    log = multiclass_from_frame(df)
    assert any("1 step(s) have no forecast" in n for n in log.notes)
    res = tps_k(log, n_boot=0)
    assert res.summary.loc["m", "n_missing"] == 1 and res.summary.loc["m", "n_steps"] == 3


def test_unknown_outcome_label_names_the_run_not_the_value():
    df = _good()
    df.loc[[2, 3], "outcome"] = "zebra-9137"
    msg = _error(df)
    assert "'r2'" in msg and "not one of the 3 labels" in msg and "zebra" not in msg


def test_differing_label_sets():
    df = _good()
    df["conf_n__win"], df["conf_n__loss"] = 0.5, 0.5
    msg = _error(df)
    assert "predictor 'n' has no column for label(s) 'draw'" in msg and "every predictor needs" in msg


def test_duplicate_steps():
    df = _good()
    df.loc[1, "step"] = 1
    msg = _error(df)
    assert "duplicate" in msg and "row 1" in msg


def test_negative_and_non_numeric_probabilities():
    df = _good()
    df.loc[0, "conf_m__win"], df.loc[0, "conf_m__draw"] = -0.25, 1.05
    msg = _error(df)
    assert "[0, 1]" in msg and "row 1" in msg and "-0.25" not in msg and "1.05" not in msg
    df = _good().astype({"conf_m__win": object})
    df.loc[2, "conf_m__win"] = "abc-secret"
    msg = _error(df)
    assert "not a number" in msg and "row 3" in msg and "abc" not in msg


def test_a_rounding_error_does_not_let_a_wrong_probability_through():
    df = _good()
    df.loc[0, "conf_m__win"] = 1.0 + 1e-12  # rounding: set to 1 (the row then sums to 1.5: refused as such)
    df.loc[2, "conf_m__win"] = np.inf  # not rounding: refused, not clipped to 1 with the other
    msg = _error(df)
    assert "[0, 1]" in msg and "row 3" in msg


def test_other_run_level_defects():
    df = _good()
    df.loc[1, "outcome"] = "loss"
    assert "changes within run 'r1'" in _error(df)
    df = _good()
    df["censored"] = [True, True, False, False, True]
    assert "'censored' is true while 'outcome' is present" in _error(df)
    df = _good()
    df["censored"] = False
    assert "'outcome' is empty but column 'censored'" in _error(df)
    df = _good()
    for lab, v in (("win", 0.5), ("draw", 0.5), ("loss", 0.5)):
        df[f"q_z__{lab}"] = v
    msg = _error(df)
    assert "q vector" in msg and "sum to 1" in msg
    df = _good()
    df["q_z__win"] = 1.0
    assert "lack label" in _error(df)
    assert "at least two" in _error(_good().drop(columns=["conf_m__draw", "conf_m__loss"]))
    assert "missing required column 'step'" in _error(_good().drop(columns=["step"]))


def test_a_binary_log_points_to_score():
    steps = simulate("tau2-like", n_trajectories=20).steps
    msg = _error(steps)
    assert "conf_<name>__<label>" in msg and "tpsviz score" in msg


def test_q_vectors_are_read_and_ignored_on_complete_runs():
    df = _good()
    for lab, v in (("win", 0.2), ("draw", 0.3), ("loss", 0.5)):
        df[f"q_z__{lab}"] = v
    log = multiclass_from_frame(df)
    q = log.q_vectors()
    assert np.isnan(q[:2]).all() and q[2].tolist() == [0.2, 0.3, 0.5]
    assert any("complete run(s) carry a q vector" in n for n in log.notes)
    res = tps_k(log, censoring="exact", n_boot=0)
    p = [0.3, 0.3, 0.4]
    want = sum(qj * math.log(pj) for qj, pj in zip([0.2, 0.3, 0.5], p))
    assert res.per_run.set_index("trajectory_id").loc["r3", "tps"] == pytest.approx(want, rel=1e-14)
