"""Loading and validation: every defect gets a clear message naming file, row and column."""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from tpsviz import LogFormatError, from_frame, load

GOOD = """trajectory_id,step,outcome,conf_a,conf_b,raw_lp,task
t1,1,1,0.6,0.9,-0.5,x
t1,2,1,0.7,0.95,-0.4,x
t2,1,0,0.4,0.8,-1.2,y
t2,2,0,0.3,,-1.5,y
t3,1,,0.5,0.9,-0.9,y
"""


def write(tmp_path, name, text, mode="w"):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def problems(tmp_path, name, text):
    with pytest.raises(LogFormatError) as exc:
        load(write(tmp_path, name, text))
    msg = str(exc.value)
    assert name in msg  # every message names the file
    return msg


def test_good_csv(tmp_path):
    d = load(write(tmp_path, "log.csv", GOOD))
    assert d.predictors == ["a", "b"]
    assert d.signals == {"raw_lp": 1}
    assert d.n_trajectories == 3 and d.n_steps == 5 and d.n_censored == 1
    t = d.trajectories.set_index("trajectory_id")
    assert t.loc["t1", "outcome"] == 1 and t.loc["t2", "outcome"] == 0
    assert bool(t.loc["t3", "censored"]) and np.isnan(t.loc["t3", "outcome"])
    assert t.loc["t2", "task"] == "y"  # constant-within-run metadata is trajectory level
    assert list(d.steps["t"]) == [1, 2, 1, 2, 1]
    # missing forecast kept as NaN and announced
    assert np.isnan(d.steps.loc[3, "conf_b"])
    assert any("conf_b: 1 step" in n for n in d.notes)


def test_all_formats_agree(tmp_path):
    base = load(write(tmp_path, "log.csv", GOOD))
    df = pd.read_csv(tmp_path / "log.csv")
    pq = tmp_path / "log.parquet"
    df.to_parquet(pq)
    jl = tmp_path / "log.jsonl"
    jl.write_text("\n".join(json.dumps({k: (None if pd.isna(v) else v) for k, v in r.items()})
                            for r in df.to_dict("records")))
    tsv = write(tmp_path, "log.tsv", GOOD.replace(",", "\t"))
    nested = tmp_path / "nested.jsonl"
    lines = []
    for tid, g in df.groupby("trajectory_id"):
        out = g["outcome"].iloc[0]
        lines.append(json.dumps({
            "trajectory_id": tid, "outcome": None if pd.isna(out) else int(out),
            "task": g["task"].iloc[0],
            "steps": [{"step": int(r.step),
                       "conf": {k: (None if pd.isna(v) else v) for k, v in
                                (("a", r.conf_a), ("b", r.conf_b))},
                       "raw": {"lp": r.raw_lp}} for r in g.itertuples()]}))
    nested.write_text("\n".join(lines) + "\n")
    for path in (pq, jl, tsv, nested):
        d = load(path)
        assert d.predictors == base.predictors, path
        for c in ("conf_a", "conf_b", "raw_lp"):
            np.testing.assert_allclose(d.steps[c], base.steps[c], equal_nan=True)
        pd.testing.assert_series_equal(d.trajectories["censored"], base.trajectories["censored"])
        np.testing.assert_array_equal(d.trajectories["outcome"], base.trajectories["outcome"])


def test_load_from_bytes_and_sorting(tmp_path):
    shuffled = "trajectory_id,step,outcome,conf_a\nb,2,1,0.5\na,1,0,0.1\nb,1,1,0.4\n"
    d = load(shuffled.encode(), name="up.csv")
    assert list(d.steps["trajectory_id"]) == ["a", "b", "b"]
    assert list(d.steps["step"]) == [1, 1, 2]
    assert list(d.steps["traj"]) == [0, 1, 1]


def test_input_file_never_modified(tmp_path):
    p = write(tmp_path, "log.csv", GOOD)
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    mtime = p.stat().st_mtime_ns
    load(p)
    bad = write(tmp_path, "bad.csv", GOOD.replace("0.6", "1.6"))
    bad_hash = hashlib.sha256(bad.read_bytes()).hexdigest()
    with pytest.raises(LogFormatError):
        load(bad)
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before
    assert p.stat().st_mtime_ns == mtime
    assert hashlib.sha256(bad.read_bytes()).hexdigest() == bad_hash


# --- one test per defect -------------------------------------------------------------------


def test_missing_required_column(tmp_path):
    msg = problems(tmp_path, "m.csv", "trajectory_id,outcome,conf_a\nt1,1,0.5\n")
    assert "missing required column 'step'" in msg


def test_no_forecast_column_loads_with_zero_predictors(tmp_path):
    """A table without forecasts loads (its references are scored: docs/forecasts.md); the note says
    where a forecast comes from. The out-of-core engines still need a forecast column."""
    from tpsviz.io.tables.header import check_header

    data = load(write(tmp_path, "m.csv", "trajectory_id,step,outcome,task\nt1,1,1,a\n"))
    assert data.predictors == [] and data.signals == {} and data.metadata_columns == ["task"]
    assert any("holds no per-step forecast" in n and "conf_<name>" in n for n in data.notes)
    with pytest.raises(LogFormatError) as e:
        check_header(["trajectory_id", "step", "outcome", "task"], (), "m.csv")
    assert "no forecast column" in str(e.value) and "raw_" in str(e.value)


def test_raw_signal_only_log_loads(tmp_path):
    data = load(write(tmp_path, "m.csv", "trajectory_id,step,outcome,unc_x\nt1,1,1,0.5\nt2,1,0,2.5\n"))
    assert data.predictors == [] and data.signals == {"unc_x": -1}


def test_non_numeric_probability(tmp_path):
    msg = problems(tmp_path, "m.csv", GOOD.replace("0.7,0.95", "high,0.95"))
    assert "conf_a" in msg and "line 3" in msg and "not a number" in msg
    assert "high" not in msg  # a message never echoes a value of the file (issue 8)


def test_out_of_range_probability(tmp_path):
    msg = problems(tmp_path, "m.csv", GOOD.replace("0.4,0.8", "1.4,0.8"))
    assert "conf_a" in msg and "line 4" in msg and "[0, 1]" in msg


def test_a_problem_in_a_mapped_column_also_names_the_files_column(tmp_path):
    """With --map conf_p=p (or the dashboard's mapping), 'conf_p' is not a name the file has."""
    from tpsviz.io.harness.runs import ReadOptions

    f = write(tmp_path, "m.csv", "run,turn,success,p,q\nr1,1,1,0.6,0.5\nr1,2,1,1.7,0.5\nr2,1,0,0.4,2\n")
    opts = ReadOptions(mapping=(("trajectory_id", "run"), ("step", "turn"), ("outcome", "success"),
                                ("conf_p", "p"), ("conf_q", "q")))
    with pytest.raises(LogFormatError) as e:
        load(f, options=opts)
    text = "\n".join(e.value.problems)
    assert "column 'conf_p' (the file's 'p'): probabilities must be in [0, 1]; not so at line 3" in text
    assert "column 'conf_q' (the file's 'q')" in text


def test_duplicate_step(tmp_path):
    msg = problems(tmp_path, "m.csv", GOOD.replace("t1,2,1", "t1,1,1"))
    assert "duplicate (trajectory_id, step)" in msg and "line 2" in msg and "line 3" in msg
    assert "same step appears twice" in msg


def test_bad_outcome_value(tmp_path):
    msg = problems(tmp_path, "m.csv", GOOD.replace("t2,1,0", "t2,1,2"))
    assert "column 'outcome'" in msg and "line 4" in msg and "'2'" not in msg


def test_outcome_changes_within_trajectory(tmp_path):
    msg = problems(tmp_path, "m.csv", GOOD.replace("t2,2,0", "t2,2,1"))
    assert "'outcome' changes within trajectory 't2'" in msg


def test_censored_with_outcome(tmp_path):
    text = "trajectory_id,step,outcome,censored,conf_a\nt1,1,1,true,0.5\nt2,1,0,false,0.5\n"
    msg = problems(tmp_path, "m.csv", text)
    assert "trajectory 't1'" in msg and "'censored' is true while 'outcome' is present" in msg


def test_outcome_missing_not_censored(tmp_path):
    text = "trajectory_id,step,outcome,censored,conf_a\nt1,1,,false,0.5\n"
    msg = problems(tmp_path, "m.csv", text)
    assert "trajectory 't1'" in msg and "outcome' is empty" in msg


def test_qz_out_of_range(tmp_path):
    text = "trajectory_id,step,outcome,q_z,conf_a\nt1,1,,1.5,0.5\n"
    msg = problems(tmp_path, "m.csv", text)
    assert "q_z" in msg and "line 2" in msg and "[0, 1]" in msg


def test_empty_file(tmp_path):
    assert "empty" in problems(tmp_path, "e.csv", "")
    assert "no data rows" in problems(tmp_path, "h.csv", "trajectory_id,step,outcome,conf_a\n")
    assert "empty" in problems(tmp_path, "e.jsonl", "\n\n")
    assert "empty" in problems(tmp_path, "e.parquet", b"")


def test_wrong_encoding(tmp_path):
    text = GOOD.replace("x\n", "caf\xe9\n", 1).encode("latin-1")
    msg = problems(tmp_path, "enc.csv", text)
    assert "not valid UTF-8" in msg and "line 2" in msg
    msg = problems(tmp_path, "u16.csv", GOOD.encode("utf-16"))
    assert "UTF-16" in msg


def test_not_the_claimed_format(tmp_path):
    assert "not a Parquet file" in problems(tmp_path, "fake.parquet", GOOD)
    assert "looks like CSV" in problems(tmp_path, "fake.parquet", GOOD)
    assert "looks like CSV" in problems(tmp_path, "fake.jsonl", GOOD)
    assert "looks like JSON" in problems(tmp_path, "fake.csv", '{"trajectory_id": "a"}\n')
    df = pd.read_csv(pd.io.common.StringIO(GOOD))
    pq = tmp_path / "real.parquet"
    df.to_parquet(pq)
    assert "content is Parquet" in problems(tmp_path, "misnamed.csv", pq.read_bytes())
    assert "unknown file type" in problems(tmp_path, "log.xlsx", GOOD)


def test_inconsistent_nested_records(tmp_path):
    nested = {"trajectory_id": "a", "outcome": 1, "steps": [{"step": 1, "conf": {"v": 0.5}}]}
    flat = {"trajectory_id": "b", "step": 1, "outcome": 1, "conf_v": 0.5}
    msg = problems(tmp_path, "mix.jsonl", json.dumps(nested) + "\n" + json.dumps(flat) + "\n")
    assert "line 2" in msg and "inconsistent records" in msg
    bad_steps = {"trajectory_id": "a", "outcome": 1, "steps": {"step": 1}}
    assert "'steps' must be a list" in problems(tmp_path, "n1.jsonl", json.dumps(bad_steps))
    bad_conf = {"trajectory_id": "a", "outcome": 1, "steps": [{"step": 1, "conf": 0.5}]}
    assert "'conf' must be an object" in problems(tmp_path, "n2.jsonl", json.dumps(bad_conf))
    contradict = {"trajectory_id": "a", "outcome": 1,
                  "steps": [{"step": 1, "outcome": 0, "conf": {"v": 0.5}}]}
    msg = problems(tmp_path, "n3.jsonl", json.dumps(contradict))
    assert "differs from the trajectory's value" in msg and "step entry 1" in msg
    dup = json.dumps(nested)
    msg = problems(tmp_path, "n4.jsonl", dup + "\n" + dup + "\n")
    assert "already appeared on line 1" in msg


def test_invalid_json_line(tmp_path):
    msg = problems(tmp_path, "j.jsonl", '{"trajectory_id": "a", "step": 1}\n{oops\n')
    assert "line 2" in msg and "not valid JSON" in msg


def test_bad_step_values(tmp_path):
    msg = problems(tmp_path, "s.csv", GOOD.replace("t1,2,1", "t1,2.5,1").replace("t2,1,0", "t2,-1,0"))
    assert "column 'step'" in msg and "line 3" in msg and "line 4" in msg


def test_several_problems_reported_together(tmp_path):
    msg = problems(tmp_path, "many.csv", GOOD.replace("0.6", "2").replace("t2,1,0", "t2,1,7"))
    assert "2 problems" in msg and "conf_a" in msg and "outcome" in msg


def test_outcome_given_on_some_rows_only(tmp_path):
    text = "trajectory_id,step,outcome,conf_a\nt1,1,,0.5\nt1,2,1,0.6\nt2,1,,0.3\n"
    d = load(write(tmp_path, "p.csv", text))
    t = d.trajectories.set_index("trajectory_id")
    assert t.loc["t1", "outcome"] == 1 and not t.loc["t1", "censored"]
    assert t.loc["t2", "censored"]
    assert any("some rows only" in n for n in d.notes)


def test_qz_on_complete_run_is_ignored_with_note(tmp_path):
    text = "trajectory_id,step,outcome,q_z,conf_a\nt1,1,1,0.4,0.5\nt2,1,,0.3,0.5\n"
    d = load(write(tmp_path, "q.csv", text))
    t = d.trajectories.set_index("trajectory_id")
    assert np.isnan(t.loc["t1", "q_z"]) and t.loc["t2", "q_z"] == 0.3
    assert any("q_z" in n and "ignored" in n for n in d.notes)


def test_bad_weight_column(tmp_path):
    text = "trajectory_id,step,outcome,weight,conf_a\nt1,1,1,-1,0.5\n"
    msg = problems(tmp_path, "w.csv", text)
    assert "'weight'" in msg and "line 2" in msg


def test_from_frame_typed_values():
    df = pd.DataFrame({"trajectory_id": ["a", "a", "b"], "step": [1, 2, 1],
                       "outcome": [1.0, 1.0, np.nan], "conf_x": [0.2, 0.3, 0.9],
                       "censored": [False, False, True]})
    d = from_frame(df)
    assert d.n_censored == 1 and d.predictors == ["x"]
    with pytest.raises(LogFormatError, match="row 2"):
        from_frame(df.assign(conf_x=[0.2, 3.0, 0.9]))


def test_missing_file_and_folder(tmp_path):
    from tpsviz.io.files import FileRefused

    with pytest.raises(FileRefused, match="no such file"):
        load(tmp_path / "nope.csv")
    with pytest.raises(LogFormatError, match="is a folder with no Parquet, CSV or TSV file .* and no results.json"):
        load(tmp_path)
