"""Issue 46, point 4, on the Monitoring page: a tau2 log is ordered by its runs' start_time by default,
and the page says so; file order is named as the fallback; no alarm chart is drawn when there are too
few runs to raise an alarm."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from apptest_helpers import fresh, texts, upload

ROOT = Path(__file__).resolve().parents[2]
QWEN = ROOT / "tests/fixtures/tau2/tau2_airline_qwen2.5-7b_trimmed.json"


def _plain(at) -> str:
    """The page's text without Markdown's escapes."""
    return texts(at).replace("\\", "")


def _monitoring(at):
    at.switch_page("pages/views/monitoring.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _reversed_tau2() -> tuple[bytes, list[str]]:
    """The qwen tau2 file with its simulations in reverse order (so file order is far from time order),
    and the start times in time order as the page writes them (to the minute, UTC)."""
    obj = json.loads(QWEN.read_text(encoding="utf-8"))
    obj["simulations"] = obj["simulations"][::-1]
    starts = sorted(pd.Timestamp(s["start_time"]) for s in obj["simulations"])
    return json.dumps(obj).encode(), [t.strftime("%Y-%m-%d %H:%M UTC") for t in starts]


def test_a_tau2_log_is_ordered_by_start_time_and_the_page_says_so():
    raw, starts = _reversed_tau2()
    at = fresh()
    upload(at, [("tau2_reversed.json", raw, "application/json")])
    _monitoring(at)
    assert at.selectbox(key="mon_by").value == "start_time"   # not the first numeric column (task_id)
    text = _plain(at)
    assert "Runs ordered by start_time (recorded by the log)." in text
    # 10 runs: no alarm can be set up; the page says why and draws neither the alarm's tiles nor its chart
    assert "No alarm on" in text and "at least 40 are needed" in text and "Nothing is drawn" in text
    assert not at.metric and len(at.get("plotly_chart")) == 1   # the windows' chart only
    # windows of 2 runs moved by 1 (the default for 10 runs): each window's first run follows the start times
    assert at.number_input(key="mon_window").value == 2
    table = at.dataframe[0].value
    assert list(table["key_first"]) == starts[:len(table)]
    # the order in the file is offered, and named as chosen
    at.selectbox(key="mon_by").set_value("order in the file").run()
    assert not at.exception
    assert "Runs in file order, as chosen (the log records time in start_time)." in _plain(at)


def test_a_log_without_time_is_in_file_order_and_says_so():
    rows = [{"trajectory_id": f"r{i}", "step": t, "outcome": i % 2, "conf_a": 0.3 + 0.04 * i, "task_id": 11 - i}
            for i in range(12) for t in (1, 2)]
    at = fresh()
    upload(at, [("no_time.csv", pd.DataFrame(rows).to_csv(index=False).encode(), "text/csv")])
    _monitoring(at)
    assert at.selectbox(key="mon_by").value == "order in the file"   # task_id is a number, not a time
    assert "Runs in file order: the log records no time." in _plain(at)
