"""A probability read from a model's reply, and the prompt file (tpsviz.forecasts.replies, .prompts)."""

import math

import pytest
from hypothesis import given, strategies as st

from tpsviz.forecasts.prompts import load_prompts
from tpsviz.forecasts.replies import PROBLEMS, parse_probability

probabilities = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(probabilities, st.sampled_from(["probability: {}", "Probability = {}", "P(success) = {}",
                                       "Thinking about step 3 of 7...\nprobability: {}",
                                       "probability of success is {}", "**probability:** {}"]))
def test_a_labelled_number_reads_back_exactly(x, form):
    assert parse_probability(form.format(repr(x))).value == x


@given(st.integers(0, 100), st.sampled_from(["{}%", "about {} %", "{} percent", "probability: {}%"]))
def test_a_percentage_is_divided_by_100(k, form):
    assert parse_probability(form.format(k)).value == pytest.approx(k / 100, abs=0)


@given(probabilities)
def test_a_single_bare_number_in_the_unit_interval_is_taken(x):
    assert parse_probability(f"I think {x!r}.").value == x


@pytest.mark.parametrize("text, problem", [
    ("", "empty reply"), (None, "empty reply"), ("   \n", "empty reply"), (17, "empty reply"),
    ("Hard to say, it depends on the user.", "no number"),
    ("somewhere between 0.2 and 0.3", "several numbers"),
    ("70", "out of range"), ("probability: 1.01", "out of range"), ("probability: -0.1", "out of range"),
    ("probability: 150%", "out of range"), ("1e400", "out of range"),
])
def test_a_reply_without_one_usable_probability_names_its_problem(text, problem):
    r = parse_probability(text)
    assert r.value is None and r.problem == problem and problem in PROBLEMS


def test_the_last_labelled_number_wins_over_earlier_ones_and_over_other_numbers():
    text = "Steps left: 4. Earlier I said probability: 0.9, now probability: 0.35 given the error."
    assert parse_probability(text).value == 0.35


def test_the_shipped_prompts_load_and_the_judge_holds_the_transcript():
    p = load_prompts()
    assert "probability:" in p.self_report and "{transcript}" in p.judge
    text = p.judge_prompt("USER: book a flight\nASSISTANT: which date?")
    assert "ASSISTANT: which date?" in text and "{transcript}" not in text
    assert len(p.digest) == 64 and not math.isnan(float(int(p.digest, 16) % 7))


def test_an_edited_prompt_changes_the_digest(tmp_path):
    base = load_prompts()
    f = tmp_path / "mine.toml"
    f.write_text('self_report = "How likely?"\njudge = "Transcript: {transcript}. Probability?"\n')
    mine = load_prompts(f)
    assert mine.digest != base.digest and mine.source == "mine.toml"
    assert mine.judge_prompt("X") == "Transcript: X. Probability?\n"


@pytest.mark.parametrize("content, words", [
    ("judge = 'no placeholder'\nself_report = 'x'\n", "placeholder"),
    ("self_report = 'x'\n", "'judge'"),
    ("self_report = 3\njudge = '{transcript}'\n", "'self_report'"),
    ("this is = = not toml", "not valid TOML"),
])
def test_a_bad_prompt_file_is_named_without_its_content(tmp_path, content, words):
    f = tmp_path / "p.toml"
    f.write_text(content)
    with pytest.raises(ValueError) as e:
        load_prompts(f)
    assert words in str(e.value) and "p.toml" in str(e.value) and str(tmp_path) not in str(e.value)


def test_a_missing_prompt_file_is_named(tmp_path):
    with pytest.raises(ValueError, match="nope.toml: cannot be read"):
        load_prompts(tmp_path / "nope.toml")
