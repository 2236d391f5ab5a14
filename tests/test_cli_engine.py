"""``score --engine``: a dataset scored out of core reports the numbers the in-memory engine
reports for the same rows; auto says which engine it picked and why; what the out-of-core engine
cannot do is refused by name (run as a user runs it: a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.wording_checks import assert_says
from tpsviz.io.files import DEFAULT_MAX_ROWS

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_data" / "webshop-like.csv"


def run(*args, env=None):
    full = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "tpsviz", *map(str, args)], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ds")
    df = pd.read_csv(DEMO)
    cut = len(df) // 2 + 5  # a run spans the two files
    df.iloc[:cut].to_parquet(folder / "part-0.parquet")
    df.iloc[cut:].to_parquet(folder / "part-1.parquet")
    return folder


def test_out_of_core_json_matches_the_in_memory_json(dataset, tmp_path):
    args = ["--json", "--n-boot", "300", "--alpha", "2", "--beta", "3", "--schedule", "linear"]
    # (out of core every SE is by run and every CI percentile: the in-memory score is asked for the same)
    mem = run("score", DEMO, *args, "--engine", "memory", "--cluster-by", "run", "--interval", "percentile",
              "--per-trajectory", tmp_path / "m.csv")
    duck = run("score", dataset, *args, "--engine", "duckdb", "--per-trajectory", tmp_path / "d.csv")
    assert mem.returncode == 0 and duck.returncode == 0, duck.stderr
    a, b = json.loads(mem.stdout), json.loads(duck.stdout)
    assert a["settings"]["engine"] == "memory" and b["settings"]["engine"] == "duckdb"
    assert a["settings"]["se"]["unit"] == b["settings"]["se"]["unit"] == "run"
    assert "out of core" in b["settings"]["se"]["reason"]
    assert b["settings"]["n_trajectories"] == a["settings"]["n_trajectories"]
    assert b["settings"]["reference_rate"] == pytest.approx(a["settings"]["reference_rate"], rel=1e-12)
    assert b["settings"]["verdicts"].startswith("on all") and "exact counts" in b["settings"]["metrics"]
    for name, pa in a["predictors"].items():
        pb = b["predictors"][name]
        for key in ("tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "tps_step_mean", "tps_ref", "skill",
                    "auroc", "auprc", "auroc_final", "tece_pooled", "tece_final"):
            assert pb[key] == pytest.approx(pa[key], rel=1e-10, abs=1e-12), (name, key)
        for key in ("n_trajectories", "n_censored", "n_clipped", "n_steps", "n_missing"):
            assert pb[key] == pa[key], (name, key)
        assert pb["ranks_exact"] is True and pb["auroc_bound"] == 0
        # on all runs, the verdict is the in-memory verdict
        assert pb["verdict"]["label"] == pa["verdict"]["label"] and pb["verdict"]["text"] == pa["verdict"]["text"]
    m = pd.read_csv(tmp_path / "m.csv").sort_values(["predictor", "trajectory_id"], ignore_index=True)
    d = pd.read_csv(tmp_path / "d.csv").sort_values(["predictor", "trajectory_id"], ignore_index=True)
    assert list(m.columns) == list(d.columns) == ["trajectory_id", "predictor", "tps", "censored", "outcome"]
    assert (m[["trajectory_id", "predictor", "censored"]] == d[["trajectory_id", "predictor", "censored"]]).all().all()
    np.testing.assert_array_equal(d["outcome"].to_numpy(float), m["outcome"].to_numpy(float))  # (NaN where censored)
    assert m["outcome"].notna().any() and m["outcome"].isna().sum() == m["censored"].sum()
    np.testing.assert_allclose(d["tps"], m["tps"], rtol=1e-12)


def test_auto_says_which_engine_it_picked(dataset):
    rows = len(pd.read_csv(DEMO))
    small = run("score", dataset, "--n-boot", "0")
    assert small.returncode == 0, small.stderr
    # the engine's line: its rows and files, and the limit it is within (the default) or over
    assert "within" in assert_says(small.stdout, "engine: memory (auto:", rows, 2, DEFAULT_MAX_ROWS)
    big = run("score", dataset, "--n-boot", "0", env={"TPSVIZ_MAX_ROWS": "1000"})
    assert big.returncode == 0, big.stderr
    assert "more than" in assert_says(big.stdout, "engine: duckdb, out of core (auto:", rows, 2, 1000)
    assert "verdicts on all" in big.stdout  # fewer runs than --verdict-sample: the verdicts see them all
    glob = run("score", str(dataset / "*.parquet"), "--n-boot", "0", "--engine", "duckdb", "--json")
    assert glob.returncode == 0 and json.loads(glob.stdout)["settings"]["dataset"]["files"] == 2
    # the in-memory engine reads a dataset too, with its rows located by file
    mem = run("score", dataset, "--n-boot", "0", "--engine", "memory")
    assert mem.returncode == 0 and "engine: memory (asked for" in mem.stdout


def test_what_out_of_core_cannot_do_is_refused_by_name(dataset, tmp_path):
    out = run("score", dataset, "--engine", "duckdb", "--recalibrate", "platt")
    assert out.returncode == 2 and "--recalibrate" in out.stderr and "out-of-core" in out.stderr
    jsonl = tmp_path / "log.jsonl"
    pd.read_csv(DEMO).head(50).to_json(jsonl, orient="records", lines=True)
    out = run("score", jsonl, "--engine", "duckdb")
    assert out.returncode == 2 and "--engine duckdb" in out.stderr
    assert all(fmt in out.stderr for fmt in ("Parquet", "CSV", "TSV"))  # what it reads instead
    bad = tmp_path / "bad"
    bad.mkdir()
    df = pd.read_csv(DEMO).head(200)
    df.loc[7, df.columns[df.columns.str.startswith("conf_")][0]] = 3.0
    df.to_parquet(bad / "a.parquet")
    out = run("score", bad, "--engine", "duckdb")
    assert out.returncode == 2 and "probabilities must be in [0, 1]" in out.stderr
    assert "Traceback" not in out.stderr and "trajectory" in out.stderr


def test_percent_is_read_out_of_core(tmp_path):
    df = pd.read_csv(DEMO)
    conf = [c for c in df.columns if c.startswith("conf_")][0]
    df[conf] = df[conf] * 100
    folder = tmp_path / "pct"
    folder.mkdir()
    df.to_parquet(folder / "a.parquet")
    df.to_csv(tmp_path / "pct.csv", index=False)
    name = conf[len("conf_"):]
    args = ["--json", "--n-boot", "0", "--percent", name]
    mem = run("score", tmp_path / "pct.csv", *args, "--engine", "memory")
    out = run("score", folder, *args, "--engine", "duckdb")
    assert mem.returncode == 0 and out.returncode == 0, out.stderr
    a, b = json.loads(mem.stdout)["predictors"][name], json.loads(out.stdout)["predictors"][name]
    for key in ("tps_mean", "auroc", "tece_pooled"):
        assert b[key] == pytest.approx(a[key], rel=1e-10)
    assert b["verdict"]["label"] == a["verdict"]["label"]  # the verdicts' sample reads percentages too
    out = run("score", folder, "--n-boot", "0", "--engine", "duckdb")
    assert out.returncode == 2 and f"say so with --percent {name}" in out.stderr


def test_verdicts_on_a_sample_say_so(dataset):
    out = run("score", dataset, "--engine", "duckdb", "--n-boot", "0", "--verdict-sample", "60", "--json")
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    words = obj["settings"]["verdicts"]
    assert words.startswith("on a random sample of 60 of ") and "describe the sample" in words
    assert all(p["verdict"]["sample"] == words for p in obj["predictors"].values())
    again = json.loads(run("score", dataset, "--engine", "duckdb", "--n-boot", "0", "--verdict-sample", "60",
                           "--json").stdout)
    # seeded: the same sample, the same verdicts (numbers to the last bits that DuckDB's parallel sums
    # may order differently)
    for name, p in obj["predictors"].items():
        q = again["predictors"][name]
        assert q["verdict"]["label"] == p["verdict"]["label"]
        for key in ("tps_mean", "skill", "auroc", "tece_pooled"):
            assert q[key] == pytest.approx(p[key], rel=1e-12)
    off = run("score", dataset, "--engine", "duckdb", "--n-boot", "0", "--verdict-sample", "0")
    assert off.returncode == 0 and "--verdict-sample" in assert_says(off.stdout, "verdicts not computed", 0)


@pytest.mark.parametrize("settings", [[], ["--alpha", "2", "--beta", "3", "--schedule", "linear"],
                                      ["--censoring", "complete", "--eps", "0"]])
def test_compare_out_of_core_gives_the_in_memory_tps_columns(dataset, settings):
    """compare --baseline on all runs out of core: Δ TPS, its SE, Δ/SE and the runs of the
    in-memory compare (the same per-run differences); the paired AUROC is left out, and said so."""
    args = ["--json", "--n-boot", "50", "--baseline", "truthful", *settings]
    mem = run("compare", DEMO, *args, "--engine", "memory", "--cluster-by", "run")  # (out of core: by run)
    duck = run("compare", dataset, *args, "--engine", "duckdb")
    assert mem.returncode == 0 and duck.returncode == 0, duck.stderr
    a, b = json.loads(mem.stdout), json.loads(duck.stdout)
    assert a["settings"]["se"]["unit"] == b["settings"]["se"]["unit"] == "run"
    assert b["settings"]["engine"] == "duckdb" and b["baseline"] == "truthful"
    assert "AUROC delta: not computed out of core" in b["settings"]["definition"]
    assert set(b["predictors"]) == set(a["predictors"]) and len(a["predictors"]) >= 2
    for name, pa in a["predictors"].items():
        pb = b["predictors"][name]
        for key in ("tps_delta", "tps_se", "tps_z"):
            assert pb[key] == pytest.approx(pa[key], rel=1e-10, abs=1e-12), (name, key)
        assert pb["n_runs"] == pa["n_runs"]
        assert pa["auroc_delta"] is not None and pb["auroc_delta"] is None


def test_compare_out_of_core_report_and_refusals(dataset):
    big = run("compare", dataset, "--baseline", "truthful", env={"TPSVIZ_MAX_ROWS": "1000"})
    assert big.returncode == 0, big.stderr
    assert "more than" in assert_says(big.stdout, "engine: duckdb, out of core (auto:", 1000)
    assert "on all runs" in assert_says(big.stdout, "baseline 'truthful'")
    assert "AUROC delta: not computed out of core" in big.stdout
    # a line per other predictor, best Δ first
    deltas = [float(line.split()[1]) for line in big.stdout.splitlines()
              if line.split() and line.split()[0] in ("verbal", "noisy", "pessimistic", "flat", "budget_aware")]
    assert len(deltas) >= 2 and deltas == sorted(deltas, reverse=True)
    out = run("compare", dataset, "--baseline", "nope", "--engine", "duckdb")
    assert out.returncode == 2
    names = [c[len("conf_"):] for c in pd.read_csv(DEMO, nrows=1).columns if c.startswith("conf_")]
    line = assert_says(out.stderr, "unknown baseline 'nope'")
    assert len(names) >= 2 and all(name in line for name in names)  # the log's predictors, listed
    out = run("compare", dataset, "--by", "model", "--engine", "duckdb")
    assert out.returncode == 2 and "--baseline NAME" in assert_says(out.stderr, "out of core")
    out = run("compare", dataset, "--baseline", "truthful", "--engine", "duckdb", "--recalibrate", "platt")
    assert out.returncode == 2 and "--recalibrate" in out.stderr and "out-of-core" in out.stderr
    # the in-memory reader's refusal of a big dataset names both commands that go out of core
    out = run("compare", dataset, "--baseline", "truthful", "--engine", "memory", env={"TPSVIZ_MAX_ROWS": "1000"})
    assert out.returncode == 2
    line = assert_says(out.stderr, "--engine duckdb", len(pd.read_csv(DEMO)), 1000)
    assert "score" in line and "compare --baseline" in line
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("command", [["score"], ["compare", "--baseline", "truthful"]])
def test_a_dataset_and_its_files_are_named_once(dataset, capsys, engine, command):
    """Issue 35: the out-of-core head named the dataset's files twice, "(2 parquet files)" after the
    runs and "6,441 rows in 2 files" in the engine's line; it says them once, as the memory path does."""
    from tpsviz.cli.main import main

    assert main([command[0], str(dataset), *command[1:], "--n-boot", "0", "--engine", engine]) == 0
    out = capsys.readouterr().out
    head = out.split("\n\n")[0]
    assert out.count(str(dataset)) == 1 and head.startswith(f"{dataset}: ")
    assert head.count(" files") == (engine == "duckdb") and "parquet file" not in head


@pytest.mark.parametrize("command", [["score"], ["compare", "--baseline", "truthful"], ["monitor"], ["defer"]])
def test_every_command_says_what_reading_a_dataset_left_out_once(dataset, tmp_path, capsys, command):
    """A file of the folder that is not read (here ``_SUCCESS``) is said once, in text and in JSON:
    ``monitor`` and ``defer`` used to drop the dataset's notes."""
    import shutil

    from tpsviz.cli.main import main

    folder = tmp_path / "ds"
    shutil.copytree(dataset, folder)
    (folder / "_SUCCESS").write_text("")
    argv = [command[0], str(folder), *command[1:], "--n-boot", "0"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if "skipped" in line]
    assert len(said) == 1 and said[0].startswith("note:"), out[:2000]
    assert_says(said[0], "skipped", 1)  # one file: _SUCCESS
    assert main([*argv, "--json"]) == 0
    notes = [text for text in _strings(json.loads(capsys.readouterr().out)) if "skipped" in text]
    assert len(notes) == 1
    assert_says(notes[0], "skipped", 1)


def _strings(obj):
    """Every string value of a JSON object, however deep."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _strings(value)
