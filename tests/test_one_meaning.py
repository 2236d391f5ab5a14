"""Issue 46, point 6: one meaning per word. "Reference" names only the ``ref:*`` yardsticks; the demo's
truthful column is the "true probability (synthetic)"; the base-rate line is the "constant forecast
(base rate)"; the demo has no predictor called ``base_rate`` (it is ``flat``). The dashboard's side is
``tests/app/test_one_meaning_pages.py``."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import tpsviz
from tpsviz.cli.main import main
from tpsviz.evaluation import tables as T
from tpsviz.evaluation.report import leaderboard_svg
from tpsviz.forecasts.references import is_reference as is_ref_forecaster
from tpsviz.report.figures import display_name, leaderboard_figure

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_data"
#: "reference" said of something that is not a ref:* yardstick
MISUSED = re.compile(r"\(reference\)|base-rate reference|reference rate|constant reference|truthful[^.;\n]{0,30}reference",
                     re.IGNORECASE)


def misused(text: str) -> list[str]:
    """Every place ``text`` calls a non-``ref:*`` thing a reference."""
    return [text[max(m.start() - 40, 0):m.end() + 40] for m in MISUSED.finditer(text)]


def prose(obj) -> list[str]:
    """Every string value of a JSON object (its keys left out)."""
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in prose(v)]
    if isinstance(obj, list):
        return [t for v in obj for t in prose(v)]
    return [obj] if isinstance(obj, str) else []


@pytest.mark.parametrize("path", sorted(DEMO.glob("*.csv")), ids=lambda p: p.name)
def test_the_demo_has_no_base_rate_predictor(path):
    header = pd.read_csv(path, nrows=0).columns
    assert not [c for c in header if "base_rate" in c], list(header)


def test_the_demo_constant_is_flat_at_the_base_rate():
    data = tpsviz.load(DEMO / "tau2-like.csv")
    assert "flat" in data.predictors and "base_rate" not in data.predictors
    assert len(set(data.forecasts("flat"))) == 1


@pytest.mark.parametrize("name", ["tau2-like", "webshop-like", "drift-like"])
def test_no_label_calls_a_non_reference_forecaster_a_reference(name):
    data = tpsviz.load(DEMO / f"{name}.csv")
    for p in data.predictors:
        label = display_name(p)
        assert ("reference" in label) == is_ref_forecaster(p), label
    assert display_name("truthful") == "truthful = true probability (synthetic)"
    assert display_name("ref:step") == "ref:step (reference forecaster)"


def test_the_evaluation_words_the_base_rate_as_a_constant_forecast(capsys):
    ev = tpsviz.evaluate(DEMO / "tau2-like.csv", n_boot=0)
    board = T.leaderboard_table(ev, display_name)
    assert "truthful = true probability (synthetic)" in set(board["predictor"])
    shown = "\n".join([*board["predictor"], *ev.verdict_sentences(), ev.to_html(), leaderboard_svg(ev),
                       *prose(ev.to_json())])  # (JSON keys are unchanged: its prose is checked)
    assert not misused(shown), misused(shown)
    fig = leaderboard_figure(ev.summary, {}, 0.0, 0.0, ref_value=float(ev.skill["tps_ref"].iloc[0]))
    assert [a.text for a in fig.layout.annotations] == ["constant forecast (base rate)"]
    assert "constant forecast (base rate)" in leaderboard_svg(ev)
    # the command line: the same words, and no predictor called base_rate
    assert main(["score", str(DEMO / "tau2-like.csv"), "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "constant forecast (base rate): 0." in out and not misused(out), misused(out)
    assert "base_rate" not in out and re.search(r"^flat\s", out, re.MULTILINE)


def test_a_degenerate_base_rate_is_said_as_a_constant_forecast():
    rows = pd.DataFrame([{"trajectory_id": f"r{i}", "step": t, "outcome": 0, "conf_a": 0.3 + 0.01 * (i % 5)}
                         for i in range(30) for t in (1, 2)])
    ev = tpsviz.evaluate(rows, n_boot=0)
    note = str(ev.skill.loc["a", "skill_note"])
    assert "the base rate is 0" in note and "constant forecast (base rate) is already perfect" in note
    assert not misused(note)
