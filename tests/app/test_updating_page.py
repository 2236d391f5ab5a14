"""Issue 13, rational updating on the Reliability page: the excess-movement table reads as the
core computes it, and the drift figure follows the "by" choice."""

from __future__ import annotations

import tpsviz
from tpsviz.diagnostics.updating import excess_movement

from apptest_helpers import DEMO, fresh, texts
from tests.wording_checks import assert_says


def test_reliability_page_says_who_updates_rationally():
    at = fresh()
    at.switch_page("pages/views/reliability.py").run()
    assert not at.exception
    assert "Does it update rationally?" in [h.value for h in at.subheader]
    assert "positive when it over-reacts" in texts(at)
    table = [d.value for d in at.dataframe if "reading" in d.value.columns][0]
    want = excess_movement(tpsviz.load(DEMO / "tau2-like.csv"))
    reading = dict(zip(table["predictor"], table["reading"]))
    assert reading["verbal"] == "over-reacts" and want.at["verbal", "z"] > 3
    truthful = next(k for k in reading if k.startswith("truthful"))
    assert reading[truthful] == "consistent with honest updating" and abs(want.at["truthful", "z"]) < 3
    assert table["value"].tolist() == want.loc[[k.split(" ")[0] for k in table["predictor"]], "value"].tolist()
    at.radio(key="rel_drift_by").set_value("step").run()
    assert not at.exception
    assert "Drift" in at.session_state["_figures"]  # registered for Export under its name


def test_drift_points_from_a_few_moves_are_not_drawn_and_said():
    """On the webshop-like demo one run reaches t = 30: its single last move (no interval) drew a
    drop of −0.30 for the truthful forecast. Points from fewer than 20 moves are left out, and the
    caption says how many."""
    from tpsviz.diagnostics.updating import drift_table

    at = fresh({"demo": "webshop-like"})
    at.switch_page("pages/views/reliability.py").run()
    at.radio(key="rel_drift_by").set_value("step").run()
    assert not at.exception
    data = tpsviz.load(DEMO / "webshop-like.csv")
    few = sum(int((drift_table(data, n, by="step", max_step=30)["n"] < 20).sum()) for n in data.predictors)
    assert few == len(data.predictors)   # the t = 30 point of each
    assert "moves" in assert_says(texts(at), "Not drawn", few, 20)  # how many points, the moves they need
    fig, caption = at.session_state["_figures"]["Drift"]
    drawn = [tr for tr in fig.data if tr.mode == "lines+markers"]
    assert len(drawn) == len(data.predictors) and max(max(tr.x) for tr in drawn) < 29.5
