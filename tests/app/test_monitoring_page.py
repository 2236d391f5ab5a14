"""Issue 13, monitoring: the Monitoring page on the demo logs, its answer against tpsviz.diagnostics.monitoring.monitor, and
its controls (order, window, watched predictor)."""

from __future__ import annotations


import tpsviz
from tpsviz.diagnostics.monitoring.monitor import monitor
from tpsviz.core.tps import ScoreSettings

from apptest_helpers import DEMO, fresh, texts
from tests.wording_checks import assert_says


def _monitoring(at):
    at.switch_page("pages/views/monitoring.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _p_words(p: float) -> str:
    """The p of the alarm count: at its floor 1 / (N_SIM + 1) (no simulated stream reached the
    count) it is an upper bound (helper-23 read "p = 0.0025" as exact)."""
    from tpsviz.diagnostics.monitoring.cusum import N_SIM

    return f"p ≤ {p:.2g}" if p <= 1 / (N_SIM + 1) + 1e-12 else f"p = {p:.2g}"


def test_the_alarm_settings_come_back_from_a_link():
    """Order, window, watched predictor, in-control runs, drop and false-alarm rate are in the URL:
    a copied link gives the same alarm verdict (helper-23: only the demo was)."""
    # (an option's words as shown are its value in the URL: "truthful = true probability (synthetic)", "column timestamp")
    at = fresh({"demo": "drift-like", "mon_window": "50", "mon_alarm": "truthful = true probability (synthetic)", "mon_baseline": "120",
                "mon_shift": "1.0", "mon_arl": "500", "mon_by": "order in the file"})
    _monitoring(at)
    assert at.number_input(key="mon_window").value == 50 and at.selectbox(key="mon_alarm").value == "truthful"
    assert at.number_input(key="mon_baseline").value == 120
    assert at.select_slider(key="mon_shift").value == 1.0 and at.select_slider(key="mon_arl").value == 500
    assert at.selectbox(key="mon_by").value == "order in the file"
    assert "SD" in assert_says(texts(at), "tuned to a drop", 1, 120)  # the drop and the in-control runs


def test_drift_demo_alarm_matches_the_core():
    at = _monitoring(fresh())       # first the tau2-like demo, with its own defaults …
    at.number_input(key="mon_window").set_value(30).run()
    at.selectbox(key="demo").set_value("drift-like").run()   # … then another log: its defaults, not the old ones
    assert not at.exception
    assert at.selectbox(key="mon_by").value == "timestamp"   # a time column is chosen by itself
    assert at.number_input(key="mon_window").value == 100
    assert at.selectbox(key="mon_alarm").value == "agent"    # not the reference predictor
    data = tpsviz.load(DEMO / "drift-like.csv")
    want = monitor(data, ScoreSettings(), by="timestamp", window=100, predictors=list(data.predictors),
                   alarm_on="agent").alarm
    first = want.alarms[~want.alarms["in_control"]].iloc[0]
    err = " ".join(e.value for e in at.error)
    assert "agent degraded" in err
    # the count against chance, and its p from the simulated streams (an upper bound at the floor)
    assert _p_words(want.count_p) in assert_says(err, "chance alone", want.chance_alarms, want.count_p)
    n = int(first["position"]) + 1
    assert f"(run\\-00{n - 1}" in assert_says(err, "alarm went off", n)  # the n-th run, and its id
    assert_says(" ".join(m.value for m in at.metric), "per 1,000 runs", 1000 * want.false_alarm_rate, 1000)
    alarms = [d.value for d in at.dataframe if "begins" in d.value.columns][0]
    assert alarms["run"].tolist() == (want.alarms["position"] + 1).tolist()
    assert {"Monitoring windows", "Degradation alarm"} <= set(at.session_state["_figures"])
    at.selectbox(key="mon_alarm").set_value("truthful").run()
    assert not at.exception
    # the truthful forecast: the page words its alarm count against chance as the core counts it
    truth = monitor(data, ScoreSettings(), by="timestamp", window=100, predictors=list(data.predictors),
                    alarm_on="truthful").alarm
    n_post = int((~truth.alarms["in_control"]).sum())
    chance, p_chance = truth.chance_alarms, truth.count_p
    if p_chance < 0.01:
        err = " ".join(e.value for e in at.error)
        assert _p_words(p_chance) in assert_says(err, "chance alone", n_post, 675, chance, p_chance)
    else:
        warn = " ".join(w.value for w in at.warning)
        assert "alarm(s)" in assert_says(warn, "chance alone", n_post, 675, chance, p_chance)
        assert "Not yet clear evidence" in warn and not at.error


def test_tau2_demo_in_file_order_and_a_window_change():
    at = _monitoring(fresh())
    assert at.selectbox(key="mon_by").value == "order in the file"
    assert at.selectbox(key="mon_by").options == ["order in the file"]   # difficulty, task: no times or numbers
    assert at.selectbox(key="mon_alarm").value != "truthful"
    assert "Windows of 56 runs" in texts(at)           # 450 runs // 8
    at.number_input(key="mon_window").set_value(150).run()
    assert not at.exception
    assert "Windows of 150 runs every 37" in texts(at)
    table = [d.value for d in at.dataframe if "key_first" in d.value.columns][0]
    data = tpsviz.load(DEMO / "tau2-like.csv")
    # in file order the alarm table has no "when" columns (they would repeat the run numbers)
    at.selectbox(key="mon_alarm").set_value("noisy").run()   # 4 alarms on this demo
    alarms = [d.value for d in at.dataframe if "begins" in d.value.columns]
    assert len(alarms) == 1 and list(alarms[0].columns) == ["run", "trajectory_id", "begins", "in_control"]
    want = monitor(data, ScoreSettings(), window=150, predictors=list(data.predictors), alarm_on=data.predictors[0])
    assert table["tps_mean"].tolist()[:3] == want.windows["tps_mean"].tolist()[:3]


def test_a_calm_start_is_required_and_too_few_runs_after_it_are_said():
    at = fresh()
    at.selectbox(key="demo").set_value("drift-like").run()
    _monitoring(at)
    at.number_input(key="mon_baseline").set_value(899).run()   # the in-control part holds the change
    assert not at.exception
    text = texts(at)
    # too few runs after it: no alarm is set up, nothing is drawn, and the page says why (issue 46)
    assert "are needed to tell a change" in text and "Nothing is drawn" in text
    assert not at.success and not at.error


def test_the_in_control_box_starts_at_the_runs_an_alarm_needs():
    from tpsviz.diagnostics.monitoring.cusum import MIN_ALARM_RUNS

    at = _monitoring(fresh({"demo": "drift-like"}))
    assert at.number_input(key="mon_baseline").min == MIN_ALARM_RUNS
