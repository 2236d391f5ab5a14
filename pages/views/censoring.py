"""Censoring: who gets censored, how each treatment changes TPS, the q_Z band, the artificial check,
and the Monte-Carlo audit when rollouts are given."""

import numpy as np
import pandas as pd
import streamlit as st

import tpsviz
from pages._ui import common as C
from pages._ui.charts import plot
from pages._ui import results as Rs
from pages._ui import loading as L
from pages._ui.wording import say
from tpsviz.report import figures as F
from tpsviz.diagnostics.populations import censoring_summary, differs_beyond_ci, forecasts_by_population, qz_band
from tpsviz.core import formatting as Fm
from tpsviz.core.inference import summary_interval


cfg, data = C.page("Censoring",
                   "A censored run was stopped by an administrative limit (step budget, cost, time) before its outcome "
                   "was observed. How it is scored can change the verdict.")
colors = Rs.selected_colors(cfg, data)
preds = list(cfg.predictors)
t = data.trajectories
cens = t["censored"].to_numpy()

if not cens.any():
    st.info("**No censored runs in this log** (after filters): every run has an observed outcome, so all censoring "
            "treatments give the same TPS. The artificial-censoring check below still works on complete runs.",
            icon=":material/check_circle:")

# ----------------------------------------------------------------- populations
st.subheader("Censored vs complete runs")
summ = censoring_summary(data)
lc, lk, ratio, rate = (summ["mean_length_censored"], summ["mean_length_complete"], summ["length_ratio"],
                       summ["success_rate"])
C.tiles([
    ("Censored runs", f"{summ['n_censored']:,} of {summ['n_runs']:,} ({Fm.pct(summ['n_censored'], summ['n_runs'])})",
     "Runs whose outcome is unknown because they were stopped early."),
    ("Mean length, censored / complete", f"{lc:.1f} / {lk:.1f}" if np.isfinite(ratio) else "n/a",
     "Observed steps; censored runs stop at Z.", f"×{ratio:.1f} longer" if np.isfinite(ratio) else None),
    ("Success rate, complete runs", f"{rate:.1%}" if np.isfinite(rate) else "n/a",
     "Complete-case evaluation keeps only these runs: a different population when censoring correlates with "
     "difficulty."),
    ("Censored runs with q_Z", f"{summ['n_censored_with_qz']:,}",
     "q_Z in the log: an honest estimate of P(success | history at the stop Z) supplied by the evaluator."),
])
cc = st.columns([4, 5])  # (the table's five columns were cut in half the width)
with cc[0]:
    plot(F.length_histogram_figure(t), "cens_lengths", name="Run lengths")
with cc[1]:
    pop = forecasts_by_population(data, preds)
    rows = pd.DataFrame({"predictor": [F.display_name(p) for p in pop["predictor"]], "runs": pop["runs"],
                         "mean F, all steps": pop["mean_all"], "mean F, last step": pop["mean_last"],
                         "n runs": pop["n_runs"]})
    st.markdown("**Forecasts in each population**", help="Mean reported P(success): over all steps and at the "
                "last observed step. Censored runs usually look less confident late.")
    st.dataframe(rows, hide_index=True, width="stretch",
                 column_config={"mean F, all steps": st.column_config.NumberColumn(format="%.3f"),
                                "mean F, last step": st.column_config.NumberColumn(format="%.3f"),
                                "n runs": st.column_config.NumberColumn(width="small")})

# ----------------------------------------------------------------- treatments
st.subheader("TPS under each treatment")
# exact mode is exact (docs/theory.md §4): with a censored run lacking q_Z under this q_Z source it is left out
exact_no = L.exact_refusal(data, Rs.current_source(), (cfg.qz_source, float(cfg.qz_const)))
modes = [m for m in ("complete", "simple", "exact", "upper") if m != "exact" or exact_no is None]
qnote = Rs.censoring_label(cfg, "exact")  # ("exact (q_Z from …)": the mode names itself)
if exact_no is not None:
    st.caption(f"Exact is left out of this section: {exact_no.n_missing:,} of the {exact_no.n_censored:,} censored "
               f"runs have no q_Z under the sidebar's q_Z source (set it to *one value*, or give a rollouts file "
               "covering every censored run, to see it).")
treatments_box, shift_box = st.empty(), st.empty()


def _key(name: str, boot: bool) -> str:
    """Element key: a large log draws points and then intervals in one run, under two keys."""
    return name if boot else name + "_points"


def _treatments(boot: bool) -> dict:
    """TPSResult per censoring mode: with bootstrap CIs, or points with mean ± z·SE intervals."""
    return {m: (Rs.tps if boot else Rs.tps_points)(a=Rs.analysis(cfg, censoring=m)) for m in modes}


def _show_treatments(results: dict, boot: bool) -> None:
    rows = []
    for m in modes:
        s = results[m].summary
        for p in s.index:
            r = s.loc[p]
            # the bootstrap CI, or mean ± z·SE while it is computed / when it is off
            lo, hi, _ = summary_interval(r, results[m].settings.level)
            rows.append({"predictor": p, "mode": Rs.censoring_label(cfg, m), "key": m, "tps_mean": r["tps_mean"],
                         "tps_ci_low": lo, "tps_ci_high": hi,
                         "n_trajectories": int(r["n_trajectories"]), "n_censored": int(r["n_censored"])})
    table = pd.DataFrame(rows)
    how = ("95% bootstrap CI" if boot and cfg.n_boot else
           "95% interval = mean ± 1.96 SE" + (" (bootstrap off)" if boot else
                                              " while the bootstrap CI is computed (large log)"))
    cur = results[cfg.censoring].summary
    with treatments_box.container():
        plot(F.censoring_modes_figure(table, colors, cfg.alpha, cfg.beta, current=Rs.censoring_label(cfg)),
               _key("cens_modes", boot), name="TPS by censoring treatment")
        st.caption(f"{cfg.unit} per run, higher is better, {how}"
                   + (f"; {qnote}" if exact_no is None else "") +
                   ". The current sidebar mode (larger, outlined markers) is **" + Rs.censoring_label(cfg) + "**.")
        st.markdown(f"**Under the current mode — {Rs.censoring_label(cfg)}**",
                    help="The mode chosen in the sidebar; every other page uses it.")
        st.dataframe(pd.DataFrame({
            "predictor": [F.display_name(p) for p in cur.index],
            f"TPS ({cfg.unit}/run)": [Fm.num(v) for v in cur["tps_mean"]],
            "95% CI": [Fm.interval(*summary_interval(cur.loc[p])[:2]) for p in cur.index],
            "n runs": cur["n_trajectories"].to_numpy(), "censored runs scored": cur["n_censored"].to_numpy()}),
            hide_index=True, width="stretch",
            key=_key("cens_current", boot))


def _show_shift(boot: bool) -> None:
    a = Rs.analysis(cfg, n_boot=None if boot else 0)
    sh_cs = Rs.shift("complete", "simple", a=a)
    sh_se = Rs.shift("simple", "exact", a=a) if exact_no is None else None
    with shift_box.container():
        st.markdown("**Shift between treatments** (per predictor; 95% trajectory-bootstrap CI)",
                    help="Difference of mean TPS. Complete-case averages over complete runs only, so its shift mixes "
                         "a change of population with the censored runs' scores.")
        st.dataframe(pd.DataFrame({
            "predictor": [F.display_name(p) for p in preds],
            f"simple − complete-case ({cfg.unit})": [Fm.num(sh_cs.loc[p, "shift"], "+.4f") for p in preds],
            "95% CI (simple − cc)": [Fm.interval(sh_cs.loc[p, "shift_ci_low"], sh_cs.loc[p, "shift_ci_high"], "+.4f")
                                     for p in preds],
            f"exact − simple ({cfg.unit})": [Fm.num(sh_se.loc[p, "shift"], "+.4f") if sh_se is not None else
                                             "needs q_Z" for p in preds],
            "95% CI (exact − simple)": [Fm.interval(sh_se.loc[p, "shift_ci_low"], sh_se.loc[p, "shift_ci_high"], "+.4f")
                                        if sh_se is not None else "" for p in preds],
            "per step: simple − cc": [Fm.num(sh_cs.loc[p, "shift_step"], "+.4f") for p in preds],
        }), hide_index=True, width="stretch", key=_key("cens_shift", boot), column_config={
            f"simple − complete-case ({cfg.unit})": st.column_config.TextColumn(
                help="> 0: including censored runs as failures raises the mean (per trajectory)."),
            f"exact − simple ({cfg.unit})": st.column_config.TextColumn(help=f"Effect of using q_Z instead of 0 ({qnote})."),
            "per step: simple − cc": st.column_config.TextColumn(
                help="The same shift on the per-step scale (Σ TPS / Σ w_t); it can differ in sign when censored runs "
                     "are long."),
        })
        st.caption(f"Trajectory-bootstrap CI ({cfg.n_boot} replicates) resampling the whole log, so the change of "
                   "population under complete-case is part of the uncertainty." if boot else
                   "Computing the trajectory-bootstrap CIs (large log)…")


large = L.is_large(data)  # a large log: the points first, the bootstrap CIs at the end of the page
points = _treatments(boot=False)
if large:
    _show_treatments(points, boot=False)
    _show_shift(boot=False)
else:
    _show_treatments(_treatments(boot=True), boot=True)
    _show_shift(boot=True)

# ----------------------------------------------------------------- q_Z band
st.subheader("q_Z sensitivity band")
sweep = qz_band(points["simple"].summary["tps_mean"], points["upper"].summary["tps_mean"],  # means: no CIs needed
                n_censored=summ["n_censored"])  # (none: flat, with a note)
marks = {"current q_Z": cfg.qz_const} if cfg.censoring == "exact" and cfg.qz_source == "constant" else None
plot(F.qz_band_figure(sweep, colors, cfg.alpha, cfg.beta, marks, n_censored=summ["n_censored"]), "cens_band",
       caption="Each line gives every censored run the same q_Z. TPS_cen is linear in q_Z, so the lines at q_Z = 0 "
               "(simple) and 1 (upper) bound every possible exact score: if the ranking does not change across the "
               "band, no model of q_Z can change it.", name="q_Z sensitivity band")

# ----------------------------------------------------------------- artificial censoring
with st.expander("Advanced checks: artificial censoring, a self-check of the censored score"):
    st.caption("Cuts complete runs at an artificial budget and checks that the censored score equals its closed "
               "form (docs/theory.md, censoring). It tests tpsviz, not your predictors.")
    comp_len = t.loc[~cens, "length"]
    if len(comp_len) == 0 or comp_len.max() < 2:
        st.info("The check needs complete runs with at least 2 steps.")
    else:
        bmax = int(comp_len.max()) - 1
        if bmax == 1:  # a slider needs two values: the only possible budget is B = 1
            budget = 1
            st.caption("Artificial budget B = 1 step (the longest complete run has 2 steps).")
        else:
            if not 1 <= st.session_state.get("cens_budget", 1) <= bmax:  # kept from a longer log
                del st.session_state["cens_budget"]
            budget = st.slider("Artificial budget B (steps)", 1, bmax, min(max(int(comp_len.median()) // 2, 1), bmax),
                               key="cens_budget", help="Complete runs longer than B are cut after step B and scored as "
                                                       "censored (simple). The closed form must match the direct difference.")
        try:
            chk = tpsviz.artificial_censoring_check(data, budget, cfg.score_settings(n_boot=0), preds)
            if chk.empty:
                st.info(f"No complete run is longer than B = {budget}.")
            else:
                n_runs = chk["trajectory_id"].nunique()
                mx = chk["abs_error"].max()
                st.markdown(f"On **{n_runs}** complete run{'s' if n_runs != 1 else ''} longer than B = {budget}: TPS_full − TPS_cen,simple(B) equals "
                            f"Σ_(t≤B) w_t·Y·[S(F_t,1) − S(F_t,0)] + Σ_(t>B) w_t·S(F_t,Y) with max |error| = **{mx:.1e}** "
                            + (":green[:material/check_circle: floating-point precision]" if mx < 1e-8 else ":orange[:material/warning:]"),
                            help="docs/theory.md, censoring: the decomposition of the simple censored score.")
                plot(F.artificial_check_figure(chk, colors), "cens_check", name="Artificial censoring check")
        except ValueError as e:
            st.warning(f"The check is not available with these settings: {C.md(say(e))}", icon=":material/warning:")

# ----------------------------------------------------------------- MC audit
st.subheader("Monte-Carlo audit")
ro = L.get_rollouts()
if ro is None:
    st.info("No rollouts file. Give one (trajectory_id, outcome per simulated continuation of a censored run) with "
            "the upload or path source to estimate q̂_Z and compare the exact and simple scores. The WebShop-like "
            "demo has one.", icon=":material/casino:")
elif L.is_failure(ro):
    C.show_failure(ro)
else:
    au = Rs.mc_audit(a=Rs.analysis(cfg))
    qz = au.qz.set_index("trajectory_id").reindex(t.loc[cens, "trajectory_id"].astype(str))
    audit = pd.DataFrame({"trajectory_id": qz.index, "q_hat": qz["q_hat"].to_numpy(), "q_se": qz["se"].to_numpy(),
                          "n_rollouts": qz["n_rollouts"].to_numpy(), "q_log": t.loc[cens, "q_z"].to_numpy()})
    covered = audit["q_hat"].notna()
    st.caption(f"{int(covered.sum())} of {len(audit)} censored runs have rollouts "
               f"(median {int(audit.loc[covered, 'n_rollouts'].median()) if covered.any() else 0} per run).")
    for note in au.notes:
        st.caption(C.md(note))
    if covered.any():
        plot(F.mc_audit_figure(audit[covered]), "cens_mc", name="Monte-Carlo audit",
               caption="Blue dots: q̂_Z, the mean of the rollouts (bars: 95% Wilson interval, which stays inside [0, 1] and is not zero where every rollout agrees). Orange rings: the q_Z written "
                       "in the log, where there is one.")
        tab = au.table
        st.dataframe(pd.DataFrame({
            "predictor": [F.display_name(p) for p in tab.index],
            f"exact, q̂_Z ({cfg.unit})": [Fm.num(v) for v in tab["tps_exact"]],
            f"simple, q_Z = 0 ({cfg.unit})": [Fm.num(v) for v in tab["tps_simple"]],
            f"exact − simple ({cfg.unit})": [Fm.num(v, "+.4f") for v in tab["delta"]],
            "95% CI": [Fm.interval(lo, hi, "+.4f") for lo, hi in zip(tab["delta_ci_low"], tab["delta_ci_high"])],
            "of which MC noise (SE)": [Fm.num(v) for v in tab["mc_se"]],
            "differs beyond CI": differs_beyond_ci(tab["delta_ci_low"], tab["delta_ci_high"]),
        }), hide_index=True, width="stretch", key="cens_mc_table", column_config={
            "of which MC noise (SE)": st.column_config.TextColumn(
                help="The part of the SE of the difference due to the rollouts' own binomial noise (Monte-Carlo audit)."),
        })

# ----------------------------------------------------------------- slow parts last (the bootstraps)
if large:
    with st.spinner(f"Bootstrap CIs ({cfg.n_boot} replicates of each treatment over {data.n_trajectories:,} runs)…"):
        _show_treatments(_treatments(boot=True), boot=True)
        _show_shift(boot=True)
