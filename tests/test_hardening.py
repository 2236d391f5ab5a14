"""Issue 8 (hardening), core and command line: one test per case of the issue, by its numbering.

Dashboard cases are in tests/app/test_hardening_pages.py, browser cases in
tests/browser/test_hardening_browser.py.
"""

from __future__ import annotations

import io
import json
import os
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.cli import main as cli
from tpsviz.io.files import CANNOT_OPEN, DataRoots, FileRefused, Limits, PathRefused, read_file
from tpsviz.core.errors import LogFormatError
from tpsviz.io.loading import load

DEMO = Path(__file__).resolve().parents[1] / "demo_data"
SECRET = "TOPSECRET-7f3a9"


def run_cli(args, capsys):
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ----------------------------------------------------------------------------- 1. disclosure
def test_1_rollouts_path_without_table_extension_is_refused_before_reading(tmp_path, capsys):
    secret = tmp_path / "environ"
    secret.write_text(f"SHELL=/bin/bash\0API_KEY={SECRET}\0", encoding="utf-8")
    code, out, err = run_cli(["score", DEMO / "webshop-like.csv", "--rollouts", secret,
                              "--n-boot", "0"], capsys)
    assert code == 2 and "unknown file type" in err
    assert SECRET not in out + err and "SHELL" not in out + err


def test_1_proc_self_environ_is_never_echoed(capsys):
    code, out, err = run_cli(["score", DEMO / "webshop-like.csv", "--rollouts",
                              "/proc/self/environ", "--n-boot", "0"], capsys)
    assert code == 2
    assert "PATH=" not in out + err and "HOME=" not in out + err


@pytest.mark.parametrize("name", ["secrets.csv", "secrets.tsv", "secrets.txt", "secrets.json",
                                  "secrets.jsonl"])
def test_1_main_path_never_leaks_the_first_line(tmp_path, capsys, name):
    f = tmp_path / name
    sep = "\t" if name.endswith(".tsv") else ","
    if name.endswith(("json", "jsonl")):
        f.write_text(json.dumps({"user": "root", "password": SECRET}) + "\n", encoding="utf-8")
    else:
        f.write_text(sep.join(["user", "password", SECRET]) + "\n" + sep.join(["a", "b", "c"]) + "\n",
                     encoding="utf-8")
    code, out, err = run_cli(["score", f, "--n-boot", "0"], capsys)
    assert code == 2
    assert SECRET not in out + err and "password" not in out + err


def test_1_rollouts_with_wrong_columns_do_not_list_an_unrelated_header(tmp_path, capsys):
    f = tmp_path / "r.csv"
    f.write_text(f"user,{SECRET}\nroot,x\n", encoding="utf-8")
    code, out, err = run_cli(["score", DEMO / "webshop-like.csv", "--rollouts", f, "--n-boot", "0"],
                             capsys)
    assert code == 2 and "missing: trajectory_id, outcome" in err and SECRET not in err


def test_1_messages_never_echo_cell_values(tmp_path):
    text = ("trajectory_id,step,outcome,conf_a,q_z,censored\n"
            f"t1,1,{SECRET},0.5,,\nt1,2,1,{SECRET}x,,\nt2,1,,0.5,{SECRET}y,{SECRET}z\n")
    f = tmp_path / "log.csv"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(LogFormatError) as e:
        load(f)
    assert SECRET not in str(e.value)
    assert "line 2" in str(e.value) and "outcome" in str(e.value)


def test_1_a_header_of_ours_is_named_in_messages(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("trajectory_id,step,success,conf_a\nt1,1,1,0.5\n", encoding="utf-8")
    with pytest.raises(LogFormatError) as e:
        load(f)
    assert "'outcome'" in str(e.value) and "'success'" in str(e.value)


def test_1_data_roots_one_identical_message(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "log.csv").write_bytes((DEMO / "tau2-like.csv").read_bytes())
    (root / "sub").mkdir()
    outside = tmp_path / "outside.csv"
    outside.write_text("x", encoding="utf-8")
    (root / "link.csv").symlink_to(outside)
    (root / "dotdot.csv").symlink_to(Path("..") / "outside.csv")
    roots = DataRoots([str(root)])
    assert roots.enabled and roots.resolve("log.csv") == (root / "log.csv").resolve()
    assert roots.resolve(str(root / "log.csv")) == (root / "log.csv").resolve()
    messages = set()
    for p in [str(outside), "/etc/shadow", "/proc/self/environ", "/dev/zero", str(root / "nope.csv"),
              str(root / "sub"), str(root / "link.csv"), str(root / "dotdot.csv"),
              str(root / ".." / "outside.csv"), "", "\x00", "../outside.csv"]:
        with pytest.raises(PathRefused) as e:
            roots.resolve(p)
        messages.add(str(e.value))
    assert messages == {CANNOT_OPEN}


def test_1_no_roots_means_server_paths_are_off(tmp_path, monkeypatch):
    monkeypatch.delenv("TPSVIZ_DATA_ROOTS", raising=False)
    roots = DataRoots.from_env()
    assert not roots.enabled
    with pytest.raises(PathRefused):
        roots.resolve(str(DEMO / "tau2-like.csv"))
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", f"{DEMO}{os.pathsep}/no/such/folder")
    roots = DataRoots.from_env()
    assert roots.enabled and roots.ignored == ["/no/such/folder"]
    assert roots.contains("tau2-like.csv")


# ----------------------------------------------------------------------------- 2. memory, hangs
def test_2_dev_zero_is_refused_before_reading():
    t = time.monotonic()
    with pytest.raises(FileRefused, match="not a regular file"):
        load("/dev/zero")
    with pytest.raises(FileRefused, match="not a regular file"):
        read_file("/dev/zero")
    assert time.monotonic() - t < 5


def test_2_symlink_to_a_device_is_refused(tmp_path):
    link = tmp_path / "zero.csv"
    link.symlink_to("/dev/zero")
    with pytest.raises(FileRefused, match="not a regular file"):
        load(link)


def test_2_fifo_does_not_hang(tmp_path, capsys):
    fifo = tmp_path / "log.csv"
    os.mkfifo(fifo)
    box = {}

    def go():
        box["code"] = cli.main(["score", str(fifo), "--n-boot", "0"])

    th = threading.Thread(target=go, daemon=True)
    th.start()
    th.join(10)
    assert not th.is_alive(), "reading a FIFO hung"
    assert box["code"] == 2 and "not a regular file" in capsys.readouterr().err


def test_2_file_size_limit(tmp_path, monkeypatch):
    f = tmp_path / "big.csv"
    f.write_bytes(b"trajectory_id,step,outcome,conf_a\n" + b"t1,1,1,0.5\n" * 200_000)
    with pytest.raises(FileRefused, match="TPSVIZ_MAX_FILE_MB"):
        load(f, limits=Limits(max_bytes=1_000_000, max_rows=10**9))
    monkeypatch.setenv("TPSVIZ_MAX_FILE_MB", "1")
    with pytest.raises(FileRefused, match="TPSVIZ_MAX_FILE_MB"):
        load(f)
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_FILE_MB"):
        load(f.read_bytes(), name="big.csv")


def test_2_proc_file_with_size_zero_is_bounded_while_reading(tmp_path):
    # /proc files report st_size 0; the cap still holds while reading
    with pytest.raises(FileRefused, match="larger than"):
        read_file("/proc/self/maps", max_bytes=10)


def test_2_row_cap_is_checked_before_parsing_parquet(tmp_path):
    # 3M constant rows compress to a few kB; the metadata says how many rows there are
    f = tmp_path / "many.parquet"
    pd.DataFrame({"trajectory_id": np.zeros(3_000_000, dtype=np.int64), "step": 1, "outcome": 1,
                  "conf_a": 0.5}).to_parquet(f)
    assert f.stat().st_size < 200_000
    with pytest.raises(LogFormatError, match="3,000,000 data rows, more than the 1,000 this"):
        load(f, limits=Limits(max_rows=1000))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_2_row_cap_text_formats(tmp_path, suffix):
    f = tmp_path / f"log{suffix}"
    if suffix == ".csv":
        f.write_text("trajectory_id,step,outcome,conf_a\n" + "t1,1,1,0.5\n" * 50, encoding="utf-8")
    else:
        f.write_text('{"trajectory_id":"t","step":1,"outcome":1,"conf_a":0.5}\n' * 50, encoding="utf-8")
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_ROWS"):
        load(f, limits=Limits(max_rows=10))


def test_2_row_cap_nested_steps(tmp_path):
    rec = {"trajectory_id": "a", "outcome": 1, "steps": [{"step": i, "conf": {"v": 0.5}}
                                                         for i in range(1, 40)]}
    f = tmp_path / "n.jsonl"
    f.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    with pytest.raises(LogFormatError, match="39 steps"):
        load(f, limits=Limits(max_rows=10))


def test_2_cancelled_bootstrap_stops_quickly():
    from tpsviz.core.cancel import Cancelled, cancel_when
    from tpsviz.core.inference import bootstrap_sums

    x = np.random.default_rng(0).normal(size=50_000)
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    t = time.monotonic()
    with pytest.raises(Cancelled), cancel_when(stop.is_set):
        bootstrap_sums(x, 20_000, seed=123)  # ~10 s of work when not cancelled
    assert time.monotonic() - t < 3
    # without a predicate nothing changes
    assert bootstrap_sums(x[:100], 10, seed=1).shape == (10,)


def test_2_replay_cache_can_be_released():
    from tpsviz.core import resample
    from tpsviz.core.inference import bootstrap_sums

    bootstrap_sums(np.arange(1000.0), 100, seed=5)
    assert resample.forget_replay(3600) == 0     # used just now
    assert resample.forget_replay(0) >= 100 * 1000


# ----------------------------------------------------------------------------- 3. crashes
ALL_CENSORED = "trajectory_id,step,outcome,conf_a\nt1,1,,0.6\n"
EMPTY_PREDICTOR = "trajectory_id,step,outcome,conf_a,conf_b\nt1,1,1,0.6,\nt2,1,0,0.3,\nt2,2,0,0.2,\n"


def _write(tmp_path, text, name="log.csv"):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


@pytest.mark.parametrize("censoring", ["simple", "exact", "upper", "complete"])
def test_3_every_run_censored(tmp_path, capsys, censoring):
    f = _write(tmp_path, ALL_CENSORED)
    code, out, err = run_cli(["score", f, "--censoring", censoring], capsys)
    if censoring == "complete":
        assert code == 2 and "every run is censored" in err and "censoring mode" in err
    elif censoring == "exact":  # exact mode is exact: this log has no q_Z, the remedies are named
        assert code == 2 and "exact censoring needs q_Z for every censored run" in err and "--q-z" in err
    else:
        assert code == 0, err
        assert "nan" not in out.lower().replace("n/a", "")
        assert "need at least 2 runs" in out and "AUROC needs complete runs" in out
    code, out, err = run_cli(["compare", f, "--baseline", "a"], capsys)
    assert code in (0, 2) and "unexpected" not in err


def test_3_every_run_censored_skill_is_undefined_not_huge(tmp_path):
    from tpsviz.diagnostics.leaderboard import skill_table

    data = load(_write(tmp_path, ALL_CENSORED + "t2,1,,0.3\n"))
    sk = skill_table(data, tpsviz.ScoreSettings(censoring="simple"), n_boot=0)
    assert np.isnan(sk.loc["a", "skill"]) and "base rate is 0" in sk.loc["a", "skill_note"]


def test_3_predictor_without_any_forecast(tmp_path, capsys):
    import math

    from sklearn.metrics import roc_auc_score

    from tpsviz.diagnostics.compare import censoring_shift, compare, z_matrix
    from tpsviz.diagnostics.leaderboard import metric_table, skill_table

    f = _write(tmp_path, EMPTY_PREDICTOR)
    data = load(f)
    assert "holds no forecast at all" in " ".join(data.notes)
    s = tpsviz.ScoreSettings(n_boot=50)
    res = tpsviz.compute_tps(data, s)
    assert list(res.tps_matrix().columns) == ["a", "b"] and res.tps_matrix()["b"].isna().all()
    # a's numbers against a hand computation (log score: t1 forecasts 0.6 and succeeds, t2 0.3, 0.2 and fails);
    # b's are missing, on 0 runs, never an error
    tps_a = [math.log(0.6), math.log(0.7) + math.log(0.8)]
    mt = metric_table(data, s, n_boot=20)
    assert mt.loc["a", "auroc"] == pytest.approx(roc_auc_score([1, 0, 0], [0.6, 0.3, 0.2]))
    assert mt.loc["a", "tece_pooled"] == pytest.approx((0.4 + 0.3 + 0.2) / 3)  # one row per bin: |F − Y| each
    assert mt.loc["a", "scal_log_mean"] == pytest.approx((math.log(0.6) + math.log(1 - 0.25)) / 2)  # S(mean F)
    assert mt.loc["a", "n_trajectories"] == 2 and mt.loc["b", "n_trajectories"] == 0
    assert mt.loc["b", ["auroc", "tece_pooled", "scal_log_mean"]].isna().all()
    sk = skill_table(data, s, n_boot=20)
    ref = (1 * math.log(0.5) + 2 * math.log(0.5)) / 2  # the base rate 1/2 at every step, W_i = 1 and 2
    assert sk.loc["a", "tps_mean"] == pytest.approx(np.mean(tps_a)) and sk.loc["a", "tps_ref"] == pytest.approx(ref)
    assert sk.loc["a", "skill"] == pytest.approx(1 - np.mean(tps_a) / ref)
    assert np.isnan(sk.loc["b", "skill"]) and sk.loc["b", "n_trajectories"] == 0
    for base, other in (("a", "b"), ("b", "a")):  # no run has both: nothing paired, nothing made up
        cmp = compare(data, s, baseline=base)
        assert list(cmp.index) == [other] and cmp.loc[other, "n_runs"] == 0
        assert cmp.loc[other, ["tps_delta", "tps_se", "tps_z", "auroc_delta"]].isna().all()
    z = z_matrix(data, s, ["a", "b"])
    assert z.shape == (2, 2) and z.isna().all().all()
    shift = censoring_shift(data, s, ["a", "b"])  # no run is censored: complete-case = simple, shift 0
    assert shift.loc["a", "tps_from"] == pytest.approx(np.mean(tps_a)) and shift.loc["a", "shift"] == 0.0
    assert shift.loc["b", "n_from"] == 0 and np.isnan(shift.loc["b", "shift"])
    for args in (["score", f], ["score", f, "--json"]):  # a is scored, b's line says why not
        code, out, err = run_cli(args, capsys)
        assert code == 0, err
    assert "no run was scored" in run_cli(["score", f], capsys)[1]
    for base in ("a", "b"):  # nothing to compare: exit 2 with why, not an empty table and exit 0 (issue 45)
        code, out, err = run_cli(["compare", f, "--baseline", base], capsys)
        assert code == 2 and "nothing scored: no run" in err and "a forecast of b" in err, err


def test_3_deeply_nested_json(tmp_path, capsys):
    f = _write(tmp_path, "[" * 100_000 + "\n", "deep.jsonl")
    code, out, err = run_cli(["score", f], capsys)
    assert code == 2 and "nested too deeply" in err and "line 1" in err


def test_3_fuzzed_tables_never_raise_anything_but_log_format_error():
    rng = np.random.default_rng(8)
    cells = ["", "0", "1", "0.5", "2", "-1", "nan", "inf", "1e19", "x", "true", "None", "=1+1"]
    cols = ["trajectory_id", "step", "outcome", "conf_a", "conf_b", "censored", "q_z", "weight",
            "raw_s", "Conf_C", "t"]
    scored = 0
    for k in range(300):
        if k < 150:
            chosen = list(rng.choice(cols, size=rng.integers(1, len(cols)), replace=True))
        else:  # the columns a log needs and sound cells mostly, so that the fuzz reaches the scoring too
            chosen = cols[:4] + list(rng.choice(cols[4:], size=rng.integers(0, 4), replace=False))
            cells = ["0", "1", "0.5", "0.25", "1", "0"] * 6 + ["", "2", "-1", "nan", "inf", "x", "true"]
        rows = [",".join(str(rng.choice(cells)) for _ in chosen) for _ in range(rng.integers(0, 6))]
        raw = (",".join(chosen) + "\n" + "\n".join(rows) + "\n").encode()
        try:
            data = load(raw, name="fuzz.csv")
        except LogFormatError:
            continue
        res = tpsviz.compute_tps(data, tpsviz.ScoreSettings(n_boot=20))
        scored += 1
        m = res.tps_matrix()  # what it scores holds together: one row per predictor, rewards <= 0,
        assert list(res.summary.index) == data.predictors  # the mean over the runs it scored
        for name in data.predictors:
            tps = m[name].dropna().to_numpy() if name in m else np.array([])
            assert res.summary.loc[name, "n_trajectories"] == tps.size <= data.n_trajectories
            assert (tps <= 0).all()
            if tps.size and np.isfinite(tps).all():
                assert res.summary.loc[name, "tps_mean"] == pytest.approx(tps.mean())
    assert scored >= 5, scored  # (the fuzz reaches the scoring, not only the reader's refusals)


# ----------------------------------------------------------------------------- 4. misread input
def test_4_duplicate_header_names_are_an_error(tmp_path):
    with pytest.raises(LogFormatError, match=r"repeats column 'conf_a' \(columns 4, 5\)"):
        load(_write(tmp_path, "trajectory_id,step,outcome,conf_a,conf_a\nt1,1,1,0.5,0.6\n"))
    with pytest.raises(LogFormatError, match="repeats column 'outcome'"):
        load(_write(tmp_path, "trajectory_id,step,outcome,conf_a,outcome\nt1,1,1,0.5,1\n"))
    with pytest.raises(LogFormatError, match="repeats column 'conf_a'"):
        load(_write(tmp_path, "trajectory_id,step,outcome,conf_a,Conf_a\nt1,1,1,0.5,0.6\n"))


def test_4_duplicate_names_in_parquet_and_frames(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.table([pa.array(["t1"]), pa.array([1]), pa.array([1]), pa.array([0.5]), pa.array([0.7])],
                 names=["trajectory_id", "step", "outcome", "conf_a", "conf_a"])
    pq.write_table(t, tmp_path / "d.parquet")
    with pytest.raises(LogFormatError, match="repeats"):
        load(tmp_path / "d.parquet")
    df = pd.DataFrame([["t1", 1, 1, 0.5, 0.6]], columns=["trajectory_id", "step", "outcome",
                                                         "conf_a", "conf_a"])
    with pytest.raises(LogFormatError, match="repeats"):
        tpsviz.from_frame(df)


def test_4_names_are_matched_ignoring_case_with_a_note(tmp_path):
    data = load(_write(tmp_path, "Trajectory_ID,STEP,Outcome,Conf_A\nt1,1,1,0.5\nt2,1,0,0.4\n"))
    assert data.predictors == ["A"]
    assert any("ignoring case" in n and "'Conf_A' as 'conf_A'" in n for n in data.notes)


def test_4_metadata_named_like_internal_columns_is_kept_aside(tmp_path):
    data = load(_write(tmp_path, "trajectory_id,step,outcome,conf_a,t,length\n"
                                 "r1,1,1,0.5,9,x\nr1,2,1,0.6,8,x\nr2,1,0,0.4,7,y\n"))
    assert data.steps["t"].tolist() == [1, 2, 1]          # positions, not the log's column
    assert data.steps["t_log"].tolist() == [9, 8, 7]
    assert data.trajectories["length"].tolist() == [2, 1]
    assert data.trajectories["length_log"].tolist() == ["x", "y"]
    assert any("kept as 't_log'" in n for n in data.notes)


@pytest.mark.parametrize("step", ["1e19", "inf", "9223372036854775808", "-1", "1.5", "9007199254740993"])
def test_4_steps_out_of_range_are_an_error(tmp_path, step):
    with pytest.raises(LogFormatError, match="whole number from 0 to 2\\^53"):
        load(_write(tmp_path, f"trajectory_id,step,outcome,conf_a\nt1,{step},1,0.5\nt2,1,0,0.4\n"))


@pytest.mark.parametrize("spec,what", [("back:0.5:1000000", "underflow"), ("back:1e-300:30", "underflow"),
                                       ("front:1e308", "overflow"), ("front:1e-300", "underflow")])
def test_4_schedules_that_leave_floating_point_are_refused(capsys, spec, what):
    code, out, err = run_cli(["score", DEMO / "tau2-like.csv", "--schedule", spec, "--n-boot", "0"],
                             capsys)
    assert code == 2 and what in err and "strictly proper" in err
    data = load(DEMO / "tau2-like.csv")
    with pytest.raises(ValueError, match=what):
        tpsviz.compute_tps(data, tpsviz.ScoreSettings(schedule=tpsviz.parse_schedule(spec)))


def test_4_weight_column_of_zeros_is_refused(tmp_path):
    data = load(_write(tmp_path, "trajectory_id,step,outcome,conf_a,weight\nt1,1,1,0.5,0\nt2,1,0,0.4,0\n"))
    with pytest.raises(ValueError, match="every weight .* is 0"):
        tpsviz.compute_tps(data, tpsviz.ScoreSettings(schedule=tpsviz.parse_schedule("column")))


def test_4_huge_alpha_is_refused_and_small_scores_print_as_numbers(capsys):
    code, out, err = run_cli(["score", DEMO / "tau2-like.csv", "--alpha", "1e308"], capsys)
    assert code == 2 and "--alpha" not in err and "alpha = 1e+308 is too large" in err
    code, out, err = run_cli(["score", DEMO / "tau2-like.csv", "--alpha", "60", "--beta", "60",
                              "--n-boot", "0"], capsys)
    assert code == 0 and "-0.0000" not in out and "e-" in out


# ----------------------------------------------------------------------------- 5. exports
def test_5_csv_cells_are_neutralised_numbers_stay_numbers():
    from tpsviz.report.export import neutralise_cells, safe_csv

    df = pd.DataFrame({"trajectory_id": ["=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)", "\tx",
                                         "\rx", "ok"], "tps": [-0.5, 1, 2, 3, 4, 5, 6]})
    out = neutralise_cells(df)
    assert out["trajectory_id"].tolist()[:6] == ["'" + v for v in df["trajectory_id"][:6]]
    assert out["trajectory_id"].iloc[6] == "ok" and out["tps"].tolist() == df["tps"].tolist()
    back = pd.read_csv(io.StringIO(safe_csv(df)))
    assert back["tps"].iloc[0] == -0.5
    assert not back["trajectory_id"].str.startswith(("=", "+", "-", "@")).any()


def test_5_per_trajectory_export_is_neutralised_and_never_overwrites_the_input(tmp_path, capsys):
    log = _write(tmp_path, "trajectory_id,step,outcome,conf_a\n=1+1,1,1,0.6\n@x,1,0,0.3\n-3,1,1,0.5\n")
    before = log.read_bytes()
    out_file = tmp_path / "per.csv"
    code, _, err = run_cli(["score", log, "--per-trajectory", out_file, "--n-boot", "0"], capsys)
    assert code == 0, err
    text = out_file.read_text(encoding="utf-8")
    assert "'=1+1" in text and "'@x" in text and "'-3" in text
    for target in (log, tmp_path / "." / "log.csv"):
        code, _, err = run_cli(["score", log, "--per-trajectory", target], capsys)
        assert code == 2 and "write over (or into) the input" in err
    link = tmp_path / "alias.csv"
    link.symlink_to(log)
    code, _, err = run_cli(["score", log, "--per-trajectory", link], capsys)
    assert code == 2 and "write over (or into) the input" in err
    roll = _write(tmp_path, "trajectory_id,outcome\n=1+1,1\n", "roll.csv")
    code, _, err = run_cli(["score", log, "--rollouts", roll, "--per-trajectory", roll], capsys)
    assert code == 2 and "write over (or into) the input" in err
    assert log.read_bytes() == before


def test_5_per_trajectory_to_a_pipe_or_a_device_is_refused_not_waited_on(tmp_path, capsys):
    """Opening a pipe with no reader for writing blocks for ever: the run is refused first."""
    import os

    log = _write(tmp_path, "trajectory_id,step,outcome,conf_a\nr1,1,1,0.6\nr2,1,0,0.3\n")
    pipe = tmp_path / "out.csv"
    os.mkfifo(pipe)
    for target in (pipe, "/dev/null"):
        code, _, err = run_cli(["score", log, "--per-trajectory", target, "--n-boot", "0"], capsys)
        assert code == 2 and "is not a regular file; give a file name" in err


def test_5_cli_strips_control_characters(tmp_path, capsys):
    log = _write(tmp_path, "trajectory_id,step,outcome,conf_\x1b[31mred\n t1,1,1,0.6\nt2,1,0,0.3\n")
    code, out, err = run_cli(["score", log, "--n-boot", "0"], capsys)
    assert "\x1b" not in out + err


def test_5_no_nan_is_printed(capsys):
    for args in (["score", DEMO / "tau2-like.csv", "--n-boot", "0"],
                 ["score", DEMO / "tau2-like.csv", "--eps", "0"]):
        code, out, err = run_cli(args, capsys)
        assert code == 0, err
        assert "nan" not in out.lower().replace("n/a", "")
    code, out, _ = run_cli(["score", DEMO / "tau2-like.csv", "--eps", "0", "--json"], capsys)
    obj = json.loads(out)
    assert all("why_null" in v for v in obj["predictors"].values())


@pytest.mark.parametrize("args,flag", [(["--seed", "-1"], "--seed"), (["--n-boot", "-5"], "--n-boot"),
                                       (["--n-boot", "1000000"], "--n-boot"), (["--eps", "0.7"], "--eps"),
                                       (["--folds", "1", "--recalibrate", "platt"], "--folds")])
def test_5_option_errors_name_the_option(capsys, args, flag):
    code, out, err = run_cli(["score", DEMO / "tau2-like.csv", *args], capsys)
    assert code == 2 and flag in err


# ----------------------------------------------------------------------------- helpers of the UI
def test_markdown_escaper_neutralises_images_links_latex():
    import re

    from pages._ui.text import md

    for evil in ["![t](http://127.0.0.1:9/x.png)", "[click](javascript:alert(1))", "$\\frac12$",
                 "<img src=x>", "**bold**", ":red[x]", "a\x1b[31mb\nc"]:
        out = md(evil)
        assert not re.search(r"(?<!\\)[!\[\]()$<>*:]", out), out
        assert "\x1b" not in out and "\n" not in out


# ----------------------------------------------------------------------------- the adversarial pass
# (findings of a fresh adversarial review of the first round of fixes; each failed before)
def _zip(members: dict) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in members.items():
            z.writestr(n, data)
    return buf.getvalue()


_HEADER = json.dumps({"eval": {"model": "m", "task": "t"}, "status": "success"})


def test_adv_chunked_message_refs_cannot_expand_memory():
    shell = {"id": "s", "epoch": 1, "scores": {"a": {"value": "C"}},
             "message_refs": [[0, 1000]] * 600_000}
    pool = json.dumps([{"role": "assistant", "content": "x"}] * 1000)
    raw = _zip({"header.json": _HEADER, "samples/s_epoch_1/sample.json": json.dumps(shell),
                "samples/s_epoch_1/messages/0.json": pool})
    t = time.monotonic()
    with pytest.raises(LogFormatError, match="expand to 600,000,000 messages"):
        load(raw, name="bomb.eval", options=tpsviz.io.harness.runs.ReadOptions(conf=(("v", "x"),)))
    assert time.monotonic() - t < 10
    bad = dict(shell, message_refs=[[0, 10**9]])
    raw = _zip({"header.json": _HEADER, "samples/s_epoch_1/sample.json": json.dumps(bad),
                "samples/s_epoch_1/messages/0.json": pool})
    with pytest.raises(LogFormatError, match="inside the messages"):
        load(raw, name="bomb.eval")


def test_adv_harness_json_is_bounded_before_parsing():
    raw = ('{"info": {}, "simulations": [' + ",".join(["{}"] * 300_000) + "]}").encode()
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_JSON_NODES"):
        load(raw, name="amp.json", limits=Limits(max_json_nodes=100_000))


def test_adv_wide_parquet_is_refused_by_cells(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 20_000
    cols = {"trajectory_id": pa.array(np.arange(n).astype(str)), "step": pa.array(np.ones(n, int)),
            "outcome": pa.array(np.ones(n, int)), "conf_a": pa.array(np.full(n, 0.5))}
    cols.update({f"m{i}": pa.array(np.zeros(n)) for i in range(100)})
    pq.write_table(pa.table(cols), tmp_path / "wide.parquet", compression="zstd")
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_CELLS"):
        load(tmp_path / "wide.parquet", limits=Limits(max_cells=1_000_000))
    f = tmp_path / "wide.csv"
    f.write_text(",".join(["trajectory_id", "step", "outcome", "conf_a"] + [f"m{i}" for i in range(100)]) + "\n"
                 + ("t,1,1,0.5" + ",0" * 100 + "\n") * 50, encoding="utf-8")
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_CELLS"):
        load(f, limits=Limits(max_cells=1000))


@pytest.mark.parametrize("members", [
    {"header.json": _HEADER, "samples/s_epoch_1.json": '{"id": "s", "epoch": 1, "x": ' + "9" * 5000 + "}"},
    {"header.json": "[1]", "samples/s_epoch_1.json": "{}"},
    {"header.json": '{"eval": "x"}', "samples/s_epoch_1.json":
        json.dumps({"id": "s", "epoch": 1, "scores": {"a": {"value": "C"}}, "output": "x",
                    "events": [{"event": "model", "output": [1]}],
                    "messages": [{"role": "assistant", "id": [1], "metadata": {"x": 0.5}}]})},
    {"header.json": _HEADER, "samples/s_epoch_1/sample.json": "[]"},
    {"header.json": _HEADER, "samples/s_epoch_1/sample.json": json.dumps({"id": "s", "message_refs": [[0, 1e999]]})},
    {"header.json": _HEADER, "samples/s_epoch_1/sample.json": json.dumps({"id": "s", "message_refs": []}),
     "samples/s_epoch_1/messages/" + "9" * 5000 + ".json": "[]"},
], ids=["long-int", "header-list", "wrong-types", "shell-list", "refs-inf", "chunk-name-digits"])
def test_adv_odd_inspect_archives_never_crash(members, capsys):
    raw = _zip(members)
    try:
        data = load(raw, name="odd.eval", options=tpsviz.io.harness.runs.ReadOptions(conf=(("v", "metadata.x"),)))
    except LogFormatError as exc:
        assert str(exc).startswith("odd.eval"), exc  # refused, naming the archive
        return
    # read: the one sample with its score "C" (correct) and the forecast 0.5 at metadata.x
    assert data.n_trajectories == 1 and data.predictors == ["v"]
    assert data.trajectories["outcome"].tolist() == [1.0] and data.forecasts("v").tolist() == [0.5]


def test_adv_messages_cut_file_values(tmp_path):
    secret = "SECRET-" + "A" * 3000
    obj = {"info": {}, "simulations": [{"id": "s1", "termination_reason": secret, "messages": []}]}
    f = tmp_path / "r.json"
    f.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(LogFormatError) as e:
        load(f)
    assert "A" * 100 not in str(e.value)
    ins = {"eval": {}, "samples": [{"id": "s1", "epoch": "SECRET-" + "B" * 2000, "messages": []}]}
    f.write_text(json.dumps(ins), encoding="utf-8")
    with pytest.raises(LogFormatError) as e:
        load(f)
    assert "B" * 100 not in str(e.value)


def test_adv_per_trajectory_never_writes_over_any_input(tmp_path, capsys):
    import shutil

    folder = tmp_path / "t2"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tau2" / "tau2v1_airline_whissle_dirlayout", folder)
    before = (folder / "results.json").read_bytes()
    fc = tmp_path / "fc.csv"
    fc.write_text("trajectory_id,step,conf_a\nx,1,0.5\n", encoding="utf-8")
    for target in (folder / "results.json", folder / "simulations" / "out.csv", fc):
        code, _, err = run_cli(["score", folder, "--forecasts", fc, "--per-trajectory", target], capsys)
        assert code == 2 and "write over (or into) the input" in err
    assert (folder / "results.json").read_bytes() == before and fc.read_text().startswith("trajectory_id")


def test_adv_column_weights_that_overflow_are_refused(tmp_path):
    data = load(_write(tmp_path, "trajectory_id,step,outcome,conf_a,weight\nt1,1,1,0.5,1e308\nt1,2,1,0.5,1e308\n"
                                 "t2,1,0,0.4,1e308\n"))
    with pytest.raises(ValueError, match="overflow"):
        tpsviz.compute_tps(data, tpsviz.ScoreSettings(schedule=tpsviz.parse_schedule("column")))


def test_adv_carriage_return_line_ends_and_non_finite_rewards(tmp_path, capsys):
    f = tmp_path / "cr.csv"
    f.write_bytes(b"trajectory_id,step,outcome,conf_a\rt1,1,1,0.6\rt2,1,0,0.3\r")
    data = load(f)
    assert data.n_trajectories == 2 and any("carriage returns" in n for n in data.notes)
    obj = {"info": {}, "simulations": [{"id": "s1", "termination_reason": "user_stop",
                                        "reward_info": {"reward": float("nan")},
                                        "messages": [{"role": "assistant", "content": "x"}]}]}
    g = tmp_path / "nan.json"
    g.write_text(json.dumps(obj), encoding="utf-8")  # json writes NaN
    with pytest.raises(LogFormatError, match="not a finite number"):
        load(g, options=tpsviz.io.harness.runs.ReadOptions(conf=(("v", "content"),)))


def test_2_checkpoints_between_predictors_stop_scoring_and_metrics():
    from tpsviz.core.cancel import Cancelled, cancel_when
    from tpsviz.diagnostics.leaderboard import metric_table

    data = load(DEMO / "tau2-like.csv")
    for fn in (lambda: tpsviz.compute_tps(data, tpsviz.ScoreSettings(n_boot=0)),
               lambda: metric_table(data, tpsviz.ScoreSettings(n_boot=0))):
        with pytest.raises(Cancelled), cancel_when(lambda: True):
            fn()


# ----------------------------------------------------------------------------- second adversarial pass
def test_adv2_flat_json_lists_count_against_the_value_cap():
    raw = _zip({"header.json": "[" + ",".join(["1.5"] * 200_000) + "]"})
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_JSON_NODES"):
        load(raw, name="floats.eval", limits=Limits(max_json_nodes=100_000))
    doc = ("[" + ",".join(["1"] * 200_000) + "]").encode()
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_JSON_NODES"):
        load(doc, name="list.json", limits=Limits(max_json_nodes=100_000))


def test_adv2_treatment_keys_are_unique_per_reason():
    from pages._ui.reading import treat_key

    reasons = ["user_stop", "user stop", "user-stop", "a" * 41, "a" * 40 + "b", "max_steps"]
    keys = [treat_key(r) for r in reasons]
    assert len(set(keys)) == len(keys)
    assert treat_key("max_steps") == "tr_max_steps"


def test_adv2_rollout_ids_are_cut_in_notes(tmp_path, capsys):
    log = _write(tmp_path, "trajectory_id,step,outcome,conf_a\nt1,1,,0.6\nt2,1,1,0.4\n")
    roll = _write(tmp_path, "trajectory_id,outcome\n" + "S" * 600 + ",1\nt1,0\n", "roll.csv")
    code, out, err = run_cli(["score", log, "--rollouts", roll, "--n-boot", "0"], capsys)
    assert code == 0 and "S" * 100 not in out


def test_adv2_raw_only_log_whose_recalibration_fails(tmp_path, capsys):
    f = _write(tmp_path, "trajectory_id,step,outcome,raw_x\na,1,1,5\na,2,1,6\nb,1,0,-1\nb,2,0,-2\nc,1,1,3\nd,1,0,0\n")
    for args in (["--recalibrate", "platt", "--folds", "2"], ["--recalibrate", "beta"]):
        code, out, err = run_cli(["score", f, *args, "--n-boot", "0"], capsys)
        assert code == 2 and "gave no predictor" in err


def test_adv2_schedule_horizon_overflow(capsys):
    code, out, err = run_cli(["score", DEMO / "webshop-like.csv", "--schedule", "back:0.5:1e400"], capsys)
    assert code == 2 and "H an integer" in err


def test_adv2_parquet_dictionary_bomb_is_refused_before_decoding(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 400
    big = "x" * 200_000
    table = pa.table({"trajectory_id": pa.array([f"t{i}" for i in range(n)]), "step": pa.array([1] * n),
                      "outcome": pa.array([i % 2 for i in range(n)]), "conf_a": pa.array([0.5] * n),
                      "meta": pa.array([big] * n).dictionary_encode()})
    pq.write_table(table, tmp_path / "dict.parquet", compression="zstd")
    assert (tmp_path / "dict.parquet").stat().st_size < 100_000
    with pytest.raises(LogFormatError, match="text columns expand"):
        load(tmp_path / "dict.parquet", limits=Limits(max_bytes=10_000_000))
    ok = load(tmp_path / "dict.parquet")  # within the default limit it reads, as plain text
    assert ok.trajectories["meta"].iloc[0] == big


def test_adv2_nested_json_lines_count_flattened_cells(tmp_path):
    top = {f"m{i}": i for i in range(50)}
    rec = {"trajectory_id": "a", "outcome": 1, **top,
           "steps": [{"step": s, "conf": {"v": 0.5}} for s in range(1, 2001)]}
    f = tmp_path / "n.jsonl"
    f.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_CELLS"):
        load(f, limits=Limits(max_cells=50_000))


def test_adv2_success_threshold_must_be_finite():
    with pytest.raises(ValueError, match="finite"):
        tpsviz.io.harness.runs.ReadOptions(success_threshold=float("nan"))


def test_adv2_per_trajectory_refuses_a_hard_link_to_an_input(tmp_path, capsys):
    import shutil

    folder = tmp_path / "t2"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tau2" / "tau2v1_airline_whissle_dirlayout", folder)
    link = tmp_path / "hl.json"
    os.link(folder / "results.json", link)
    before = (folder / "results.json").read_bytes()
    code, _, err = run_cli(["score", folder, "--conf", "v=metadata.confidence", "--per-trajectory", link], capsys)
    assert code == 2 and "write over" in err and (folder / "results.json").read_bytes() == before


# ----------------------------------------------------------------------------- third adversarial pass
def test_adv3_run_level_text_is_not_copied_onto_every_step(tmp_path):
    obj = json.loads((Path(__file__).parent / "fixtures" / "tau2" / "tau2v1_airline_whissle_trimmed.json")
                     .read_text(encoding="utf-8"))
    obj["simulations"][0]["task_id"] = "T" * 2_000_000
    f = tmp_path / "r.json"
    f.write_text(json.dumps(obj), encoding="utf-8")
    data = load(f, options=tpsviz.io.harness.runs.ReadOptions(conf=(("v", "content"),)))
    assert data.trajectories["task_id"].str.len().max() <= 1001
    assert any("were cut" in n for n in data.notes)
    obj["simulations"][0]["id"] = "I" * 500
    f.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(LogFormatError, match="longer than 200 characters"):
        load(f, options=tpsviz.io.harness.runs.ReadOptions(conf=(("v", "content"),)))
    rec = {"trajectory_id": "a", "outcome": 1, "meta": "M" * 100_000,
           "steps": [{"step": s, "conf": {"v": 0.5}} for s in range(1, 50)]}
    g = tmp_path / "n.jsonl"
    g.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    assert load(g).trajectories["meta"].str.len().max() <= 1001


def test_adv3_nested_parquet_columns_are_left_out_undecoded(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 200
    big = pa.array(["y" * 100_000] * 3).dictionary_encode()
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, 3 * n + 1, 3), pa.int32()),
                                     pa.concat_arrays([big] * n))
    t = pa.table({"trajectory_id": [f"t{i}" for i in range(n)], "step": [1] * n, "outcome": [i % 2 for i in range(n)],
                  "conf_a": [0.5] * n, "lst": lists})
    pq.write_table(t, tmp_path / "l.parquet", compression="zstd")
    data = load(tmp_path / "l.parquet")
    assert "lst" not in data.steps and "lst" not in data.trajectories
    assert any("nested type" in n for n in data.notes)


def test_adv3_bare_cr_rows_after_an_lf_header_are_counted(tmp_path):
    f = tmp_path / "cr.csv"
    f.write_bytes(b"trajectory_id,step,outcome,conf_a\n" + b"t1,1,1,0.5\r" * 5000)
    with pytest.raises(LogFormatError, match="TPSVIZ_MAX_ROWS|TPSVIZ_MAX_CELLS"):
        load(f, limits=Limits(max_rows=1000))


def test_adv3_lone_surrogates_never_crash(tmp_path, capsys):
    f = tmp_path / "s.jsonl"
    f.write_text('{"trajectory_id": "a\\ud800", "step": 1, "outcome": 1, "conf_x": 0.5, "m\\udc00": "v\\ud800"}\n'
                 '{"trajectory_id": "b", "step": 1, "outcome": 0, "conf_x": 0.4, "m\\udc00": "w"}\n', encoding="utf-8")
    for args in (["score", f, "--n-boot", "0"], ["score", f, "--json", "--n-boot", "0"],
                 ["score", f, "--per-trajectory", tmp_path / "o.csv", "--n-boot", "0"]):
        code, out, err = run_cli(args, capsys)
        assert code == 0, err


def test_adv3_mapped_ids_stay_text(tmp_path):
    f = _write(tmp_path, "run,turn,success,p\n01,1,1,0.6\n1,1,0,0.4\n1e0,1,1,0.5\n3.10,1,0,0.3\n3.1,1,1,0.2\n")
    data = load(f, options=tpsviz.io.harness.runs.ReadOptions(mapping=(("trajectory_id", "run"), ("step", "turn"),
                                                          ("outcome", "success"), ("conf_p", "p"))))
    assert data.n_trajectories == 5


# --------------------------------------------------------------------------- fourth adversarial pass
def test_adv4_jsonl_rows_split_on_line_feeds_only(tmp_path, capsys):
    # "\r", "\x1e", U+2028 … are not JSON Lines separators: a file of "{}\r" records used to pass
    # the row cap as one line and then parse every record (9 GB from 180 MB)
    rec = json.dumps({"trajectory_id": "t1", "step": 1, "outcome": 1, "conf_a": 0.6})
    p = tmp_path / "cr.jsonl"
    p.write_bytes(("\r".join([rec] * 50) + "\n").encode())
    code, out, err = run_cli(["score", str(p), "--n-boot", "0"], capsys)
    assert code == 2 and "line 1: not valid JSON" in err and "line feed" in err
    # a record holding U+2028 inside a string is one record, not two
    p2 = tmp_path / "u2028.jsonl"
    rows = [{"trajectory_id": f"t{i}", "step": 1, "outcome": i % 2, "conf_a": 0.5, "note": "a\u2028b"}
            for i in range(4)]
    p2.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    assert load(str(p2)).n_trajectories == 4


def test_adv4_jsonl_cells_are_capped_while_parsing(tmp_path):
    p = tmp_path / "wide.jsonl"
    rec = {"trajectory_id": "t1", "step": 1, "outcome": 1, "conf_a": 0.5}
    rec.update({f"m{i}": i for i in range(40)})
    p.write_text("\n".join(json.dumps(rec | {"step": k}) for k in range(1, 200)) + "\n")
    with pytest.raises(LogFormatError, match="cells|JSON values"):  # (since pass 6 also counted before parsing)
        load(str(p), limits=Limits(max_cells=2_000))


def test_adv4_parquet_fixed_width_columns_count_their_decoded_size(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, width = 600, 1_000_000  # 600 × 1 MB = 600 MB decoded from a file of a few KB
    blob = pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([b"x" * width], pa.binary(width)))
    t = pa.table({"trajectory_id": [f"t{i // 10}" for i in range(n)], "step": [i % 10 + 1 for i in range(n)],
                  "outcome": [(i // 10) % 2 for i in range(n)], "conf_a": [0.5] * n, "meta": blob})
    p = tmp_path / "flba.parquet"
    pq.write_table(t, p, compression="zstd")
    assert p.stat().st_size < 100_000
    with pytest.raises(LogFormatError, match="expands to 572 MB"):
        load(str(p), limits=Limits(max_bytes=100 * 2**20))


def test_adv4_chunked_eval_samples_are_indexed_once(tmp_path):
    import zipfile

    from tpsviz.io.harness import inspect_log

    p = tmp_path / "chunked.eval"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_STORED) as z:
        z.writestr("header.json", json.dumps({"status": "success", "eval": {"task": "t", "model": "m"}}))
        msgs = json.dumps([{"role": "assistant", "id": "a", "metadata": {"confidence": 0.5}}])
        for i in range(300):
            pre = f"samples/{i}_epoch_1"
            z.writestr(f"{pre}/sample.json", json.dumps({
                "id": i, "epoch": 1, "scores": {"s": {"value": "C" if i % 2 else "I"}}, "message_refs": [[0, 1]]}))
            z.writestr(f"{pre}/messages/0.json", msgs)
    calls = []
    real = inspect_log._CHUNK.match

    class Counting:
        def match(self, name):
            calls.append(name)
            return real(name)

    orig = inspect_log._CHUNK
    inspect_log._CHUNK = Counting()
    try:
        data = load(str(p), options=tpsviz.io.harness.runs.ReadOptions(conf=(("verbal", "metadata.confidence"),)))
    finally:
        inspect_log._CHUNK = orig
    assert data.n_trajectories == 300
    assert len(calls) <= 2 * 300 + 10  # one pass over the ~600 members, not samples × members


def test_adv4_forecasts_table_is_validated_on_its_own_lines(tmp_path, capsys):
    log = tmp_path / "small.csv"
    log.write_text("trajectory_id,step,outcome,conf_a\nr1,1,1,0.6\nr1,2,1,0.7\nr2,1,0,0.3\n")
    cases = {
        "trajectory_id,step,conf_b\nr1,1,0.5\nr1,inf,0.5\n": "column 'step' must hold whole numbers from 0 to 2^53; not so at line 3",
        "trajectory_id,step,conf_b\nr1,1,0.5\nr1,1e30,0.5\n": "not so at line 3",
        "trajectory_id,step,conf_b\nr2,1,-1\nr1,1,0.5\n": "side.csv: column 'conf_b': probabilities must be in [0, 1]; not so at line 2",
        "trajectory_id,step,raw_x\nr1,1,inf\n": "signals must be finite",
    }
    for text, message in cases.items():
        side = tmp_path / "side.csv"
        side.write_text(text)
        code, out, err = run_cli(["score", str(log), "--forecasts", str(side), "--n-boot", "0"], capsys)
        assert code == 2 and message in err, err
        assert "unexpected failure" not in err and "small.csv" not in err.split(":")[1]
    side = tmp_path / "side.csv"
    side.write_text("Trajectory_ID,Step,conf_b\nr1,1,0.5\nr1,2,0.5\nr2,1,0.4\n")  # names matched ignoring case
    code, out, err = run_cli(["score", str(log), "--forecasts", str(side), "--n-boot", "0"], capsys)
    assert code == 0, err
    side.write_text("trajectory_id,step,conf_b,CONF_b\nr1,1,0.5,0.4\n")
    code, out, err = run_cli(["score", str(log), "--forecasts", str(side), "--n-boot", "0"], capsys)
    assert code == 2 and "repeats column" in err


def test_adv4_a_column_mapped_twice_is_refused(tmp_path, capsys):
    p = tmp_path / "other.csv"
    p.write_text("run,turn,success,p,q\nr1,1,1,0.6,0.5\nr2,1,0,0.3,0.5\n")
    code, out, err = run_cli(["score", str(p), "--map", "trajectory_id=run,step=turn,outcome=success,"
                              "conf_a=p,conf_b=p", "--n-boot", "0"], capsys)
    assert code == 2 and "column 'p' is mapped twice" in err


def test_adv4_eval_archive_with_too_many_members_is_refused_before_indexing(tmp_path, monkeypatch):
    import zipfile

    from tpsviz.io.harness import evalzip

    monkeypatch.setattr(evalzip, "MAX_MEMBERS", 500)
    p = tmp_path / "many.eval"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("header.json", "{}")
        for i in range(600):
            z.writestr(f"junk/{i}", "")
    with pytest.raises(LogFormatError, match="lists 601 members, more than the 500"):
        load(str(p))


def test_adv4_per_step_recalibration_fits_a_bounded_number_of_maps():
    from tpsviz.diagnostics.recalibration import MAX_STEP_MAPS, recalibrate

    rng = np.random.default_rng(0)
    n_runs, length = 60, 400  # 400 step positions: one map per position would be 5 × 400 fits
    g = np.repeat(np.arange(n_runs), length)
    t = np.tile(np.arange(1, length + 1), n_runs)
    y_run = rng.random(n_runs) < 0.5
    x = np.clip(0.5 + 0.3 * (y_run[g] - 0.5) + 0.1 * rng.standard_normal(g.size), 0.01, 0.99)
    res = recalibrate(x, y_run[g].astype(float), g, method="isotonic", folds=5, per_step=t)
    rep = res.report
    assert rep["n_fit"] <= 5 * (MAX_STEP_MAPS + 1)
    assert rep["n_fallback"] >= 5 * (length - MAX_STEP_MAPS)
    assert max(rep["fallback_steps"]) == length and np.isfinite(res.probabilities).all()


def test_adv4_mixed_line_ends_are_counted_before_parsing(tmp_path):
    p = tmp_path / "mixed.csv"
    rows = "".join(f"r{i},1,{i % 2},0.5" + ("\n" if i % 2 else "\r") for i in range(40))
    p.write_bytes(b"trajectory_id,step,outcome,conf_a\n" + rows.encode())
    with pytest.raises(LogFormatError, match="40 rows × 4 columns = 160 cells"):
        load(str(p), limits=Limits(max_cells=100))


def test_adv4_steps_not_numbered_one_to_t_get_a_note(tmp_path):
    p = tmp_path / "odd.csv"
    p.write_text("trajectory_id,step,outcome,conf_a\nr1,0,1,0.6\nr1,7,1,0.7\nr2,1,0,0.3\nr2,2,0,0.2\n")
    data = load(str(p))
    assert any("1 run(s) have steps that are not numbered 1, 2, …, T" in n for n in data.notes)
    assert list(data.steps["t"]) == [1, 2, 1, 2]


def test_adv4_conf_pairs_are_capped():
    from tpsviz.io.harness.runs import MAX_CONF, parse_conf

    assert len(parse_conf([",".join(f"v{i}=c" for i in range(MAX_CONF))])) == MAX_CONF
    with pytest.raises(ValueError, match=f"at most {MAX_CONF}"):
        parse_conf([",".join(f"v{i}=c" for i in range(MAX_CONF + 1))])


def test_adv4_fullwidth_formula_characters_are_neutralised():
    from tpsviz.report.export import safe_csv

    out = safe_csv(pd.DataFrame({"a": ["\uff1d1+1", "\uff20cmd", "ok"], "b": [1.5, -2.0, 3.0]}))
    assert "'\uff1d1+1" in out and "'\uff20cmd" in out and "-2.0" in out and "'-2.0" not in out


# --------------------------------------------------------------------------- fifth adversarial pass
def test_adv5_leaving_steps_empty_buys_no_skill():
    from tpsviz.diagnostics.leaderboard import skill_table
    from tpsviz.core.tps import ScoreSettings

    rng = np.random.default_rng(3)
    rows = []
    for i in range(60):
        y = int(rng.random() < 0.43)
        for t in range(1, 7):
            rows.append({"trajectory_id": f"r{i}", "step": t, "outcome": y,
                         "conf_const": 0.5, "conf_sparse": 0.5 if t == 1 else np.nan})
    data = tpsviz.from_frame(pd.DataFrame(rows))
    sk = skill_table(data, ScoreSettings(censoring="complete", n_boot=50))
    # the same constant forecast on fewer steps: the same skill, not a huge one
    assert sk.loc["sparse", "skill"] == pytest.approx(sk.loc["const", "skill"], abs=0.02)
    assert sk.loc["sparse", "skill"] < 0.05


def test_adv5_a_reversed_predictor_is_said_to_point_the_wrong_way():
    from tpsviz.synthetic.agent import simulate
    from tpsviz.core.tps import ScoreSettings
    from tpsviz.diagnostics.verdict import verdicts

    data = simulate("webshop-like", n_trajectories=300, seed=4).to_data()
    data = data.with_predictor("reversed", 1 - data.forecasts("truthful"))
    v = verdicts(data, ScoreSettings(censoring="exact", n_boot=100), ["reversed"])["reversed"]
    assert "point the wrong way" in v.text, v.text


def test_adv5_predictor_names_differing_in_case_are_one_column(tmp_path):
    p = tmp_path / "dupcase.csv"
    p.write_text("trajectory_id,step,outcome,conf_a,CONF_A\nr1,1,1,0.6,0.4\n")
    with pytest.raises(LogFormatError, match="repeats column 'conf_a'"):
        load(str(p))


def test_adv5_group_differences_that_cannot_be_computed_say_why(capsys):
    rows = []
    for g, n, outcome in (("allcens", 20, None), ("mixed", 40, "mix"), ("nopred", 10, "mix")):
        for i in range(n):
            y = (i % 2) if outcome == "mix" else np.nan
            rows.append({"trajectory_id": f"{g}{i}", "step": 1, "outcome": y, "censored": outcome is None,
                         "model": g, "conf_a": np.nan if g == "nopred" else 0.3 + 0.4 * (i % 2)})
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"grp_edge_{os.getpid()}.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    try:
        code, out, err = run_cli(["compare", str(path), "--by", "model", "--n-boot", "50"], capsys)
        assert code == 0, err
        assert "mixed - " not in out and "allcens - mixed" in out  # the base group has a defined skill
        assert "n/a (no run of group 'nopred' has a forecast" in out
        code, out, err = run_cli(["compare", str(path), "--by", "model", "--n-boot", "50", "--json"], capsys)
        obj = json.loads(out)
        why = obj["differences"]["nopred"]["predictors"]["a"]["why_null"]
        assert "no run of group 'nopred'" in why["tps"]
    finally:
        path.unlink()


def test_adv5_ids_joined_by_stripping_spaces_get_a_note(tmp_path):
    p = tmp_path / "ws.jsonl"
    rows = [{"trajectory_id": "r1", "step": 1, "outcome": 1, "conf_a": 0.6},
            {"trajectory_id": " r1", "step": 2, "outcome": 1, "conf_a": 0.7},
            {"trajectory_id": "r2", "step": 1, "outcome": 0, "conf_a": 0.3}]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    data = load(str(p))
    assert data.n_trajectories == 2
    assert any("1 id(s) that differ from another only by them" in n for n in data.notes)


def test_adv5_two_logs_compare_when_one_has_a_column_named_log(tmp_path, capsys):
    a = pd.read_csv(DEMO / "tau2-like.csv").assign(log="x")
    pa = tmp_path / "withlog.csv"
    a.to_csv(pa, index=False)
    code, out, err = run_cli(["compare", str(pa), str(DEMO / "webshop-like.csv"), "--n-boot", "0",
                              "--censoring", "simple"], capsys)
    assert code == 0, err
    assert "groups of log_2" in out


def test_adv5_harness_options_on_a_table_get_a_note(tmp_path, capsys):
    code, out, err = run_cli(["score", str(DEMO / "tau2-like.csv"), "--treat", "max_steps=failure",
                              "--n-boot", "0"], capsys)
    assert code == 0 and "--treat applies to harness logs only" in out


def test_adv5_verdict_needs_observed_outcomes(tmp_path):
    from tpsviz.core.tps import ScoreSettings
    from tpsviz.diagnostics.verdict import verdicts

    rows = []
    for i in range(80):
        cens = i >= 40
        for t in (1, 2):
            rows.append({"trajectory_id": f"r{i}", "step": t, "outcome": np.nan if cens else i % 2,
                         "censored": cens, "q_z": 0.5 if cens else np.nan,
                         "conf_a": 0.45 + 0.05 * (i % 3) if cens else np.nan,
                         "conf_b": 0.3 + 0.4 * (i % 2) if not cens else 0.5})
    data = tpsviz.from_frame(pd.DataFrame(rows))
    v = verdicts(data, ScoreSettings(censoring="exact", n_boot=50))
    assert v["a"].label == "too little data" and "0 runs with an observed outcome" in v["a"].text
    assert v["b"].label != "too little data"


# --------------------------------------------------------------------------- sixth adversarial pass
def test_adv6_jsonl_objects_and_lists_are_capped_before_parsing(tmp_path):
    p = tmp_path / "junk.jsonl"
    rows = [{"trajectory_id": f"r{i}", "step": 1, "outcome": i % 2, "conf_a": 0.5} for i in range(30)]
    rows[0]["junk"] = [{}] * 5000  # 2 bytes each in the file, ~60 once parsed
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(LogFormatError, match="more than 1,000 JSON objects and lists"):
        load(str(p), limits=Limits(max_json_nodes=1000))
    with pytest.raises(LogFormatError, match="more than 2,000 JSON values"):
        load(str(p), limits=Limits(max_cells=2000))
    assert load(str(p)).n_trajectories == 30  # within the default caps it loads


def test_adv6_parquet_decoded_text_is_bounded_by_the_file_cap(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 4000
    ids = pa.array([f"{'x' * 1200}-{i // 10}" for i in range(n)]).dictionary_encode()
    t = pa.table({"trajectory_id": ids, "step": [i % 10 + 1 for i in range(n)],
                  "outcome": [(i // 10) % 2 for i in range(n)], "conf_a": [0.5] * n})
    p = tmp_path / "longids.parquet"
    pq.write_table(t, p, compression="zstd")
    with pytest.raises(LogFormatError, match="text columns expand to 5 MB, more than the 4 MB"):
        load(str(p), limits=Limits(max_bytes=4 * 2**20))


def test_adv6_forecasts_a_rounding_error_outside_zero_one_are_kept(tmp_path):
    p = tmp_path / "ulp.csv"
    p.write_text("trajectory_id,step,outcome,conf_a\nr1,1,1,1.0000000000000002\nr2,1,0,-1e-17\nr3,1,0,0.4\n")
    data = load(str(p))
    assert data.forecasts("a").max() == 1.0 and data.forecasts("a").min() == 0.0
    assert any("float rounding" in n for n in data.notes)
    p.write_text("trajectory_id,step,outcome,conf_a\nr1,1,1,1.01\n")
    with pytest.raises(LogFormatError, match="probabilities|percentages"):
        load(str(p))


@pytest.mark.parametrize("wrong", ["1.5", "inf", "-0.2", "-inf"])
def test_adv6_a_rounding_error_does_not_let_a_wrong_forecast_through(tmp_path, wrong):
    """Only the values within 1e-9 outside [0, 1] are set into it: a 1.5 (or ∞) in the same column
    is still refused (it was clipped to 1 with them; found by tests/test_engine_parity.py)."""
    p = tmp_path / "mixed.csv"
    p.write_text(f"trajectory_id,step,outcome,conf_a\nr1,1,1,1.000000000001\nr2,1,0,{wrong}\nr3,1,0,0.4\n")
    with pytest.raises(LogFormatError, match="probabilities must be in") as err:
        load(str(p))
    assert "at line 3" in str(err.value)  # (the header is line 1: only r2's row is named)


def test_adv6_an_infinitely_wrong_forecast_is_said_so():
    from tpsviz.core.tps import ScoreSettings
    from tpsviz.diagnostics.verdict import verdicts

    rows = [{"trajectory_id": f"r{i}", "step": t, "outcome": i % 2,
             "conf_a": (0.0 if (i == 1 and t == 1) else 0.3 + 0.4 * (i % 2))} for i in range(60) for t in (1, 2)]
    data = tpsviz.from_frame(pd.DataFrame(rows))
    v = verdicts(data, ScoreSettings(censoring="complete", eps=0.0, n_boot=50))["a"]
    assert "punishes without limit" in v.text


def test_adv6_wide_logs_are_refused_by_their_whole_header(tmp_path):
    from tpsviz.io.tables import MAX_PREDICTORS
    from tpsviz.io.tables import MAX_COLUMNS

    p = tmp_path / "wide.csv"
    cols = ["trajectory_id", "step", "outcome", "conf_a"] + [f"m{i}" for i in range(MAX_COLUMNS)]
    p.write_text(",".join(cols) + "\n" + ",".join(["r1", "1", "1", "0.5"] + [""] * MAX_COLUMNS) + "\n")
    with pytest.raises(LogFormatError, match=f"{MAX_COLUMNS + 4:,} columns, more than the {MAX_COLUMNS:,}"):
        load(str(p))
    # a header longer than 64 KiB is read whole: no false "repeats column"
    long = ["trajectory_id", "step", "outcome", "conf_a"] + [f"meta_{'x' * 80}_{i}" for i in range(900)]
    p.write_text(",".join(long) + "\n" + ",".join(["r1", "1", "1", "0.5"] + ["v"] * 900) + "\n")
    assert len(",".join(long)) > 65536
    assert load(str(p)).n_trajectories == 1
    many = ["trajectory_id", "step", "outcome"] + [f"conf_p{i}" for i in range(MAX_PREDICTORS + 1)]
    p.write_text(",".join(many) + "\n" + ",".join(["r1", "1", "1"] + ["0.5"] * (MAX_PREDICTORS + 1)) + "\n")
    with pytest.raises(LogFormatError, match=f"more than the {MAX_PREDICTORS} tpsviz scores at once"):
        load(str(p))


def test_adv6_group_values_differing_by_spaces_are_one_group():
    from tpsviz.diagnostics.groups import group_labels

    rows = [{"trajectory_id": f"r{i}", "step": 1, "outcome": i % 2, "conf_a": 0.5,
             "model": ["X", "X ", "Y"][i % 3]} for i in range(30)]
    data = tpsviz.from_frame(pd.DataFrame(rows))
    labels = group_labels(data, "model")
    assert sorted(set(labels)) == ["X", "Y"] and (labels == "X").sum() == 20


# --------------------------------------------------------------------------- seventh adversarial pass
def _nested(path, n, kind):
    """n runs of one step in the nested JSON Lines layout, each naming a field of its own."""
    with open(path, "w") as f:
        for i in range(n):
            step = {"step": 1, "conf": {"a": 0.5}}
            rec = {"trajectory_id": f"r{i}", "outcome": i % 2, "steps": [step]}
            if kind == "conf":
                step["conf"][f"p{i}"] = 0.5
            elif kind == "top":
                rec[f"m{i}"] = 1
            else:
                step[f"m{i}"] = 1
            f.write(json.dumps(rec) + "\n")


@pytest.mark.parametrize("kind,message", [("conf", "more than 64 predictors"),
                                          ("top", "more than 1,000 distinct fields"),
                                          ("step", "more than 1,000 distinct fields")])
def test_adv7_nested_jsonl_width_is_refused_before_the_table_is_built(tmp_path, kind, message):
    p = tmp_path / f"nested_{kind}.jsonl"
    _nested(p, 3000, kind)
    t = time.perf_counter()
    with pytest.raises(LogFormatError, match=message):
        load(str(p))
    assert time.perf_counter() - t < 20  # was quadratic: 10,000 runs took 135 s and 2.6 GB
    _nested(p, 60, kind if kind != "conf" else "top")  # narrow enough: it loads
    assert load(str(p)).n_trajectories == 60


def test_adv7_a_timid_predictor_that_separates_outcomes_is_underconfident():
    from tpsviz.core.tps import ScoreSettings
    from tpsviz.diagnostics.verdict import verdicts

    y = np.random.default_rng(4).permutation(300) < 150  # as many successes as failures: no bias
    rows = [{"trajectory_id": f"r{i}", "step": t, "outcome": int(y[i]), "conf_timid": 0.6 if y[i] else 0.4}
            for i in range(300) for t in range(1, 6)]
    v = verdicts(tpsviz.from_frame(pd.DataFrame(rows)), ScoreSettings(n_boot=200))["timid"]
    assert v.label == "underconfident" and v.separation == 1  # not optimistic/pessimistic by a bias sign
    assert "rates every success above every failure" in v.text and "between 40% and 60%" in v.text


def test_adv7_a_jsonl_number_too_long_is_a_clear_message(tmp_path, capsys):
    p = tmp_path / "bigint.jsonl"
    rows = [{"trajectory_id": f"r{i}", "step": 1, "outcome": i % 2, "conf_a": 0.5} for i in range(5)]
    lines = [json.dumps(r) for r in rows]
    lines[3] = lines[3][:-1] + ', "m": 1' + "0" * 5000 + "}"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogFormatError, match="line 4: the JSON holds a number too long to read"):
        load(str(p))
    code, out, err = run_cli(["score", str(p)], capsys)
    assert code == 2 and "line 4" in err


def test_adv7_two_logs_together_obey_the_row_cap():
    from tpsviz.diagnostics.combine import combine_logs

    a = load("demo_data/tau2-like.csv")
    with pytest.raises(ValueError, match="step rows together, more than"):
        combine_logs(a, a, max_rows=a.n_steps * 2 - 1)
    assert combine_logs(a, a, max_rows=a.n_steps * 2).n_steps == 2 * a.n_steps


def test_adv7_png_rendering_fetches_no_mathjax(monkeypatch):
    import kaleido
    import plotly.graph_objects as go

    from tpsviz.report.export import figure_png

    seen = {}

    def fake(fig, opts=None, kopts=None, **kw):
        seen.update(opts=opts, kopts=kopts)
        return b"\x89PNG"

    monkeypatch.setattr(kaleido, "calc_fig_sync", fake)
    assert figure_png(go.Figure(layout={"height": 300}), width=600) == b"\x89PNG"
    assert seen["kopts"] == {"mathjax": False}  # kaleido's default is MathJax from a CDN
    assert seen["opts"] == {"format": "png", "width": 600, "height": 300, "scale": 2}


@pytest.mark.parametrize("text", ["see http://127.0.0.1:8799/x.png now", "HTTPS://evil.example", "www.evil.com",
                                  "mail a@evil.example", "ftp://x", "conf_![x](http://h/p.png)"])
def test_adv7_log_text_never_becomes_a_link(text):
    import re

    from pages._ui.text import md

    out = md(text).replace("\\", "")
    assert not re.search(r"(?i)(https?|ftp):", out) and not re.search(r"(?i)www\.", out)
    assert not re.search(r"@[\w-]+\.", out)
    assert out.replace("\u2060", "") == text.replace("\\", "")  # the same text, read as text
    assert md("verbal@platt") == "verbal@platt"  # a recalibrated predictor's name is left alone


def test_adv7_cli_refuses_too_few_bootstrap_replicates(capsys):
    code, out, err = run_cli(["score", "demo_data/tau2-like.csv", "--n-boot", "5"], capsys)
    assert code == 2 and "not a 95% interval" in err


def test_adv7_ids_of_two_json_types_joined_are_said_so(tmp_path):
    p = tmp_path / "merge.jsonl"
    rows = [{"trajectory_id": f"f{i}", "step": 1, "outcome": i % 2, "conf_a": 0.5} for i in range(20)]
    rows += [{"trajectory_id": 7, "step": s, "outcome": 1, "conf_a": 0.5} for s in (1, 2)]
    rows += [{"trajectory_id": "7", "step": s, "outcome": 1, "conf_a": 0.5} for s in (3, 4)]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    data = load(str(p))
    assert data.n_trajectories == 21
    assert any("written as a number or true/false and as text" in n for n in data.notes)


# --------------------------------------------------------------------------- eighth adversarial pass
@pytest.mark.parametrize("name", ["t", "traj", "length", "last_step"])
def test_adv8_a_metadata_column_named_like_ours_never_replaces_another(tmp_path, name):
    p = tmp_path / "meta.csv"
    rows = "".join(f"r{i},1,{i % 2},0.5,x{i},y{i}\n" for i in range(6))
    p.write_text(f"trajectory_id,step,outcome,conf_a,{name},{name}_log\n" + rows)
    data = load(str(p))
    t = data.trajectories.set_index("trajectory_id")
    assert t.loc["r3", f"{name}_log"] == "y3" and t.loc["r3", f"{name}_log_2"] == "x3"  # both kept
    assert any(f"kept as '{name}_log_2'" in n for n in data.notes)


def test_adv8_a_separating_predictor_prints_no_numpy_warning():
    import warnings

    from tpsviz.core.tps import ScoreSettings
    from tpsviz.diagnostics.verdict import verdicts

    rows = [{"trajectory_id": f"r{i}", "step": 1, "outcome": i % 2, "conf_a": 0.9 if i % 2 else 0.1}
            for i in range(40)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow in the logistic fit used to print a RuntimeWarning
        v = verdicts(tpsviz.from_frame(pd.DataFrame(rows)), ScoreSettings(n_boot=0))["a"]
    assert v.separation == 1


def test_the_per_trajectory_csv_is_written_in_chunks_with_the_same_bytes(tmp_path):
    """write_safe_csv writes what safe_csv returns, chunk by chunk (a header once, cells made
    safe in every chunk), so an out-of-core run's 12.8M-row table never sits in memory as text."""
    from tpsviz.report.export import safe_csv, write_safe_csv

    df = pd.DataFrame({"trajectory_id": ["=cmd()", "r2", "+1", "@x", "r5"], "tps": [-1.5, 0.25, np.nan, -3.0, 0.0],
                       "censored": [True, False, False, True, False]})
    for rows in (1, 2, 5, 100):
        write_safe_csv(df, tmp_path / "out.csv", chunk_rows=rows)
        assert (tmp_path / "out.csv").read_bytes() == safe_csv(df).encode("utf-8")
    write_safe_csv(df.iloc[:0], tmp_path / "empty.csv")
    assert (tmp_path / "empty.csv").read_text(encoding="utf-8") == safe_csv(df.iloc[:0])
