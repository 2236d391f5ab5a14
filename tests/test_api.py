"""The public Python API: ``tpsviz.evaluate`` gives what ``python -m tpsviz score`` prints, docs/api.md
runs as written, ``import tpsviz`` stays light and ``pip install .`` has what it needs."""

import doctest
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.cli.wording import CLI, say
from tpsviz.cli.main import main
from tpsviz.evaluation.record import LEADERBOARD_COLUMNS
from tpsviz.evaluation.settings import qz_source
from tpsviz.report.export import write_safe_csv

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_data"


def cli_json(capsys, *args) -> str:
    """What ``python -m tpsviz score ... --json`` prints (run in this process)."""
    capsys.readouterr()
    assert main(["score", *map(str, args), "--json"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("log,settings,options", [
    ("tau2-like.csv", {}, []),
    ("webshop-like.csv", {}, []),
    ("tau2-like.csv", dict(alpha=1, beta=1, schedule="front:0.9", seed=3, eps=0.001),
     ["--alpha", "1", "--beta", "1", "--schedule", "front:0.9", "--seed", "3", "--eps", "0.001"]),
    ("webshop-like.csv", dict(rollouts=DEMO / "webshop-like_rollouts.csv", n_boot=200),
     ["--rollouts", DEMO / "webshop-like_rollouts.csv", "--n-boot", "200"]),
    ("webshop-like.csv", dict(censoring="complete", recalibrate="platt", folds=3, n_boot=0),
     ["--censoring", "complete", "--recalibrate", "platt", "--folds", "3", "--n-boot", "0"]),
])
def test_to_json_is_the_score_commands_json(capsys, monkeypatch, log, settings, options):
    monkeypatch.chdir(ROOT)
    ev = tpsviz.evaluate(f"demo_data/{log}", **settings)
    printed = cli_json(capsys, f"demo_data/{log}", *options)
    assert json.dumps(ev.to_json(CLI), indent=2) + "\n" == printed  # key for key, value for value, in order
    if settings.get("n_boot") == 0:  # from Python, a setting is named by its keyword (tpsviz.core.wording)
        why = ev.to_json()["predictors"]["truthful"]["why_null"]["tps_ci"]
        assert "(n_boot=0)" in why and "--n-boot" not in why
        assert "(--n-boot 0)" in json.loads(printed)["predictors"]["truthful"]["why_null"]["tps_ci"]


def test_per_trajectory_table_is_the_commands_file(tmp_path):
    out = tmp_path / "per_traj.csv"
    assert main(["score", str(DEMO / "webshop-like.csv"), "--n-boot", "0", "--per-trajectory", str(out)]) == 0
    mine = tmp_path / "mine.csv"
    write_safe_csv(tpsviz.evaluate(DEMO / "webshop-like.csv", n_boot=0).per_trajectory_table(), mine)
    assert mine.read_bytes() == out.read_bytes()


@pytest.fixture(scope="module")
def tau2():
    return tpsviz.load(DEMO / "tau2-like.csv")


@pytest.fixture(scope="module")
def ev(tau2):
    return tpsviz.evaluate(tau2, n_boot=200)


def test_the_fields_are_the_cores_numbers(ev, tau2):
    settings = tpsviz.ScoreSettings(censoring="simple", n_boot=200)
    res = tpsviz.compute_tps(tau2, settings)
    pd.testing.assert_frame_equal(ev.summary, res.summary)
    assert ev.settings == settings and ev.engine_reason == "a TrajectoryData given in memory"
    assert set(ev.verdicts) == set(tau2.predictors)
    assert all(isinstance(v, tpsviz.PredictorVerdict) for v in ev.verdicts.values())
    assert ev.verdict_sentences() == [ev.verdicts[n].text for n in tau2.predictors]
    lb = ev.leaderboard
    assert list(lb.columns) == list(LEADERBOARD_COLUMNS) and list(lb.index) == ev.order
    assert (np.diff(lb["tps_mean"].to_numpy()) <= 0).all()  # best first
    assert lb.loc["verbal", "verdict"] == ev.verdicts["verbal"].label
    assert lb.loc["noisy", "skill"] == ev.skill.loc["noisy", "skill"]
    assert lb.loc["noisy", "excess_movement"] == ev.excess_movement.loc["noisy", "value"]
    assert ev.why_null("truthful") == {} and ev.to_json()["predictors"]["truthful"]["why_null"] == {}
    with pytest.raises(AttributeError):  # frozen
        ev.settings = settings


def test_a_log_already_read_is_not_modified(tau2):
    notes, predictors = list(tau2.notes), list(tau2.predictors)
    ev = tpsviz.evaluate(tau2, recalibrate="platt", n_boot=0)
    assert tau2.notes == notes and tau2.predictors == predictors
    assert "truthful@platt" in ev.summary.index
    assert any("cross-fitted platt recalibration" in n for n in ev.notes)


@pytest.mark.parametrize("settings,message", [
    (dict(n_boot=10), "n_boot must be 0 (no bootstrap) or between 50"),
    (dict(n_boot=200.5), "n_boot must be an integer"),
    (dict(seed=-1), "seed must be an integer between 0 and 2^63 - 1"),
    (dict(eps=0.6), "eps must be in [0, 0.5)"),
    (dict(eps="x"), "eps must be a number"),
    (dict(level=1.5), "level must be in (0, 1)"),
    (dict(folds=1, recalibrate="platt"), "folds must be between 2 and 50"),
    (dict(recalibrate="magic"), "recalibrate must be one of platt, isotonic, beta"),
    (dict(alpha=-1), "greater than -1"),
    (dict(alpha="one"), "alpha must be a number"),
    (dict(score="nope"), "unknown score 'nope'"),
    (dict(score="brier", beta=1), "not both"),
    (dict(schedule="front"), "front:G"),
    (dict(schedule="column"), "'weight' column"),
    (dict(censoring="sometimes"), "censoring must be one of"),
    (dict(q_z=1.5), "q_Z must be in [0, 1]"),
    (dict(q_z="rollouts"), "needs a rollouts table (rollouts)"),
    (dict(q_z="log"), "q_z must be 'column', 'rollouts' or a probability"),
    (dict(mapping={"trajectory_id": "run"}), "mapping: reading options apply to a file"),
])
def test_invalid_settings_raise_value_error(tau2, settings, message):
    with pytest.raises(ValueError) as err:
        tpsviz.evaluate(tau2, **settings)
    assert message in str(err.value)


def test_invalid_reading_options_and_files_raise_value_error():
    with pytest.raises(ValueError, match="treatment must be one of"):
        tpsviz.evaluate(DEMO / "tau2-like.csv", treat={"max_steps": "maybe"})
    with pytest.raises(tpsviz.LogFormatError, match="missing required column"):
        tpsviz.evaluate(DEMO / "tau2-like_truth.csv")
    with pytest.raises(OSError):
        tpsviz.evaluate(DEMO / "missing.csv")


def test_reading_options_are_the_commands(tmp_path):
    log = pd.read_csv(DEMO / "tau2-like.csv").rename(columns={"trajectory_id": "run", "conf_verbal": "v_pct"})
    log["v_pct"] *= 100
    path = tmp_path / "renamed.csv"
    log.to_csv(path, index=False)
    ev = tpsviz.evaluate(path, mapping={"trajectory_id": "run", "conf_verbal": "v_pct"}, percent="verbal",
                         n_boot=0)
    ref = tpsviz.evaluate(DEMO / "tau2-like.csv", n_boot=0)
    assert ev.summary.loc["verbal", "tps_mean"] == pytest.approx(ref.summary.loc["verbal", "tps_mean"], rel=1e-12)


def test_q_z_sources():
    web = tpsviz.load(DEMO / "webshop-like.csv")
    const = tpsviz.evaluate(web, q_z=0, n_boot=0)
    simple = tpsviz.evaluate(web, censoring="simple", n_boot=0)
    assert const.settings.censoring == "exact"  # a q_Z source means exact mode
    np.testing.assert_allclose(const.summary["tps_mean"], simple.summary["tps_mean"], rtol=1e-12)
    assert "exact (q_Z = 0 for every censored run)" in const._repr_html_()
    ro = tpsviz.evaluate(web, rollouts=DEMO / "webshop-like_rollouts.csv", censoring="simple", n_boot=0)
    assert ro.notes[-1] == "rollouts: not used, censoring is simple (use censoring='exact')"
    # the command line names its own option in the same note
    _, _, notes = qz_source(web, rollouts=DEMO / "webshop-like_rollouts.csv", censoring="simple")
    assert say(notes[-1]) == "rollouts: not used, censoring is simple (use --censoring exact)"


def hostile_log() -> tpsviz.TrajectoryData:
    """Two predictors whose names and the file name are HTML."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(60):
        y = int(rng.random() < 0.5)
        for t in range(1, 4):
            rows.append({"trajectory_id": f"<i>{i}</i>", "step": t, "outcome": y,
                         "conf_<script>alert(1)</script>": float(np.clip(0.5 + (y - 0.5) * 0.2 * t, 0.01, 0.99)),
                         "conf_plain": 0.5})
    return tpsviz.from_frame(pd.DataFrame(rows), source="<b>log</b>.csv")


def test_html_views_escape_the_log():
    ev = tpsviz.evaluate(hostile_log(), n_boot=0)
    view = ev._repr_html_()
    assert "<script>" not in view and "&lt;script&gt;" in view and "<b>log" not in view
    assert view.count("<li>") == 2  # one verdict sentence per predictor
    page = ev.to_html()
    assert page.startswith("<!DOCTYPE html>")
    for title in ("Verdict: which predictor to trust", "Leaderboard", "Reliability (all steps, complete runs)",
                  "Mean contribution by step", "Rational updating"):
        assert f"<h2>{title}</h2>" in page
    assert "<script>alert(1)</script>" not in page and "<b>log</b>" not in page


def test_public_names():
    from tpsviz.core.schedules import ScheduleVerdict
    from tpsviz.diagnostics.verdict import Verdict

    assert tpsviz.PredictorVerdict is Verdict and tpsviz.ScheduleVerdict is ScheduleVerdict
    assert not hasattr(tpsviz, "Verdict")  # two kinds of verdict, each named for what it judges
    assert isinstance(tpsviz.parse_schedule("uniform").verdict, tpsviz.ScheduleVerdict)
    for name in tpsviz.__all__:
        assert hasattr(tpsviz, name), name


def test_import_stays_light():
    code = ("import sys, tpsviz; print(','.join(m for m in ('sklearn', 'scipy.stats', 'plotly', 'streamlit', "
            "'duckdb', 'dask') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr


def test_docs_api_examples_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 20 and result.failed == 0, result


def test_pyproject_installs_the_core():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = {line.split("==")[0].strip().lower() for line in (ROOT / "requirements.txt").read_text().splitlines()
            if "==" in line}
    meta = project["project"]
    names = lambda reqs: {r.split(">=")[0].split("[")[0].strip().lower().replace("_", "-") for r in reqs}
    assert names(meta["dependencies"]) == {"numpy", "pandas", "scipy", "scikit-learn", "threadpoolctl", "pyarrow",
                                           "plotly"}
    extras = meta["optional-dependencies"]
    assert {"duckdb", "dask", "app", "continuous", "inspect", "dev"} <= set(extras)
    every = names(meta["dependencies"]) | {n for k, v in extras.items() if k != "dev" for n in names(v)}
    dev_pins = {line.split("==")[0].strip().lower().replace("_", "-") for line in
                (ROOT / "requirements-dev.txt").read_text().splitlines() if "==" in line}
    model_clients = {"inspect-ai", "openai"}  # the replay's (`forecast`), pinned where `make run` installs
    assert every - model_clients <= pins  # every runtime need is pinned in requirements.txt
    assert {p.replace("_", "-") for p in pins} >= model_clients and not model_clients & dev_pins
    assert meta["scripts"]["tpsviz"] == "tpsviz.cli.main:main"
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tpsviz.__version__"}
