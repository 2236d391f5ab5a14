"""The binary reader recognises a multi-class or continuous-outcome log and says where it is scored
(docs/formats.md, "Other outcome types"); a binary log whose predictor names hold '__' stays binary.
(``score`` itself reads every kind: tests/test_cli_kinds.py.)"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import tpsviz
from pages._ui.wording import DASHBOARD
from tpsviz.cli.wording import CLI
from tpsviz.core.wording import word

DEMO = Path(__file__).resolve().parents[1] / "demo_data"


@pytest.mark.parametrize("name, words, function, command", [
    ("multiclass-like.csv", "this is a multi-class log", "tpsviz.evaluate", "tpsviz score"),
    ("continuous-like.csv", "this is a continuous-outcome log", "tpsviz.evaluate", "tpsviz score")])
def test_binary_reader_names_the_command(name, words, function, command):
    """From Python the message names the functions that score the log; the command line words the
    same error with its command, the dashboard with its page (tests/test_wording.py)."""
    with pytest.raises(tpsviz.LogFormatError) as err:
        tpsviz.load(DEMO / name)
    assert words in str(err.value) and function in str(err.value) and "python -m" not in str(err.value)
    assert command in word(err.value, CLI)
    assert "Other outcomes page" in word(err.value, DASHBOARD)


def test_double_underscore_in_a_binary_predictor_name_stays_binary():
    df = pd.read_csv(DEMO / "tau2-like.csv", nrows=200).rename(columns={"conf_truthful": "conf_gpt__v1"})
    data = tpsviz.from_frame(df)
    assert "gpt__v1" in data.predictors
    both = df.assign(conf_gpt__v2=df["conf_gpt__v1"]).drop(columns=[c for c in df.columns if c.startswith("conf_")
                                                                  and c != "conf_gpt__v1"])
    # every forecast column is conf_<name>__<label> and one name has two labels: a multi-class header
    with pytest.raises(tpsviz.LogFormatError, match="multi-class"):
        tpsviz.from_frame(both)
    mixed = both.assign(conf_plain=0.5)
    assert set(tpsviz.from_frame(mixed).predictors) == {"gpt__v1", "gpt__v2", "plain"}
