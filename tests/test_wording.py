"""The core names a setting by a marker, and each front end words it (issue 35, point 6;
docs/architecture.md, "Messages"): one problem read three ways, from Python (``str(exc)``), from
the command line (``main()``, stderr) and on the dashboard (``pages/_ui/wording.say``, the words a
``LoadFailure`` shows). And no string of the core outside ``cli/`` holds a front end's words."""

from __future__ import annotations

import ast
import pickle
import re
from pathlib import Path

import pandas as pd
import pytest

import tpsviz
from pages._ui.loading import LoadFailure
from pages._ui.wording import DASHBOARD, LABELS
from pages._ui.wording import say as dashboard_say
from tpsviz.cli.wording import CLI
from tpsviz.cli.main import main
from tpsviz.cli.options import flag
from tpsviz.core.errors import LogFormatError, SettingError
from tpsviz.core.wording import PYTHON, SETTINGS, Text, named, setting, text, word
from tpsviz.evaluation.reading import read_options

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_data"

#: what only a front end may write: an option, a command, the dashboard's pages and widgets
FRONT_END_WORDS = re.compile(r"(?<![\w-])--[a-z][a-z-]*|python -m tpsviz|Reading options|sidebar|dashboard's"
                             r"|Other outcomes page|Recalibration page|\bpage\b")
#: messages another change rewrites (issue 34: the log without a per-step forecast, io/loading.py);
#: the lead deletes the entry once it has merged that rewrite
PENDING = ()


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the constants that are docstrings (a module's, a class's, a function's)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def front_end_words(source: str) -> list[tuple[int, str]]:
    """(line, words) of every string literal of ``source`` (f-strings' text parts too) that holds a
    front end's words, docstrings left out."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    for node in ast.walk(tree):  # (every part of a pending message)
        if isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.Constant) and any(p in str(v.value) for p in PENDING)
                                                   for v in node.values):
            skip |= {id(v) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            hits = FRONT_END_WORDS.findall(node.value)
            if hits:
                found.append((node.lineno, ", ".join(hits)))
    return sorted(found)


def core_files():
    return sorted(p for p in (ROOT / "tpsviz").rglob("*.py") if "cli" not in p.relative_to(ROOT / "tpsviz").parts)


def test_the_core_writes_no_front_end_words():
    found = [f"{p.relative_to(ROOT)}:{line}: {hits}" for p in core_files()
             for line, hits in front_end_words(p.read_text(encoding="utf-8"))]
    assert not found, "name a setting by tpsviz.core.wording.setting(...), not by a front end's words:\n" + \
        "\n".join(found)


def test_the_check_sees_what_it_must_and_leaves_docstrings():
    src = ('def f(x):\n    """Maps ``--map`` pairs (python -m tpsviz score)."""\n'
           '    a = "use --engine duckdb"\n    b = f"{x} on the dashboard\'s Other outcomes page"\n'
           '    c = "in the sidebar: Reading options"\n    d = "python -m tpsviz multiclass"\n'
           '    e = "-- a SQL comment, x--y, 1 -- 2"\n')
    assert [line for line, _ in front_end_words(src)] == [3, 4, 5, 6]


def test_every_setting_a_message_names_is_worded_by_every_front_end():
    used = set()
    for p in core_files():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setting" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                used.add(node.args[0].value)
    assert used and used <= set(SETTINGS), used - set(SETTINGS)
    for wording in (CLI, DASHBOARD):
        assert set(SETTINGS) <= set(wording.words), (wording.front_end, set(SETTINGS) - set(wording.words))
    for name in SETTINGS:  # no marker left, no front end's words in Python's
        for wording in (PYTHON, CLI, DASHBOARD):
            assert "\x1e" not in wording.name(name) and "\x1e" not in wording.name(name, "v")
        assert not re.search(r"--[a-z]|Reading options", PYTHON.name(name)), name
        assert CLI.name(name).startswith(("--", "'python -m tpsviz", "python -m tpsviz ")), name


def test_the_dashboard_names_widgets_by_the_labels_it_draws():
    drawn = (ROOT / "pages/_ui/reading.py").read_text() + (ROOT / "pages/_ui/sidebar.py").read_text()
    for key in ("conf", "forecasts", "success_threshold", "scorer", "map", "percent", "eps", "n_boot", "score",
                "censoring", "q_z", "rollouts", "rollouts_path"):
        assert f'LABELS["{key}"]' in drawn, key
    assert DASHBOARD.name("map") == 'Reading options › "Column mapping (tables)"' and LABELS["map"] == "Column mapping (tables)"


@pytest.fixture()
def small_csv(tmp_path):
    path = tmp_path / "log.csv"
    pd.read_csv(DEMO / "tau2-like.csv", nrows=60).to_csv(path, index=False)
    return path


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_one_mapping_problem_three_ways(small_csv, capsys):
    with pytest.raises(LogFormatError) as err:
        tpsviz.load(small_csv, options=read_options(mapping={"trajectory_id": "run"}))
    tail = "trajectory_id=run: the file has no column 'run'"
    assert str(err.value) == f"log.csv: mapping {tail}"  # Python: the keyword of tpsviz.load / evaluate
    assert "--map" not in str(err.value) and err.value.problems == [f"mapping {tail}"]
    code, _, stderr = _cli(capsys, "score", small_csv, "--map", "trajectory_id=run")
    assert code == 2 and stderr == f"error: log.csv: --map {tail}\n"  # the terminal: the option
    shown = LoadFailure(err.value.source, err.value.problems)  # the dashboard: the widget
    assert shown.problems == [f'Reading options › "Column mapping (tables)" {tail}'] and shown.named == {"map"}
    assert dashboard_say(err.value) == f'log.csv: Reading options › "Column mapping (tables)" {tail}'


def test_a_suggested_value_three_ways(tmp_path, capsys):
    path = tmp_path / "pct.csv"
    path.write_text("trajectory_id,step,outcome,conf_v\nr1,1,1,60\nr1,2,1,85\nr2,1,0,40\n", encoding="utf-8")
    with pytest.raises(LogFormatError) as err:
        tpsviz.load(path)
    assert "say so with percent='v')" in str(err.value)
    code, _, stderr = _cli(capsys, "score", path, "--n-boot", "0")
    assert code == 2 and "say so with --percent v)" in stderr
    assert 'say so with Reading options › "Predictors given in percent" set to v)' in dashboard_say(err.value)


def test_a_setting_in_the_wrong_form_three_ways(small_csv, capsys):
    with pytest.raises(SettingError) as err:
        read_options(treat=["max_steps"])
    assert isinstance(err.value, ValueError)
    assert str(err.value) == "treat 'max_steps': write it as REASON=TREATMENT, e.g. max_steps=failure"
    code, _, stderr = _cli(capsys, "score", small_csv, "--treat", "max_steps")
    assert code == 2 and stderr == "error: --treat 'max_steps': write it as REASON=TREATMENT, e.g. max_steps=failure\n"
    assert dashboard_say(err.value).startswith('Reading options › "Termination reasons" \'max_steps\': write it')


def test_a_note_three_ways(small_csv, capsys):
    data = tpsviz.load(small_csv, options=read_options(treat={"max_steps": "failure"}, scorer="acc"))
    note = next(n for n in data.notes if "harness logs only" in n)
    assert note.startswith("treat, scorer apply to harness logs only") and isinstance(note, Text)
    code, out, _ = _cli(capsys, "score", small_csv, "--treat", "max_steps=failure", "--scorer", "acc", "--n-boot", "0")
    assert code == 0 and "note: --treat, --scorer apply to harness logs only" in out
    assert dashboard_say(note).startswith('Reading options › "Termination reasons", Reading options › "Scorer '
                                          '(Inspect AI)" apply to harness logs only')


def test_another_outcome_kind_is_recognised_by_its_marker_not_its_words():
    with pytest.raises(LogFormatError) as err:
        tpsviz.load(DEMO / "multiclass-like.csv")
    assert named(err.value) == {"multiclass"} and LoadFailure(err.value.source, err.value.problems).named == {"multiclass"}
    assert "'python -m tpsviz score'" in word(err.value, CLI)
    assert "score it with the Other outcomes page" in dashboard_say(err.value)


def test_a_log_cannot_forge_a_marker_and_a_template_survives_pickling():
    df = pd.read_csv(DEMO / "tau2-like.csv", nrows=30)
    forged = f"x{setting('map')}y"
    with pytest.raises(LogFormatError) as err:
        tpsviz.from_frame(df.rename(columns={"outcome": forged}))
    assert "--map" not in word(err.value, CLI) and named(err.value) == set()  # (show_id drops control characters)
    t = text(f"raise {setting('eps')} or use {setting('alpha', 1)}")
    assert t == "raise eps or use alpha=1" and word(t, CLI) == "raise --eps or use --alpha 1"
    again = pickle.loads(pickle.dumps(t))
    assert isinstance(again, Text) and word(again, CLI) == word(t, CLI)
    e = pickle.loads(pickle.dumps(LogFormatError("f", [t, "plain"])))
    assert word(e, CLI) == "f: cannot be used (2 problems):\n- raise --eps or use --alpha 1\n- plain"
    assert word("no marker here", CLI) == "no marker here" and text("plain") == "plain"


def test_the_clis_flag_is_its_wording():
    assert flag("n_boot") == "--n-boot" and flag("recalibrate", "platt") == "--recalibrate platt"
    assert flag("seed") == "--seed" and flag("success_threshold") == "--success-threshold"
