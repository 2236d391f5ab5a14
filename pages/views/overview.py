"""Overview / Compare: dataset summary, leaderboard, Δ/SE against a baseline, where metrics disagree."""

import numpy as np
import streamlit as st

from pages._ui import common as C
from pages._ui import state as S
from pages._ui import compute as V
from tpsviz import figures as F

C.ensure_shell()
st.title("Overview / Compare")
st.caption("Which uncertainty signal is most honest? TPS rewards reporting the true probability of success "
           "at every step; AUROC/AUPRC only check ranking and T-ECE only bin-level calibration.")
cfg, data, _ = C.require_data()
C.banner(cfg, data)

# ----------------------------------------------------------------- dataset summary
t = data.trajectories
comp = t[~t["censored"]]
c = st.columns(5)
c[0].metric("Trajectories", f"{data.n_trajectories:,}", help="Runs after metadata filters.")
c[1].metric("Steps", f"{data.n_steps:,}", help="(trajectory, step) rows with forecasts.")
c[2].metric("Censored", f"{data.n_censored:,} ({data.n_censored / max(data.n_trajectories, 1):.0%})",
            help="Runs stopped by an administrative limit before their outcome was observed.")
rate = comp["outcome"].mean() if len(comp) else np.nan
se = np.sqrt(rate * (1 - rate) / max(len(comp), 1)) if len(comp) else np.nan
c[3].metric("Success rate (complete runs)", f"{rate:.1%}" if np.isfinite(rate) else "n/a",
            delta=f"± {se:.1%} SE, n = {len(comp)}" if np.isfinite(rate) else None, delta_color="off",
            delta_arrow="off",
            help="Share of complete runs with outcome 1, ± 1 SE. This is the base-rate reference forecast.")
c[4].metric("Mean length", f"{t['length'].mean():.1f} steps",
            help="Observed steps per run (for censored runs: up to the stop Z).")
for note in data.notes:
    st.caption("Note from the loader: " + C.md(note))

# ----------------------------------------------------------------- leaderboard
st.subheader("Leaderboard")
lb = V.leaderboard(cfg, data)
tab = lb["table"]
h = C.column_help()
st.dataframe(
    tab, hide_index=True, width="stretch",
    column_config={
        "predictor": st.column_config.TextColumn("predictor", help="conf_<name> column; (reference) = truthful/oracle."),
        "TPS mean": st.column_config.NumberColumn(f"TPS ({cfg.unit}/run)", format="%.4f", help=h["TPS"]),
        "TPS CI low": st.column_config.NumberColumn("95% CI low", format="%.4f", help=h["CI"]),
        "TPS CI high": st.column_config.NumberColumn("95% CI high", format="%.4f", help=h["CI"]),
        "± SE": st.column_config.NumberColumn("± SE", format="%.4f", help="Standard error over trajectories."),
        "per step": st.column_config.NumberColumn("per weighted step", format="%.4f",
                                                  help="Σ TPS_i / Σ w_t: a display normalisation, not the score."),
        "skill": st.column_config.NumberColumn("skill", format="%.3f", help=h["skill"]),
        "skill ± SE": st.column_config.NumberColumn("skill ± SE", format="%.3f", help=h["skill"]),
        "AUROC": st.column_config.NumberColumn("AUROC", format="%.3f", help=h["AUROC"]),
        "AUROC CI": st.column_config.TextColumn("AUROC 95% CI", help=h["CI"]),
        "AUPRC": st.column_config.NumberColumn("AUPRC", format="%.3f", help=h["AUPRC"]),
        "AUPRC CI": st.column_config.TextColumn("AUPRC 95% CI", help=h["CI"]),
        "T-ECE": st.column_config.NumberColumn("T-ECE", format="%.3f", help=h["T-ECE"]),
        "T-ECE CI": st.column_config.TextColumn("T-ECE 95% CI", help=h["CI"]),
        "n runs": st.column_config.NumberColumn("n runs", help=h["n"]),
        "censored": st.column_config.NumberColumn("censored", help="Censored runs among the scored ones."),
        "n steps": st.column_config.NumberColumn("n steps", help="Scored (trajectory, step) pairs."),
        "clipped": st.column_config.NumberColumn("clipped", help="Forecasts moved to [ε, 1−ε] before scoring."),
        "q_Z fallback": st.column_config.NumberColumn("q_Z fallback",
                                                      help="Censored runs scored with q_Z = 0 for want of an estimate."),
    })
st.caption(f"TPS in {cfg.unit} per trajectory, higher is better, 0 is perfect; 95% percentile bootstrap CI over "
           f"trajectories ({cfg.n_boot} replicates). Skill is against the constant base-rate forecast "
           f"F ≡ {lb['ref_rate']:.3f} (mean TPS {C.fmt(lb['ref_mean'])}). AUROC, AUPRC and T-ECE use the steps of "
           f"complete runs only (they need an outcome).")
C.plot(lb["figure"], "overview_leaderboard", name="Leaderboard")

# ----------------------------------------------------------------- compare
st.subheader("Paired comparison against a baseline")
preds = list(cfg.predictors)
if len(preds) < 2:
    st.info("Select at least two predictors in the sidebar to compare them.")
    st.stop()
default = next((p for p in preds if F.is_reference(p)), preds[0])
baseline = st.selectbox("Baseline", preds, index=preds.index(default), key="baseline",
                        help="Every other predictor is compared with this one on the same runs: Δ = predictor − baseline.")
cmp = V.compare(cfg, data, baseline)
st.dataframe(
    cmp["table"].drop(columns="_name"), hide_index=True, width="stretch",
    column_config={
        "Δ TPS": st.column_config.NumberColumn(f"Δ TPS ({cfg.unit}/run)", format="%+.4f",
                                               help="Mean per-trajectory TPS difference (predictor − baseline); > 0 = predictor better."),
        "SE (TPS)": st.column_config.NumberColumn("SE", format="%.4f", help="SE of the per-trajectory differences."),
        "Δ/SE (TPS)": st.column_config.NumberColumn("Δ/SE (TPS)", format="%+.1f", help="|Δ/SE| > 2 ≈ significant at 5%."),
        "Δ AUROC": st.column_config.NumberColumn("Δ AUROC", format="%+.4f", help="AUROC difference (predictor − baseline)."),
        "SE (AUROC)": st.column_config.NumberColumn("SE", format="%.4f", help="Paired trajectory bootstrap SE."),
        "Δ/SE (AUROC)": st.column_config.NumberColumn("Δ/SE (AUROC)", format="%+.1f", help="|Δ/SE| > 2 ≈ significant at 5%."),
    })
st.caption(f"n = {data.n_trajectories} runs for TPS (paired by trajectory); AUROC on the "
           f"{int((~data.trajectories['censored']).sum())} complete runs.")

msgs = V.disagreements(cfg, cmp["table"], lb["metrics"], lb["res"], baseline)
if msgs:
    with st.container(border=True):
        st.markdown("#### :material/lightbulb: Where rank metrics and TPS disagree")
        for m in msgs:
            st.markdown("- " + m)
else:
    st.caption("Rank metrics and TPS agree on these predictors against this baseline.")
C.plot(cmp["figure"], "overview_delta", name="Δ/SE matrix")
