"""Issue 46, point 6, in the dashboard (AppTest): on the demo's Overview no label calls a predictor that
is not a ``ref:*`` yardstick a "reference"; the truthful column is the "true probability (synthetic)",
the base-rate line the "constant forecast (base rate)", and there is no ``base_rate`` predictor."""

from __future__ import annotations

import sys
from pathlib import Path

from apptest_helpers import fresh, texts

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_one_meaning import misused  # noqa: E402


def test_the_demo_overview_keeps_reference_for_the_yardsticks():
    at = fresh()
    options = at.sidebar.multiselect(key="pred").options
    assert "flat" in options and "base_rate" not in options
    board = at.dataframe[0].value
    assert "truthful = true probability (synthetic)" in set(board["predictor"])
    labels = [m.label for m in at.metric]
    assert "Constant forecast (base rate)" in labels
    shown = "\n".join([texts(at).replace("\\", ""), *map(str, board["predictor"]), *labels,
                       *[str(m.help or "") for m in at.metric]])
    assert not misused(shown), misused(shown)
    # with the references switched on, "reference" is what they are called, and only them
    at.toggle(key="refs").set_value(True).run()
    board = at.dataframe[0].value
    refs = [p for p in board["predictor"] if "reference" in str(p)]
    assert refs and all(str(p).startswith("ref:") for p in refs), refs
