"""Issue 36, "Done when": a trace file of each source, with a confidence attribute on its model-call
spans and its outcomes, scores with the same TPS as its long-form twin written by hand.

The OpenInference span table and the Langfuse export are the ones the reader tests build with the
libraries' own names and models (tests/test_traces_openinference.py, tests/test_traces_langfuse.py);
the OTLP twin is in tests/test_traces_otlp.py. The truth (which spans are steps, their confidence,
the outcomes) is taken from the raw objects the test made, never from the reader.
"""

from __future__ import annotations

import io
import json
import random

import numpy as np
import pandas as pd
import pytest

import tpsviz
from tpsviz.io.harness.runs import ReadOptions
from test_traces_langfuse import api_v4_records, make_runs
from test_traces_openinference import make_spans, phoenix_frame

CONF = ReadOptions(conf=(("verbal", "tpsviz.confidence"),))


def _outcomes(ids: list[str], seed: int) -> dict:
    """Per run: 1, 0, or None (censored, a budget stop), seeded."""
    rng = random.Random(seed)
    return {i: rng.choice([1, 1, 0, 0, 0, None]) for i in ids}


def _twin(steps: dict, outcomes: dict, path) -> None:
    """The long form written by hand: one row per (run, step) with the run's outcome."""
    rows = [{"trajectory_id": tid, "step": t, "outcome": outcomes[tid],
             "censored": outcomes[tid] is None, "conf_verbal": c}
            for tid, confs in steps.items() for t, c in enumerate(confs, 1)]
    pd.DataFrame(rows).to_csv(path, index=False)


def _same_tps(data, twin_path) -> None:
    twin = tpsviz.load(twin_path)
    assert sorted(data.trajectories["trajectory_id"].astype(str)) == sorted(twin.trajectories["trajectory_id"].astype(str))
    for censoring in ("complete", "simple", "upper"):
        s = tpsviz.ScoreSettings(censoring=censoring, n_boot=0)
        a, b = tpsviz.compute_tps(data, s), tpsviz.compute_tps(twin, s)
        assert a.summary.loc["verbal", "tps_mean"] == pytest.approx(b.summary.loc["verbal", "tps_mean"], rel=1e-12)
        per_a = a.per_trajectory.set_index("trajectory_id")["tps"].sort_index()
        per_b = b.per_trajectory.set_index("trajectory_id")["tps"].sort_index()
        np.testing.assert_allclose(per_a.to_numpy(), per_b.to_numpy(), rtol=1e-12)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    folder = tmp_path_factory.mktemp("phoenix")
    spans = make_spans(seed=3, n_traces=40)
    path = folder / "spans.parquet"
    phoenix_frame(spans).to_parquet(path, index=False)
    steps = {}
    for s in sorted(spans, key=lambda s: s["start"]):
        steps.setdefault(s["trace_id"], [])
        if s["kind"] == "LLM":
            steps[s["trace_id"]].append(s["attributes"]["tpsviz.confidence"])
    roots = {s["trace_id"]: s["span_id"] for s in spans if s["parent_id"] is None}
    return folder, path, steps, roots


def test_an_openinference_span_table_with_an_outcomes_table_scores_as_its_twin(phoenix):
    folder, path, steps, _ = phoenix
    outcomes = _outcomes(list(steps), seed=1)
    table = folder / "outcomes.csv"
    pd.DataFrame({"trajectory_id": list(outcomes), "outcome": [o for o in outcomes.values()],
                  "censored": [o is None for o in outcomes.values()]}).to_csv(table, index=False)
    data = tpsviz.load(path, outcomes=table, options=CONF)
    assert data.reading["format"] == "openinference"
    _twin(steps, outcomes, folder / "twin.csv")
    _same_tps(data, folder / "twin.csv")
    runs = data.trajectories.set_index("trajectory_id")
    assert set(runs["model"]) <= {"gpt-4o", "claude-sonnet-4"}  # llm.model_name, so compare --by model works


def test_a_phoenix_evaluations_table_gives_the_outcome(phoenix):
    """Evaluations of the root spans (label and score, as Phoenix saves SpanEvaluations as a table); a run
    without an evaluation has no outcome and is dropped, and counted."""
    folder, path, steps, roots = phoenix
    outcomes = {tid: o for tid, o in _outcomes(list(steps), seed=2).items() if o is not None}
    evaluated = dict(list(outcomes.items())[:-3])  # three runs never evaluated
    evals = pd.DataFrame({"context.span_id": [roots[t] for t in evaluated],
                          "label": ["correct" if o else "incorrect" for o in evaluated.values()],
                          "score": [float(o) for o in evaluated.values()]})
    table = folder / "correctness.csv"
    evals.to_csv(table, index=False)
    data = tpsviz.load(path, outcomes=table, options=CONF)
    assert "outcome: the evaluation 'correctness' of 'correctness.csv', its only one" in " ".join(data.notes)
    assert data.reading["dropped"] == {"no outcome": len(steps) - len(evaluated)}
    _twin({t: steps[t] for t in evaluated}, evaluated, folder / "twin_eval.csv")
    _same_tps(data, folder / "twin_eval.csv")


@pytest.fixture(scope="module")
def langfuse(tmp_path_factory):
    folder = tmp_path_factory.mktemp("langfuse")
    runs = make_runs(seed=5, n_traces=40)
    for run in runs:  # the confidence under the name the other sources use
        for o in run["observations"]:
            if o["type"] == "GENERATION":
                o["metadata"] = {"tpsviz": {"confidence": o["metadata"]["confidence"]}}
    path = folder / "export.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in api_v4_records(runs)) + "\n", encoding="utf-8")
    steps = {r["id"]: [o["metadata"]["tpsviz"]["confidence"]
                       for o in sorted(r["observations"], key=lambda o: o["start"]) if o["type"] == "GENERATION"]
             for r in runs}
    return folder, path, steps, runs


def test_a_langfuse_export_with_an_outcomes_table_scores_as_its_twin(langfuse):
    folder, path, steps, _ = langfuse
    outcomes = _outcomes(list(steps), seed=4)
    table = folder / "outcomes.parquet"
    pd.DataFrame({"trajectory_id": list(outcomes), "outcome": [np.nan if o is None else o for o in outcomes.values()],
                  "censored": [o is None for o in outcomes.values()]}).to_parquet(table, index=False)
    data = tpsviz.load(path, outcomes=table, options=ReadOptions(conf=(("verbal", "metadata.tpsviz.confidence"),)))
    assert data.reading["format"] == "langfuse"
    _twin(steps, outcomes, folder / "twin.csv")
    _same_tps(data, folder / "twin.csv")


def test_a_langfuse_score_gives_the_outcome(langfuse):
    """The trace-level BOOLEAN score 'success' the export holds is the outcome (--outcome success)."""
    folder, path, steps, runs = langfuse
    truth = {r["id"]: int(next(s for s in r["scores"] if s["name"] == "success")["value"]) for r in runs}
    data = tpsviz.load(path, outcome="success", options=ReadOptions(conf=(("verbal", "metadata.tpsviz.confidence"),)))
    got = dict(zip(data.trajectories["trajectory_id"].astype(str), data.trajectories["outcome"]))
    assert got == truth
    _twin(steps, truth, folder / "twin_score.csv")
    _same_tps(data, folder / "twin_score.csv")


def test_the_cli_scores_each_source_with_its_outcomes(phoenix, langfuse, capsys):
    from tpsviz.cli.main import main

    for folder, path, steps, _ in (phoenix, langfuse):
        outcomes = _outcomes(list(steps), seed=9)
        table = folder / "cli_outcomes.csv"
        pd.DataFrame({"trajectory_id": list(outcomes), "outcome": list(outcomes.values()),
                      "censored": [o is None for o in outcomes.values()]}).to_csv(table, index=False)
        field = "tpsviz.confidence" if path.suffix == ".parquet" else "metadata.tpsviz.confidence"
        code = main(["score", str(path), "--outcomes", str(table), "--conf", f"verbal={field}", "--n-boot", "0",
                     "--json"])
        out = capsys.readouterr()
        assert code == 0, out.err
        obj = json.loads(out.out)
        assert "verbal" in obj["predictors"] and obj["settings"]["reading"]["mapping"]["run"] == "one run per trace"
        assert main(["compare", str(path), "--by", "model", "--outcomes", str(table), "--conf", f"verbal={field}",
                     "--n-boot", "0"]) == 0
        capsys.readouterr()
        assert main(["monitor", str(path), "--outcomes", str(table), "--conf", f"verbal={field}", "--window", "10",
                     "--n-boot", "0"]) == 0
        capsys.readouterr()


def test_bytes_of_a_phoenix_table_read_as_the_file(phoenix):
    folder, path, steps, _ = phoenix
    outcomes = _outcomes(list(steps), seed=1)
    buf = io.BytesIO()
    pd.DataFrame({"trajectory_id": list(outcomes), "outcome": list(outcomes.values()),
                  "censored": [o is None for o in outcomes.values()]}).to_csv(buf, index=False)
    a = tpsviz.load((path.read_bytes(), "spans.parquet"), outcomes=(buf.getvalue(), "o.csv"), options=CONF)
    b = tpsviz.load(path, outcomes=(buf.getvalue(), "o.csv"), options=CONF)
    s = tpsviz.ScoreSettings(n_boot=0)
    assert tpsviz.compute_tps(a, s).summary.equals(tpsviz.compute_tps(b, s).summary)


@pytest.mark.parametrize("layout", ["json-list", "json-data", "jsonl", "legacy-list"])
def test_every_langfuse_layout_is_recognised_from_its_content(langfuse, tmp_path, layout):
    from test_traces_langfuse import legacy_traces

    _, path, steps, runs = langfuse
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    text = {"json-list": json.dumps(records), "json-data": json.dumps({"data": records, "meta": {"page": 1}}),
            "jsonl": path.read_text(encoding="utf-8"), "legacy-list": json.dumps(legacy_traces(runs))}[layout]
    name = tmp_path / ("export.jsonl" if layout == "jsonl" else "export.json")
    name.write_text(text, encoding="utf-8")
    data = tpsviz.load(name, outcome="success", options=ReadOptions(conf=(("verbal", "metadata.tpsviz.confidence"),)))
    assert data.reading["format"] == "langfuse" and len(data.trajectories) == len(steps)


def test_evaluations_as_phoenix_saves_them_give_the_outcome(phoenix, tmp_path):
    """SpanEvaluations.save writes Parquet indexed by context.span_id, the name in the 'arize' metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder, path, steps, roots = phoenix
    outcomes = {tid: o for tid, o in _outcomes(list(steps), seed=6).items() if o is not None}
    evals = pd.DataFrame({"context.span_id": [roots[t] for t in outcomes],
                          "label": ["correct" if o else "incorrect" for o in outcomes.values()],
                          "score": [float(o) for o in outcomes.values()],
                          "explanation": ["because"] * len(outcomes)}).set_index("context.span_id")
    table = pa.Table.from_pandas(evals)
    table = table.replace_schema_metadata({**table.schema.metadata, b"arize": json.dumps(
        {"eval_id": "00000000-0000-0000-0000-000000000002", "eval_name": "task_success",
         "eval_type": "SpanEvaluations"}).encode()})
    saved = tmp_path / "evaluations-1.parquet"
    pq.write_table(table, saved)
    data = tpsviz.load(path, outcomes=saved, options=CONF)
    assert "outcome: the evaluation 'task_success'" in " ".join(data.notes)
    _twin({t: steps[t] for t in outcomes}, outcomes, tmp_path / "twin.csv")
    _same_tps(data, tmp_path / "twin.csv")


def test_evaluate_takes_the_trace_options(langfuse):
    folder, path, steps, runs = langfuse
    conf = {"verbal": "metadata.tpsviz.confidence"}
    ev = tpsviz.evaluate(path, outcome="success", conf=conf, n_boot=0)
    data = tpsviz.load(path, outcome="success", options=ReadOptions(conf=(("verbal", "metadata.tpsviz.confidence"),)))
    assert ev.summary.loc["verbal", "tps_mean"] == tpsviz.compute_tps(data, tpsviz.ScoreSettings(n_boot=0)).summary.loc[
        "verbal", "tps_mean"]
    assert "'success'" in ev.to_json()["settings"]["reading"]["mapping"]["outcome"]  # the mapping, stated in JSON
