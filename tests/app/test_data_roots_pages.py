"""Issue 38 in the dashboard (AppTest): the data roots shown by name, never where they are on the
server; an ``.eval`` archive with a member listed twice is a page error naming the member; the
reading options' warnings name their widget once."""

from __future__ import annotations

import io
import warnings
import zipfile
from pathlib import Path

import pytest

from apptest_helpers import DEMO, ROOT, fresh, texts, upload
from tests.wording_checks import assert_says

FIXTURE = ROOT / "tests/fixtures/inspect/2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval"
CANARY = "CANARY-9d2c4"


def _all_text(at) -> str:
    """Everything a visitor reads: markdown, captions, alerts, code blocks, the sidebar's labels."""
    parts = [texts(at)] + [c.value for c in at.code] + [str(w.label) for w in at.sidebar.text_input]
    parts += [e.value for e in at.sidebar.warning] + [e.value for e in at.sidebar.error]
    return "\n".join(parts)


@pytest.fixture
def roots(tmp_path, monkeypatch) -> Path:
    """Two roots, the first named by the administrator, under a folder whose path must never show."""
    srv = tmp_path / "srv-secret-layout"
    (srv / "agent-logs").mkdir(parents=True)
    (srv / "rollouts").mkdir()
    (srv / "agent-logs/tau2.csv").write_bytes((DEMO / "tau2-like.csv").read_bytes())
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", f"logs={srv / 'agent-logs'}:{srv / 'rollouts'}")
    monkeypatch.delenv("TPSVIZ_SHOW_ROOT_PATHS", raising=False)
    return srv


def test_readable_folders_are_shown_by_name(roots, monkeypatch):
    at = fresh({"src": "Server path", "path": "logs:/tau2.csv"})
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "450"  # (the shown form is a path too)
    caption = next(c.value for c in at.sidebar.caption if c.value.startswith("Readable folders"))
    assert caption.startswith("Readable folders: `logs`, `rollouts`.")
    assert str(roots) not in _all_text(at) and "srv-secret-layout" not in _all_text(at)
    monkeypatch.setenv("TPSVIZ_SHOW_ROOT_PATHS", "1")  # the administrator opted in
    at = fresh({"src": "Server path", "path": "tau2.csv"})
    caption = next(c.value for c in at.sidebar.caption if c.value.startswith("Readable folders"))
    assert str((roots / "agent-logs").resolve()) in caption


def test_an_error_box_names_a_dataset_by_its_root(roots):
    bad = roots / "agent-logs/runs"
    bad.mkdir()
    (bad / "a.csv").write_text("trajectory_id,step,outcome,conf_a\nx,1,1,0.5\n", encoding="utf-8")
    (bad / "b.csv").write_text("trajectory_id,step,outcome,conf_b\ny,1,1,0.5\n", encoding="utf-8")
    at = fresh({"src": "Server path", "path": "runs"})
    shown = _all_text(at)
    assert "This log cannot be used" in shown
    assert "File: logs\\:/runs" in shown and "the files do not have the same columns" in shown
    assert "srv-secret-layout" not in shown


def _twice(member: str) -> bytes:
    """The committed Inspect fixture with ``member`` written a second time (its copy altered)."""
    src = zipfile.ZipFile(FIXTURE)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name: that is the point
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for info in src.infolist():
                z.writestr(info.filename, src.read(info.filename))
            z.writestr(member, src.read(member).replace(b'"C"', f'"{CANARY}"'.encode()))
    return buf.getvalue()


def test_an_archive_with_a_member_twice_is_a_page_error_naming_it():
    at = fresh()
    upload(at, [("twice.eval", _twice("samples/1_epoch_1.json"), "application/zip")])
    shown = _all_text(at)
    assert "This log cannot be used" in shown
    assert "member 'samples/1_epoch_1.json'" in assert_says(shown, "appears twice")  # the member, by name
    assert CANARY not in shown and not at.metric  # nothing of the log is shown


def test_a_reading_option_warning_names_its_widget_once():
    """It read "Reading options: Reading options › "Column mapping (tables)" …"."""
    at = fresh()
    upload(at, [("log.csv", (DEMO / "tau2-like.csv").read_bytes(), "text/csv")])
    at.text_input(key="map").set_value("foo").run()
    at.text_input(key="thr").set_value("abc").run()
    warned = [w.value for w in at.sidebar.warning]
    assert len(warned) == 2 and all(w.startswith("Reading options › ") for w in warned), warned
    assert "Column mapping" in warned[1] and "Success threshold" in warned[0]  # (Markdown escaped)
    assert not any(w.count("Reading options") > 1 for w in warned), warned
