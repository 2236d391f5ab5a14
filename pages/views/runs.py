"""Runs: a table of every run (sortable, filterable, with presets such as the confident failures) and
one run's view: its forecasts, each step's contribution w_t·S, the largest moves and its transcript
split at the agent's steps (issue 46). A link names one run: ``?run=ID``."""

import numpy as np
import pandas as pd
import streamlit as st

from pages._ui import common as C
from pages._ui import reading as R
from pages._ui import results as Rs
from pages._ui import runs as RV
from pages._ui import state as S
from pages._ui.charts import PLOT_CONFIG
from pages._ui.text import code, md
from tpsviz.core.schema import REFERENCE_PREFIX
from tpsviz.diagnostics import run_messages as RM
from tpsviz.diagnostics import runs as RU
from tpsviz.report import figures as F
from tpsviz.report.export import safe_csv
from tpsviz.report.figures.runs import run_figure

TABLE, ONE = "Table of runs", "One run"
NO_PRESET = "none"
SHORT, FULL = 1_200, 40_000      # characters of a message shown at once, and at most in full
SHORT_SYSTEM = 300                # a system prompt (a long policy) is cut sooner
MAX_MESSAGES = 80                 # messages of one step shown (a step that calls many tools)
MAX_LISTED = 5_000                # runs listed in the run box (the table holds them all)
MAX_ROWS = 10_000                 # rows of the table sent to the browser (the CSV holds every row kept)
AVATARS = {"system": ":material/settings:", "user": ":material/person:", "agent": ":material/smart_toy:",
           "agent (tool call)": ":material/build:", "tool result": ":material/output:", "other": ":material/chat:"}

cfg, data = C.page("Runs", "Every run of the log in one table, and one run step by step: what each predictor "
                           "forecast, what each step cost or earned in score, and what was said at that step.",
                predictors_needed=False)
colors = Rs.selected_colors(cfg, data)
preds = list(cfg.predictors)
src = S.current_source()

def _follow_log() -> None:
    """Another log: the run of the old one means nothing there (the first view keeps the link's run)."""
    key = getattr(src, "key", None)
    if st.session_state.get("_runs_log") == key:
        return
    if "_runs_log" in st.session_state:
        for k in ("runs_view", "runs_pick", "runs_step", "_runs_step_of", "_runs_curve_seen", "_runs_last"):
            st.session_state.pop(k, None)
        R.drop_param("run")
    st.session_state["_runs_log"] = key


def _open_run(run_id: str) -> None:
    """Show ``run_id`` in the run view and name it in the URL (called from widgets' callbacks)."""
    st.session_state["_runs_last"] = run_id
    st.session_state["runs_pick"] = run_id
    st.session_state["runs_view"] = ONE
    st.query_params["run"] = run_id


def _on_row() -> None:
    rows = st.session_state.get("runs_table", {}).get("selection", {}).get("rows", [])
    shown = st.session_state.get("_runs_shown", [])
    if rows and rows[0] < len(shown):
        _open_run(shown[rows[0]])


def _on_pick() -> None:
    if st.session_state.get("runs_pick") is not None:
        _open_run(st.session_state["runs_pick"])


def _on_view() -> None:
    if st.session_state.get("runs_view") == TABLE:
        R.drop_param("run")
    elif st.session_state.get("_runs_last"):
        st.query_params["run"] = st.session_state["_runs_last"]


def _preset_from_link() -> None:
    """A link to a preset (``?show=confident failures&of=NAME``, the Overview's; ``preset`` is the
    score's) sets the table's filters before they are drawn, then leaves the URL: it names a run, not
    the table's filters."""
    preset, of = st.query_params.get("show"), st.query_params.get("of")
    if preset in RU.PRESETS:
        st.session_state["runs_preset"] = preset
        st.session_state["runs_view"] = TABLE
        if of in preds:
            st.session_state["runs_preset_pred"] = of
    for k in ("show", "of"):
        R.drop_param(k)


_follow_log()
_preset_from_link()
asked = st.query_params.get("run")
if "runs_view" not in st.session_state:  # a link to one run opens it
    st.session_state["runs_view"] = ONE if asked else TABLE
if asked:
    st.session_state["_runs_last"] = asked
if preds:
    view = st.radio("View", [TABLE, ONE], key="runs_view", on_change=_on_view, horizontal=True,
                    label_visibility="collapsed")
    runs = RV.table(cfg)


# ----------------------------------------------------------------------------- the table of runs
def _filters(table: pd.DataFrame) -> dict:
    """The filter widgets; returns select_runs' keyword arguments."""
    c = st.columns([1.2, 1.2, 1.6])
    preset = c[0].selectbox("Preset filter", [NO_PRESET] + list(RU.PRESETS), key="runs_preset",
                            help="; ".join(f"{k}: {v[0]}" for k, v in RU.PRESETS.items()) + ".")
    not_ref = [p for p in preds if not F.is_reference(p)] or preds
    pred = c[1].selectbox("… of predictor", preds, index=preds.index(not_ref[0]), key="runs_preset_pred",
                          format_func=F.display_name, disabled=preset == NO_PRESET,
                          help="Whose last forecast the preset reads.")
    cats = [col for col in ("outcome", "censored", "termination reason", "treatment", "task", "model")
            if col in table.columns]
    choices = {}
    with c[2].popover("Filter by category", icon=":material/filter_list:", width="stretch"):
        for col in cats:
            values = sorted(table[col].dropna().unique().tolist(), key=str)[:500]
            choices[col] = st.multiselect(col, values, key=f"runs_f_{col}", format_func=str,
                                          placeholder="any")
    numeric = [col for col in table.columns if col not in cats and col != "run"
               and pd.api.types.is_numeric_dtype(table[col])]
    ranges = {}
    f = st.columns([1.2, 2.8])
    col = f[0].selectbox("Filter a number", ["—"] + numeric, key="runs_num",
                         help="Keep the runs whose value lies in a range: steps, a predictor's TPS, its first or last "
                              "forecast, a cost or a duration.")
    if col != "—":
        v = table[col].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        lo, hi = (float(v.min()), float(v.max())) if len(v) else (0.0, 1.0)
        if hi > lo:
            ranges[col] = f[1].slider(f"Range of {md(col, 80)}", lo, hi, (lo, hi), key=f"runs_range_{col}")
        else:
            f[1].caption(f"Every run has {md(col, 80)} = {lo:g}.")
    return dict(preset=None if preset == NO_PRESET else preset, predictor=pred, choices=choices, ranges=ranges)


def _column_config(table: pd.DataFrame) -> dict:
    conf = {"run": st.column_config.TextColumn("run", help="The run's id in the log; choose a row to open it.")}
    for p in preds:
        conf[RU.tps_column(p)] = st.column_config.NumberColumn(
            help=f"This run's TPS, Σ_t w_t·S(F_t, Y) ({cfg.unit}; higher is better, 0 is perfect).", format="%.4g")
        for col, what in ((RU.first_column(p), "first"), (RU.last_column(p), "last")):
            conf[col] = st.column_config.NumberColumn(help=f"The {what} forecast of this run, as given.",
                                                      format="%.3f")
    return conf


def show_table() -> None:
    kwargs = _filters(runs)
    shown = RU.select_runs(runs, **kwargs)
    if kwargs["preset"]:
        st.caption(f"**{md(kwargs['preset'])}** of {md(F.display_name(kwargs['predictor']))}: "
                   f"{md(RU.PRESETS[kwargs['preset']][0])}.")
    st.caption(f"{len(shown):,} of {len(runs):,} runs. Click a column's header to sort; choose a row to open "
               "the run.")
    full = shown
    if len(shown) > MAX_ROWS:  # the browser sorts what it holds: sort here first, then send the first rows
        s = st.columns([1.2, 1, 1.8])
        by = s[0].selectbox("Sort by", list(shown.columns), key="runs_sort",
                            index=list(shown.columns).index("steps"))
        down = s[1].toggle("Largest first", True, key="runs_desc")
        shown = RU.sort_runs(shown, by, descending=down).head(MAX_ROWS)
        s[2].caption(f"The first {MAX_ROWS:,} of {len(full):,} runs in this order are listed; the CSV holds all "
                     "of them.")
    st.session_state["_runs_shown"] = shown["run"].tolist()
    if not len(shown):
        st.info("**No run passes these filters.** Widen them, or choose another preset or predictor.",
                icon=":material/search:")
    else:
        st.dataframe(shown, hide_index=True, key="runs_table", on_select=_on_row, selection_mode="single-row",
                     column_config=_column_config(shown), height=min(38 + 35 * len(shown), 560))
    st.download_button("Download this table (CSV)", lambda: safe_csv(full).encode("utf-8"), "runs.csv", "text/csv",
                       key="runs_csv", icon=":material/download:",
                       help="The rows shown, every column; cells that a spreadsheet would run as a formula are "
                            "neutralised.")


# ----------------------------------------------------------------------------- one run
def _pick_run() -> str | None:
    ids = runs["run"].tolist()
    wanted = st.session_state.get("_runs_last") or (ids[0] if ids else None)
    if wanted is None:
        return None
    known = wanted in set(ids)
    listed = ids[:MAX_LISTED] + ([wanted] if known and wanted not in ids[:MAX_LISTED] else [])
    if not known:
        st.warning(f"**This log has no run {code(wanted, 120)}** (after the sidebar's filters). Choose a run below "
                   "or in the table of runs.", icon=":material/search_off:")
    if st.session_state.get("runs_pick") != (wanted if known else None):
        st.session_state["runs_pick"] = wanted if known else None
    st.selectbox(f"Run ({len(ids):,} in this log" + (f"; the first {MAX_LISTED:,} listed)" if len(ids) > MAX_LISTED
                                                      else ")"),
                 listed, index=None, key="runs_pick", on_change=_on_pick, placeholder="Choose a run",
                 help="The run's id in the log.")
    return wanted if known else None


def _facts(run_id: str, steps: pd.DataFrame) -> dict:
    facts = RU.run_facts(runs, run_id, RV.points(cfg))
    rec = RU.recorded_columns(data)
    items = [("Outcome", facts["outcome"], "success or failure as the log judged it; censored: stopped before its "
                                           "outcome was known (the sidebar's censoring mode decides how it is scored)"),
             ("Steps", f"{int(facts['steps']):,}", "The agent's steps in this run (T, or Z where it was cut off).")]
    qz = facts.get("q_z used")
    if facts["censored"] and qz is not None and np.isfinite(qz):
        items.append(("q_Z used", f"{qz:.3f}", "The evaluator's estimate of P(success | history at Z) that the "
                                               "current censoring mode scores this censored run with."))
    for c in rec["cost"] + rec["duration"]:
        v = facts.get(str(c))
        if v is not None and np.isfinite(v):
            items.append((md(c, 40), f"{v:,.4g}", "As recorded in the log (its own unit)."))
    C.tiles(items)
    words = {k: facts[k] for k in ("termination reason", "treatment", "task", "model") if facts.get(k) is not None}
    if words:
        st.dataframe(pd.DataFrame([{k: str(v) for k, v in words.items()}]), hide_index=True, width="content")
    if not (rec["cost"] or rec["duration"]):
        st.caption("The log records no cost or duration for its runs.")
    return facts


def _chosen_step(run_id: str, steps: pd.DataFrame, moves: pd.DataFrame) -> int:
    """The step shown: the largest move's when a run opens; then a click on the curve, a row of the moves'
    list or the slider."""
    nums = steps["step"].astype(int).tolist()
    if st.session_state.get("_runs_step_of") != run_id:
        st.session_state["_runs_step_of"] = run_id
        own = moves[[not F.is_reference(p) and not str(p).startswith(REFERENCE_PREFIX) for p in moves["predictor"]]]
        first = own if len(own) else moves  # the agent's own signal's largest move, else a yardstick's
        st.session_state["runs_step"] = int(first["step"].iloc[0]) if len(first) else nums[0]
        st.session_state["_runs_curve_seen"] = None
    points = (st.session_state.get("runs_curve") or {}).get("selection", {}).get("points", [])
    clicked = int(points[0]["x"]) if points and points[0].get("x") is not None else None
    if clicked is not None and clicked != st.session_state.get("_runs_curve_seen") and clicked in nums:
        st.session_state["runs_step"] = clicked
    st.session_state["_runs_curve_seen"] = clicked
    if st.session_state.get("runs_step") not in nums:
        st.session_state["runs_step"] = nums[0]
    return int(st.session_state["runs_step"])


def _on_move() -> None:
    rows = st.session_state.get("runs_moves", {}).get("selection", {}).get("rows", [])
    listed = st.session_state.get("_runs_moves_steps", [])
    if rows and rows[0] < len(listed):
        st.session_state["runs_step"] = listed[rows[0]]


def _curve(run_id: str, steps: pd.DataFrame, moves: pd.DataFrame, facts: dict, step: int) -> None:
    title = f"Run {F.plot_label(run_id)}: {len(steps)} steps, {facts['outcome']}"
    outcome = {"success": 1.0, "failure": 0.0}.get(facts["outcome"], np.nan)
    fig = run_figure(steps, preds, colors, moves, step, outcome, bool(facts["censored"]), facts.get("q_z used"),
                     cfg.alpha, cfg.beta, title)
    st.plotly_chart(fig, theme=None, config=PLOT_CONFIG, key="runs_curve", on_select="rerun",
                    selection_mode="points")
    S.register_figure("One run", fig, "")
    st.caption(f"Top: each predictor's forecast F_t; circled, its largest moves |F_t − F_(t−1)|. Bottom: each step's "
               f"contribution w_t·S to the run's TPS ({cfg.unit}; 0 is perfect). Click a point to show that step's "
               "messages.")
    if len(moves):
        listed = moves.assign(predictor=[F.display_name(p) for p in moves["predictor"]])
        st.session_state["_runs_moves_steps"] = moves["step"].astype(int).tolist()
        st.caption("Largest forecast moves (choose one to show its step):")
        st.dataframe(listed[["predictor", "step", "before", "after", "move"]], hide_index=True, key="runs_moves",
                     on_select=_on_move, selection_mode="single-row", width="content",
                     column_config={"move": st.column_config.NumberColumn(format="%+.3f"),
                                    "before": st.column_config.NumberColumn("F before", format="%.3f"),
                                    "after": st.column_config.NumberColumn("F at step", format="%.3f")})
    else:
        st.caption("No forecast moves along this run.")


def _message(m) -> None:
    with st.chat_message(m.kind, avatar=AVATARS.get(m.kind, AVATARS["other"])):
        st.caption(f"**{md(m.label, 120)}** · message {m.index + 1}")
        short, left = RM.cut_text(m.text, SHORT_SYSTEM if m.kind == "system" else SHORT)
        st.text(short + (" […]" if left else ""))
        if left:
            with st.expander(f"The whole message ({len(m.text):,} characters)"):
                full, more = RM.cut_text(m.text, FULL)
                st.text(full)
                if more:
                    st.caption(f"{more:,} characters more are not shown.")


def _transcript(run_id: str, step: int, nums: list) -> None:
    if not RM.has_messages(data.reading):
        st.info("**This log has no transcript.** It is a table of forecasts: the messages of a run are shown for "
                "tau-bench, tau2-bench, Inspect AI logs and traces (OTLP, OpenInference, Langfuse).",
                icon=":material/chat_bubble_outline:")
        return
    try:
        got = RV.messages_of_run(src, run_id)
    except RV.MessagesUnavailable as e:
        st.warning(f"**The messages cannot be shown:** {md(str(e), 600)}.", icon=":material/chat_error:")
        return
    if got is None:
        st.warning("**The log's file keeps no messages for this run.**", icon=":material/chat_error:")
        return
    messages, n_steps = got
    if len(nums) > 1:
        st.select_slider("Step", nums, key="runs_step",
                         help="The agent's t-th message and what came before it since its previous one (the user's "
                              "turn, tool results): what the replay adds to the transcript at step t.")
    here = [m for m in messages if m.step == step]
    after = [m for m in messages if m.step > n_steps] if step == n_steps else []
    st.caption(f"Step {step} of {n_steps}: {len(here)} message{'s' if len(here) != 1 else ''}"
               + (f", then {len(after)} after the agent's last message" if after else "") + ".")
    for m in (here + after)[:MAX_MESSAGES]:
        _message(m)
    if len(here + after) > MAX_MESSAGES:
        st.caption(f"{len(here + after) - MAX_MESSAGES:,} more messages of this step are not shown.")


def show_run() -> None:
    run_id = _pick_run()
    if run_id is None:
        return
    if st.query_params.get("run") != run_id:
        st.query_params["run"] = run_id
    steps = RV.steps_of_run(cfg, run_id)
    if not len(steps):
        st.info("This run has no steps.")
        return
    moves = RU.run_moves(steps, preds, k=3)
    facts = _facts(run_id, steps)
    step = _chosen_step(run_id, steps, moves)
    left, right = st.columns([1.15, 1])
    with left:
        _curve(run_id, steps, moves, facts, step)
    with right:
        _transcript(run_id, step, steps["step"].astype(int).tolist())


def show_messages_only() -> None:
    """No predictor to score (none selected, or a log too small for a reference): each run's transcript
    and outcome, without forecasts."""
    st.info("**No predictor to score**: none is selected, or the log has no forecast and too few runs for a "
            "reference forecaster. Choose one in the sidebar's *Predictors* box to see forecasts and each step's "
            "contribution; each run's messages are below.", icon=":material/touch_app:")
    tr = data.trajectories
    ids = tr["trajectory_id"].astype(str).tolist()
    wanted = st.session_state.get("_runs_last")
    if wanted not in ids:
        if wanted is not None:
            st.warning(f"**This log has no run {code(wanted, 120)}**. Choose a run below.", icon=":material/search_off:")
        wanted = ids[0]
    st.session_state["runs_pick"] = wanted
    st.selectbox(f"Run ({len(ids):,} in this log)", ids[:MAX_LISTED] + ([wanted] if wanted not in ids[:MAX_LISTED] else []),
                 key="runs_pick", on_change=_on_pick, help="The run's id in the log.")
    if st.query_params.get("run") != wanted:
        st.query_params["run"] = wanted
    row = tr.iloc[ids.index(wanted)]
    outcome = "censored" if bool(row["censored"]) else {1.0: "success", 0.0: "failure"}.get(row["outcome"], "unknown")
    C.tiles([("Outcome", outcome, "success or failure as the log judged it; censored: stopped before its outcome "
                                  "was known"), ("Steps", f"{int(row['length']):,}", "The agent's steps in this run.")])
    nums = list(range(1, max(int(row["length"]), 1) + 1))
    if st.session_state.get("runs_step") not in nums:
        st.session_state["runs_step"] = nums[0]
    _transcript(wanted, int(st.session_state["runs_step"]), nums)


if not preds:
    show_messages_only()
elif view == TABLE:
    show_table()
else:
    show_run()
