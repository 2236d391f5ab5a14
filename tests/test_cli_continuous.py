"""``python -m tpsviz crps``: text and JSON on the demo log written to a CSV, JSON equal to the
core, no NaN in JSON, and clear one-line errors (wrong kind of log, bad options, bad files)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from tests.wording_checks import assert_says
from tpsviz.cli.main import main
from tpsviz.outcomes.continuous_pit import pit_histogram
from tpsviz.io.kinds.continuous import read_continuous
from tpsviz.outcomes.continuous import tps_crps
from tpsviz.core.schedules import parse_schedule
from tpsviz.synthetic.continuous import simulate_continuous


@pytest.fixture(scope="module")
def demo_csv(tmp_path_factory):
    log, _ = simulate_continuous(150, seed=5)
    path = tmp_path_factory.mktemp("crps") / "continuous-like.csv"
    log.to_csv(path, index=False, float_format="%.6g")
    return path


def _strict_json(text: str) -> dict:
    def refuse(c):
        raise AssertionError(f"JSON holds {c}")
    return json.loads(text, parse_constant=refuse)


def test_text_report(demo_csv, capsys):
    assert main(["crps", str(demo_csv), "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("continuous-like.csv: 150 runs")
    assert "censored run(s) left out" in lines[0]
    assert "(strictly proper)" in assert_says(out, "schedule uniform", 1)  # w_t = 1, and its propriety
    assert "higher is better, 0 is perfect" in out
    res = tps_crps(read_continuous(demo_csv), n_boot=200)
    best_first = list(res.summary["tps_mean"].sort_values(ascending=False).index)
    table = [ln.split()[0] for ln in lines
             if len(ln.split()) > 1 and ln.split()[1] in ("gaussian", "quantile", "ensemble")]
    assert table == best_first
    pit = {ln.split()[0]: ln for ln in lines if ln.startswith("  ") and " p = " in ln}
    assert set(pit) == set(res.summary.index)
    assert pit["overconfident"].endswith("too narrow (U-shaped)")
    assert "biased high" in pit["biased"]
    assert pit["truthful"].endswith("consistent with uniform")
    assert "95% CI" in out and "fair estimator" in out and "pinball" in out


def test_json_equals_the_core(demo_csv, capsys):
    assert main(["crps", str(demo_csv), "--json", "--n-boot", "300", "--seed", "7",
                 "--schedule", "front:0.9", "--level", "0.9", "--bins", "5"]) == 0
    got = _strict_json(capsys.readouterr().out)
    log = read_continuous(demo_csv)
    res = tps_crps(log, parse_schedule("front:0.9"), n_boot=300, level=0.9, seed=7)
    assert got["settings"]["schedule"] == "front:0.9" and got["settings"]["n_boot"] == 300
    assert got["settings"]["n_runs"] == log.n_runs and got["settings"]["n_censored"] == log.n_censored
    assert list(got["predictors"]) == list(res.summary["tps_mean"].sort_values(ascending=False).index)
    for name, row in res.summary.iterrows():
        g = got["predictors"][name]
        for k in ("tps_mean", "tps_se", "tps_ci_low", "tps_ci_high", "crps_step_mean"):
            assert g[k] == pytest.approx(row[k], rel=1e-12), (name, k)
        for k in ("n_runs", "n_excluded_censored", "n_steps", "n_missing"):
            assert g[k] == row[k]
        assert g["form"] == row["form"]
        table, test = pit_histogram(log, name, 5, 7)
        last, _ = pit_histogram(log, name, 5, 7, which="last")
        assert [b["count"] for b in g["pit"]["histogram_all_rows"]] == table["count"].tolist()
        assert [b["count"] for b in g["pit"]["histogram_last_steps"]] == last["count"].tolist()
        assert g["pit"]["test"]["p_value"] == pytest.approx(test["p_value"], rel=1e-12)
        assert g["pit"]["test"]["reading"] == test["reading"]
    assert got["predictors"]["quantiles"]["levels"][0] == pytest.approx(0.05)
    assert got["notes"] == res.notes


def test_json_has_null_not_nan(tmp_path, capsys):
    df = pd.DataFrame({"trajectory_id": ["a", "a", "b"], "step": [1, 2, 1], "outcome": [1.0, 1.0, np.nan],
                       "mu_x": [1.0, 2.0, 1.0], "sigma_x": [1.0, 1.0, 1.0],
                       "mu_none": [np.nan] * 3, "sigma_none": [np.nan] * 3})
    path = tmp_path / "tiny.csv"
    df.to_csv(path, index=False)
    assert main(["crps", str(path), "--json", "--n-boot", "0"]) == 0
    got = _strict_json(capsys.readouterr().out)
    assert got["predictors"]["none"]["tps_mean"] is None
    assert got["predictors"]["x"]["tps_se"] is None  # one run: no SE
    assert got["predictors"]["x"]["tps_ci_low"] is None
    assert got["predictors"]["none"]["pit"]["test"]["p_value"] is None
    assert main(["crps", str(path)]) == 0
    out = capsys.readouterr().out
    assert "n/a" in out and "no scored run" in out


def _err(args, capsys) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") <= 8
    return err


def test_the_old_spelling_is_score_on_every_kind_of_log(tmp_path, capsys):
    """``crps`` is an old spelling of ``score`` (issue 48): a binary or multi-class log given to it is
    scored as ``score`` scores it, the same JSON."""
    b = tmp_path / "binary.csv"
    pd.DataFrame({"trajectory_id": ["a", "b"], "step": [1, 1], "outcome": [1, 0], "conf_v": [0.4, 0.3]}).to_csv(
        b, index=False)
    m = tmp_path / "multi.csv"
    pd.DataFrame({"trajectory_id": ["a"], "step": [1], "outcome": ["success"], "conf_v__success": [0.4],
                  "conf_v__failure": [0.6]}).to_csv(m, index=False)
    for path in (b, m):
        outs = []
        for command in ("crps", "score"):
            assert main([command, str(path), "--json", "--n-boot", "0"]) == 0
            outs.append(json.loads(capsys.readouterr().out))
        assert outs[0] == outs[1] and outs[0]["predictors"]


def test_bad_options_and_files(demo_csv, tmp_path, capsys):
    assert "--n-boot must be 0" in _err(["crps", str(demo_csv), "--bootstrap", "3"], capsys)  # (old spelling)
    assert "--n-boot must be 0" in _err(["crps", str(demo_csv), "--n-boot", "3"], capsys)
    assert "--level" in _err(["crps", str(demo_csv), "--level", "1.5"], capsys)
    assert "--seed" in _err(["crps", str(demo_csv), "--seed", "-1"], capsys)
    assert "--bins" in _err(["crps", str(demo_csv), "--bins", "1"], capsys)
    assert "unknown schedule" in _err(["crps", str(demo_csv), "--schedule", "sometimes"], capsys)
    assert "column" in _err(["crps", str(demo_csv), "--schedule", "column"], capsys)
    assert "underflow" in _err(["crps", str(demo_csv), "--schedule", "front:1e-300"], capsys)
    assert "no such file" in _err(["crps", str(tmp_path / "missing.csv")], capsys)
    bad = tmp_path / "bad.csv"
    bad.write_text("trajectory_id,step,outcome,mu_x,sigma_x\na,1,2,1,-7.123456\n")
    err = _err(["crps", str(bad)], capsys)
    assert "'sigma_x'" in err and "line 2" in err and "7.123456" not in err


def test_per_length_schedule_is_labelled(demo_csv, capsys):
    assert main(["crps", str(demo_csv), "--schedule", "per-length", "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "(not proper)" in out and "note: schedule per-length: not proper" in out
    assert "± 1.96 SE" in out
    first = out.splitlines()[6].split()  # the best predictor's row: name, form, TPS-CRPS, ± half-width
    assert first[1] in ("gaussian", "quantile", "ensemble") and math.isfinite(float(first[2])) and first[3] == "±"
