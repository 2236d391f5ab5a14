"""Step contributions: where along the runs each predictor gains or loses score."""

import numpy as np
import pandas as pd
import streamlit as st

from pages._ui import common as C
from pages._ui.charts import plot
from pages._ui import results as Rs
from pages._ui.evaluation import evaluation
from tpsviz.report import figures as F

cfg, data = C.page("Step contributions",
                   "TPS is a sum over steps of w_t·S(F_t, Y). Each cell below is one step's contribution: 0 is perfect, "
                   "more negative means more score lost there.")
colors = Rs.selected_colors(cfg, data)
preds = list(cfg.predictors)

# ----------------------------------------------------------------- heatmap
st.subheader("Heatmap: trajectories × steps")
default = next((p for p in preds if not F.is_reference(p)), preds[0])
pred = st.selectbox("Predictor for the heatmap", preds, index=preds.index(default), key="steps_pred",
                    format_func=F.display_name,
                    help="Whose per-step contributions w_t·S are drawn. Rows: successes, then failures, then "
                         "censored runs; within each, shorter runs first.")
h = Rs.heatmap(pred, a=Rs.analysis(cfg))
note = (f"{h['n_trajectories']} runs shown as {len(h['band_size'])} rows (each row averages consecutive runs "
        f"in this order)." if h["aggregated"] else f"{h['n_trajectories']} runs, one per row.")
plot(F.contribution_heatmap_figure(h, pred, cfg.alpha, cfg.beta), "steps_heatmap",
       caption=note + " White lines separate successes | failures | censored runs. Hover a cell for its group.",
       name="Contribution heatmap")

# ----------------------------------------------------------------- mean by step
st.subheader("Mean contribution by step")
means = Rs.step_means(a=Rs.analysis(cfg))
plot(F.step_means_figure(means, colors, cfg.alpha, cfg.beta), "steps_means",
       caption=f"Mean of w_t·S over the runs that reach step t (band ±1 SE; n per step on hover). "
               f"{cfg.unit}, higher is better.", name="Mean contribution by step")

# ----------------------------------------------------------------- drill down
st.subheader("Drill down: one run")
t = data.trajectories
group = np.where(t["censored"], "censored", np.where(t["outcome"] == 1, "success", "failure"))
c1, c2 = st.columns([1, 2])
groups = [g for g in ("success", "failure", "censored") if (group == g).any()]
g = c1.radio("Runs that ended in", groups, key="steps_group", horizontal=True,
             help="Pick a run among successes, failures or censored runs (stopped before the outcome).")
sub = t[group == g].sort_values("length", ascending=False)
ids = sub["trajectory_id"].astype(str).tolist()[:2000]
tid = c2.selectbox(f"Trajectory ({len(sub):,} {g}; longest first" + (", first 2,000 listed)" if len(sub) > 2000 else ")"),
                   ids, key="steps_tid", help="Trajectory id from the log.")
row = t[t["trajectory_id"].astype(str) == tid].iloc[0]
code = int(t.index[t["trajectory_id"].astype(str) == tid][0])
steps = data.steps[data.steps["traj"].to_numpy() == code]
res = evaluation(cfg, ci=False, verdicts=False).points  # per-run values: no bootstrap needed
qz_used = res.per_trajectory.loc[res.per_trajectory["trajectory_id"].astype(str) == tid, "q_z_used"]
qz = float(qz_used.iloc[0]) if len(qz_used) and np.isfinite(qz_used.iloc[0]) else None
fig = F.trajectory_figure(steps, preds, colors, row["outcome"], bool(row["censored"]), qz,
                          f"Run {F.plot_label(tid)}: {len(steps)} steps, " +
                          ("censored at Z = %d" % steps["step"].max() if row["censored"] else
                           ("success" if row["outcome"] == 1 else "failure")))
plot(fig, "steps_run", name="One run")
if row["censored"]:
    st.caption("Censored run: the outcome is unknown. q_Z (star) is the evaluator's estimate of P(success | history "
               f"at Z) used by the current censoring mode ({cfg.censoring}); "
               + ("none: this run is left out (complete-case)." if qz is None else f"q_Z = {qz:.3f}."))
pt = res.per_trajectory[res.per_trajectory["trajectory_id"].astype(str) == tid]
if len(pt):
    st.dataframe(pd.DataFrame({"predictor": [F.display_name(p) for p in pt["predictor"]],
                               f"TPS of this run ({cfg.unit})": pt["tps"].to_numpy(),
                               "steps scored": pt["n_scored"].to_numpy(),
                               "Σ w_t": pt["weight_sum"].to_numpy()}),
                 hide_index=True, width="content")
meta = {k: row[k] for k in data.metadata_columns}
if meta:
    st.caption("Metadata of this run (as in the log):")
    st.dataframe(pd.DataFrame([meta]).astype(str), hide_index=True)
