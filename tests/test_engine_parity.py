"""Engine parity as a property (issue 12, "identical numbers"): on random small logs, sound or
defective, the in-memory reader with :func:`tpsviz.compute_tps` and the DuckDB engine over the
same rows cut into files either both refuse the log or both score it, and then give the same
per-trajectory TPS (relative difference ≤ 1e-12), counts and bootstrap intervals.

The logs mix what real files hold: censored runs with and without q_Z, missing and NaN
forecasts, forecasts at 0 and 1 and a rounding error outside [0, 1], steps not numbered 1..T,
ids with surrounding whitespace, an outcome given on some rows only; and, now and then, a
defect (a duplicate step, a forecast outside [0, 1], an outcome that changes within a run, an
outcome other than 0/1). The settings are drawn too: α, β, schedule, censoring mode and ε.
"""

from __future__ import annotations

from dataclasses import replace

import tempfile
from pathlib import Path

import numpy as np
import pytest
import pandas as pd
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tpsviz
from tpsviz.io.dataset import open_dataset
from tpsviz.diagnostics.leaderboard import skill_table
from tpsviz.engines.runsums import score_from_sums
from tpsviz.engines.duck import sums_duckdb
from tpsviz.core.errors import LogFormatError
from tpsviz.core.schedules import parse_schedule
from tpsviz.core.tps import ScoreSettings, compute_tps

COUNTS = ["n_trajectories", "n_censored", "n_steps", "n_missing", "n_clipped", "n_qz_fallback",
          "n_excluded_censored", "n_no_forecast"]

FORECASTS = st.one_of(
    st.floats(0.0, 1.0),
    st.sampled_from([0.0, 1.0, 0.5, None, float("nan"), 1.0 + 1e-12, -1e-12, 1e-7, 1.0 - 1e-7]),
)
DEFECTS = [None, None, None, None, "duplicate step", "forecast 1.5", "outcome changes", "outcome 2", "step 1.5",
           "no id", "q_z 2", "weight -1", "censored and outcome"]


@st.composite
def logs(draw):
    """(long frame, number of files): a random log as its rows, in a random row order."""
    n_runs = draw(st.integers(1, 8))
    partial = draw(st.booleans())
    weighted = draw(st.booleans())
    marked = draw(st.booleans())  # a 'censored' column beside the outcome
    rows = []
    for i in range(n_runs):
        length = draw(st.integers(1, 6))
        start = draw(st.sampled_from([1, 1, 0, 3]))
        gap = draw(st.sampled_from([1, 1, 2]))
        kind = draw(st.sampled_from(["success", "failure", "censored"]))
        y = {"success": 1.0, "failure": 0.0, "censored": None}[kind]
        qz = draw(st.sampled_from([None, 0.25, 0.9])) if kind == "censored" else None
        tid = draw(st.sampled_from([f"r{i}", f" r{i}", f"r{i}\u3000", f"run é{i}"]))
        for t in range(length):
            given_y = y
            if partial and y is not None and t > 0 and draw(st.booleans()):
                given_y = None  # the outcome given on some rows of a finished run only
            row = {"trajectory_id": tid, "step": start + gap * t, "outcome": given_y, "q_z": qz,
                   "conf_a": draw(FORECASTS), "conf_b": draw(FORECASTS)}
            if weighted:
                row["weight"] = draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))
            if marked:
                row["censored"] = kind == "censored"
            rows.append(row)
    df = pd.DataFrame(rows)
    defect = draw(st.sampled_from(DEFECTS))
    at = draw(st.integers(0, len(df) - 1))
    if defect == "duplicate step":
        df = pd.concat([df, df.iloc[[at]]], ignore_index=True)
    elif defect == "forecast 1.5":
        df.loc[at, "conf_a"] = 1.5
    elif defect == "outcome changes" and df.loc[at, "outcome"] in (0.0, 1.0):
        df.loc[at, "outcome"] = 1.0 - df.loc[at, "outcome"]
    elif defect == "outcome 2":
        df.loc[at, "outcome"] = 2.0
    elif defect == "step 1.5":
        df["step"] = df["step"].astype(float)
        df.loc[at, "step"] = 1.5
    elif defect == "no id":
        df.loc[at, "trajectory_id"] = draw(st.sampled_from(["", " ", None]))
    elif defect == "q_z 2":
        df.loc[at, "q_z"] = 2.0
    elif defect == "weight -1" and weighted:
        df.loc[at, "weight"] = -1.0
    elif defect == "censored and outcome" and marked:
        df.loc[at, "censored"] = not df.loc[at, "censored"]
    order = draw(st.permutations(range(len(df))))
    return df.iloc[list(order)].reset_index(drop=True), draw(st.integers(1, 3))


SETTINGS = st.builds(
    lambda ab, sched, cens, eps: ScoreSettings(alpha=ab[0], beta=ab[1], schedule=parse_schedule(sched),
                                               censoring=cens, eps=eps, n_boot=50),
    st.sampled_from([(0.0, 0.0), (1.0, 1.0), (2.0, 3.0), (-0.5, -0.5), (0.5, 2.0)]),
    st.sampled_from(["uniform", "linear", "front:0.9", "back:0.8:10", "per-length", "endpoint"]),
    st.sampled_from(["simple", "exact", "complete", "upper"]),
    st.sampled_from([1e-6, 0.0]),
)


def _write(df: pd.DataFrame, folder: Path, parts: int) -> Path:
    cuts = np.linspace(0, len(df), parts + 1).astype(int)
    for k in range(parts):  # (runs cut across files: rows come in a random order)
        df.iloc[cuts[k]:cuts[k + 1]].to_parquet(folder / f"part-{k}.parquet")
    return folder


def _in_memory(df: pd.DataFrame, settings: ScoreSettings):
    """What ``tpsviz score`` computes in memory: TPS and the skill table (score_from_sums gives both)."""
    try:
        data = tpsviz.from_frame(df.copy())
        ref = compute_tps(data, replace(settings, interval="percentile"))  # (the engines' interval)
        skill_table(data, settings, n_boot=0, result=ref)
        return ref, None
    except (LogFormatError, ValueError) as exc:
        return None, exc


def _duckdb(folder: Path, settings: ScoreSettings):
    try:
        return score_from_sums(sums_duckdb(open_dataset(folder), settings), settings), None
    except (LogFormatError, ValueError) as exc:
        return None, exc


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs(), score=SETTINGS, by_column=st.booleans())
def test_both_engines_refuse_or_both_score_alike(log, score, by_column):
    df, parts = log
    if by_column and "weight" in df:  # the weights given in the log
        score = ScoreSettings(alpha=score.alpha, beta=score.beta, schedule=parse_schedule("column"),
                              censoring=score.censoring, eps=score.eps, n_boot=score.n_boot)
    with tempfile.TemporaryDirectory() as tmp:
        ref, ref_err = _in_memory(df, score)
        got, got_err = _duckdb(_write(df, Path(tmp), parts), score)
    assert (ref_err is None) == (got_err is None), (f"in memory: {ref_err!r}", f"duckdb: {got_err!r}")
    event("refused by both" if ref is None else "scored by both")
    if ref is None:
        return
    m1 = ref.tps_matrix()
    m2 = got.per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps")
    m2 = m2.reindex(index=m1.index, columns=m1.columns)
    a, b = m1.to_numpy(), m2.to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.array_equal(a[np.isinf(a)], b[np.isinf(a)])  # −∞ (ε = 0) on the same runs
    ok = np.isfinite(a)
    rel = np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), 1e-300)
    assert rel.size == 0 or rel.max() <= 1e-12, rel.max()
    s1, s2 = ref.summary, got.summary.loc[ref.summary.index]
    assert (s1[COUNTS].to_numpy() == s2[COUNTS].to_numpy()).all(), (s1[COUNTS], s2[COUNTS])
    for col in ("tps_mean", "tps_se", "tps_step_mean", "tps_ci_low", "tps_ci_high"):
        np.testing.assert_allclose(s2[col].to_numpy(float), s1[col].to_numpy(float), rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def client():
    from tpsviz.engines.dask_engine import cluster

    with cluster(n_workers=2) as c:
        yield c


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs(), score=SETTINGS)
def test_dask_refuses_or_scores_as_duckdb(client, log, score):
    """The Dask engine (partitions = files, runs cut across them) against the DuckDB engine."""
    from tpsviz.engines.dask_engine import sums_dask

    df, parts = log
    with tempfile.TemporaryDirectory() as tmp:
        ds = open_dataset(_write(df, Path(tmp), parts))
        got, got_err = _duckdb(Path(tmp), score)
        try:
            dk, dk_err = score_from_sums(sums_dask(ds, score, client=client), score), None
        except (LogFormatError, ValueError) as exc:
            dk, dk_err = None, exc
    if got_err is None and dk_err is not None and "Dask engine does not compute across partitions" in str(dk_err):
        event("positions of runs not numbered 1..T: refused by Dask, as documented")
        return
    assert (got_err is None) == (dk_err is None), (f"duckdb: {got_err!r}", f"dask: {dk_err!r}")
    event("refused by both" if got is None else "scored by both")
    if got is None:
        return
    a = got.per_trajectory.set_index(["trajectory_id", "predictor"])["tps"]
    b = dk.per_trajectory.set_index(["trajectory_id", "predictor"])["tps"].reindex(a.index)
    np.testing.assert_allclose(b.to_numpy(float), a.to_numpy(float), rtol=1e-12)
    assert (got.summary[COUNTS].to_numpy() == dk.summary.loc[got.summary.index, COUNTS].to_numpy()).all()


# ---------------------------------------------------------------- text cells of CSV files

NUMBER_TEXT = ["0.5", " 0.5", "0.5 ", ".5", "5e-1", "5E-1", "0.50", "+0.5", "-0.0", "1", "0", "1.0", "0.",
               "1.0000000000001", "1e-300", "1e400", "-1e400", "inf", "-inf", "Infinity", "NaN", "nan", "-nan",
               "", " ", "NA", "n/a", "null", "None", "NULL", "-", "abc", "0,5", "1_0", "0x1", "1/2", "½", "٠.٥",
               "0.5\u00a0", "\u20030.5", "1e", "e1", "++1", "1..0", "true", "false"]
OUTCOME_TEXT = ["1", "0", "1.0", "0.0", "", "true", "false", "True", "FALSE", "yes", "no", "NA", "nan",
                " 1", "1 ", "2", "-1", "0.5", "win", "1e0", "+1"]
STEP_TEXT = ["1", "2", "3", "1.0", " 2", "2.5", "", "1e0", "-1", "abc", "99999999999999999999", "0"]


@st.composite
def csv_logs(draw):
    """A log as text cells: a sound numeric log with a few cells respelled."""
    n_runs = draw(st.integers(1, 5))
    rows = []
    for i in range(n_runs):
        y = draw(st.sampled_from(["1", "0", ""]))
        for t in range(1, draw(st.integers(1, 4)) + 1):
            rows.append({"trajectory_id": f"r{i}", "step": str(t), "outcome": y,
                         "q_z": draw(st.sampled_from(["", "0.3"])) if y == "" else "",
                         "conf_a": draw(st.sampled_from(["0.1", "0.5", "0.9", "0", "1", ""])),
                         "weight": draw(st.sampled_from(["1", "0.5", "2"]))})
    df = pd.DataFrame(rows, dtype=object)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(df) - 1))
        col = draw(st.sampled_from(["conf_a", "conf_a", "outcome", "step", "q_z", "weight"]))
        cells = {"outcome": OUTCOME_TEXT, "step": STEP_TEXT}.get(col, NUMBER_TEXT)
        df.loc[at, col] = draw(st.sampled_from(cells))
    return df, draw(st.integers(1, 2))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=csv_logs(), by_column=st.booleans())
def test_csv_text_is_read_alike_by_both_engines(log, by_column):
    """The reader (pandas) and DuckDB's CSV scan read each cell as the same number, the same
    missing value, or refuse it; the TPS then agrees."""
    df, parts = log
    score = ScoreSettings(schedule=parse_schedule("column" if by_column else "uniform"), n_boot=0)
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "log.csv"
        df.to_csv(one, index=False)
        try:
            data = tpsviz.load(one)
            ref, ref_err = compute_tps(data, replace(score, interval="percentile")), None
            skill_table(data, score, n_boot=0, result=ref)
        except (LogFormatError, ValueError) as exc:
            ref, ref_err = None, exc
        folder = Path(tmp) / "d"
        folder.mkdir()
        cuts = np.linspace(0, len(df), parts + 1).astype(int)
        for k in range(parts):
            df.iloc[cuts[k]:cuts[k + 1]].to_csv(folder / f"part-{k}.csv", index=False)
        got, got_err = _duckdb(folder, score)
    assert (ref_err is None) == (got_err is None), (f"in memory: {ref_err!r}", f"duckdb: {got_err!r}")
    event("refused by both" if ref is None else "scored by both")
    if ref is None:
        return
    a = ref.tps_matrix()
    b = got.per_trajectory.pivot(index="trajectory_id", columns="predictor", values="tps").reindex(
        index=a.index, columns=a.columns)
    np.testing.assert_allclose(b.to_numpy(float), a.to_numpy(float), rtol=1e-12)
    assert (ref.summary[COUNTS].to_numpy() == got.summary.loc[ref.summary.index, COUNTS].to_numpy()).all()
