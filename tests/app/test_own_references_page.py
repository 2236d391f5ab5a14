"""The Overview's comparisons say how each side does against its *own* references (ref:* fitted on that
side's runs only), the lines `compare` prints (tpsviz.forecasts.versus.versus_own_references), for two logs
and for groups of one log (issue 46, point 3: "plus each side against its own references")."""

from pathlib import Path

import pytest

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


def _table(at):
    return next(d.value for d in at.dataframe if "its best own reference" in d.value.columns)


def _row(table, side: str, pred: str):
    return table[(table["side"] == side) & (table["predictor"] == pred)].iloc[0]


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
    table = _table(at)
    names = {"baseline": "this log", "candidate": f"the candidate log ({WEB.name})"}
    for side, recs in (("candidate", cand), ("baseline", base)):
        for pred in ("verbal", "pessimistic"):
            row = _row(table, names[side], pred)
            assert row["its best own reference"] == recs[pred]["reference"]
            assert row.iloc[3] == pytest.approx(recs[pred]["delta"], rel=1e-9)
            assert row["SE"] == pytest.approx(recs[pred]["se"], rel=1e-9)
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
    table = _table(at)
    assert set(table["side"]) == {f"difficulty {g}" for g in dict.fromkeys(labels)}
    for side in dict.fromkeys(labels):
        rec = _own(data, labels, side, settings)["verbal"]
        row = _row(table, f"difficulty {side}", "verbal")
        assert row["its best own reference"] == rec["reference"]
        assert row.iloc[3] == pytest.approx(rec["delta"], rel=1e-9) and row["Δ/SE"] == pytest.approx(rec["z"], rel=1e-9)
        assert row["in words"] == {"beats": "beats it", "worse": "does worse", "unclear": "not clearly better"}[rec["outcome"]]
