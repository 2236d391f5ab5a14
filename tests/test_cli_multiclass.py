"""``tpsviz multiclass PATH``: text and JSON on the demo log, JSON equal to the core, no NaN in
JSON, and every bad input or option as one ``error:`` line with exit code 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.wording_checks import assert_says
from tpsviz.cli.main import main
from tpsviz.outcomes.multiclass_reliability import ovr_summary, reliability_ovr
from tpsviz.io.kinds.multiclass import read_multiclass
from tpsviz.outcomes.multiclass import tps_k
from tpsviz.core.schedules import parse_schedule
from tpsviz.synthetic.agent import simulate
from tpsviz.synthetic.multiclass import demo_frames


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo log and truth written as the lead writes them."""
    folder = tmp_path_factory.mktemp("mc")
    paths = {}
    for name, frame in demo_frames().items():
        frame.to_csv(folder / name, index=False, float_format="%.6g")
        paths[name] = folder / name
    return paths["multiclass-like.csv"], pd.read_csv(paths["multiclass-like_truth.csv"])


def _run(capsys, *args):
    rc = main(["multiclass", *map(str, args)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _strict_json(text: str):
    def bad(c):
        raise AssertionError(f"JSON holds {c}")
    return json.loads(text, parse_constant=bad)


def test_text_output(demo, capsys):
    path, truth = demo
    rc, out, err = _run(capsys, path, "--bootstrap", "200")
    assert rc == 0, err
    n_cens = int(truth["censored"].sum())
    labels = read_multiclass(path).labels  # the head: the log's labels, its runs, the censored ones
    head = assert_says(out, "multiclass-like.csv:", len(labels), len(truth), n_cens)
    assert f"labels ({', '.join(labels)})" in head and "censored" in head
    assert "log score" in out and "nats per run" in out and "higher is better, 0 is perfect" in out
    assert "(strictly proper)" in assert_says(out, "schedule: uniform", 1)  # w_t = 1, and its propriety
    assert "censoring: exact" in out  # default: the log has q vectors
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("-" * 20))
    names = [line.split()[0] for line in lines[rule + 1:rule + 5]]
    assert names[0] == "truthful" and names[-1] == "binary_view"  # best first
    assert "one-vs-rest reliability" in out and "success" in out.split("one-vs-rest")[1]
    rc, out, _ = _run(capsys, path, "--rule", "brier", "--schedule", "per-length", "--censoring", "simple",
                      "--censored-label", "failure", "--n-boot", "0")
    assert rc == 0
    assert "not proper" in out and "counts as label 'failure'" in out and "mean ± z·SE" in out
    rc, out, _ = _run(capsys, path, "--censoring", "complete", "--n-boot", "0")
    assert f"{n_cens:>8}" in out and "complete-case" in out  # excluded runs shown


@pytest.mark.parametrize("args,kw", [
    ((), dict(censoring="exact")),
    (("--rule", "brier", "--schedule", "front:0.9", "--censoring", "simple", "--censored-label", "partial",
      "--seed", "3", "--level", "0.9"), dict(rule="brier", schedule="front:0.9", censoring="simple",
                                             censored_label="partial", seed=3, level=0.9)),
])
def test_json_equals_the_core(demo, capsys, args, kw):
    path, _ = demo
    rc, out, err = _run(capsys, path, "--json", "--n-boot", "300", *args)
    assert rc == 0, err
    obj = _strict_json(out)
    log = read_multiclass(str(path))
    schedule = parse_schedule(kw.pop("schedule", "uniform"))
    res = tps_k(log, schedule=schedule, n_boot=300, **kw)
    assert obj["labels"] == log.labels and obj["n_runs"] == log.n_runs and obj["n_censored"] == log.n_censored
    assert obj["settings"]["schedule"] == schedule.spec and obj["settings"]["censoring"] == kw["censoring"]
    assert obj["ranking"] == list(res.summary["tps_mean"].sort_values(ascending=False).index)
    for name, row in res.summary.iterrows():
        rec = obj["predictors"][name]
        for key, v in row.items():
            assert rec[key] == (int(v) if key.startswith("n_") else float(v)), (name, key)
        table = reliability_ovr(log, name, n_boot=300, level=kw.get("level", 0.95), seed=kw.get("seed", 20260101))
        got = pd.DataFrame(rec["reliability"])
        pd.testing.assert_frame_equal(got, table.astype({"n": "int64", "n_runs": "int64", "bin": "int64"}),
                                      check_dtype=False)
        gaps = ovr_summary(table)
        for lab, g in gaps.iterrows():
            assert rec["ovr"][lab]["ece"] == g["ece"]


def test_json_never_holds_nan(demo, capsys):
    path, _ = demo
    # no bootstrap (no CI) and no clipping (binary_view scores ln 0 = -inf on 'partial' runs)
    rc, out, _ = _run(capsys, path, "--json", "--n-boot", "0", "--eps", "0", "--censoring", "complete")
    assert rc == 0
    obj = _strict_json(out)
    rec = obj["predictors"]["binary_view"]
    assert rec["tps_mean"] is None and rec["tps_ci_low"] is None
    assert obj["predictors"]["truthful"]["tps_ci_low"] is None and obj["predictors"]["truthful"]["tps_se"] > 0


def test_default_censoring_without_q_is_complete(demo, capsys, tmp_path):
    path, _ = demo
    df = pd.read_csv(path).drop(columns=["q_z__success", "q_z__partial", "q_z__failure"])
    p = tmp_path / "noq.csv"
    df.to_csv(p, index=False)
    rc, out, _ = _run(capsys, p, "--json", "--n-boot", "0")
    obj = _strict_json(out)
    assert rc == 0 and obj["censoring"] == "complete"
    assert obj["predictors"]["truthful"]["n_excluded_censored"] == obj["n_censored"] > 0
    rc, _, err = _run(capsys, p, "--censoring", "exact")
    assert rc == 2 and "have no q vector" in err and "--censored-label" in err


def test_a_binary_log_is_scored_as_score_scores_it(capsys, tmp_path):
    """``multiclass`` is an old spelling of ``score`` (issue 48): a binary log gets score's report."""
    p = tmp_path / "binary.csv"
    simulate("tau2-like", n_trajectories=20).steps.to_csv(p, index=False)
    rc, out, _ = _run(capsys, p, "--json", "--n-boot", "0")
    assert rc == 0 and main(["score", str(p), "--json", "--n-boot", "0"]) == 0
    assert json.loads(out) == json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("args,needle", [
    (("--n-boot", "10"), "--n-boot must be 0"),
    (("--bootstrap", "10"), "--n-boot must be 0"),  # the old spelling, a hidden alias
    (("--level", "1.5"), "--level"),
    (("--seed", "-1"), "--seed"),
    (("--eps", "0.7"), "--eps"),
    (("--schedule", "front"), "--schedule"),
    (("--schedule", "column"), "not available"),
    (("--censoring", "simple"), "needs --censored-label"),
    (("--censored-label", "maybe"), "--censored-label must be one of"),
])
def test_bad_options_are_one_line_errors(demo, capsys, args, needle):
    path, _ = demo
    rc, out, err = _run(capsys, path, *args)
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_bad_files_are_clear_errors(capsys, tmp_path):
    df = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [1, 2], "outcome": ["x", "x"],
                       "conf_m__x": [0.25, 0.9], "conf_m__y": [0.75, 0.3]})
    p = tmp_path / "bad.csv"
    df.to_csv(p, index=False)
    rc, _, err = _run(capsys, p)
    assert rc == 2 and "sum to 1" in err and "line 3" in err and "0.9" not in err
    rc, _, err = _run(capsys, tmp_path / "missing.csv")
    assert rc == 2 and "no such file" in err
    q = tmp_path / "log.xlsx"
    q.write_bytes(b"PK")
    rc, _, err = _run(capsys, q)
    assert rc == 2 and "unknown file type" in err


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["multiclass", "--help"])
    out = capsys.readouterr().out
    for opt in ("--rule", "--schedule", "--censoring", "--censored-label", "--n-boot", "--seed", "--level",
                "--json", "conf_<name>__<label>", "q_z__<label>"):
        assert opt in out, opt
    assert "--bootstrap" not in out  # (a hidden alias of --n-boot)
