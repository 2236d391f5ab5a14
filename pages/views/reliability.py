"""Reliability: do the stated probabilities match observed success rates? Binned diagrams with
intervals, CORP isotonic curves with consistency bands, histograms, and MCB/DSC/UNC; and does the
forecast update rationally (excess movement and drift, tpsviz.diagnostics.updating)?"""

import numpy as np
import streamlit as st

from pages._ui import common as C
from pages._ui.charts import plot
from pages._ui import results as Rs
from pages._ui.evaluation import evaluation
from tpsviz.report import figures as F
from tpsviz.core import formatting as Fm

cfg, data = C.page("Reliability",
                   "A calibrated predictor's forecasts of 0.7 come true 70% of the time: its curve follows the diagonal.")
colors = Rs.selected_colors(cfg, data)
preds = list(cfg.predictors)

c = st.columns([2, 1]) + st.columns([1, 1])  # two rows: no label cut off at 800 px
scope = c[0].radio("Steps", ["all", "step", "final"], key="rel_scope", horizontal=True,
                   format_func={"all": "all steps (pooled)", "step": "one step t", "final": "final step"}.get,
                   help="Pool every (trajectory, step) pair, use only step t, or only each run's last forecast.")
tmax = int(data.trajectories["length"].max())
step = c[1].number_input("step t", 1, max(tmax, 1), 1, key="rel_step", disabled=scope != "step",
                         help="Step position within the run (1 = first forecast).")
n_bins = c[2].select_slider("Bins", [5, 10, 15, 20], 10, key="rel_bins", help="Equal-width bins of the forecast.")
pseudo = c[3].toggle("Censored = failure", False, key="rel_pseudo",
                     help="Off: only complete runs (they have an outcome). On: pseudo-labels, censored runs counted as "
                          "failures — the target of the simple censored score, labelled as such.")
if len(preds) > 6:
    st.info(f"{len(preds)} predictors selected: the diagrams show the first 6 (choose fewer in the sidebar).")
shown = preds[:6]
panels, hists = Rs.reliability(scope, int(step) if scope == "step" else None, pseudo, n_bins, a=Rs.analysis(cfg, predictors=shown))
label = {"all": "all steps", "step": f"step t = {step}", "final": "final step"}[scope]
lab_y = "pseudo-labels (censored = failure)" if pseudo else "complete runs"
if not panels:
    st.warning(f"No forecasts with an outcome at {label} ({lab_y}). Choose another step or include censored runs.",
               icon=":material/search:")
    st.stop()
if data.n_censored and not pseudo:
    st.info(f"**Complete runs only — a selected population.** {data.n_censored:,} of {data.n_trajectories:,} runs "
            f"({Fm.pct(data.n_censored, data.n_trajectories)}) were censored and have no outcome, so they are left out "
            "here. Which runs finish is not random (e.g. runs that were going well finish early, hard ones hit the "
            "budget), so on the complete runs even an honest predictor can sit off the "
            "diagonal. Switch on **Censored = failure** to see the population the simple censored score uses, or see "
            "the **Censoring** page.", icon=":material/filter_alt:")
n_pairs = max(p["n"] for p in panels)
n_traj = max(p["n_traj"] for p in panels)
plot(F.reliability_figure(panels, colors, f"Reliability, {label}, {lab_y}"), "rel_diagrams", name="Reliability diagrams",
       caption=f"Dots: observed success rate per bin with a 95% Wilson interval (size ∝ count; hover for n). Line: CORP "
               f"isotonic recalibration of the forecasts; grey: 90% consistency band — where the line would fall if the "
               f"forecasts were calibrated. n = {n_pairs:,} (trajectory, step) pairs from {n_traj:,} runs; intervals treat "
               f"steps as independent, so they are optimistic.")
dec, by_step = Rs.decomposition(scope, int(step) if scope == "step" else None, pseudo, by_step=scope == "all",
                                 a=Rs.analysis(cfg, predictors=shown))
plot(F.histogram_figure(hists, {k: v for k, v in colors.items() if k in shown}), "rel_hist",
       name="Forecast histograms", caption="Sharpness: where the forecasts sit. A spike near 1 = saturated confidence.")
if len(dec):
    plot(F.decomposition_figure(dec, colors, cfg.alpha, cfg.beta), "rel_decomp", name="CORP decomposition")
if len(dec):
    t = dec.assign(predictor=[F.display_name(p) for p in dec["predictor"]])
    st.dataframe(t, hide_index=True, width="stretch", column_config={
        "mcb": st.column_config.NumberColumn("MCB", format="%.4f", help="Miscalibration: loss removed by the isotonic "
                                             "recalibration. 0 = calibrated; lower is better."),
        "dsc": st.column_config.NumberColumn("DSC", format="%.4f", help="Discrimination: how much the recalibrated forecasts "
                                             "beat the base rate. Higher is better."),
        "unc": st.column_config.NumberColumn("UNC", format="%.4f", help="Uncertainty: loss of the base-rate forecast, the same for all."),
        "mean_score": st.column_config.NumberColumn(f"mean score ({cfg.unit}/step)", format="%.4f",
                                                    help="= −(MCB − DSC + UNC), per step, unweighted; higher is better."),
        "n": st.column_config.NumberColumn("n pairs", help="(trajectory, step) pairs."),
    })
    st.caption(f"Per-step score S with the current α = {cfg.alpha:g}, β = {cfg.beta:g} and ε = {cfg.eps:g}; "
               "no weights (the decomposition is of the mean per-step loss).")
if scope == "all" and len(by_step):
    plot(F.decomposition_by_step_figure(by_step, colors, cfg.alpha, cfg.beta), "rel_by_step",
           name="Decomposition by step", caption="Per step t (steps with ≥ 30 pairs): where miscalibration and "
                                                 "discrimination live along the run.")

# ----------------------------------------------------------------- rational updating (docs/theory.md)
st.subheader("Does it update rationally?")
st.markdown(
    "An honest success probability moves only as much as what the agent learns justifies. Along a run, the sum "
    "of its squared moves (a finished run ends with one more move, to its outcome) should on average equal the "
    "uncertainty it resolves, F₁(1 − F₁) − F_end(1 − F_end). **Excess movement** is the difference, averaged "
    "over runs: about 0 for an honest forecast, **positive when it over-reacts** (jumps around more than the "
    "evidence warrants) and **negative when it under-reacts** (sticks to its first guess). It needs no bins and "
    "no model of the outcome, and it stays valid on runs the budget cut off. It checks how the forecast moves, "
    "not how much it knows: a constant forecast passes; TPS and skill measure the rest.")
moves = evaluation(cfg, ci=False, verdicts=False, predictors=shown).excess_movement  # what `score` prints


def _reads(z: float) -> str:
    if not np.isfinite(z):
        return "–"
    if z > 3:
        return "over-reacts"
    if z < -3:
        return "under-reacts"
    return "consistent with honest updating"


mt = moves.reset_index().assign(predictor=lambda d: [F.display_name(p) for p in d["predictor"]],
                                reading=lambda d: [_reads(z) for z in d["z"]])
st.dataframe(mt[["predictor", "value", "se", "z", "reading", "n_runs", "n_censored"]], hide_index=True, width="stretch",
             column_config={
                 "value": st.column_config.NumberColumn("excess movement / run", format="%+.4f",
                                                        help="Mean over runs of Σ (F_{t+1} − F_t)² − [F₁(1 − F₁) − F_end(1 − F_end)]."),
                 "se": st.column_config.NumberColumn("SE", format="%.4f", help="Standard error across runs."),
                 "z": st.column_config.NumberColumn("z", format="%+.1f", help="value / SE; |z| > 3: clearly not honest updating."),
                 "n_runs": st.column_config.NumberColumn("runs", help="Runs with at least one forecast."),
                 "n_censored": st.column_config.NumberColumn("censored", help="Of them, cut off by the budget (path ends at the last forecast)."),
             })
drift_by = st.radio("Drift by", ["forecast bin", "step"], horizontal=True, key="rel_drift_by",
                    help="Mean next move of the forecast, grouped by its current value or by its position in the run.")
tables = Rs.drift("bin" if drift_by == "forecast bin" else "step", a=Rs.analysis(cfg, predictors=shown))
# a mean of a few moves has no usable interval (one move: none at all) and reads as drift: not drawn, and said
MIN_MOVES = 20
few = sum(int((t["n"] < MIN_MOVES).sum()) for t in tables.values())
tables = {n: t[t["n"] >= MIN_MOVES] for n, t in tables.items()}
plot(F.drift_figure(tables, colors, "bin" if drift_by == "forecast bin" else "step"), "rel_drift", name="Drift",
       caption="Mean next move Fₜ₊₁ − Fₜ (a finished run's last move is to its outcome) with 95% intervals across "
               "moves. An honest forecast has no drift: where it is, on average it stays. A curve below 0 at high F "
               "and above 0 at low F is an over-confident forecast being pulled back."
               + (f" Not drawn: {few} point(s) from fewer than {MIN_MOVES} moves." if few else "")
               + (" Steps from 30 on are pooled into t = 30." if drift_by == "step" else ""))
