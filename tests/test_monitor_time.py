"""Issue 46, point 4: time where time is recorded.

- The readers expose each run's ``start_time``, ``end_time``, ``duration_s`` and ``cost`` where the log
  records them (tau2-bench, Inspect AI, traces), checked against the files read independently.
- ``monitor`` orders runs by the log's own time by default and says which field it used; file order is
  the fallback, named as such.
- No alarm is set up with fewer than one window of runs after the in-control part.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.cli.main import main
from tpsviz.core.tps import ScoreSettings
from tpsviz.diagnostics.monitoring.cusum import MIN_ALARM_RUNS
from tpsviz.diagnostics.monitoring.monitor import (log_time_column, monitor, order_sentence, run_order,
                                                  runs_after_needed)
from tpsviz.io.harness.times import seconds_between, time_metadata
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.io.traces.mapping import trace_log
from tpsviz.io.traces.spans import Span, TraceFile

ROOT = Path(__file__).resolve().parents[1]
TAU2 = ROOT / "tests/fixtures/tau2"
QWEN = TAU2 / "tau2_airline_qwen2.5-7b_trimmed.json"
INSPECT_OLD = ROOT / "tests/fixtures/inspect/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"


def _sims(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["simulations"]


def _by_start(sims: list[dict]) -> list[str]:
    """The simulation ids in order of their start_time, read with pandas (the oracle)."""
    t = pd.to_datetime(pd.Series([s["start_time"] for s in sims]))
    return [sims[i]["id"] for i in np.argsort(t.to_numpy(), kind="stable")]


# ------------------------------------------------------------------ the time fields


def test_seconds_between_equals_pandas_and_refuses_what_it_cannot_know():
    pairs = [("2025-07-29T22:42:15.699352", "2025-07-29T22:42:25.763175"),
             ("2024-11-05T13:32:37-05:00", "2024-11-05T18:33:01.876436+00:00"),
             ("2026-01-01T00:00:00Z", "2026-01-02T00:00:00.5Z")]
    for a, b in pairs:
        want = (pd.Timestamp(b) - pd.Timestamp(a)).total_seconds()
        assert seconds_between(a, b) == pytest.approx(want, abs=1e-6)
    assert seconds_between("2026-01-01T00:00:00", "2026-01-01T00:00:05+00:00") is None   # zone on one side only
    assert seconds_between("2026-01-02T00:00:00", "2026-01-01T00:00:00") is None         # end before start
    assert seconds_between("yesterday", "2026-01-01T00:00:00") is None and seconds_between(None, 3) is None


def test_time_metadata_keeps_what_is_recorded_and_guesses_nothing():
    assert time_metadata() == {}
    m = time_metadata("2026-01-01T00:00:00", "2026-01-01T00:01:00", None, 0.25)
    assert m == {"start_time": "2026-01-01T00:00:00", "end_time": "2026-01-01T00:01:00", "duration_s": 60.0,
                 "cost": 0.25}
    # a recorded duration wins over end − start; booleans, NaN and negative values are not numbers here
    assert time_metadata("2026-01-01T00:00:00", "2026-01-01T00:01:00", 12.5)["duration_s"] == 12.5
    assert time_metadata(None, None, True, float("nan")) == {}
    assert time_metadata("", "  ", -1.0, -2.0) == {}


@pytest.mark.parametrize("name", ["tau2_airline_qwen2.5-7b_trimmed.json",
                                  "tau2_airline_gpt-oss-120b_langchain_trimmed.json",
                                  "tau2v1_airline_whissle_trimmed.json"])
def test_tau2_runs_carry_the_simulations_times_and_cost(name):
    sims = {s["id"]: s for s in _sims(TAU2 / name)}
    data = tpsviz.load(TAU2 / name)
    t = data.trajectories.set_index("trajectory_id")
    for c in ("start_time", "end_time", "duration_s"):
        assert c in data.metadata_columns
    for tid, row in t.iterrows():
        s = sims[tid]
        assert row["start_time"] == s["start_time"] and row["end_time"] == s["end_time"]
        assert row["duration_s"] == pytest.approx(s["duration"], rel=1e-12)
        cost = s.get("agent_cost")
        assert (np.isnan(row["cost"]) if cost is None else row["cost"] == pytest.approx(cost)) if "cost" in t else cost is None
    assert log_time_column(data) == "start_time"


def test_tau2_end_time_falls_back_to_the_timestamp_and_duration_to_end_minus_start(tmp_path):
    obj = json.loads(QWEN.read_text(encoding="utf-8"))
    for s in obj["simulations"]:
        s.pop("end_time"), s.pop("duration")
    path = tmp_path / "no_end.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    t = tpsviz.load(path).trajectories.set_index("trajectory_id")
    for s in obj["simulations"]:
        if s["id"] in t.index:
            assert t.loc[s["id"], "end_time"] == s["timestamp"]
            want = (pd.Timestamp(s["timestamp"]) - pd.Timestamp(s["start_time"])).total_seconds()
            assert t.loc[s["id"], "duration_s"] == pytest.approx(want, abs=1e-6)


def test_an_old_inspect_log_starts_each_sample_at_its_first_event():
    from inspect_ai.log import read_eval_log
    from tpsviz.io.files import Limits
    from tpsviz.io.harness import read_harness_log

    log = read_harness_log(INSPECT_OLD.read_bytes(), INSPECT_OLD.name, "inspect", ReadOptions(), Limits())
    truth = {f"{s.id}-epoch{s.epoch}": s for s in read_eval_log(str(INSPECT_OLD)).samples}
    assert len(log.runs) == len(truth) == 10
    for r in log.runs:
        s = truth[r.trajectory_id]
        assert s.started_at is None   # (this log predates started_at)
        assert pd.Timestamp(r.metadata["start_time"]) == pd.Timestamp(s.events[0].timestamp)
        assert "duration_s" not in r.metadata and "cost" not in r.metadata


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from inspect_logs import write_logs_in_subprocess as write_logs

    return write_logs(tmp_path_factory.mktemp("inspect_time"))


def test_inspect_samples_carry_started_at_completed_at_and_total_time(inspect_logs):
    from inspect_ai.log import read_eval_log

    for kind in ("eval", "json", "chunked"):   # (the chunked log is the .eval one converted: its samples)
        data = tpsviz.load(inspect_logs[kind])
        t = data.trajectories.set_index("trajectory_id")
        truth = {f"{s.id}-epoch{s.epoch}": s
                 for s in read_eval_log(str(inspect_logs["json" if kind == "json" else "eval"])).samples}
        assert len(t) and set(t.index) <= set(truth)
        for tid, row in t.iterrows():
            s = truth[tid]
            assert pd.Timestamp(row["start_time"]) == pd.Timestamp(s.started_at)
            assert pd.Timestamp(row["end_time"]) == pd.Timestamp(s.completed_at)
            assert row["duration_s"] == pytest.approx(s.total_time, rel=1e-9)
        assert log_time_column(data) == "start_time"


def test_a_trace_run_starts_at_its_earliest_span_and_lasts_to_its_latest_end():
    spans = [Span("t1", "b", None, "call", 1_767_225_605.0, 1_767_225_607.5, {}, kind="model"),
             Span("t1", "a", None, "call", 1_767_225_600.0, 1_767_225_601.0, {}, kind="model"),
             Span("t2", "c", None, "call", 1_767_225_590.0, None, {}, kind="model")]
    runs = {r.trajectory_id: r for r in trace_log(TraceFile("otlp", spans=spans), ReadOptions()).runs}
    assert runs["t1"].metadata["start_time"] == "2026-01-01T00:00:00.000Z"
    assert runs["t1"].metadata["duration_s"] == pytest.approx(7.5)
    assert "duration_s" not in runs["t2"].metadata   # no end recorded: no duration


# ------------------------------------------------------------------ the order and its words


def _table(tmp_path, columns: dict) -> Path:
    rng = np.random.default_rng(3)
    rows = []
    for i in range(12):
        y = int(rng.random() < 0.5)
        for t in (1, 2):
            rows.append({"trajectory_id": f"r{i}", "step": t, "outcome": y, "conf_a": float(rng.uniform(0.1, 0.9)),
                         **{k: v[i] for k, v in columns.items()}})
    path = tmp_path / "log.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_the_log_time_column_is_chosen_by_name_start_time_first(tmp_path):
    stamps = [f"2026-01-{d:02d}T00:00:00Z" for d in range(12, 0, -1)]
    plain = tpsviz.load(_table(tmp_path, {"task_id": list(range(12))}))
    assert log_time_column(plain) is None   # a number is not a time
    assert order_sentence(plain, None) == "runs in file order: the log records no time"
    both = tpsviz.load(_table(tmp_path, {"task_id": list(range(12)), "timestamp": stamps, "Start_Time": stamps[::-1]}))
    assert log_time_column(both) == "Start_Time"
    assert order_sentence(both, "Start_Time") == "runs ordered by Start_Time (recorded by the log)"
    assert order_sentence(both, "task_id") == "runs ordered by the column 'task_id'"
    assert order_sentence(both, None) == "runs in file order, as chosen (the log records time in Start_Time)"
    only_ts = tpsviz.load(_table(tmp_path, {"timestamp": stamps}))
    assert log_time_column(only_ts) == "timestamp"
    codes, key, words, excluded = run_order(only_ts, "timestamp")
    assert list(only_ts.trajectories["trajectory_id"].to_numpy()[codes]) == [f"r{i}" for i in range(11, -1, -1)]


def _cli_json(args, capsys) -> dict:
    assert main(["monitor", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_monitor_orders_a_tau2_log_by_start_time_and_says_so(tmp_path, capsys):
    sims = _sims(QWEN)
    file_order = [s["id"] for s in sims]
    assert _by_start(sims) != file_order   # the fixture's start times are not in file order
    out = _cli_json([str(QWEN), "--window", "2"], capsys)
    assert [r["trajectory_id"] for r in out["runs"]] == _by_start(sims)
    assert out["settings"]["order_by"] == "start_time"
    assert out["settings"]["order_source"] == "runs ordered by start_time (recorded by the log)"
    assert [r["at"][:26] for r in out["runs"]] == sorted(s["start_time"] for s in sims)
    # the same file reversed: the same order, since the order is the log's own time
    obj = json.loads(QWEN.read_text(encoding="utf-8"))
    obj["simulations"] = obj["simulations"][::-1]
    rev = tmp_path / "reversed.json"
    rev.write_text(json.dumps(obj), encoding="utf-8")
    again = _cli_json([str(rev), "--window", "2"], capsys)
    assert [r["trajectory_id"] for r in again["runs"]] == _by_start(sims)
    assert again["windows"] == {k: v for k, v in out["windows"].items()}
    # the text says it in its first line
    assert main(["monitor", str(QWEN)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "10 runs ordered by start_time (recorded by the log); windows of 100 runs" in first
    # a column named on the command line is used, and said
    named = _cli_json([str(QWEN), "--order-by", "duration_s"], capsys)
    assert named["settings"]["order_source"] == "runs ordered by the column 'duration_s'"
    assert [r["trajectory_id"] for r in named["runs"]] == [s["id"] for s in sorted(sims, key=lambda s: s["duration"])]


def test_monitor_names_file_order_as_the_fallback(tmp_path, capsys):
    path = _table(tmp_path, {"task_id": list(range(11, -1, -1))})
    out = _cli_json([str(path), "--window", "4"], capsys)
    assert out["settings"]["order_by"] is None
    assert out["settings"]["order_source"] == "runs in file order: the log records no time"
    assert [r["trajectory_id"] for r in out["runs"]] == [f"r{i}" for i in range(12)]
    assert main(["monitor", str(path), "--window", "4"]) == 0
    assert "12 runs in file order: the log records no time;" in capsys.readouterr().out.splitlines()[0]


# ------------------------------------------------------------------ enough runs for an alarm


def test_no_alarm_is_set_up_without_one_window_of_runs_after_the_in_control_part():
    data = tpsviz.load(ROOT / "demo_data/drift-like.csv")
    settings = ScoreSettings(n_boot=0)
    n = data.n_trajectories
    window = 100
    need = runs_after_needed(window)
    assert need == max(window, MIN_ALARM_RUNS) and runs_after_needed(10) == MIN_ALARM_RUNS
    short = monitor(data, settings, by="timestamp", window=window, alarm_on="agent", baseline=n - need + 1).alarm
    assert short.reason.startswith(f"{need - 1:,} scored run(s) follow the {n - need + 1:,} in-control runs")
    assert f"at least {need:,}" in short.reason and short.statistic.size == 0 and not len(short.alarms)
    assert "No alarm on agent" in short.words()
    enough = monitor(data, settings, by="timestamp", window=window, alarm_on="agent", baseline=n - need).alarm
    assert enough.reason == "" and np.isfinite(enough.statistic).sum() == n
