"""Issue 13, the Other outcomes page: the multi-class and continuous demos read as the cores compute
them, the controls rerun, an upload with a defect says where without its values, and the binary
pages point such a log to this page."""

from __future__ import annotations

import pandas as pd
import pytest

from tpsviz.outcomes.continuous_pit import pit_histogram
from tpsviz.io.kinds.continuous import read_continuous
from tpsviz.outcomes.continuous import tps_crps
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.io.kinds.multiclass import multiclass_from_frame, read_multiclass
from tpsviz.outcomes.multiclass import tps_k

from apptest_helpers import DEMO, fresh, texts
from tests.wording_checks import assert_says

PAGE = "pages/views/outcomes.py"


def _open(demo: str):
    at = fresh()
    at.selectbox(key="demo").set_value(demo).run()
    assert not at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _table(at, column: str) -> pd.DataFrame:
    return [d.value for d in at.dataframe if column in d.value.columns][0]


def test_multiclass_demo_matches_tps_k_and_the_controls_rerun():
    at = _open("multiclass-like")
    log = read_multiclass(DEMO / "multiclass-like.csv")
    want = tps_k(log, rule="log", censoring="exact", censored_label="failure", seed=DEFAULT_SEED).summary
    got = _table(at, "tps_mean").set_index("predictor")
    assert got.loc["overconfident", "tps_mean"] == pytest.approx(want.loc["overconfident", "tps_mean"], rel=1e-12)
    assert got.loc["overconfident", "tps_ci_low"] == pytest.approx(want.loc["overconfident", "tps_ci_low"], rel=1e-12)
    assert "3 labels: success, partial, failure" in [h.value for h in at.subheader]
    assert "One-vs-rest reliability" in at.session_state["_figures"]
    at.radio(key="oc_rule").set_value("brier").run()
    at.selectbox(key="oc_cens").set_value("simple").run()
    at.selectbox(key="oc_label").set_value("partial").run()
    assert not at.exception
    want = tps_k(log, rule="brier", censoring="simple", censored_label="partial", seed=DEFAULT_SEED).summary
    got = _table(at, "tps_mean").set_index("predictor")
    assert got.loc["flat", "tps_mean"] == pytest.approx(want.loc["flat", "tps_mean"], rel=1e-12)
    from tpsviz.outcomes.multiclass import censoring_words
    from pages._ui.text import md

    assert md(censoring_words("simple", "partial"), 200) in texts(at)


def test_continuous_demo_matches_tps_crps_and_pit():
    at = _open("continuous-like")
    log = read_continuous(DEMO / "continuous-like.csv")
    want = tps_crps(log, seed=DEFAULT_SEED).summary
    got = _table(at, "crps_step_mean").set_index("predictor")
    assert got.loc["biased", "tps_mean"] == pytest.approx(want.loc["biased", "tps_mean"], rel=1e-12)
    assert got.loc["biased", "crps_step_mean"] == pytest.approx(want.loc["biased", "crps_step_mean"], rel=1e-12)
    _, test = pit_histogram(log, "overconfident", seed=DEFAULT_SEED)
    pit = _table(at, "reading").set_index("predictor")
    assert pit.loc["overconfident", "reading"] == test["reading"] == "too narrow (U-shaped)"
    assert pit.loc["overconfident", "p"] == pytest.approx(test["p_value"], rel=1e-12)
    assert "PIT histograms" in at.session_state["_figures"]
    at.radio(key="oc_pit").set_value("all").run()
    assert not at.exception


def test_binary_log_says_the_other_pages_score_it():
    at = fresh()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert "the other pages score it" in assert_says(texts(at), "outcome is success or failure")


def test_a_folder_on_a_server_path_is_read_by_its_columns(tmp_path, monkeypatch):
    """A dataset folder (and a tau2-bench results folder) opened by server path: this page said
    "cannot open this path" for every folder, while the other pages opened it."""
    import shutil

    from apptest_helpers import ROOT

    root = tmp_path / "logs"
    for name, demo in (("binary", "tau2-like"), ("multi", "multiclass-like")):
        (root / name).mkdir(parents=True)
        df = pd.read_csv(DEMO / f"{demo}.csv")
        df.iloc[:200].to_parquet(root / name / "a.parquet")
        df.iloc[200:].to_parquet(root / name / "b.parquet")
    shutil.copytree(ROOT / "tests" / "fixtures" / "tau2" / "tau2v1_airline_whissle_dirlayout", root / "tau2")
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(root))
    # what each folder holds, and for a multi-class folder what to give instead (the path of one file)
    for folder, label, then in (("binary", "outcome is success or failure", "other pages"),
                                ("tau2", "outcome is success or failure", "other pages"),
                                ("multi", "hold a multiclass log", "path of one file")):
        at = fresh({"src": "Server path", "path": folder})
        at.switch_page(PAGE).run()
        assert not at.exception, folder
        t = texts(at) + "\n".join(c.value for c in at.code)
        assert then in assert_says(t, label) and "cannot open this path" not in t, (folder, t[:2000])


def test_overview_of_a_multiclass_log_points_here():
    at = fresh()
    at.selectbox(key="demo").set_value("continuous-like").run()
    assert not at.exception
    assert "This is a continuous-outcome log." in texts(at)
    assert not at.error
    # the Export page too says where this log's scores are, and files to download (helper-24)
    at.switch_page("pages/views/export.py").run()
    assert not at.exception and not at.error
    assert "offers its per-run scores as CSV" in texts(at)


def test_upload_with_a_defect_names_where_without_values():
    frame = pd.read_csv(DEMO / "multiclass-like.csv", nrows=60)
    frame.loc[5, "conf_truthful__success"] = 0.777123  # the row no longer sums to 1
    at = fresh()
    at.radio(key="src").set_value("Upload").run()
    at.file_uploader(key="upload").set_value([("mine.csv", frame.to_csv(index=False).encode(), "text/csv")]).run()
    assert not at.exception
    at.switch_page(PAGE).run()
    assert not at.exception
    shown = texts(at) + " ".join(c.value for c in at.code)
    assert "This log cannot be used" in shown and "sum to 1" in shown and "truthful" in shown
    assert "0.777123" not in shown


def _upload(at, frame: pd.DataFrame, name: str = "mine.csv"):
    at.radio(key="src").set_value("Upload").run()
    at.file_uploader(key="upload").set_value([(name, frame.to_csv(index=False).encode(), "text/csv")]).run()
    assert not at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _order(at) -> list[str]:
    """The main area's elements in page order: the text of markdown and headings, else the type."""
    kids = list(at.main.children.values())
    if len(kids) == 1 and kids[0].type == "flex_container":  # the page's fragment (app.py)
        kids = list(kids[0].children.values())
    return [getattr(e, "value", "") if e.type in ("markdown", "subheader") else e.type for e in kids]


def test_exact_mode_disables_the_label_picker_when_every_censored_run_has_q():
    at = _open("multiclass-like")  # exact mode: all 74 censored runs have a q vector
    assert at.selectbox(key="oc_cens").value == "exact"
    picker = at.selectbox(key="oc_label")
    assert picker.disabled
    frame = pd.read_csv(DEMO / "multiclass-like.csv")
    n_cens = frame.loc[frame["censored"], "trajectory_id"].nunique()  # (74)
    assert "has a q vector" in assert_says(texts(at), "Not used: every censored run", n_cens)
    at.selectbox(key="oc_cens").set_value("simple").run()
    assert not at.selectbox(key="oc_label").disabled
    assert at.selectbox(key="oc_label").label == "…as the label"
    at.selectbox(key="oc_cens").set_value("complete").run()
    assert at.selectbox(key="oc_label").disabled
    assert "Not used: censored runs are left out." in texts(at)


def test_exact_mode_label_applies_only_to_censored_runs_without_q():
    frame = pd.read_csv(DEMO / "multiclass-like.csv")
    frame = frame[frame["trajectory_id"] < "mc-00150"].copy()
    runs = list(frame.loc[frame["censored"], "trajectory_id"].unique())
    n_cens = len(runs)
    qcols = [c for c in frame.columns if c.startswith("q_z__")]
    frame.loc[frame["trajectory_id"].isin(runs[:3]), qcols] = float("nan")
    at = _upload(fresh(), frame)
    picker = at.selectbox(key="oc_label")
    assert not picker.disabled
    assert picker.label == "…the 3 without q as"
    assert_says(picker.help, "have no q vector", 3, n_cens)
    log = read_multiclass(DEMO / "multiclass-like.csv")  # only for the label order
    assert picker.value == log.labels[-1]
    from tpsviz.outcomes.multiclass import censoring_words
    from pages._ui.text import md

    assert md(censoring_words("exact", "failure", 3), 200) in texts(at)  # 3 runs, not 3 per predictor
    at.selectbox(key="oc_label").set_value("success").run()
    assert not at.exception
    mine = multiclass_from_frame(frame, source="mine.csv")
    want = tps_k(mine, rule="log", censoring="exact", censored_label="success", seed=DEFAULT_SEED).summary
    got = _table(at, "tps_mean").set_index("predictor")
    assert got.loc["truthful = true probability (synthetic)", "tps_mean"] == pytest.approx(want.loc["truthful", "tps_mean"], rel=1e-12)


def test_censoring_control_says_the_sidebar_setting_is_for_binary_logs():
    at = _open("multiclass-like")
    sidebar = at.sidebar.selectbox(key="cens").label  # the message names the sidebar's real widget
    assert "success/failure logs" in assert_says(texts(at), f"The sidebar's *{sidebar}*")
    assert "This page's own choice" in texts(at)


def test_ece_table_has_a_heading_every_row_and_sits_with_the_panels(monkeypatch):
    import streamlit

    heights = {}
    real = streamlit.dataframe

    def spy(data=None, *args, **kwargs):
        cols = list(data[0]) if isinstance(data, list) and data else list(getattr(data, "columns", []))
        heights[tuple(cols)] = kwargs.get("height", "auto")
        return real(data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "dataframe", spy)
    at = _open("multiclass-like")
    ece = _table(at, "ECE")
    log = read_multiclass(DEMO / "multiclass-like.csv")
    assert len(ece) == len(log.predictors) * len(log.labels) == 12
    assert "flat" in set(ece["predictor"])
    assert heights[("predictor", "label", "ECE", "largest gap")] == "content"  # every row shows, no scrolling
    order = _order(at)
    heading = order.index("#### Calibration error per label (one-vs-rest)")
    assert order.index("plotly_chart") < heading < order.index("download_button")
    assert order[heading + 1] == "dataframe"


def test_continuous_tables_have_short_columns_and_the_pit_reading_apart():
    import json

    at = _open("continuous-like")
    score = next(d for d in at.dataframe if "crps_step_mean" in d.value.columns)
    assert "reading" not in score.value.columns and "pit_p" not in score.value.columns
    assert len(score.value.columns) <= 9
    pit = next(d for d in at.dataframe if "reading" in d.value.columns)
    assert list(pit.value.columns) == ["predictor", "p", "n_runs", "reading"]
    config = json.loads(pit.proto.columns)
    assert config["reading"]["width"] == "large" and config["p"]["width"] == "small"
    assert config["p"]["type_config"]["format"] == "%.2g"
    order = _order(at)
    heading = order.index("#### PIT test per predictor")
    assert order.index("plotly_chart") < heading < order.index("download_button")


@pytest.mark.parametrize("demo, runs", [("multiclass-like", "mc-00150"), ("continuous-like", "run0100")])
def test_another_log_with_the_same_settings_is_scored_anew(demo, runs):
    at = _open(demo)
    frame = pd.read_csv(DEMO / f"{demo}.csv")
    frame = frame[frame["trajectory_id"] < runs]
    at = _upload(at, frame, name="part.csv")   # same settings as the demo, another log
    n = frame["trajectory_id"].nunique()
    got = [d.value for d in at.dataframe if "tps_mean" in d.value.columns][0]
    assert set(got["n_runs"]) <= set(range(1, n + 1)), "the demo's result was shown for the upload"
