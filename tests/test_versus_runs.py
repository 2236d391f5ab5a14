"""Is X better than Y? tpsviz.diagnostics.versus_runs against plain loops, a simulation of its false-winner
rate, and its refusal to pair task ids that merely coincide."""

import math

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.core.data import TrajectoryData
from tpsviz.diagnostics.combine import combine_logs
from tpsviz.diagnostics.groups import group_labels
from tpsviz.diagnostics.versus_runs import (
    paired_difference, run_measures, same_task_set, success_sentence, unpaired_difference, versus_runs)

TAU1 = "demo_data/tau-bench-airline-gpt-4o.json"
TAU2 = "tests/fixtures/tau2/tau2_airline_gpt-oss-120b_langchain_trimmed.json"


def _loop_clustered_se(x, tasks):
    """The cluster-robust SE of a mean, written out: K/(K−1) · Σ_k (Σ_{i∈k} (x_i − m))² / n²."""
    n, m = len(x), sum(x) / len(x)
    sums = {}
    for v, t in zip(x, tasks):
        sums[t] = sums.get(t, 0.0) + (v - m)
    k = len(sums)
    return math.sqrt(k / (k - 1) * sum(e * e for e in sums.values())) / n


def test_unpaired_difference_is_the_plain_formula():
    rng = np.random.default_rng(3)
    ya = rng.integers(0, 2, 40).astype(float)
    yb = rng.integers(0, 2, 30).astype(float)
    ta = [f"t{i % 9}" for i in range(40)]
    tb = [f"t{i % 7}" for i in range(30)]
    ya[5] = np.nan  # left out and counted
    rec = unpaired_difference(ya, yb, ta, tb)
    keep = [i for i in range(40) if i != 5]
    xa, xta = [ya[i] for i in keep], [ta[i] for i in keep]
    se_a, se_b = _loop_clustered_se(xa, xta), _loop_clustered_se(list(yb), tb)
    assert rec["mean_a"] == pytest.approx(sum(xa) / 39) and rec["mean_b"] == pytest.approx(yb.mean())
    assert rec["delta"] == pytest.approx(yb.mean() - sum(xa) / 39)
    assert rec["se"] == pytest.approx(math.sqrt(se_a ** 2 + se_b ** 2), rel=1e-12)
    assert rec["z"] == pytest.approx(rec["delta"] / rec["se"])
    assert (rec["n_a"], rec["n_b"], rec["n_missing"], rec["paired"]) == (39, 30, 1, False)
    # by run: sd/√n on each side
    by_run = unpaired_difference(yb, ya[keep])
    assert by_run["se"] == pytest.approx(math.hypot(np.std(yb, ddof=1) / math.sqrt(30),
                                                    np.std(ya[keep], ddof=1) / math.sqrt(39)))


def test_paired_difference_is_the_loop_over_common_tasks():
    ya = [1, 0, 1, 1, 0, 0, 1, 1.0]
    ta = ["a", "a", "b", "c", "c", "d", "e", None]  # task e is a's only, the last run has none
    yb = [1, 1, 0, 1, 0, 1.0]
    tb = ["a", "b", "b", "c", "d", "f"]
    rec = paired_difference(ya, ta, yb, tb)
    per = {}
    for side, (ys, ts) in enumerate(((ya, ta), (yb, tb))):
        for y, t in zip(ys, ts):
            if t is not None:
                per.setdefault(t, ([], []))[side].append(y)
    d = [np.mean(b) - np.mean(a) for a, b in per.values() if a and b]
    assert rec["n_pairs"] == len(d) == 4
    assert rec["delta"] == pytest.approx(np.mean(d))
    assert rec["se"] == pytest.approx(np.std(d, ddof=1) / math.sqrt(4))
    assert rec["mean_b"] - rec["mean_a"] == pytest.approx(rec["delta"])
    assert (rec["n_a"], rec["n_b"], rec["n_missing"]) == (6, 5, 3)


def test_equal_rates_rarely_name_a_winner():
    """Two agents with the same success rate on tasks of different difficulty (runs of a task correlated):
    the clustered SE keeps the false-winner rate near the nominal 5%; an SE by run would not."""
    rng = np.random.default_rng(20260101)
    reps, clustered, by_run = 300, 0, 0
    k, r = 25, 4
    for _ in range(reps):
        sides = []
        for _side in range(2):
            p = rng.beta(0.6, 0.6, k)  # each side's own tasks, mean rate 0.5 on both sides
            y = (rng.random((k, r)) < p[:, None]).astype(float).ravel()
            sides.append((y, np.repeat(np.arange(k), r).astype(str)))
        (ya, ta), (yb, tb) = sides
        clustered += abs(unpaired_difference(ya, yb, ta, tb)["z"]) >= 2
        by_run += abs(unpaired_difference(ya, yb)["z"]) >= 2
    assert clustered / reps <= 0.10
    assert by_run / reps > clustered / reps  # ignoring the tasks overstates the evidence


def test_paired_coverage_with_a_known_difference():
    """Paired by task, with b truly 10 points better on every task: the ±2 SE interval covers +0.10 in
    about 95% of replicates."""
    rng = np.random.default_rng(7)
    reps, cover, k, r = 300, 0, 40, 3
    for _ in range(reps):
        p = rng.uniform(0.1, 0.8, k)
        tasks = np.repeat(np.arange(k), r).astype(str)
        ya = (rng.random((k, r)) < p[:, None]).astype(float).ravel()
        yb = (rng.random((k, r)) < (p + 0.1)[:, None]).astype(float).ravel()
        rec = paired_difference(ya, tasks, yb, tasks)
        cover += abs(rec["delta"] - 0.1) <= 2 * rec["se"]
    assert 0.88 <= cover / reps <= 0.99


def test_tau_bench_and_tau2_task_ids_are_not_paired():
    a, b = tpsviz.load(TAU1), tpsviz.load(TAU2)
    both = combine_logs(a, b, allow_no_predictor=True)
    labels = group_labels(both, "log")
    same, why = same_task_set(both, "log", "baseline", "candidate", labels)
    assert not same and "tau-bench" in why and "tau2-bench" in why
    for pair_on in ("auto", "task_id"):
        t = versus_runs(both, "log", "baseline", "candidate", labels, pair_on=pair_on)
        assert not t.attrs["same_tasks"] and t.attrs["pair_on"] is None
        assert t.attrs["pairing"].startswith("unpaired: the two logs come from different harnesses")
    row = t.set_index("measure").loc["success"]
    ya = a.trajectories.loc[~a.trajectories["censored"], "outcome"].to_numpy(float)
    yb = b.trajectories.loc[~b.trajectories["censored"], "outcome"].to_numpy(float)
    assert row["mean_a"] == pytest.approx(ya.mean()) and row["mean_b"] == pytest.approx(yb.mean())
    ta = a.trajectories.loc[~a.trajectories["censored"], "task_id"].astype(str).tolist()
    tb = b.trajectories.loc[~b.trajectories["censored"], "task_id"].astype(str).tolist()
    assert row["se"] == pytest.approx(math.hypot(_loop_clustered_se(list(ya), ta), _loop_clustered_se(list(yb), tb)))
    # the tau2 reader records cost and duration, the tau-bench reader neither: side a has none of them
    assert set(t["measure"]) == {"success", "steps", "cost", "duration"}
    assert (t.set_index("measure").loc[["cost", "duration"], "n_a"] == 0).all()


def test_groups_of_one_log_pair_by_task():
    a = tpsviz.load(TAU1)
    labels = group_labels(a, "trial")
    t = versus_runs(a, "trial", "0", "1", labels)
    assert t.attrs["same_tasks"] and t.attrs["pair_on"] == "task_id"
    row = t.set_index("measure").loc["steps"]
    assert bool(row["paired"]) and row["n_pairs"] == 50
    x = a.trajectories
    d = (x[x["trial"] == 1].set_index("task_id")["length"] - x[x["trial"] == 0].set_index("task_id")["length"])
    assert row["delta"] == pytest.approx(d.mean()) and row["se"] == pytest.approx(d.std(ddof=1) / math.sqrt(50))
    assert versus_runs(a, "trial", "0", "1", labels, pair_on="none").attrs["pair_on"] is None


def test_different_domains_are_not_the_same_tasks():
    a = tpsviz.load(TAU1)
    t = a.trajectories.copy()
    t["domain"] = np.where(t["trial"] < 2, "airline", "retail")
    d = TrajectoryData(a.steps, t, a.predictors, a.signals, a.source, a.notes, a.reading)
    same, why = same_task_set(d, "trial", "0", "3", group_labels(d, "trial"))
    assert not same and "different domains" in why


def test_cost_and_duration_are_compared_where_recorded():
    a = tpsviz.load(TAU1)
    t = a.trajectories.copy()
    t["agent_cost"] = np.where(t["trial"] == 0, 0.10, 0.30) + 0.01 * (t["task_id"].astype(int) % 3)
    t["duration"] = "n/a"  # not a number anywhere: not compared
    d = TrajectoryData(a.steps, t, a.predictors, a.signals, a.source, a.notes, a.reading)
    m = run_measures(d)
    assert list(m.columns) == ["success", "steps", "cost"] and m.attrs["columns"]["cost"] == "agent_cost"
    row = versus_runs(d, "trial", "0", "1", group_labels(d, "trial")).set_index("measure").loc["cost"]
    assert row["delta"] == pytest.approx(0.2)


def test_a_winner_only_at_two_standard_errors():
    base = {"measure": "success", "column": "outcome", "paired": False, "n_pairs": 0, "n_a": 100, "n_b": 100,
            "n_missing": 0}
    attrs = {"a": "A", "b": "B", "clusters": {"unit": "task"}, "n_censored": {"A": 0, "B": 0}}

    def said(delta, se):
        t = pd.DataFrame([base | {"mean_a": 0.4, "mean_b": 0.4 + delta, "delta": delta, "se": se,
                                  "z": delta / se}])
        t.attrs.update(attrs)
        return success_sentence(t)

    assert said(0.10, 0.049).startswith("B succeeds more often: 50.0% against 40.0% (A), Δ = +10.0 points (SE 4.9, "
                                        "unpaired, clustered by task)")
    assert said(-0.10, 0.049).startswith("A succeeds more often: 40.0% against 30.0% (B), Δ = +10.0 points")
    assert said(0.10, 0.051).startswith("no clear difference in success: A 40.0% against B 50.0%, Δ = +10.0 points")


def test_no_winner_without_a_standard_error():
    t = pd.DataFrame([{"measure": "success", "column": "outcome", "mean_a": 0.25, "mean_b": 0.75, "delta": 0.5,
                       "se": 0.0, "z": np.nan, "paired": True, "n_pairs": 20, "n_a": 40, "n_b": 40, "n_missing": 0}])
    t.attrs.update(a="A", b="B", clusters={"unit": "task"}, n_censored={})
    said = success_sentence(t)
    assert said.startswith("success: A 25.0% against B 75.0%, Δ = +50.0 points (SE 0.0, paired by task, 20 tasks)")
    assert "no winner called: the SE is 0" in said and "nan" not in said
