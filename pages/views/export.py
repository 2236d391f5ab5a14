"""Export: per-step contributions and per-trajectory scores (CSV / Parquet), a standalone HTML report
that opens offline, and a PNG of any figure."""

import pandas as pd
import streamlit as st

from tpsviz.report import figures as F

from pages._ui.evaluation import evaluation
from pages._ui import common as C
from pages._ui import state as S
from pages._ui.sample import sample_info
from pages._ui import compute as V
from pages._ui.wording import say
from tpsviz.report.export import figure_png, parquet_bytes, safe_csv
from tpsviz.report.html import build_report

cfg, data = C.page("Export",
                   "Everything below uses the current settings (shown in the banner and written into every file).")
src = S.current_source()
sample = sample_info(data)  # a dataset opened on a sample: every file says so, in its name and its rows
stem = S.safe_filename(f"tpsviz_{src.name.rsplit('.', 1)[0]}" + ("_sample" if sample else ""))
res = evaluation(cfg).result  # tpsviz.evaluate's TPS of the current settings


def _columns() -> dict:
    """The settings columns (and, on a sample, which runs the rows describe)."""
    cols = cfg.settings_columns()
    if sample:
        cols["sample"] = (f"random sample of {sample['runs_sampled']} of {sample['runs_total']} runs, "
                          f"seed {sample['seed']}")
    return cols


def _per_traj() -> pd.DataFrame:
    """Each run's TPS with its outcome (1, 0, empty when censored) and its metadata columns, so the
    file alone tells successes from failures (helper-23: it had neither)."""
    meta = [c for c in data.metadata_columns if c not in res.per_trajectory.columns]
    runs = data.trajectories[["trajectory_id", "outcome", *meta]]
    out = res.per_trajectory.drop(columns=["traj"]).merge(runs, on="trajectory_id", how="left")
    out.insert(4, "outcome", out.pop("outcome"))  # (after trajectory_id, predictor, tps, censored)
    # a metadata column named like a settings column (alpha, schedule, …) keeps its values under another name
    settings = _columns()
    return out.rename(columns={c: f"{c} (metadata)" for c in meta if c in settings})


def _contrib() -> pd.DataFrame:
    t = data.trajectories[["trajectory_id", "outcome", "censored"]]
    return res.step_contributions(list(cfg.predictors)).merge(t, on="trajectory_id", how="left")


# every row carries the settings (cfg.settings_columns); text cells that a spreadsheet would run as
# a formula are prefixed with ' in CSV (tpsviz.report.export)
def _csv(fn):
    return lambda: safe_csv(fn().assign(**_columns())).encode("utf-8")


def _parquet(fn):
    return lambda: parquet_bytes(fn(), _columns())


st.subheader("Scores as data")
if sample:
    st.caption(f"These files describe the sample of {sample['runs_sampled']:,} of {sample['runs_total']:,} runs: their "
               "names carry _sample and every row says so (column `sample`); the report says so under Data. Every "
               "run's TPS is on the Overview (Score all runs).")
n_rows = int(res.summary["n_steps"].sum())
c = st.columns(2)
with c[0]:
    st.markdown(f"**Per-trajectory TPS** ({len(res.per_trajectory):,} rows)",
                help="trajectory_id, predictor, tps, censored, outcome, n_scored, weight_sum, q_z_used, the run's "
                     "metadata columns and the settings "
                     "(alpha, beta, schedule, gamma, H, censoring, q_Z source, eps, n_boot, seed).")
    st.download_button("Per-trajectory scores (CSV)", _csv(_per_traj), f"{stem}_per_trajectory.csv", "text/csv",
                       key="dl_traj_csv", on_click="ignore")
    st.download_button("Per-trajectory scores (Parquet)", _parquet(_per_traj), f"{stem}_per_trajectory.parquet",
                       "application/octet-stream", key="dl_traj_pq", on_click="ignore")
with c[1]:
    st.markdown(f"**Per-step contributions** ({n_rows:,} rows)",
                help="trajectory_id, step, t, predictor, forecast (as clipped), weight, score, contribution = w_t·S, "
                     "outcome and censored of the run (a censored run's score is the exact/simple reduced score), "
                     "and the settings columns.")
    st.download_button("Per-step contributions (CSV)", _csv(_contrib), f"{stem}_steps.csv", "text/csv",
                       key="dl_step_csv", on_click="ignore")
    st.download_button("Per-step contributions (Parquet)", _parquet(_contrib), f"{stem}_steps.parquet",
                       "application/octet-stream", key="dl_step_pq", on_click="ignore")

st.subheader("HTML report")
st.caption("One self-contained file (plotly.js embedded, ~5 MB): opens offline, interactive figures, the settings "
           "and verdict at the top.")
key = (src.key, cfg)
if S.pressed("Build the HTML report", key="build_report", type="primary"):
    with st.spinner("Building the report…"):
        sections = V.report_sections(cfg, data)
        html = build_report(f"tpsviz report — {src.name}", V.settings_dict(cfg, data, src), sections,
                            notes=[f"Loader note: {say(n)}" for n in data.notes])
        st.session_state["_report"] = (key, html.encode("utf-8"))
rep = st.session_state.get("_report")
if rep and rep[0] == key:
    st.download_button("Download the HTML report", rep[1], f"{stem}_report.html", "text/html", key="dl_report",
                       on_click="ignore", type="primary")
    st.caption(f"Report ready ({len(rep[1]) / 1e6:.1f} MB).")
elif rep:
    st.caption("The settings changed since the last report: build it again.")

st.subheader("PNG of a figure")
st.caption("Every figure also has a camera button (top right, on hover) that saves a PNG from the browser.")
figs = V.all_figures(cfg, data)
name = st.selectbox("Figure", list(figs), key="png_fig")
if S.pressed("Render PNG", key="render_png"):
    try:
        with st.spinner("Rendering with kaleido (starts a headless browser, a few seconds)…"):
            fig = F.with_caption(figs[name], V.settings_line(cfg, data, src))  # the PNG says what it shows
            png = figure_png(fig, width=1100, height=int(fig.layout.height), scale=2)
        st.session_state["_png"] = ((key, name), png)
    except Exception as e:
        st.error(f"The PNG could not be rendered on the server ({type(e).__name__}). Use the camera button on the "
                 f"figure instead.")
png = st.session_state.get("_png")
if png and png[0] == (key, name):
    st.download_button("Download PNG", png[1], S.safe_filename(f"{stem}_{name}") + ".png", "image/png",
                       key="dl_png", on_click="ignore")
    st.image(png[1], caption=name, width=500)
