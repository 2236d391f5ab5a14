"""The Evaluation's comparisons (issue 48, points 2 and 4): ``ev.compare``, ``ev.z_matrix`` and
``ev.metric_intervals``, what ``tpsviz compare --baseline``, ``monitor`` and the dashboard read, checked
against independent computations (a plain loop over the step rows, scikit-learn's AUROC)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import tpsviz
from tpsviz.diagnostics.monitoring.monitor import monitor

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "demo_data" / "tau2-like.csv"


@pytest.fixture(scope="module")
def ev():
    """The tau2-like demo under the log score, uniform weights, complete runs only, SEs by run."""
    return tpsviz.evaluate(LOG, censoring="complete", cluster_by="run", n_boot=200, schedule="uniform")


def _loop_tps(data, name: str, eps: float) -> dict:
    """TPS_i = Σ_t log S(F_t, Y_i) over the rows of each complete run, by a plain loop (uniform w_t = 1)."""
    out = {}
    y = dict(zip(data.trajectories["trajectory_id"], data.trajectories["outcome"]))
    censored = dict(zip(data.trajectories["trajectory_id"], data.trajectories["censored"]))
    for tid, f in zip(data.steps["trajectory_id"], data.forecasts(name)):
        if censored[tid] or not np.isfinite(f):
            continue
        p = min(max(float(f), eps), 1 - eps)
        out[tid] = out.get(tid, 0.0) + (np.log(p) if y[tid] == 1 else np.log(1 - p))
    return out


def test_compare_is_the_mean_paired_difference_of_a_plain_loop(ev):
    base = "truthful"
    table = ev.compare(base, metrics=(), n_boot=0)
    b = _loop_tps(ev.data, base, ev.settings.eps)
    for name in table.index:
        a = _loop_tps(ev.data, name, ev.settings.eps)
        d = np.array([a[t] - b[t] for t in a if t in b])
        r = table.loc[name]
        assert r["n_runs"] == d.size > 100
        assert r["tps_delta"] == pytest.approx(d.mean(), rel=1e-9, abs=1e-12)
        assert r["tps_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(d.size), rel=1e-9)
        assert r["tps_z"] == pytest.approx(d.mean() / (d.std(ddof=1) / np.sqrt(d.size)), rel=1e-9)


def test_the_z_matrix_is_antisymmetric_and_agrees_with_compare(ev):
    z = ev.z_matrix()
    assert np.allclose(z.to_numpy(), -z.to_numpy().T, equal_nan=True)
    table = ev.compare("truthful", metrics=(), n_boot=0)
    for name in table.index:
        assert z.loc[name, "truthful"] == pytest.approx(table.loc[name, "tps_z"], rel=1e-9)


def test_the_auroc_delta_is_scikit_learns(ev):
    table = ev.compare("truthful", metrics=("auroc",), n_boot=50)
    steps, runs = ev.data.steps, ev.data.trajectories.set_index("trajectory_id")
    complete = ~runs.loc[steps["trajectory_id"], "censored"].to_numpy(dtype=bool)
    y = runs.loc[steps["trajectory_id"], "outcome"].to_numpy()

    def auc(name):
        f = ev.data.forecasts(name)
        ok = complete & np.isfinite(f) & np.isfinite(ev.data.forecasts("truthful"))
        return roc_auc_score(y[ok].astype(int), f[ok])

    for name in ("noisy", "budget_aware"):
        assert table.loc[name, "auroc_delta"] == pytest.approx(auc(name) - auc("truthful"), abs=1e-9)
        assert table.loc[name, "auroc_se"] > 0


def test_metric_intervals_hold_the_points_and_an_interval_around_them(ev):
    m = ev.metric_intervals(100)
    pd.testing.assert_series_equal(m["auroc"], ev.metrics["auroc"], check_names=False)
    inside = (m["auroc_ci_low"] <= m["auroc"]) & (m["auroc"] <= m["auroc_ci_high"])
    assert inside.all()
    varying = m.index != "flat"  # a constant forecast's AUROC is 0.5 in every replicate
    assert (m["auroc_ci_high"] > m["auroc_ci_low"])[varying].all()
    assert m.loc["flat", "auroc_ci_low"] == m.loc["flat", "auroc_ci_high"] == 0.5
    shown = ev.with_metrics(m)
    assert shown.metrics is m and shown.summary is ev.summary


def test_monitor_reads_the_evaluations_tps(ev):
    """The monitor given the Evaluation's TPS (as `tpsviz monitor` runs it) is the monitor scoring alone."""
    kw = dict(window=50, predictors=["truthful", "noisy"], q_z=ev.q_z)
    given, alone = monitor(ev.data, ev.settings, result=ev.points, **kw), monitor(ev.data, ev.settings, **kw)
    pd.testing.assert_frame_equal(given.windows, alone.windows)
    pd.testing.assert_frame_equal(given.runs, alone.runs)


def test_the_compare_command_prints_the_evaluations_comparison(ev):
    proc = subprocess.run([sys.executable, "-m", "tpsviz", "compare", str(LOG), "--baseline", "truthful",
                           "--censoring", "complete", "--cluster-by", "run", "--n-boot", "200",
                           "--schedule", "uniform", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)["predictors"]
    table = ev.compare("truthful", metrics=("auroc",))
    for name, r in table.iterrows():
        assert got[name]["tps_delta"] == pytest.approx(r["tps_delta"], rel=1e-9)
        assert got[name]["auroc_se"] == pytest.approx(r["auroc_se"], rel=1e-9)
