"""Monitoring: TPS and skill over time in sliding windows, and a CUSUM alarm on degradation
(tpsviz.diagnostics.monitoring.monitor; docs/theory.md §11)."""

import numpy as np
import streamlit as st

from pages._ui import common as C
from pages._ui.charts import plot
from pages._ui import reading as R
from pages._ui import results as Rs
from pages._ui import state as S
from pages._ui.sample import sample_info
from pages._ui.text import md
from pages._ui.wording import say
from tpsviz.report import figures as F
from tpsviz.report.export import safe_csv
from tpsviz.diagnostics.monitoring.cusum import MIN_ALARM_RUNS, N_SIM
from tpsviz.diagnostics.monitoring.monitor import default_baseline, log_time_column, order_columns, order_sentence
from tpsviz.core.schema import show_id

cfg, data = C.page("Monitoring",
                   "Is the agent's confidence still honest this week? TPS and skill over time, and an alarm that "
                   "says when it got worse.")
colors = Rs.selected_colors(cfg, data)
preds = list(cfg.predictors)
if not preds:
    st.info("Select at least one predictor in the sidebar.", icon=":material/tune:")
    st.stop()

FILE_ORDER = "order in the file"


def _when(v) -> str:
    """An order value in words: a time to the minute (UTC), a number as it is."""
    if hasattr(v, "strftime"):
        return v.strftime("%Y-%m-%d %H:%M UTC")
    return f"{v:g}" if isinstance(v, float) else str(v)


# (bound to the URL: a copied link gives the same alarm verdict)
WIDGETS = ("mon_by", "mon_window", "mon_alarm", "mon_baseline", "mon_shift", "mon_arl")
# another log: its own defaults (a time column, a window for its size, a predictor that is not the reference)
src = S.current_source()
if st.session_state.get("_mon_log") != getattr(src, "key", None):
    first_visit = "_mon_log" not in st.session_state  # (the first view keeps the link's settings)
    for k in WIDGETS:
        st.session_state.pop(k, None)
        if not first_visit:
            R.drop_param(k)
    st.session_state["_mon_log"] = getattr(src, "key", None)
columns = order_columns(data)
default_by = log_time_column(data) or FILE_ORDER   # the log's own time, else the file's order (never any number)
n_runs = data.n_trajectories
not_reference = [p for p in preds if not F.is_reference(p)] or preds

c = st.columns([2, 2, 2])
by = c[0].selectbox("Order runs by", [FILE_ORDER] + columns, index=([FILE_ORDER] + columns).index(default_by),
                    key="mon_by", bind="query-params",
                    format_func=lambda v: v if v == FILE_ORDER else f"column {show_id(v)}",
                    help="By default the time the log records (a harness's or a trace's start_time, a table's "
                         "timestamp), else the order in which runs first appear in the file. Or any column of "
                         "date-times or numbers; a value per step counts at each run's earliest.")
max_window = max(2, n_runs // 2)
window = int(c[1].number_input("Runs per window", 2, max_window, min(100, max(2, n_runs // 8)), step=10,
                               key="mon_window", bind="query-params",
                               help=f"Each point is the mean over this many consecutive runs (2 to "
                                                      f"{max_window:,}); windows move by a quarter of their width."))
alarm_on = c[2].selectbox("Alarm watches", preds, index=preds.index(not_reference[0]), key="mon_alarm",
                          bind="query-params",
                          format_func=F.display_name, help="The predictor whose per-run TPS the CUSUM alarm follows.")
with st.expander("Alarm settings"):
    e = st.columns(3)
    # (at least MIN_ALARM_RUNS where the log has them: fewer cannot set an alarm up, and the box took 5
    # and then said so)
    baseline = int(e[0].number_input("In-control runs at the start", max(2, min(MIN_ALARM_RUNS, n_runs)), max(2, n_runs),
                                     max(2, default_baseline(n_runs, window)), key="mon_baseline", bind="query-params",
                                     help="The alarm learns what normal looks like from these first runs (default: a "
                                          f"quarter of the runs, at least one window and at least {MIN_ALARM_RUNS})."))
    shift = float(e[1].select_slider("Drop to detect (SD)", [0.25, 0.5, 0.75, 1.0, 1.5], 0.5, key="mon_shift",
                                     bind="query-params",
                                     help="The CUSUM is most sensitive to a drop of this size, in standard deviations of "
                                          "the in-control runs."))
    arl = float(e[2].select_slider("One false alarm per … runs", [100, 200, 500, 1000, 2000, 5000], 1000,
                                   key="mon_arl", bind="query-params", help="The threshold is set so that, while nothing changes, the alarm "
                                                       "goes off about once in this many runs."))

try:
    res = Rs.monitoring(None if by == FILE_ORDER else by, window, alarm_on, baseline, shift, arl, a=Rs.analysis(cfg))
except ValueError as exc:  # an order column without times or numbers: say so here, with what to do
    st.warning(f"**Runs cannot be ordered this way:** {md(say(exc).rstrip('.'), 400)}. Choose another column under "
               "\"Order runs by\", or the order in the file.", icon=":material/sort:")
    st.stop()
order_words = order_sentence(data, None if by == FILE_ORDER else by)
st.caption(md(order_words[:1].upper() + order_words[1:], 200) + ".")
sample = sample_info(data)  # a dataset opened on a sample: runs are counted among the sampled ones
x_title = (("sampled run" if sample else "run") + " (order in the file)" if by == FILE_ORDER
           else f"{show_id(by)} (last run of the window)")
if sample:
    st.caption(f"**On the sample**, runs are counted among the {sample['runs_sampled']:,} sampled runs in this order: "
               f"the 10th run is the 10th sampled run, and a window of {window:,} sampled runs spans about "
               f"{window * sample['runs_total'] / max(sample['runs_sampled'], 1):,.0f} of the dataset's "
               f"{sample['runs_total']:,} runs. Ids and order values name the runs themselves.")
for note in res.notes:
    st.info(md(say(note), 300), icon=":material/info:")

# ----------------------------------------------------------------- the answer first
alarm = res.alarm


def _nth(position: int) -> str:
    """The ordinal of a 0-based position: 0 → "1st", 556 → "557th"."""
    n = position + 1
    return f"{n:,}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _run(position: int, key, tid) -> str:
    """"the 557th run (run-00556, 2026-09-24 11:40 UTC)": position in order, id, and the order value if it says more."""
    when = "" if by == FILE_ORDER else f", {md(_when(key), 40)}"
    return f"the {_nth(position)} run ({md(tid, 40)}{when})"


if alarm is not None and not alarm.reason:
    post = alarm.alarms[~alarm.alarms["in_control"]] if len(alarm.alarms) else alarm.alarms
    n_after = int(np.isfinite(alarm.statistic).sum()) - alarm.n_baseline
    chance = alarm.chance_alarms   # mean alarm count on simulated in-control streams as long as this part
    name = md(F.display_name(alarm_on), 60)
    if alarm.in_control_alarms:
        st.warning(f"**The in-control part is not calm:** the alarm went off {alarm.in_control_alarms} time(s) inside "
                   f"the first {alarm.n_baseline:,} runs it learns from, so what it takes as normal may already include "
                   "a change. Choose fewer in-control runs under Alarm settings.", icon=":material/warning:")
    if len(post):   # (too few runs after the in-control part: the core sets no alarm up and says why)
        first = post.iloc[0]
        where = (f"the alarm went off at {_run(int(first['position']), first['key'], first['trajectory_id'])}; the drop "
                 f"most likely began around the {_nth(int(first['start_position']))} run")
        p_chance = alarm.count_p   # share of those streams with as many alarms or more
        # none of the N_SIM streams reached the count: p is at most 1 / (N_SIM + 1), not equal to it
        p_words = f"p ≤ {p_chance:.2g}" if p_chance * (N_SIM + 1) < 1.5 else f"p = {p_chance:.2g}"
        if p_chance < 0.01:
            st.error(f"**{name} degraded**: {where}. {len(post)} alarm(s) in the {n_after:,} runs after the in-control "
                     f"part, where chance alone gives about {chance:.1f} (a count this high by chance: "
                     f"{p_words}; chance from {N_SIM} simulated in-control streams).",
                     icon=":material/notifications_active:")
        else:
            st.warning(f"**{name}: {len(post)} alarm(s) in the {n_after:,} runs after the in-control part, where chance "
                       f"alone gives about {chance:.1f}** (a count this high by chance: p = {p_chance:.2f}). Not yet "
                       f"clear evidence of a lasting drop; watch it. {where[0].upper() + where[1:]}.",
                       icon=":material/notifications:")
    else:
        st.success(f"**No degradation of {name} detected** in the {n_after:,} runs after the in-control part "
                   f"({alarm.n_baseline:,} runs).", icon=":material/check_circle:")

plot(F.monitor_figure(res.windows, colors, x_title), "mon_windows", name="Monitoring windows",
       caption=f"Windows of {res.window} runs every {res.stride}, in {res.order}; each point at the window's last run. "
               "Bands: 95% intervals (TPS: mean ± 1.96·SE over the window's runs; skill: delta method, against the "
               "window's own success rate, so a change in the success rate alone does not move it). A dashed mean "
               "forecast that leaves the grey dotted success rate is calibration-in-the-large going wrong.")

# ----------------------------------------------------------------- the alarm
st.subheader("Degradation alarm")
st.markdown(
    "A **CUSUM** adds up, run after run, how far the predictor's score falls short of what it was in the in-control "
    "part (its per-run TPS minus that of the in-control success rate, so long or hard runs do not count against it). "
    "Small random shortfalls cancel out; a lasting drop builds up until it crosses the threshold. Each run counts "
    "at most 3 standard deviations, so one extreme run cannot raise an alarm by itself. The threshold is "
    "set so that false alarms are rare, and the rate of false alarms is then **measured** on simulated in-control "
    "streams drawn from the first runs, which also re-estimate what normal looks like.")
if alarm is None:
    st.info("No alarm: choose a predictor for it to watch.")
elif alarm.reason:   # nothing drawn: no alarm could be raised on these runs, and the sentence says why
    st.info(md(alarm.words(), 600) + " Nothing is drawn. The window is set above, the in-control runs "
            "under Alarm settings.", icon=":material/info:")
else:
    C.tiles([
        ("False alarms (measured)", f"{1000 * alarm.false_alarm_rate:.2f} per 1,000 runs",
         f"± {1000 * alarm.false_alarm_se:.2f} (Monte-Carlo SE), on 400 resampled in-control streams; asked for "
         f"{1000 / alarm.target_arl:.2f}."),
        ("Alarms in the in-control part", f"{alarm.in_control_alarms}",
         "Alarms among the runs the alarm learnt from: each is a false alarm."),
        ("Alarms after it", f"{len(alarm.alarms) - alarm.in_control_alarms}",
         "After an alarm the CUSUM restarts, so a lasting drop raises one alarm after another."),
        ("Threshold h", f"{alarm.h:.2f}", f"k = {alarm.shift / 2:g}: tuned to a drop of {alarm.shift:g} SD."),
    ])
    plot(F.cusum_figure(res.runs, alarm, colors.get(alarm_on, "#1f77b4"),
                          x_title if by == FILE_ORDER else show_id(by)), "mon_cusum",
           name="Degradation alarm", caption=md(alarm.words(), 600))
    if len(alarm.alarms):
        show = alarm.alarms.assign(run=alarm.alarms["position"] + 1, begins=alarm.alarms["start_position"] + 1,
                                   at=alarm.alarms["key"].map(_when), since=alarm.alarms["start_key"].map(_when))
        # in file order the order value is the run number again: no "when" columns then
        shown = ["run", "trajectory_id", "begins", "in_control"] if by == FILE_ORDER else \
            ["run", "at", "trajectory_id", "begins", "since", "in_control"]
        st.dataframe(show[shown], hide_index=True,
                     width="stretch", column_config={
                         "run": st.column_config.NumberColumn("alarm at run", help="Position in monitoring order."),
                         "at": st.column_config.TextColumn("when"),
                         "trajectory_id": st.column_config.TextColumn("run id"),
                         "begins": st.column_config.NumberColumn("drop began at run",
                                                                 help="Start of the CUSUM's climb that led to the alarm."),
                         "since": st.column_config.TextColumn("began when"),
                         "in_control": st.column_config.CheckboxColumn("alarm inside the in-control part")})

with st.expander("Window table"):
    tab = res.windows.assign(predictor=lambda d: [F.display_name(p) for p in d["predictor"]],
                             first=lambda d: d["first"] + 1, last=lambda d: d["last"] + 1,
                             key_first=lambda d: d["key_first"].map(_when), key_last=lambda d: d["key_last"].map(_when))
    st.dataframe(tab[["predictor", "first", "last", "key_first", "key_last", "n_runs", "tps_mean", "tps_ci_low",
                      "tps_ci_high", "skill", "skill_ci_low", "skill_ci_high", "rate", "mean_forecast"]],
                 hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in
                                ("tps_mean", "tps_ci_low", "tps_ci_high", "skill", "skill_ci_low", "skill_ci_high",
                                 "rate", "mean_forecast")})
    st.download_button("Download windows (CSV)", safe_csv(tab).encode(), "monitoring_windows.csv", "text/csv",
                       key="mon_download", on_click="ignore")
