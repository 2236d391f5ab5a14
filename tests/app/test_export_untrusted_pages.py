"""The dashboard's HTML report of a log whose ids, metadata and file name are formulas, HTML and
Markdown (issue 38, item 4): built on the Export page with the group comparison by a hostile
metadata column chosen on the Overview, it shows every value as text."""

from __future__ import annotations

import sys
from pathlib import Path

from apptest_helpers import fresh, upload

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from untrusted import HOSTILE, MARKUP, assert_shown_as_text, write_log  # noqa: E402


def test_the_dashboards_report_escapes_ids_metadata_and_the_file_name(tmp_path):
    raw = write_log(tmp_path / "hostile.csv").read_bytes()
    at = fresh({"boot": "0"})
    upload(at, [(f"{MARKUP[1]}.csv", raw, "text/csv")])
    at.session_state["ov_groups"] = True  # the section is drawn only while open (issue 37)
    at.run()
    at.radio(key="grp_mode").set_value("groups of this log").run()
    at.selectbox(key="grp_by").set_value("model").run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("pages/views/export.py").run()
    at.button(key="build_report").click().run()
    assert not at.exception, [e.value for e in at.exception]
    doc = at.session_state["_report"][1].decode("utf-8")
    audit = assert_shown_as_text(doc, HOSTILE)
    assert "Groups of runs by model" in audit["text"]
    groups = [v for v in HOSTILE if v in audit["text"]]
    assert len(groups) >= len(HOSTILE) - 1, groups  # the groups' names, as text (a group of one run is left out)
    assert f"tpsviz report — {MARKUP[1]}" in audit["text"]  # the file's name in the title
