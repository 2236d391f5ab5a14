"""Deferral decisions (issue 13, part 4): the utility of "hand off when F_t < τ" against a
brute-force sweep, the best τ and its bootstrap CI, the risk–coverage curve and its area."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.diagnostics.monitoring.deferral import Utility, deferral, run_utilities


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
    from tpsviz.synthetic.agent import simulate

    steps = simulate("tau2-like", n_trajectories=2000, seed=4).steps
    data = tpsviz.from_frame(steps)
    u = Utility(success=1.0, failure=3.0, handoff=0.5)
    good = deferral(data, "truthful", u, n_boot=300)
    flat = deferral(data, "flat", u, n_boot=0)
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

    from tpsviz.cli.main import main

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


# ----------------------------------------------------------------- the best τ when the curve is flat at its maximum
GRID = np.round(np.linspace(0.0, 1.0, 101), 10)


def _brute_best(values: list) -> list:
    """Indices of the values equal to their maximum within 1e-12·(1 + |max|), by a loop."""
    top = max(values)
    return [j for j, v in enumerate(values) if v >= top - 1e-12 * (1 + abs(top))]


def _flat_log(seed: int = 5, n: int = 60) -> pd.DataFrame:
    """Every forecast is 0.5 or more (many exactly 0.5): no τ ≤ 0.5 hands anything off."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        y = np.nan if i % 7 == 0 else float(rng.random() < 0.6)
        for s in range(1, int(rng.integers(1, 6)) + 1):
            f = np.nan if rng.random() < 0.1 else float(rng.choice([0.5, 0.5, 0.62, 0.9]))
            rows.append({"trajectory_id": f"r{i:03d}", "step": s, "outcome": y, "conf_a": f})
    return pd.DataFrame(rows)


def _tie_log() -> pd.DataFrame:
    """Successes that say 0.3 and failures that say 0.6: with a free hand-off, handing off nothing
    (τ ≤ 0.3) and everything (τ > 0.6) tie, handing off only the successes is worse."""
    rows = [{"trajectory_id": f"s{i}", "step": 1, "outcome": 1.0, "conf_a": 0.3} for i in range(10)]
    rows += [{"trajectory_id": f"f{i}", "step": 1, "outcome": 0.0, "conf_a": 0.6} for i in range(10)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("log, utility", [
    (_log(), Utility(success=2.0, failure=5.0, handoff=0.7, per_step=0.05)),  # a unique best τ
    (_log(), Utility(handoff=5.0)),                                            # a dear hand-off: τ = 0
    (_log(), Utility(success=0.0, failure=0.0)),                               # nothing to win: τ = 0
    (_flat_log(), Utility(handoff=5.0)),                                       # flat on [0, 0.5]
    (_tie_log(), Utility(handoff=0.0)),                                        # two separate best ranges
])
def test_best_tau_range_is_the_set_of_maximising_thresholds(log, utility):
    data = tpsviz.from_frame(log)
    res = deferral(data, "a", utility, n_boot=0)
    means = [float(np.mean(list(_brute(log, utility, tau, "failure").values()))) for tau in GRID]
    best = _brute_best(means)
    assert list(np.flatnonzero(res.curve["best"].to_numpy())) == best
    assert res.best_tau_low == GRID[best[0]] and res.best_tau_high == GRID[best[-1]]
    assert res.best_tau == res.best_tau_low
    assert res.best_utility == pytest.approx(max(means), rel=1e-12, abs=1e-12)


def test_a_flat_maximum_is_reported_as_a_range():
    assert deferral(tpsviz.from_frame(_flat_log()), "a", Utility(handoff=5.0), n_boot=0).best_tau_label() == \
        "0.00–0.50, flat"
    assert deferral(tpsviz.from_frame(_tie_log()), "a", Utility(handoff=0.0), n_boot=0).best_tau_label() == \
        "0.00–0.30 or 0.61–1.00, tie"
    unique = deferral(tpsviz.from_frame(_log()), "a", Utility(success=2.0, failure=5.0, handoff=0.7, per_step=0.05),
                      n_boot=0)
    assert unique.best_tau_low == unique.best_tau_high and unique.best_tau_label() == f"{unique.best_tau:.2f}"


@pytest.mark.parametrize("log, utility, flat", [
    (_flat_log(), Utility(handoff=5.0), True),
    (_log(), Utility(success=2.0, failure=5.0, handoff=0.7, per_step=0.05), False),
    (_log(), Utility(handoff=5.0), False),
])
def test_best_tau_interval_keeps_each_replicates_whole_plateau(log, utility, flat):
    """Brute force: each replicate's weighted mean utility per τ by a loop, its smallest and
    largest best τ, then the percentile ends."""
    from tpsviz.core.inference import bootstrap_weights

    data = tpsviz.from_frame(log)
    n_boot = 200
    res = deferral(data, "a", utility, n_boot=n_boot, level=0.9)
    ids = list(data.trajectories["trajectory_id"])
    walks = [_brute(log, utility, tau, "failure") for tau in GRID]
    cols = [[w[i] for i in ids] for w in walks]
    counts = np.vstack(list(bootstrap_weights(len(ids), n_boot, tpsviz.core.inference.DEFAULT_SEED)))
    lows, highs = [], []
    for c in counts:
        means = [sum(k * v for k, v in zip(c, col)) / len(ids) for col in cols]
        best = _brute_best(means)
        lows.append(GRID[best[0]])
        highs.append(GRID[best[-1]])
    want = (np.quantile(lows, 0.05, method="inverted_cdf"), np.quantile(highs, 0.95, method="inverted_cdf"))
    assert res.best_tau_ci == pytest.approx(want, abs=0)
    if flat:  # every replicate is flat on [0, 0.5]: the interval keeps the whole plateau, not its first point
        assert res.best_tau_ci == (0.0, 0.5)


def test_verbal_on_the_demo_with_a_dear_hand_off_is_flat_not_zero():
    """The browser audit's case: hand-off cost 5 on tau2-like; verbal never hands off below 0.79."""
    from pathlib import Path

    data = tpsviz.load(Path(__file__).resolve().parents[1] / "demo_data" / "tau2-like.csv")
    r = deferral(data, "verbal", Utility(handoff=5.0), n_boot=300)
    u = r.curve["utility"].to_numpy()
    assert r.best_tau_low == 0.0 and r.best_tau_high >= 0.5
    assert np.all(u[r.curve["tau"] <= r.best_tau_high] == u[0]) and r.best_tau_label().endswith(", flat")
    assert r.best_tau_ci[0] == 0.0 and r.best_tau_ci[1] >= r.best_tau_high


def test_defer_command_says_when_the_best_tau_is_a_range(tmp_path, capsys):
    import json

    from tpsviz.cli.main import main

    path = tmp_path / "flat.csv"
    _flat_log().to_csv(path, index=False)
    assert main(["defer", str(path), "--handoff", "5", "--n-boot", "100"]) == 0
    out = capsys.readouterr().out
    line = [x for x in out.splitlines() if x.startswith("a ")][0]
    assert "0.00–0.50, flat" in line and "[0.00, 0.50]" in line
    assert main(["defer", str(path), "--handoff", "5", "--n-boot", "100", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["predictors"]["a"]
    assert (got["best_tau"], got["best_tau_low"], got["best_tau_high"]) == (0.0, 0.0, 0.5)
    assert got["best_tau_label"] == "0.00–0.50, flat" and got["best_tau_ci"] == [0.0, 0.5]
    assert [row["tau"] for row in got["curve"] if row["best"] is True] == list(GRID[:51])
