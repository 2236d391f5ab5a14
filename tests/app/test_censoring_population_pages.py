"""The dashboard under issue 45: a recalibration is fitted on the population the sidebar's censoring mode
scores (a change of mode refits it, and its sentence names the population), and exact mode is exact (a log
where a censored run has no q_Z gets a designed refusal with its remedies, never q_Z = 0 under that name)."""

import pandas as pd
import pytest

from apptest_helpers import DEMO, fresh, texts
from tests.wording_checks import assert_says


def _censored(demo: str) -> tuple[int, int]:
    """The runs of a demo log and how many of them were cut off, counted from the file."""
    runs = pd.read_csv(DEMO / f"{demo}.csv").groupby("trajectory_id")["censored"].first()
    return len(runs), int(runs.sum())


RECAL = "raw_logprob|platt|5|pooled"


@pytest.fixture(autouse=True)
def _clear():
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()


def _conversion_sentence(at) -> str:
    plain = texts(at).replace("\\", "")  # (the page escapes Markdown)
    found = [t for t in plain.split("\n") if "raw_logprob converted to a probability by Platt scaling" in t]
    assert found, texts(at)[:2000]
    return found[0]


def test_a_change_of_censoring_mode_refits_the_conversion_and_names_its_population():
    at = fresh({"demo": "webshop-like", "recal": RECAL, "cens": "simple"})
    assert not at.error, [e.value for e in at.error]
    simple = _conversion_sentence(at)
    total, cut = _censored("webshop-like")
    assert "counted as failures" in assert_says(simple, "fitted on all", total, cut), simple
    at.selectbox(key="cens").set_value("complete").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    complete = _conversion_sentence(at)
    assert "left out" in assert_says(complete, "complete runs", total - cut, cut), complete
    # and on the population it is scored on, the conversion is calibrated in the large: no bias label
    assert "logprob@platt: optimistic" not in texts(at) and "logprob@platt: pessimistic" not in texts(at)


def test_exact_mode_without_a_qz_for_every_censored_run_is_refused_with_its_remedies():
    at = fresh({"demo": "tau2-like"})  # no q_z in this log: the default mode is simple
    assert at.selectbox(key="cens").value == "simple"
    at.selectbox(key="cens").set_value("exact").run()
    assert not at.exception
    err = " ".join(e.value for e in at.error)
    total, cut = _censored("tau2-like")  # (4 censored runs, none with a q_Z: the log has no q_z column)
    assert "Exact" in assert_says(err, "needs a q_Z")
    assert_says(err, "censored runs have none", cut, cut)
    assert "one value" in err and "simple" in err  # the remedies
    # one value for every censored run makes exact mode exact again
    at.radio(key="qzs").set_value("one value").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.switch_page("pages/views/censoring.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_the_censoring_page_leaves_exact_out_when_it_cannot_score_and_says_why():
    at = fresh({"demo": "tau2-like"})
    at.switch_page("pages/views/censoring.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    total, cut = _censored("tau2-like")
    assert "have no q_Z" in assert_says(texts(at), "Exact is left out", cut, cut)
    shift = next(d.value for d in at.dataframe if "per step: simple − cc" in d.value.columns)
    assert set(shift[[c for c in shift.columns if c.startswith("exact − simple")][0]]) == {"needs q_Z"}
