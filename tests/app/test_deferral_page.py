"""Issue 13, deferral on the Scoring rule lab page: the table follows the core for the entered
utility table, and a utility change recomputes."""

from __future__ import annotations

import pytest

import tpsviz
from tpsviz.deferral import Utility, deferral

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
    assert row["best τ"] == pytest.approx(want.best_tau) and row["utility / run at best τ"] == pytest.approx(want.best_utility)
    at.number_input(key="dfr_handoff").set_value(0.9).run()
    assert not at.exception
    row = _table(at)
    row = row[row["predictor"].str.startswith("truthful")].iloc[0]
    want = deferral(data, "truthful", Utility(handoff=0.9), n_boot=0)
    assert row["best τ"] == pytest.approx(want.best_tau) and row["utility / run at best τ"] == pytest.approx(want.best_utility)
    assert "Deferral" in at.session_state["_figures"]
