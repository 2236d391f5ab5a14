"""A dataset opened on a sample (too large for memory): the headline table scored on all runs by
the out-of-core engine, on request (docs/architecture.md, "Engines"; docs/deployment.md). Every
number says which it covers; the sample's own words are ``sample.py``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from tpsviz.core import formatting as Fm
from tpsviz.io.files import limits_from_env
from tpsviz.report import figures as F
from tpsviz.report.export import parquet_bytes, safe_csv

from . import state as S
from .charts import plot
from .memo import memo
from .sample import sample_info
from .text import md
from .wording import say

#: bootstrap replicates of the all-runs table (millions of runs: each replicate costs a pass over them)
ALL_RUNS_BOOT = 200
#: most rows of the per-trajectory table offered as CSV (text: ~60 MB a million rows, held by the
#: server while the session lasts); as Parquet up to TPSVIZ_MAX_ROWS rows
ALL_RUNS_CSV_ROWS = 1_000_000


@memo(max_entries=4, spinner="Scoring all runs out of core (DuckDB over the dataset's files)…")
def _score_all(key: str, settings_key: tuple, _src: S.Source, _settings):
    # (the out-of-core engine and duckdb: loaded only when a dataset is scored on all its runs)
    from tpsviz.engines import get_engine
    from tpsviz.engines.runsums import score_from_sums
    from tpsviz.io.dataset import open_dataset

    ds = open_dataset(Path(_src.path), S.data_roots())
    with get_engine("duckdb") as engine:  # the engine interface, as the command line's --engine duckdb
        sums = engine.runsums(ds, _settings, mapping=_src.options.mapping, percent=_src.options.percent)
        return score_from_sums(sums, _settings, skill_boot=_settings.n_boot, intervals=engine.intervals)


def all_runs_table(score, names: list[str], eps: float, baseline: str | None = None) -> pd.DataFrame:
    """The headline numbers of every predictor, on all runs, best TPS first (as the sample's
    leaderboard): TPS and its CI, skill ± SE, AUROC, T-ECE, runs, censored runs, where ε > 0 the
    forecasts clipped into [ε, 1 − ε], and with a ``baseline`` the paired Δ TPS against it and
    its Δ/SE (:meth:`tpsviz.engines.runsums.DatasetScore.paired_tps`)."""
    s, sk, m = score.summary, score.skill, score.metrics
    shown = list(s.loc[[n for n in names if n in s.index], "tps_mean"].fillna(-np.inf)
                 .sort_values(ascending=False, kind="stable").index)  # (the leaderboard's order, compute.py)
    paired = score.paired_tps(baseline) if baseline in shown and len(shown) > 1 else None
    rows = []
    for n in shown:
        # (display_name: "truthful = true probability (synthetic)", as the leaderboard names it)
        row = {"predictor": F.display_name(n), "TPS": Fm.num(s.at[n, "tps_mean"]),
               "95% CI": Fm.interval(s.at[n, "tps_ci_low"], s.at[n, "tps_ci_high"]),
               "skill ± SE": Fm.pm(sk.at[n, "skill"], sk.at[n, "skill_se"]) if n in sk.index else "—",
               "AUROC": Fm.num(m.at[n, "auroc"], ".3f") if n in m.index else "—",
               "T-ECE": Fm.num(m.at[n, "tece_pooled"], ".3f") if n in m.index else "—",
               "n runs": int(s.at[n, "n_trajectories"]), "censored": int(s.at[n, "n_censored"])}
        if eps > 0:
            row["clipped"] = int(s.at[n, "n_clipped"])
        if paired is not None:
            if n == baseline:
                row["Δ TPS"], row["Δ/SE"] = "baseline", "—"
            else:
                row["Δ TPS"] = Fm.pm(paired.at[n, "tps_delta"], paired.at[n, "tps_se"], "+.4f")
                row["Δ/SE"] = Fm.num(paired.at[n, "tps_z"], "+.1f")
        rows.append(row)
    return pd.DataFrame(rows)


def all_runs_section(cfg: S.Config, data) -> None:
    """On a sampled dataset: a button that scores every run out of core, and its table."""
    info = sample_info(data)
    src = S.current_source()
    if info is None or src is None or src.kind != "path":
        return
    st.subheader(f"All {info['runs_total']:,} runs (out of core)")
    settings = cfg.score_settings(n_boot=min(cfg.n_boot, ALL_RUNS_BOOT))
    skey = (cfg.score_tuple, settings.n_boot)
    st.caption("The tables and figures on these pages describe the sample. This table scores **every run** of "
               f"the dataset ({info['rows_total']:,} step rows) with DuckDB over its files, under the settings "
               f"in the sidebar (with at most {ALL_RUNS_BOOT} bootstrap replicates: each is a pass over every run); "
               "metadata filters and recalibrations apply to the sample only.")
    score = _score_on_request(info, src, skey, settings)
    if score is None:
        return
    preds = [p for p in cfg.predictors if p in score.summary.index]
    # the baseline chosen under "Paired comparison" below (drawn after this section: its last value),
    # else its default: the reference predictor, or the first
    baseline = st.session_state.get("baseline")
    if baseline not in preds:
        baseline = F.default_baseline(preds)
    _table(cfg, score, preds, baseline)
    from tpsviz.engines.pooled import GRID  # (duckdb: loaded only where a dataset is scored out of core)

    ranks = score.metrics["ranks_exact"]
    exact = "exact (counted on the distinct forecasts)" if bool(ranks.all()) else (
        f"counted on a grid of {GRID:,} cells; largest possible error "
        f"{Fm.fmt(float(score.metrics['auroc_bound'].max()), 2)}")
    st.caption(f"**All runs:** {info['runs_total']:,} runs, {score.sums.n_steps:,} step rows; TPS in {cfg.unit} "
               f"per run (higher is better); 95% CI: {score.ci_words}; AUROC and T-ECE pooled over the steps of "
               f"complete runs, AUROC {exact}"
               + (f"; Δ TPS paired against **{md(baseline, 60)}** over the runs both scored." if len(preds) > 1 and baseline
                  else "."))
    _downloads(cfg, score, settings, src)
    _reliability(cfg, data, score, info)
    for note in score.sums.notes:
        if note.startswith("raw signals"):  # (here the sample above is the answer)
            note = "raw signals are not scored on all runs (their recalibration needs the step rows): see them on the sample."
        st.caption("Note from the out-of-core engine: " + md(say(note), 400))


def _score_on_request(info: dict, src: S.Source, skey: tuple, settings):
    """The all-runs score of these settings: at once when it is cached, else once the button is
    pressed (None until then, or when it fails: the error is shown)."""
    scored = st.session_state.setdefault("_all_runs_scored", {})  # this session's scorings of each dataset
    if not _score_all.has(src.key, skey, src, settings):
        prompt = st.empty()  # (cleared once pressed: helper-24 saw the "other settings" words above the new table)
        with prompt.container():
            if scored.get(src.key, skey) != skey:  # (a table for other settings is not shown: it would mislead)
                st.caption("All runs were scored under other settings; those results are kept (going back to them "
                           "shows them at once). Score again for the settings now in the sidebar.")
            pressed = S.pressed(f"Score all {info['runs_total']:,} runs", key="score_all_runs",
                                help="Takes about a second per 3 million step rows on two cores; the result is kept "
                                     "for these settings.")
        if not pressed:
            return None
        prompt.empty()
    try:
        score = _score_all(src.key, skey, src, settings)
    except S.Cancelled:
        raise
    except Exception as e:  # a defect the sample did not contain, memory, a vanished file: say so
        st.error(f"All runs could not be scored: {md(say(e), 600)}", icon=":material/error:")
        return None
    scored[src.key] = skey
    return score


def _table(cfg: S.Config, score, preds: list[str], baseline: str | None) -> None:
    """The all-runs table (:func:`all_runs_table`) with its column help."""
    tab = all_runs_table(score, preds, cfg.eps, baseline)
    st.dataframe(tab, hide_index=True, width="stretch", column_config={
        # (the unit in the help: "beta-score units (α=1, β=0)" in the header pushed Δ/SE off a 1400 px page, helper-26)
        "TPS": st.column_config.TextColumn("TPS/run", help=f"Mean TPS per run, in {cfg.unit}; higher is better, "
                                                            "0 is perfect."),
        "clipped": st.column_config.NumberColumn("clipped", help="Forecasts moved to [ε, 1−ε] before scoring."),
        "Δ TPS": st.column_config.TextColumn(
            "Δ TPS ± SE", help=f"Mean over every run both scored of TPS(predictor) − TPS({baseline}), ± SE of the "
                               "paired differences; the baseline is the one chosen under Paired comparison."),
        "Δ/SE": st.column_config.TextColumn("Δ/SE", help="|Δ/SE| > 2 ≈ a clear difference on all runs.")})


def _reliability(cfg: S.Config, data, score, info: dict) -> None:
    """The reliability diagram of up to six predictors, from the all-runs counts."""
    shown = [n for n in cfg.predictors if n in score.reliability][:6]
    if not shown:
        return
    panels = [{"name": n, "bins": score.reliability[n]} for n in shown]
    plot(F.reliability_figure(panels, F.predictor_colors(list(data.predictors)),
                              f"Reliability, all {info['runs_total']:,} runs (steps of complete runs)"),
         "all_runs_reliability", name="Reliability (all runs)",
         caption="All runs: observed success rate against the mean forecast in ten equal-width bins of the "
                 "forecast, with 95% Wilson intervals (steps treated as independent), from counts over every "
                 "labelled step of the dataset.")


def _downloads(cfg: S.Config, score, settings, src: S.Source) -> None:
    """Every run's TPS as a file: Parquet up to the rows this server holds in memory
    (TPSVIZ_MAX_ROWS), CSV up to :data:`ALL_RUNS_CSV_ROWS`; above, the command that writes it."""
    n, cap = score.n_per_trajectory_rows, limits_from_env().max_rows  # (the table is built only when offered)
    stem = S.safe_filename(f"tpsviz_{src.name.rsplit('.', 1)[0]}_all_runs_per_trajectory")
    columns = cfg.settings_columns(n_boot=settings.n_boot)
    what = (f"**Every run's TPS** ({n:,} rows: one per run and predictor; trajectory_id, predictor, tps, censored, outcome, "
            "n_scored, weight_sum, q_z_used and the settings)")
    if n > cap:
        st.caption(f"{what}: more rows than this server holds for a download ({cap:,}, TPSVIZ_MAX_ROWS). Write them "
                   "with the command line: `tpsviz score <dataset folder> --engine duckdb --per-trajectory OUT.csv`.")
        return
    st.caption(what + (f": as Parquet (CSV is offered up to {ALL_RUNS_CSV_ROWS:,} rows)." if n > ALL_RUNS_CSV_ROWS
                       else "."))
    table = score.per_trajectory
    with st.container(horizontal=True):
        st.download_button("All runs: per-trajectory TPS (Parquet)", lambda: parquet_bytes(table, columns),
                           f"{stem}.parquet", "application/octet-stream", key="dl_all_runs_pq", on_click="ignore")
        if n <= ALL_RUNS_CSV_ROWS:
            st.download_button("All runs: per-trajectory TPS (CSV)",
                               lambda: safe_csv(table.assign(**columns)).encode("utf-8"),
                               f"{stem}.csv", "text/csv", key="dl_all_runs_csv", on_click="ignore")
