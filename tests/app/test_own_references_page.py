"""The Overview's comparisons say how each side does against its *own* references (ref:* fitted on that
side's runs only), the lines `compare` prints (tpsviz.forecasts.versus.versus_own_references), for two logs
and for groups of one log (issue 46, point 3: "plus each side against its own references")."""

from pathlib import Path

from apptest_helpers import fresh, texts

import tpsviz
from tpsviz.diagnostics.combine import combine_logs
from tpsviz.diagnostics.groups import group_labels
from tpsviz.forecasts.references import add_references
from tpsviz.forecasts.versus import versus_best_reference

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "demo_data" / "webshop-like.csv"


def _plain(at) -> str:
    return texts(at).replace("\\", "")


def _own(data, labels, side, settings) -> dict:
    """A side's record computed here from its own runs alone, by the core's two steps."""
    part = data.subset((labels == side).to_numpy())
    return versus_best_reference(add_references(part, settings), settings)


def test_two_logs_each_against_its_own_references():
    at = fresh({"demo": "tau2-like"})
    at.session_state["ov_groups"] = True
    at.run()
    at.radio(key="grp_mode").set_value("this log with a second log").run()
    at.file_uploader(key="cand_upload").set_value((WEB.name, WEB.read_bytes(), "text/csv")).run()
    assert not at.exception and not at.error
    said = _plain(at)
    assert "**Each side against its own references**" in said
    cfg = at.session_state["_cfg"]
    settings = cfg.score_settings()
    both = combine_logs(tpsviz.load(ROOT / "demo_data" / "tau2-like.csv"), tpsviz.load(WEB))
    labels = group_labels(both, "log")
    cand = _own(both, labels, "candidate", settings)
    base = _own(both, labels, "baseline", settings)
    for pred in ("verbal", "pessimistic"):
        if pred in cfg.predictors:
            assert cand[pred]["words"].replace("\\", "") in said
            assert base[pred]["words"].replace("\\", "") in said
    # the candidate's own references differ from the baseline's: their records are not the same numbers
    assert cand["verbal"]["delta"] != base["verbal"]["delta"]


def test_groups_each_against_their_own_references():
    at = fresh({"demo": "tau2-like"})
    at.session_state["ov_groups"] = True
    at.run()
    at.selectbox(key="grp_by").set_value("difficulty").run()
    assert not at.exception and not at.error
    said = _plain(at)
    assert "**Each side against its own references**" in said
    settings = at.session_state["_cfg"].score_settings()
    data = tpsviz.load(ROOT / "demo_data" / "tau2-like.csv")
    labels = group_labels(data, "difficulty")
    for side in dict.fromkeys(labels):
        rec = _own(data, labels, side, settings)["verbal"]
        assert f"difficulty {side}, `verbal`: {rec['words']}".replace("\\", "") in said
