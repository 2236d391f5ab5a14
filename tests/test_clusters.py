"""SEs and bootstraps clustered by task (docs/theory.md §6.1): the clusters of a log
(:func:`tpsviz.core.clusters.run_clusters`), the clustered SE against a plain loop over tasks, its
equality with the SE by run when every task has one run, its invariance to task names and run order,
the coverage of the intervals on simulated logs with a task effect, and what the JSON says.

Coverage figures: ``python -m pytest -q -s -p no:cacheprovider tests/test_clusters.py -k coverage`` prints them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings as hsettings
from hypothesis import strategies as st

from tpsviz.core.clusters import run_clusters, task_column
from tpsviz.core.inference import bootstrap_weights, column_mean_intervals, mean_se, paired_difference
from tpsviz.core.tps import ScoreSettings, compute_tps
from tpsviz.diagnostics.compare import compare
from tpsviz.diagnostics.group_inference import difference_unpaired
from tpsviz.diagnostics.groups import group_difference, group_table
from tpsviz.diagnostics.leaderboard import metric_table, skill_table
from tpsviz.io.tables.longform import from_frame

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- independent computations
def loop_se(values, labels) -> float:
    """The cluster-robust SE of a mean written out with a loop over the tasks (no numpy grouping):
    SE² = K/(K−1) Σ_k (Σ_{i in k} (v_i − m))² / n²."""
    v = [float(x) for x in values]
    n = len(v)
    m = sum(v) / n
    sums: dict = {}
    for x, lab in zip(v, labels):
        sums[lab] = sums.get(lab, 0.0) + (x - m)
    k = len(sums)
    return (k / (k - 1) * sum(e * e for e in sums.values())) ** 0.5 / n


def frame_log(tasks, y, forecasts, extra=None) -> pd.DataFrame:
    """A long frame: run i has task ``tasks[i]`` (None: no task), outcome ``y[i]`` and the steps of
    ``forecasts`` (one probability per step, the same for every run)."""
    rows = []
    for i, (task, yi) in enumerate(zip(tasks, y)):
        for t, f in enumerate(forecasts, start=1):
            row = {"trajectory_id": f"r{i:04d}", "step": t, "outcome": float(yi), "conf_a": f,
                   "conf_b": min(0.99, f + 0.05 * ((i % 3) - 1)), "task": task}
            if extra:
                row |= {k: v[i] for k, v in extra.items()}
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the clusters of a log
def test_auto_takes_the_task_column_when_runs_repeat_tasks_else_the_run():
    y = [1, 0, 1, 1, 0, 0]
    repeated = from_frame(frame_log(["a", "a", "b", "b", "c", " c "], y, [0.6]))
    c = run_clusters(repeated)
    assert c.column == "task" and c.unit == "task" and c.n_clusters == 3 and c.n_runs == 6
    assert list(c.codes) == [0, 0, 1, 1, 2, 2]  # " c " is "c": values are stripped
    assert c.words() == "SE clustered by task (3 tasks)"
    assert c.to_json() | {"reason": None} == {"unit": "task", "column": "task", "clusters": 3, "runs": 6,
                                              "runs_without_task": 0, "reason": None}
    once = from_frame(frame_log(list("abcdef"), y, [0.6]))
    c = run_clusters(once)
    assert not c.clustered and c.unit == "run" and c.n_clusters == 6 and c.words() == "SE by run"
    assert "no task" in c.reason and "2 runs" in c.reason
    # asked for by name, the column clusters even when every task has one run
    assert run_clusters(once, "task").clustered
    assert not run_clusters(repeated, "run").clustered


def test_runs_without_a_task_are_clusters_of_their_own_and_say_so():
    data = from_frame(frame_log(["a", "a", None, "b", "b", ""], [1, 0, 1, 1, 0, 0], [0.6]))
    c = run_clusters(data)
    assert c.n_clusters == 4 and c.n_tasks == 2 and c.n_without_task == 2
    assert c.codes[0] == c.codes[1] and c.codes[3] == c.codes[4] and len({c.codes[2], c.codes[5]}) == 2
    assert c.words() == "SE clustered by task (2 tasks; 2 runs without a task count as tasks of their own)"
    assert c.to_json()["runs_without_task"] == 2
    sub = c.of(np.array([True, True, True, False, False, False]))
    assert list(sub.codes) == [0, 0, 1] and sub.n_without_task == 1 and sub.n_tasks == 1


def test_the_task_column_is_the_readers_then_task_task_id_task_name_any_case():
    df = frame_log(["a", "a", "b", "b"], [1, 0, 1, 0], [0.6]).rename(columns={"task": "Task_ID"})
    df["sample_id"] = np.repeat(["s1", "s2"], 1).tolist() * 2
    data = from_frame(df)
    assert task_column(data) == "Task_ID"
    assert task_column(replace(data, reading={"task_column": "sample_id"})) == "sample_id"
    assert task_column(data, exclude=("Task_ID",)) is None
    assert run_clusters(data, "auto", exclude=("Task_ID",)).unit == "run"


def test_a_cluster_choice_that_is_no_column_is_refused_by_name():
    data = from_frame(frame_log(["a", "a"], [1, 0], [0.6]))
    with pytest.raises(ValueError, match=r"cluster_by 'nope' is not a run-level metadata column.*'task'"):
        run_clusters(data, "nope")
    with pytest.raises(ValueError, match="cluster_by must be"):
        ScoreSettings(cluster_by="")


# --------------------------------------------------------------------------- the SE
def test_clustered_se_against_a_loop_over_tasks():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 13, 200)
    v = rng.normal(size=200) + 0.7 * rng.normal(size=13)[labels]
    codes = pd.factorize(labels)[0]
    assert mean_se(v, codes) == pytest.approx(loop_se(v, labels), rel=1e-12)
    # codes with gaps (a subset's) give the same: K counts the clusters present
    assert mean_se(v, codes * 3 + 1) == pytest.approx(loop_se(v, labels), rel=1e-12)
    assert np.isnan(mean_se(v, np.zeros(200, int)))  # one cluster: no SE
    assert np.isnan(mean_se(v[:1], codes[:1]))


def test_clustered_se_is_the_se_by_run_when_every_task_has_one_run():
    """The K/(K−1) factor makes the two equal exactly (K = n): SE² = n/(n−1)·Σ(v−m)²/n² = sd²/n."""
    v = np.random.default_rng(2).normal(size=57)
    by_run_se = v.std(ddof=1) / np.sqrt(v.size)
    assert mean_se(v, np.arange(57)[::-1]) == pytest.approx(by_run_se, rel=1e-13)
    assert mean_se(v) == pytest.approx(by_run_se, rel=1e-15)


def test_compute_tps_se_and_interval_are_clustered_by_task():
    rng = np.random.default_rng(3)
    tasks = [f"t{k}" for k in rng.integers(0, 15, 90)]
    p_task = {t: rng.beta(2, 2) for t in set(tasks)}
    y = [int(rng.random() < p_task[t]) for t in tasks]
    df = frame_log(tasks, y, [0.55, 0.7, 0.8])
    df.loc[df["trajectory_id"].isin(["r0003", "r0010"]), "conf_b"] = np.nan  # b scores fewer runs
    data = from_frame(df)
    st = ScoreSettings(censoring="simple", n_boot=400, seed=11)
    res = compute_tps(data, st)
    assert res.clusters.column == "task"
    per = res.tps_matrix()
    lab = data.trajectories.set_index("trajectory_id")["task"]
    for name in ("a", "b"):
        v = per[name].dropna()
        assert res.summary.loc[name, "tps_se"] == pytest.approx(loop_se(v.to_numpy(), lab[v.index].tolist()),
                                                                rel=1e-12)
    # the interval: the ratio Σ_k c_k S_k / Σ_k c_k N_k over the same task draws, by hand
    codes = res.clusters.codes
    v = per["b"].reindex(data.trajectories["trajectory_id"]).to_numpy()
    ok = ~np.isnan(v)
    s = np.array([v[ok & (codes == k)].sum() for k in range(res.clusters.n_clusters)])
    n = np.array([(ok & (codes == k)).sum() for k in range(res.clusters.n_clusters)])
    counts = np.vstack(list(bootstrap_weights(res.clusters.n_clusters, 400, 11)))
    # studentized (the default interval): t* = (m* − m)/SE*, SE* the clustered SE of the replicate
    K, m = s.size, s.sum() / n.sum()
    se = np.sqrt(K / (K - 1) * np.sum((s - m * n) ** 2)) / n.sum()
    t = []
    for c in counts:
        ms = c @ s / (c @ n)
        t.append((ms - m) / (np.sqrt(K / (K - 1) * np.sum(c * (s - ms * n) ** 2)) / (c @ n)))
    t_lo, t_hi = np.quantile(t, [0.025, 0.975])
    lo, hi = m - t_hi * se, m - t_lo * se
    assert res.summary.loc["b", "tps_ci_low"] == pytest.approx(lo, rel=1e-9)
    assert res.summary.loc["b", "tps_ci_high"] == pytest.approx(hi, rel=1e-9)
    # by run: the plain SE, and the numbers are those of a log without a task column
    plain = compute_tps(data, replace(st, cluster_by="run")).summary
    untasked = compute_tps(from_frame(df.drop(columns="task")), st).summary
    assert plain.loc["a", "tps_se"] == pytest.approx(per["a"].std(ddof=1) / np.sqrt(90), rel=1e-12)
    pd.testing.assert_frame_equal(plain, untasked)


def test_paired_difference_stays_paired_and_clusters_the_differences():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 9, 60)
    a = rng.normal(size=60) + rng.normal(size=9)[labels]
    b = a - 0.2 + 0.3 * rng.normal(size=60)
    est, z = paired_difference(a, b, n_boot=0, groups=labels)
    assert est.mean == pytest.approx(float(np.mean(a - b)))
    assert est.se == pytest.approx(loop_se(a - b, labels), rel=1e-12)
    assert z == pytest.approx(est.mean / est.se)


def test_compare_skill_metrics_and_groups_say_and_use_the_clusters():
    data = _simulated_log(np.random.default_rng(5), n_tasks=12, epochs=4, model=True)
    st = ScoreSettings(censoring="simple", n_boot=300, seed=2)
    lab = data.trajectories["task"].tolist()
    table = compare(data, st, baseline="b", metrics=("auroc",))
    assert table.attrs["se"]["unit"] == "task" and table.attrs["se"]["clusters"] == 12
    per = compute_tps(data, replace(st, n_boot=0)).tps_matrix().reindex(data.trajectories["trajectory_id"])
    d = (per["a"] - per["b"]).to_numpy()
    assert table.loc["a", "tps_se"] == pytest.approx(loop_se(d, lab), rel=1e-12)
    assert np.isfinite(table.loc["a", "auroc_se"])
    assert skill_table(data, st).attrs["se"]["unit"] == "task"
    mt = metric_table(data, st, n_boot=0)
    assert mt.attrs["se"]["clusters"] == 12
    # unpaired groups (the two models ran different tasks): each side's SE clustered by task
    diff = group_difference(data, "model", "m0", "m1", st, pair_on=None)
    assert "SE clustered by task (12 tasks)" in diff.attrs["pairing"]
    for g, side in (("m0", "tps_a"), ("m1", "tps_b")):
        keep = (data.trajectories["model"] == g).to_numpy()
        va = per["a"].to_numpy()[keep]
        assert diff.loc["a", side] == pytest.approx(va.mean())
    se = [loop_se(per["a"].to_numpy()[(data.trajectories["model"] == g).to_numpy()],
                  [t for t, m in zip(lab, data.trajectories["model"]) if m == g]) for g in ("m0", "m1")]
    assert diff.loc["a", "tps_se"] == pytest.approx(np.hypot(*se), rel=1e-12)
    assert group_table(data, "model", st).attrs["se"]["unit"] == "task"
    # the grouping column cannot be the cluster
    with pytest.raises(ValueError, match="is the grouping column"):
        group_table(data, "model", replace(st, cluster_by="model"))


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.floats(-5, 5)), min_size=3, max_size=40),
       st.randoms(use_true_random=False))
def test_clustered_se_does_not_depend_on_task_names_or_run_order(runs, rnd):
    labels = [f"task {k}" for k, _ in runs]
    v = np.array([x for _, x in runs])
    se = mean_se(v, pd.factorize(pd.Series(labels))[0])
    fresh = [f"renamed-{j}" for j in range(len(set(labels)))]
    rnd.shuffle(fresh)
    names = dict(zip(sorted(set(labels)), fresh))  # one to one: no two tasks merged
    order = list(range(len(runs)))
    rnd.shuffle(order)
    other = mean_se(v[order], pd.factorize(pd.Series([names[labels[i]] for i in order]))[0])
    if np.isnan(se):
        assert np.isnan(other) and len(set(labels)) < 2
    else:
        assert other == pytest.approx(se, rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------- coverage with known truth
FORECASTS = (0.55, 0.65, 0.75)


def _truth(mu: float) -> float:
    """Expected TPS (log score, uniform weights) of predictor a, whose forecasts do not depend on the run:
    TPS_i = Σ_t [Y log F_t + (1 − Y) log(1 − F_t)], linear in Y, so E = Σ_t [μ log F_t + (1 − μ) log(1 − F_t)]."""
    f = np.array(FORECASTS)
    return float(np.sum(mu * np.log(f) + (1 - mu) * np.log1p(-f)))


def _simulated_log(rng, n_tasks=40, epochs=5, model=False):
    """Tasks with a success probability p_k ~ Beta(2, 2) (mean 0.5), each run ``epochs`` times; with
    ``model``, the first half of the tasks run by model m0, the other half by m1."""
    p = rng.beta(2.0, 2.0, n_tasks)
    task = np.repeat(np.arange(n_tasks), epochs)
    y = (rng.random(task.size) < p[task]).astype(int)
    extra = {"model": np.where(task < n_tasks // 2, "m0", "m1")} if model else None
    return from_frame(frame_log([f"task-{k}" for k in task], y, FORECASTS, extra))


def _task_runs(rng, n_tasks: int = 40, epochs: int = 5):
    """TPS_i of predictor a on one simulated log (:func:`_simulated_log`'s law, without building the log)
    and the task of every run. compute_tps gives the same SE and interval from these values
    (test_compute_tps_se_and_interval_are_clustered_by_task): the coverage is measured on them, on many
    more logs than scoring each one would allow."""
    f = np.array(FORECASTS)
    p = rng.beta(2.0, 2.0, n_tasks)
    task = np.repeat(np.arange(n_tasks), epochs)
    y = rng.random(task.size) < p[task]
    return np.where(y, np.log(f).sum(), np.log1p(-f).sum()), task


#: simulated logs per coverage figure: the Monte-Carlo SE of a 95% coverage is √(.95·.05/N) ≈ 0.7 points
COVERAGE_LOGS = 1000


@pytest.mark.slow
def test_coverage_of_the_mean_clustered_by_task_and_by_run():
    """Logs of 40 tasks × 5 epochs (task success p_k ~ Beta(2, 2): ICC of the outcome 0.2, design effect
    1.8): the 95% percentile bootstrap CI of mean TPS (column_mean_intervals, as compute_tps forms it)
    covers the truth in 93–97% of logs when it resamples tasks; resampling runs, far less."""
    rng = np.random.default_rng(20260101)
    truth = _truth(0.5)
    hits = {"task": 0, "run": 0}
    for i in range(COVERAGE_LOGS):
        v, task = _task_runs(rng)
        for unit, groups in (("task", task), ("run", None)):
            lo, hi = column_mean_intervals(v[:, None], np.ones((v.size, 1), bool), 400, 0.95, i, groups)
            hits[unit] += lo[0] <= truth <= hi[0]
    cov = {k: n / COVERAGE_LOGS for k, n in hits.items()}
    said = f"clustered by task {cov['task']:.1%}, by run {cov['run']:.1%} ({COVERAGE_LOGS} logs)"
    print(f"\ncoverage of the 95% CI of mean TPS: {said}")
    assert 0.93 <= cov["task"] <= 0.97, said
    assert cov["run"] <= 0.90, said


@pytest.mark.slow
def test_coverage_of_an_unpaired_group_difference_clustered_by_task_and_by_run():
    """Two models on different tasks (20 tasks × 5 epochs each, p_k ~ Beta(2, 2) for both: true Δ = 0):
    Δ ± 1.96 SE of difference_unpaired (what group_difference computes) covers 0 in 93–97% of logs when
    each group's SE is clustered by task, far less by run."""
    rng = np.random.default_rng(7)
    hits = {"task": 0, "run": 0}
    n_logs = int(1.5 * COVERAGE_LOGS)
    for _ in range(n_logs):
        v, task = _task_runs(rng)
        a, b = task < 20, task >= 20
        r = np.full(v.size, -1.0)  # (the reference's TPS: only the skill uses it)
        for unit, groups in (("task", (task[a], task[b] - 20)), ("run", (None, None))):
            d = difference_unpaired(v[a], r[a], False, v[b], r[b], False, 0, (1, 2), 0.95, groups)
            hits[unit] += abs(d["tps_delta"]) <= 1.959964 * d["tps_se"]
    cov = {k: n / n_logs for k, n in hits.items()}
    said = f"clustered by task {cov['task']:.1%}, by run {cov['run']:.1%} ({n_logs} logs)"
    print(f"\ncoverage of the 95% interval of an unpaired difference: {said}")
    assert 0.93 <= cov["task"] <= 0.97, said
    assert cov["run"] <= 0.90, said


def test_group_difference_on_a_simulated_log_is_difference_unpaired_of_its_clusters():
    """The end-to-end path of the coverage test above: group_difference's SE on a log is the
    clustered arithmetic of difference_unpaired on the same runs."""
    data = _simulated_log(np.random.default_rng(8), n_tasks=10, epochs=3, model=True)
    st = ScoreSettings(censoring="simple", n_boot=0)
    d = group_difference(data, "model", "m0", "m1", st, ["a"]).loc["a"]
    per = compute_tps(data, st, ["a"]).tps_matrix()["a"].reindex(data.trajectories["trajectory_id"]).to_numpy()
    m0 = (data.trajectories["model"] == "m0").to_numpy()
    task = pd.factorize(data.trajectories["task"])[0]
    se = np.hypot(loop_se(per[m0], task[m0]), loop_se(per[~m0], task[~m0]))
    assert d.tps_se == pytest.approx(se, rel=1e-12)
    assert d.tps_delta == pytest.approx(per[~m0].mean() - per[m0].mean(), rel=1e-12)


# --------------------------------------------------------------------------- what the outputs say
def _cli(*args) -> dict:
    proc = subprocess.run([sys.executable, "-m", "tpsviz", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_the_json_of_score_and_compare_says_the_unit_of_the_se(tmp_path):
    rng = np.random.default_rng(9)
    task = np.repeat(np.arange(12), 3)
    y = (rng.random(task.size) < rng.beta(2, 2, 12)[task]).astype(int)
    log = tmp_path / "epochs.csv"
    frame_log([f"task-{k}" for k in task], y, FORECASTS, {"model": np.where(task < 6, "m0", "m1")}).to_csv(log, index=False)
    obj = _cli("score", log, "--json", "--n-boot", "0")
    assert obj["settings"]["se"] | {"reason": None} == {"unit": "task", "column": "task", "clusters": 12, "runs": 36,
                                                        "runs_without_task": 0, "reason": None}
    assert obj["settings"]["cluster_by"] == "auto"
    obj = _cli("score", log, "--json", "--n-boot", "0", "--cluster-by", "run")
    assert (obj["settings"]["se"]["unit"], obj["settings"]["se"]["clusters"]) == ("run", 36)
    obj = _cli("compare", log, "--json", "--n-boot", "0", "--by", "model", "--pair-on", "none")
    assert obj["settings"]["se"]["unit"] == "task"
    assert [(d["se"]["unit"], d["se"]["clusters"]) for d in obj["differences"].values()] == [("task", 12)]
    assert all("SE clustered by task (12 tasks)" in d["pairing"] for d in obj["differences"].values())
