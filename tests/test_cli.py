"""The command line, run as a user runs it (a subprocess)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_data"


def run(*args, check_rc=None):
    proc = subprocess.run([sys.executable, "-m", "tpsviz", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    if check_rc is not None:
        assert proc.returncode == check_rc, proc.stderr
    return proc


def test_help_documents_everything():
    out = run("--help", check_rc=0).stdout
    assert "score" in out and "trajectory_id" in out and "conf_<name>" in out
    out = run("score", "--help", check_rc=0).stdout
    for opt in ("--alpha", "--beta", "--schedule", "--censoring", "--eps", "--seed", "--json",
                "--per-trajectory", "front:G", "back:G:H", "per-length", "endpoint", "column"):
        assert opt in out, opt


def test_table_output():
    out = run("score", DEMO / "webshop-like.csv", check_rc=0).stdout
    assert "higher is better, 0 is perfect" in out
    assert "censoring: exact" in out  # default when q_z exists
    assert "truthful" in out and "95% CI" in out
    out = run("score", DEMO / "tau2-like.csv", "--schedule", "per-length", check_rc=0).stdout
    assert "censoring: simple" in out and "not proper" in out


def test_json_output_matches_core():
    proc = run("score", DEMO / "tau2-like.csv", "--json", "--alpha", "1", "--beta", "1",
               "--schedule", "front:0.9", "--seed", "3", check_rc=0)
    obj = json.loads(proc.stdout)
    assert obj["settings"]["alpha"] == 1.0 and obj["settings"]["schedule"] == "front:0.9"
    keys = {"tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "tps_step_mean",
            "n_trajectories", "n_censored", "n_clipped"}
    for name, rec in obj["predictors"].items():
        assert keys <= set(rec), name
        assert rec["tps_ci_low"] <= rec["tps_mean"] <= rec["tps_ci_high"]
    from tpsviz import ScoreSettings, compute_tps, load, parse_schedule
    res = compute_tps(load(DEMO / "tau2-like.csv"),
                      ScoreSettings(1, 1, parse_schedule("front:0.9"), "simple", seed=3))
    for name, row in res.summary.iterrows():
        assert obj["predictors"][name]["tps_mean"] == pytest.approx(row.tps_mean, rel=1e-12)
        assert obj["predictors"][name]["tps_ci_low"] == pytest.approx(row.tps_ci_low, rel=1e-12)
    # same seed, same output
    assert run("score", DEMO / "tau2-like.csv", "--json", "--alpha", "1", "--beta", "1",
               "--schedule", "front:0.9", "--seed", "3").stdout == proc.stdout


def test_per_trajectory_csv(tmp_path):
    out = tmp_path / "pt.csv"
    run("score", DEMO / "webshop-like.csv", "--censoring", "complete", "--per-trajectory", out,
        check_rc=0)
    df = pd.read_csv(out)
    assert list(df.columns) == ["trajectory_id", "predictor", "tps", "censored", "outcome"]
    assert not df["censored"].any()
    run("score", DEMO / "webshop-like.csv", "--censoring", "simple", "--per-trajectory", out,
        check_rc=0)
    df = pd.read_csv(out)
    assert df["censored"].any()
    # each run's outcome as the log gives it (empty when censored): the file alone tells successes from failures
    runs = pd.read_csv(DEMO / "webshop-like.csv").groupby("trajectory_id")["outcome"].first()
    want = runs.reindex(df["trajectory_id"].astype(str)).to_numpy(dtype=float)
    np.testing.assert_array_equal(df["outcome"].to_numpy(dtype=float), want)
    assert df.loc[df["censored"], "outcome"].isna().all() and set(df["outcome"].dropna()) == {0.0, 1.0}
    assert {line.rsplit(",", 1)[1] for line in out.read_text().splitlines()[1:]} == {"1", "0", ""}  # not 1.0


@pytest.mark.parametrize("args,msg", [
    (["score", "missing.csv"], "no such file"),
    (["score", DEMO / "tau2-like.csv", "--alpha", "-1"], "greater than -1"),
    (["score", DEMO / "tau2-like.csv", "--schedule", "front"], "front:G"),
    (["score", DEMO / "tau2-like.csv", "--schedule", "column"], "'weight' column"),
    (["score", DEMO / "tau2-like.csv", "--eps", "0.6"], "eps"),
    (["score", DEMO / "tau2-like_truth.csv"], "missing required column"),
])
def test_bad_input_exit_2_without_traceback(args, msg):
    proc = run(*args)
    assert proc.returncode == 2
    assert msg in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_bad_file_message_names_row_and_column(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("trajectory_id,step,outcome,conf_v\nt1,1,1,0.5\nt1,2,1,oops\n")
    proc = run("score", bad)
    assert proc.returncode == 2
    assert "bad.csv" in proc.stderr and "line 3" in proc.stderr and "conf_v" in proc.stderr


def test_import_is_light():
    code = ("import sys, tpsviz; bad = [m for m in ('streamlit', 'sklearn') if m in sys.modules];"
            "print(','.join(bad))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout


def test_demo_data_command(tmp_path):
    """demo_data/ is the writer's output byte for byte, plus the files it leaves alone (the data card and
    a real log copied as published, pinned by its git blob hash): `diff -r -x ... OUT demo_data` passes."""
    import hashlib

    from tpsviz.synthetic.demo import NOT_GENERATED

    out = run("demo-data", "--out", tmp_path, check_rc=0).stdout
    assert "tau2-like.csv" in out
    written = {p.name for p in tmp_path.iterdir()}
    assert not written & set(NOT_GENERATED)
    assert {p.name for p in DEMO.iterdir()} == written | set(NOT_GENERATED)
    for name in written:
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes(), name
    for name, blob in NOT_GENERATED.items():
        raw = (DEMO / name).read_bytes()
        if blob is not None:  # git's blob hash: sha1 of "blob <size>\0" + the bytes
            assert hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest() == blob, name


# ------------------------------------------------------------------ metrics, recalibration, compare
def test_score_json_metrics_skill_match_core():
    obj = json.loads(run("score", DEMO / "webshop-like.csv", "--json", "--censoring", "simple",
                         "--n-boot", "0", check_rc=0).stdout)
    from sklearn.metrics import average_precision_score, roc_auc_score

    from tpsviz import ScoreSettings, load
    from tpsviz.diagnostics.leaderboard import base_rate_reference
    from tpsviz.diagnostics.metrics import tece
    data = load(DEMO / "webshop-like.csv")
    st = data.steps
    y = data.trajectories.outcome.to_numpy()[st.traj.to_numpy()]
    ok = ~pd.isna(y)
    last = st[ok].groupby("traj").tail(1).index.to_numpy()
    ref = base_rate_reference(data, ScoreSettings(censoring="simple", n_boot=0))
    assert obj["settings"]["reference_rate"] == pytest.approx(ref.rate)
    for name, rec in obj["predictors"].items():
        p = st[f"conf_{name}"].to_numpy()
        assert rec["auroc"] == pytest.approx(roc_auc_score(y[ok], p[ok]), abs=1e-12)
        assert rec["auprc"] == pytest.approx(average_precision_score(y[ok], p[ok]), abs=1e-12)
        assert rec["auroc_final"] == pytest.approx(roc_auc_score(y[last], p[last]), abs=1e-12)
        assert rec["tece_pooled"] == pytest.approx(tece(p[ok], y[ok], 10), abs=1e-12)
        assert rec["tece_final"] == pytest.approx(tece(p[last], y[last], 10), abs=1e-12)
        assert rec["tps_ref"] == pytest.approx(ref.summary.tps_mean, rel=1e-12)
        assert rec["skill"] == pytest.approx(1 - rec["tps_mean"] / rec["tps_ref"], rel=1e-9)


def test_score_table_shows_metrics_and_recalibrated():
    out = run("score", DEMO / "tau2-like.csv", "--recalibrate", "platt", "--folds", "3",
              "--n-boot", "100", check_rc=0).stdout
    for word in ("AUROC", "AUPRC", "T-ECE", "skill", "constant forecast (base rate)", "verbal@platt",
                 "logprob@platt", "hesitation@platt"):
        assert word in out, word
    obj = json.loads(run("score", DEMO / "tau2-like.csv", "--recalibrate", "beta", "--json",
                         "--n-boot", "0", check_rc=0).stdout)
    assert "verbal@beta" in obj["predictors"] and "logprob@beta" not in obj["predictors"]
    assert any("beta calibration needs probabilities" in n for n in obj["settings"]["notes"])


def test_compare_json_matches_core():
    proc = run("compare", DEMO / "tau2-like.csv", "--baseline", "verbal", "--json",
               "--n-boot", "200", "--seed", "4", check_rc=0)
    obj = json.loads(proc.stdout)
    assert obj["baseline"] == "verbal" and "verbal" not in obj["predictors"]
    from tpsviz import ScoreSettings, load
    from tpsviz.diagnostics.compare import compare
    c = compare(load(DEMO / "tau2-like.csv"), ScoreSettings(censoring="simple", n_boot=200,
                                                             seed=4), baseline="verbal")
    keys = {"tps_delta", "tps_se", "tps_z", "auroc_delta", "auroc_se", "auroc_z"}
    for name, rec in obj["predictors"].items():
        assert keys <= set(rec)
        for k in keys:
            assert rec[k] == pytest.approx(c.loc[name, k], rel=1e-12), (name, k)
    table = run("compare", DEMO / "tau2-like.csv", "--baseline", "verbal", "--recalibrate",
                "platt", "--n-boot", "50", check_rc=0).stdout
    assert "verbal@platt" in table and "delta/SE" in table and "AUROC" in table


def test_compare_recalibrated_baseline_and_rollouts():
    obj = json.loads(run("compare", DEMO / "webshop-like.csv", "--baseline", "verbal@isotonic",
                         "--recalibrate", "isotonic", "--rollouts",
                         DEMO / "webshop-like_rollouts.csv", "--json", "--n-boot", "0",
                         check_rc=0).stdout)
    assert obj["settings"]["censoring"] == "exact"
    assert obj["predictors"]["verbal"]["tps_delta"] < 0


def test_score_rollouts_equal_q_z_column():
    # the demo log's q_z column is the rollout mean: both routes give the same exact scores
    a = json.loads(run("score", DEMO / "webshop-like.csv", "--json", "--n-boot", "0",
                       check_rc=0).stdout)
    b = json.loads(run("score", DEMO / "webshop-like.csv", "--json", "--n-boot", "0",
                       "--rollouts", DEMO / "webshop-like_rollouts.csv", check_rc=0).stdout)
    for name in a["predictors"]:
        assert b["predictors"][name]["tps_mean"] == pytest.approx(
            a["predictors"][name]["tps_mean"], rel=1e-5)


@pytest.mark.parametrize("args,msg", [
    (["compare", DEMO / "tau2-like.csv", "--baseline", "oracle"], "unknown baseline 'oracle'"),
    (["compare", DEMO / "tau2-like.csv"], "--baseline"),
    (["score", DEMO / "tau2-like.csv", "--recalibrate", "platt", "--folds", "1"], "folds"),
    (["score", DEMO / "webshop-like.csv", "--rollouts", DEMO / "tau2-like_truth.csv"],
     "missing: outcome"),
    (["score", DEMO / "webshop-like.csv", "--rollouts", "nope.csv"], "no such file"),
])
def test_compare_and_options_bad_input(args, msg):
    proc = run(*args)
    assert proc.returncode == 2, proc.stderr
    assert msg in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
