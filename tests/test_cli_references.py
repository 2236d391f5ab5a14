"""The references on the command line and in tpsviz.evaluate (issue 34, point 1): real harness logs
without forecasts score their references (exit 0, a verdict per reference, the line on how to add
a forecast; exit 2 when not even a reference can be formed); ``--references`` adds them to a log with forecasts and every real verdict says whether
it beats the best of them, with the paired Δ ± SE of diagnostics.compare in the JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import tpsviz
from tpsviz.cli.main import main
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics.compare import compare
from tpsviz.forecasts.references import REFERENCES
from tests.wording_checks import assert_says

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
DEMO = ROOT / "demo_data" / "tau2-like.csv"
#: real logs without forecasts, and the references each can form (tau2 files hold one trial per task)
REAL = {
    FIX / "taubench" / "tau1_gpt-4o-airline_trimmed.json": REFERENCES,
    FIX / "tau2" / "tau2_airline_gpt-oss-120b_langchain_trimmed.json": ("ref:step",),
    FIX / "tau2" / "tau2_airline_qwen2.5-7b_trimmed.json": ("ref:step",),
    FIX / "tau2" / "tau2v1_airline_whissle_trimmed.json": ("ref:step",),
    FIX / "tau2" / "tau2v1_airline_whissle_dirlayout": ("ref:step",),
}


def score(capsys, *args) -> tuple[int, str, str]:
    rc = main(["score", *map(str, args), "--n-boot", "0"])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("path", list(REAL), ids=lambda p: p.name)
def test_a_real_log_without_forecasts_scores_its_references(capsys, path):
    rc, out, err = score(capsys, path)
    assert rc == 0, err
    verdicts = [m.group(1) for line in out.splitlines() if (m := re.match(r"^  (ref:[^\s:]+): ", line))]
    assert verdicts == list(REAL[path])
    assert "only the references" in assert_says(out, "no forecast in this log")
    assert f"python -m tpsviz forecast {path}" in out and "docs/forecasts.md section 2" in out
    rc, out, err = score(capsys, path, "--json")
    obj = json.loads(out)
    assert rc == 0 and list(obj["predictors"]) == list(REAL[path])
    assert all(rec["reference"] is True for rec in obj["predictors"].values())
    assert obj["settings"]["references"]["no_forecast"] is True
    assert obj["settings"]["reading"]["task_column"] == "task_id"


def test_ref_task_of_tau_bench_uses_the_trials_of_a_task():
    data = tpsviz.load(FIX / "taubench" / "tau1_gpt-4o-airline_trimmed.json")
    assert data.predictors == [] and data.signals == {}
    from tpsviz.forecasts.references import add_references

    out = add_references(data, ScoreSettings(censoring="simple", n_boot=0))
    t = out.trajectories
    y = np.where(t["censored"], 0.0, t["outcome"].to_numpy())
    ref = out.forecasts("ref:task")[out.steps.groupby("traj").head(1).index]
    prior = out.reading["references"]["priors"]
    i = 0  # the first run: its task's other trials, shrunk by its fold's prior
    others = (t["task_id"] == t.loc[i, "task_id"]).to_numpy() & (np.arange(len(t)) != i)
    from tpsviz.forecasts.references import run_folds

    p = prior[run_folds(len(t), 5, ScoreSettings().seed)[i]]
    want = (y[others].sum() + p["mu"] * p["kappa"]) / (others.sum() + p["kappa"])
    assert ref[i] == pytest.approx(want, rel=1e-12)


def test_an_inspect_log_too_small_for_a_reference_exits_2_and_says_why(capsys):
    # nothing scored: exit 2, so a CI gate does not pass on nothing (issue 45; it was exit 0)
    path = next((FIX / "inspect").glob("2024-11-05*.eval"))
    rc, out, err = score(capsys, path)
    assert rc == 2
    assert "nothing scored" in err and "fewer than 2 runs have an outcome" in err
    assert f"python -m tpsviz forecast {path}" in err
    assert out.startswith(f"{path.name}: ")  # how the log was read, still
    rc, out, _ = score(capsys, path, "--json")
    obj = json.loads(out)
    assert rc == 2 and obj["predictors"] == {}
    assert "fewer than 2 runs have an outcome" in obj["nothing_scored"]["why"]
    assert f"python -m tpsviz forecast {path}" in obj["nothing_scored"]["what_to_do"]


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    pytest.importorskip("inspect_ai")
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from inspect_logs import write_logs_in_subprocess as write_logs

    return write_logs(tmp_path_factory.mktemp("inspect"))


def test_inspect_epochs_give_ref_task_and_every_reference_a_verdict(capsys, inspect_logs):
    path = inspect_logs["eval"]
    rc, out, err = score(capsys, path, "--conf", "verbal=metadata.confidence", "--references", "--json")
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["settings"]["reading"]["task_column"] == "sample_id"
    assert set(REFERENCES) <= set(obj["predictors"])
    for name in REFERENCES:
        assert obj["predictors"][name]["verdict"]["text"].startswith(f"{name}: ")
    verbal = obj["predictors"]["verbal"]
    assert verbal["reference"] is False and verbal["versus_best_reference"]["reference"].startswith("ref:")
    assert "ref:" in verbal["verdict"]["text"].rsplit(";", 1)[1]


def test_references_on_request_say_whether_each_predictor_beats_the_best(capsys):
    ev = tpsviz.evaluate(DEMO, n_boot=0, references=True)
    assert ev.references == list(REFERENCES) and ev.has_forecasts
    best = ev.summary.loc[list(REFERENCES), "tps_mean"].idxmax()
    table = compare(ev.data, ev.settings, baseline=best, predictors=[p for p in ev.data.predictors
                                                                    if not p.startswith("ref:")],
                    n_boot=0, metrics=())
    j = ev.to_json()
    for name in ("truthful", "verbal"):
        rec = j["predictors"][name]["versus_best_reference"]
        assert rec["reference"] == best
        assert rec["delta"] == pytest.approx(table.loc[name, "tps_delta"], rel=1e-12)
        assert rec["se"] == pytest.approx(table.loc[name, "tps_se"], rel=1e-12)
    # the verdict says by how much, Δ ± SE as compare() gives them
    truthful = table.loc["truthful", ["tps_delta", "tps_se"]]
    assert_says(ev.verdicts["truthful"].text, f"beats {best}", *truthful)
    assert_says(ev.verdicts["verbal"].text, f"does worse than {best}", abs(table.loc["verbal", "tps_delta"]),
                table.loc["verbal", "tps_se"])
    assert "ref:" not in ev.verdicts[best].text.split(":", 2)[2]  # a reference is not compared with itself
    lb = ev.leaderboard
    assert lb["reference"].to_dict() == {n: n.startswith("ref:") for n in lb.index}
    rc, out, err = score(capsys, DEMO, "--references")
    assert rc == 0 and "  truthful: " in assert_says(out, f"beats {best}", *truthful)
    line = assert_says(out, "are reference forecasters")
    assert all(name in line for name in REFERENCES) and "not the agent's" in line
    assert "no forecast in this log" not in out


def test_without_references_nothing_changes(capsys):
    ev = tpsviz.evaluate(DEMO, n_boot=0)
    assert ev.references == [] and ev.versus == {}
    assert "ref:" not in " ".join(ev.verdict_sentences())
    assert "references" not in ev.to_json()["settings"]


def test_check_gates_the_agents_predictors_only(capsys):
    path = FIX / "taubench" / "tau1_gpt-4o-airline_trimmed.json"
    rc = main(["check", str(path), "--min-skill", "-100", "--n-boot", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "holds no forecast of its own" in err
    rc = main(["check", str(DEMO), "--min-skill", "-100", "--n-boot", "0", "--references"])
    out = capsys.readouterr().out
    assert rc == 0 and "ref:" not in out.split("):", 1)[1]


def test_compare_against_a_reference(capsys):
    rc = main(["compare", str(DEMO), "--baseline", "ref:task+step", "--references", "--n-boot", "0", "--json"])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and obj["baseline"] == "ref:task+step" and "truthful" in obj["predictors"]


def test_references_are_refused_out_of_core(capsys):
    rc = main(["score", str(DEMO), "--references", "--engine", "duckdb", "--n-boot", "0"])
    assert rc == 2 and "--references" in capsys.readouterr().err
