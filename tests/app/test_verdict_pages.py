"""Issue 10 on the pages: the verdict at the top of Overview, warnings where the numbers are, text that
never overclaims, the Recalibration view following the predictor just added, the artificial-censoring
self-check in an "Advanced checks" expander, and the verdict in the HTML report."""

import re

import pandas as pd

from apptest_helpers import DEMO, fresh, texts, upload
from tests.wording_checks import assert_says, says_numbers

BAD = re.compile(r"\b(nan|inf)\b|\+nan", re.IGNORECASE)


def _verdict_lines(at) -> list[str]:
    """The verdict lines as a reader sees them (Markdown escapes removed): one paragraph each, all in one
    element (the page draws them at once)."""
    return [p.replace("\\", "") for m in at.markdown for p in m.value.split("\n\n") if "-badge[" in p]


def test_overview_opens_with_a_verdict_per_predictor():
    at = fresh()
    assert at.subheader[0].value == "Can I trust it?"
    lines = _verdict_lines(at)
    assert len(lines) == 6
    by_name = {re.search(r"\*\*(.+?)\*\*", x).group(1): x for x in lines}
    # the label, and the mean forecast against the success rate, as the core computes them
    import tpsviz

    core = tpsviz.evaluate(str(DEMO / "tau2-like.csv"), n_boot=0).verdicts
    said = {name: (100 * v.mean_forecast, 100 * v.success_rate) for name, v in core.items()}
    assert by_name["verbal"].startswith(":orange-badge[optimistic] **verbal**")
    assert says_numbers(by_name["verbal"].split(";")[0], said["verbal"]), (by_name["verbal"], said["verbal"])
    assert by_name["truthful = true probability (synthetic)"].startswith(":green-badge[trustworthy]")
    assert "noisy" in by_name and "overconfident" in by_name["noisy"]
    # a constant is named for what it is, not "optimistic" (issue 37), and says its one value
    assert by_name["flat"].startswith(":gray-badge[constant] **flat**")
    assert "every step" in by_name["flat"] and says_numbers(by_name["flat"], said["flat"])
    assert not any(BAD.search(x) for x in lines)
    exp = [e for e in at.expander if e.label == "How the verdict is decided"]
    assert exp and "optimistic / pessimistic" not in texts(at)  # drawn only when open
    at.session_state["ov_rules"] = True
    at.run()
    assert "optimistic / pessimistic" in texts(at)


def test_a_weak_raw_signal_opens_as_too_weak_to_convert_not_optimistic():
    """Issue 37: a log whose only signal is a weak unc_ column (HotpotQA-like, 101 runs) opened with
    "optimistic uala@platt", blaming the agent's signal for what the automatic conversion did."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_verdict_kinds import weak_unc_rows

    at = fresh()
    upload(at, [("hotpot.csv", weak_unc_rows().to_csv(index=False).encode(), "text/csv")])
    lines = _verdict_lines(at)
    # the conversion, and the reference beside it (issue 46, point 5: as the CLI scores it)
    assert len(lines) == 2 and lines[0].startswith(":violet-badge[too weak to convert] **uala@platt**")
    assert "ref:step" in lines[0] and "ref:step" in lines[1]
    assert "unc_uala" in lines[0] and "Platt" in lines[0]  # the conversion named: the raw column, its method
    assert "optimistic" not in lines[0] and not BAD.search(lines[0])


def test_verdict_follows_the_selection_and_the_censoring_mode():
    at = fresh()
    at.multiselect(key="pred").set_value(["verbal", "budget_aware"]).run()
    assert len(_verdict_lines(at)) == 2
    at = fresh({"demo": "webshop-like"})
    before = {x.split("**")[1]: x for x in _verdict_lines(at)}
    assert "cut-off runs counted at q_Z" in before["verbal"]  # webshop opens in exact mode
    at.selectbox(key="cens").set_value("simple").run()
    after = {x.split("**")[1]: x for x in _verdict_lines(at)}
    assert "within the budget" in after["verbal"]


def test_warnings_are_shown_beside_the_leaderboard():
    at = fresh()
    warn = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "verbal: skill" in warn and "is not above 0" in warn
    at.selectbox(key="sched").set_value("per-length").run()
    warn = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "per-length is not proper" in warn


def test_few_runs_warning_on_a_filtered_log():
    from pages._ui.sidebar import filter_key

    at = fresh()
    at.multiselect(key=filter_key("difficulty")).set_value(["hard"]).run()
    assert not at.exception
    assert any("Few runs with an outcome" in w.value for w in at.warning)


def test_recalibration_view_follows_the_predictor_just_added():
    at = fresh()
    at.switch_page("pages/views/recalibration.py").run()
    for src, method in (("verbal", "platt"), ("noisy", "isotonic")):
        at.selectbox(key="rc_src").set_value(src)
        at.radio(key="rc_method").set_value(method)
        at.button[0].click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="recal_view").value == f"{src}@{method}"
    t = texts(at)
    assert not BAD.search(t)
    assert "tpsviz." not in t  # internal function names stay out of captions


def test_artificial_censoring_check_is_an_advanced_check():
    at = fresh()
    at.switch_page("pages/views/censoring.py").run()
    assert not at.exception
    assert "Artificial censoring check" not in [s.value for s in at.subheader]
    assert any(e.label.startswith("Advanced checks") for e in at.expander)


def test_lab_never_prints_nan_or_internal_names():
    at = fresh()
    at.switch_page("pages/views/lab.py").run()
    t = texts(at)
    assert not BAD.search(t), BAD.search(t)
    assert "tpsviz." not in t


def test_report_starts_with_the_verdict():
    at = fresh()
    at.switch_page("pages/views/export.py").run()
    at.button(key="build_report").click().run()
    assert not at.exception
    rep = at.session_state["_report"][1].decode()
    assert rep.index("Verdict: which predictor to trust") < rep.index("Leaderboard")
    assert "optimistic" in rep and "says 94% on average" in rep


def _diff(at):
    """The table of each group minus the base group (the own-references table follows it)."""
    return next(d.value for d in at.dataframe if {"group", "Δ TPS", "in words"} <= set(d.value.columns))


def test_groups_of_runs_are_compared_on_the_overview():
    at = fresh()
    assert not [w for w in at.selectbox if w.key == "grp_by"]  # the section is drawn on request (issue 37)
    at.session_state["ov_groups"] = True
    at.run()
    assert at.selectbox(key="grp_by").value is None  # nothing computed until a column is chosen
    at.selectbox(key="grp_by").set_value("difficulty").run()
    assert not at.exception, [e.value for e in at.exception]
    diff = _diff(at)
    assert set(diff["group"]) == {"hard", "medium"}  # every group minus the base group "easy"
    assert diff["in words"].str.contains("clearly").all()
    at.selectbox(key="grp_base").set_value("hard").run()
    assert set(_diff(at)["group"]) == {"easy", "medium"}
    # the numbers are the core's (tpsviz.diagnostics.groups), paired by the log's task column
    import tpsviz
    from tpsviz.diagnostics.groups import group_difference

    d = group_difference(tpsviz.load("demo_data/tau2-like.csv"), "difficulty", "hard", "easy",
                         tpsviz.ScoreSettings(censoring="simple"), pair_on="auto")
    row = _diff(at).set_index(["group", "predictor"]).loc[("easy", "verbal")]
    assert float(row["Δ TPS"]) == round(d.loc["verbal", "tps_delta"], 3)
    assert any("paired by task" in c.value for c in at.caption)


def test_many_valued_column_gets_a_searchable_filter():
    import io

    import pandas as pd

    from pages._ui.sidebar import filter_key

    rows = [{"trajectory_id": f"r{i}", "step": t, "outcome": i % 2, "conf_a": 0.3 + 0.4 * (i % 2),
             "task_id": f"task-{i:03d}"} for i in range(150) for t in (1, 2)]
    buf = io.StringIO()
    pd.DataFrame(rows).to_csv(buf, index=False)
    at = fresh()
    at.radio(key="src").set_value("Upload").run()
    at.file_uploader(key="upload").set_value(("many.csv", buf.getvalue().encode(), "text/csv")).run()
    assert not at.exception and not at.error
    box = at.multiselect(key=filter_key("task_id"))
    assert box.value == [] and len(box.options) == 150  # empty = every run; type to search
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "150"
    box.set_value(["task-001", "task-002", "task-003"]).run()
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "3"


def test_two_logs_loaded_together_are_compared():
    import tpsviz
    from tpsviz.diagnostics.combine import combine_logs
    from tpsviz.diagnostics.groups import group_difference

    at = fresh()
    at.session_state["ov_groups"] = True
    at.run()
    at.radio(key="grp_mode").set_value("this log with a second log").run()
    raw = (DEMO / "webshop-like.csv").read_bytes()
    at.file_uploader(key="cand_upload").set_value(("webshop-like.csv", raw, "text/csv")).run()
    assert not at.exception and not at.error
    diff = _diff(at).set_index("predictor")
    assert list(diff["group"].unique()) == ["candidate"]
    both = combine_logs(tpsviz.load(DEMO / "tau2-like.csv"), tpsviz.load(DEMO / "webshop-like.csv"))
    d = group_difference(both, "log", "baseline", "candidate", tpsviz.ScoreSettings(censoring="simple"),
                         pair_on="auto")
    assert float(diff.loc["verbal", "Δ TPS"]) == round(d.loc["verbal", "tps_delta"], 3)
    assert "clearly lower" in diff.loc["verbal", "in words"]
    # the summary at the top answers it in words (issue 37): the candidate scores worse on verbal, Δ ± SE
    said = next(m.value for m in at.markdown if m.value.startswith("**In short:**")).replace("\\", "")
    line = assert_says(said, "candidate log", abs(d.loc["verbal", "tps_delta"]), d.loc["verbal", "tps_se"])
    assert "(webshop-like.csv)" in line and "worse" in line and "verbal" in line
    # a bad candidate is a message, not a traceback
    at.file_uploader(key="cand_upload").set_value(("bad.csv", b"trajectory_id,step\nt1,1\n", "text/csv")).run()
    assert not at.exception


def test_closing_the_groups_section_keeps_its_choices_and_the_candidate_log():
    """The groups section is drawn only while open, and Streamlit forgets the widgets a run does not
    draw: closing and opening it again keeps the mode, the column and the candidate log (said so,
    with a button to remove it). A file removed from the box while it is shown is not brought back."""
    at = fresh()
    at.session_state["ov_groups"] = True
    at.run()
    at.selectbox(key="grp_by").set_value("difficulty").run()
    at.session_state["ov_groups"] = False
    at.run()
    assert not [w for w in at.selectbox if w.key == "grp_by"]
    at.session_state["ov_groups"] = True
    at.run()
    assert at.selectbox(key="grp_by").value == "difficulty"
    assert set(_diff(at)["group"]) == {"hard", "medium"}

    at.radio(key="grp_mode").set_value("this log with a second log").run()
    raw = (DEMO / "webshop-like.csv").read_bytes()
    at.file_uploader(key="cand_upload").set_value(("webshop-like.csv", raw, "text/csv")).run()
    want = _diff(at)
    assert list(want["group"].unique()) == ["candidate"]
    at.session_state["ov_groups"] = False
    at.run()
    at.session_state["ov_groups"] = True
    at.run()
    assert not at.exception and at.radio(key="grp_mode").value == "this log with a second log"
    assert any("uploaded before this section was closed" in c.value for c in at.caption)
    pd.testing.assert_frame_equal(_diff(at), want)
    at.run()  # a further run keeps it (the box stays empty)
    pd.testing.assert_frame_equal(_diff(at), want)
    at.switch_page("pages/views/reliability.py").run()  # another page forgets the box too
    at.switch_page("pages/views/overview.py").run()
    at.session_state["ov_groups"] = True  # (the section itself is closed again, as every other)
    at.run()
    assert at.radio(key="grp_mode").value == "this log with a second log"
    pd.testing.assert_frame_equal(_diff(at), want)
    at.button(key="cand_forget").click().run()
    assert not at.exception and not any("candidate" in set(d.value.get("group", [])) for d in at.dataframe
                                        if "group" in d.value)
    # removed from the box by its user while shown: gone, also after closing and opening again
    at.file_uploader(key="cand_upload").set_value(("webshop-like.csv", raw, "text/csv")).run()
    at.file_uploader(key="cand_upload").set_value(None).run()
    at.session_state["ov_groups"] = False
    at.run()
    at.session_state["ov_groups"] = True
    at.run()
    assert not any("uploaded before" in c.value for c in at.caption)
    assert not any("candidate" in set(d.value["group"]) for d in at.dataframe if "group" in d.value)


def test_schedule_that_is_not_proper_is_a_warning_on_every_page():
    at = fresh()
    at.selectbox(key="sched").set_value("per-length").run()
    for page in ("pages/views/reliability.py", "pages/views/steps.py", "pages/views/lab.py"):
        at.switch_page(page).run()
        assert not at.exception
        assert any("is not proper" in w.value.replace("\\", "") for w in at.warning), page


def test_report_holds_the_group_comparison_chosen_on_the_overview():
    at = fresh()
    at.session_state["ov_groups"] = True
    at.run()
    at.selectbox(key="grp_by").set_value("difficulty").run()
    at.switch_page("pages/views/export.py").run()
    at.button(key="build_report").click().run()
    assert not at.exception
    rep = at.session_state["_report"][1].decode()
    assert "Groups of runs by difficulty" in rep and "Each group minus easy" in rep


def test_the_summary_answers_model_x_vs_y_without_a_click():
    """The drift demo has a model_version column (v2 over-confident by construction): the summary line
    at the top compares the models with Δ ± SE, the groups section staying closed (issue 37)."""
    import tpsviz
    from tpsviz.diagnostics.groups import group_difference

    at = fresh({"demo": "drift-like"})
    said = next(m.value for m in at.markdown if m.value.startswith("**In short:**")).replace("\\", "")
    d = group_difference(tpsviz.load(DEMO / "drift-like.csv"), "model_version", "v1", "v2",
                         tpsviz.ScoreSettings(censoring="simple", n_boot=0))
    line = assert_says(said, "By model_version", -d.loc["agent", "tps_delta"], d.loc["agent", "tps_se"])
    assert "worse" in line and "agent" in line and line.index("v2") < line.index("worse") < line.index("v1")
    assert said.index("succeeded within the step budget") < said.index("By model_version")
    assert not [w for w in at.selectbox if w.key == "grp_by"]  # nothing to click


def test_a_log_with_one_predictor_says_nothing_it_cannot_do():
    rows = "".join(f"r{i},{t},{i % 2},{0.3 + 0.4 * (i % 2)}\n" for i in range(40) for t in (1, 2))
    at = fresh()
    at.radio(key="src").set_value("Upload").run()
    at.file_uploader(key="upload").set_value(("one.csv", ("trajectory_id,step,outcome,conf_a\n" + rows).encode(),
                                              "text/csv")).run()
    assert not at.exception and not at.error
    t = texts(at)
    assert "Select at least two predictors" not in t
    assert "This log has one signal" in t
