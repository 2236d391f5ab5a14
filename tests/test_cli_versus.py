"""``compare A B`` and ``compare --by`` say which side succeeds more often, by how much, with its SE, with or
without forecasts (tpsviz.diagnostics.versus_runs), on the real tau-bench and tau2-bench logs."""

import json

import pytest

import tpsviz
from tpsviz.cli.main import main
from tpsviz.diagnostics.combine import combine_logs
from tpsviz.diagnostics.groups import group_labels
from tpsviz.diagnostics.versus_runs import success_sentence, versus_runs

TAU1 = "demo_data/tau-bench-airline-gpt-4o.json"
TAU2 = "tests/fixtures/tau2/tau2_airline_gpt-oss-120b_langchain_trimmed.json"
TAU2_QWEN = "tests/fixtures/tau2/tau2_airline_qwen2.5-7b_trimmed.json"
FAST = ["--n-boot", "0"]


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_two_real_logs_without_forecasts_exit_0_and_say_who_succeeds_more(capsys):
    code, out, err = _run(capsys, "compare", TAU1, TAU2, *FAST)
    assert code == 0, err
    assert "holds no forecast" not in err
    both = combine_logs(tpsviz.load(TAU1), tpsviz.load(TAU2), allow_no_predictor=True)
    t = versus_runs(both, "log", "baseline", "candidate", group_labels(both, "log"))
    names = {"baseline": "tau-bench-airline-gpt-4o", "candidate": "tau2_airline_gpt-oss-120b_langc…"}
    assert success_sentence(t, names) in out
    assert "no clear difference in success: tau-bench-airline-gpt-4o 43.1% against" in out
    assert "Δ = +6.9 points (SE 19.6, unpaired, clustered by task; 10 censored runs left out" in out
    assert "different harnesses (tau-bench, tau2-bench): task ids that coincide are not the same tasks" in out
    # the tau2 reader records cost and duration (issue 46 point 4), the tau-bench one neither: not compared
    assert "duration: recorded by tau2_airline_gpt-oss-120b_langc… only (88.1 s per run); not compared" in out
    assert "cost: recorded by tau2_airline_gpt-oss-120b_langc… only" in out and "nan" not in out
    assert "confidence: not compared" in out
    assert "Traceback" not in out + err


def test_two_real_logs_json(capsys):
    code, out, _ = _run(capsys, "compare", TAU1, TAU2, *FAST, "--json")
    assert code == 0
    obj = json.loads(out)
    v = obj["versus"]["candidate"]
    assert v["same_tasks"] is False and v["paired_on"] is None
    s = v["measures"]["success"]
    assert s["mean_a"] == pytest.approx(84 / 195) and s["mean_b"] == pytest.approx(0.5)
    assert s["delta"] == pytest.approx(0.5 - 84 / 195) and s["z"] == pytest.approx(s["delta"] / s["se"])
    assert (s["n_a"], s["n_b"], s["paired"]) == (195, 8, False)
    assert v["sentence"].startswith("no clear difference in success")
    assert v["se"] == {"unit": "task", "column": "task_id", "tasks": {"baseline": 50, "candidate": 13}}
    assert set(v["measures"]) == {"success", "steps", "cost", "duration"}
    assert (v["measures"]["duration"]["n_a"], v["measures"]["duration"]["n_b"]) == (0, 13)
    assert obj["differences"] == {} and obj["confidence"].startswith("not compared")
    assert obj["sides"] == {"baseline": "tau-bench-airline-gpt-4o", "candidate": "tau2_airline_gpt-oss-120b_langc…"}


def test_two_tau2_logs_of_one_harness_may_pair_but_need_common_tasks(capsys):
    code, out, _ = _run(capsys, "compare", TAU2, TAU2_QWEN, *FAST, "--json")
    assert code == 0
    v = json.loads(out)["versus"]["candidate"]
    assert v["same_tasks"] is True  # one reader, one domain: the same task set
    assert v["pairing"].startswith("unpaired: only ")  # auto pairs only with 10 common tasks


def test_by_trial_pairs_groups_of_one_log_by_task(capsys):
    code, out, _ = _run(capsys, "compare", TAU1, "--by", "trial", "--base-group", "0", *FAST)
    assert code == 0
    assert "trial 1 - trial 0: paired by task ('task_id', 50 tasks in both sides)" in out
    assert "no clear difference in success: trial 0 43.8% against trial 1 45.8%, Δ = +2.1 points " \
           "(SE 9.2, paired by task, 48 tasks" in out
    # the references stand in for the forecasts (a log without any): the confidence part is there too
    assert "ref:step" in out


def test_by_trial_json_has_the_versus_part(capsys):
    code, out, _ = _run(capsys, "compare", TAU1, "--by", "trial", "--base-group", "0", *FAST, "--json")
    assert code == 0
    obj = json.loads(out)
    assert set(obj["versus"]) == {"1", "2", "3"}
    steps = obj["versus"]["1"]["measures"]["steps"]
    assert steps["paired"] is True and steps["n_pairs"] == 50
    assert set(obj["differences"]) == {"1", "2", "3"}


def test_forecast_logs_of_different_harnesses_are_never_paired_for_confidence(capsys, tmp_path):
    """Two table logs with forecasts pair by task as before; the confidence part follows the pairing rule."""
    code, out, _ = _run(capsys, "compare", "demo_data/tau2-like.csv", "demo_data/tau2-like.csv", *FAST, "--json")
    assert code == 0
    obj = json.loads(out)
    assert obj["versus"]["candidate"]["same_tasks"] is True
    assert obj["versus"]["candidate"]["measures"]["success"]["delta"] == pytest.approx(0.0)
    assert obj["differences"]["candidate"]["predictors"]


def test_a_bad_base_group_is_refused_without_traceback(capsys):
    code, out, err = _run(capsys, "compare", TAU1, "--by", "trial", "--base-group", "9", *FAST)
    assert code == 2 and "is not a group of this column" in err and "Traceback" not in err


def test_each_side_against_its_own_references(capsys):
    """Where both logs have forecasts, each side's predictors face references fitted on that side's runs only."""
    from tpsviz.forecasts.references import add_references
    from tpsviz.forecasts.versus import versus_best_reference

    code, out, _ = _run(capsys, "compare", "demo_data/tau2-like.csv", "demo_data/webshop-like.csv", *FAST, "--json")
    assert code == 0
    own = json.loads(out)["against_own_references"]
    both = combine_logs(tpsviz.load("demo_data/tau2-like.csv"), tpsviz.load("demo_data/webshop-like.csv"))
    side = both.subset((group_labels(both, "log") == "candidate").to_numpy())
    want = versus_best_reference(add_references(side, tpsviz.ScoreSettings(censoring="simple")),
                                 tpsviz.ScoreSettings(censoring="simple"))
    assert own["candidate"]["verbal"]["delta"] == pytest.approx(want["verbal"]["delta"], rel=1e-12)
    assert own["candidate"]["verbal"]["outcome"] == "worse"
    assert set(own) == {"baseline", "candidate"}


def test_by_model_on_a_table_without_forecasts_names_a_clear_winner_and_compares_cost(capsys, tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(5)
    rows = []
    for m, rate, cost in (("alpha", 0.25, 0.10), ("beta", 0.75, 0.30)):
        for task in range(20):
            for trial in range(2):
                y, c = int(rng.random() < rate), cost + 0.05 * rng.random()
                for step in range(1, 2 + int(rng.integers(1, 4))):
                    rows.append({"trajectory_id": f"{m}-{task}-{trial}", "step": step, "outcome": y, "model": m,
                                 "task": f"t{task}", "cost": c})
    path = tmp_path / "two_models.csv"
    frame = pd.DataFrame(rows)
    frame.to_csv(path, index=False)
    code, out, err = _run(capsys, "compare", path, "--by", "model", "--base-group", "alpha", *FAST)
    assert code == 0, err
    runs = frame.drop_duplicates("trajectory_id")
    per_task = runs.groupby(["model", "task"])["outcome"].mean().unstack(0)
    d = per_task["beta"] - per_task["alpha"]
    assert d.mean() / (d.std(ddof=1) / np.sqrt(20)) >= 2  # the data do make beta the clear winner
    pa, pb = 100 * per_task["alpha"].mean(), 100 * per_task["beta"].mean()
    assert (f"model beta succeeds more often: {pb:.1f}% against {pa:.1f}% (model alpha), "
            f"Δ = {pb - pa:+.1f} points (SE {100 * d.std(ddof=1) / np.sqrt(20):.1f}, paired by task, 20 tasks)") in out
    code, out, _ = _run(capsys, "compare", path, "--by", "model", "--base-group", "alpha", *FAST, "--json")
    cost = json.loads(out)["versus"]["beta"]["measures"]["cost"]
    dc = runs.groupby(["model", "task"])["cost"].mean().unstack(0)
    assert cost["delta"] == pytest.approx((dc["beta"] - dc["alpha"]).mean()) and cost["paired"] is True
    assert cost["column"] == "cost" and cost["z"] > 2
