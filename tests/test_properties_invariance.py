"""The verdict and the TPS numbers do not depend on how a log is laid out (issue 48 point 6).

A run is a set of rows named by an id; neither the order of the runs in the file nor the spelling
of the ids is information. On generated logs written to CSV and read by ``tpsviz.evaluate``:

(a) permuting the order of the runs (and of the rows within the file) changes nothing at all:
    tpsviz sorts the runs by id when it reads a log, so even the seeded bootstrap intervals and
    the verdicts' resampling tests see the same runs in the same order, bit for bit;
(b) renaming the ids by a bijection changes the sorted order of the runs, and with it which run
    each seeded bootstrap draw picks. That is legitimate: the intervals and the verdict tests'
    p-values are Monte-Carlo estimates whose draws are tied to the runs' order. So here the point
    estimates (mean TPS, SE, step mean, skill, AUROC, T-ECE, the verdicts' bias and slope) must be
    equal up to the order of a floating-point sum. A label may move with the draws where a test
    statistic sits at its critical value, and a truthful forecast sits at the null, where its
    p-values are uniform: measured here, seed 1 with 40 runs labels ``truthful`` "uninformative",
    and "pessimistic" once its ids are respelled. So the labels are compared bit for bit under an
    order-preserving renaming (where everything, intervals included, must be identical) and, under
    any renaming, for a predictor far from every boundary (``bold``: 0.35 above the truth).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tpsviz

N_BOOT = 50
POINTS = ["tps_mean", "tps_se", "tps_step_mean", "n_trajectories", "n_censored", "n_steps", "n_missing"]
SKILL = ["tps_ref", "skill", "ref_rate"]
METRICS = ["auroc", "auprc", "tece_pooled", "auroc_final", "tece_final"]


def generated_log(seed: int, n_runs: int, censor_share: float) -> pd.DataFrame:
    """Runs of 1–6 steps; ``truthful`` reports the run's success probability, ``bold`` 0.35 more
    (at most 0.99), ``noisy`` has missing forecasts; some runs are cut off with a q_Z."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_runs):
        p = rng.beta(1.5, 1.5)
        cut = rng.random() < censor_share
        y = np.nan if cut else float(rng.random() < p)
        for t in range(1, int(rng.integers(1, 7)) + 1):
            rows.append({"trajectory_id": f"run{i:03d}", "step": t, "outcome": y, "censored": cut,
                         "q_z": round(p, 3) if cut else np.nan, "task": f"task{i % 7}",
                         "conf_truthful": p, "conf_bold": min(p + 0.35, 0.99),
                         "conf_noisy": np.nan if rng.random() < 0.2 else float(np.clip(p + rng.normal(0, 0.2), 0, 1))})
    return pd.DataFrame(rows)


def evaluated(df: pd.DataFrame, censoring: str, cluster_by: str):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.csv"
        df.to_csv(path, index=False)
        return tpsviz.evaluate(str(path), n_boot=N_BOOT, censoring=censoring, cluster_by=cluster_by)


def numbers(ev) -> dict:
    """Everything the evaluation decides, by predictor: the TPS summary, the skill, the metrics, and
    the verdict (label and the numbers behind it)."""
    out = {}
    for name in ev.summary.index:
        v = ev.verdicts[name]
        out[name] = {**{k: ev.summary.loc[name, k] for k in POINTS + ["tps_ci_low", "tps_ci_high"]},
                     **{k: ev.skill.loc[name, k] for k in SKILL + ["skill_ci_low", "skill_ci_high"]},
                     **{k: ev.metrics.loc[name, k] for k in METRICS},
                     "label": v.label, "bias": v.bias, "slope": v.slope}
    return out


def renamed(df: pd.DataFrame, rng: np.random.Generator, keep_order: bool) -> pd.DataFrame:
    ids = sorted(df["trajectory_id"].unique())
    new = [f"{w}-{k}" for k, w in enumerate(rng.choice(["α", "zeta", "A", "b b", "7", "run"], size=len(ids)))]
    if keep_order:
        new = [f"id{k:04d}x" for k in range(len(ids))]  # a bijection that keeps the sorted order
    assert len(set(new)) == len(ids)
    return df.assign(trajectory_id=df["trajectory_id"].map(dict(zip(ids, new))))


def permuted_runs(df: pd.DataFrame, rng: np.random.Generator, shuffle_rows: bool) -> pd.DataFrame:
    ids = df["trajectory_id"].unique()
    order = {tid: k for k, tid in enumerate(rng.permutation(ids))}
    out = df.assign(_k=df["trajectory_id"].map(order)).sort_values(["_k", "step"], kind="stable").drop(columns="_k")
    return out.sample(frac=1.0, random_state=int(rng.integers(2**31))) if shuffle_rows else out


def assert_points_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        for k in POINTS + SKILL + METRICS + ["bias", "slope"]:
            x, y = float(a[name][k]), float(b[name][k])
            assert (np.isnan(x) and np.isnan(y)) or x == pytest.approx(y, rel=1e-10, abs=1e-13), (name, k, x, y)


LOGS = dict(seed=st.integers(0, 2**31 - 1), n_runs=st.integers(100, 160), censor_share=st.sampled_from([0.0, 0.2]),
            censoring=st.sampled_from(["simple", "exact", "upper"]), cluster_by=st.sampled_from(["run", "auto"]))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**LOGS, shuffle_rows=st.booleans())
def test_the_order_of_runs_changes_nothing(seed, n_runs, censor_share, censoring, cluster_by, shuffle_rows):
    df = generated_log(seed, n_runs, censor_share)
    before = numbers(evaluated(df, censoring, cluster_by))
    after = numbers(evaluated(permuted_runs(df, np.random.default_rng(seed + 1), shuffle_rows), censoring, cluster_by))
    assert_points_equal(before, after)
    for name in before:  # the seeded intervals too: the runs are read in id order
        for k in ("tps_ci_low", "tps_ci_high", "skill_ci_low", "skill_ci_high", "label"):
            assert before[name][k] == after[name][k] or (pd.isna(before[name][k]) and pd.isna(after[name][k])), (name, k)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**LOGS, keep_order=st.booleans())
def test_renaming_the_runs_changes_no_estimate_and_no_label(seed, n_runs, censor_share, censoring, cluster_by,
                                                            keep_order):
    df = generated_log(seed, n_runs, censor_share)
    before = numbers(evaluated(df, censoring, cluster_by))
    after = numbers(evaluated(renamed(df, np.random.default_rng(seed + 2), keep_order), censoring, cluster_by))
    assert_points_equal(before, after)
    for name in before:
        if keep_order:  # the same runs in the same order: the same draws, labels and intervals
            for k in ("label", "tps_ci_low", "tps_ci_high", "skill_ci_low", "skill_ci_high"):
                assert before[name][k] == after[name][k] or (pd.isna(before[name][k]) and pd.isna(after[name][k])), (
                    name, k)
    assert before["bold"]["label"] == after["bold"]["label"] == "optimistic"

def test_a_renaming_that_reorders_the_runs_moves_the_bootstrap_draws():
    """Why (b) compares point estimates only: the same log with its ids reversed gives other
    seeded bootstrap intervals (a test that would hold if the intervals ignored the runs' order)."""
    df = generated_log(3, 60, 0.2)
    before = numbers(evaluated(df, "simple", "run"))
    ids = sorted(df["trajectory_id"].unique())
    back = df.assign(trajectory_id=df["trajectory_id"].map(dict(zip(ids, [f"z{len(ids) - k:04d}" for k in range(len(ids))]))))
    after = numbers(evaluated(back, "simple", "run"))
    assert_points_equal(before, after)
    assert any(before[n]["tps_ci_low"] != after[n]["tps_ci_low"] for n in before)
