"""A command that scored nothing exits 2 and says why and what to do (issue 45, point 4): ``score`` used to print
"nothing scored" and exit 0, and ``check`` to exit 0 or 1 on a log nothing of which was scored, so a CI gate
passed (or failed a rule) on nothing. With ``--json`` the object still prints, valid, with the reason."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.wording_checks import assert_says
from tpsviz.cli.main import main

FAST = ["--n-boot", "0"]


def _log(path, conf, censored=False, n=30) -> str:
    """A log of ``n`` runs of 3 steps whose forecast columns ``conf`` (name -> value or None) are as given;
    with ``censored``, the even runs are cut off and only they have forecasts."""
    rows = []
    for i in range(n):
        cut = censored and i % 2 == 0
        for t in (1, 2, 3):
            rows.append({"trajectory_id": f"r{i}", "step": t, "outcome": None if cut else int(i % 3 == 0),
                         "censored": cut, "model": "m1" if i < n // 2 else "m2",
                         **{f"conf_{k}": (v if (cut or not censored) else None) for k, v in conf.items()}})
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def empty(tmp_path):
    """Two predictors whose columns hold no forecast at all (the reader keeps them, with a note)."""
    return _log(tmp_path / "empty.csv", {"a": None, "b": None})


def _run(capsys, *argv):
    code = main([*map(str, argv), *FAST])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _json(capsys, *argv) -> tuple[int, dict, str]:
    code, out, err = _run(capsys, *argv, "--json")
    return code, json.loads(out), err  # (valid JSON: json.loads refuses NaN only when asked; checked below)


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_score_exits_2_when_no_predictor_has_a_forecast(capsys, empty, engine):
    code, out, err = _run(capsys, "score", empty, "--engine", engine)
    assert code == 2
    text = err
    assert err.startswith("error: nothing scored: ") and "--forecasts FILE" in err
    code, obj, err = _json(capsys, "score", empty, "--engine", engine)
    assert code == 2 and "nothing scored" in err
    assert obj["nothing_scored"]["why"] == "no run has a forecast of a, b"
    assert obj["nothing_scored"]["why"] in text  # the terminal says what the JSON says
    assert "--references" in obj["nothing_scored"]["what_to_do"]
    assert all(r["n_trajectories"] == 0 for r in obj["predictors"].values())
    json.dumps(obj, allow_nan=False)


def test_check_exits_2_not_1_when_nothing_checked_was_scored(capsys, empty):
    for rule in (["--min-skill", "0"], ["--require", "trustworthy"]):
        code, out, err = _run(capsys, "check", empty, *rule)
        assert code == 2 and out == "" and err.startswith("error: nothing scored: ")
        code, obj, _ = _json(capsys, "check", empty, *rule)
        assert code == 2 and obj["exit_code"] == 2 and obj["passed"] is False
        assert obj["nothing_scored"]["why"] == "no run has a forecast of a, b"
        assert obj["nothing_scored"]["why"] in err  # the terminal says what the JSON says


def test_check_of_a_log_without_forecasts_or_references_says_how_to_add_one(capsys, tmp_path):
    path = tmp_path / "two.csv"
    pd.DataFrame([{"trajectory_id": "r1", "step": 1, "outcome": 1}, {"trajectory_id": "r1", "step": 2, "outcome": 1}]
                 ).to_csv(path, index=False)
    code, _, err = _run(capsys, "check", path, "--min-skill", "0")
    assert code == 2 and "holds no forecast" in assert_says(err, "nothing scored: two.csv")  # the file named
    assert f"python -m tpsviz forecast {path}" in err  # the command line's remedy, not the library's
    code, obj, _ = _json(capsys, "check", path, "--min-skill", "0")
    assert code == 2 and obj["nothing_scored"]["why"].startswith("two.csv holds no forecast")


def test_complete_case_leaving_out_the_only_forecast_runs_names_the_mode(capsys, tmp_path):
    path = _log(tmp_path / "cut.csv", {"a": 0.4}, censored=True)
    code, _, err = _run(capsys, "score", path, "--censoring", "complete")
    assert code == 2
    censored = pd.read_csv(path).groupby("trajectory_id")["censored"].first().sum()  # (15: the even runs)
    line = assert_says(err, "complete-case mode", censored)  # the mode, and the runs it leaves out
    assert "censored runs" in line and line.split(";")[0].endswith("forecast of a")  # … and the predictor
    assert "--censoring simple, exact or upper" in err
    assert main(["score", path, "--censoring", "simple", *FAST]) == 0  # scored there: exit 0
    capsys.readouterr()


@pytest.mark.parametrize("argv", [["compare", "--baseline", "a"], ["compare", "--baseline", "a", "--engine", "duckdb"],
                                  ["compare", "--by", "model"], ["monitor"], ["defer"]])
def test_compare_monitor_and_defer_exit_2_on_nothing(capsys, empty, argv):
    cmd, *rest = argv
    code, _, err = _run(capsys, cmd, empty, *rest)
    assert code == 2 and err.startswith("error: nothing scored: ")
    code, obj, _ = _json(capsys, cmd, empty, *rest)
    assert code == 2 and obj["nothing_scored"]["why"].startswith("no run")


def test_a_baseline_without_forecasts_is_named(capsys, tmp_path):
    path = _log(tmp_path / "half.csv", {"a": None, "b": 0.4})
    code, _, err = _run(capsys, "compare", path, "--baseline", "a")
    assert code == 2 and "forecast of a;" in assert_says(err, "nothing scored")
    code, _, err = _run(capsys, "compare", path, "--baseline", "b")
    assert code == 2 and "forecast of a" in assert_says(err, "of the baseline b").split("baseline b", 1)[1]
    # the predictor with forecasts is scored: score, monitor and defer report it (exit 0)
    for cmd in ("score", "monitor", "defer"):
        assert main([cmd, path, *FAST]) == 0, cmd
    capsys.readouterr()
