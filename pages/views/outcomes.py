"""Other outcomes: logs whose outcome is one of k labels (TPS-k with the multi-class log or Brier score,
one-vs-rest reliability) or a number (TPS-CRPS, PIT histograms); docs/multiclass.md, docs/continuous.md."""

import streamlit as st

import tpsviz

from pages._ui import common as C
from pages._ui.charts import plot
from pages._ui import state as S
from pages._ui.loading import is_failure
from pages._ui.memo import memo
from pages._ui.outcomes import labelled_censored_runs, read_other
from pages._ui.text import md
from pages._ui.wording import say
from tpsviz.report import figures as F
from tpsviz.report.export import safe_csv

C.ensure_shell()
st.title("Other outcomes")
st.caption("Not every task ends in success or failure. A run can end in one of several labels (success / partial / "
           "failure), or in a number (a final reward, a cost). The same idea scores the whole trace: a strictly "
           "proper score of each step's forecast, summed with the sidebar's weight schedule.")

src = S.current_source()
if src is None:
    st.info("**No data loaded yet.** Choose the demo *multiclass-like* or *continuous-like* in the sidebar, or upload "
            "a multi-class or continuous-outcome log.", icon=":material/folder_open:")
    st.stop()
other = read_other(src)
if is_failure(other):
    C.show_failure(other)
    st.stop()
if other.kind == "binary":
    st.info("**This log's outcome is success or failure**: the other pages score it. This page reads logs whose "
            "outcome is one of several labels (forecast columns `conf_<name>__<label>`) or a number (`mu_<name>` and "
            "`sigma_<name>`, `q<level>_<name>` or `samples_<name>`). Try the demos *multiclass-like* and "
            "*continuous-like* in the sidebar.", icon=":material/info:")
    st.stop()

cfg = S.current()
schedule = cfg.schedule_obj
log = other.log
verdict = schedule.verdict
st.markdown(f"**File** {md(say(log.source), 80)} · **weights** `{schedule.formula}` "
            f"({verdict.status}) · **bootstrap** {cfg.n_boot:,} replicates over runs, seed {S.SEED}")
for note in (say(n) for n in log.notes[:6]):
    st.caption(md(note[:1].upper() + note[1:], 300))


@memo(max_entries=12, spinner="Scoring the labels…")
def _multiclass(key: tuple, _log):
    """``tpsviz.evaluate`` of the multi-class log: (TPS-k, the one-vs-rest reliability tables, their
    gaps); key[0] is the log's file (``_log`` is not in the cache key)."""
    rule, censoring, label, n_boot, spec, bins = key[1:]
    ev = tpsviz.evaluate(_log, rule=rule, schedule=schedule, censoring=censoring, censored_label=label,
                         n_boot=n_boot, seed=S.SEED, bins=bins)
    return ev.result, ev.tables, ev.gaps


@memo(max_entries=12, spinner="Scoring the distributions…")
def _continuous(key: tuple, _log):
    """``tpsviz.evaluate`` of the continuous-outcome log: (TPS-CRPS, per predictor the PIT histogram of
    ``which`` rows with the uniformity test); key[0] is the log's file (``_log`` is not in the cache key)."""
    n_boot, spec, which, bins = key[1:]
    ev = tpsviz.evaluate(_log, schedule=schedule, n_boot=n_boot, seed=S.SEED, bins=bins)
    return ev.result, {n: (every if which == "all" else last, test) for n, (every, last, test) in ev.pits.items()}


colors = F.predictor_colors(list(log.predictors))

if other.kind == "multiclass":
    from tpsviz.outcomes.multiclass import censoring_words

    st.subheader(f"{len(log.labels)} labels: {', '.join(md(lab, 30) for lab in log.labels)}")
    st.markdown("At every step a predictor gives a probability to each label. **TPS-k** scores the whole run: the sum "
                "over steps of w_t·S(P_t, Y), where S is the log of the probability given to the label that happened "
                "(or the Brier score of the vector), so higher is better and 0 is perfect. A predictor that puts "
                "almost no probability on what happened pays heavily under the log score.")
    c = st.columns([1, 1, 1, 1])
    rule = c[0].radio("Score", ["log", "brier"], horizontal=True, key="oc_rule",
                      index=1 if (cfg.alpha, cfg.beta) == (1.0, 1.0) else 0,
                      format_func={"log": "log ln P(Y)", "brier": "Brier"}.get,
                      help="Log: the log of the probability given to the label that happened (nats). Brier: minus a "
                           "quarter of the squared distance between the forecast vector and the outcome, so that two "
                           "labels score exactly as the binary Brier score (α = β = 1).")
    modes = ["complete", "simple", "exact"]
    censoring = c[1].selectbox("Censored runs", modes, index=2 if log.has_q else 0, key="oc_cens",
                               format_func={"complete": "left out (complete case)", "simple": "count as a label",
                                            "exact": "q vector from the log"}.get,
                               help="A censored run was stopped before its label was known. Exact uses the log's "
                                    "q_z__<label> columns (a probability vector per censored run).")
    c[1].caption("This page's own choice. The sidebar's *Censored runs* applies to success/failure logs.")
    n_labelled = labelled_censored_runs(log, censoring)
    if censoring == "exact" and n_labelled:
        label_title = f"…the {n_labelled:,} without q as"
        label_help = (f"Exact: {n_labelled:,} of the {log.n_censored:,} censored runs have no q vector; only they "
                      "count as this label. The others are scored with their q vector.")
    else:
        label_title = "…as the label"
        label_help = "Simple: the label every censored run counts as."
    label = c[2].selectbox(label_title, log.labels, index=len(log.labels) - 1, key="oc_label",
                           disabled=n_labelled == 0, format_func=lambda v: md(v, 30), help=label_help)
    if censoring == "complete":
        c[2].caption("Not used: censored runs are left out.")
    elif censoring == "exact" and n_labelled == 0:
        c[2].caption(f"Not used: every censored run ({log.n_censored:,}) has a q vector.")
    elif n_labelled == 0:
        c[2].caption("Not used: no run is censored.")
    bins = c[3].select_slider("Bins", [5, 10, 15, 20], 10, key="oc_bins")
    used_label = label if censoring == "simple" or n_labelled else None
    try:
        res, rel, summ = _multiclass((src.file_key, rule, censoring, used_label, int(cfg.n_boot), schedule.spec,
                                      int(bins)), _log=log)
    except ValueError as exc:
        st.warning(f"**These settings cannot be applied:** {md(say(exc).rstrip('.'), 400)}.", icon=":material/tune:")
        st.stop()
    st.caption(f"Censoring: {md(censoring_words(censoring, used_label, n_labelled), 200)}. "
               f"{log.n_runs:,} runs, {log.n_censored:,} censored.")
    clipped = res.summary["n_clipped"]
    for n in clipped.index[clipped > 0]:
        st.warning(f"**{md(F.display_name(n), 60)}**: on {int(clipped[n]):,} step rows the label that happened had a "
                   "probability below 1e-6 (raised to 1e-6 for the log score). A confident miss like this costs up to "
                   "13.8 nats a step: the forecast ruled out what happened.", icon=":material/warning:")
    s = res.summary.sort_values("tps_mean", ascending=False).reset_index()
    s["predictor"] = [F.display_name(n) for n in s["predictor"]]
    st.dataframe(s[["predictor", "tps_mean", "tps_ci_low", "tps_ci_high", "n_runs", "n_steps", "n_missing",
                    "n_excluded_censored", "n_clipped"]], hide_index=True, width="stretch", column_config={
        "tps_mean": st.column_config.NumberColumn("TPS-k per run", format="%.4f",
                                                  help="Mean over runs of Σ_t w_t S(P_t, Y): higher is better, 0 is perfect."),
        "tps_ci_low": st.column_config.NumberColumn("95% CI low", format="%.4f"),
        "tps_ci_high": st.column_config.NumberColumn("95% CI high", format="%.4f"),
        "n_runs": st.column_config.NumberColumn("runs"), "n_steps": st.column_config.NumberColumn("steps"),
        "n_missing": st.column_config.NumberColumn("missing", help="Steps without a forecast (left out, counted)."),
        "n_excluded_censored": st.column_config.NumberColumn("excluded", help="Runs left out: censored in "
                                                             "complete-case mode."),
        "n_clipped": st.column_config.NumberColumn("clipped", help="Steps whose probability of the label that "
                                                   "happened was raised to 1e-6 (log score)."),
    })
    plot(F.ovr_reliability_figure(rel, log.labels, colors), "oc_ovr", name="One-vs-rest reliability",
           caption="For each label, the forecast probability of that label against how often it happened (complete "
                   "runs, every step; bars: 95% intervals from resampling whole runs). On the diagonal: calibrated "
                   "for that label.")
    st.markdown("#### Calibration error per label (one-vs-rest)")
    rows = [{"predictor": F.display_name(n), "label": lab, "ECE": r["ece"], "largest gap": r["max_gap"]}
            for n, t in summ.items() for lab, r in t.iterrows()]
    st.dataframe(rows, hide_index=True, width="stretch", height="content", column_config={
        "ECE": st.column_config.NumberColumn(format="%.3f", help="Σ_bins n·|observed − forecast| / Σ n over step rows."),
        "largest gap": st.column_config.NumberColumn(format="%.3f", help="Largest |observed − forecast| over bins "
                                                                         "with at least 20 step rows.")})
    st.download_button("Per-run TPS-k (CSV)", safe_csv(res.per_run).encode(), "tps_k_per_run.csv", "text/csv",
                       key="oc_mc_download", on_click="ignore")
else:
    st.subheader("A number as the outcome: the CRPS")
    st.markdown("Each step gives a predictive distribution of the final outcome: a Gaussian, a set of quantiles or a "
                "sample. The **CRPS** is the distance between that distribution and the value that came true (in the "
                "outcome's units; 0 for a point mass on the truth). TPS-CRPS sums −w_t·CRPS_t over the steps: higher "
                "is better. The **PIT** is where the outcome fell in the forecast distribution: flat for calibrated "
                "forecasts, U-shaped when they are too narrow, humped when too wide, sloped when biased.")
    c = st.columns([1, 1, 2])
    which = c[0].radio("PIT of", ["last", "all"], horizontal=True, key="oc_pit",
                       format_func={"last": "last step of each run", "all": "every step"}.get,
                       help="The test always uses the last step of each run (runs are independent; steps of a run "
                            "are not).")
    bins = c[1].select_slider("Bins", [5, 10, 20], 10, key="oc_pit_bins")
    try:
        res, pits = _continuous((src.file_key, int(cfg.n_boot), schedule.spec, which, int(bins)), _log=log)
    except ValueError as exc:
        st.warning(f"**These settings cannot be applied:** {md(say(exc).rstrip('.'), 400)}.", icon=":material/tune:")
        st.stop()
    for note in res.notes:
        st.caption(md(note[:1].upper() + note[1:], 300))
    s = res.summary.sort_values("tps_mean", ascending=False).reset_index()
    order = list(s["predictor"])
    s["predictor"] = [F.display_name(n) for n in s["predictor"]]
    st.dataframe(s[["predictor", "form", "tps_mean", "tps_ci_low", "tps_ci_high", "crps_step_mean", "n_runs",
                    "n_steps", "n_missing"]], hide_index=True, width="stretch", column_config={
        "form": st.column_config.TextColumn("form", help="gaussian (mu_, sigma_), quantile (q<level>_) or ensemble "
                                                         "(samples_)."),
        "tps_mean": st.column_config.NumberColumn("TPS-CRPS per run", format="%.3f",
                                                  help="Mean over runs of −Σ_t w_t CRPS_t: higher is better, 0 is perfect."),
        "tps_ci_low": st.column_config.NumberColumn("95% CI low", format="%.3f"),
        "tps_ci_high": st.column_config.NumberColumn("95% CI high", format="%.3f"),
        "crps_step_mean": st.column_config.NumberColumn("CRPS per step", format="%.3f",
                                                        help="Σ w·CRPS / Σ w: lower is better."),
        "n_runs": st.column_config.NumberColumn("runs"), "n_steps": st.column_config.NumberColumn("steps"),
        "n_missing": st.column_config.NumberColumn("missing", help="Steps without a forecast (left out, counted)."),
    })
    plot(F.pit_figure({n: t for n, (t, _) in pits.items()}, {n: r for n, (_, r) in pits.items()}, colors), "oc_pit_fig",
           name="PIT histograms", caption="Bars: the share of outcomes in each PIT bin relative to a uniform PIT (1). "
                                          "p: χ² test on the last step of each run.")
    st.markdown("#### PIT test per predictor")
    tests = [{"predictor": F.display_name(n), "p": pits[n][1]["p_value"], "n_runs": pits[n][1]["n_runs"],
              "reading": pits[n][1]["reading"]} for n in order]
    st.dataframe(tests, hide_index=True, width="stretch", height="content", column_config={
        "predictor": st.column_config.TextColumn("predictor", width="medium"),
        "p": st.column_config.NumberColumn("PIT p", format="%.2g", width="small",
                                           help="χ² test that the last-step PITs are uniform (one per run)."),
        "n_runs": st.column_config.NumberColumn("runs tested", width="small", help="Runs with a last-step PIT."),
        "reading": st.column_config.TextColumn("PIT reads", width="large",
                                               help="The shape of the last-step PITs in words (not a test)."),
    })
    st.download_button("Per-run TPS-CRPS (CSV)", safe_csv(res.per_run).encode(), "tps_crps_per_run.csv", "text/csv",
                       key="oc_ct_download", on_click="ignore")
