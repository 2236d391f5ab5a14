"""The dashboard under issue 45: a recalibration is fitted on the population the sidebar's censoring mode
scores (a change of mode refits it, and its sentence names the population), and exact mode is exact (a log
where a censored run has no q_Z gets a designed refusal with its remedies, never q_Z = 0 under that name)."""

import re

import pytest

from apptest_helpers import fresh, texts

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
    assert re.search(r"fitted on all 600 runs, the \d+ cut off counted as failures", simple), simple
    at.selectbox(key="cens").set_value("complete").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    complete = _conversion_sentence(at)
    assert re.search(r"fitted on the \d+ complete runs \(\d+ cut off left out\)", complete), complete
    # and on the population it is scored on, the conversion is calibrated in the large: no bias label
    assert "logprob@platt: optimistic" not in texts(at) and "logprob@platt: pessimistic" not in texts(at)


def test_exact_mode_without_a_qz_for_every_censored_run_is_refused_with_its_remedies():
    at = fresh({"demo": "tau2-like"})  # no q_z in this log: the default mode is simple
    assert at.selectbox(key="cens").value == "simple"
    at.selectbox(key="cens").set_value("exact").run()
    assert not at.exception
    err = " ".join(e.value for e in at.error)
    assert "Exact censoring needs a q_Z for every censored run" in err
    assert "4 of this log's 4 censored runs have none" in err and "one value" in err and "simple" in err
    # one value for every censored run makes exact mode exact again
    at.radio(key="qzs").set_value("one value").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.switch_page("pages/views/censoring.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_the_censoring_page_leaves_exact_out_when_it_cannot_score_and_says_why():
    at = fresh({"demo": "tau2-like"})
    at.switch_page("pages/views/censoring.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Exact is left out of this section: 4 of the 4 censored runs have no q_Z" in texts(at)
    shift = next(d.value for d in at.dataframe if "per step: simple − cc" in d.value.columns)
    assert set(shift[[c for c in shift.columns if c.startswith("exact − simple")][0]]) == {"needs q_Z"}
