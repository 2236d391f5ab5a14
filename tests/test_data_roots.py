"""Data roots shown by name, never by where they are on the server (issue 38, item 3).

``TPSVIZ_DATA_ROOTS`` takes ``path`` or ``name=path`` entries (``:``-separated); a root is shown by its
name (given, else its last folder) and a path under it as ``name:/relative/path``. Full paths only
with ``TPSVIZ_SHOW_ROOT_PATHS=1``. A visitor may type a path in the shown form.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tpsviz.io.dataset import open_dataset
from tpsviz.io.files import CANNOT_OPEN, DataRoots, PathRefused

DEMO = Path(__file__).resolve().parents[1] / "demo_data"


@pytest.fixture
def tree(tmp_path) -> Path:
    """``srv/agent-logs/runs/a.csv``, ``srv/other/agent-logs/b.csv`` (two roots of one last name),
    a symbolic link to the first root, and a file beside the roots."""
    (tmp_path / "srv/agent-logs/runs").mkdir(parents=True)
    (tmp_path / "srv/other/agent-logs").mkdir(parents=True)
    (tmp_path / "srv/agent-logs/runs/a.csv").write_bytes((DEMO / "tau2-like.csv").read_bytes())
    (tmp_path / "srv/other/agent-logs/b.csv").write_bytes((DEMO / "tau2-like.csv").read_bytes())
    (tmp_path / "srv/agent-logs2").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "srv/agent-logs")
    (tmp_path / "outside.csv").write_text("x\n", encoding="utf-8")
    return tmp_path


def test_the_old_form_still_reads_and_roots_get_their_last_folder_as_name(tree, monkeypatch):
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", os.pathsep.join([str(tree / "srv/agent-logs"),
                                                             str(tree / "srv/other/agent-logs"), "/no/such"]))
    monkeypatch.delenv("TPSVIZ_SHOW_ROOT_PATHS", raising=False)
    roots = DataRoots.from_env()
    assert roots.roots == [(tree / "srv/agent-logs").resolve(), (tree / "srv/other/agent-logs").resolve()]
    assert roots.names == ["agent-logs", "agent-logs-2"] and roots.ignored == ["/no/such"]
    assert not roots.show_paths
    assert roots.resolve("runs/a.csv") == (tree / "srv/agent-logs/runs/a.csv").resolve()


def test_names_given_by_the_administrator(tree):
    roots = DataRoots([f"logs={tree / 'srv/agent-logs'}", f"more={tree / 'srv/other/agent-logs'}",
                       f"bad name={tree}", f"x=relative/path"])
    assert roots.names == ["logs", "more"]
    assert roots.ignored == [f"bad name={tree}", "x=relative/path"]  # (not a name: read as a path, not a folder)
    # a folder whose own path holds "=" is a plain path (what precedes "=" is no name)
    (tree / "a=b").mkdir()
    assert DataRoots([str(tree / "a=b")]).names == ["a=b"]


def test_show_names_a_path_by_its_root(tree):
    roots = DataRoots([f"logs={tree / 'link'}", str(tree / "srv/other/agent-logs")])
    assert roots.show(tree / "srv/agent-logs/runs/a.csv") == "logs:/runs/a.csv"  # (the real path: link resolved)
    assert roots.show(tree / "link/runs/a.csv") == "logs:/runs/a.csv"
    assert roots.show(tree / "srv/agent-logs") == "logs:/"
    assert roots.show(tree / "srv/other/agent-logs/b.csv") == "agent-logs:/b.csv"
    assert roots.show(tree / "outside.csv") == "outside.csv"  # under no root: its name only
    shown = DataRoots([f"logs={tree / 'link'}"], show_paths=True)
    assert shown.show(tree / "srv/agent-logs/runs/a.csv") == str(tree / "srv/agent-logs/runs/a.csv")


def test_hide_writes_every_root_by_its_name_and_only_whole_paths(tree):
    roots = DataRoots([f"logs={tree / 'link'}", str(tree / "srv/other/agent-logs"), str(tree / "srv/other")])
    real = str((tree / "srv/agent-logs").resolve())
    cases = {
        f"{real}/runs/a.csv: the file has a header but no data rows": "logs:/runs/a.csv: the file has a header "
                                                                      "but no data rows",
        f"File: {tree / 'link'}/runs": "File: logs:/runs",  # the root as written in the setting, too
        f"'{real}' is a folder": "'logs:/' is a folder",
        f"{tree / 'srv/other/agent-logs'}/b.csv and {tree / 'srv/other'}/x": "agent-logs:/b.csv and other:/x",
        f"{real}2/x": f"{real}2/x",  # another folder whose path starts alike
        f"/x{real}/y": f"/x{real}/y",  # a path that holds a root's path inside it
        f"{real}.bak": f"{real}.bak",
    }
    for text, hidden in cases.items():
        assert roots.hide(text) == hidden, text
    assert DataRoots([str(tree / "link")], show_paths=True).hide(f"{real}/a") == f"{real}/a"


def test_a_path_may_be_given_by_its_root_name(tree):
    roots = DataRoots([f"logs={tree / 'srv/agent-logs'}", f"more={tree / 'srv/other/agent-logs'}"])
    assert roots.resolve("more:/b.csv") == (tree / "srv/other/agent-logs/b.csv").resolve()
    assert roots.resolve("logs:/runs/a.csv") == (tree / "srv/agent-logs/runs/a.csv").resolve()
    assert roots.resolve("logs:", allow_dir=True) == (tree / "srv/agent-logs").resolve()
    for refused in ("logs:/../../outside.csv", "logs:/../agent-logs2", "nope:/b.csv", "more:/../../../outside.csv"):
        with pytest.raises(PathRefused) as e:
            roots.resolve(refused, allow_dir=True)
        assert str(e.value) == CANNOT_OPEN
    assert [f.name for f in open_dataset("logs:/runs", roots).files] == ["a.csv"]  # a dataset folder too


def test_a_dataset_message_names_its_folder_by_the_root(tree, monkeypatch):
    """What the dashboard shows of a dataset that cannot be read: the folder by its root's name."""
    import tpsviz
    from tpsviz.core.errors import LogFormatError

    bad = tree / "srv/agent-logs/mixed"
    bad.mkdir()
    (bad / "a.csv").write_text("trajectory_id,step,outcome,conf_a\nx,1,1,0.5\n", encoding="utf-8")
    (bad / "b.csv").write_text("trajectory_id,step,outcome,conf_b\ny,1,1,0.5\n", encoding="utf-8")
    roots = DataRoots([f"logs={tree / 'srv/agent-logs'}"])
    with pytest.raises(LogFormatError) as e:
        tpsviz.load(bad.resolve(), name="mixed", roots=roots)
    assert str(tree) in e.value.source  # the core names the path it was given (the CLI's user is on the server)
    assert roots.hide(e.value.source) == "logs:/mixed" and str(tree) not in roots.hide(str(e.value))
