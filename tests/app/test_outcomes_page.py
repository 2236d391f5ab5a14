"""Issue 13, the Other outcomes page: the multi-class and continuous demos read as the cores compute
them, the controls rerun, an upload with a defect says where without its values, and the binary
pages point such a log to this page."""

from __future__ import annotations

import pandas as pd
import pytest

from tpsviz.continuous import pit_histogram, read_continuous, tps_crps
from tpsviz.inference import DEFAULT_SEED
from tpsviz.multiclass import read_multiclass, tps_k

from apptest_helpers import DEMO, fresh, texts

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
    assert got.loc["base_rate", "tps_mean"] == pytest.approx(want.loc["base_rate", "tps_mean"], rel=1e-12)
    from tpsviz.multiclass import censoring_words
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
    assert got.loc["overconfident", "reading"] == test["reading"] == "too narrow (U-shaped)"
    assert "PIT histograms" in at.session_state["_figures"]
    at.radio(key="oc_pit").set_value("all").run()
    assert not at.exception


def test_binary_log_says_the_other_pages_score_it():
    at = fresh()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert "This log's outcome is success or failure" in texts(at)


def test_overview_of_a_multiclass_log_points_here():
    at = fresh()
    at.selectbox(key="demo").set_value("continuous-like").run()
    assert not at.exception
    assert "This is a continuous-outcome log." in texts(at)
    assert not at.error


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
