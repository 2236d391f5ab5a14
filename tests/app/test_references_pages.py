"""Issue 34 in the dashboard (AppTest): a log without forecasts opens on every page with its reference
forecasters scored; the sidebar switch adds them to a log with forecasts; the "Get forecasts for this
log" panel gives the replay command for this file; a forecasts table uploaded beside a harness log is
joined, and one whose ids match no run is refused with the ids listed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from apptest_helpers import fresh, texts, upload
from tests.wording_checks import assert_says

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_harness import TAUBENCH, taubench_truth  # noqa: E402

import tpsviz  # noqa: E402
from tpsviz.forecasts.references import REFERENCES, add_references  # noqa: E402

TAU_DEMO = {"demo": "tau-bench-airline"}
REAL_LOG = ROOT / "demo_data" / "tau-bench-airline-gpt-4o.json"
ALL_PAGES = ["pages/views/overview.py", "pages/views/reliability.py", "pages/views/steps.py",
             "pages/views/censoring.py", "pages/views/lab.py", "pages/views/monitoring.py",
             "pages/views/outcomes.py", "pages/views/recalibration.py", "pages/views/export.py"]


def _shown(at) -> str:
    return texts(at) + "\n" + "\n".join(c.value for c in at.code)




def test_the_references_are_in_a_results_key_only_where_a_reference_is_scored():
    """Moving the censoring mode refits the references: results that score one are keyed on it; the
    log's own predictors' results are not (they score the same with or without references)."""
    from pages._ui.results import SETTINGS, Analysis

    refs = ("upper", 7)
    assert Analysis("log", predictors=("truthful",), refs=refs).key(("seed",)).refs == ()
    assert Analysis("log", predictors=("truthful", "ref:step"), refs=refs).key(("seed",)).refs == refs
    assert Analysis("log", predictors=(), refs=refs).key(SETTINGS).refs == refs  # the whole log


@pytest.fixture(scope="module")
def tau_demo_opened():
    """The demo scenario of the real tau-bench log, opened once (its references are fitted once)."""
    return fresh(TAU_DEMO, timeout=300)


def test_the_tau_bench_demo_opens_with_its_references_and_what_a_signal_must_beat(tau_demo_opened):
    at = tau_demo_opened
    assert list(at.sidebar.multiselect(key="pred").value) == list(REFERENCES)
    assert not [t for t in at.sidebar.get("toggle") if t.label == "Add reference forecasters"]  # always on here
    shown = _shown(at)
    assert "No forecast in this log" in shown and "What a real signal would have to beat" in shown
    # the bar in words: the best reference's TPS as the core computes it (an independent evaluate)
    ev = tpsviz.evaluate(str(REAL_LOG), n_boot=0)
    best = max(REFERENCES, key=lambda n: ev.summary.loc[n, "tps_mean"])
    row = ev.summary.loc[best]
    line = assert_says(shown, "best yardstick", row["tps_mean"], row["tps_se"], row["n_trajectories"])
    assert f"**{best.replace(':', chr(92) + ':').replace('+', chr(92) + '+')}**" in line and "nats" in line
    # labelled as references in the verdicts and the leaderboard, never as the agent's
    verdicts = [p for m in at.markdown for p in m.value.split("\n\n") if "-badge[" in p]  # one paragraph each
    assert len(verdicts) == 3 and all("reference forecaster" in v for v in verdicts)
    assert all(v.startswith(":blue-badge[yardstick]") and "not the agent's confidence" in v.replace("\\", "")
               for v in verdicts)  # a yardstick, never taken for the agent's confidence (issue 37)
    board = next(d.value for d in at.dataframe if "predictor" in d.value.columns and "TPS" in d.value.columns)
    assert sorted(board["predictor"]) == sorted(f"{n} (reference forecaster)" for n in REFERENCES)
    # the panel, open: the three ways, the replay command for this file
    assert "python -m tpsviz forecast demo_data/tau-bench-airline-gpt-4o.json --model openai/gpt-4o-mini " \
           "--out forecasts.parquet" in shown
    assert shown.index("1. Reference forecasters") < shown.index("2. Elicit") < shown.index("3. Replay")


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_page_scores_the_references_of_a_log_without_forecasts(tau_demo_opened, page):
    at = tau_demo_opened
    at.switch_page(page).run()
    assert not at.exception, (page, [e.value for e in at.exception])
    assert not [e.value for e in at.error], (page, [e.value for e in at.error])
    if page != "pages/views/outcomes.py":  # (that page scores multi-class and continuous logs only)
        assert "ref:task+step" in _shown(at) + "".join(str(d.value) for d in at.dataframe), page


def test_the_references_follow_the_censoring_mode():
    """ref:step under upper censoring counts the 5 censored runs as successes: its TPS is the core's."""
    at = fresh(TAU_DEMO | {"cens": "upper", "boot": "0"}, timeout=300)
    board = next(d.value for d in at.dataframe if "predictor" in d.value.columns and "TPS" in d.value.columns)
    data = tpsviz.load(str(REAL_LOG))
    settings = tpsviz.ScoreSettings(censoring="upper", n_boot=0)
    want = tpsviz.compute_tps(add_references(data, settings), settings).summary["tps_mean"]
    got = dict(zip(board["predictor"], board["TPS"]))
    for name in REFERENCES:
        assert got[f"{name} (reference forecaster)"] == f"{want[name]:.4f}"


def test_the_switch_adds_the_references_to_a_log_with_forecasts():
    at = fresh({"boot": "0"})
    toggle = next(t for t in at.sidebar.get("toggle") if t.label == "Add reference forecasters")
    assert toggle.value is False and not any(p.startswith("ref:") for p in at.sidebar.multiselect(key="pred").value)
    toggle.set_value(True).run()
    assert not at.exception
    preds = at.sidebar.multiselect(key="pred").value
    assert set(REFERENCES) <= set(preds) and "truthful" in preds
    # a real predictor's verdict now says whether it beats the best reference (as `tpsviz score` does)
    verdict = next(p for m in at.markdown for p in m.value.split("\n\n") if "-badge[" in p and "truthful" in p)
    assert "ref\\:" in verdict and ("beats" in verdict or "does worse than" in verdict or "clearly beat" in verdict)
    assert "Get forecasts for this log" in [e.label for e in at.expander]
    # a link carries the switch
    linked = fresh({"boot": "0", "refs": "true"})
    assert set(REFERENCES) <= set(linked.sidebar.multiselect(key="pred").value)


def _tau_log_and_table():
    truth = taubench_truth(json.loads(TAUBENCH.read_text(encoding="utf-8")))
    side = truth["long"][["trajectory_id", "step", "conf_fake"]].copy()
    return truth, side


def test_the_panel_names_an_uploaded_file_and_an_uploaded_table_is_joined():
    truth, side = _tau_log_and_table()
    at = fresh({"boot": "0"})
    upload(at, [("my log (1).json", TAUBENCH.read_bytes(), "application/json")])
    shown = _shown(at)
    assert "python -m tpsviz forecast 'my log (1).json' --model openai/gpt-4o-mini --out forecasts.parquet" in shown
    widget = at.file_uploader(key="upload_forecasts").label  # the message names the real widget
    assert f'Reading options › "{widget}"' in shown
    assert list(at.sidebar.multiselect(key="pred").value) == list(REFERENCES)
    # the table the replay would write, joined: its predictor is scored beside the references
    at.file_uploader(key="upload_forecasts").set_value(("fc.csv", side.to_csv(index=False).encode(), "text/csv")).run()
    assert not at.exception
    preds = at.sidebar.multiselect(key="pred").value
    assert "fake" in preds and not any(p.startswith("ref:") for p in preds)  # a log with forecasts: switch off
    board = next(d.value for d in at.dataframe if "predictor" in d.value.columns and "TPS" in d.value.columns)
    assert list(board["predictor"]) == ["fake"]
    assert board["n runs"].iloc[0] == truth["counts"]["runs"]


def test_a_table_whose_ids_match_no_run_lists_them():
    _, side = _tau_log_and_table()
    bad = side.copy()
    ids = sorted(bad["trajectory_id"].unique())[:2]
    bad.loc[bad["trajectory_id"] == ids[0], "trajectory_id"] = "not-a-run"
    bad.loc[bad["trajectory_id"] == ids[1], "trajectory_id"] = "**also_not**"
    at = fresh({"boot": "0"})
    upload(at, [("log.json", TAUBENCH.read_bytes(), "application/json")],
            forecasts=("fc.csv", bad.to_csv(index=False).encode(), "text/csv"))
    err = "\n".join(e.value for e in at.error)
    assert "forecasts table" in err and "cannot be joined" in err
    listed = "\n".join(c.value for c in at.code)
    assert_says(listed, "match no run", 2)
    assert "'not-a-run'" in listed and "'**also_not**'" in listed  # shown as text, as the CLI lists them


def test_the_panel_names_a_server_path(tmp_path, monkeypatch):
    root = tmp_path / "logs"
    (root / "airline").mkdir(parents=True)
    log = root / "airline" / "gpt-4o airline.json"
    log.write_bytes(TAUBENCH.read_bytes())
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(root))
    at = fresh({"src": "Server path", "path": "airline/gpt-4o airline.json", "boot": "0"})
    shown = _shown(at)
    real = str(log.resolve())
    # inside its readable folder, named by the folder's name, never where it is (issue 38)
    assert "python -m tpsviz forecast 'airline/gpt-4o airline.json' --model openai/gpt-4o-mini " \
           "--out forecasts.parquet" in shown
    assert "inside the readable folder `logs`" in shown and "`logs:/forecasts.parquet`" in shown
    assert str(root.resolve()) not in shown and str(tmp_path) not in shown
    widget = at.text_input(key="fpath").label  # the message names the real widget
    assert f'Reading options › "{widget}"' in shown
    monkeypatch.setenv("TPSVIZ_SHOW_ROOT_PATHS", "1")  # the administrator opted in: the full path
    shown = _shown(fresh({"src": "Server path", "path": "airline/gpt-4o airline.json", "boot": "0"}))
    assert f"python -m tpsviz forecast '{real}' --model openai/gpt-4o-mini --out forecasts.parquet" in shown
    assert "inside the readable folder" not in shown


def test_a_table_log_without_forecasts_is_told_the_replay_needs_a_harness_log():
    rows = [(f"r{i}", t, int(i % 3 == 0), f"task{i % 7}") for i in range(60) for t in range(1, 2 + i % 4)]
    csv = pd.DataFrame(rows, columns=["trajectory_id", "step", "outcome", "task"]).to_csv(index=False).encode()
    at = fresh({"boot": "0"})
    upload(at, [("plain.csv", csv, "text/csv")])
    assert list(at.sidebar.multiselect(key="pred").value) == list(REFERENCES)
    assert "holds no transcript" in _shown(at)
