"""Issue 13, monitoring: the Monitoring page on the demo logs, its answer against tpsviz.monitor, and
its controls (order, window, watched predictor)."""

from __future__ import annotations

import tpsviz
from tpsviz.monitor import monitor
from tpsviz.tps import ScoreSettings

from apptest_helpers import DEMO, fresh, texts


def _monitoring(at):
    at.switch_page("pages/views/monitoring.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_drift_demo_alarm_matches_the_core():
    at = fresh()
    at.selectbox(key="demo").set_value("drift-like").run()
    assert not at.exception
    _monitoring(at)
    assert at.selectbox(key="mon_by").value == "timestamp"   # a time column is chosen by itself
    at.selectbox(key="mon_alarm").set_value("agent").run()
    assert not at.exception
    data = tpsviz.load(DEMO / "drift-like.csv")
    want = monitor(data, ScoreSettings(), by="timestamp", window=100, predictors=list(data.predictors),
                   alarm_on="agent").alarm
    first = want.alarms[~want.alarms["in_control"]].iloc[0]
    err = " ".join(e.value for e in at.error)
    assert "agent degraded" in err and "where chance alone gives about 0.6" in err and f"alarm went off at run {int(first['position']) + 1:,}" in err
    assert f"{1000 * want.false_alarm_rate:.2f} per 1,000 runs" in " ".join(m.value for m in at.metric)
    alarms = [d.value for d in at.dataframe if "begins" in d.value.columns][0]
    assert alarms["run"].tolist() == (want.alarms["position"] + 1).tolist()
    assert {"Monitoring windows", "Degradation alarm"} <= set(at.session_state["_figures"])
    at.selectbox(key="mon_alarm").set_value("truthful").run()
    assert not at.exception
    # the truthful forecast raises one alarm in 675 runs: the page says chance alone gives as many
    warn = " ".join(w.value for w in at.warning)
    assert "truthful \\(reference\\): 1 alarm(s), about as many as chance alone gives** (0.6 expected" in warn
    assert not at.error


def test_tau2_demo_in_file_order_and_a_window_change():
    at = _monitoring(fresh())
    assert at.selectbox(key="mon_by").value == "order in the file"
    assert "Windows of 56 runs" in texts(at)           # 450 runs // 8
    at.number_input(key="mon_window").set_value(150).run()
    assert not at.exception
    assert "Windows of 150 runs every 37" in texts(at)
    table = [d.value for d in at.dataframe if "key_first" in d.value.columns][0]
    data = tpsviz.load(DEMO / "tau2-like.csv")
    want = monitor(data, ScoreSettings(), window=150, predictors=list(data.predictors), alarm_on=data.predictors[0])
    assert table["tps_mean"].tolist()[:3] == want.windows["tps_mean"].tolist()[:3]


def test_an_order_column_without_times_says_so():
    at = _monitoring(fresh())
    at.selectbox(key="mon_by").set_value("difficulty").run()
    assert not at.exception
    warn = " ".join(w.value for w in at.warning)
    assert "Runs cannot be ordered this way" in warn and "no run has a value that reads as a number or a date" in warn
