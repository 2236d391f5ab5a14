"""How a log is read, in the dashboard: the sidebar's reading options (format, success threshold,
treatment of termination reasons, scorer, forecast fields, column mapping, percent columns,
forecasts table), the column-mapping form for tables whose columns have other names, and the
"How this log was read" panel (docs/harness.md). Every option is mirrored in the URL."""

from __future__ import annotations

import hashlib
import math
import re

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from tpsviz.io.harness import FORMAT_CHOICES
from tpsviz.io.harness.runs import TREATMENTS, ReadOptions, parse_conf, parse_mapping
from tpsviz.io.harness.runs import DEFAULT_SUCCESS_THRESHOLD
from tpsviz.io.traces.options import TraceOptions, parse_rules

from . import state as S
from .text import md
from .wording import LABELS, READING, say

BIND = "query-params"
_GUESS = {
    "trajectory_id": ("trajectory_id", "run_id", "run", "trajectory", "episode", "episode_id", "traj_id",
                      "sample_id", "id", "conversation_id", "session_id"),
    "step": ("step", "turn", "t", "step_idx", "turn_idx", "step_id", "index", "timestep"),
    "outcome": ("outcome", "success", "reward", "label", "y", "correct", "solved", "passed", "result"),
}
_SIGNAL_HINT = re.compile(r"(conf|prob|p_|score|belief|entropy|logprob|uncert|certain|^raw_|^unc_)", re.I)
#: a column's likely direction: its long-format prefix, else its name (a log-probability is a raw
#: signal, higher = more confident; an entropy or an uncertainty, higher = less confident)
_RAW_HINT = re.compile(r"(^raw_|logprob|log_prob|logit)", re.I)
_UNC_HINT = re.compile(r"(^unc_|entropy|uncert|hesitat)", re.I)
DIRECTIONS = {"conf": "probability of success (0–1)", "raw": "higher = more confident",
              "unc": "higher = less confident"}


def treat_key(reason: str) -> str:
    """Widget/URL key of a termination reason's treatment: ``tr_<reason>`` for a plain name (a
    link stays readable), ``tr_x<hash>`` otherwise (two reasons never share a key)."""
    reason = str(reason)
    if re.fullmatch(r"[A-Za-z0-9_]{1,40}", reason):
        return "tr_" + reason
    return "tr_x" + hashlib.sha256(reason.encode("utf-8", "replace")).hexdigest()[:12]


def _value(key: str, default=""):
    """A reading option: the widget's state, or (first run from a shared link, before the widget
    exists) the URL's value."""
    ss = st.session_state
    return ss[key] if key in ss else st.query_params.get(key, default)


def options_from_state(last_reading: dict | None) -> tuple[ReadOptions, list[str]]:
    """The ReadOptions the sidebar's widgets (or the link) describe, and problems with what was
    typed (shown in the sidebar; the option is then left at its default), each naming its widget
    as ``Reading options › "…"`` (the sidebar adds no prefix of its own)."""
    problems = []
    fmt = _value("fmt", "auto")
    fmt = fmt if fmt in FORMAT_CHOICES else "auto"
    thr = None
    txt = str(_value("thr") or "").strip()
    if txt:
        try:
            thr = float(txt)
        except ValueError:
            thr = None
        if thr is None or not math.isfinite(thr):
            thr = None
            problems.append(f'{READING} › "{LABELS["success_threshold"]}" {md(txt, 30)} is not a finite number '
                            "(the default is used)")
    conf, mapping = (), ()
    try:
        conf = parse_conf([_value("conf")]) if str(_value("conf")).strip() else ()
    except ValueError as e:
        problems.append(md(say(e)))
    try:
        mapping = parse_mapping([_value("map")])
    except ValueError as e:
        problems.append(md(say(e)))
    percent = tuple(p.strip() for p in str(_value("pct") or "").split(",") if p.strip())
    defaults = {treat_key(r["reason"]): (r["reason"], r.get("default_treatment"))
                for r in (last_reading or {}).get("treatment", [])}
    keys = {k for k in st.session_state.keys() if str(k).startswith("tr_")}
    keys |= {k for k in st.query_params.keys() if str(k).startswith("tr_")}
    treat = []
    for k in sorted(keys):
        choice = _value(k, None)
        reason, default = defaults.get(k, (k[3:], None))
        if choice in TREATMENTS and choice != default:
            treat.append((reason, choice))
    scorer = str(_value("scorer") or "").strip() or None
    return ReadOptions(fmt=None if fmt == "auto" else fmt, success_threshold=thr, treat=tuple(treat),
                       scorer=scorer, conf=conf, mapping=mapping, percent=percent,
                       traces=_trace_options(problems)), problems


def _trace_options(problems: list) -> TraceOptions:
    """The trace options of the widgets (or the link); a rule that cannot be read is a problem and
    left out."""
    rules = {}
    for key, name in (("steps", "step_spans"), ("censor", "censor_when")):
        try:
            rules[name] = parse_rules(str(_value(key) or ""), name)
        except ValueError as e:
            problems.append(md(say(e)))
            rules[name] = ()
    return TraceOptions(run_by=str(_value("runby") or "").strip() or None,
                        outcome=str(_value("outc") or "").strip() or None, **rules)


#: the reading options of one file (widget and URL keys); "tr_…" treatments too
OPTION_KEYS = ("fmt", "conf", "thr", "scorer", "map", "pct", "fpath", "runby", "steps", "outc", "censor", "opath")


def options_follow_file(identity: str | None) -> bool:
    """Reading options belong to the file they were set for: when another file is chosen (a new
    server path, other uploaded names), they are cleared, in the session and in the link, before
    the file is read. A percent column or a mapping of one file refused the next one ("percent
    given for 'conf_x', which is not a predictor column"). ``identity`` None (no file chosen yet,
    e.g. an empty path box) changes nothing, and neither does the first run of a session (the
    link's options are for its file). Returns whether some option was set and is now cleared."""
    ss = st.session_state
    if identity is None:
        return False
    last = ss.get("_options_for")
    ss["_options_for"] = identity
    if last is None or last == identity:
        return False
    cleared = False
    for k in OPTION_KEYS:
        cleared |= ss.get(k, st.query_params.get(k)) not in (None, "", "auto")
        # the widget's default, set before it is drawn: a widget bound to the URL takes its value from
        # the link when it has no state, and its URL parameter cannot be deleted while it is bound
        # (Streamlit drops the parameter itself once the value is the default)
        ss[k] = "auto" if k == "fmt" else ""
    for k in [k for k in list(ss.keys()) + list(st.query_params.keys()) if str(k).startswith("tr_")]:
        ss.pop(k, None)  # (a reason the next file also has keeps the link's treatment, if any)
        drop_param(k)
    return cleared


def drop_param(key: str) -> None:
    """Remove ``key`` from the URL unless a widget is bound to it (Streamlit then removes it when
    the widget is not drawn, or its value is the default)."""
    try:
        del st.query_params[key]
    except (KeyError, StreamlitAPIException):
        pass


def sidebar_options(kind: str) -> tuple:
    """The reading options (an expander under the data source; not for the demo). Returns the
    uploaded forecasts table and a trace file's uploaded outcomes table, each as (bytes, name) or
    None."""
    if kind == "demo":
        return None, None
    side = outcomes = None
    with st.sidebar.expander(READING, expanded=False):
        st.selectbox("Format", FORMAT_CHOICES, key="fmt", bind=BIND,
                     help="auto: recognised from the content (tables by extension; tau2-bench, tau-bench "
                          "and Inspect AI logs, OTLP, OpenInference and Langfuse traces by their structure).")
        st.text_input(LABELS["conf"], key="conf", bind=BIND,
                      placeholder="verbal=metadata.confidence",
                      help="Harness logs: NAME=FIELD pairs, comma-separated; FIELD is a dotted path in each "
                           "assistant message. A NAME starting raw_ or unc_ is a raw signal (higher = more / "
                           "less confident). Token log-probabilities, when the log has them, become raw "
                           "signals on their own.")
        if kind == "upload":
            up = st.file_uploader(LABELS["forecasts"], type=["csv", "tsv", "parquet", "pq", "jsonl"],
                                  key="upload_forecasts",
                                  help="trajectory_id, step and conf_<name> / raw_<name> / unc_<name> columns, "
                                       "joined to the log's agent steps.")
            side = (S.upload_bytes(up, "upload_forecasts"), up.name) if up is not None else None
        else:
            st.text_input(LABELS["forecasts_path"], key="fpath",
                          help="A table trajectory_id, step, conf_*/raw_*/unc_* under the data roots.")
        st.text_input(LABELS["success_threshold"], key="thr", bind=BIND, placeholder=f"{DEFAULT_SUCCESS_THRESHOLD:.6f}",
                      help="A recorded reward or numeric score counts as success when ≥ this "
                           "(default 1 − 1e-6: reward 1).")
        st.text_input(LABELS["scorer"], key="scorer", bind=BIND, placeholder="first scorer",
                      help="The scorer whose value is the outcome.")
        st.text_input(LABELS["map"], key="map", bind=BIND,
                      placeholder="trajectory_id=run, step=turn, outcome=success, conf_verbal=p",
                      help="Long-format name = your column, comma-separated.")
        st.text_input(LABELS["percent"], key="pct", bind=BIND, placeholder="verbal",
                      help="Names of predictors whose values are 0–100: divided by 100.")
        outcomes = _trace_inputs(kind)
        rows = (st.session_state.get("_reading") or {}).get("treatment", [])
        if rows:
            st.markdown(f"**{LABELS['treat']}**", help="How runs are scored by why they ended: outcome (the "
                        "harness's judgement), censored (stopped by a limit: outcome unknown), failure, "
                        "dropped (left out, counted).")
            for row in rows:
                key = treat_key(row["reason"])
                if key not in st.session_state and key not in st.query_params:
                    st.session_state[key] = row["treatment"]
                st.selectbox(f"{md(row['reason'], 40)} ({row['runs']} runs)", TREATMENTS, key=key, bind=BIND,
                             help=md(row.get("meaning") or "a termination reason of this log"))
    return side, outcomes


def guess(columns: list[str], target: str) -> str | None:
    """A column that probably holds ``target`` (trajectory_id, step, outcome)."""
    low = {c.lower(): c for c in columns}
    for g in _GUESS[target]:
        if g in low:
            return low[g]
    return None


def direction_guess(column: str) -> str:
    """The likely kind of a forecast column: "conf" (a probability), "raw" (higher = more
    confident) or "unc" (higher = less confident)."""
    if re.match(r"conf_", column, re.I):
        return "conf"
    return "raw" if _RAW_HINT.search(column) else "unc" if _UNC_HINT.search(column) else "conf"


def _apply_mapping():
    ss = st.session_state
    parts = [f"{t}={ss[f'mapf_{t}']}" for t in ("trajectory_id", "step", "outcome") if ss.get(f"mapf_{t}")]
    for col in ss.get("mapf_preds", []):
        kind = ss.get(f"mapf_dir_{col}", direction_guess(col))
        # (a column named conf_x, raw_x or unc_x keeps its name x under the direction chosen)
        name = re.sub(r"[^A-Za-z0-9_]+", "_", re.sub(r"^(conf|raw|unc)_(?=.)", "", col, flags=re.I)).strip("_")
        parts.append(f"{kind}_{name or 'signal'}={col}")
    ss["map"] = ", ".join(parts)


def mapping_form(columns: list[str]) -> None:
    """A form that maps a table's columns to the long format, with guesses (on the page)."""
    st.subheader("Map your columns")
    st.caption("This table's columns have other names than tpsviz expects. Say which column is which; the "
               "mapping goes into the sidebar's reading options and the link, so a shared link reproduces it.")
    opts = [""] + list(columns)
    c = st.columns(3)
    for i, target in enumerate(("trajectory_id", "step", "outcome")):
        g = guess(columns, target)
        key = f"mapf_{target}"
        if key not in st.session_state:
            st.session_state[key] = g or ""
        c[i].selectbox(target, opts, key=key, format_func=lambda v: v or "— choose —",
                       help={"trajectory_id": "the run id", "step": "the step number within a run",
                             "outcome": "1/0 (or true/false) for finished runs, empty when censored"}[target])
    used = {st.session_state.get(f"mapf_{t}") for t in ("trajectory_id", "step", "outcome")}
    rest = [col for col in columns if col not in used]
    if "mapf_preds" not in st.session_state:
        st.session_state["mapf_preds"] = [col for col in rest if _SIGNAL_HINT.search(col)]
    st.multiselect("Forecast columns", rest, key="mapf_preds",
                   help="Columns with a per-step forecast or signal; choose the direction of each below.")
    for col in st.session_state.get("mapf_preds", []):
        if f"mapf_dir_{col}" not in st.session_state:
            st.session_state[f"mapf_dir_{col}"] = direction_guess(col)
        st.radio(md(col, 60), list(DIRECTIONS), key=f"mapf_dir_{col}", format_func=DIRECTIONS.get,
                 horizontal=True)
    st.button("Apply this mapping", type="primary", on_click=_apply_mapping)


def reading_panel(data) -> None:
    """"How this log was read": format, treatment table with counts, forecast sources, notes."""
    r = data.reading or {}
    if "treatment" not in r and not data.notes:
        return
    title = f"How this log was read ({md(r.get('format', 'table'))})"
    with st.expander(title, expanded="treatment" in r):
        if "treatment" in r:
            st.markdown(f"**{r['runs_read']:,} runs read, {r['runs_kept']:,} kept.** Each run is scored by why "
                        "it ended; change a treatment in the sidebar's *Reading options*.")
            table = pd.DataFrame([{"termination reason": row["reason"], "treatment": row["treatment"],
                                   "runs": row["runs"], "set by": "default" if row["default"] else "you",
                                   "meaning": row.get("meaning", "")} for row in r["treatment"]])
            st.dataframe(table, hide_index=True, width="stretch")
        if r.get("forecasts"):
            st.dataframe(pd.DataFrame([{"column": k, "comes from": v} for k, v in r["forecasts"].items()]),
                         hide_index=True, width="stretch")
        for note in data.notes:
            st.text(f"• {say(note)}")


def _trace_inputs(kind: str):
    """The trace files' options (docs/traces.md): outcome (named, or a table), runs by attribute,
    step spans, censoring. Returns an uploaded outcomes table as (bytes, name), or None."""
    st.text_input(LABELS["outcome"], key="outc", bind=BIND, placeholder="app.success",
                  help="Traces (OTLP, OpenInference, Langfuse): the score, evaluation or attribute holding a "
                       "run's outcome: 0/1, true/false, or a number (success when ≥ the success threshold).")
    outcomes = None
    table_help = ("Traces: a table trajectory_id, outcome[, censored] (a run per trace id, or per value of "
                  "the runs-by attribute), or a Phoenix evaluations table (span or trace ids with a label or "
                  "score).")
    if kind == "upload":
        up = st.file_uploader(LABELS["outcomes"], type=["csv", "tsv", "parquet", "pq", "jsonl"],
                              key="upload_outcomes", help=table_help)
        outcomes = (S.upload_bytes(up, "upload_outcomes"), up.name) if up is not None else None
    else:
        st.text_input(LABELS["outcomes_path"], key="opath", help=table_help + " Under the data roots.")
    st.text_input(LABELS["run_by"], key="runby", bind=BIND, placeholder="gen_ai.conversation.id",
                  help="Traces: an attribute whose value groups traces into one run (default: one run per trace).")
    st.text_input(LABELS["step_spans"], key="steps", bind=BIND, placeholder="name=chat*",
                  help="Traces: the spans that are steps, name=PATTERN or ATTRIBUTE=VALUE, comma-separated "
                       "(default: the model calls). Tool spans are never steps.")
    st.text_input(LABELS["censor_when"], key="censor", bind=BIND, placeholder="agent.stop_reason=max_turns",
                  help="Traces: a run without an outcome is censored when a span has this attribute value; "
                       "other runs without an outcome are dropped, and counted.")
    return outcomes

