"""audit: rollouts validation, q̂_Z, exact vs simple TPS against brute force."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tpsviz import LogFormatError, ScoreSettings
from tpsviz.diagnostics.audit import load_rollouts, mc_audit, qz_from_rollouts
from tpsviz.synthetic.agent import simulate

DEMO = Path(__file__).resolve().parents[1] / "demo_data"


@pytest.fixture(scope="module")
def sim():
    return simulate("webshop-like", n_trajectories=120, seed=8)


def test_load_rollouts_validation(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("trajectory_id,outcome\na,1\nb,2\n,0\nc,yes\n", encoding="utf-8")
    with pytest.raises(LogFormatError) as e:
        load_rollouts(f)
    msg = str(e.value)
    assert "r.csv" in msg and "line 3" in msg and "'2'" not in msg and "outcome" in msg
    assert "trajectory_id is empty at line 4" in msg and "line 5" in msg and "yes" not in msg
    f.write_text("trajectory_id,result\na,1\n", encoding="utf-8")
    with pytest.raises(LogFormatError, match="missing: outcome"):
        load_rollouts(f)
    from tpsviz.io.files import FileRefused

    with pytest.raises(FileRefused, match="no such file"):
        load_rollouts(tmp_path / "nope.csv")
    ok = load_rollouts(pd.DataFrame({"trajectory_id": ["a", "a"], "outcome": [1.0, 0.0]}))
    assert ok.outcome.tolist() == [1, 0]
    with pytest.raises(LogFormatError, match=r"row 2 \('nan'\)|row 2"):
        load_rollouts(pd.DataFrame({"trajectory_id": ["a", "a"], "outcome": [1.0, np.nan]}))


def test_qz_from_rollouts_groupby(sim):
    q = qz_from_rollouts(sim.rollouts).set_index("trajectory_id")
    g = sim.rollouts.groupby("trajectory_id").outcome
    np.testing.assert_allclose(q.q_hat, g.mean())
    np.testing.assert_array_equal(q.n_rollouts, g.size())
    np.testing.assert_allclose(q.se, np.sqrt(g.mean() * (1 - g.mean()) / g.size()))


def test_mc_audit_brute_force(sim):
    data = sim.to_data()
    roll = sim.rollouts
    # drop the rollouts of one censored run; add one of an unknown run
    cens_ids = data.trajectories.trajectory_id[data.trajectories.censored]
    dropped = cens_ids.iloc[0]
    roll = pd.concat([roll[roll.trajectory_id != dropped],
                      pd.DataFrame({"trajectory_id": ["ghost"], "rollout": [1], "outcome": [1]})])
    audit = mc_audit(data, roll, ScoreSettings(n_boot=200, cluster_by="run"), predictors=["verbal", "pessimistic"])
    tasked = mc_audit(data, roll, ScoreSettings(n_boot=0), predictors=["verbal", "pessimistic"])  # by task
    qhat = roll.groupby("trajectory_id").outcome.mean()
    st = data.steps
    for name in ("verbal", "pessimistic"):
        diffs, tasks = [], []
        for tid, grp in st.groupby("trajectory_id"):
            row = data.trajectories.set_index("trajectory_id").loc[tid]
            if row.censored and tid in qhat.index:
                f = np.clip(grp[f"conf_{name}"].to_numpy(), 1e-6, 1 - 1e-6)
                diffs.append(qhat[tid] * np.sum(np.log(f) - np.log1p(-f)))
            elif not row.censored:
                diffs.append(0.0)
            else:  # a censored run without rollouts has no q_Z: left out of both modes (exact mode is exact)
                continue
            tasks.append(row.task)
        r = audit.table.loc[name]
        assert r.delta == pytest.approx(np.mean(diffs), rel=1e-10)
        assert r.delta_se == pytest.approx(np.std(diffs, ddof=1) / np.sqrt(len(diffs)), rel=1e-9)
        assert r.tps_exact - r.tps_simple == pytest.approx(r.delta, rel=1e-10)
        # clustered by the log's task column (docs/theory.md §6.1): K/(K−1) Σ_k (Σ_{i in k} (d_i − d̄))² / n²
        e = pd.Series(np.asarray(diffs) - np.mean(diffs), index=tasks).groupby(level=0).sum()
        k = len(e)
        assert tasked.table.loc[name, "delta_se"] == pytest.approx(
            np.sqrt(k / (k - 1) * np.sum(e ** 2)) / len(diffs), rel=1e-9)
        assert r.delta_ci_low <= r.delta <= r.delta_ci_high and r.mc_se > 0
    assert audit.info["unknown_ids"] == ["ghost"] and audit.info["censored_without"] == [dropped]
    assert audit.info["n_left_out"] == 1 and audit.table["n_trajectories"].eq(data.n_trajectories - 1).all()
    assert any("1 of" in n and "no rollouts" in n and "leaves them out" in n for n in audit.notes)
    assert any("not in the log" in n for n in audit.notes)
