"""Issue 9 in the dashboard (AppTest): harness logs and tables with other column names open from
an upload and a server path, with every choice visible and in the URL."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import fresh, texts, upload
from tests.wording_checks import assert_says

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_harness import TAU2, TAU2_DIR, hotpotqa_like, tau2_truth  # noqa: E402

PAGES = ["pages/views/overview.py", "pages/views/reliability.py", "pages/views/steps.py",
         "pages/views/censoring.py", "pages/views/lab.py", "pages/views/recalibration.py",
         "pages/views/export.py"]


def _fresh(qp=None) -> AppTest:
    return fresh(qp)




def _metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def _every_page(at):
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not [e.value for e in at.error if "Something went wrong" in e.value], page
    at.switch_page(PAGES[0]).run()


@pytest.fixture(scope="module")
def inspect_eval(tmp_path_factory):
    from inspect_logs import write_logs_in_subprocess as write_logs

    return write_logs(tmp_path_factory.mktemp("inspect_app"))["eval"]


def test_inspect_upload_opens_with_recalibrated_signals_and_a_reading_panel(inspect_eval):
    at = _fresh()
    upload(at, [("run.eval", inspect_eval.read_bytes(), "application/zip")])
    preds = at.sidebar.multiselect(key="pred").value
    # raw signals only: converted, and scored beside the references (issue 46, point 5: as the CLI does)
    assert {p for p in preds if not p.startswith("ref:")} == {"mean_logprob@platt", "min_logprob@platt", "entropy@platt"}
    assert "ref:step" in preds
    t = texts(at).replace("\\", "")
    assert "raw signals only" in t.lower() and "by Platt scaling, cross-fitted by run" in t
    assert "18 runs read, 17 kept" in t
    table = next(d.value for d in at.dataframe if "termination reason" in d.value.columns)
    rows = dict(zip(table["termination reason"], table["treatment"]))
    assert rows == {"error": "dropped", "message_limit": "censored", "scored": "outcome"}
    _every_page(at)
    at.switch_page("pages/views/recalibration.py").run()
    assert "raw signals only" in texts(at)


def test_forecast_field_and_treatment_from_the_sidebar(inspect_eval):
    at = _fresh()
    upload(at, [("run.eval", inspect_eval.read_bytes(), "application/zip")])
    at.text_input(key="conf").set_value("verbal=metadata.confidence").run()
    assert "verbal" in at.sidebar.multiselect(key="pred").options
    assert _metrics(at)["Censored"].startswith("2 ")
    at.selectbox(key="tr_message_limit").set_value("outcome").run()
    assert not at.exception
    assert _metrics(at)["Censored"].startswith("0 ")
    table = next(d.value for d in at.dataframe if "termination reason" in d.value.columns)
    row = table[table["termination reason"] == "message_limit"].iloc[0]
    assert row["treatment"] == "outcome" and row["set by"] == "you"


def test_reading_options_from_a_link(inspect_eval, tmp_path, monkeypatch):
    """A shared link carries the reading options (server path: the log is on the server)."""
    import shutil

    root = tmp_path / "logs"
    root.mkdir()
    shutil.copy(inspect_eval, root / "run.eval")
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(root))
    at = _fresh({"src": "Server path", "path": "run.eval", "conf": "verbal=metadata.confidence",
                 "tr_message_limit": "outcome"})
    assert "verbal" in at.sidebar.multiselect(key="pred").options
    assert _metrics(at)["Censored"].startswith("0 ")


def test_tau2_upload_with_a_forecasts_table(tmp_path):
    obj = json.loads(TAU2[0].read_text(encoding="utf-8"))
    truth = tau2_truth(obj)
    side = truth["long"][["trajectory_id", "step", "conf_fake"]].to_csv(index=False).encode()
    at = _fresh()
    upload(at, [(TAU2[0].name, TAU2[0].read_bytes(), "application/json")],
            forecasts=("fc.csv", side, "text/csv"))
    m = _metrics(at)
    assert m["Trajectories"] == str(truth["counts"]["runs"])
    assert m["Censored"].startswith(str(truth["counts"]["censored"]))
    _every_page(at)


def test_a_harness_log_without_forecasts_opens_with_references_and_says_where_in_the_dashboard_to_name_them():
    """The message named only the command line's flags (--conf, --forecasts) and said to fix the
    file; the dashboard's reading options are where a user names them. Such a log now opens with its
    reference forecasters (issue 34; tests/app/test_references_pages.py)."""
    at = _fresh()
    upload(at, [(TAU2[0].name, TAU2[0].read_bytes(), "application/json")])
    assert list(at.sidebar.multiselect(key="pred").value) == ["ref:step"]  # one trial per task: no ref:task
    notes = "\n".join(t.value for t in at.text)
    assert "holds no per-step forecast" in notes
    assert '"Forecast fields of agent messages"' in notes and '"Forecasts table (optional)"' in notes
    assert not at.error


def test_tau2_folder_layout_uploaded_as_several_files():
    obj = json.loads((ROOT / "tests/fixtures/tau2/tau2v1_airline_whissle_trimmed.json").read_text(encoding="utf-8"))
    truth = tau2_truth(obj)
    side = truth["long"][["trajectory_id", "step", "conf_fake"]].to_csv(index=False).encode()
    files = [("results.json", (TAU2_DIR / "results.json").read_bytes(), "application/json")] + [
        (p.name, p.read_bytes(), "application/json") for p in sorted((TAU2_DIR / "simulations").glob("*.json"))]
    at = _fresh()
    upload(at, files, forecasts=("fc.csv", side, "text/csv"))
    assert _metrics(at)["Trajectories"] == "5"


def test_mapping_form_then_a_link_reproduces_it():
    csv = b"run,turn,success,p_success\nr1,1,1,0.6\nr1,2,1,0.7\nr2,1,0,0.4\nr3,1,,0.5\nr4,1,0,0.2\n"
    at = _fresh()
    upload(at, [("other.csv", csv, "text/csv")])
    assert at.main.selectbox(key="mapf_trajectory_id").value == "run"
    assert at.main.selectbox(key="mapf_step").value == "turn"
    assert at.main.selectbox(key="mapf_outcome").value == "success"
    assert at.main.multiselect(key="mapf_preds").value == ["p_success"]
    at.main.button[0].click().run()
    assert not at.exception
    assert _metrics(at)["Trajectories"] == "4"
    mapping = at.query_params["map"]
    assert "trajectory_id=run" in mapping and "conf_p_success=p_success" in mapping


def test_a_mapped_file_opened_after_the_demo_is_not_filtered_by_the_demos_filters(tmp_path, monkeypatch):
    """The demo's metadata filters stayed in the session while a new file on a server path
    waited for its mapping; once mapped, they filtered out every run ("The filters leave no
    trajectories"), though no filter had been set. The form also offered raw_logprob as a
    probability (refused: "column 'conf_raw_logprob': probabilities must be in [0, 1]"), left
    unc_hesitation out, and named conf_truthful "conf_conf_truthful"."""
    import pandas as pd

    from pages._ui.sidebar import filter_key

    (tmp_path / "logs").mkdir()
    # (few runs: few tasks, so its task filter lists every value, where the demo's 97 tasks had a
    # search box whose empty state means "every run"; carried over, empty meant "none")
    df = pd.read_csv(ROOT / "demo_data" / "webshop-like.csv").head(200).rename(columns={"outcome": "outcom"})
    df.to_csv(tmp_path / "logs" / "renamed.csv", index=False)
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(tmp_path / "logs"))
    at = _fresh()  # the demo first
    assert at.sidebar.multiselect(key=filter_key("difficulty")).value
    at.sidebar.radio(key="src").set_value("Server path").run()
    at.sidebar.text_input(key="path").set_value("renamed.csv").run()
    assert at.main.selectbox(key="mapf_outcome").value == ""
    preds = at.main.multiselect(key="mapf_preds").value
    assert "raw_logprob" in preds and "unc_hesitation" in preds
    assert at.main.radio(key="mapf_dir_raw_logprob").value == "raw"
    assert at.main.radio(key="mapf_dir_unc_hesitation").value == "unc"
    assert at.main.radio(key="mapf_dir_conf_verbal").value == "conf"
    at.main.selectbox(key="mapf_outcome").set_value("outcom").run()
    at.main.button[0].click().run()
    assert not at.exception
    assert "The filters leave no trajectories" not in texts(at)
    assert _metrics(at)["Trajectories"] == f"{df['trajectory_id'].nunique():,}"
    mapping = at.query_params["map"]
    assert "conf_verbal=conf_verbal" in mapping and "raw_logprob=raw_logprob" in mapping
    assert "unc_hesitation=unc_hesitation" in mapping and "conf_conf" not in mapping


def test_percent_forecasts_from_the_sidebar():
    csv = b"trajectory_id,step,outcome,conf_v\nr1,1,1,60\nr1,2,1,85\nr2,1,0,40\n"
    at = _fresh()
    upload(at, [("pct.csv", csv, "text/csv")])
    shown = "\n".join(c.value for c in at.code)
    assert "percentages" in shown  # the setting named by its widget (pages/_ui/wording.py), not by an option
    widget = at.text_input(key="pct").label  # the setting named by the reading options' real widget
    assert 'Reading options ›' in assert_says(shown, f'"{widget}" set to v)') and "--percent" not in shown
    at.text_input(key="pct").set_value("v").run()
    assert _metrics(at)["Trajectories"] == "2"


def test_raw_only_hotpotqa_likeupload(tmp_path):
    f = hotpotqa_like(tmp_path / "hotpotqa.csv")
    at = _fresh()
    upload(at, [("hotpotqa.csv", f.read_bytes(), "text/csv")])
    assert at.sidebar.multiselect(key="pred").value == ["entropy@platt", "ref:step"]  # as the CLI (issue 46, 5)
    assert _metrics(at)["Censored"].startswith("29 ")
    _every_page(at)


def test_server_path_to_a_tau2_folder(tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(TAU2_DIR, root / "run1")
    obj = json.loads((ROOT / "tests/fixtures/tau2/tau2v1_airline_whissle_trimmed.json").read_text(encoding="utf-8"))
    truth = tau2_truth(obj)
    truth["long"][["trajectory_id", "step", "conf_fake"]].to_csv(root / "fc.csv", index=False)
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(root))
    at = _fresh({"src": "Server path", "path": "run1"})
    at.text_input(key="fpath").set_value("fc.csv").run()
    assert not at.exception
    assert _metrics(at)["Trajectories"] == "5"
    # a forecasts path outside the roots is refused like any other
    at.text_input(key="fpath").set_value("/etc/passwd").run()
    assert "cannot open this path" in "\n".join(c.value for c in at.code) + texts(at)


def test_taubench_upload_with_a_forecasts_table():
    from test_harness import TAUBENCH, taubench_truth

    truth = taubench_truth(json.loads(TAUBENCH.read_text(encoding="utf-8")))
    side = truth["long"][["trajectory_id", "step", "conf_fake"]].to_csv(index=False).encode()
    at = _fresh()
    upload(at, [(TAUBENCH.name, TAUBENCH.read_bytes(), "application/json")], forecasts=("fc.csv", side, "text/csv"))
    m = _metrics(at)
    assert m["Trajectories"] == str(truth["counts"]["runs"]) and m["Censored"].startswith("5 ")
    table = next(d.value for d in at.dataframe if "termination reason" in d.value.columns)
    assert dict(zip(table["termination reason"], table["treatment"])) == {"done": "outcome",
                                                                           "max_num_steps": "censored"}


def test_reading_options_belong_to_their_file_and_a_demo_link_carries_none(tmp_path, monkeypatch):
    """A percent column set for one file refused the next ("percent given for 'conf_x', which is
    not a predictor column of the log"), and a link to the demo still carried the server path
    (helper-23's walkthrough). Options now follow the file; an empty path box changes nothing."""
    (tmp_path / "logs").mkdir()
    pct = "trajectory_id,step,outcome,conf_x\n" + "".join(
        f"r{i},{t},{i % 2},{30 + 10 * t + 5 * (i % 2)}\n" for i in range(30) for t in range(1, 4))
    (tmp_path / "logs" / "pct.csv").write_text(pct)
    (ROOT / "demo_data" / "webshop-like.csv").read_bytes()
    (tmp_path / "logs" / "web.csv").write_bytes((ROOT / "demo_data" / "webshop-like.csv").read_bytes())
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(tmp_path / "logs"))
    at = _fresh()
    at.sidebar.radio(key="src").set_value("Server path").run()
    at.sidebar.text_input(key="path").set_value("pct.csv").run()
    assert "look like percentages" in "\n".join(c.value for c in at.code)
    at.sidebar.text_input(key="pct").set_value("x").run()
    assert _metrics(at)["Trajectories"] == "30"
    # an empty box while the user chooses, then the same file: the option stays
    at.sidebar.text_input(key="path").set_value("").run()
    at.sidebar.text_input(key="path").set_value("pct.csv").run()
    assert _metrics(at)["Trajectories"] == "30" and at.sidebar.text_input(key="pct").value == "x"
    # another file: the option is cleared (and said so), the file opens
    at.sidebar.text_input(key="path").set_value("web.csv").run()
    assert not at.exception and "not a predictor column" not in texts(at)
    assert at.sidebar.text_input(key="pct").value == ""
    assert "Reading options were cleared" in texts(at)
    assert _metrics(at)["Trajectories"] == "600"
    # the demo: its link names no server path
    at.sidebar.radio(key="src").set_value("Demo").run()
    assert "path" not in at.query_params and not at.exception


def test_the_censoring_mode_chosen_is_kept_and_a_default_follows_the_log():
    """A chosen censoring mode was reset to the log's default whenever the data source was
    touched, even when the same log came back (helper-23). Now an explicit choice is kept; a mode
    left at its default follows the next log's default (exact where it gives q_Z)."""
    at = _fresh({"demo": "tau2-like"})
    assert at.sidebar.selectbox(key="cens").value == "simple"  # tau2-like gives no q_Z
    at.sidebar.selectbox(key="demo").set_value("webshop-like").run()
    assert at.sidebar.selectbox(key="cens").value == "exact"  # its default: it gives q_Z
    at.sidebar.selectbox(key="cens").set_value("upper").run()
    at.sidebar.radio(key="src").set_value("Server path").run()  # no path given yet
    at.sidebar.radio(key="src").set_value("Demo").run()
    assert at.sidebar.selectbox(key="cens").value == "upper"
    at.sidebar.selectbox(key="demo").set_value("tau2-like").run()
    assert at.sidebar.selectbox(key="cens").value == "upper"


def test_several_unrelated_uploads_are_told_to_remove_the_others():
    csv = (ROOT / "demo_data" / "tau2-like.csv").read_bytes()
    at = _fresh()
    upload(at, [("a.csv", b"", "text/csv"), ("tau2-like.csv", csv, "text/csv")])
    shown = texts(at) + "\n".join(c.value for c in at.code)
    assert "2 files are in the upload box" in shown and "remove the others" in shown
    assert "give that file alone" in shown and "tau2-bench results" not in shown
