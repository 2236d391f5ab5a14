"""``tpsviz.evaluate`` as the one front door (issue 48, point 1): any source a user holds (a path, a
dataset folder, an open file, a DataFrame, a pyarrow Table, a log already read), any outcome kind,
one ``Evaluation`` type, settings in two groups with keyword overrides.

Numbers are checked against an independent path: the same log read another way (the CSV file
against the DataFrame), or the per-run TPS recomputed by a plain loop from the log's rows.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tpsviz
from tpsviz.core.errors import SettingError
from tpsviz.evaluation import BinaryEvaluation, ContinuousEvaluation, MulticlassEvaluation, NothingToScore
from tpsviz.evaluation.out_of_core import DatasetEvaluation

DEMO = Path(__file__).resolve().parents[1] / "demo_data"
WEBSHOP = DEMO / "webshop-like.csv"
FAST = dict(n_boot=0)


@pytest.fixture(scope="module")
def webshop_frame() -> pd.DataFrame:
    return pd.read_csv(WEBSHOP)


@pytest.fixture(scope="module")
def from_path():
    return tpsviz.evaluate(WEBSHOP, **FAST)


def _log_score_by_loop(frame: pd.DataFrame, name: str) -> float:
    """Mean TPS of the log score under simple censoring with uniform weights, by a plain loop: a cut-off
    run counts as a failure; S(p, 1) = ln p, S(p, 0) = ln(1 − p) (ε = 1e-6)."""
    totals = []
    for _, run in frame.groupby("trajectory_id", sort=False):
        censored = bool(run["censored"].iloc[0]) if "censored" in run else False
        y = 0 if censored or pd.isna(run["outcome"].iloc[0]) else int(run["outcome"].iloc[0])
        s = 0.0
        for p in run[f"conf_{name}"]:
            if pd.isna(p):
                continue
            p = min(max(float(p), 1e-6), 1 - 1e-6)
            s += math.log(p) if y == 1 else math.log(1 - p)
        totals.append(s)
    return float(np.mean(totals))


def test_a_path_gives_the_binary_evaluation_whose_tps_a_loop_recomputes(from_path, webshop_frame):
    assert isinstance(from_path, tpsviz.Evaluation) and isinstance(from_path, BinaryEvaluation)
    assert from_path.kind == "binary" and from_path.settings.censoring == "exact"  # (the log has q_z)
    simple = tpsviz.evaluate(WEBSHOP, censoring="simple", **FAST)
    for name in ("truthful", "verbal"):
        assert simple.summary.loc[name, "tps_mean"] == pytest.approx(_log_score_by_loop(webshop_frame, name),
                                                                      rel=1e-9)


@pytest.mark.parametrize("wrap", ["frame", "renamed", "arrow", "file", "data"])
def test_every_source_of_one_log_gives_the_same_numbers(wrap, webshop_frame, from_path):
    kw = dict(FAST)
    if wrap == "frame":
        source = webshop_frame
    elif wrap == "renamed":
        source = webshop_frame.rename(columns={"trajectory_id": "run", "conf_truthful": "p_true"})
        kw["mapping"] = {"trajectory_id": "run", "conf_truthful": "p_true"}
    elif wrap == "arrow":
        source = pa.Table.from_pandas(webshop_frame)
    elif wrap == "file":
        source = io.BytesIO(WEBSHOP.read_bytes())
        source.name = "webshop-like.csv"
    else:
        source = tpsviz.load(str(WEBSHOP))
    ev = tpsviz.evaluate(source, **kw)
    assert ev.kind == "binary"
    pd.testing.assert_series_equal(ev.summary["tps_mean"], from_path.summary["tps_mean"], rtol=1e-12)
    assert ev.data.n_trajectories == from_path.data.n_trajectories == webshop_frame["trajectory_id"].nunique()


def test_a_dataframe_given_is_never_modified(webshop_frame):
    before = webshop_frame.copy(deep=True)
    renamed = webshop_frame.rename(columns={"trajectory_id": "run"})
    renamed_before = renamed.copy(deep=True)
    tpsviz.evaluate(webshop_frame, **FAST)
    tpsviz.evaluate(renamed, mapping={"trajectory_id": "run"}, **FAST)
    pd.testing.assert_frame_equal(webshop_frame, before)
    pd.testing.assert_frame_equal(renamed, renamed_before)
    assert not webshop_frame.attrs and not renamed.attrs


def test_a_dataset_folder_is_read_as_one_log(tmp_path, webshop_frame, from_path):
    cut = [0, 3000, 7000, len(webshop_frame)]
    for i in range(3):
        webshop_frame.iloc[cut[i]:cut[i + 1]].to_parquet(tmp_path / f"part-{i}.parquet")
    ev = tpsviz.evaluate(tmp_path, **FAST)
    pd.testing.assert_series_equal(ev.summary["tps_mean"], from_path.summary["tps_mean"], rtol=1e-12)


def test_the_three_outcome_kinds_answer_the_same_questions():
    kinds = {"webshop-like.csv": ("binary", BinaryEvaluation), "multiclass-like.csv": ("multiclass", MulticlassEvaluation),
             "continuous-like.csv": ("continuous", ContinuousEvaluation)}
    for name, (kind, cls) in kinds.items():
        ev = tpsviz.evaluate(DEMO / name, n_boot=200)
        assert isinstance(ev, tpsviz.Evaluation) and isinstance(ev, cls) and ev.kind == kind
        board = ev.leaderboard
        means = board["tps_mean"].to_numpy(dtype=float)
        assert list(board.index) == ev.order and np.all(np.diff(means[np.isfinite(means)]) <= 0)
        sentences = ev.verdict_sentences()
        assert len(sentences) == len(ev.summary)
        for pred, sentence in zip(ev.summary.index, sentences):
            assert sentence.startswith(pred)
        js = ev.to_json()
        assert set(js["predictors"]) == set(ev.summary.index)
        for pred, rec in js["predictors"].items():
            assert rec["tps_mean"] == pytest.approx(float(ev.summary.loc[pred, "tps_mean"]))
        page = ev.to_html()
        assert page.startswith("<!DOCTYPE html>") and ev.order[0] in page
        view = ev._repr_html_()
        assert "tpsviz evaluation" in view and all(p in view for p in ev.summary.index)


def test_the_other_kinds_state_their_score_and_interval_in_the_sentence():
    ev = tpsviz.evaluate(DEMO / "multiclass-like.csv", n_boot=200)
    r = ev.summary.loc["truthful"]
    sentence = ev.verdict_sentences()[list(ev.summary.index).index("truthful")]
    assert f"{r['tps_mean']:.4g}" in sentence and f"{r['tps_ci_low']:.4g}" in sentence
    assert "no verdict label" in sentence


def test_settings_and_read_settings_with_overrides(from_path):
    strict = tpsviz.Settings(alpha=1, beta=1, n_boot=500, cluster_by="run")
    ev = tpsviz.evaluate(WEBSHOP, settings=strict, n_boot=0)
    assert (ev.settings.alpha, ev.settings.beta, ev.settings.n_boot, ev.settings.cluster_by) == (1.0, 1.0, 0, "run")
    same = tpsviz.evaluate(WEBSHOP, alpha=1, beta=1, n_boot=0, cluster_by="run")
    pd.testing.assert_series_equal(ev.summary["tps_mean"], same.summary["tps_mean"])
    read = tpsviz.ReadSettings(mapping={"trajectory_id": "run"})
    frame = pd.read_csv(WEBSHOP).rename(columns={"trajectory_id": "run"})
    assert tpsviz.evaluate(frame, read=read, **FAST).data.n_trajectories == from_path.data.n_trajectories


@pytest.mark.parametrize("key, nearest", [("n_bot", "n_boot"), ("censor", "censoring"), ("maping", "mapping"),
                                          ("alfa", "alpha")])
def test_an_unknown_keyword_names_the_nearest_valid_one(key, nearest):
    with pytest.raises(SettingError, match=f"unknown setting '{key}': did you mean '{nearest}'"):
        tpsviz.evaluate(WEBSHOP, **{key: 1})


def test_a_setting_of_another_kind_is_refused_by_name():
    with pytest.raises(SettingError, match="alpha, recalibrate do not apply to a multi-class log"):
        tpsviz.evaluate(DEMO / "multiclass-like.csv", alpha=1, recalibrate="platt")
    with pytest.raises(SettingError, match="rule does not apply to a binary"):
        tpsviz.evaluate(WEBSHOP, rule="brier")
    with pytest.raises(SettingError, match="censoring does not apply to a continuous-outcome log"):
        tpsviz.evaluate(DEMO / "continuous-like.csv", censoring="simple")


def test_out_of_core_gives_the_same_numbers_as_memory_where_both_compute_them(tmp_path, webshop_frame):
    cut = [0, 4000, 8000, len(webshop_frame)]
    for i in range(3):
        webshop_frame.iloc[cut[i]:cut[i + 1]].to_parquet(tmp_path / f"part-{i}.parquet")
    same = dict(n_boot=200, cluster_by="run", interval="percentile", censoring="simple")
    memory = tpsviz.evaluate(tmp_path, engine="memory", **same)
    duck = tpsviz.evaluate(tmp_path, engine="duckdb", verdict_sample=0, **same)
    assert isinstance(duck, DatasetEvaluation) and duck.kind == "binary" and isinstance(duck, tpsviz.Evaluation)
    for col in ("tps_mean", "tps_se", "n_trajectories", "n_steps"):
        np.testing.assert_allclose(duck.summary[col].to_numpy(float), memory.summary[col].to_numpy(float), rtol=1e-9)
    np.testing.assert_allclose(duck.to_json()["predictors"]["truthful"]["auroc"],
                               memory.to_json()["predictors"]["truthful"]["auroc"], rtol=1e-9)
    assert duck.to_json()["settings"]["se"]["unit"] == "run" and "not computed" in duck.verdict_sentences()[0]
    assert duck.leaderboard.index.tolist() == memory.leaderboard.index.tolist()


def test_what_an_engine_cannot_compute_is_refused_with_its_remedy(tmp_path, webshop_frame):
    webshop_frame.to_parquet(tmp_path / "part-0.parquet")
    with pytest.raises(SettingError, match="recalibrate is not available with the out-of-core engine.*tpsviz.evaluate"):
        tpsviz.evaluate(tmp_path, engine="duckdb", recalibrate="platt")
    with pytest.raises(SettingError, match="engine='duckdb' reads Parquet, CSV and TSV tables"):
        tpsviz.evaluate(webshop_frame, engine="duckdb")
    with pytest.raises(SettingError, match="multiclass log has no out-of-core path yet"):
        tpsviz.evaluate(DEMO / "multiclass-like.csv", engine="duckdb")
    with pytest.raises(SettingError, match="engine must be one of"):
        tpsviz.evaluate(WEBSHOP, engine="spark")


def test_auto_scores_a_dataset_above_the_row_limit_out_of_core(tmp_path, webshop_frame, monkeypatch):
    webshop_frame.to_parquet(tmp_path / "part-0.parquet")
    webshop_frame.assign(trajectory_id=webshop_frame["trajectory_id"] + "-b").to_parquet(tmp_path / "part-1.parquet")
    monkeypatch.setenv("TPSVIZ_MAX_ROWS", str(len(webshop_frame)))
    ev = tpsviz.evaluate(tmp_path, n_boot=0, verdict_sample=300)
    assert isinstance(ev, DatasetEvaluation) and ev.result.sums.engine == "duckdb"
    assert ev.to_json()["settings"]["engine_reason"].startswith("auto: ")
    assert int(ev.summary["n_trajectories"].max()) == 2 * webshop_frame["trajectory_id"].nunique()
    assert "random sample of 300" in ev.to_json()["settings"]["verdicts"]


def test_a_log_without_forecast_or_reference_says_why():
    one_run = pd.DataFrame({"trajectory_id": ["a", "a"], "step": [0, 1], "outcome": [1, 1]})
    with pytest.raises(NothingToScore, match="holds no forecast") as info:
        tpsviz.evaluate(one_run, **FAST)
    assert info.value.data.n_trajectories == 1


def test_a_multiclass_dataframe_and_path_agree():
    frame = pd.read_csv(DEMO / "multiclass-like.csv")
    a = tpsviz.evaluate(frame, n_boot=0)
    b = tpsviz.evaluate(DEMO / "multiclass-like.csv", n_boot=0)
    assert a.kind == b.kind == "multiclass"
    pd.testing.assert_series_equal(a.summary["tps_mean"], b.summary["tps_mean"])


def test_the_three_log_containers_share_one_base_whose_counts_pandas_recounts():
    from tpsviz.core.data import RunLog
    from tpsviz.io.kinds.continuous import read_continuous
    from tpsviz.io.kinds.multiclass import read_multiclass

    for name, reader in (("webshop-like.csv", tpsviz.load), ("multiclass-like.csv", read_multiclass),
                         ("continuous-like.csv", read_continuous)):
        log, frame = reader(str(DEMO / name)), pd.read_csv(DEMO / name)
        assert isinstance(log, RunLog)
        assert log.n_runs == log.n_trajectories == frame["trajectory_id"].nunique()
        assert log.n_steps == len(frame)
        per_run = frame.groupby("trajectory_id")["outcome"].apply(lambda s: s.isna().all())
        if "censored" in frame:
            per_run = frame.groupby("trajectory_id")["censored"].first().astype(bool)
        assert log.n_censored == int(per_run.sum())
