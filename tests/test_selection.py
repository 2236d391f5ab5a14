"""Which runs and rows an analysis looks at (tpsviz.diagnostics.selection), the scoped reliability and CORP
helpers built on it, the q_Z source choice (audit.qz_for_source), and TPSResult.combine: each
against a plain loop or the direct call it replaces."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tpsviz
from tpsviz import ScoreSettings, compute_tps
from tpsviz.diagnostics.audit import load_rollouts, qz_for_source, rollout_qz_series
from tpsviz.diagnostics.decomposition import decompose, decompose_by_step, decompose_scope
from tpsviz.diagnostics.groups import MAX_GROUPS, group_columns
from tpsviz.diagnostics.reliability import corp_curve, reliability_bins, reliability_panels
from tpsviz.core.scores import clip_forecasts
from tpsviz.diagnostics.selection import filter_mask, scope_rows, steps_with_rows
from tpsviz.synthetic.agent import simulate
from tpsviz.core.tps import TPSResult


@pytest.fixture(scope="module")
def web():
    return tpsviz.load("demo_data/webshop-like.csv")


def _meta_log(values, lengths):
    rows = []
    for i, (v, n) in enumerate(zip(values, lengths)):
        for s in range(1, n + 1):
            rows.append({"trajectory_id": f"r{i}", "step": s, "outcome": i % 2, "conf_a": 0.5, "model": v,
                         "cost": float(i)})
    return tpsviz.from_frame(pd.DataFrame(rows))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=12), st.data())
def test_filter_mask_against_a_loop(values, draw):
    data = _meta_log(values, [2] * len(values))
    chosen = tuple(draw.draw(st.lists(st.sampled_from(["x", "y", "z"]), unique=True)))
    lo = draw.draw(st.floats(-1, 12))
    hi = draw.draw(st.floats(-1, 12))
    filters = (("model", "in", chosen), ("cost", "range", (lo, hi)), ("not_a_column", "in", ("q",)))
    got = filter_mask(data, filters)
    t = data.trajectories
    want = [str(r["model"]) in chosen and lo <= float(r["cost"]) <= hi for _, r in t.iterrows()]
    assert got.tolist() == want


def test_scope_rows_against_a_loop(web):
    steps, t = web.steps, web.trajectories
    for scope, step, pseudo in [("all", None, False), ("all", None, True), ("final", None, False),
                                ("step", 3, False), ("step", 3, True)]:
        keep, y, codes = scope_rows(web, scope, step, pseudo)
        for i in range(0, len(steps), 97):  # every 97th row, checked by hand
            r = steps.iloc[i]
            run = t.iloc[int(r["traj"])]
            label = 0.0 if (pseudo and run["censored"]) else run["outcome"]
            labelled = not np.isnan(label)
            in_scope = {"all": True, "final": r["t"] == run["length"], "step": r["t"] == step}[scope]
            assert keep[i] == (labelled and in_scope)
            assert codes[i] == r["traj"]
            if labelled:
                assert y[i] == label
    with pytest.raises(ValueError, match="scope"):
        scope_rows(web, "middle")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 8), max_size=200), st.integers(1, 10))
def test_steps_with_rows_against_a_count(ts, k):
    t = np.array(ts, dtype=np.int64)
    got = steps_with_rows(t, k)
    assert got.tolist() == [ts.count(v) >= k for v in ts]


def test_reliability_panels_are_the_direct_calls(web):
    names = web.predictors[:3]
    panels, hists = reliability_panels(web, names, "final", None, False, n_bins=8, n_boot=50, seed=3)
    keep, y, _ = scope_rows(web, "final")
    assert [p["name"] for p in panels] == names
    for p in panels:
        f = web.forecasts(p["name"])
        ok = keep & np.isfinite(f)
        pd.testing.assert_frame_equal(p["bins"], reliability_bins(f[ok], y[ok], n_bins=8))
        pd.testing.assert_frame_equal(p["corp"], corp_curve(f[ok], y[ok], n_boot=50, seed=3))
        assert p["n"] == ok.sum()
    assert set(hists["predictor"]) == set(names)


def test_decompose_scope_is_the_direct_calls(web):
    name = "verbal"
    pooled, by_step = decompose_scope(web, [name], 0.5, 0.5, 1e-3, "all", None, True, by_step=True)
    keep, y, _ = scope_rows(web, "all", None, True)
    f = web.forecasts(name)
    ok = keep & np.isfinite(f)
    pc, _ = clip_forecasts(f[ok], 1e-3)
    want = decompose(pc, y[ok], 0.5, 0.5)
    for k, v in want.items():
        assert pooled.iloc[0][k] == pytest.approx(v, rel=1e-12, abs=1e-15)
    t = web.steps["t"].to_numpy()[ok]
    common = [s for s in np.unique(t) if (t == s).sum() >= 30]
    m = np.isin(t, common)
    ref = decompose_by_step(pc[m], y[ok][m], t[m], 0.5, 0.5)
    pd.testing.assert_frame_equal(by_step.drop(columns="predictor"), ref)
    _, none = decompose_scope(web, [name], 0.5, 0.5, 1e-3, by_step=False)
    assert none.empty


def test_qz_for_source(web):
    q, note = qz_for_source(web, "constant", 0.3)
    assert np.all(q == 0.3) and "0.3" in note
    assert qz_for_source(web, "log") == (None, "q_Z from the log's q_z column")
    q, note = qz_for_source(web, "rollouts")  # no rollouts given: the log's column
    assert q is None and "no usable rollouts" in note
    ro = load_rollouts("demo_data/webshop-like_rollouts.csv")
    q, note = qz_for_source(web, "rollouts", rollouts=ro)
    pd.testing.assert_series_equal(q, rollout_qz_series(web, ro)[0])
    with pytest.raises(ValueError, match="q_Z source"):
        qz_for_source(web, "oracle")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        qz_for_source(web, "constant", 1.5)


@pytest.mark.parametrize("censoring", ["simple", "complete", "exact", "upper"])
def test_combined_results_equal_one_joint_scoring(censoring):
    sim = simulate("webshop-like", n_trajectories=150, seed=11)
    data = tpsviz.from_frame(sim.steps)
    s = ScoreSettings(alpha=0.4, beta=-0.2, censoring=censoring, n_boot=200)
    joint = compute_tps(data, s)
    parts = TPSResult.combine([compute_tps(data, s, [p]) for p in data.predictors])
    pd.testing.assert_frame_equal(parts.summary, joint.summary, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(parts.tps_matrix(), joint.tps_matrix(), rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(parts.step_contributions(), joint.step_contributions(), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="same log and settings"):
        TPSResult.combine([joint, compute_tps(data, ScoreSettings(n_boot=0))])


def test_group_columns():
    data = _meta_log(["x", "y"] * 3, [1] * 6)
    assert set(group_columns(data)) == {"model", "cost"}  # 2 and 6 values per run
    same = _meta_log(["x"] * 4, [1] * 4)
    assert group_columns(same) == ["cost"]  # one model: nothing to split by
    many = _meta_log([f"m{i}" for i in range(MAX_GROUPS + 1)], [1] * (MAX_GROUPS + 1))
    assert group_columns(many) == []  # 51 values each


# ----------------------------------------------------------------------------- populations (tpsviz.diagnostics.populations)
def test_censoring_summary_against_a_loop(web):
    from tpsviz.diagnostics.populations import censoring_summary

    got = censoring_summary(web)
    runs = list(web.trajectories.itertuples())
    cens = [r for r in runs if r.censored]
    comp = [r for r in runs if not r.censored]
    assert got["n_runs"] == len(runs) and got["n_censored"] == len(cens)
    assert got["mean_length_censored"] == pytest.approx(sum(r.length for r in cens) / len(cens))
    assert got["mean_length_complete"] == pytest.approx(sum(r.length for r in comp) / len(comp))
    assert got["success_rate"] == pytest.approx(sum(r.outcome for r in comp) / len(comp))
    assert got["n_censored_with_qz"] == sum(1 for r in cens if r.q_z == r.q_z)
    assert got["n_complete"] == len(comp)
    assert got["mean_length"] == pytest.approx(sum(r.length for r in runs) / len(runs))


def test_differs_beyond_ci_against_a_loop():
    from tpsviz.diagnostics.populations import differs_beyond_ci

    lo = [0.1, -0.2, -0.3, 0.0, np.nan, -np.inf, -0.5, 0.2]
    hi = [0.4, 0.3, -0.1, 0.2, 0.5, -0.1, np.nan, np.inf]
    want = []
    for a, b in zip(lo, hi):
        clear = False
        if a == a and abs(a) != float("inf"):  # a finite lower end
            if a > 0 or b < 0:
                clear = True
        want.append(clear)
    got = differs_beyond_ci(pd.Series(lo), pd.Series(hi))
    assert got.dtype == bool and got.tolist() == want == [True, False, True, False, False, False, False, True]


def test_forecasts_by_population_against_a_loop(web):
    from tpsviz.diagnostics.populations import forecasts_by_population

    name = "verbal"
    got = forecasts_by_population(web, [name]).set_index("runs")
    t = web.trajectories.set_index("trajectory_id")
    for label, want_cens in (("complete", False), ("censored", True)):
        all_f, last_f, ids = [], [], set()
        for tid, g in web.steps.groupby("trajectory_id"):
            if bool(t.loc[tid, "censored"]) != want_cens:
                continue
            ids.add(tid)
            f = g.sort_values("t")[f"conf_{name}"].dropna()
            all_f += list(f)
            if len(g) and not np.isnan(g.sort_values("t")[f"conf_{name}"].iloc[-1]):
                last_f.append(g.sort_values("t")[f"conf_{name}"].iloc[-1])
        assert got.loc[label, "mean_all"] == pytest.approx(np.mean(all_f))
        assert got.loc[label, "mean_last"] == pytest.approx(np.mean(last_f))
        assert got.loc[label, "n_runs"] == len(ids)


def test_qz_band_is_the_exact_score_at_every_constant_qz(web):
    from tpsviz.diagnostics.populations import qz_band

    names = ["verbal", "truthful"]
    s = {m: compute_tps(web, ScoreSettings(censoring=m, n_boot=0), names).summary["tps_mean"]
         for m in ("simple", "upper")}
    band = qz_band(s["simple"], s["upper"], grid=5)
    for q in (0.25, 0.75):
        exact = compute_tps(web, ScoreSettings(censoring="exact", n_boot=0), names,
                            q_z=np.full(web.n_trajectories, q)).summary["tps_mean"]
        for n in names:
            got = band[(band.predictor == n) & np.isclose(band.q_z, q)]["tps_mean"].item()
            assert got == pytest.approx(exact[n], rel=1e-12)
    inf = qz_band(pd.Series({"a": -np.inf}), pd.Series({"a": -1.0}), grid=3)
    assert inf["tps_mean"].tolist() == [-np.inf, -np.inf, -1.0]  # −∞ at q_Z = 0 stays −∞ inside


@pytest.mark.parametrize("censoring", ["simple", "complete"])
def test_tps_matrix_is_the_pivot_of_the_per_trajectory_frame(censoring):
    rows = []
    for i in range(40):
        for t in (1, 2, 3):
            rows.append({"trajectory_id": f"r{39 - i:02d}", "step": t, "outcome": np.nan if i % 7 == 0 else i % 2,
                         "conf_a": 0.3 + 0.01 * i, "conf_b": np.nan if i % 5 == 0 else 0.6,
                         "conf_none": np.nan})
    data = tpsviz.from_frame(pd.DataFrame(rows))
    res = compute_tps(data, ScoreSettings(censoring=censoring, n_boot=0))
    want = (res.per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps")
            .reindex(columns=list(res.summary.index)))
    pd.testing.assert_frame_equal(res.tps_matrix(), want, check_names=False)
    one = compute_tps(data, ScoreSettings(censoring=censoring, n_boot=0), ["b"]).tps_matrix()
    pd.testing.assert_frame_equal(one, want[["b"]].dropna(how="all"), check_names=False)


def test_only_splits_a_joint_result_into_the_separate_ones():
    sim = simulate("tau2-like", n_trajectories=120, seed=5)
    data = tpsviz.from_frame(sim.steps)
    s = ScoreSettings(alpha=0.2, n_boot=300)
    joint = compute_tps(data, s)
    for p in data.predictors:
        alone = compute_tps(data, s, [p])
        part = joint.only([p])
        pd.testing.assert_frame_equal(part.summary, alone.summary, rtol=1e-12, atol=1e-12)
        pd.testing.assert_frame_equal(part.per_trajectory, alone.per_trajectory, rtol=1e-12, atol=1e-12)
    back = TPSResult.combine([joint.only([p]) for p in data.predictors])
    pd.testing.assert_frame_equal(back.summary, joint.summary)
    points = compute_tps(data, ScoreSettings(alpha=0.2, n_boot=0)).with_intervals(300)
    pd.testing.assert_frame_equal(points.summary, joint.summary, rtol=1e-12, atol=1e-12)
