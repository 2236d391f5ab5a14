"""The Runs page's core (issue 46): the table of runs, its presets and filters, one run's steps and
largest moves, and a run's transcript split at the agent's steps — each against a plain loop over the
log's rows or messages."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.core.schedules import Schedule
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics import run_messages as RM
from tpsviz.diagnostics import runs as RU
from tpsviz.forecasts.references import add_references
from tpsviz.io.harness.transcripts import read_transcripts, render_prefix
from tpsviz.report.export import safe_csv
from tpsviz.report.figures.runs import run_figure

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
TAU1 = FIX / "taubench" / "tau1_gpt-4o-airline_trimmed.json"
TAU2 = FIX / "tau2" / "tau2_airline_gpt-oss-120b_langchain_trimmed.json"
TAU2_DIR = FIX / "tau2" / "tau2v1_airline_whissle_dirlayout"
EPS = 1e-6


@pytest.fixture(scope="module")
def webshop():
    """A demo log with censored runs and a q_z column, scored under exact censoring (q_Z from the log)."""
    data = tpsviz.load(ROOT / "demo_data" / "webshop-like.csv")
    settings = ScoreSettings(censoring="exact", schedule=Schedule("linear"))
    return data, tpsviz.compute_tps(data, settings, data.predictors)


def _log_score(p: float, y: float) -> float:
    p = min(max(p, EPS), 1 - EPS)
    return y * math.log(p) + (1 - y) * math.log(1 - p)


def _loop(data, predictor):
    """Per run, by a plain loop over the step rows: (outcome words, steps, first F, last F, TPS under
    the log score, linear weights w_t = t and exact censoring with the log's q_Z)."""
    runs = {}
    traj = data.trajectories.set_index("trajectory_id")
    for rid, rows in data.steps.groupby("trajectory_id", sort=False):
        row = traj.loc[rid]
        cens = bool(row["censored"])
        y = float(row["q_z"]) if cens else float(row["outcome"])
        f = [v for v in rows[f"conf_{predictor}"] if not np.isnan(v)]
        tps = sum(t * _log_score(p, y) for t, p in zip(rows["t"], rows[f"conf_{predictor}"]) if not np.isnan(p))
        words = "censored" if cens else ("success" if row["outcome"] == 1 else "failure")
        runs[str(rid)] = (words, len(rows), f[0] if f else np.nan, f[-1] if f else np.nan, tps)
    return runs


def test_the_table_of_runs_is_a_plain_loop_over_the_rows(webshop):
    data, result = webshop
    table = RU.run_table(data, result, data.predictors)
    assert len(table) == data.n_trajectories and table["run"].is_unique
    assert {"run", "outcome", "censored", "steps"} <= set(table.columns)
    for p in data.predictors:
        expect = _loop(data, p)
        for _, r in table.iterrows():
            words, steps, first, last, tps = expect[r["run"]]
            assert (r["outcome"], r["steps"]) == (words, steps)
            assert r["censored"] == (words == "censored")
            np.testing.assert_allclose([r[RU.first_column(p)], r[RU.last_column(p)]], [first, last], equal_nan=True)
            np.testing.assert_allclose(r[RU.tps_column(p)], tps, rtol=1e-9, atol=1e-9)


def test_presets_and_filters_keep_what_a_loop_keeps(webshop):
    data, result = webshop
    table = RU.run_table(data, result, data.predictors)
    for p in ("verbal", "pessimistic"):
        last = table[RU.last_column(p)]
        fails = [r for r, o, f in zip(table["run"], table["outcome"], last) if o == "failure" and f >= 0.8]
        wins = [r for r, o, f in zip(table["run"], table["outcome"], last) if o == "success" and f <= 0.2]
        assert RU.select_runs(table, preset="confident failures", predictor=p)["run"].tolist() == fails
        assert RU.select_runs(table, preset="doubted successes", predictor=p)["run"].tolist() == wins
    assert len(RU.select_runs(table, preset="confident failures", predictor="verbal")) > 0
    kept = RU.select_runs(table, choices={"outcome": ["censored"], "difficulty": ["hard"]},
                          ranges={"steps": (10, 25), RU.tps_column("verbal"): (-60.0, 0.0)})
    by_loop = [r["run"] for _, r in table.iterrows() if r["outcome"] == "censored" and 10 <= r["steps"] <= 25
               and -60 <= r[RU.tps_column("verbal")] <= 0]
    assert kept["run"].tolist() == by_loop  # (difficulty is no column of the table: that choice is ignored)
    assert RU.select_runs(table, choices={"outcome": []}).shape == table.shape
    with pytest.raises(ValueError, match="no preset"):
        RU.preset_mask(table, "confident successes", "verbal")


def test_preset_counts_are_a_loops_counts_without_a_score(webshop):
    """The Overview's links say how many runs each preset keeps, from the log alone (no TPS)."""
    data, _ = webshop
    counts = RU.preset_counts(data, data.predictors)
    for p in data.predictors:
        runs = _loop(data, p).values()
        assert counts.loc[p, "confident failures"] == sum(w == "failure" and f >= 0.8 for w, _, _, f, _ in runs)
        assert counts.loc[p, "doubted successes"] == sum(w == "success" and f <= 0.2 for w, _, _, f, _ in runs)
    assert counts["confident failures"].sum() > 0


def test_one_run_s_steps_are_its_rows_and_its_contributions_add_up_to_its_tps(webshop):
    data, result = webshop
    table = RU.run_table(data, result, data.predictors)
    censored = table.loc[table["censored"], "run"].iloc[0]
    complete = table.loc[~table["censored"], "run"].iloc[0]
    for rid in (censored, complete):
        steps = RU.run_steps(data, result, rid, ["verbal", "truthful"])
        rows = data.steps[data.steps["trajectory_id"] == rid]
        assert steps["step"].tolist() == rows["step"].tolist()
        y = RU.run_facts(table, rid, result)
        label = y["q_z used"] if y["censored"] else (1.0 if y["outcome"] == "success" else 0.0)
        for p in ("verbal", "truthful"):
            np.testing.assert_array_equal(steps[f"F {p}"], rows[f"conf_{p}"])
            by_loop = [t * _log_score(f, label) for t, f in zip(rows["t"], rows[f"conf_{p}"])]
            np.testing.assert_allclose(steps[f"w·S {p}"], by_loop, rtol=1e-9)
            np.testing.assert_allclose(steps[f"w·S {p}"].sum(), table.set_index("run").at[rid, RU.tps_column(p)])
    with pytest.raises(KeyError):
        RU.run_steps(data, result, "no such run", ["verbal"])
    assert RU.run_facts(table, "no such run") is None and RU.find_run(data, "no such run") is None


def _moves_by_loop(steps, f, k):
    pairs, prev = [], None
    for s, v in zip(steps, f):
        if np.isnan(v):
            continue
        if prev is not None and v != prev[1]:
            pairs.append((s, prev[0], prev[1], v, v - prev[1]))
        prev = (s, v)
    pairs.sort(key=lambda x: (-abs(x[4]), x[0]))
    return pairs[:k]


@pytest.mark.parametrize("seed", range(20))
def test_largest_moves_are_the_largest_jumps_between_forecasts(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 15))
    steps = np.arange(1, n + 1) + int(rng.integers(0, 2))  # numbered from 1 or 2
    f = np.round(rng.uniform(size=n), 1)  # rounding makes ties and zero moves
    f[rng.uniform(size=n) < 0.2] = np.nan
    got = RU.largest_moves(steps, f, k=3)
    want = _moves_by_loop(steps, f, 3)
    assert list(got.columns) == ["step", "from_step", "before", "after", "move"]
    assert len(got) == len(want)
    flat = [float(v) for r in got.itertuples(index=False) for v in r]
    assert flat == pytest.approx([float(v) for r in want for v in r])


def test_run_moves_lists_every_predictor_s_largest_first():
    steps = pd.DataFrame({"step": [1, 2, 3, 4], "F a": [0.1, 0.2, 0.9, 0.8], "F b": [0.5, 0.1, 0.1, np.nan]})
    moves = RU.run_moves(steps, ["a", "b"], k=2)
    assert moves[["predictor", "step"]].values.tolist() == [["a", 3], ["b", 2], ["a", 2]]
    np.testing.assert_allclose(moves["move"], [0.7, -0.4, 0.1])
    assert RU.run_moves(steps.iloc[:1], ["a"]).empty


def test_cost_and_duration_columns_are_read_where_the_log_records_them(tmp_path):
    rows = []
    for i in range(4):
        for t in (1, 2):
            rows.append({"trajectory_id": f"r{i}", "step": t, "outcome": i % 2, "conf_a": 0.5,
                         "agent_cost": 0.01 * i, "duration_s": 10.0 + i, "costume": "x", "model": "=cmd|1",
                         "task": f"task{i // 2}"})
    path = tmp_path / "log.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    data = tpsviz.load(path)
    assert RU.recorded_columns(data) == {"cost": ["agent_cost"], "duration": ["duration_s"]}
    table = RU.run_table(data, tpsviz.compute_tps(data), ["a"])
    assert table["agent_cost"].tolist() == pytest.approx([0.0, 0.01, 0.02, 0.03])
    assert table["task"].tolist() == ["task0", "task0", "task1", "task1"] and "costume" not in table
    assert "'=cmd|1" in safe_csv(table)  # the export neutralises a formula of the log


def test_a_harness_log_s_table_names_its_reasons_and_treatments():
    data = add_references(tpsviz.load(TAU2))
    table = RU.run_table(data, tpsviz.compute_tps(data), data.predictors)
    assert data.predictors and table[RU.tps_column(data.predictors[0])].notna().any()
    treat = {r["reason"]: r["treatment"] for r in data.reading["treatment"]}
    for _, r in table.iterrows():
        assert r["treatment"] == treat[r["termination reason"]]
        assert r["censored"] == (r["treatment"] == "censored")
    assert table["task"].notna().all() and set(table["model"]) == {"openai/gpt-oss-120b"}


def _step_by_loop(messages, i):
    """The agent step whose prefix first holds message i: one more than the agent messages before it."""
    return sum(1 for m in messages[:i] if isinstance(m, dict) and m.get("role") == "assistant") + 1


@pytest.mark.parametrize("path", [TAU1, TAU2, TAU2_DIR], ids=["tau-bench", "tau2", "tau2-folder"])
def test_a_transcript_is_split_where_the_replay_splits_it(path):
    transcripts, _ = read_transcripts(path)
    assert transcripts
    for tr in transcripts[:6]:
        msgs = RM.transcript_steps(tr)
        assert [m.index for m in msgs] == [i for i, m in enumerate(tr.messages) if isinstance(m, dict)]
        for m in msgs:
            assert m.step == _step_by_loop(tr.messages, m.index)
        for t in range(1, tr.steps + 1):  # the messages up to step t are H_t, as the replay writes it
            rendered = "\n\n".join(f"### {m.label}\n{m.text}" for m in msgs if m.step <= t)
            assert rendered == render_prefix(tr, t, max_chars=10**9)[0]
        agents = [m for m in msgs if m.kind.startswith("agent")]
        assert len(agents) == tr.steps and [m.step for m in agents] == list(range(1, tr.steps + 1))


def test_message_kinds_tell_users_agents_tool_calls_and_results_apart():
    tr = next(t for t in read_transcripts(TAU1)[0] if any(m.get("role") == "tool" for m in t.messages))
    msgs = RM.transcript_steps(tr)
    kinds = {m.kind for m in msgs}
    assert {"system", "user", "agent", "agent (tool call)", "tool result"} <= kinds
    call = next(m for m in msgs if m.kind == "agent (tool call)")
    assert "[tool call]" in call.text
    result = next(m for m in msgs if m.kind == "tool result")
    assert result.label.startswith("TOOL RESULT")


def test_one_run_s_transcript_from_a_path_from_bytes_and_from_a_folder():
    tr = read_transcripts(TAU2)[0][2]
    same = RM.read_run_transcript("upload.json", tr.trajectory_id, raw=TAU2.read_bytes())
    assert same == RM.read_run_transcript(TAU2, tr.trajectory_id) == tr
    assert RM.read_run_transcript(TAU2, "no such run") is None
    folder = read_transcripts(TAU2_DIR)[0][0]
    assert RM.read_run_transcript(TAU2_DIR, folder.trajectory_id) == folder
    with pytest.raises(tpsviz.LogFormatError, match="index of a tau2-bench results folder"):
        RM.read_run_transcript("results.json", folder.trajectory_id, raw=(TAU2_DIR / "results.json").read_bytes())
    with pytest.raises(tpsviz.LogFormatError) as e:
        RM.read_run_transcript("log.csv", "r1", raw=b"trajectory_id,step,outcome,conf_a\nSECRET-9,1,1,0.5\n")
    assert "SECRET" not in str(e.value)  # a message names the file, never its content


def test_which_logs_have_messages_and_long_text_is_cut():
    assert RM.has_messages(tpsviz.load(TAU1).reading) and RM.has_messages({"format": "otlp"})
    assert not RM.has_messages(tpsviz.load(ROOT / "demo_data" / "tau2-like.csv").reading)
    assert not RM.has_messages(None)
    assert RM.cut_text("abcdef", 4) == ("abcd", 2) and RM.cut_text("abc", 4) == ("abc", 0)


def test_the_run_figure_draws_the_run_s_steps_and_marks_its_moves(webshop):
    data, result = webshop
    rid = data.trajectories["trajectory_id"].iloc[0]
    steps = RU.run_steps(data, result, rid, ["verbal", "truthful"])
    moves = RU.run_moves(steps, ["verbal", "truthful"])
    fig = run_figure(steps, ["verbal", "truthful"], {"verbal": "#E69F00", "truthful": "#000000"}, moves,
                     int(steps["step"].iloc[1]), 1.0, False, None, 0.0, 0.0, "Run <b>x</b>")
    forecast = [tr for tr in fig.data if tr.name == "verbal" and tr.yaxis == "y"]
    assert len(forecast) == 1 and list(forecast[0].y) == pytest.approx(list(steps["F verbal"]))
    assert list(forecast[0].customdata) == list(steps["step"])  # a click names its step
    marked = [tr for tr in fig.data if str(tr.name).startswith("largest moves")]
    assert sum(len(tr.x) for tr in marked) == len(moves)
    assert {tr.marker.color for tr in marked} <= {"#E69F00", "#000000"}  # each circle in its predictor's colour
    assert json.loads(fig.to_json())["layout"]["yaxis2"]["title"]["text"].startswith("w_t·S (nats")


def test_sorting_the_table_keeps_ties_in_order_and_missing_values_last():
    table = pd.DataFrame({"run": ["a", "b", "c", "d"], "x": [2.0, np.nan, 1.0, 2.0], "task": ["t2", "t1", "t10", "t1"]})
    assert RU.sort_runs(table, "x")["run"].tolist() == ["c", "a", "d", "b"]
    assert RU.sort_runs(table, "x", descending=True)["run"].tolist() == ["a", "d", "c", "b"]
    assert RU.sort_runs(table, "task")["run"].tolist() == ["b", "d", "c", "a"]
    with pytest.raises(ValueError, match="no column"):
        RU.sort_runs(table, "nope")
