"""Scoring rule lab: what the α/β sliders and the weight schedule mean, and why AUROC and ECE miss
what TPS sees — for stakeholders."""

import streamlit as st

from pages._ui import common as C
from pages._ui import results as Rs
from pages._ui import state as S
from pages._ui import compute as V

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
    C.plot(curves, "lab_curves", name="Score curves",
           caption=f"Current family: α = {cfg.alpha:g}, β = {cfg.beta:g} ({cfg.family_name}); forecasts clipped to "
                   f"[ε, 1−ε] with ε = {cfg.eps:g}.")
with c[1]:
    C.plot(omega, "lab_omega", name="Threshold weight",
           caption="ω(c): how much the score cares about each decision threshold c (\"act as if it will succeed when "
                   "p ≥ c\"). The α/β sliders move this weight: log weighs the extremes, Brier all thresholds "
                   "equally, asymmetric presets one side.")

st.subheader("Murphy diagram")
fig, checks = V.murphy(cfg, data)
C.plot(fig, "lab_murphy", name="Murphy diagram",
       caption="For each threshold c, the mean cost of deciding by 'F ≥ c' (lower is better), pooled over the steps of "
               "complete runs. A predictor whose curve is lower everywhere is better for every user; the shaded ω "
               "says which thresholds the current score counts.")
if len(checks):
    with st.expander("Check: the ω-weighted area under each Murphy curve equals minus the mean score"):
        st.dataframe(checks, hide_index=True, column_config={
            "ω-weighted area": st.column_config.NumberColumn(format="%.6f", help="∫ mean ℓ_c · ω(c) dc (loss)."),
            "mean score": st.column_config.NumberColumn(format="%.6f", help="Mean S(F, Y) per step (reward = −loss)."),
        })

# ----------------------------------------------------------------- schedule
st.subheader("The weight schedule")
s = cfg.schedule_obj
C.plot(V.schedule_plot(cfg, data), "lab_schedule", name="Weight schedule")
from pages._ui.sidebar import VERDICT_ICON
icon = VERDICT_ICON.get(s.verdict.status, "")
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
        C.plot(v["figure"], f"lab_demo_{i}", name=title)
