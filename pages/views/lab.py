"""Scoring rule lab: what the α/β sliders and the weight schedule mean, what a confidence threshold is
worth as a hand-off policy (tpsviz.diagnostics.monitoring.deferral, beside the Murphy diagram), and why AUROC and ECE miss
what TPS sees — for stakeholders."""

import numpy as np
import pandas as pd
import streamlit as st

from pages._ui import common as C
from pages._ui.charts import plot
from pages._ui import results as Rs
from pages._ui import compute as V
from pages._ui import state as S
from tpsviz.report import figures as F

cfg, data = C.page("Scoring rule lab",
                   "A proper scoring rule gives the best expected score to whoever reports their honest probability. "
                   "This page shows what the current settings reward.")

# ----------------------------------------------------------------- the score
st.subheader("The score of one forecast")
st.markdown("An agent says *\"I'm p sure this will succeed\"*. If it succeeds it earns **S(p, 1)**, if it fails "
            "**S(p, 0)**. Both are ≤ 0: 0 is a perfect, confident, correct call. Saying 0.99 and failing costs far "
            "more than saying 0.6 and failing.")
curves, omega = V.score_curves(cfg)
c = st.columns(2)
with c[0]:
    plot(curves, "lab_curves", name="Score curves",
           caption=f"Current family: α = {cfg.alpha:g}, β = {cfg.beta:g} ({cfg.family_name}); forecasts clipped to "
                   f"[ε, 1−ε] with ε = {cfg.eps:g}.")
with c[1]:
    plot(omega, "lab_omega", name="Threshold weight",
           caption="ω(c): how much the score cares about each decision threshold c (\"act as if it will succeed when "
                   "p ≥ c\"). The α/β sliders move this weight: log weighs the extremes, Brier all thresholds "
                   "equally, asymmetric presets one side.")

st.subheader("Murphy diagram")
fig, checks = V.murphy(cfg, data)
plot(fig, "lab_murphy", name="Murphy diagram",
       caption="For each threshold c, the mean cost of deciding by 'F ≥ c' (lower is better), pooled over the steps of "
               "complete runs. A predictor whose curve is lower everywhere is better for every user; the shaded ω "
               "says which thresholds the current score counts.")
if len(checks):
    with st.expander("Check: the ω-weighted area under each Murphy curve equals minus the mean score"):
        st.dataframe(checks, hide_index=True, column_config={
            "ω-weighted area": st.column_config.NumberColumn(format="%.6f", help="∫ mean ℓ_c · ω(c) dc (loss)."),
            "mean score": st.column_config.NumberColumn(format="%.6f", help="Mean S(F, Y) per step (reward = −loss)."),
        })

# ----------------------------------------------------------------- deferral (tpsviz.diagnostics.monitoring.deferral)
st.subheader("What is a threshold worth? Hand off when F < τ")
st.markdown("A deployed agent can stop and hand the task to a person at the first step where its confidence falls "
            "below a threshold τ. Whether that pays depends on what a success, a failure, a hand-off and a step are "
            "worth to you: enter them below. The curve is the mean utility per run of each τ on this log; the star "
            "is the best τ (a range when the curve is flat at its maximum). The thresholds are the Murphy diagram's c.")
uc = st.columns(5)
u_succ = uc[0].number_input("value of a success", 0.0, 1e6, 1.0, 0.1, key="dfr_success",
                            help="What a task the agent completes correctly is worth.")
u_fail = uc[1].number_input("cost of a failure", 0.0, 1e6, 1.0, 0.1, key="dfr_failure",
                            help="What a wrong (or, cut by the budget, missing) result costs.")
u_hand = uc[2].number_input("cost of a hand-off", 0.0, 1e6, 0.3, 0.1, key="dfr_handoff",
                            help="What it costs to give the task to a person.")
u_step = uc[3].number_input("cost per step", 0.0, 1e6, 0.0, 0.01, key="dfr_step", format="%.3f",
                            help="What each step the agent runs costs (compute, latency).")
cens_choice = uc[4].selectbox("censored runs", ["count as failures", "leave out"], key="dfr_cens",
                              help="A run the budget cut off before it finished, and that was not handed off.")
AURC_HELP = ("AURC: the area under the risk–coverage curve, that is the failure rate among the runs the agent "
             "finishes, averaged over coverage from 0 to 100%. It does not depend on the utility table: it is low "
             "when the forecast puts failures below successes. Lower is better.")
dfr = Rs.deferral_curves((u_succ, u_fail, u_hand, u_step),
                         "failure" if cens_choice == "count as failures" else "exclude", a=Rs.analysis(cfg))
plot(F.deferral_figure(dfr, Rs.selected_colors(cfg, data)), "lab_deferral", name="Deferral",
       caption="Left: mean utility per run of the policy 'hand off at the first step with F < τ' (τ = 0: never hand "
               "off), with a pointwise 95% bootstrap band over runs when three or fewer predictors are selected; star: the best τ "
               "(two stars when the curve is flat at its maximum: every τ between them is equally good). Right: "
               "risk–coverage — the failure rate among the runs the agent finishes against the share it finishes, as "
               "τ moves.")
first = next(iter(dfr.values()), None)
rows = [{"predictor": F.display_name(n), "best τ": r.best_tau_label(),
         "95% CI of best τ": f"[{r.best_tau_ci[0]:.2f}, {r.best_tau_ci[1]:.2f}]" if np.isfinite(r.best_tau_ci[0]) else "–",
         "utility / run at best τ": r.best_utility,
         "never hand off (τ = 0)": float(r.curve["utility"].iloc[0]),
         "handed off at best τ": float(r.curve.loc[r.curve["tau"] == r.best_tau, "handoff_rate"].iloc[0]),
         "AURC": r.aurc} for n, r in dfr.items()]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config={
    "best τ": st.column_config.TextColumn(help="The τ with the largest mean utility per run; a range 'a–b, flat' "
                                                "when the curve is flat at its maximum (every τ in it is equally "
                                                "good)."),
    "utility / run at best τ": st.column_config.NumberColumn(format="%+.3f"),
    "never hand off (τ = 0)": st.column_config.NumberColumn(format="%+.3f"),
    "handed off at best τ": st.column_config.NumberColumn(format="percent",
                                                         help="Share of runs handed off at the (smallest) best τ."),
    "AURC": st.column_config.NumberColumn(format="%.3f", help=AURC_HELP),
})
if first is not None:
    st.caption(f"{first.n_runs:,} runs" + (f" ({first.n_excluded:,} censored left out)" if first.n_excluded else "")
               + f"; best τ's interval: percentile bootstrap over runs ({min(cfg.n_boot, 1000)} replicates; "
                 "the best τ of each replicate's curve, its whole range when that curve is flat at its maximum). "
               + AURC_HELP)

# ----------------------------------------------------------------- schedule
st.subheader("The weight schedule")
s = cfg.schedule_obj
plot(V.schedule_plot(cfg, data), "lab_schedule", name="Weight schedule")
icon = S.VERDICT_ICON.get(s.verdict.status, "")
st.markdown(f"{icon} **{s.verdict.status}.** {s.verdict.reason}")

# ----------------------------------------------------------------- why not AUROC
st.subheader("Why AUROC and ECE are not enough")
demos = V.why_not_auroc(cfg, data)
views = V.demo_views(demos, cfg, Rs.colors(data))
st.caption(f"Built on the {data.n_trajectories:,} runs of this log with the current α, β, "
           f"schedule, censoring mode and ε (the CLI and the report use the same functions). Grey bars are the "
           f"modified forecasts; the others keep their predictor's colour. TPS in {cfg.unit} per run (↑ better); "
           f"whiskers: 95% interval (± 1.96 SE over runs).")
texts = {
    "distortion": ("1 · Same ranking, different honesty",
                   "Making every forecast more extreme keeps their order, so AUROC does not move at all — but the "
                   "probabilities are now over-confident, and TPS drops."),
    "binmean": ("2 · Perfect bins, lost information",
                "Replace each forecast by the success rate of its bin: binned calibration (T-ECE) becomes exactly 0, a "
                "'perfect' score — yet the bin means throw away everything the forecast knew inside a bin and along "
                "the run, and TPS ranks them below the original forecast when the difference is clear."),
    "phimean": ("3 · Gaming a one-number summary",
                "A trace that is honest until the last step and then picks a value so that its *average* hits the best "
                "guess wins on the score of the mean forecast, while TPS, which scores every step, catches the "
                "distorted report."),
}
for i, v in enumerate(views):
    title, text = texts[v["key"]]
    st.markdown(f"**{title}**", help=V.PHI_MEAN_HELP if v["key"] == "phimean" else None)
    if "error" in v:
        st.info(f"This demonstration is not available on this log: {C.md(v['error'])}.")
        continue
    c1, c2 = st.columns([1, 1], vertical_alignment="top")
    with c1:
        st.caption(text)
        st.dataframe(v["table"], hide_index=True, width="stretch",
                     column_config={"forecast": st.column_config.TextColumn(
                         "forecast", width="medium",
                         help=V.PHI_MEAN_HELP if v["key"] == "phimean" else "The logged forecast and its modification.")})
        st.markdown(C.md(v["explanation"]))
        if v["difference"]:
            st.caption(C.md(v["difference"]))
    with c2:
        plot(v["figure"], f"lab_demo_{i}", name=title)
