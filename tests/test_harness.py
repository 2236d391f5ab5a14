"""Issue 9: real agent logs in — harness readers, forecast sources, column mapping, raw-only logs.

Every count asserted about a reader is recomputed here from the raw JSON with separate code; the
TPS of a converted log is compared with the same log written in long format by hand.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.cli import main as cli
from tpsviz.cli.wording import say
from tpsviz.core.errors import LogFormatError
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.io.loading import load

FIX = Path(__file__).resolve().parent / "fixtures"
TAU2 = sorted((FIX / "tau2").glob("*.json"))
TAU2_DIR = FIX / "tau2" / "tau2v1_airline_whissle_dirlayout"
TAUBENCH = FIX / "taubench" / "tau1_gpt-4o-airline_trimmed.json"
TAUBENCH_FORK = FIX / "taubench" / "tau1fork_assertions-agent_retail_errors_trimmed.json"
SETTINGS = tpsviz.ScoreSettings(n_boot=0, censoring="simple")


def fake_conf(run_id: str, t: int) -> float:
    """A deterministic forecast in (0.05, 0.95) for (run, step), independent of any reader."""
    h = int(hashlib.sha256(f"{run_id}/{t}".encode()).hexdigest()[:8], 16)
    return round(0.05 + 0.9 * h / 0xFFFFFFFF, 6)


def run_cli(args, capsys):
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ----------------------------------------------------------------------------- independent views
def tau2_truth(obj: dict) -> dict:
    """Counts and the hand-made long table of a tau2-bench results object."""
    outcome_reasons = {"user_stop", "agent_stop"}
    censor = {"max_steps", "timeout", "context_window_exceeded"}
    fail = {"too_many_errors", "agent_error", "user_error"}
    rows, counts = [], {"runs": 0, "successes": 0, "censored": 0, "failed": 0, "dropped": 0, "steps": 0}
    for sim in obj["simulations"]:
        reason = sim["termination_reason"]
        n_agent = sum(1 for m in sim["messages"] if m["role"] == "assistant")
        if reason not in outcome_reasons | censor | fail:
            counts["dropped"] += 1
            continue
        counts["runs"] += 1
        counts["steps"] += n_agent
        if reason in censor:
            counts["censored"] += 1
            y = ""
        elif reason in fail:
            counts["failed"] += 1
            y = 0
        else:
            y = int(abs(sim["reward_info"]["reward"] - 1) <= 1e-6)
            counts["successes"] += y
        for t in range(1, n_agent + 1):
            rows.append({"trajectory_id": sim["id"], "step": t, "outcome": y,
                         "censored": reason in censor, "conf_fake": fake_conf(sim["id"], t)})
    return {"counts": counts, "long": pd.DataFrame(rows)}


def sidecar(long: pd.DataFrame, path: Path) -> Path:
    long[["trajectory_id", "step", "conf_fake"]].to_csv(path, index=False)
    return path


def assert_same_tps(a, b):
    ra, rb = tpsviz.compute_tps(a, SETTINGS), tpsviz.compute_tps(b, SETTINGS)
    pa = ra.per_trajectory.set_index("trajectory_id")["tps"].sort_index()
    pb = rb.per_trajectory.set_index("trajectory_id")["tps"].sort_index()
    assert list(pa.index) == list(pb.index)
    np.testing.assert_allclose(pa.to_numpy(), pb.to_numpy(), rtol=1e-12, atol=0)
    assert ra.summary.loc["fake", "tps_mean"] == pytest.approx(rb.summary.loc["fake", "tps_mean"], rel=1e-12)


# ----------------------------------------------------------------------------- tau2-bench
@pytest.mark.parametrize("path", TAU2, ids=[p.stem for p in TAU2])
def test_tau2_counts_and_tps_match_a_hand_made_long_log(tmp_path, path):
    obj = json.loads(path.read_text(encoding="utf-8"))
    truth = tau2_truth(obj)
    data = load(path, forecasts=sidecar(truth["long"], tmp_path / "f.csv"))
    c = truth["counts"]
    t = data.trajectories
    assert data.reading["format"] == "tau2-bench"
    assert (data.n_trajectories, data.n_censored, data.n_steps) == (c["runs"], c["censored"], c["steps"])
    assert int((t["outcome"] == 1).sum()) == c["successes"]
    assert sum(data.reading["dropped"].values()) == c["dropped"]
    # metadata from the file's own info
    assert set(t["model"]) == {obj["info"]["agent_info"]["llm"]}
    assert set(t["domain"]) == {obj["info"]["environment_info"]["domain_name"]}
    by_reason = {r["reason"]: r["runs"] for r in data.reading["treatment"]}
    raw_reasons = pd.Series([s["termination_reason"] for s in obj["simulations"]]).value_counts().to_dict()
    assert by_reason == raw_reasons
    truth["long"].to_csv(tmp_path / "long.csv", index=False)
    assert_same_tps(data, load(tmp_path / "long.csv"))


def test_tau2_folder_layout_equals_the_single_file(tmp_path):
    single = FIX / "tau2" / "tau2v1_airline_whissle_trimmed.json"
    truth = tau2_truth(json.loads(single.read_text(encoding="utf-8")))
    side = sidecar(truth["long"], tmp_path / "f.csv")
    a, b = load(single, forecasts=side), load(TAU2_DIR, forecasts=side)
    assert b.reading["runs_read"] == 5 and b.n_trajectories == a.n_trajectories
    assert_same_tps(a, b)
    # the same folder uploaded as several files
    files = [((TAU2_DIR / "results.json").read_bytes(), "results.json")] + [
        (p.read_bytes(), p.name) for p in sorted((TAU2_DIR / "simulations").glob("*.json"))]
    c = load(files, forecasts=side)
    assert_same_tps(a, c)


def test_tau2_treatment_overrides_and_threshold(tmp_path):
    path = FIX / "tau2" / "tau2_airline_gpt-oss-120b_langchain_trimmed.json"
    truth = tau2_truth(json.loads(path.read_text(encoding="utf-8")))
    side = sidecar(truth["long"], tmp_path / "f.csv")
    base = load(path, forecasts=side)
    as_fail = load(path, forecasts=side, options=ReadOptions(treat=(("max_steps", "failure"),)))
    assert base.n_censored == 5 and as_fail.n_censored == 0
    assert int((as_fail.trajectories["outcome"] == 0).sum()) == int((base.trajectories["outcome"] == 0).sum()) + 5
    row = next(r for r in as_fail.reading["treatment"] if r["reason"] == "max_steps")
    assert row["treatment"] == "failure" and not row["default"]
    dropped = load(path, forecasts=side, options=ReadOptions(treat=(("max_steps", "dropped"),)))
    assert dropped.n_trajectories == base.n_trajectories - 5 and dropped.reading["dropped"] == {"max_steps": 5}
    # a threshold above every reward leaves no success
    none = load(path, forecasts=side, options=ReadOptions(success_threshold=1.5))
    assert int((none.trajectories["outcome"] == 1).sum()) == 0


def test_tau2_infrastructure_errors_are_dropped_and_counted(tmp_path):
    obj = json.loads((FIX / "tau2" / "tau2_airline_qwen2.5-7b_trimmed.json").read_text(encoding="utf-8"))
    infra = dict(obj["simulations"][0], id="infra-1", termination_reason="infrastructure_error",
                 reward_info=None, messages=[])
    obj["simulations"].append(infra)
    (tmp_path / "r.json").write_text(json.dumps(obj), encoding="utf-8")
    truth = tau2_truth(obj)
    data = load(tmp_path / "r.json", forecasts=sidecar(truth["long"], tmp_path / "f.csv"))
    assert data.reading["dropped"] == {"infrastructure_error": 1}
    assert "infra-1" not in set(data.trajectories["trajectory_id"])


def test_tau2_bad_files_name_the_simulation_and_field(tmp_path):
    obj = json.loads((FIX / "tau2" / "tau2v1_airline_whissle_trimmed.json").read_text(encoding="utf-8"))
    sid = obj["simulations"][1]["id"]
    del obj["simulations"][1]["termination_reason"]
    obj["simulations"][2]["reward_info"]["reward"] = "high"
    (tmp_path / "bad.json").write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(LogFormatError) as e:
        load(tmp_path / "bad.json")
    msg = str(e.value)
    assert "bad.json" in msg and "simulation 2" in msg and sid[:20] in msg and "termination_reason" in msg
    assert "simulation 3" in msg and "reward_info.reward" in msg and "high" not in msg


def test_tau2_without_forecasts_loads_and_says_how_to_add_them():
    """A harness log without forecasts loads with zero predictors (its references are scored,
    docs/forecasts.md); a note says where a forecast comes from."""
    data = load(TAU2[0])
    assert data.predictors == [] and data.n_trajectories > 0
    assert any(re.search("holds no per-step forecast.*conf='verbal=metadata.confidence'.*forecasts", n)
               for n in data.notes)  # Python's words; the command line's: tests/test_cli_references.py
    assert any(re.search("holds no per-step forecast.*--conf verbal=metadata.confidence.*--forecasts", say(n))
               for n in data.notes)
    assert data.reading["task_column"] == "task_id"


# ----------------------------------------------------------------------------- tau-bench v1
def taubench_truth(records: list) -> dict:
    counts = {"runs": 0, "successes": 0, "censored": 0, "dropped": 0, "steps": 0}
    rows = []
    for r in records:
        info = r["info"]
        if isinstance(info, str) or "error" in info:
            counts["dropped"] += 1
            continue
        tid = f"{r['task_id']}-{r['trial']}"
        censored = info.get("reward_info") is None
        n_agent = sum(1 for m in r["traj"] if m["role"] == "assistant")
        counts["runs"] += 1
        counts["steps"] += n_agent
        counts["censored"] += censored
        y = "" if censored else int(r["reward"] >= 1 - 1e-6)
        counts["successes"] += 0 if censored else y
        for t in range(1, n_agent + 1):
            rows.append({"trajectory_id": tid, "step": t, "outcome": y, "censored": censored,
                         "conf_fake": fake_conf(tid, t)})
    return {"counts": counts, "long": pd.DataFrame(rows)}


@pytest.mark.parametrize("path", [TAUBENCH, TAUBENCH_FORK], ids=["official", "fork-with-errors"])
def test_taubench_counts_and_tps(tmp_path, path):
    records = json.loads(path.read_text(encoding="utf-8"))
    truth = taubench_truth(records)
    data = load(path, forecasts=sidecar(truth["long"], tmp_path / "f.csv"))
    c = truth["counts"]
    assert data.reading["format"] == "tau-bench"
    assert (data.n_trajectories, data.n_censored, data.n_steps) == (c["runs"], c["censored"], c["steps"])
    assert int((data.trajectories["outcome"] == 1).sum()) == c["successes"]
    assert sum(data.reading["dropped"].values()) == c["dropped"]
    truth["long"].to_csv(tmp_path / "long.csv", index=False)
    assert_same_tps(data, load(tmp_path / "long.csv"))


def test_taubench_official_file_facts(tmp_path):
    records = json.loads(TAUBENCH.read_text(encoding="utf-8"))
    truth = taubench_truth(records)
    data = load(TAUBENCH, forecasts=sidecar(truth["long"], tmp_path / "f.csv"))
    assert data.n_censored == 5 and set(data.trajectories["domain"]) == {"airline"}
    cens = data.trajectories[data.trajectories["censored"]]
    assert set(cens["length"]) == {30}  # the step cap: 30 agent messages


def test_taubench_errored_runs_are_dropped_with_their_count(tmp_path):
    records = json.loads(TAUBENCH_FORK.read_text(encoding="utf-8"))
    truth = taubench_truth(records)
    data = load(TAUBENCH_FORK, forecasts=sidecar(truth["long"], tmp_path / "f.csv"))
    assert data.reading["dropped"] == {"error": 3}


# ----------------------------------------------------------------------------- Inspect AI
@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    from inspect_logs import write_logs_in_subprocess as write_logs

    return write_logs(tmp_path_factory.mktemp("inspect"))


def inspect_truth(path: Path) -> dict:
    """Counts from an Inspect .json log read with plain json (no tpsviz)."""
    log = json.loads(path.read_text(encoding="utf-8"))
    counts = {"runs": 0, "successes": 0, "censored": 0, "dropped": 0, "steps": 0}
    conf = {}
    for s in log["samples"]:
        if s.get("error"):
            counts["dropped"] += 1
            continue
        counts["runs"] += 1
        agent = [m for m in s["messages"] if m["role"] == "assistant"]
        counts["steps"] += len(agent)
        if s.get("limit"):
            counts["censored"] += 1
        else:
            counts["successes"] += s["scores"]["includes"]["value"] == "C"
        tid = f"{s['id']}-epoch{s['epoch']}"
        for t, m in enumerate(agent, start=1):
            conf[(tid, t)] = (m.get("metadata") or {}).get("confidence", np.nan)
    return {"counts": counts, "conf": conf}


def test_inspect_eval_json_and_chunked_agree_with_the_raw_json(inspect_logs):
    truth = inspect_truth(inspect_logs["json"])
    c = truth["counts"]
    opts = ReadOptions(conf=(("verbal", "metadata.confidence"),))
    frames = {}
    for kind in ("eval", "json", "chunked"):
        data = load(inspect_logs[kind], options=opts)
        assert data.reading["format"] == "inspect"
        assert (data.n_trajectories, data.n_censored, data.n_steps) == (c["runs"], c["censored"], c["steps"])
        assert int((data.trajectories["outcome"] == 1).sum()) == c["successes"]
        assert data.reading["dropped"] == {"error": c["dropped"]}
        assert set(data.signals) == {"raw_mean_logprob", "raw_min_logprob", "unc_entropy"}
        got = {(r.trajectory_id, int(r.step)): r.conf_verbal for r in data.steps.itertuples()}
        assert got.keys() == truth["conf"].keys()
        for k, v in truth["conf"].items():
            assert (np.isnan(v) and np.isnan(got[k])) or got[k] == v
        frames[kind] = data.steps.drop(columns=["traj"]).reset_index(drop=True)
        assert set(data.trajectories.loc[data.trajectories["censored"], "limit"]) == {"message"}
    pd.testing.assert_frame_equal(frames["eval"], frames["json"])
    pd.testing.assert_frame_equal(frames["eval"], frames["chunked"])


def test_inspect_logprob_signals_are_computed_from_the_model_events(inspect_logs):
    log = json.loads(inspect_logs["json"].read_text(encoding="utf-8"))
    data = load(inspect_logs["json"], options=ReadOptions(conf=(("verbal", "metadata.confidence"),)))
    sample = next(s for s in log["samples"] if s["id"] == "q2" and s["epoch"] == 1)
    ids = [m["id"] for m in sample["messages"] if m["role"] == "assistant"]
    events = {e["output"]["choices"][0]["message"]["id"]: e["output"]["choices"][0]["logprobs"]["content"]
              for e in sample["events"] if e["event"] == "model"}
    rows = data.steps[data.steps["trajectory_id"] == "q2-epoch1"]
    for t, mid in enumerate(ids, start=1):
        lps = [x["logprob"] for x in events[mid]]
        row = rows[rows["step"] == t].iloc[0]
        assert row["raw_mean_logprob"] == pytest.approx(np.mean(lps), rel=1e-12)
        assert row["raw_min_logprob"] == pytest.approx(np.min(lps), rel=1e-12)
        ents = []
        for x in events[mid]:
            p = np.exp([y["logprob"] for y in x["top_logprobs"]])
            p = p / p.sum()
            ents.append(-(p * np.log(p)).sum())
        assert row["unc_entropy"] == pytest.approx(np.mean(ents), rel=1e-9)


def test_inspect_scorer_threshold_and_limit_treatment(inspect_logs):
    opts = ReadOptions(conf=(("verbal", "metadata.confidence"),), scorer="assistant_turns",
                       success_threshold=2)
    data = load(inspect_logs["eval"], options=opts)
    t = data.trajectories
    done = t[~t["censored"]]
    assert (done["outcome"] == (done["length"] >= 2)).all()
    with pytest.raises(LogFormatError, match="no score from scorer 'nope'"):
        load(inspect_logs["eval"], options=ReadOptions(conf=opts.conf, scorer="nope"))
    scored = load(inspect_logs["eval"], options=ReadOptions(conf=opts.conf,
                                                            treat=(("message_limit", "outcome"),)))
    assert scored.n_censored == 0


def test_inspect_old_deflate_logs(tmp_path):
    old = sorted((FIX / "inspect").glob("*input-task*.eval"))[0]
    bare = load(old)  # no forecast: loads with zero predictors, the note says where one comes from
    assert bare.predictors == [] and any("--forecasts" in say(n) for n in bare.notes)
    side = tmp_path / "f.csv"
    side.write_text("trajectory_id,step,conf_a\n" + "\n".join(
        f"{tid},1,0.7" for tid in ["1-epoch1"]) + "\n", encoding="utf-8")
    with zipfile.ZipFile(old) as z:
        sample = json.loads(z.read(next(n for n in z.namelist() if n.startswith("samples/"))))
    side.write_text(f"trajectory_id,step,conf_a\n{sample['id']}-epoch{sample['epoch']},1,0.7\n", encoding="utf-8")
    data = load(old, forecasts=side)
    assert data.n_trajectories == 1 and int(data.trajectories["outcome"].iloc[0]) == 1  # scored "C"
    pop = sorted((FIX / "inspect").glob("*popularity*.eval"))[0]
    with pytest.raises(LogFormatError, match="every run is dropped by its treatment \\('unscored': 10\\)"):
        load(pop, options=ReadOptions(conf=(("a", "metadata.x"),)))


def _zip(members: dict, method=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for n, data in members.items():
            z.writestr(n, data)
    return buf.getvalue()


def test_inspect_bad_archives_get_clear_errors(tmp_path):
    header = json.dumps({"eval": {"model": "m", "task": "t"}, "status": "success"})
    with pytest.raises(LogFormatError, match="not a readable zip"):
        load(b"PK\x03\x04broken", name="x.eval")
    with pytest.raises(LogFormatError, match="neither header.json"):
        load(_zip({"readme.txt": "hi"}), name="x.eval")
    with pytest.raises(LogFormatError, match="holds no samples"):
        load(_zip({"header.json": header}), name="x.eval")
    bad = {"header.json": header, "samples/a_epoch_1.json": json.dumps({"epoch": 1, "messages": []})}
    with pytest.raises(LogFormatError, match="field 'id' is missing"):
        load(_zip(bad), name="x.eval")
    # a zip bomb stops at the size limit, before it is decompressed
    bomb = {"header.json": header, "samples/a_epoch_1.json": b"{" + b" " * 50_000_000 + b"}"}
    from tpsviz.io.files import Limits

    with pytest.raises(LogFormatError, match="expands beyond"):
        load(_zip(bomb), name="x.eval", limits=Limits(max_bytes=10_000_000))


# ----------------------------------------------------------------------------- forecasts table
def test_sidecar_mismatches_are_listed(tmp_path):
    obj = json.loads(TAUBENCH.read_text(encoding="utf-8"))
    long = taubench_truth(obj)["long"]
    side = long[["trajectory_id", "step", "conf_fake"]].copy()
    bad = pd.concat([side, pd.DataFrame({"trajectory_id": ["nope-0", "1-0"], "step": [1, 999],
                                         "conf_fake": [0.5, 0.5]})])
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(LogFormatError) as e:
        load(TAUBENCH, forecasts=tmp_path / "bad.csv")
    msg = str(e.value)
    assert "bad.csv" in msg and "'nope-0'" in msg and "('1-0', 999)" in msg
    pd.concat([side, side.iloc[:1]]).to_csv(tmp_path / "dup.csv", index=False)
    with pytest.raises(LogFormatError, match="appears twice"):
        load(TAUBENCH, forecasts=tmp_path / "dup.csv")
    side.iloc[:10].to_csv(tmp_path / "part.csv", index=False)
    data = load(TAUBENCH, forecasts=tmp_path / "part.csv")
    assert any("runs have no forecast in the table" in n for n in data.notes)


# ----------------------------------------------------------------------------- tables
def test_column_mapping(tmp_path, capsys):
    f = tmp_path / "other.csv"
    f.write_text("run,turn,success,p_success,ent\nr1,1,1,0.6,0.2\nr1,2,1,0.7,0.1\nr2,1,0,0.4,0.9\n"
                 "r3,1,,0.5,0.5\n", encoding="utf-8")
    opts = ReadOptions(mapping=(("trajectory_id", "run"), ("step", "turn"), ("outcome", "success"),
                                ("conf_verbal", "p_success"), ("unc_ent", "ent")))
    data = load(f, options=opts)
    assert data.predictors == ["verbal"] and data.signals == {"unc_ent": -1} and data.n_censored == 1
    code, out, err = run_cli(["score", f, "--map", "trajectory_id=run,step=turn,outcome=success",
                              "--map", "conf_verbal=p_success", "--n-boot", "0"], capsys)
    assert code == 0, err
    code, out, err = run_cli(["score", f, "--map", "trajectory_id=nope"], capsys)
    assert code == 2 and "no column 'nope'" in err


def test_percent_forecasts_are_offered_and_converted(tmp_path, capsys):
    f = tmp_path / "pct.csv"
    f.write_text("trajectory_id,step,outcome,conf_v\nr1,1,1,60\nr1,2,1,85\nr2,1,0,40\n", encoding="utf-8")
    with pytest.raises(LogFormatError, match="look like percentages .*percent='v'"):
        load(f)
    code, out, err = run_cli(["score", f, "--n-boot", "0"], capsys)
    assert code == 2 and "look like percentages (0–100): say so with --percent v)" in err
    data = load(f, options=ReadOptions(percent=("v",)))
    assert data.forecasts("v").tolist() == [0.6, 0.85, 0.4]
    code, out, err = run_cli(["score", f, "--percent", "v", "--n-boot", "0"], capsys)
    assert code == 0 and "read as percentages" in out


@pytest.mark.parametrize("sep,label", [(";", "semicolon"), ("\t", "tab")])
def test_semicolon_and_tab_separated_csv(tmp_path, sep, label):
    rows = [["trajectory_id", "step", "outcome", "conf_a"], ["r1", "1", "1", "0,6" if sep == ";" else "0.6"],
            ["r2", "1", "0", "0.3"]]
    f = tmp_path / "x.csv"
    f.write_text("\n".join(sep.join(r) for r in rows) + "\n", encoding="utf-8")
    data = load(f)
    assert data.forecasts("a").tolist() == [0.6, 0.3]
    assert any(label in n for n in data.notes)


def test_json_lines_named_json_and_unknown_lists(tmp_path):
    f = tmp_path / "rows.json"
    f.write_text('{"trajectory_id":"a","step":1,"outcome":1,"conf_x":0.5}\n'
                 '{"trajectory_id":"b","step":1,"outcome":0,"conf_x":0.4}\n', encoding="utf-8")
    assert load(f).n_trajectories == 2
    g = tmp_path / "list.json"
    g.write_text(json.dumps([{"a": 1}]), encoding="utf-8")
    with pytest.raises(LogFormatError, match="not a tau-bench log"):
        load(g)


# ----------------------------------------------------------------------------- raw-only logs
def hotpotqa_like(path: Path) -> Path:
    """101 runs, 29 stopped by the step budget, one per-step unc_ signal and nothing else."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(101):
        censored = i < 29
        n = 10 if censored else int(rng.integers(2, 9))
        y = "" if censored else int(rng.random() < 0.55)
        for t in range(1, n + 1):
            u = rng.normal(1.0 - (0.6 if y == 1 else 0.0), 0.5)
            rows.append({"trajectory_id": f"hq{i}", "step": t, "outcome": y, "unc_entropy": round(u, 4)})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_raw_only_log_through_the_cli(tmp_path, capsys):
    f = hotpotqa_like(tmp_path / "hotpotqa.csv")
    data = load(f)
    assert data.predictors == [] and data.n_censored == 29 and data.n_trajectories == 101
    # by default (issue 46, point 5) the raw signal is converted by cross-fitted Platt, as the dashboard
    # does, and scored beside its references; the note says how
    code, out, err = run_cli(["score", f, "--n-boot", "0"], capsys)
    assert code == 0 and "raw signal unc_entropy converted to a probability by Platt scaling" in out
    assert "  entropy@platt: " in out and "  ref:step: " in out
    code, out, err = run_cli(["score", f, "--recalibrate", "platt", "--n-boot", "0"], capsys)
    assert code == 0, err
    assert "entropy@platt" in out and "  ref:step: " in out  # --recalibrate keeps the references
    code, out, err = run_cli(["compare", f, "--recalibrate", "isotonic", "--baseline", "entropy@isotonic",
                              "--n-boot", "50"], capsys)  # the references are there to compare it with
    assert code == 0 and "ref:step" in out, err


def test_cli_reads_every_harness_and_reports_the_treatment_table(tmp_path, capsys, inspect_logs):
    obj = json.loads(TAU2[0].read_text(encoding="utf-8"))
    side = sidecar(tau2_truth(obj)["long"], tmp_path / "f.csv")
    code, out, err = run_cli(["score", TAU2[0], "--forecasts", side, "--n-boot", "0", "--json"], capsys)
    assert code == 0, err
    reading = json.loads(out)["settings"]["reading"]
    assert reading["format"] == "tau2-bench" and {r["reason"] for r in reading["treatment"]} >= {"user_stop"}
    code, out, err = run_cli(["score", TAU2[0], "--forecasts", side, "--treat", "max_steps=failure",
                              "--n-boot", "0"], capsys)
    assert code == 0 and "max_steps" in out and "(set by --treat)" in out
    code, out, err = run_cli(["score", inspect_logs["eval"], "--conf", "verbal=metadata.confidence",
                              "--n-boot", "0"], capsys)
    assert code == 0 and "message_limit" in out and "censored" in out
    code, out, err = run_cli(["score", TAU2[0], "--format", "inspect"], capsys)
    assert code == 2
    code, out, err = run_cli(["score", TAU2[0], "--treat", "max_steps=maybe"], capsys)
    assert code == 2 and "--treat" in err


def test_inspect_tps_matches_a_hand_made_long_log(inspect_logs, tmp_path):
    log = json.loads(inspect_logs["json"].read_text(encoding="utf-8"))
    rows = []
    for s in log["samples"]:
        if s.get("error"):
            continue
        tid = f"{s['id']}-epoch{s['epoch']}"
        censored = bool(s.get("limit"))
        y = "" if censored else int(s["scores"]["includes"]["value"] == "C")
        agent = [m for m in s["messages"] if m["role"] == "assistant"]
        for t, m in enumerate(agent, start=1):
            rows.append({"trajectory_id": tid, "step": t, "outcome": y, "censored": censored,
                         "conf_fake": (m.get("metadata") or {}).get("confidence", "")})
    pd.DataFrame(rows).to_csv(tmp_path / "long.csv", index=False)
    hand = load(tmp_path / "long.csv")
    for kind in ("eval", "json", "chunked"):
        data = load(inspect_logs[kind], options=ReadOptions(conf=(("fake", "metadata.confidence"),)))
        assert_same_tps(data, hand)


def test_raw_only_log_through_the_python_api(tmp_path):
    data = load(hotpotqa_like(tmp_path / "hotpotqa.csv"))
    with pytest.raises(ValueError, match="add_all_recalibrated"):
        tpsviz.compute_tps(data)
    scored, _ = tpsviz.add_all_recalibrated(data, "platt")
    res = tpsviz.compute_tps(scored, SETTINGS)
    assert list(res.summary.index) == ["entropy@platt"] and res.summary.loc["entropy@platt", "n_trajectories"] == 101


def test_cli_reads_tau_bench_inspect_json_and_a_tau2_folder(tmp_path, capsys, inspect_logs):
    records = json.loads(TAUBENCH.read_text(encoding="utf-8"))
    side = sidecar(taubench_truth(records)["long"], tmp_path / "tb.csv")
    code, out, err = run_cli(["score", TAUBENCH, "--forecasts", side, "--n-boot", "0"], capsys)
    assert code == 0 and "read as tau-bench: 18 runs read, 18 kept" in out and "max_num_steps" in out
    code, out, err = run_cli(["score", inspect_logs["json"], "--conf", "verbal=metadata.confidence",
                              "--n-boot", "0", "--json"], capsys)
    assert code == 0 and json.loads(out)["settings"]["reading"]["format"] == "inspect"
    single = json.loads((FIX / "tau2" / "tau2v1_airline_whissle_trimmed.json").read_text(encoding="utf-8"))
    side2 = sidecar(tau2_truth(single)["long"], tmp_path / "t2.csv")
    code, out, err = run_cli(["score", TAU2_DIR, "--forecasts", side2, "--n-boot", "0"], capsys)
    assert code == 0 and "5 runs read, 5 kept" in out
