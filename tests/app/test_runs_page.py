"""The Runs page (issue 46, points 1 and 2) in AppTest: the table of runs with its presets, one run by
link (``?run=ID``), its transcript on a log with messages, text from the log shown as text.

(``tests/app/test_pages.py`` lists its pages by hand; the Runs page is tested here instead.)"""

from __future__ import annotations

import json
from pathlib import Path

import tpsviz
from apptest_helpers import DEMO, ROOT, fresh, texts, upload
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics import run_messages as RM
from tpsviz.diagnostics import runs as RU

PAGE = "pages/views/runs.py"
TAU1 = ROOT / "tests" / "fixtures" / "taubench" / "tau1_gpt-4o-airline_trimmed.json"


def _runs(qp=None):
    at = fresh({"boot": "0", **(qp or {})})
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _table(at):
    tables = [d.value for d in at.dataframe if "run" in d.value.columns and "outcome" in d.value.columns]
    assert tables, texts(at)
    return tables[0]


def test_the_table_lists_every_run_and_its_presets_are_the_core_s():
    at = _runs()
    table = _table(at)
    data = tpsviz.load(DEMO / "tau2-like.csv")
    assert len(table) == data.n_trajectories and not at.error
    at.selectbox(key="runs_preset").set_value("confident failures").run()
    at.selectbox(key="runs_preset_pred").set_value("verbal").run()
    shown = _table(at)
    core = RU.run_table(data, tpsviz.compute_tps(data, ScoreSettings(), data.predictors), data.predictors)
    expect = RU.select_runs(core, preset="confident failures", predictor="verbal")
    assert shown["run"].tolist() == expect["run"].tolist() and len(shown) > 0
    assert (shown["outcome"] == "failure").all() and (shown[RU.last_column("verbal")] >= 0.8).all()
    assert at.get("download_button"), "the table exports as CSV"
    at.selectbox(key="runs_preset").set_value("doubted successes").run()
    assert not RU.select_runs(core, preset="doubted successes", predictor="verbal").shape[0]
    assert "No run passes these filters" in texts(at)  # verbal never says 20% or less: a designed empty state


def test_choosing_a_run_opens_it_and_names_it_in_the_url():
    at = _runs()
    at.radio(key="runs_view").set_value("One run").run()
    at.selectbox(key="runs_pick").set_value("tau-00007").run()
    assert not at.exception
    assert list(at.query_params.get("run")) in (["tau-00007"], list("tau-00007"))
    assert "This log has no transcript" in texts(at)  # a table of forecasts: curves, no messages
    assert at.get("plotly_chart"), "the run's curve"


def test_a_link_to_a_run_opens_it_and_an_unknown_id_says_so():
    at = _runs({"run": "tau-00003"})
    assert at.radio(key="runs_view").value == "One run"
    assert at.selectbox(key="runs_pick").value == "tau-00003"
    facts = texts(at)
    assert "no run" not in facts
    bad = _runs({"run": "<b>nope</b>"})
    warn = " ".join(w.value for w in bad.warning)
    assert "This log has no run" in warn and "`<b>nope</b>`" in warn  # as code: shown as text
    assert not bad.exception and bad.selectbox(key="runs_pick").value is None


def test_a_real_log_shows_the_messages_of_the_step_where_its_forecast_moved_most():
    at = _runs({"demo": "tau-bench-airline", "run": "46-1"})
    assert not at.error, [e.value for e in at.error]
    step = at.select_slider(key="runs_step").value
    listed = next(d.value for d in at.dataframe if "move" in d.value.columns)  # the largest moves, largest first
    assert len(listed) and step == listed["step"].iloc[0]  # the page opens on the largest one
    tr = RM.read_run_transcript(DEMO / "tau-bench-airline-gpt-4o.json", "46-1")
    expect = [m.text for m in RM.transcript_steps(tr) if m.step == step]
    shown = [t.value for t in at.text]
    assert [s.removesuffix(" […]") for s in shown[:len(expect)]] == [e[:len(s.removesuffix(" […]"))] for e, s in
                                                                       zip(expect, shown)]
    at.select_slider(key="runs_step").set_value(1).run()
    first = [m for m in RM.transcript_steps(tr) if m.step == 1]
    assert [c.name for c in at.get("chat_message")] == [m.kind for m in first]  # system, user, agent


def _tau1_with(text: str, tmp: Path) -> tuple[str, bytes]:
    records = json.loads(TAU1.read_text())
    rec = records[0]
    user = next(m for m in rec["traj"] if m.get("role") == "user")
    user["content"] = text
    return "tau1.json", json.dumps(records).encode()


def test_text_from_the_log_is_shown_as_text_and_long_messages_are_cut(tmp_path):
    evil = "<img src=x onerror=alert(1)> **bold** $x^2$ [link](http://example.com) " + "word " * 600
    name, raw = _tau1_with(evil, tmp_path)
    at = fresh({"boot": "0"})
    upload(at, [(name, raw, "application/json")])
    at.switch_page(PAGE).run()
    rid = _table(at)["run"].iloc[0]
    at.radio(key="runs_view").set_value("One run").run()
    at.selectbox(key="runs_pick").set_value(rid).run()
    at.select_slider(key="runs_step").set_value(1).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [t.value for t in at.text]
    cut = next(s for s in shown if s.startswith("<img src=x"))
    assert cut.endswith(" […]") and len(cut) <= RM.cut_text(evil, 1_200)[0].__len__() + 4
    assert evil.strip() in [s.strip() for s in shown]  # the whole message, in its expander
    assert any(e.label.startswith("The whole message") for e in at.expander)
    assert not any("<img" in m.value for m in at.markdown)  # never as markdown or HTML


INSPECT_ONE = ROOT / "tests" / "fixtures" / "inspect" / "2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval"


def test_a_log_with_messages_and_no_predictor_still_shows_each_run_s_transcript():
    """A one-run Inspect log has no forecast and too few runs for a reference: no predictor to score, but its
    messages are shown (issue 46, point 1: every log kind that has messages), with its outcome."""
    at = fresh({"boot": "0"})
    upload(at, [(INSPECT_ONE.name, INSPECT_ONE.read_bytes(), "application/octet-stream")])
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    said = texts(at)
    assert "No predictor to score" in said and "No predictor selected" not in said
    data = tpsviz.load(INSPECT_ONE)
    rid = str(data.trajectories["trajectory_id"].iloc[0])
    assert at.selectbox(key="runs_pick").value == rid
    want = RM.transcript_steps(RM.read_run_transcript(INSPECT_ONE, rid))
    shown = [t.value for t in at.text]
    first = [m for m in want if m.step == 1]
    assert [c.name for c in at.get("chat_message")][:len(first)] == [m.kind for m in first]
    assert all(RM.cut_text(m.text, 1_200)[0] in " ".join(shown) for m in first if m.kind != "system")


def test_predictors_deselected_the_run_s_messages_stay():
    at = fresh({"boot": "0"})
    upload(at, [(TAU1.name, TAU1.read_bytes(), "application/json")])
    at.multiselect(key="pred").set_value([]).run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "No predictor to score" in texts(at)
    ids = tpsviz.load(TAU1).trajectories["trajectory_id"].astype(str).tolist()
    at.selectbox(key="runs_pick").set_value(ids[1]).run()
    assert not at.exception
    assert list(at.query_params.get("run")) in ([ids[1]], list(ids[1]))
    assert at.get("chat_message"), "the run's messages"
    assert not at.get("plotly_chart"), "no forecast to draw"
