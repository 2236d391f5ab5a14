"""Deferral decisions (issue 13, part 4): the utility of "hand off when F_t < τ" against a
brute-force sweep, the best τ and its bootstrap CI, the risk–coverage curve and its area."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.deferral import Utility, deferral, run_utilities


def _log(seed: int = 0, n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        y = np.nan if i % 6 == 0 else float(rng.random() < 0.55)
        for s in range(1, int(rng.integers(1, 10)) + 1):
            f = np.nan if rng.random() < 0.15 else round(float(rng.random()), 2)
            rows.append({"trajectory_id": f"r{i:03d}", "step": s, "outcome": y, "conf_a": f})
    return pd.DataFrame(rows)


def _brute(df: pd.DataFrame, u: Utility, tau: float, censored: str) -> dict:
    """Utility of every run by walking its steps."""
    out = {}
    for tid, run in df.sort_values("step").groupby("trajectory_id", sort=True):
        y = run["outcome"].iloc[0]
        if pd.isna(y) and censored == "exclude":
            continue
        value = None
        for t, f in enumerate(run["conf_a"], start=1):  # t: position in the run
            if not pd.isna(f) and f < tau:
                value = -u.handoff - u.per_step * t
                break
        if value is None:
            yy = 0.0 if pd.isna(y) else y
            value = u.success * yy - u.failure * (1 - yy) - u.per_step * len(run)
        out[tid] = value
    return out


@pytest.mark.parametrize("censored", ["failure", "exclude"])
def test_utilities_against_a_brute_force_sweep(censored):
    df = _log()
    data = tpsviz.from_frame(df)
    u = Utility(success=2.0, failure=5.0, handoff=0.7, per_step=0.05)
    thr = np.unique(np.r_[0.0, df["conf_a"].dropna(), 0.335, 1.0])
    got, handed, failed = run_utilities(data, "a", u, thr, censored)
    res = deferral(data, "a", u, thresholds=thr, censored=censored, n_boot=200)
    for j, tau in enumerate(thr):
        want = _brute(df, u, tau, censored)
        ids = [i for i in data.trajectories["trajectory_id"] if i in want]
        np.testing.assert_allclose(got[:, j], [want[i] for i in ids], rtol=1e-12, atol=1e-12)
        assert res.curve["utility"].iloc[j] == pytest.approx(np.mean(list(want.values())), rel=1e-12)
    best = int(np.argmax(res.curve["utility"].to_numpy()))
    assert res.best_tau == thr[best] and res.best_utility == res.curve["utility"].max()
    assert res.best_tau_ci[0] <= res.best_tau_ci[1]
    assert res.curve["ci_low"].iloc[best] <= res.best_utility <= res.curve["ci_high"].iloc[best]
    # τ = 0 never hands off; coverage falls as τ rises
    assert res.curve["coverage"].iloc[0] == 1.0 and np.all(np.diff(res.curve["coverage"]) <= 0)
    assert res.n_excluded == (int(data.n_censored) if censored == "exclude" else 0)


def test_risk_coverage_and_its_area():
    df = _log(3, 200)
    data = tpsviz.from_frame(df)
    res = deferral(data, "a", n_boot=0)
    c = res.curve
    # risk at full coverage is the failure share of all runs (censored count as failures)
    t = data.trajectories
    fails = ((t["outcome"] == 0) | t["censored"]).mean()
    assert c["risk"].iloc[0] == pytest.approx(fails)
    assert 0 <= res.aurc <= 1


def test_an_informative_forecast_is_worth_deferring_on_a_constant_is_not():
    from tpsviz.synthetic import simulate

    steps = simulate("tau2-like", n_trajectories=2000, seed=4).steps
    data = tpsviz.from_frame(steps)
    u = Utility(success=1.0, failure=3.0, handoff=0.5)
    good = deferral(data, "truthful", u, n_boot=300)
    flat = deferral(data, "base_rate", u, n_boot=0)
    never = good.curve["utility"].iloc[0]
    assert good.best_utility > never + 0.05 and 0 < good.best_tau < 1
    assert good.best_tau_ci[0] <= good.best_tau <= good.best_tau_ci[1]
    # a constant forecast can only hand off everything or nothing
    assert set(np.round(flat.curve["coverage"], 12)) <= {0.0, 1.0}
    assert good.aurc < flat.aurc


def test_bad_utility_and_settings_are_refused():
    with pytest.raises(ValueError, match="handoff"):
        Utility(handoff=-1)
    data = tpsviz.from_frame(_log())
    with pytest.raises(ValueError, match="censored must be"):
        deferral(data, "a", censored="maybe")


def test_defer_command_prints_the_core_numbers(capsys):
    import json
    from pathlib import Path

    from tpsviz.cli import main

    demo = Path(__file__).resolve().parents[1] / "demo_data" / "tau2-like.csv"
    assert main(["defer", str(demo), "--json", "--handoff", "0.4", "--failure", "2", "--n-boot", "200"]) == 0
    got = json.loads(capsys.readouterr().out)["predictors"]
    data = tpsviz.load(demo)
    for name in data.predictors:
        want = deferral(data, name, Utility(failure=2.0, handoff=0.4), n_boot=200)
        assert got[name]["best_tau"] == want.best_tau
        assert got[name]["best_utility"] == pytest.approx(want.best_utility, rel=1e-12)
        assert got[name]["best_tau_ci"] == list(want.best_tau_ci)
        assert want.best_tau_ci[0] in set(want.curve["tau"])  # interval ends are thresholds of the grid
    assert main(["defer", str(demo), "--handoff", "-1"]) == 2
    assert "must be a finite number >= 0" in capsys.readouterr().err
