"""Issue 12, dashboard: a server path to a dataset (a folder of Parquet files) opens, stays under
the data roots file by file, and a dataset too large for memory opens on a stated random sample of
its runs, with the headline table scored on all runs out of core on request."""

from __future__ import annotations

import os
from dataclasses import replace

import pandas as pd
import pytest

from apptest_helpers import DEMO, fresh, texts as _texts
from tests.wording_checks import assert_says

SECRET = "secret_column_7f3a9"


@pytest.fixture
def root(tmp_path, monkeypatch):
    r = tmp_path / "logs"
    (r / "runs").mkdir(parents=True)
    df = pd.read_csv(DEMO / "tau2-like.csv")
    cut = len(df) // 2 + 3  # a run spans the two files
    df.iloc[:cut].to_parquet(r / "runs" / "part-0.parquet")
    df.iloc[cut:].to_parquet(r / "runs" / "part-1.parquet")
    df.head(20).rename(columns={"step": SECRET}).to_parquet(tmp_path / "outside.parquet")
    monkeypatch.setenv("TPSVIZ_DATA_ROOTS", str(r))
    return r


def texts(at) -> str:
    """The page's text, with the problem list (shown as code: text from a log)."""
    return _texts(at) + "\n" + "\n".join(c.value for c in at.code)


def test_a_dataset_folder_opens_from_a_server_path(root):
    at = fresh({"src": "Server path", "path": "runs"})
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "450"
    assert at.query_params["path"] == "runs"  # the link opens the same folder (it was left out)


def test_the_typed_path_is_kept_when_the_data_source_changes_and_comes_back(root):
    """helper-24: Demo and back to Server path cleared the path typed before."""
    at = fresh()
    at.radio(key="src").set_value("Server path").run()
    at.text_input(key="path").input("runs").run()
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "450"
    at.radio(key="src").set_value("Demo").run()
    assert not at.exception and "path" not in at.query_params  # a link to the demo carries no path
    at.radio(key="src").set_value("Server path").run()
    assert not at.exception and at.text_input(key="path").value == "runs"
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "450" and at.query_params["path"] == "runs"


def test_a_link_out_of_the_roots_inside_a_dataset_is_refused(root):
    os.symlink(root.parent / "outside.parquet", root / "runs" / "part-2.parquet")
    at = fresh({"src": "Server path", "path": "runs"})
    t = texts(at)
    assert not at.exception and "cannot open this path" in t and SECRET not in t


def test_a_dataset_above_the_memory_limit_opens_on_a_stated_sample(root, monkeypatch):
    monkeypatch.setenv("TPSVIZ_MAX_ROWS", "5000")
    monkeypatch.setenv("TPSVIZ_SAMPLE_RUNS", "60")
    at = fresh({"src": "Server path", "path": "runs"})
    t = texts(at)
    assert not at.exception and not at.error
    n = int({m.label: m.value for m in at.metric}["Trajectories"].replace(",", ""))
    assert 0 < n <= 60 and "**" in assert_says(t, "random sample of", n, 450)
    heading = "All 450 runs (out of core)"
    assert heading in [h.value for h in at.subheader]
    # the banner does not claim the all-runs section for the sample (helper-24: after "Score all" it did)
    banner = assert_says(t, "every number on this page", 450)
    assert "except" in banner and heading in banner.replace("**", "") and "random sample" in banner
    assert "every number on this page describes" not in t
    # on request, the headline table covers every run, and agrees with scoring the whole log in memory
    at.button(key="score_all_runs").click().run()
    assert not at.exception and not at.error
    table = [d.value for d in at.dataframe if "n runs" in d.value.columns][-1]  # after the leaderboard
    assert set(table["n runs"]) <= {450} | set(range(300, 450)) and len(table)
    import tpsviz

    df = pd.concat([pd.read_parquet(root / "runs" / f"part-{k}.parquet") for k in (0, 1)])
    full = tpsviz.compute_tps(tpsviz.from_frame(df), at.session_state["_cfg"].score_settings(n_boot=0))
    from tpsviz.diagnostics.leaderboard import skill_table

    settings = at.session_state["_cfg"].score_settings(n_boot=0)
    skill = skill_table(tpsviz.from_frame(df), settings, n_boot=0)
    table["predictor"] = table["predictor"].str.replace(" = true probability (synthetic)", "", regex=False)
    for _, row in table.iterrows():
        assert row["TPS"] == f"{full.summary.at[row['predictor'], 'tps_mean']:.4f}"
        assert row["n runs"] == full.summary.at[row["predictor"], "n_trajectories"]
        # skill ± SE and the clipped forecasts, as the sample's leaderboard shows them (helper-24: they were missing)
        point, se = row["skill ± SE"].split(" ± ")
        assert float(point) == pytest.approx(skill.at[row["predictor"], "skill"], abs=6e-4) and float(se) > 0
        assert row["clipped"] == full.summary.at[row["predictor"], "n_clipped"]
    # paired against the baseline (the reference by default) over every run, as compare() on the whole log
    from tpsviz.diagnostics.compare import compare

    # (out of core every SE is by run, and the caption says so; in memory the demo's runs cluster by task)
    assert "SE by run (out of core" in texts(at)
    want = compare(tpsviz.from_frame(df), replace(settings, cluster_by="run"), baseline="truthful", n_boot=0, metrics=())
    paired = table.set_index("predictor")
    assert paired.at["truthful", "Δ TPS"] == "baseline"
    for name in want.index:
        assert paired.at[name, "Δ TPS"] == f"{want.at[name, 'tps_delta']:+.4f} ± {want.at[name, 'tps_se']:.4f}"
        assert paired.at[name, "Δ/SE"] == f"{want.at[name, 'tps_z']:+.1f}"
    assert "Δ TPS paired against **truthful**" in texts(at)
    # best TPS first, as the leaderboard
    assert list(table["predictor"]) == list(full.summary.loc[list(table["predictor"]), "tps_mean"].sort_values(
        ascending=False).index)
    # every run's TPS can be downloaded (its content: tests/browser/test_dataset_browser.py)
    assert_says(texts(at), "Every run's TPS", len(full.per_trajectory))
    assert {"All runs: per-trajectory TPS (Parquet)", "All runs: per-trajectory TPS (CSV)"} <= downloads(at)
    # Monitoring counts runs among the sampled ones, and says so (helper-24)
    at.switch_page("pages/views/monitoring.py").run()
    assert not at.exception and not at.error
    t = texts(at)
    assert_says(t, "sampled runs", n, 450)  # among the n sampled runs, of the dataset's 450
    banner = assert_says(t, "every number on this page")
    assert "random sample" in banner and "except" not in banner  # no all-runs section on this page


def downloads(at) -> set:
    """The labels of the page's download buttons."""
    return {b.proto.label for b in at.get("download_button")}


def test_every_runs_tps_above_the_servers_row_limit_is_not_offered_as_a_file(root, monkeypatch):
    """A download is held in the server's memory while the session lasts: above TPSVIZ_MAX_ROWS
    rows the page gives the command that writes the file instead."""
    monkeypatch.setenv("TPSVIZ_MAX_ROWS", "1000")  # the table has a row per run and predictor: 450 × 3
    monkeypatch.setenv("TPSVIZ_SAMPLE_RUNS", "40")
    at = fresh({"src": "Server path", "path": "runs"})
    at.button(key="score_all_runs").click().run()
    assert not at.exception and not at.error, texts(at)
    t = texts(at)
    predictors = len([d.value for d in at.dataframe if "n runs" in d.value.columns][-1])
    assert "TPSVIZ_MAX_ROWS" in assert_says(t, "for a download", 450 * predictors, 1000)  # its rows, the cap
    assert "--engine duckdb --per-trajectory OUT.csv" in t
    assert not any(label.startswith("All runs:") for label in downloads(at))


def test_a_dataset_in_percent_is_scored_on_all_runs_in_percent(root, monkeypatch):
    """The reading option "Predictors given in percent" reaches the out-of-core table (it read
    the sample in percent, then refused the all-runs table: "probabilities must be in [0, 1]")."""
    df = pd.concat([pd.read_parquet(root / "runs" / f"part-{k}.parquet") for k in (0, 1)])
    conf = [c for c in df.columns if c.startswith("conf_")]
    pct = df.assign(**{c: df[c] * 100 for c in conf})
    (root / "pct").mkdir()
    pct.to_parquet(root / "pct" / "a.parquet")
    monkeypatch.setenv("TPSVIZ_MAX_ROWS", "5000")
    monkeypatch.setenv("TPSVIZ_SAMPLE_RUNS", "60")
    names = ",".join(c[len("conf_"):] for c in conf)
    at = fresh({"src": "Server path", "path": "pct", "pct": names})
    assert not at.exception and not at.error, texts(at)
    at.button(key="score_all_runs").click().run()
    assert not at.exception and not at.error, texts(at)
    table = [d.value for d in at.dataframe if "n runs" in d.value.columns][-1]
    import tpsviz

    full = tpsviz.compute_tps(tpsviz.from_frame(df), at.session_state["_cfg"].score_settings(n_boot=0))
    assert len(table) == len(conf)
    for _, row in table.iterrows():
        name = row["predictor"].removesuffix(" = true probability (synthetic)")  # (as the leaderboard names the reference)
        assert row["TPS"] == f"{full.summary.at[name, 'tps_mean']:.4f}"


def test_the_files_exported_from_a_sample_say_so(root, monkeypatch):
    """The Export page on a sampled dataset: the files' names and rows, and the report's Data
    line, say that they describe a sample (a downloaded file read as the whole dataset)."""
    monkeypatch.setenv("TPSVIZ_MAX_ROWS", "5000")
    monkeypatch.setenv("TPSVIZ_SAMPLE_RUNS", "60")
    at = fresh({"src": "Server path", "path": "runs"})
    at.switch_page("pages/views/export.py").run()
    assert not at.exception, [e.value for e in at.exception]
    import re

    found = re.search(r"These files describe the sample of (\d+) of 450 runs", texts(at))
    assert found and 0 < int(found[1]) <= 60
    at.button(key="build_report").click().run()
    assert f"a random sample of {found[1]} of 450 runs" in at.session_state["_report"][1].decode()


def test_after_a_setting_changes_the_all_runs_table_says_why_it_is_gone(root, monkeypatch):
    """The all-runs table is kept per setting; once a setting changes it is not shown (it would
    describe other settings), and the page says so instead of dropping it without a word."""
    monkeypatch.setenv("TPSVIZ_MAX_ROWS", "5000")
    monkeypatch.setenv("TPSVIZ_SAMPLE_RUNS", "60")
    at = fresh({"src": "Server path", "path": "runs"})
    gone = "All runs were scored under other settings"
    assert gone not in texts(at)  # (never scored yet)
    at.button(key="score_all_runs").click().run()
    assert "**All runs:**" in texts(at) and gone not in texts(at)
    at.slider(key="a").set_value(0.5).run()
    assert not at.exception and gone in texts(at) and "**All runs:**" not in texts(at)
    at.slider(key="a").set_value(0.0).run()  # back: the kept table, at once
    assert "**All runs:**" in texts(at) and gone not in texts(at)
    # scored again under the new settings: the words about the other settings go with the button
    # (helper-24 saw them above the new table)
    at.slider(key="a").set_value(0.5).run()
    at.button(key="score_all_runs").click().run()
    assert not at.exception and "**All runs:**" in texts(at) and gone not in texts(at)
