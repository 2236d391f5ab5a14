"""Overview / Compare: dataset summary, leaderboard, Δ/SE against a baseline, where metrics disagree.

The verdicts, the leaderboard and the warnings are read from the Evaluation of the sidebar's
settings (``pages/_ui/evaluation.py``: ``tpsviz.evaluate``'s object, from the dashboard's cached
parts) and its tables (``tpsviz.evaluation.tables``), the object and the cells the CLI and the
report use; the comparisons come from compare.compare / z_matrix. On a large log the slow
bootstraps run last: the page first shows TPS, skill and metric point estimates, then fills in the
CIs and the paired AUROC/T-ECE comparison.
"""

import pandas as pd
import streamlit as st

from pages._ui import common as C
from pages._ui.allruns import all_runs_section
from pages._ui.get_forecasts import forecasts_panel, reference_bar
from pages._ui import reading as R
from pages._ui import compute as V
from pages._ui import evaluation as E
from pages._ui import runs as RV
from pages._ui.evaluation import evaluation
from pages._ui import results as Rs
from pages._ui import loading as L
from pages._ui import state as S
from pages._ui.text import code
from pages._ui.wording import say
from tpsviz.report import figures as F
from tpsviz.diagnostics import runs as RU
from tpsviz.diagnostics.caveats import schedule_caveat
from tpsviz.diagnostics.leaderboard import METRIC_INFO
from tpsviz.diagnostics.verdict import ERROR_RATE_WORDS, RULES
from tpsviz.evaluation import tables as T
from tpsviz.evaluation.report import leaderboard_svg
from tpsviz.diagnostics.groups import group_columns
from tpsviz.evaluation.summary import constant_predictors, model_column, summary_line
from tpsviz.diagnostics.populations import censoring_summary
from tpsviz.core.schema import clean_text
from tpsviz.core import formatting as Fm

cfg, data = C.page("Overview / Compare",
                   "Which of the agent's confidence signals can you trust? Each is judged on how well the chance of "
                   "success it states at every step matches what then happens.",
                   all_runs_below=True)
large = L.is_large(data)
verdict_box = st.container()  # filled last: the verdict's tests run after the leaderboard is drawn

# ----------------------------------------------------------------- dataset summary
summ = censoring_summary(data)
# the leaderboard shows each verdict (issue 46): decided first, except on a large log, whose board shows its points
# first and then its CIs and verdicts (the verdicts' tests are its slowest part)
ev = evaluation(cfg, ci=not large, verdicts=not large)
C.tiles([
    ("Trajectories", f"{data.n_trajectories:,}", "Runs after metadata filters."),
    ("Steps", f"{data.n_steps:,}", "(trajectory, step) rows with forecasts."),
    ("Censored", f"{data.n_censored:,} ({Fm.pct(data.n_censored, data.n_trajectories)})",
     "Runs stopped by an administrative limit before their outcome was observed."),
    ("Constant forecast (base rate)", f"F ≡ {Fm.num(ev.reference_rate, '.3f')}",
     f"The success rate of the summary above, said as a forecast at every step (F ≡ {Fm.num(ev.reference_rate, '.3f')}): "
     f"the yardstick skill is measured against, the {ev.reference_rule}. It follows the censoring mode, so it is "
     f"the constant the current score rewards."),
])
length = (f"mean length {summ['mean_length_complete']:.1f} steps (complete runs) and "
          f"{summ['mean_length_censored']:.1f} (censored runs)" if summ["n_censored"] and summ["n_complete"]
          else f"mean length {summ['mean_length']:.1f} steps")
if data.n_censored and summ["n_complete"]:  # another rate than the summary's: named by how it differs
    st.caption(f"Counting only the {summ['n_complete']:,} runs that finished before the step budget (the "
               f"{data.n_censored:,} cut off have no outcome), {Fm.pct(summ['success_rate'] * summ['n_complete'], summ['n_complete'])} "
               f"succeeded: the runs the ranking and binning metrics (AUROC, T-ECE) use; {length}.")
else:
    st.caption(f"{length[:1].upper()}{length[1:]}.")
reference_bar(cfg, data)  # a log scored on its references only: the bar a real signal has to clear
forecasts_panel(cfg, data)
auto = st.session_state.get("_auto_recal_note")
if auto and auto[1] and any(n in cfg.predictors for n in auto[0]):  # the core's sentence, as the CLI prints it
    st.info(C.md(auto[1][:1].upper() + auto[1][1:]) + ". Added: " + ", ".join(code(n) for n in auto[0])
            + "; change the method on the **Recalibration** page.", icon=":material/tune:")
if data.reading.get("treatment"):
    R.reading_panel(data)
else:
    for note in data.notes:
        st.caption("Note from the loader: " + C.md(note))

# ----------------------------------------------------------------- leaderboard
st.subheader("Leaderboard")
warn = ev.warnings  # a large log: from point estimates
shown_above = schedule_caveat(cfg.score_settings())  # (at the top of every page: common.py)
for w in warn.log:
    if w != shown_above:
        st.warning(C.md(w), icon=":material/warning:")
if (note := V.infinite_note(ev)) is not None:
    st.warning(note, icon=":material/all_inclusive:")
h = C.column_help()
# a large log's board is drawn twice (points, then CIs) into a placeholder; any other log's once, in place:
# a placeholder is one more element for the browser after every change of α (docs/deployment.md)
board = st.empty() if large else st


def _ci_help(ev) -> str:
    if T.interval_kind(ev) == "bootstrap":
        return (f"Percentile bootstrap interval resampling tasks with all their runs ({ev.clusters.words()}: runs "
                "of one task are not independent)." if ev.clusters.clustered else h["CI"])
    if large and cfg.n_boot:
        return "Mean ± 1.96 SE while the bootstrap CI is computed (large log)."
    return "Bootstrap off (0 replicates): mean ± 1.96 SE, a normal approximation."


def _ci_text(ev) -> str:
    if T.interval_kind(ev) == "bootstrap":
        return (f"95% {ev.settings.interval} bootstrap CI over {ev.clusters.bootstrap_words()} ({cfg.n_boot} "
                f"replicates; {ev.clusters.words()})")
    if large and cfg.n_boot:
        return "95% interval = mean ± 1.96 SE for now: the bootstrap CI is being computed (large log)"
    return "95% interval = mean ± 1.96 SE (bootstrap off; raise it in the sidebar's Uncertainty box)"


def _show_board(ev):
    tab, ci_help = T.leaderboard_table(ev, F.display_name), _ci_help(ev)
    board.dataframe(
        tab, hide_index=True, width="stretch",
        column_config={
            # at a phone's 390 px the predictor, its verdict and skill are in view (widths in px; a name of ~22
            # characters is read whole at every width); the predictor stays in view while scrolling to TPS
            "predictor": st.column_config.TextColumn("predictor", width=160, pinned=True, help="conf_<name> column; = true probability (synthetic): the truthful/oracle column of synthetic data; (reference "
                                                          "forecaster) = ref:…, fitted on this log's other runs, "
                                                          "not the agent's."),
            "verdict": st.column_config.TextColumn("verdict", width=92, help="Can I trust it? The label of the verdict above "
                                                   "(\"How the verdict is decided\" there); empty while it is computed."),
            "skill": st.column_config.TextColumn("skill ± SE", width=90, help=h["skill"]),
            "TPS": st.column_config.TextColumn(f"TPS ({cfg.unit}/run)", width=70, help=h["TPS"]),
            "95% CI": st.column_config.TextColumn("95% CI", help=ci_help),
            "AUROC": st.column_config.TextColumn("AUROC", help=METRIC_INFO["auroc"]),
            "T-ECE": st.column_config.TextColumn("T-ECE", help=METRIC_INFO["tece_pooled"]),
            "n runs": st.column_config.NumberColumn("n runs", help=h["n"]),
            "censored": st.column_config.NumberColumn("censored", help="Censored runs among the scored ones."),
            "clipped": st.column_config.NumberColumn(
                "clipped" if cfg.eps > 0 else "exactly 0/1",
                help="Forecasts moved to [ε, 1−ε] before scoring." if cfg.eps > 0 else
                "ε = 0: forecasts are not clipped; this many are exactly 0 or 1 (−∞ under an unbounded score)."),
        })


board_caption = st.empty() if large else st


def _show_caption(ev):
    rate = Fm.num(ev.reference_rate, ".3f")
    board_caption.caption(
        f"TPS in {cfg.unit} per trajectory, higher is better, 0 is perfect; {_ci_text(ev)}. **Skill** = 1 − "
        f"TPS/TPS_ref against the constant forecast **F ≡ {rate}**, the {ev.reference_rule} — under "
        f"{Rs.censoring_label(cfg)} this is the constant the score itself rewards, so a predictor that always says "
        f"{rate} has skill 0 (mean TPS_ref {Fm.fmt(ev.reference_mean)} over all scored runs). "
        f"AUROC and T-ECE use the steps of complete runs only (they need an outcome).")


def _runs_links(ev) -> None:
    """Links to the Runs page's presets, each for the best-ranked predictor (the log's own signals
    first) that has such runs: from the leaderboard to the runs it was most wrong about, in one click."""
    order = [n for n in ev.order if not F.is_reference(n)] + [n for n in ev.order if F.is_reference(n)]
    counts = RV.preset_counts(ev, cfg).loc[order]  # (cached: an α nudge counts nothing again)
    cols = st.columns(len(RU.PRESETS))
    for col, preset in zip(cols, RU.PRESETS):
        has = counts.index[counts[preset] > 0]
        if not len(has):
            col.caption(f"No {preset} for any predictor ({RU.PRESETS[preset][0]}).")
            continue
        name, n = has[0], int(counts.loc[has[0], preset])
        col.page_link("pages/views/runs.py", label=f"{preset.capitalize()} of {C.md(name, 40)} ({n:,})",
                      icon=":material/list_alt:", query_params={"show": preset, "of": name},
                      help=f"The Runs page, filtered: {RU.PRESETS[preset][0]}.")


_show_board(ev)
_show_caption(ev)
_runs_links(ev)
pred_warn = [w for n in cfg.predictors for w in warn.predictors.get(n, [])]
if pred_warn:
    st.warning("\n".join("- " + C.md(w) for w in pred_warn), icon=":material/warning:")
# drawn only when open (a rerun on opening): the browser redraws every element after each change of α
details = st.expander("All columns: SE, per-step TPS, skill CI, AUPRC, metric CIs, final-step metrics",
                      key="ov_details", on_change="rerun")
# a picture, not a plotly chart: the browser redrew a chart in full after every change of α, about
# 0.1 s of each nudge (docs/deployment.md); the Export page and the report keep the plotly figure
board_figure = st.empty() if large else st  # a large log: the points first, replaced once the CIs are in
board_figure.image(leaderboard_svg(ev), width="content")

all_runs_section(cfg, data)  # a dataset read as a sample: the headline table on every run, on request

# ----------------------------------------------------------------- compare
def _show_comparison(table, caption, below) -> dict:
    """The paired comparison against the baseline with AUROC and T-ECE (their bootstrap: cached, not
    α's) and where rank metrics and TPS disagree, in ``below`` (a container, or ``st`` in place).
    Returns compute.compare's result."""
    cmp = V.compare(cfg, data, baseline, metrics=True, figure=False)
    table.dataframe(cmp["table"], hide_index=True, width="stretch", column_config=cmp_cols)
    caption.caption(f"TPS on {int(cmp['raw']['n_runs'].max()) if len(cmp['raw']) else 0:,} runs, paired by "
                    f"trajectory; AUROC and T-ECE on the {summ['n_complete']:,} complete runs ({Rs.metric_boot_note(cfg)}).")
    msgs = V.disagreements(cfg, cmp["raw"], baseline)
    if msgs:  # one element for the heading and the list
        below.container(border=True).markdown("#### :material/lightbulb: Where rank metrics and TPS disagree\n"
                                              + "\n".join("- " + m for m in msgs))
    else:
        below.caption("Against this baseline, no predictor is clearly better or worse under TPS while AUROC "
                      "says otherwise (|Δ/SE| ≥ 2 is called clear, everywhere on this page).")
    return cmp


st.subheader("Paired comparison against a baseline")
preds = list(cfg.predictors)
cmp_box = st.container() if large else st  # (filled in place unless the metrics' bootstrap comes last)
callout = st.container() if large else st
if len(preds) >= 2:
    default = F.default_baseline(preds)
    baseline = cmp_box.selectbox("Baseline", preds, index=preds.index(default), key="baseline",
                                 format_func=F.display_name,
                                 help="Every other predictor is compared with this one on the same runs: "
                                      "Δ = predictor − baseline.")
    cmp_table = cmp_box.empty() if large else st
    cmp_caption = cmp_box.empty() if large else st
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
    if large:  # TPS first, the metrics' bootstrap at the end of the page
        cmp_tps = V.compare(cfg, data, baseline, metrics=False, figure=False)
        cmp_table.dataframe(cmp_tps["table"], hide_index=True, width="stretch", column_config=cmp_cols)
        cmp_caption.caption("Computing the paired AUROC / T-ECE bootstrap (large log)…")
    else:
        cmp_tps = _show_comparison(cmp_table, cmp_caption, callout)
    pairs = st.expander("Every pair: paired Δ/SE of per-trajectory TPS (row − column)", key="ov_pairs",
                        on_change="rerun")
    if pairs.open:
        pairs.caption("Each cell compares the row's predictor with the column's on the runs both scored: the mean "
                      "TPS difference over its standard error. Blue: the row scores better; red: worse; bold where "
                      "|Δ/SE| ≥ 2 (called clear on this page). The same numbers as a heatmap: Export page (PNG) and "
                      "the HTML report.")
        pairs.dataframe(V.delta_matrix_table(cmp_tps["z"]), width="content")
elif len(data.predictors) >= 2:  # more can be chosen
    cmp_box.info("Select at least two predictors in the sidebar to compare them.")
else:  # one signal in the log: nothing to pair it with here
    cmp_box.caption("This log has one signal, so there is no other to pair it with. To compare it, add the reference "
                    "forecasters (sidebar), or load a second log under Compare groups of runs below.")

# ----------------------------------------------------------------- slow parts last (the bootstraps)
if large:
    with st.spinner(f"Bootstrap CIs ({cfg.n_boot} replicates of TPS and skill, {Rs.metric_boot(cfg)} of the metrics "
                    f"over {data.n_steps:,} rows)…"):
        ev = evaluation(cfg, verdicts=False)
    _show_board(ev)
    _show_caption(ev)
    board_figure.image(leaderboard_svg(ev), width="content")
if details.open:
    with details:
        # the metrics with their bootstrap CIs (the sidebar's metric bootstrap; evaluate gives points)
        st.dataframe(T.leaderboard_details(ev.with_metrics(E.metric_intervals(Rs.metric_boot(cfg), cfg)), F.display_name), hide_index=True,
                     width="stretch")
        st.caption(f"TPS interval as above; {Rs.metric_boot_note(cfg)}; metric CIs resample trajectories. "
                   "'per weighted step' = Σ TPS_i / Σ w_t, a display normalisation, not the score.")
if len(preds) >= 2 and large:
    _show_comparison(cmp_table, cmp_caption, callout)

# ----------------------------------------------------------------- groups of runs: model X vs model Y
GROUP_COLS = {
    "TPS": st.column_config.TextColumn(f"TPS ± SE ({cfg.unit}/run)", help="Mean TPS of the group's runs."),
    "skill": st.column_config.TextColumn("skill ± SE", help="1 − TPS/TPS_ref against the group's OWN success rate: "
                                         "what the forecasts add beyond knowing how often this group succeeds, so "
                                         "a group is not rewarded for easier outcomes."),
    "success rate": st.column_config.TextColumn(help="Share of the group's runs that finished before the step budget "
                                                     "and succeeded (runs cut off are not counted).")}
VERSUS_COLS = {
    "base": st.column_config.TextColumn("base side", help="The base side's mean: success rate of its complete runs, "
                                        "or mean steps, cost, duration per run."),
    "Δ": st.column_config.TextColumn(help="side − base side (points of success rate for success)."),
    "SE": st.column_config.TextColumn(help="Paired by task where both sides ran the same tasks; otherwise unpaired, "
                                      "each side's SE clustered by task."),
    "Δ/SE": st.column_config.TextColumn(help="|Δ/SE| ≥ 2 is called clear.")}
DIFF_COLS = {
    "Δ TPS": st.column_config.TextColumn(f"Δ TPS ({cfg.unit}/run)", help="group − base group."),
    "Δ/SE (TPS)": st.column_config.TextColumn(help="|Δ/SE| ≥ 2 is called clear."),
    "Δ skill": st.column_config.TextColumn(help="group − base group, each against its own success rate."),
    "Δ/SE (skill)": st.column_config.TextColumn(help="|Δ/SE| ≥ 2 is called clear.")}


def _show_groups(gv):
    st.dataframe(gv["table"], hide_index=True, width="stretch", column_config=GROUP_COLS)
    if gv["small"]:
        st.caption("Left out (fewer than 2 runs): " + ", ".join(f"{C.md(g)} ({n})" for g, n in gv["small"].items()))
    st.dataframe(gv["diff"], hide_index=True, width="stretch", column_config=DIFF_COLS)
    for g, how in gv["pairing"].items():
        st.caption(f"{C.md(g)} − {C.md(gv['base'])}: {C.md(how)}")


OWN_WORDS = {"beats": "beats it", "worse": "does worse", "unclear": "not clearly better",
             "undetermined": "no paired comparison"}


def _show_own_references(own: dict, names: dict) -> None:
    """Each side's predictors against references fitted on that side's runs only (the CLI's lines, as a table)."""
    if not own:
        return
    rows, why = [], []
    for g, recs in own.items():
        if "why" in recs:
            why.append(f"{C.md(names.get(g, g), 60)}: {C.md(say(recs['why']), 300)}")
            continue
        rows += [{"side": clean_text(names.get(g, g), 60), "predictor": clean_text(F.display_name(p), 80),
                  "its best own reference": r["reference"], f"Δ TPS ({cfg.unit}/run)": r["delta"], "SE": r["se"],
                  "Δ/SE": r["z"], "in words": OWN_WORDS.get(r["outcome"], r["outcome"])} for p, r in recs.items()]
    st.markdown("**Each side against its own references**")
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="own_refs",
                     column_config={c: st.column_config.NumberColumn(format=f) for c, f in
                                    ((f"Δ TPS ({cfg.unit}/run)", "%+.3f"), ("SE", "%.3f"), ("Δ/SE", "%+.1f"))})
    st.caption("ref:* fitted on that side's runs only, and each predictor paired with the best of them on the side's "
               "runs: a side is never judged by a yardstick that learnt from the other side's outcomes. \"Beats it\" "
               "at Δ/SE above the level's critical value." + (" Not formed: " + "; ".join(why) + "." if why else ""))


def _groups_of_this_log(by_model: str | None) -> None:
    cols = group_columns(data)
    if not cols:
        st.caption("This log has no run-level column with 2 to 50 values (model, agent, prompt, task family…) to "
                   "split its runs by. Compare it with a second log instead.")
        S.remember_group_choice(None, None, "auto")
        return
    g1, g2, g3 = st.columns([1.2, 1.2, 1])
    by = g1.selectbox("Split runs by", cols, key="grp_by", format_func=lambda c: clean_text(c, 60), index=None,
                      placeholder="Choose a column…",
                      help="A run-level metadata column; each of its values is one group, scored on its own runs.")
    pair_opts = ["auto", "none"]
    pair_on = g3.selectbox("Pair by task", pair_opts + [c for c in cols if c != by], key="grp_pair",
                           help="Where both groups ran the same tasks, compare them task by task (paired, "
                                "smaller SE). auto: a column named task/task_id/task_name with at least 10 "
                                "common tasks; none: unpaired.")
    gv = None
    try:
        gv = V.group_view(cfg, by, st.session_state.get("grp_base"), pair_on) if by is not None else None
    except ValueError as e:
        st.info(f"These runs cannot be compared by {code(by)}: {C.md(say(e))}")
    if gv is None:
        st.caption("Each value of the column becomes a group scored on its own runs; every group is then "
                   "compared with a base group (Δ TPS and Δ skill with their SE, paired by task where the groups "
                   "share tasks)." + (f" The summary at the top compares the runs by {code(by_model)} already."
                                      if by_model else ""))
    else:
        names = list(dict.fromkeys(gv["table"]["group"]))
        if st.session_state.get("grp_base") not in names:  # kept from another column
            st.session_state["grp_base"] = gv["base"]
        g2.selectbox("Compared with", names, key="grp_base", format_func=lambda g: clean_text(g, 60),
                     help="The base group: every other group is shown as group − base.")
        try:  # success, steps, cost and duration first: no forecast needed
            _show_versus(V.group_versus(cfg, data, by, gv["base"], pair_on), f"{clean_text(by, 40)} {gv['base']}")
        except ValueError as e:
            st.info(f"Success cannot be compared by {code(by)}: {C.md(say(e))}")
        _show_groups(gv)
        groups = list(dict.fromkeys(gv["table"]["group"]))
        _show_own_references(Rs.own_references_groups(by, a=Rs.analysis(cfg)),
                             {g: f"{clean_text(by, 40)} {clean_text(g, 40)}" for g in groups})
    S.remember_group_choice(by if gv is not None else None, st.session_state.get("grp_base"), pair_on)


def _show_versus(vv: dict, base_name: str) -> None:
    """Which side succeeds more often, by how much, with its SE; steps, cost and duration (no forecast needed)."""
    for g, sentence in vv["sentences"].items():
        st.markdown(f"**Success:** {C.md(sentence)}.")
        side = vv["names"][g]
        st.caption(f"{C.md(side[:1].upper() + side[1:])} against {C.md(base_name)}: {C.md(vv['pairing'][g])}. "
                   + " ".join(f"{C.md(w)}." for w in vv["words"][g]))
    st.dataframe(vv["table"], hide_index=True, width="stretch", column_config=VERSUS_COLS)
    if vv["not recorded"]:
        st.caption("Not recorded in the log(s), so not compared: " + ", ".join(vv["not recorded"]) + ". Success is the "
                   "share of complete runs that succeeded; a side is said to succeed more often only at |Δ/SE| ≥ 2.")


def _candidate_source():
    """The candidate log: an upload, or a server path under the data roots; (Source, name) or None."""
    from pages._ui.sidebar import UPLOAD_TYPES

    src = S.current_source()
    if S.data_roots().enabled:
        path = st.text_input("…or a path on the server", key="cand_path", placeholder="runs/other_agent.json",
                             help="A log under one of the folders this server may read, read with the same "
                                  "reading options as this log. It is only read, never modified.").strip()
        if path:
            cand = S.path_source(path, None, src.options)
            return cand, ("server path" if cand.kind == "refused" else cand.name)
    up = st.file_uploader("Candidate log (this log is the baseline)", type=UPLOAD_TYPES, key="cand_upload",
                          help="Read with the same reading options as this log. Its runs are named candidate/…, "
                               "this log's baseline/…; only predictors both logs have are compared.")
    kept = S.kept_upload(up, "cand_upload")  # also the file uploaded before the section was closed
    if kept is None:
        return None
    raw, name, restored = kept
    if restored:
        c1, c2 = st.columns([5, 1], vertical_alignment="center")
        c1.caption(f"Candidate log: {code(name, 60)}, uploaded before this section was closed. Upload another "
                   "to replace it.")
        c2.button("Remove", key="cand_forget", on_click=S.forget_upload, args=("cand_upload",),
                  help="Compare with no second log.")
    return S.upload_source(((raw, name),), src.options, None, None, None), name


def _second_log():
    """The candidate log against this one; returns how to say the answer in the summary (a function of
    the predictors to leave out), or None."""
    S.remember_group_choice(None, None, "auto")
    got = _candidate_source()
    if got is None:
        st.caption("Load a second log to compare it with this one: which succeeds more often, by how much, with its "
                   "SE, their steps (and cost and duration where recorded), and, where both have forecasts, the "
                   "leaderboard of each and candidate − baseline with its SE (paired by task where both ran the "
                   "same tasks).")
        return None
    cand, name = got
    pair_on = st.selectbox("Pair by task", ["auto", "none"], key="cand_pair",
                           help="auto: pair by a task/task_id/task_name column with at least 10 tasks in both "
                                "logs, never across logs of different harnesses or domains; none: unpaired.")
    try:
        out = Rs.two_logs(cand, pair_on, a=Rs.analysis(cfg))
    except ValueError as e:
        st.info(f"These two logs cannot be compared: {C.md(say(e))}")
        return None
    if L.is_failure(out):  # about the candidate only: this log is fine
        st.error(f"**The candidate log {code(name, 60)} cannot be used** (this log is fine): "
                 + "; ".join(C.md(p, 300) for p in out.problems[:5])
                 + ". Give another candidate log.", icon=":material/block:")
        return None
    table, base, diffs, left, vs = out
    names = {"baseline": "this log", "candidate": f"the candidate log ({clean_text(name, 40)})"}
    _show_versus(V.versus_tables({"candidate": vs}, names), "this log")
    if table is None:
        st.caption("Confidence not compared: the two logs share none of the selected predictors (each log's own "
                   "references are fitted on its own runs, so they are not one predictor).")
        return lambda skip: V.versus_tables({"candidate": vs}, names)["sentences"]["candidate"]
    _show_groups(V.group_tables(table, base, diffs))
    _show_own_references(Rs.own_references_two_logs(cand, a=Rs.analysis(cfg)), names)
    if left:
        st.caption("Not in the candidate log, so not compared: " + ", ".join(code(p) for p in left))
    said = V.versus_tables({"candidate": vs}, names)["sentences"]["candidate"]
    return lambda skip: "; ".join(w for w in (V.logs_words(cfg, base, diffs, clean_text(name, 40), skip), said) if w)


by_model = model_column(data)
# drawn only when open (a rerun on opening): the model comparison of the summary needs no click
groups = st.expander("Compare groups of runs (model X vs model Y) or this log with a second log", key="ov_groups",
                     on_change="rerun", icon=":material/compare_arrows:")
logs_said = None
if groups.open:
    S.restore_widgets(S.GROUP_WIDGETS)  # the choices made before the section was closed
    with groups:
        mode = st.radio("Compare", ["groups of this log", "this log with a second log"], key="grp_mode",
                        horizontal=True,
                        help="Split this log's runs by a column (model, agent, prompt, task family), or load a second "
                             "log (a candidate) and compare it with this one (the baseline) on their common predictors.")
        if mode == "groups of this log":
            _groups_of_this_log(by_model)
        else:
            logs_said = _second_log()
    S.keep_widgets(S.GROUP_WIDGETS)
else:
    S.remember_group_choice(None, None, "auto")

# ----------------------------------------------------------------- verdict (top of the page, filled last)
VERDICT_COLORS = {"trustworthy": "green", "optimistic": "orange", "pessimistic": "orange",
                  "overconfident": "orange", "underconfident": "orange", "uninformative": "gray",
                  "too little data": "gray", "yardstick": "blue", "constant": "gray",
                  "too weak to convert": "violet", "conversion failed": "violet"}
with verdict_box:
    st.subheader("Can I trust it?")
    ev = evaluation(cfg)  # with the verdicts (a large log: every other part from the shared cache, BoardFirst above)
    if large:  # its board, drawn without them, gets its verdict column
        _show_board(ev)
    # one line first (issue 37): the success rate defined once, the verdicts in one clause, models or logs compared
    constant = constant_predictors(ev.verdicts)  # a base rate is no model's signal: not compared
    said = summary_line(ev, "; ".join(w for w in (V.model_words(cfg, data, constant),
                                                  logs_said(constant) if logs_said else "") if w))
    st.markdown(f"**In short:** {C.md(said)}")
    # one element for all (paragraphs): the browser redraws every element after each change of α
    # (a label the rules add later is drawn grey rather than failing the page)
    st.markdown("\n\n".join(f":{VERDICT_COLORS.get(r['label'], 'gray')}-badge[{r['label']}] "
                            f"**{C.md(F.display_name(r['name']))}** — {C.md(r['reason'])}"
                            for r in T.verdict_rows(ev)))
    if warn.log:  # what qualifies every verdict (few runs, an improper schedule) sits beside them too
        st.caption("  \n".join(f":orange[:material/warning:] {C.md(w)}" for w in warn.log))
    rules = st.expander("How the verdict is decided", key="ov_rules", on_change="rerun")
    if rules.open:
        rules.markdown("The first rule that holds gives the label. Every test uses the trajectory as its unit "
                       "(steps of one run are not independent) and the three calibration checks "
                       + C.md(ERROR_RATE_WORDS) + ": the tables of false alarms, power and coverage of every "
                       "interval are in docs/validation.md of the tpsviz repository (`bench/validate.py` "
                       "measures them again).\n\n"
                       + "\n".join(f"1. **{C.md(label)}**: {C.md(rule)}" for label, rule in RULES)
                       + "\n\nSuccess is counted as the score counts it: under the current censoring mode, "
                       + C.md(Rs.censoring_label(cfg)) + ". Details: docs/theory.md §8.")
