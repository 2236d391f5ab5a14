"""Recalibration: cross-fitted Platt / isotonic / beta maps; the result becomes a predictor on every page."""

import pandas as pd
import streamlit as st

from pages._ui import common as C
from pages._ui.charts import plot
from pages._ui import evaluation as E
from pages._ui import results as Rs
from pages._ui import loading as L
from pages._ui import state as S
from tpsviz.report import figures as F
from tpsviz.diagnostics.caveats import recalibration_hint
from tpsviz.diagnostics.claims import is_clear, z_text
from tpsviz.core import formatting as Fm
from tpsviz.core.inference import summary_interval
from tpsviz.evaluation.reading import own_predictors
from tpsviz.forecasts.references import is_reference

cfg, data = C.page("Recalibration",
                   "Fit a map from a signal to calibrated probabilities, cross-fitted by trajectory: every run is "
                   "recalibrated by a map fitted on other runs only, so no run sees its own outcome.")

if not own_predictors(data) and data.signals:  # (its references aside: they are scored beside the conversions)
    st.info("**This log has raw signals only.** It opened with a cross-fitted Platt recalibration (5 folds, fewer "
            "for a small log; pooled over steps) of each signal, so that it can be scored; add another method "
            "below, or remove one.",
            icon=":material/info:")
# a reference forecaster (ref:…) is fitted on the other runs already: it is not recalibrated
base_preds = [p for p in data.predictors if "@" not in p and not is_reference(p)]
sources = base_preds + list(data.signals)
if not sources:
    st.info("This log has no predictor or raw/unc signal to recalibrate"
            + (" (its reference forecasters are fitted on the other runs already)."
               if any(is_reference(p) for p in data.predictors) else "."))
    st.stop()


def _src_label(s):
    if s in data.signals:
        return f"{s} (raw signal, {'higher = more confident' if data.signals[s] > 0 else 'higher = less confident'})"
    return f"{s} (probability)"


def _add():
    ss = st.session_state
    src_, method_ = ss["rc_src"], ss["rc_method"]
    if method_ == "beta" and src_ in data.signals:
        ss["recal_error"] = ("Beta calibration needs probabilities (it uses ln F and ln(1−F)); choose platt or "
                             "isotonic for a raw signal.")
        return
    spec = S.recal_spec(src_, method_, ss["rc_folds"], ss["rc_step"])
    r = S.parse_recal(spec)
    specs = [s for s in ss.get("recal", []) if (S.parse_recal(s) or {}).get("name") != r["name"]] + [spec]
    if len(specs) > S.MAX_RECAL:
        ss["recal_error"] = (f"At most {S.MAX_RECAL} recalibrated predictors at once (each adds a column to the "
                             "whole log): remove one first.")
        return
    ss["recal"] = specs
    sel = list(ss.get("pred", []))
    if r["name"] not in sel:
        ss["pred"] = sel + [r["name"]]
    ss["recal_focus"] = r["name"]
    ss["recal_view"] = r["name"]  # the before/after view follows the predictor just added


def _remove(spec):
    ss = st.session_state
    r = S.parse_recal(spec)
    ss["recal"] = [s for s in ss.get("recal", []) if s != spec]
    ss["pred"] = [p for p in ss.get("pred", []) if p != r["name"]]


with st.form("recal_form", border=True):
    c = st.columns([2, 1.3]) + st.columns([2, 1.3])  # two rows: no label cut off at 800 px
    default = sources.index("verbal") if "verbal" in sources else 0
    c[0].selectbox("Signal", sources, index=default, format_func=_src_label, key="rc_src",
                   help="A conf_<name> probability, or a raw_/unc_ signal that is not a probability.")
    c[1].radio("Method", ["platt", "isotonic", "beta"], horizontal=True, key="rc_method",
               help="platt: logistic on logit F (or on the raw signal). isotonic: monotone step map. "
                    "beta: logistic on ln F and −ln(1−F); probabilities only.")
    c[2].slider("Folds k", 2, 10, 5, key="rc_folds", help="Cross-fitting folds, grouped by trajectory.")
    c[3].toggle("Per step", False, key="rc_step",
                help="Fit one map per step t (steps with < 10 labelled rows use the pooled map).")
    st.form_submit_button("Add recalibrated predictor", type="primary", on_click=_add)
if st.session_state.get("recal_error"):
    st.error(st.session_state.pop("recal_error"))

specs = list(st.session_state.get("recal", []))
if not specs:
    st.info("No recalibrated predictor yet. Choose a signal and a method above; the new predictor "
            "(named `<signal>@<method>`) then appears in the sidebar and on every page.", icon=":material/tune:")
    st.stop()

st.subheader("Recalibrated predictors")
for spec in specs:
    r = S.parse_recal(spec)
    c = st.columns([4, 1])
    c[0].markdown(f"**{C.md(r['name'])}** — {r['method']} on {C.md(r['source'])}, k = {r['folds']} folds, "
                  f"{'per step' if r['per_step'] else 'pooled over steps'}")
    c[1].button("Remove", key=f"rm_{spec}", on_click=_remove, args=(spec,))

names = [S.parse_recal(s)["name"] for s in specs]
names = [n for n in names if n in data.predictors]
if not names:
    st.warning("The recalibration could not be applied (see the message above).")
    st.stop()
focus = st.session_state.get("recal_focus")
focus = focus if focus in names else names[-1]
# the widget's value lives in session state only (set by _add when a predictor is added): a
# default index beside it made Streamlit warn in the server log
if st.session_state.get("recal_view") not in names:
    st.session_state["recal_view"] = focus
focus = st.selectbox("Before / after for", names, key="recal_view",
                     help="Compare a recalibrated predictor with its source.")
focus_spec = next(S.parse_recal(s) for s in specs if S.parse_recal(s)["name"] == focus)
pair = [p for p in (focus_spec["source"], focus) if p in data.predictors]
allc = Rs.colors(data)
colors = {p: allc[p] for p in pair}

# ----------------------------------------------------------------- before / after
large = L.is_large(data)  # a large log: point estimates first, the bootstrap CIs at the end of the page
table_box = st.empty()
delta_box = st.container()


def _show_table(boot: bool) -> None:
    res = E.evaluation(cfg, ci=boot, verdicts=False, predictors=pair)  # its TPS and metrics alone are read
    met = E.metric_intervals(Rs.metric_boot(cfg) if boot else 0, cfg, predictors=pair)
    rows = []
    for p in pair:
        s_ = res.summary.loc[p]
        m = met.loc[p]
        rows.append({"predictor": F.display_name(p), "TPS": Fm.num(s_["tps_mean"]),
                     "95% CI": Fm.interval(*summary_interval(s_)[:2]),
                     "AUROC": Fm.num(m["auroc"], ".3f"),
                     "AUROC CI": Fm.interval(m["auroc_ci_low"], m["auroc_ci_high"], ".3f"),
                     "T-ECE": Fm.num(m["tece_pooled"], ".3f"), "n runs": int(s_["n_trajectories"])})
    h = C.column_help()
    with table_box.container():
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config={
            "TPS": st.column_config.TextColumn(f"TPS ({cfg.unit}/run)", help=h["TPS"]),
            "AUROC": st.column_config.TextColumn(help=h["AUROC"]),
            "T-ECE": st.column_config.TextColumn(help=h["T-ECE"])})
        st.caption(f"TPS interval: {cfg.n_boot} bootstrap replicates; {Rs.metric_boot_note(cfg)}." if boot else
                   "TPS interval = mean ± 1.96 SE for now; the bootstrap CIs and the paired comparison are being "
                   "computed (large log).")


_show_table(boot=not large)
panels, _ = Rs.reliability("all", None, False, 10, a=Rs.analysis(cfg, predictors=pair))
plot(F.reliability_figure(panels, colors, "Reliability before and after (all steps, complete runs)"), "recal_rel",
       name="Recalibration: reliability before/after")

# ----------------------------------------------------------------- slow parts last (the bootstraps)
if large:
    with st.spinner(f"Bootstrap CIs ({cfg.n_boot} replicates over {data.n_trajectories:,} runs)…"):
        _show_table(boot=True)
with delta_box:
    if len(pair) == 2:
        ct, _ = E.compare_tps(pair[0], cfg, predictors=pair)
        cm = E.compare_metrics(pair[0], Rs.metric_boot(cfg), cfg, predictors=pair)
        r = ct.loc[focus]
        m = cm.loc[focus]
        zt, za = r["tps_z"], m["auroc_z"]
        st.markdown(f"**Recalibrated − original:** TPS Δ = {Fm.num(r['tps_delta'], '+.4g')} {cfg.unit}/run "
                    f"({z_text(zt)}); AUROC Δ = {Fm.num(m['auroc_delta'], '+.4f')} ({z_text(za)}).",
                    help="Paired over the same runs: TPS from the per-run differences (analytic SE), AUROC by a paired "
                         "bootstrap over trajectories; both clustered by task where runs repeat tasks. |Δ/SE| ≥ 2 is "
                         "called clear.")
        if is_clear(za) and za < 0:
            st.warning(f"Recalibration clearly lowered AUROC ({z_text(za)}): the cross-fitted maps rank runs worse than "
                       f"the signal itself. {recalibration_hint(focus_spec['method'])}", icon=":material/warning:")
        elif is_clear(zt) and zt > 0 and not is_clear(za):
            st.success("Recalibration does not clearly change the ranking (AUROC) but clearly makes the probabilities "
                       f"more honest (TPS, {z_text(zt)}): the paper's headline, on your data.", icon=":material/lightbulb:")
        elif is_clear(zt) and zt < 0:
            st.warning(f"Recalibration clearly lowered TPS ({z_text(zt)}): the recalibrated probabilities are less "
                       "honest than the original ones on these runs.", icon=":material/warning:")
    else:
        st.caption("The source is a raw signal (not a probability): only the recalibrated predictor can be scored.")
