"""Issue 13, deferral on the Scoring rule lab page: the table follows the core for the entered
utility table, and a utility change recomputes; a flat maximum shows as a range, the stars at the
best τ are not clipped, AURC is explained, and the Murphy diagram's right axis has its own ticks."""

from __future__ import annotations

import pytest

import tpsviz
from tpsviz.diagnostics.monitoring.deferral import Utility, deferral

from apptest_helpers import DEMO, fresh


def _table(at):
    return [d.value for d in at.dataframe if "best τ" in d.value.columns][0]


def test_lab_page_prices_the_threshold():
    at = fresh()
    at.switch_page("pages/views/lab.py").run()
    assert not at.exception
    assert "What is a threshold worth? Hand off when F < τ" in [h.value for h in at.subheader]
    data = tpsviz.load(DEMO / "tau2-like.csv")
    t = _table(at)
    row = t[t["predictor"].str.startswith("truthful")].iloc[0]
    want = deferral(data, "truthful", Utility(), n_boot=0)
    assert row["best τ"] == want.best_tau_label() and row["utility / run at best τ"] == pytest.approx(want.best_utility)
    at.number_input(key="dfr_handoff").set_value(0.9).run()
    assert not at.exception
    row = _table(at)
    row = row[row["predictor"].str.startswith("truthful")].iloc[0]
    want = deferral(data, "truthful", Utility(handoff=0.9), n_boot=0)
    assert row["best τ"] == want.best_tau_label() and row["utility / run at best τ"] == pytest.approx(want.best_utility)
    assert "Deferral" in at.session_state["_figures"]


def test_a_dear_hand_off_shows_the_flat_best_range_visible_stars_and_what_aurc_is():
    at = fresh()
    at.switch_page("pages/views/lab.py").run()
    at.number_input(key="dfr_handoff").set_value(5.0).run()
    assert not at.exception
    data = tpsviz.load(DEMO / "tau2-like.csv")
    want = deferral(data, "verbal", Utility(handoff=5.0), n_boot=0)
    assert want.best_tau_low == 0.0 and want.best_tau_high >= 0.5  # the audit's case: flat from τ = 0
    t = _table(at)
    row = t[t["predictor"] == "verbal"].iloc[0]
    assert row["best τ"] == want.best_tau_label() == f"0.00–{want.best_tau_high:.2f}, flat"
    lo, hi = (float(x) for x in row["95% CI of best τ"].strip("[]").split(","))
    assert lo == 0.0 and hi >= want.best_tau_high  # the interval keeps the plateau
    # AURC explained in plain words beside the table
    assert any("AURC: the area under the risk–coverage curve" in c.value and "Lower is better" in c.value
               for c in at.caption)
    # stars at both ends of the plateau, drawn outside the plot area when they sit on τ = 0
    fig = at.session_state["_figures"]["Deferral"][0]
    stars = [tr for tr in fig.data if tr.marker is not None and tr.marker.symbol == "star"]
    assert stars and all(tr.cliponaxis is False for tr in stars)
    verbal = [tr for tr in stars if tr.legendgroup == "verbal"][0]
    assert list(verbal.x) == [0.0, want.best_tau_high] and list(verbal.y) == [want.best_utility] * 2


def test_murphy_right_axis_chooses_its_own_ticks():
    """plotly.js syncs an overlaying axis's ticks to the left grid unless told otherwise (0.183, 0.366, …)."""
    at = fresh()
    at.switch_page("pages/views/lab.py").run()
    fig = at.session_state["_figures"]["Murphy diagram"][0]
    assert fig.layout.yaxis2.overlaying == "y" and fig.layout.yaxis2.tickmode == "auto"
    omega = fig.data[0]  # the ω shading, scaled to a maximum of 1: what is plotted is unchanged
    assert omega.yaxis == "y2" and max(omega.y) == pytest.approx(1.0)
