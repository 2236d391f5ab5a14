"""Issue 12 in a browser: a dataset folder larger than the rows the server reads into memory opens
on a stated random sample of its runs; every page says so; the Overview scores all runs out of
core on request, and the numbers say which they cover."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from browser_helpers import ROOT, no_traceback, screenshot, wait_ready
from tests.wording_checks import assert_says
from conftest import _start_server, _stop_server


@pytest.fixture(scope="module")
def big_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("datasets")
    runs = root / "runs"
    runs.mkdir()
    df = pd.read_csv(ROOT / "demo_data" / "tau2-like.csv")
    cut = len(df) // 3
    for k, part in enumerate((df.iloc[:cut], df.iloc[cut:2 * cut], df.iloc[2 * cut:])):
        part.to_parquet(runs / f"part-{k}.parquet")  # runs span files
    env = {"TPSVIZ_DATA_ROOTS": str(root), "TPSVIZ_MAX_ROWS": "5000", "TPSVIZ_SAMPLE_RUNS": "120"}
    proc, base, log = _start_server("streamlit-server-dataset", env)
    yield base
    _stop_server(proc, log)


@pytest.fixture
def big_page(browser, big_server):
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    pg.base = big_server
    yield pg
    ctx.close()


def test_a_large_dataset_opens_on_a_sample_and_scores_all_runs_on_request(big_page):
    pg = big_page
    pg.goto(pg.base + "/?src=Server+path&path=runs")
    wait_ready(pg, "Overview / Compare")
    no_traceback(pg)
    banner = pg.get_by_text("describes a random sample of").first
    banner.wait_for()
    line = assert_says(banner.inner_text(), "describes a random sample of", 450)
    # the all-runs section below is not claimed for the sample
    assert "except" in line and "All 450 runs (out of core)" in line
    pg.get_by_role("heading", name="All 450 runs (out of core)").wait_for()
    screenshot(pg, "60_dataset_sample_overview")
    pg.get_by_role("button", name="Score all 450 runs").click()
    wait_ready(pg)
    pg.get_by_text("All runs:", exact=False).first.wait_for()
    no_traceback(pg)
    screenshot(pg, "61_dataset_all_runs_scored")
    _every_runs_tps_downloads(pg)
    # another page: the same sample line, no all-runs table there
    pg.get_by_role("link", name="Reliability").click()
    wait_ready(pg, "Reliability")
    pg.get_by_text("every number on this page describes a random sample of").first.wait_for()
    pg.locator(".js-plotly-plot").first.wait_for()
    wait_ready(pg)
    no_traceback(pg)
    screenshot(pg, "62_dataset_sample_reliability")
    # the sample's files say that they describe a sample (they did not)
    pg.get_by_role("link", name="Export").click()
    wait_ready(pg, "Export")
    pg.get_by_text("These files describe the sample of 120 of 450 runs").wait_for()
    with pg.expect_download(timeout=60_000) as dl:
        pg.get_by_role("button", name="Per-trajectory scores (CSV)").click()
    assert dl.value.suggested_filename.endswith("_sample_per_trajectory.csv")
    got = pd.read_csv(dl.value.path())
    [said] = set(got["sample"])  # one sentence for every row: the sample's size, of how many, its seed
    assert_says(said, "random sample", 120, 450, 20260101)
    assert got["trajectory_id"].nunique() == 120
    # each run's outcome and metadata are in the file (helper-23: successes could not be told from failures)
    runs = pd.read_csv(ROOT / "demo_data" / "tau2-like.csv").groupby("trajectory_id").first()
    want = runs.loc[got["trajectory_id"]]
    assert (got["outcome"].fillna(-1).to_numpy() == want["outcome"].fillna(-1).to_numpy()).all()
    assert (got["task"].to_numpy() == want["task"].to_numpy()).all()
    assert list(got.columns[:5]) == ["trajectory_id", "predictor", "tps", "censored", "outcome"]
    screenshot(pg, "63_dataset_sample_export")


def _every_runs_tps_downloads(pg):
    """The all-runs Parquet holds every run's TPS, as scoring the whole log in memory under the
    settings written in the file gives it."""
    import tpsviz
    from tpsviz.core.schedules import parse_schedule

    with pg.expect_download(timeout=60_000) as dl:
        pg.get_by_role("button", name="All runs: per-trajectory TPS (Parquet)").click()
    got = pd.read_parquet(dl.value.path())
    first = got.iloc[0]
    settings = tpsviz.ScoreSettings(alpha=float(first["alpha"]), beta=float(first["beta"]),
                                    schedule=parse_schedule(str(first["schedule"])), censoring=str(first["censoring"]),
                                    eps=float(first["eps"]), n_boot=0)
    assert {"trajectory_id", "predictor", "tps", "censored", "outcome", "n_boot", "seed"} <= set(got.columns)
    df = pd.read_csv(ROOT / "demo_data" / "tau2-like.csv")
    outcome = df.groupby(df["trajectory_id"].astype(str))["outcome"].first()  # (NaN: censored)
    assert np.array_equal(got["outcome"].to_numpy(float), outcome.reindex(got["trajectory_id"].astype(str)).to_numpy(float),
                          equal_nan=True)
    want = tpsviz.compute_tps(tpsviz.from_frame(df), settings).per_trajectory
    merged = want.merge(got, on=["trajectory_id", "predictor"], how="outer", suffixes=("", "_file"), indicator=True)
    assert len(got) == len(want) and (merged["_merge"] == "both").all()
    assert ((merged["tps"] - merged["tps_file"]).abs() <= 1e-9 * merged["tps"].abs().clip(lower=1)).all()


def test_the_typed_path_is_shown_again_after_the_demo_and_back(big_page):
    """helper-24: Demo and back to Server path cleared the path. Restored in session state only, the
    page read the folder while the box in the browser stayed empty: the box must show it."""
    pg = big_page
    pg.goto(pg.base)
    wait_ready(pg, "Overview / Compare")
    pg.get_by_text("Server path", exact=True).click()
    wait_ready(pg)
    box = pg.get_by_role("textbox", name="Path on the server")
    box.fill("runs")
    box.press("Enter")
    wait_ready(pg)
    pg.get_by_text("describes a random sample of").first.wait_for()
    pg.get_by_text("Demo", exact=True).click()
    wait_ready(pg)
    pg.get_by_text("Server path", exact=True).click()
    wait_ready(pg)
    box = pg.get_by_role("textbox", name="Path on the server")
    assert box.input_value() == "runs"
    pg.get_by_text("describes a random sample of").first.wait_for()
    box.fill("runs/part-0.parquet")  # and another path typed afterwards is read
    box.press("Enter")
    wait_ready(pg)
    assert box.input_value() == "runs/part-0.parquet" and "path=runs%2Fpart-0.parquet" in pg.url
    no_traceback(pg)
