"""Issue 46, point 5, in the dashboard (AppTest): the raw-only UALA log (HotpotQA-like, issue 37) opens
with the same predictors as ``python -m tpsviz score`` gives it — its raw signal converted by the same
cross-fitted Platt scaling, and the reference forecaster beside it — with the same TPS, and says so in
the CLI's sentence; a recalibration added on the Recalibration page keeps the references. The
command line's side is ``tests/test_one_behaviour.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from apptest_helpers import fresh, texts, upload

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_one_behaviour import SENTENCE  # noqa: E402
from test_verdict_kinds import weak_unc_rows  # noqa: E402

from tpsviz.cli.main import main  # noqa: E402
from tpsviz.report.figures import display_name  # noqa: E402


@pytest.fixture(scope="module")
def uala(tmp_path_factory):
    path = tmp_path_factory.mktemp("uala_app") / "hotpot-like.csv"
    weak_unc_rows().to_csv(path, index=False)
    return path


def _board(at) -> dict:
    """{predictor as shown: TPS as shown} of the Overview's leaderboard."""
    board = at.dataframe[0].value
    return {str(p): float(v) for p, v in zip(board["predictor"], board["TPS"])}


def _cli(path, capsys, *more) -> dict:
    assert main(["score", str(path), "--n-boot", "0", "--json", *more]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_uala_log_gets_the_same_predictors_and_tps_on_both_faces(uala, capsys):
    cli = _cli(uala, capsys)
    at = fresh()
    upload(at, [("hotpot-like.csv", uala.read_bytes(), "text/csv")])
    assert set(at.sidebar.multiselect(key="pred").value) == set(cli["predictors"]) == {"uala@platt", "ref:step"}
    board = _board(at)
    assert set(board) == {display_name(n) for n in cli["predictors"]}
    for name, row in cli["predictors"].items():
        assert board[display_name(name)] == pytest.approx(row["tps_mean"], abs=6e-5), name
    # the one sentence, word for word as the CLI's note
    assert cli["settings"]["notes"][0] == SENTENCE
    shown = [i.value.replace("\\", "") for i in at.info]
    assert any(s.startswith(SENTENCE[:1].upper() + SENTENCE[1:] + ". Added: `uala@platt`") for s in shown), shown
    # the references are always on here (no switch to forget), as the sidebar says
    assert not [t for t in at.sidebar.toggle if t.key == "refs"]
    assert "Raw signals only" in texts(at)
    # "does worse than ref:step" is on the first screen: the conversion's verdict names the reference
    assert "ref:step" in next(m.value for m in at.markdown if "**uala@platt**" in m.value).replace("\\", "")


def test_a_recalibration_on_the_page_keeps_the_references(uala, capsys):
    at = fresh()
    upload(at, [("hotpot-like.csv", uala.read_bytes(), "text/csv")])
    at.switch_page("pages/views/recalibration.py").run()
    at.selectbox(key="rc_src").set_value("unc_uala")
    at.radio(key="rc_method").set_value("isotonic")
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert {"uala@platt", "uala@isotonic", "ref:step"} <= set(at.session_state["pred"])
    at.switch_page("pages/views/overview.py").run()
    board = _board(at)
    assert {display_name(n) for n in ("uala@platt", "uala@isotonic", "ref:step")} <= set(board)
    # the CLI's --recalibrate keeps them too, with the same TPS
    cli = _cli(uala, capsys, "--recalibrate", "platt")
    assert board[display_name("ref:step")] == pytest.approx(cli["predictors"]["ref:step"]["tps_mean"], abs=6e-5)
