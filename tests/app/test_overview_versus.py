"""The Overview's "this log with a second log" and its groups: which side succeeds more often, by how much,
with its SE, the same sentence the command line prints (tpsviz.diagnostics.versus_runs), on the real
tau-bench and tau2-bench logs without forecasts; the second log also from a server path inside the roots."""

import shutil
from pathlib import Path

from apptest_helpers import fresh, texts

import tpsviz
from tpsviz.core.schema import clean_text
from tpsviz.diagnostics.combine import combine_logs
from tpsviz.diagnostics.groups import group_labels
from tpsviz.diagnostics.versus_runs import success_sentence, versus_runs

ROOT = Path(__file__).resolve().parents[2]
TAU1 = ROOT / "demo_data" / "tau-bench-airline-gpt-4o.json"
TAU2 = ROOT / "tests" / "fixtures" / "tau2" / "tau2_airline_gpt-oss-120b_langchain_trimmed.json"
NAMES = {"baseline": "this log", "candidate": f"the candidate log ({clean_text(TAU2.name, 40)})"}


def _expected() -> str:
    both = combine_logs(tpsviz.load(TAU1), tpsviz.load(TAU2), allow_no_predictor=True)
    return success_sentence(versus_runs(both, "log", "baseline", "candidate", group_labels(both, "log")), NAMES)


def _second_log_mode(at):
    at.session_state["ov_groups"] = True
    at.run()
    at.radio(key="grp_mode").set_value("this log with a second log").run()


def _plain(at) -> str:
    return texts(at).replace("\\", "")


def test_tau_bench_against_an_uploaded_tau2_log_says_who_succeeds_more():
    at = fresh({"demo": "tau-bench-airline"})
    _second_log_mode(at)
    at.file_uploader(key="cand_upload").set_value((TAU2.name, TAU2.read_bytes(), "application/json")).run()
    assert not at.exception and not at.error
    said = _plain(at)
    assert "cannot be compared" not in said
    assert f"**Success:** {_expected()}." in said
    assert "different harnesses (tau-bench, tau2-bench): task ids that coincide are not the same tasks" in said
    table = next(d.value for d in at.dataframe if "measure" in d.value.columns)
    row = table.set_index("measure").loc["success"]
    assert (row["base"], row["side's"], row["Δ"], row["SE"]) == ("43.1%", "50.0%", "+6.9 points", "19.6")
    assert "Confidence not compared" in said
    short = next(m.value for m in at.markdown if m.value.startswith("**In short:**")).replace("\\", "")
    assert "no clear difference in success: this log 43.1% against the candidate log" in short.lower()


def test_the_second_log_from_a_server_path_inside_the_roots(monkeypatch, tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    shutil.copy(TAU2, root / TAU2.name)
    (tmp_path / "secret.json").write_text('{"api_key": "sk-do-not-show"}')
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(root))
    at = fresh({"demo": "tau-bench-airline"})
    _second_log_mode(at)
    at.text_input(key="cand_path").set_value(TAU2.name).run()
    assert not at.exception and not at.error
    assert f"**Success:** {_expected()}." in _plain(at)
    # outside the roots: refused, and nothing of the file is shown
    at.text_input(key="cand_path").set_value(str(tmp_path / "secret.json")).run()
    assert not at.exception
    said = _plain(at) + " ".join(e.value for e in at.error)
    assert "cannot be used" in said and "sk-do-not-show" not in said and "api_key" not in said


def test_groups_of_one_log_say_who_succeeds_more_paired_by_task():
    at = fresh({"demo": "tau-bench-airline"})
    at.session_state["ov_groups"] = True
    at.run()
    at.selectbox(key="grp_by").set_value("trial").run()
    assert not at.exception and not at.error
    said = _plain(at)
    assert "**Success:** no clear difference in success: trial 0 " in said
    assert "paired by task ('task_id', 50 tasks in both sides)" in said
