"""Issue 46, point 5: one behaviour on both faces. A log whose only signal is raw (the HotpotQA-like UALA
log of issue 37) is converted the same way by default on the command line, in Python and in the
dashboard (one core decision, ``tpsviz.evaluation.reading.default_forecasts``), said in one sentence;
its references are scored beside the conversion, and ``--recalibrate`` never drops them. The
dashboard's side is ``tests/app/test_one_behaviour_pages.py``."""

from __future__ import annotations

import json

import pytest

import tpsviz
from test_verdict_kinds import weak_unc_rows
from tpsviz.cli.main import main
from tpsviz.evaluation.reading import DefaultForecasts, default_converted, default_forecasts, own_predictors
from tpsviz.io.tables.longform import from_frame

#: the sentence both faces say for the UALA log (the CLI as a note, the dashboard in its Overview)
SENTENCE = ("raw signal unc_uala converted to a probability by Platt scaling, cross-fitted by run (5 folds; "
            "docs/theory.md §6), as the log has no probability column of its own; the reference forecasters "
            "(ref:*) are scored beside it, the bar a real signal has to clear")


@pytest.fixture(scope="module")
def uala(tmp_path_factory):
    path = tmp_path_factory.mktemp("uala") / "hotpot-like.csv"
    weak_unc_rows().to_csv(path, index=False)
    return path


def _score(capsys, *args) -> dict:
    assert main([*map(str, args), "--n-boot", "200", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_default_is_one_decision():
    raw = from_frame(weak_unc_rows(), source="hotpot-like")
    plan = default_forecasts(raw)
    assert plan == DefaultForecasts(signals=("unc_uala",), method="platt", folds=5, references=True)
    assert plan.words() == SENTENCE
    # a log with a probability of its own converts nothing and adds no reference by default
    rows = weak_unc_rows().assign(conf_verbal=0.3)
    assert default_forecasts(from_frame(rows, source="x")) == DefaultForecasts()
    # a conversion of a raw signal is no probability of its own: the decision holds once converted
    converted, _ = default_converted(raw)
    assert "uala@platt" in converted.predictors and own_predictors(converted) == []
    assert default_forecasts(converted) == plan and converted.notes[-1] == SENTENCE
    # fewer folds when a class has fewer complete runs (every training fold holds both outcomes)
    few = weak_unc_rows()
    done = few.groupby("trajectory_id")["outcome"].transform("first")
    keep = few[(done != 1) | few["trajectory_id"].isin(few.loc[done == 1, "trajectory_id"].unique()[:3])]
    assert default_forecasts(from_frame(keep, source="x")).folds == 3


def test_the_cli_scores_the_conversion_and_the_references_and_says_so(uala, capsys):
    out = _score(capsys, "score", uala)
    assert sorted(out["predictors"]) == ["ref:step", "uala@platt"]
    assert out["settings"]["notes"][0] == SENTENCE
    assert out["predictors"]["ref:step"]["reference"] and not out["predictors"]["uala@platt"]["reference"]
    # the verdict of the conversion is said against the reference, on the first screen
    assert "ref:step" in out["predictors"]["uala@platt"]["verdict"]["text"]
    # the same as Python's front door, number for number
    ev = tpsviz.evaluate(uala, n_boot=200)
    for name in ("uala@platt", "ref:step"):
        assert out["predictors"][name]["tps_mean"] == pytest.approx(ev.summary.loc[name, "tps_mean"], abs=1e-12)
    assert main(["score", str(uala), "--n-boot", "0"]) == 0
    said = capsys.readouterr().out
    assert f"note: {SENTENCE}" in said and "are not scored as they are" not in said
    assert "no forecast in this log" not in said


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_recalibrate_never_drops_the_references(uala, capsys, method):
    plain = _score(capsys, "score", uala)
    asked = _score(capsys, "score", uala, "--recalibrate", method)
    assert "ref:step" in asked["predictors"] and f"uala@{method}" in asked["predictors"]
    assert asked["predictors"]["ref:step"]["tps_mean"] == pytest.approx(plain["predictors"]["ref:step"]["tps_mean"],
                                                                      abs=1e-12)
    if method == "platt":  # the default conversion and the asked one are the same predictor
        assert asked["predictors"]["uala@platt"]["tps_mean"] == pytest.approx(
            plain["predictors"]["uala@platt"]["tps_mean"], abs=1e-12)


def test_a_log_with_a_probability_and_recalibrate_keeps_asked_references(uala, tmp_path, capsys):
    path = tmp_path / "with-conf.csv"
    rows = weak_unc_rows()
    rows["conf_verbal"] = (0.2 + 0.1 * (rows["step"] % 3)).round(2)
    rows.to_csv(path, index=False)
    out = _score(capsys, "score", path, "--recalibrate", "platt", "--references")
    assert {"verbal", "verbal@platt", "uala@platt", "ref:step"} <= set(out["predictors"])
    out = _score(capsys, "score", path)
    assert sorted(out["predictors"]) == ["verbal"]  # a probability of its own: nothing added by default


def test_recalibrate_none_leaves_raw_signals_unconverted_and_keeps_the_references(uala, capsys):
    """``--recalibrate none`` (``recalibrate="none"``) turns the default conversion off: the raw signal is
    not scored, the references still are, and the reason is said; a log with probabilities is scored as
    without the option."""
    out = _score(capsys, "score", uala, "--recalibrate", "none")
    assert sorted(out["predictors"]) == ["ref:step"]
    assert not any("Platt" in n for n in out["settings"]["notes"])
    assert any("unc_uala" in n and "not scored" in n for n in out["settings"]["notes"])
    ev = tpsviz.evaluate(weak_unc_rows(), recalibrate="none", n_boot=0)
    assert ev.data.predictors == ["ref:step"]
    rows = weak_unc_rows().assign(conf_verbal=0.3)
    same = tpsviz.evaluate(rows, n_boot=0)
    none = tpsviz.evaluate(rows, recalibrate="none", n_boot=0)
    assert none.data.predictors == same.data.predictors
    assert none.points.summary["tps_mean"].equals(same.points.summary["tps_mean"])
    with pytest.raises(ValueError, match="platt, isotonic, beta, none"):
        tpsviz.evaluate(rows, recalibrate="nothing")
