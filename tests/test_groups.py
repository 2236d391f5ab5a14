"""groups: the leaderboard by group, group differences and combined logs, against hand
computations (per-run TPS sliced by hand, explicit bootstrap counts, loops over tasks)."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings as hsettings
from hypothesis import strategies as st

from tpsviz import ScoreSettings, TrajectoryData, compute_tps, from_frame
from tpsviz.diagnostics.leaderboard import skill_table
from tpsviz.diagnostics.combine import combine_logs
from tpsviz.diagnostics.groups import MAX_GROUPS, MISSING_LABEL, group_difference, group_labels, group_table
from tpsviz.core.inference import bootstrap_weights
from tpsviz.synthetic.agent import simulate

SIMPLE = ScoreSettings(censoring="simple", n_boot=0, cluster_by="run")  # by run: the hand computations below


def _with(data: TrajectoryData, column: str, values) -> TrajectoryData:
    """The log with one more trajectory-level metadata column."""
    traj = data.trajectories.assign(**{column: list(values)})
    return replace(data, trajectories=traj)


@pytest.fixture(scope="module")
def web():
    """Runs with censoring (simple score), three models at random."""
    data = simulate("webshop-like", n_trajectories=150, seed=21).to_data()
    rng = np.random.default_rng(5)
    return _with(data, "model", rng.choice(["m-1", "m-2", "m-3"], data.n_trajectories))


def _per_run(data, settings, name):
    """TPS_i of ``name`` by trajectory id, scored on the whole log."""
    pt = compute_tps(data, settings, [name]).per_trajectory
    return pt.set_index("trajectory_id")["tps"]


def _ref_log_uniform_simple(traj: pd.DataFrame) -> np.ndarray:
    """TPS_ref,i by hand: log score, uniform weights, simple censoring (Y = 0 if censored),
    constant forecast = the group's own share of successes."""
    y = np.where(traj["censored"], 0.0, traj["outcome"].to_numpy(dtype=float))
    r = y.mean()
    return traj["length"].to_numpy() * (y * np.log(r) + (1 - y) * np.log(1 - r))


# --------------------------------------------------------------------------- group_table
def test_group_table_against_hand_computation(web):
    table = group_table(web, "model", SIMPLE)
    tps = _per_run(web, SIMPLE, "truthful")
    traj = web.trajectories
    for g in ("m-1", "m-2", "m-3"):
        sel = traj[traj["model"] == g]
        v = tps.loc[sel["trajectory_id"]].to_numpy()
        row = table.loc[(g, "truthful")]
        assert row["tps_mean"] == pytest.approx(v.mean(), abs=1e-12)
        assert row["tps_se"] == pytest.approx(v.std(ddof=1) / np.sqrt(v.size), rel=1e-12)
        ref = _ref_log_uniform_simple(sel)
        assert row["tps_ref"] == pytest.approx(ref.mean(), rel=1e-9)
        assert row["skill"] == pytest.approx(1 - v.sum() / ref.sum(), rel=1e-9)
        done = sel[~sel["censored"]]
        assert row["n_runs"] == len(sel) and row["n_complete"] == len(done)
        assert row["n_censored"] == int(sel["censored"].sum()) > 0
        assert row["success_rate"] == pytest.approx(done["outcome"].mean(), abs=1e-15)
    assert table.attrs["groups"] == traj["model"].value_counts().sort_index().to_dict()


def test_group_table_uses_each_groups_own_reference(web):
    """The reference rate differs by group: each group's own success share."""
    table = group_table(web, "model", SIMPLE, predictors=["verbal"])
    rates = {g: float(np.where(s["censored"], 0, s["outcome"]).mean())
             for g, s in web.trajectories.groupby("model")}
    assert len(set(np.round(list(rates.values()), 6))) == 3
    for g, rate in rates.items():
        assert table.loc[(g, "verbal"), "ref_rate"] == pytest.approx(rate, abs=1e-15)


def test_group_table_skill_bootstrap_by_explicit_counts(web):
    n_boot, seed = 60, 17
    table = group_table(web, "model", SIMPLE, predictors=["noisy"], n_boot=n_boot, seed=seed)
    tps = _per_run(web, SIMPLE, "noisy")
    for k, (g, sel) in enumerate(web.trajectories.groupby("model")):  # sorted: seed + k
        v = tps.loc[sel["trajectory_id"]].to_numpy()
        c = np.vstack(list(bootstrap_weights(v.size, n_boot, seed + k)))
        # the reference rate is re-estimated in every replicate (its own share of successes, simple score)
        y = np.where(sel["censored"], 0.0, sel["outcome"].to_numpy(dtype=float))
        length = sel["length"].to_numpy()
        r = (c @ y) / c.sum(axis=1)
        ref = np.log(r) * (c @ (length * y)) + np.log1p(-r) * (c @ (length * (1 - y)))
        reps = 1 - (c @ v) / ref
        row = table.loc[(g, "noisy")]
        assert row["skill_se"] == pytest.approx(reps.std(ddof=1), rel=1e-8)
        assert row["skill_ci_low"] == pytest.approx(np.quantile(reps, 0.025), rel=1e-8)
        # the TPS interval is studentized: t* = (m* − m)/SE* with the replicate's own SE (by run)
        m, n = v.mean(), v.size
        ms = c @ v / n
        se_s = np.sqrt(n / (n - 1) * np.array([np.sum(ci * (v - mi) ** 2) for ci, mi in zip(c, ms)])) / n
        t_lo = np.quantile((ms - m) / se_s, 0.025)
        assert row["tps_ci_high"] == pytest.approx(m - t_lo * v.std(ddof=1) / np.sqrt(n), rel=1e-8)


def test_missing_values_are_their_own_group(web):
    model = web.trajectories["model"].to_numpy(dtype=object).copy()
    model[:7] = None
    model[7:10] = "  "
    data = _with(web, "model", model)
    table = group_table(data, "model", SIMPLE, predictors=["truthful"])
    assert table.loc[(MISSING_LABEL, "truthful"), "n_runs"] == 10
    assert table["n_runs"].sum() == data.n_trajectories
    assert list(table.index.get_level_values("group"))[-1] == MISSING_LABEL


def test_small_groups_are_listed_not_dropped_silently(web):
    model = web.trajectories["model"].to_numpy(dtype=object).copy()
    model[0] = "lonely"
    table = group_table(_with(web, "model", model), "model", SIMPLE, predictors=["truthful"],
                        min_runs=2)
    assert "lonely" not in table.index.get_level_values("group")
    assert table.attrs["small_groups"] == {"lonely": 1}
    assert table["n_runs"].sum() + 1 == web.n_trajectories
    with pytest.raises(ValueError, match="no group of column 'model' has 1000 runs or more"):
        group_table(web, "model", SIMPLE, min_runs=1000)


_SMALL = {}


def _small_log():
    if "log" not in _SMALL:
        _SMALL["log"] = simulate("tau2-like", n_trajectories=40, seed=2).to_data()
    return _SMALL["log"]


@hsettings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["a", "b", "c", None, "d"]), min_size=40, max_size=40),
       st.integers(1, 4))
def test_n_runs_add_up_for_any_partition(values, min_runs):
    data = _small_log()
    labels = ["(missing)" if v is None else v for v in values]
    assume(len(set(labels)) >= 2 and max(labels.count(x) for x in labels) >= min_runs)
    table = group_table(_with(data, "grp", values), "grp", SIMPLE, predictors=["truthful"],
                        min_runs=min_runs)
    assert table["n_runs"].sum() + sum(table.attrs["small_groups"].values()) == 40
    assert table["n_scored"].sum() == table["n_runs"].sum()
    assert all(n < min_runs for n in table.attrs["small_groups"].values())


# --------------------------------------------------------------------------- differences
def test_unpaired_difference_by_hand(web):
    n_boot, seed = 50, 3
    diff = group_difference(web, "model", "m-1", "m-3", SIMPLE, n_boot=n_boot, seed=seed)
    assert diff.attrs["paired"] is False and diff.attrs["pair_on"] is None
    traj = web.trajectories
    for name in ("truthful", "verbal"):
        tps = _per_run(web, SIMPLE, name)
        sides = []
        for g, k in (("m-1", 0), ("m-3", 2)):
            sel = traj[traj["model"] == g]
            v = tps.loc[sel["trajectory_id"]].to_numpy()
            ref = _ref_log_uniform_simple(sel)
            c = np.vstack(list(bootstrap_weights(v.size, n_boot, seed + k)))
            sides.append((v, ref, 1 - (c @ v) / (c @ ref)))
        (va, ra, reps_a), (vb, rb, reps_b) = sides
        row = diff.loc[name]
        assert row["tps_delta"] == pytest.approx(vb.mean() - va.mean(), abs=1e-12)
        se = np.sqrt(va.var(ddof=1) / va.size + vb.var(ddof=1) / vb.size)
        assert row["tps_se"] == pytest.approx(se, rel=1e-12)
        assert row["tps_z"] == pytest.approx((vb.mean() - va.mean()) / se, rel=1e-12)
        skill_a, skill_b = 1 - va.sum() / ra.sum(), 1 - vb.sum() / rb.sum()
        assert row["skill_delta"] == pytest.approx(skill_b - skill_a, rel=1e-9)
        assert row["skill_se"] == pytest.approx((reps_b - reps_a).std(ddof=1), rel=1e-8)
        assert (row["n_a"], row["n_b"], row["n_pairs"]) == (va.size, vb.size, 0)


def test_unpaired_skill_matches_group_table(web):
    s = replace(SIMPLE, n_boot=40)
    table = group_table(web, "model", s, predictors=["noisy"])
    diff = group_difference(web, "model", "m-2", "m-3", s, predictors=["noisy"])
    assert diff.loc["noisy", "skill_a"] == pytest.approx(table.loc[("m-2", "noisy"), "skill"])
    assert diff.loc["noisy", "tps_b"] == pytest.approx(table.loc[("m-3", "noisy"), "tps_mean"])


@pytest.fixture(scope="module")
def tasks():
    """tau2-like runs (≈2 per task) with a model column: some tasks in both models."""
    data = simulate("tau2-like", n_trajectories=240, seed=8).to_data()
    rng = np.random.default_rng(1)
    return _with(data, "model", rng.choice(["x", "y"], data.n_trajectories))


def test_paired_difference_by_brute_force_over_tasks(tasks):
    n_boot, seed = 50, 11
    diff = group_difference(tasks, "model", "x", "y", SIMPLE, pair_on="task", n_boot=n_boot,
                            seed=seed)
    assert diff.attrs["paired"] is True and diff.attrs["pair_on"] == "task"
    traj = tasks.trajectories.set_index("trajectory_id")
    refs = pd.concat([pd.Series(_ref_log_uniform_simple(s), index=s["trajectory_id"])
                      for _, s in tasks.trajectories.groupby("model")])
    for name in ("truthful", "verbal"):
        runs = _per_run(tasks, SIMPLE, name).to_frame("tps").join(traj[["model", "task"]])
        runs["ref"] = refs
        by_task = runs.groupby(["model", "task"])[["tps", "ref"]].mean()
        x, y = by_task.loc["x"], by_task.loc["y"]
        common = x.index.intersection(y.index)
        d = []
        for task in common:  # brute force: one task at a time
            d.append(y.loc[task, "tps"] - x.loc[task, "tps"])
        d = np.array(d)
        row = diff.loc[name]
        assert row["n_pairs"] == len(common) >= 10
        assert row["tps_delta"] == pytest.approx(d.mean(), abs=1e-12)
        assert row["tps_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(d.size), rel=1e-10)
        in_common = runs["task"].isin(common)
        assert row["n_a"] == int((in_common & (runs["model"] == "x")).sum())
        assert row["n_left_out"] == int((~in_common).sum()) > 0
        xs, ys = x.loc[common], y.loc[common]
        skill_d = (1 - ys["tps"].sum() / ys["ref"].sum()) - (1 - xs["tps"].sum() / xs["ref"].sum())
        assert row["skill_delta"] == pytest.approx(skill_d, rel=1e-9)
        c = np.vstack(list(bootstrap_weights(len(common), n_boot, seed)))
        reps = ((1 - c @ ys["tps"].to_numpy() / (c @ ys["ref"].to_numpy()))
                - (1 - c @ xs["tps"].to_numpy() / (c @ xs["ref"].to_numpy())))
        assert row["skill_se"] == pytest.approx(reps.std(ddof=1), rel=1e-8)
        assert row["tps_ci_low"] == pytest.approx(np.quantile(c @ d / d.size, 0.025), rel=1e-8)


def test_pair_on_auto(tasks):
    auto = group_difference(tasks, "model", "x", "y", SIMPLE, pair_on="auto")
    assert auto.attrs["pair_on"] == "task" and "paired by task" in auto.attrs["pairing"]
    # too few common tasks: auto falls back to unpaired and says why
    t = tasks.trajectories
    few = _with(tasks, "task", np.where(t["model"] == "x", "x-" + t["task"], t["task"]))
    few.trajectories.loc[[0, 1], "task"] = "shared"
    few.trajectories.loc[few.trajectories.index[(t["model"] == "y").to_numpy()][:2], "task"] = "shared"
    fallback = group_difference(few, "model", "x", "y", SIMPLE, pair_on="auto")
    assert fallback.attrs["paired"] is False and "only 1 task" in fallback.attrs["pairing"]
    with pytest.raises(ValueError, match="only 1 task"):
        group_difference(few, "model", "x", "y", SIMPLE, pair_on="task")


def _distorted_log(seed: int, n: int, shift: float) -> TrajectoryData:
    """Two models on different runs: A forecasts q_t, B forecasts σ(logit q_t + shift)."""
    sim = simulate("tau2-like", n_trajectories=n, seed=seed)
    df = sim.steps.copy()
    ids = df["trajectory_id"].unique()
    model = dict(zip(ids, np.random.default_rng(seed).choice(["A", "B"], ids.size)))
    df["model"] = df["trajectory_id"].map(model)
    q = np.clip(df["conf_truthful"].to_numpy(), 1e-9, 1 - 1e-9)
    shifted = 1 / (1 + np.exp(-(np.log(q / (1 - q)) + shift)))
    df["conf_agent"] = np.where(df["model"] == "B", shifted, q)
    return from_frame(df[["trajectory_id", "step", "outcome", "censored", "conf_agent", "model",
                          "task"]])


def test_distorted_group_is_worse():
    diff = group_difference(_distorted_log(0, 800, 1.5), "model", "A", "B", SIMPLE)
    assert diff.loc["agent", "tps_delta"] < 0
    assert diff.loc["agent", "tps_z"] < -2


def test_same_process_is_rarely_significant():
    z = [group_difference(_distorted_log(seed, 300, 0.0), "model", "A", "B",
                          SIMPLE).loc["agent", "tps_z"] for seed in range(8)]
    assert np.isfinite(z).all()
    assert sum(abs(v) > 2 for v in z) <= 2


def test_paired_logs_detect_distortion():
    """The same runs as two logs, the candidate's forecasts distorted: paired by task."""
    base = simulate("tau2-like", n_trajectories=200, seed=4).to_data()
    q = np.clip(base.forecasts("truthful"), 1e-9, 1 - 1e-9)
    cand = base.with_predictor("truthful", 1 / (1 + np.exp(-(np.log(q / (1 - q)) + 1.5))))
    both = combine_logs(base, cand)
    diff = group_difference(both, "log", "baseline", "candidate", SIMPLE, pair_on="task")
    assert diff.loc["truthful", "n_pairs"] == base.trajectories["task"].nunique()
    assert diff.loc["truthful", "tps_z"] < -2
    assert diff.loc["noisy", "tps_delta"] == pytest.approx(0, abs=1e-12)


# --------------------------------------------------------------------------- combine_logs
@pytest.fixture(scope="module")
def two_logs():
    a = simulate("tau2-like", n_trajectories=60, seed=1).to_data()
    b = simulate("tau2-like", n_trajectories=50, seed=2).to_data()  # the same ids as a's first 50
    return a, b


def test_combine_logs_keeps_clashing_ids_apart(two_logs):
    a, b = two_logs
    assert set(a.trajectories["trajectory_id"]) & set(b.trajectories["trajectory_id"])
    both = combine_logs(a, b)
    ids = both.trajectories["trajectory_id"]
    assert ids.is_unique and ids.str.startswith(("baseline/", "candidate/")).all()
    assert both.n_trajectories == a.n_trajectories + b.n_trajectories
    assert both.n_steps == a.n_steps + b.n_steps
    assert both.n_censored == a.n_censored + b.n_censored
    codes = both.steps["traj"].to_numpy()
    assert (np.diff(codes) >= 0).all()
    assert (both.steps["trajectory_id"].to_numpy() == ids.to_numpy()[codes]).all()
    assert (np.bincount(codes) == both.trajectories["length"].to_numpy()).all()
    assert both.trajectories["log"].value_counts().to_dict() == {"baseline": 60, "candidate": 50}
    assert both.reading["format"] == "combined"


def test_group_table_on_combined_equals_each_log_alone(two_logs):
    a, b = two_logs
    both = combine_logs(a, b, names=("old", "new"), column="which")
    table = group_table(both, "which", SIMPLE)
    for name, log in (("old", a), ("new", b)):
        alone = compute_tps(log, SIMPLE).summary
        sk = skill_table(log, SIMPLE)
        for p in log.predictors:
            assert table.loc[(name, p), "tps_mean"] == pytest.approx(alone.loc[p, "tps_mean"],
                                                                     abs=1e-12)
            assert table.loc[(name, p), "skill"] == pytest.approx(sk.loc[p, "skill"], abs=1e-12)


def test_combine_logs_predictors_and_metadata_of_one_log(two_logs):
    a, b = two_logs
    steps = b.steps.drop(columns=["conf_verbal"]).assign(conf_extra=0.5)
    b2 = replace(b, steps=steps, trajectories=b.trajectories.assign(prompt="p1"),
                 predictors=[p for p in b.predictors if p != "verbal"] + ["extra"])
    both = combine_logs(a, b2)
    assert "verbal" not in both.predictors and "extra" not in both.predictors
    assert "conf_verbal" not in both.steps and "conf_extra" not in both.steps
    text = " ".join(both.notes)
    assert "'verbal'" in text and "'extra'" in text
    labels = group_labels(both, "prompt")
    assert (labels == MISSING_LABEL).sum() == a.n_trajectories


def test_combine_logs_refuses_bad_names(two_logs):
    a, b = two_logs
    with pytest.raises(ValueError, match="different names"):
        combine_logs(a, b, names=("x", "x"))
    with pytest.raises(ValueError, match="without '/'"):
        combine_logs(a, b, names=("x/1", "y"))
    with pytest.raises(ValueError, match="already has a column 'task'"):
        combine_logs(a, b, column="task")
    with pytest.raises(ValueError, match="name of the log format"):
        combine_logs(a, b, column="outcome")


# --------------------------------------------------------------------------- errors
def test_unknown_column_names_the_metadata_columns(web):
    with pytest.raises(ValueError, match=r"unknown grouping column 'nope'.*'difficulty', 'task', "
                                         r"'model'"):
        group_table(web, "nope", SIMPLE)
    with pytest.raises(ValueError, match="unknown grouping column 'conf_truthful'"):
        group_table(web, "conf_truthful", SIMPLE)
    df = simulate("tau2-like", n_trajectories=20, seed=1).steps
    stepwise = from_frame(df.assign(tool=np.arange(len(df)) % 3))
    with pytest.raises(ValueError, match="column 'tool' changes within runs"):
        group_table(stepwise, "tool", SIMPLE)


def test_single_group_is_refused_with_a_cleaned_label(web):
    data = _with(web, "model", ["gpt\x1b[31m-x"] * web.n_trajectories)
    with pytest.raises(ValueError, match="single group") as err:
        group_table(data, "model", SIMPLE)
    assert "\x1b" not in str(err.value) and "'gpt[31m-x'" in str(err.value)


def test_too_many_groups_are_refused(web):
    values = [f"g{i % (MAX_GROUPS + 1)}" for i in range(web.n_trajectories)]
    with pytest.raises(ValueError, match=f"has {MAX_GROUPS + 1} groups; at most {MAX_GROUPS}"):
        group_table(_with(web, "model", values), "model", SIMPLE)
    with pytest.raises(ValueError, match=f"has {MAX_GROUPS + 1} groups"):
        group_difference(_with(web, "model", values), "model", "g1", "g2", SIMPLE)


def test_difference_refuses_unknown_or_equal_groups(web):
    with pytest.raises(ValueError, match=r"group b 'm-9' is not a group.*'m-1', 'm-2', 'm-3'"):
        group_difference(web, "model", "m-1", "m-9", SIMPLE)
    with pytest.raises(ValueError, match="the same group"):
        group_difference(web, "model", "m-1", "m-1", SIMPLE)
    with pytest.raises(ValueError, match="unknown pairing column"):
        group_difference(web, "model", "m-1", "m-2", SIMPLE, pair_on="nope")


def test_labels_stay_distinct_after_cleaning(web):
    values = ["a\x00b" if i % 2 else "ab" for i in range(web.n_trajectories)]
    labels = group_labels(_with(web, "model", values), "model")
    assert sorted(labels.unique()) == ["ab", "ab #2"]
