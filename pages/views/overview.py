"""Overview / Compare: dataset summary, leaderboard, Δ/SE against a baseline, where metrics disagree.

Every number comes from the core (tps.compute_tps, diagnostics.skill_table / base_rate_reference /
metric_table, compare.compare / z_matrix), the same functions the CLI prints. On a large log the
slow metric bootstraps run last: the page first shows TPS, skill and metric point estimates, then
fills in the metric CIs and the paired AUROC/T-ECE comparison.
"""

import streamlit as st

from pages._ui import common as C
from pages._ui import reading as R
from pages._ui import compute as V
from pages._ui import state as S
from pages._ui.text import code
from tpsviz import figures as F
from tpsviz.diagnostics import METRIC_INFO

cfg, data = C.page("Overview / Compare",
                   "Which uncertainty signal is most honest? TPS rewards reporting the true probability of success "
                   "at every step; AUROC/AUPRC only check ranking and T-ECE only bin-level calibration.")
large = S.is_large(data)

# ----------------------------------------------------------------- dataset summary
t = data.trajectories
comp = t[~t["censored"]]
lb = V.leaderboard(cfg, data, ci=not large)
c = st.columns(5)
c[0].metric("Trajectories", f"{data.n_trajectories:,}", help="Runs after metadata filters.")
c[1].metric("Steps", f"{data.n_steps:,}", help="(trajectory, step) rows with forecasts.")
c[2].metric("Censored", f"{data.n_censored:,} ({C.pct(data.n_censored, data.n_trajectories)})",
            help="Runs stopped by an administrative limit before their outcome was observed.")
c[3].metric("Base-rate reference", f"F ≡ {lb['ref_rate']:.3f}",
            help=f"The constant forecast skill is measured against: the {lb['ref_rule']}. It follows the censoring "
                 f"mode, so it is the constant the current score rewards.")
c[4].metric("Mean length" + (" (done / cens.)" if data.n_censored and len(comp) else ""),
            f"{comp['length'].mean():.1f} / {t.loc[t['censored'], 'length'].mean():.1f}" if data.n_censored and len(comp)
            else f"{t['length'].mean():.1f}",
            help="Observed steps per run: complete runs until their end, censored runs until the stop Z.")
rate_cc = comp["outcome"].mean() if len(comp) else float("nan")
st.caption(f"Success rate of the {len(comp):,} complete runs: {C.fmt(rate_cc, 3)}"
           + (f" (the {data.n_censored:,} censored runs have no outcome)." if data.n_censored else "."))
auto = st.session_state.get("_auto_recal_note")
if auto and any(n in cfg.predictors for n in auto):
    st.info("**This log has raw signals only** (no probability column), so each signal was turned into a "
            "probability by a cross-fitted Platt recalibration (folds by trajectory): "
            + ", ".join(code(n) for n in auto) + ". Change the method on the **Recalibration** page.",
            icon=":material/tune:")
if data.reading.get("treatment"):
    R.reading_panel(data)
else:
    for note in data.notes:
        st.caption("Note from the loader: " + C.md(note))

# ----------------------------------------------------------------- leaderboard
st.subheader("Leaderboard")
if lb["infinite_note"]:
    st.warning(lb["infinite_note"], icon=":material/all_inclusive:")
h = C.column_help()
ci_help = h["CI"] if lb["ci_how"] == "bootstrap" else "Bootstrap off (0 replicates): mean ± 1.96 SE, a normal approximation."
board = st.empty()


def _show_board(tab):
    board.dataframe(
        tab, hide_index=True, width="stretch",
        column_config={
            "predictor": st.column_config.TextColumn("predictor", help="conf_<name> column; (reference) = truthful/oracle."),
            "TPS": st.column_config.TextColumn(f"TPS ({cfg.unit}/run)", help=h["TPS"]),
            "95% CI": st.column_config.TextColumn("95% CI", help=ci_help),
            "skill": st.column_config.TextColumn("skill ± SE", help=h["skill"]),
            "AUROC": st.column_config.TextColumn("AUROC", help=METRIC_INFO["auroc"]),
            "T-ECE": st.column_config.TextColumn("T-ECE", help=METRIC_INFO["tece_pooled"]),
            "n runs": st.column_config.NumberColumn("n runs", help=h["n"]),
            "censored": st.column_config.NumberColumn("censored", help="Censored runs among the scored ones."),
            "clipped": st.column_config.NumberColumn(
                "clipped" if cfg.eps > 0 else "exactly 0/1",
                help="Forecasts moved to [ε, 1−ε] before scoring." if cfg.eps > 0 else
                "ε = 0: forecasts are not clipped; this many are exactly 0 or 1 (−∞ under an unbounded score)."),
        })


_show_board(lb["table"])
ci_text = (f"95% percentile bootstrap CI over trajectories ({cfg.n_boot} replicates)" if lb["ci_how"] == "bootstrap"
           else "95% interval = mean ± 1.96 SE (bootstrap off; raise it in the sidebar's Uncertainty box)")
st.caption(f"TPS in {cfg.unit} per trajectory, higher is better, 0 is perfect; {ci_text}. **Skill** = 1 − TPS/TPS_ref "
           f"against the constant forecast **F ≡ {lb['ref_rate']:.3f}**, the {lb['ref_rule']} — under "
           f"{S.censoring_label(cfg)} this is the constant the score itself rewards, so a predictor that always says "
           f"{lb['ref_rate']:.3f} has skill 0 (mean TPS_ref {C.fmt(lb['ref_mean'])} over all scored runs). "
           f"AUROC and T-ECE use the steps of complete runs only (they need an outcome).")
details = st.expander("All columns: SE, per-step TPS, skill CI, AUPRC, metric CIs, final-step metrics")
C.plot(lb["figure"], "overview_leaderboard", name="Leaderboard")

# ----------------------------------------------------------------- compare
st.subheader("Paired comparison against a baseline")
preds = list(cfg.predictors)
cmp_box = st.container()
callout = st.container()
if len(preds) >= 2:
    default = next((p for p in preds if F.is_reference(p)), preds[0])
    baseline = cmp_box.selectbox("Baseline", preds, index=preds.index(default), key="baseline",
                                 format_func=F.display_name,
                                 help="Every other predictor is compared with this one on the same runs: "
                                      "Δ = predictor − baseline.")
    cmp_table = cmp_box.empty()
    cmp_caption = cmp_box.empty()
    cmp_cols = {
        "Δ TPS": st.column_config.TextColumn(f"Δ TPS ({cfg.unit}/run)",
                                             help="Mean per-trajectory TPS difference (predictor − baseline); > 0 = predictor better."),
        "SE (TPS)": st.column_config.TextColumn("SE", help="SE of the per-trajectory differences (analytic)."),
        "Δ/SE (TPS)": st.column_config.TextColumn("Δ/SE (TPS)", help="|Δ/SE| > 2 ≈ significant at 5%."),
        "Δ AUROC": st.column_config.TextColumn("Δ AUROC", help="AUROC difference (predictor − baseline), complete runs."),
        "SE (AUROC)": st.column_config.TextColumn("SE", help="Paired trajectory bootstrap SE."),
        "Δ/SE (AUROC)": st.column_config.TextColumn("Δ/SE (AUROC)",
                                                    help="|Δ/SE| > 2 ≈ significant at 5%. '— (identical)': both rank "
                                                         "every step the same way, so the difference is exactly 0."),
        "Δ T-ECE": st.column_config.TextColumn("Δ T-ECE", help="T-ECE difference; > 0 = predictor worse calibrated (binned)."),
        "Δ/SE (T-ECE)": st.column_config.TextColumn("Δ/SE (T-ECE)", help="Paired trajectory bootstrap."),
    }
    cmp_tps = V.compare(cfg, data, baseline, metrics=False)
    if large:
        cmp_table.dataframe(cmp_tps["table"], hide_index=True, width="stretch", column_config=cmp_cols)
        cmp_caption.caption("Computing the paired AUROC / T-ECE bootstrap (large log)…")
    C.plot(cmp_tps["figure"], "overview_delta", name="Δ/SE matrix")
else:
    cmp_box.info("Select at least two predictors in the sidebar to compare them.")

# ----------------------------------------------------------------- slow parts last (metric bootstraps)
if large:
    with st.spinner(f"Metric CIs ({S.metric_boot(cfg)} replicates over {data.n_steps:,} rows)…"):
        lb = V.leaderboard(cfg, data, ci=True)
    _show_board(lb["table"])
with details:
    st.dataframe(lb["details"], hide_index=True, width="stretch")
    st.caption(f"TPS interval as above; {S.metric_boot_note(cfg)}; metric CIs resample trajectories. "
               "'per weighted step' = Σ TPS_i / Σ w_t, a display normalisation, not the score.")
if len(preds) >= 2:
    cmp = V.compare(cfg, data, baseline, metrics=True)
    cmp_table.dataframe(cmp["table"], hide_index=True, width="stretch", column_config=cmp_cols)
    cmp_caption.caption(f"TPS on {int(cmp['raw']['n_runs'].max()) if len(cmp['raw']) else 0:,} runs, paired by "
                        f"trajectory; AUROC and T-ECE on the {len(comp):,} complete runs ({S.metric_boot_note(cfg)}).")
    msgs = V.disagreements(cfg, cmp["raw"], lb["metrics"], lb["res"], baseline)
    with callout:
        if msgs:
            with st.container(border=True):
                st.markdown("#### :material/lightbulb: Where rank metrics and TPS disagree")
                for m in msgs:
                    st.markdown("- " + m)
        else:
            st.caption("Rank metrics and TPS agree on these predictors against this baseline.")
