"""``score`` and ``compare`` read every kind of log (tpsviz.io.kinds.outcome_kind on the header):
``score`` on a multi-class or continuous-outcome log prints what ``multiclass`` / ``crps`` print;
``compare --baseline`` gives the paired TPS difference per run; options of another kind are refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.wording_checks import assert_says, says_numbers
from tpsviz.cli.main import main

DEMO = Path(__file__).resolve().parents[1] / "demo_data"
MC = DEMO / "multiclass-like.csv"
CONT = DEMO / "continuous-like.csv"


def _out(capsys, argv) -> str:
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


@pytest.mark.parametrize("path, command, options", [
    (MC, "multiclass", ["--n-boot", "200"]),
    (MC, "multiclass", ["--n-boot", "200", "--rule", "brier", "--seed", "3", "--level", "0.9", "--bins", "5",
                        "--censoring", "simple", "--censored-label", "failure", "--schedule", "front:0.9"]),
    (CONT, "crps", ["--n-boot", "200"]),
    (CONT, "crps", ["--n-boot", "200", "--seed", "7", "--bins", "5", "--level", "0.9", "--schedule", "linear"]),
])
@pytest.mark.parametrize("json_", [False, True])
def test_score_prints_what_the_kind_s_command_prints(capsys, path, command, options, json_):
    extra = ["--json"] if json_ else []
    got = _out(capsys, ["score", path, *options, *extra])
    want = _out(capsys, [command, path, *options, *extra])
    assert got == want
    if json_:
        assert json.loads(got)["predictors"]


def test_score_reads_the_kind_from_a_parquet_footer(capsys, tmp_path):
    path = tmp_path / "mc.parquet"
    pd.read_csv(MC, dtype={"outcome": str}).to_parquet(path)
    assert _out(capsys, ["score", path, "--n-boot", "0"]) == _out(capsys, ["multiclass", path, "--n-boot", "0"])


@pytest.mark.parametrize("argv, needle", [
    (["score", MC, "--alpha", "1"], "--alpha does not apply to a multi-class log"),
    (["score", MC, "--engine", "duckdb"], "--engine duckdb does not apply to a multi-class log"),
    (["score", CONT, "--censoring", "simple", "--rule", "brier"], "--censoring, --rule do not apply to a continuous"),
    (["score", DEMO / "tau2-like.csv", "--rule", "brier"], "--rule does not apply to a binary"),
    (["compare", MC, "--by", "signal"], "compared predictor by predictor"),
    (["compare", MC], "compare needs --baseline NAME"),
    (["compare", MC, "--baseline", "nobody"], "unknown baseline 'nobody'"),
    (["score", MC, "--censoring", "upper"], "a multi-class log takes complete, simple, exact"),
])
def test_options_of_another_kind_are_refused_by_name(capsys, argv, needle):
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_a_folder_of_multiclass_files_is_refused_with_the_reason(capsys, tmp_path):
    df = pd.read_csv(MC, dtype={"outcome": str})
    (tmp_path / "ds").mkdir()
    df.to_csv(tmp_path / "ds" / "part-0.csv", index=False)
    assert main(["score", str(tmp_path / "ds")]) == 2
    assert "give the path of one file" in capsys.readouterr().err


def _paired(per_run: pd.DataFrame, baseline: str) -> dict:
    """Brute force: mean and SE of the per-run differences on the runs both predictors scored."""
    wide = per_run.pivot(index="trajectory_id", columns="predictor", values="tps")
    out = {}
    for name in wide.columns.drop(baseline):
        d = (wide[name] - wide[baseline]).dropna().to_numpy()
        out[name] = (d.mean(), d.std(ddof=1) / np.sqrt(len(d)), len(d))
    return out


@pytest.mark.parametrize("kind", ["multiclass", "continuous"])
def test_compare_baseline_on_other_kinds_is_the_paired_difference(capsys, kind):
    if kind == "multiclass":
        from tpsviz.io.kinds.multiclass import read_multiclass
        from tpsviz.outcomes.multiclass import tps_k

        path, log = MC, read_multiclass(MC)
        res = tps_k(log, censoring="exact", n_boot=0)
    else:
        from tpsviz.io.kinds.continuous import read_continuous
        from tpsviz.outcomes.continuous import tps_crps

        path, log = CONT, read_continuous(CONT)
        res = tps_crps(log, n_boot=0)
    obj = json.loads(_out(capsys, ["compare", path, "--baseline", "truthful", "--json"]))
    assert obj["kind"] == kind and obj["baseline"] == "truthful" and obj["settings"]["n_boot"] == 0
    want = _paired(res.per_run, "truthful")
    assert set(obj["predictors"]) == set(want)
    for name, (mean, se, n) in want.items():
        got = obj["predictors"][name]
        assert got["tps_delta"] == pytest.approx(mean, rel=1e-12)
        assert got["tps_se"] == pytest.approx(se, rel=1e-9)
        assert got["tps_z"] == pytest.approx(mean / se, rel=1e-9)
        assert got["n_runs"] == n
    text = _out(capsys, ["compare", path, "--baseline", "truthful"])
    assert "paired comparison" in assert_says(text, "baseline 'truthful'") and "delta/SE" in text
    for name, (mean, se, n) in want.items():  # a row each: Δ, its SE, Δ/SE and the runs, as the JSON's
        row = next(line for line in text.splitlines() if line.split() and line.split()[0] == name)
        assert says_numbers(row, [mean, se, mean / se, n]), row
