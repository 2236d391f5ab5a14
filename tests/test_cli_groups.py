"""CLI model-vs-model comparison: ``compare PATH --by COLUMN`` and ``compare A B`` print the core's
numbers (tpsviz.diagnostics.groups), in words conditioned on Δ/SE, and refuse combinations that make no sense."""

import json

import numpy as np
import pytest

import tpsviz
from tpsviz.cli.main import main
from tpsviz.diagnostics.combine import combine_logs
from tpsviz.diagnostics.groups import group_difference, group_table
from tpsviz.core.tps import ScoreSettings

TAU = "demo_data/tau2-like.csv"
WEB = "demo_data/webshop-like.csv"


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_by_column_json_equals_the_core(capsys):
    obj = _json(capsys, ["compare", TAU, "--by", "difficulty", "--n-boot", "200", "--json",
                         "--pair-on", "none"])
    data = tpsviz.load(TAU)
    s = ScoreSettings(censoring="simple", n_boot=200)
    table = group_table(data, "difficulty", s)
    assert set(obj["groups"]) == {"easy", "medium", "hard"}
    for (g, name), r in table.iterrows():
        got = obj["groups"][g][name]
        assert got["tps_mean"] == pytest.approx(r.tps_mean, rel=1e-12)
        assert got["skill"] == pytest.approx(r.skill, rel=1e-12)
        assert got["n_runs"] == r.n_runs
    base = obj["settings"]["base_group"]
    assert base == "easy"
    d = group_difference(data, "difficulty", "easy", "hard", s)
    got = obj["differences"]["hard"]["predictors"]["verbal"]
    assert got["tps_delta"] == pytest.approx(d.loc["verbal", "tps_delta"], rel=1e-12)
    assert got["tps_se"] == pytest.approx(np.hypot(*table.loc[[("easy", "verbal"), ("hard", "verbal")],
                                                               "tps_se"]), rel=1e-12)
    assert got["paired"] is False


def test_compare_two_logs(capsys):
    obj = _json(capsys, ["compare", TAU, WEB, "--n-boot", "200", "--json", "--censoring", "simple"])
    assert set(obj["groups"]) == {"baseline", "candidate"}
    assert obj["settings"]["by"] == "log"
    both = combine_logs(tpsviz.load(TAU), tpsviz.load(WEB))
    d = group_difference(both, "log", "baseline", "candidate",
                         ScoreSettings(censoring="simple", n_boot=200), pair_on="auto")
    got = obj["differences"]["candidate"]["predictors"]["truthful"]
    assert got["tps_delta"] == pytest.approx(d.loc["truthful", "tps_delta"], rel=1e-12)
    assert got["skill_delta"] == pytest.approx(d.loc["truthful", "skill_delta"], rel=1e-12)


def test_compare_text_words_follow_delta_over_se(capsys):
    assert main(["compare", TAU, WEB, "--n-boot", "200", "--censoring", "simple"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("verbal: TPS"))
    assert "TPS clearly lower" in line and "skill clearly lower" in line
    line = next(x for x in out.splitlines() if x.strip().startswith("truthful: TPS"))
    assert "TPS not clearly different" in line


@pytest.mark.parametrize("argv, message", [
    (["compare", TAU], "compare needs --baseline NAME"),
    (["compare", TAU, "--by", "difficulty", "--baseline", "verbal"], "--baseline compares predictors"),
    (["compare", TAU, WEB, "--by", "difficulty"], "either --by COLUMN or a second log"),
    (["compare", TAU, WEB, "--rollouts", "demo_data/webshop-like_rollouts.csv"], "one log"),
    (["compare", TAU, "--by", "nothing"], "nothing"),
    (["compare", TAU, "--by", "trajectory_id"], "trajectory"),
])
def test_compare_refusals_are_clear(capsys, argv, message):
    assert main(argv + ["--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert "unexpected failure" not in err
