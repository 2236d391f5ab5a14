"""Rational updating (issue 13, part 5): the excess movement of a forecast path against a
brute-force loop, and its behaviour on the synthetic agent whose true q_t is known: a truthful
trace stays within ±3 SE over seeds, an over-reacting one has z > 5 and an under-reacting one
z < −5; the drift E[F_{t+1} − F_t | F_t] is zero for the truthful trace only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.synthetic.agent import logit, sigmoid, simulate
from tpsviz.diagnostics.updating import drift_table, excess_movement, movement_per_run


def _loop(df: pd.DataFrame, col: str) -> dict:
    """Excess movement per run by the definition, one run at a time."""
    out = {}
    for tid, run in df.sort_values("step").groupby("trajectory_id", sort=True):
        path = [x for x in run[col] if not pd.isna(x)]
        if not path:
            continue
        y = run["outcome"].iloc[0]
        finished = not pd.isna(y)
        if finished:
            path = path + [float(y)]
        qv = sum((b - a) ** 2 for a, b in zip(path[:-1], path[1:]))
        end = 0.0 if finished else path[-1] * (1 - path[-1])
        out[tid] = qv - (path[0] * (1 - path[0]) - end)
    return out


def test_excess_movement_per_run_against_a_loop():
    rng = np.random.default_rng(5)
    rows = []
    for i in range(60):
        y = np.nan if i % 5 == 0 else float(rng.random() < 0.5)
        for s in range(1, int(rng.integers(1, 9)) + 1):
            f = np.nan if rng.random() < 0.2 else float(rng.random())
            rows.append({"trajectory_id": f"r{i:02d}", "step": s, "outcome": y, "conf_a": f})
    df = pd.DataFrame(rows)
    data = tpsviz.from_frame(df)
    want = _loop(df, "conf_a")
    f = data.steps["conf_a"].to_numpy()
    keep = ~np.isnan(f)
    t = data.trajectories
    y = np.where(t["censored"], np.nan, t["outcome"].to_numpy(float))
    per = movement_per_run(f[keep], data.steps["traj"].to_numpy()[keep], y)
    got = dict(zip(t["trajectory_id"].to_numpy()[per["run"].to_numpy()], per["excess"]))
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-15)
    table = excess_movement(data)
    x = np.array(list(want.values()))
    assert table.at["a", "value"] == pytest.approx(x.mean(), rel=1e-12)
    assert table.at["a", "se"] == pytest.approx(x.std(ddof=1) / np.sqrt(x.size), rel=1e-12)
    assert table.at["a", "n_runs"] == x.size


def _distorted(seed: int, n: int = 3000, scenario: str = "tau2-like") -> tpsviz.TrajectoryData:
    sim = simulate(scenario, n_trajectories=n, seed=seed)
    steps = sim.steps.copy()
    lq = logit(steps["conf_truthful"].to_numpy())
    steps["conf_over"] = sigmoid(2.0 * lq)    # moves twice as far in log-odds
    steps["conf_under"] = sigmoid(0.5 * lq)   # moves half as far
    return tpsviz.from_frame(steps)


@pytest.mark.parametrize("scenario", ["tau2-like", "webshop-like"])
def test_truthful_within_three_se_distorted_far_outside(scenario):
    for seed in range(4):
        em = excess_movement(_distorted(seed, scenario=scenario), ["truthful", "over", "under"])
        assert abs(em.at["truthful", "z"]) <= 3, (seed, em)
        assert em.at["over", "z"] > 5, (seed, em)
        assert em.at["under", "z"] < -5, (seed, em)
        assert em.at["truthful", "n_censored"] > 0  # censored runs are in (their paths end at F_end)


def test_drift_is_zero_for_the_truthful_trace_only():
    data = _distorted(11, n=4000)
    for by in ("bin", "step"):
        d = drift_table(data, "truthful", by=by, max_step=20)
        z = (d["mean"] / d["se"]).to_numpy()
        assert np.all(np.abs(z[np.isfinite(z)]) < 4), d
    over = drift_table(data, "over", by="bin")
    z = (over["mean"] / over["se"]).to_numpy()
    assert np.nanmax(np.abs(z)) > 6, over  # an over-confident F drifts back towards the middle
    top = over[over["group"] >= 0.8]
    assert (top["mean"] < 0).all()
    with pytest.raises(ValueError, match="by must be"):
        drift_table(data, "truthful", by="week")


def test_score_json_carries_excess_movement(capsys):
    from pathlib import Path

    from tpsviz.cli.main import main

    demo = Path(__file__).resolve().parents[1] / "demo_data" / "tau2-like.csv"
    assert main(["score", str(demo), "--json", "--n-boot", "200"]) == 0
    import json

    got = json.loads(capsys.readouterr().out)["predictors"]
    want = excess_movement(tpsviz.load(demo))
    for name, rec in got.items():
        em = rec["excess_movement"]
        assert em["value"] == pytest.approx(want.at[name, "value"], rel=1e-12)
        assert em["se"] == pytest.approx(want.at[name, "se"], rel=1e-12)
        assert em["z"] == pytest.approx(want.at[name, "z"], rel=1e-12)
