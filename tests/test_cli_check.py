"""``tpsviz check``: a CI gate on the agent's confidence. Exit 0 when every predictor meets every
rule, 1 with one line per failing predictor saying why, 2 for bad input; the numbers are those of
``score --json`` under the same options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.wording_checks import assert_says, numbers_in
from tpsviz.cli.main import main

DEMO = Path(__file__).resolve().parents[1] / "demo_data"
LOG = str(DEMO / "tau2-like.csv")
FAST = ["--n-boot", "0"]


def _run(capsys, *argv):
    code = main(["check", LOG, *map(str, argv), *FAST])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.fixture(scope="module")
def scored():
    """``score --json`` of the log under the same options."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["score", LOG, "--json", *FAST]) == 0
    return json.loads(buf.getvalue())


def _baseline(tmp_path, obj, name="base.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return str(path)


def test_min_skill_passes_and_fails_with_one_line_per_predictor(capsys, scored):
    skills = {n: r["skill"] for n, r in scored["predictors"].items()}
    code, out, _ = _run(capsys, "--min-skill", min(skills.values()) - 0.01)
    assert code == 0 and out.startswith(f"ok: {len(skills)} predictors pass (--min-skill")
    code, out, _ = _run(capsys, "--min-skill", 0.1)
    assert code == 1
    assert out.splitlines() == [f"{n}: skill {k:.4g} < 0.1" for n, k in skills.items() if k < 0.1]


def test_require_trustworthy(capsys, scored):
    labels = {n: r["verdict"]["label"] for n, r in scored["predictors"].items()}
    good = [n for n, lab in labels.items() if lab == "trustworthy"]
    assert good and len(good) < len(labels)  # the demo log has both
    code, out, _ = _run(capsys, "--require", "trustworthy", *[x for n in good for x in ("--predictor", n)])
    assert code == 0 and "pass (--require trustworthy)" in out
    code, out, _ = _run(capsys, "--require", "trustworthy")
    assert code == 1
    failed = {n: lab for n, lab in labels.items() if lab != "trustworthy"}  # a line each, with its label
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines] == list(failed)
    assert all(f"verdict {failed[line.split(':')[0]]}" in line and "not trustworthy" in line for line in lines)


def test_max_drop_against_a_baseline(capsys, scored, tmp_path):
    same = _baseline(tmp_path, scored, "same.json")
    code, out, _ = _run(capsys, "--baseline-score", same, "--max-drop", 0)
    assert code == 0 and out.startswith("ok: ")
    better = json.loads(json.dumps(scored))
    t = better["predictors"]["verbal"]["tps_mean"]
    better["predictors"]["verbal"]["tps_mean"] = t + 0.1
    path = _baseline(tmp_path, better, "better.json")
    code, out, _ = _run(capsys, "--baseline-score", path, "--max-drop", 0.05)
    assert code == 1 and len(out.splitlines()) == 1 and out.startswith("verbal: TPS per run")
    line = assert_says(out, "below the baseline", t, 0.1, t + 0.1, 0.05)  # its TPS, the drop, the baseline's, the limit
    assert numbers_in(line)[-1] == 0.05 and "at most" in line
    code, out, _ = _run(capsys, "--baseline-score", path, "--max-drop", 0.2)
    assert code == 0


def test_a_predictor_missing_from_the_log_fails_a_new_one_is_not_checked(capsys, scored, tmp_path):
    ghost = json.loads(json.dumps(scored))
    ghost["predictors"]["ghost"] = dict(ghost["predictors"]["verbal"])
    code, out, _ = _run(capsys, "--baseline-score", _baseline(tmp_path, ghost), "--max-drop", 0)
    assert code == 1 and len(out.splitlines()) == 1
    assert out.startswith("ghost: ") and "not in this log" in out
    fewer = json.loads(json.dumps(scored))
    del fewer["predictors"]["noisy"]
    code, out, _ = _run(capsys, "--baseline-score", _baseline(tmp_path, fewer, "fewer.json"), "--max-drop", 0)
    line = assert_says(out, "note: noisy:")
    assert code == 0 and "not in the baseline" in line and "--max-drop not checked" in line


def test_rules_combine_and_json_prints_the_checks(capsys, scored, tmp_path):
    worse = json.loads(json.dumps(scored))
    worse["predictors"]["verbal"]["tps_mean"] += 1.0
    path = _baseline(tmp_path, worse)
    code, out, _ = _run(capsys, "--baseline-score", path, "--max-drop", 0.5, "--min-skill", 0)
    lines = out.splitlines()
    verbal = [x for x in lines if x.startswith("verbal: ")]
    assert code == 1 and len(verbal) == 1 and "skill" in verbal[0] and "below the baseline" in verbal[0]
    code, out, _ = _run(capsys, "--baseline-score", path, "--max-drop", 0.5, "--min-skill", 0, "--require", "trustworthy",
                        "--json")
    obj = json.loads(out)
    assert code == 1 and obj["exit_code"] == 1 and obj["passed"] is False
    assert obj["rules"] == {"require": "trustworthy", "min_skill": 0.0, "max_drop": 0.5, "baseline": path}
    rules = [c["rule"] for c in obj["predictors"]["verbal"]["checks"]]
    assert rules == ["require_trustworthy", "min_skill", "max_drop"]
    assert obj["predictors"]["truthful"]["passed"] is (scored["predictors"]["truthful"]["verdict"]["label"]
                                                       == "trustworthy")
    assert all(f.split(":")[0] in obj["predictors"] for f in obj["failures"])


@pytest.mark.parametrize("argv, needle", [
    ([], "check needs at least one rule"),
    (["--max-drop", "0.1"], "go together"),
    (["--min-skill", "nan"], "--min-skill must be a finite number"),
    (["--max-drop", "-1", "--baseline-score", LOG], "--max-drop must be a number >= 0"),
    (["--max-drop", "0.1", "--baseline-score", LOG], "is not the output of `python -m tpsviz score --json`"),
    (["--max-drop", "0.1", "--baseline-score", "nope.json"], "no such file"),
    (["--min-skill", "0", "--predictor", "nobody"], "no predictor nobody"),
    (["--require", "trustworthy", "--verdict-sample", "0"], "--verdict-sample must be at least 1"),
    # the score's own options: bad input too, never exit 1 (which says a predictor failed)
    (["--min-skill", "0", "--alpha", "-2"], "outside the beta family"),
    (["--min-skill", "0", "--schedule", "bogus"], "unknown schedule"),
    (["--min-skill", "0", "--level", "1.5"], "--level must be in (0, 1)"),
    (["--min-skill", "0", "--forecasts", "nope.csv"], "no such file"),
])
def test_bad_input_exits_2(capsys, argv, needle):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "" and needle in err, err


def test_a_baseline_scored_otherwise_is_refused(capsys, scored, tmp_path):
    other = json.loads(json.dumps(scored))
    other["settings"]["alpha"] = 1.0
    code, _, err = _run(capsys, "--baseline-score", _baseline(tmp_path, other), "--max-drop", 0)
    line = assert_says(err, "other settings", 1.0, 0.0)  # the baseline's alpha there, this score's here
    assert code == 2 and "alpha" in line and numbers_in(line.split("there")[0])[-1] == 1.0


def test_other_kinds_of_log_are_refused(capsys):
    assert main(["check", str(DEMO / "multiclass-like.csv"), "--min-skill", "0"]) == 2
    assert "check gates binary logs" in capsys.readouterr().err


def test_out_of_core_checks_read_the_same_numbers(capsys, tmp_path):
    import pandas as pd

    df = pd.read_csv(LOG)
    cut = len(df) // 2 + 5  # a run spans the two files
    df.iloc[:cut].to_parquet(tmp_path / "part-0.parquet")
    df.iloc[cut:].to_parquet(tmp_path / "part-1.parquet")
    rules = ["--min-skill", "0.05", "--require", "trustworthy", *FAST]
    assert main(["check", LOG, *rules]) == 1
    memory = capsys.readouterr().out
    assert main(["check", str(tmp_path), "--engine", "duckdb", *rules]) == 1
    assert capsys.readouterr().out == memory


def test_the_first_spelling_of_the_baseline_file_still_reads(capsys, scored, tmp_path):
    same = _baseline(tmp_path, scored, "same.json")
    code, out, _ = _run(capsys, "--baseline", same, "--max-drop", 0, "--json")
    assert code == 0 and json.loads(out)["rules"]["baseline"] == same


def test_a_log_that_is_not_one_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("trajectory_id,step,outcome,conf_a\nr1,1,2,0.5\n")
    assert main(["check", str(bad), "--min-skill", "0", *FAST]) == 2
    assert main(["check", str(tmp_path / "none.csv"), "--min-skill", "0", *FAST]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["check", str(empty), "--min-skill", "0", *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 3 and "Traceback" not in err


def test_a_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", LOG, "--min-skill"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["check", LOG, "--require", "calibrated"])
    assert exc.value.code == 2


@pytest.mark.parametrize("error", [RuntimeError("boom"), ValueError("a bad shape"), KeyError("tps_mean")])
def test_a_bug_exits_3_never_1(capsys, monkeypatch, error):
    import tpsviz.cli.check as check

    def broken(*a, **k):
        raise error

    monkeypatch.delenv("TPSVIZ_DEBUG", raising=False)
    monkeypatch.setattr(check, "evaluate_checks", broken)
    code, out, err = _run(capsys, "--min-skill", "0")
    assert code == 3 and out == ""
    assert err.startswith("error: unexpected failure") and "bug in tpsviz" in err and len(err.splitlines()) == 1
