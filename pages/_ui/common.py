"""Rendering helpers shared by the pages: the common top of a page (title, data or a designed empty
or error state, the settings/verdict banner), metric tiles and column help. Figures are drawn by
``charts.plot``."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import streamlit as st

from tpsviz.core.schema import REQUIRED, canonical_name
from tpsviz.evaluation.summary import settings_line
from tpsviz.io.files import CANNOT_OPEN
from tpsviz.io.tables import FORMATS, table_columns

from . import results as Rs
from . import loading as L
from . import state as S
from .reading import mapping_form
from .sample import sample_info, sample_words
from .text import md
from .wording import LABELS, say

def tiles(items: list) -> None:
    """Metric tiles in a row that wraps: each tile is as wide as its label and value, so no tile is cut
    off on a narrow screen (800 px) and a wide one keeps them on one line.

    ``items``: (label, value, help) or (label, value, help, delta) tuples.
    """
    with st.container(horizontal=True, wrap=True, gap="large"):
        for it in items:
            label, value, help_ = it[:3]
            delta = it[3] if len(it) > 3 else None
            st.metric(label, value, delta=delta, delta_color="off", help=help_, width="content")


#: words of the readers' problems that no reading option can mend (tpsviz.io.tables, engines/file_errors.py)
DAMAGE_WORDS = ("damaged", "not valid UTF-8")


def show_failure(f: L.LoadFailure) -> None:
    """A bad file: what and where, as a list; the text comes from the log, so shown as text."""
    n = len(f.problems)
    if getattr(f, "forecasts", False):  # the log is fine: the table joined to it is not
        st.error(f"**This forecasts table cannot be joined to the log.** {n} problem{'s' if n != 1 else ''} found "
                 "(the log itself was read). The table needs trajectory_id, step and conf_<name> columns whose "
                 "(trajectory_id, step) pairs are the log's agent steps, as the replay command writes them: fix the "
                 "table, or remove it from the sidebar's Reading options.", icon=":material/link_off:")
    elif f.problems == [CANNOT_OPEN]:  # (one message for every refused path: no oracle on the server's files)
        which = f.source if f.source in ("forecasts path", "outcomes path") else "path"
        st.error(f"**This {which} cannot be opened.** Check it: it must name a file (the log may also be a folder "
                 "of them) under the readable folders listed in the sidebar; a relative path starts at the first one.",
                 icon=":material/block:")
    else:
        # a damaged file or one that is not UTF-8 text: no reading option reads it (helper-24: they were offered)
        damaged = all(any(w in p for w in DAMAGE_WORDS) for p in f.problems)
        how = ("" if damaged else ", or change how it is read (sidebar: Reading options),")
        st.error(f"**This log cannot be used.** {n} problem{'s' if n != 1 else ''} found. The file was not modified: "
                 f"fix {'them' if n != 1 else 'it'} in the file{' (save or export it again)' if damaged else ''}{how} "
                 "and load it again; or switch the data source back to Demo.", icon=":material/block:")
    st.caption(f"{'Forecasts table' if getattr(f, 'forecasts', False) else 'File'}: {md(f.source, 120)}")
    st.code("\n".join(f"• {p}" for p in f.problems), language=None, wrap_lines=True)


def mappable_columns(src, failure) -> list[str]:
    """The columns of a table whose required columns are missing (for the mapping form)."""
    if src is None or src.kind not in ("upload", "path") or src.parts:
        return []
    if not any("missing required column" in p for p in failure.problems):
        return []
    fmt = FORMATS.get(Path(src.name).suffix.lower())
    if fmt is None:
        return []
    try:
        raw = src.raw if src.raw is not None else S.data_roots().read(src.path, max_bytes=2**20)
    except OSError:  # too large to peek at (the header is in the first MB) or refused
        try:
            raw = Path(src.path).open("rb").read(2**20) if src.kind == "path" and S.data_roots().contains(src.path) else b""
        except OSError:
            raw = b""
    columns = table_columns(raw, src.name, fmt) if raw else []
    # offer a mapping only when other columns could stand for the missing required ones
    present = sum(1 for c in REQUIRED if c in {canonical_name(x) for x in columns})
    return columns if len(columns) - present >= len(REQUIRED) - present > 0 else []


def show_page_error(e: Exception) -> None:
    """An exception raised while drawing a page, shown where it happened, with what to do next.

    ValueErrors come from the core's validation and carry a message meant for the user (e.g. the
    ``column`` schedule on a log without a ``weight`` column); anything else is unexpected and is
    shown by its type only, so that it can be reported: its message may quote a file (DuckDB's
    errors quote the line they stopped at) or a path on the server, and goes to the server's log
    with the traceback.
    """
    msg = say(e) or type(e).__name__
    if not isinstance(e, ValueError):  # a bug: the traceback goes to the server log, not the page
        logging.getLogger("tpsviz").error("page failed", exc_info=e)
    if isinstance(e, ValueError):
        st.error(f"**These settings cannot be applied to this log:** {md(msg.rstrip('.'))}.\n\n"
                 "Change the setting named above in the sidebar; the rest of the app keeps working. (A shared "
                 "link carries its settings: open the app without them to start from the defaults.)",
                 icon=":material/tune:")
    else:
        st.error(f"**Something went wrong while drawing this page** ({type(e).__name__}; the details are in the "
                 "server's log). Other pages and settings still work; please report this with a copy of the link.",
                 icon=":material/bug_report:")


def ensure_shell() -> None:
    """Make sure app.py (st.navigation and the shared sidebar) ran in this session.

    Streamlit decides once per server process whether the app uses the legacy ``pages/``
    directory; if the very first request of a fresh server is a page URL (a shared link),
    it runs that page script alone, without app.py. Switch to st.navigation mode and rerun.
    """
    if st.session_state.get("_shell"):
        return
    try:
        from streamlit.runtime.pages_manager import PagesManager

        PagesManager.uses_pages_directory = False
    except Exception:  # pragma: no cover - internal API moved
        pass
    st.rerun()


def page(title: str, caption: str | None = None, all_runs_below: bool = False, predictors_needed: bool = True):
    """The common top of every page: shell, title, caption, data (or a designed empty/error
    state), and the settings banner. Returns (cfg, data). ``all_runs_below``: the page holds
    the all-runs section of a sampled dataset (its banner says so); ``predictors_needed=False``: the
    page has something to show without a predictor (the Runs page's transcripts)."""
    ensure_shell()
    st.title(title)
    if caption:
        st.caption(caption)
    cfg, data, _ = require_data(predictors_needed)
    banner(cfg, data, all_runs_below=all_runs_below)
    return cfg, data


def require_data(predictors_needed: bool = True):
    """(cfg, data, problems) for the page, or render a designed empty/error state and stop (no predictor
    selected: only when ``predictors_needed``)."""
    cfg = S.current()
    src = S.current_source()
    if src is None:
        st.info("**No data loaded yet.** Upload a trajectory log in the sidebar (CSV, Parquet or JSON Lines: "
                "one row per trajectory and step with `trajectory_id`, `step`, `outcome` and at least one "
                "`conf_<name>` column), give a server path, or switch the data source back to **Demo**.",
                icon=":material/folder_open:")
        st.stop()
    data, problems = L.get_data(cfg, src)
    if L.is_failure(data):
        # one element for the whole state: the next run's first element replaces all of it, so no part of
        # an old error stays (faded) under a spinner once the file or its forecasts table is mended
        with st.container():
            _show_unusable(src, data)
        st.stop()
    for p in problems:  # built with md() from the settings and the log
        st.warning(p)
    gone = [p for p in cfg.predictors if p not in data.predictors]
    if gone:  # e.g. a recalibration that failed: score the others, say which are missing
        cfg = replace(cfg, predictors=tuple(p for p in cfg.predictors if p in data.predictors))
        st.session_state["_cfg"] = cfg
        st.caption("Not available in this log (left out): " + ", ".join(md(p, 60) for p in gone))
    if data.n_trajectories == 0:
        st.warning("**The filters leave no trajectories.** Widen the metadata filters in the sidebar.", icon=":material/search:")
        st.stop()
    refusal = L.exact_refusal(data, src, (cfg.qz_source, float(cfg.qz_const))) if cfg.censoring == "exact" else None
    if refusal is not None:  # exact mode is exact (docs/theory.md §4): never q_Z = 0 under its name
        st.error(f"**Exact censoring needs a q_Z for every censored run**: {refusal.n_missing:,} of this log's "
                 f"{refusal.n_censored:,} censored runs have none under this q_Z source. In the sidebar, set "
                 f"*{LABELS['q_z']}* to *one value* (then choose it with the slider), give a rollouts file "
                 f"covering every censored run, or set *{LABELS['censoring']}* to *simple* (a cut-off run "
                 "counts as a failure).", icon=":material/tune:")
        st.stop()
    if not cfg.predictors and predictors_needed:
        st.warning("**No predictor selected.** Choose at least one in the sidebar's *Predictors* box.", icon=":material/touch_app:")
        st.stop()
    return cfg, data, problems


def _show_unusable(src, data) -> None:
    """The designed state of a log that cannot be used: the mapping form, a pointer to the Other outcomes
    page, or the problems as text."""
    columns = mappable_columns(src, data)
    if columns:  # a table with other column names: offer the mapping, keep the problems at hand
        st.info("**This table's columns have other names than tpsviz expects.** Say which is which below "
                "(the file is not modified).", icon=":material/table_view:")
        with st.expander("What tpsviz could not find"):
            st.code("\n".join(f"• {p}" for p in data.problems), language=None, wrap_lines=True)
        mapping_form(columns)
    elif data.named & {"multiclass", "continuous"}:  # not binary: scored on its own page
        kind = "a multi-class" if "multiclass" in data.named else "a continuous-outcome"
        st.info(f"**This is {kind} log.** Its outcome is not success or failure, so this page does not apply; "
                "the Other outcomes page scores it and offers its per-run scores as CSV.",
                icon=":material/category:")
        st.page_link("pages/views/outcomes.py", label="Open Other outcomes", icon=":material/category:")
    else:
        show_failure(data)


def banner(cfg: S.Config, data, extra: str | None = None, all_runs_below: bool = False) -> None:
    """The settings that change the verdict, next to it (docs/architecture.md): one line of plain
    words, the details (symbols, units, the schedule's verdict) in an expander drawn only when open."""
    s = cfg.schedule_obj
    v = s.verdict
    nf = f" · filtered ({len(cfg.filters)} filter{'s' if len(cfg.filters) != 1 else ''})" if cfg.filters else ""
    n_cens = data.n_censored
    if cfg.censoring == "complete" and n_cens:
        ntext = (f"**n** {data.n_trajectories - n_cens:,} runs scored ({n_cens:,} censored left out "
                 f"of {data.n_trajectories:,})")
        runs = f"{data.n_trajectories - n_cens:,} runs scored of {data.n_trajectories:,}"
    else:
        ntext = f"**n** {data.n_trajectories:,} runs, {n_cens:,} censored"
        runs = f"{data.n_trajectories:,} run{'s' if data.n_trajectories != 1 else ''}"
    qz = cfg.qz_const if cfg.censoring == "exact" and cfg.qz_source == "constant" else None
    line = settings_line(cfg.score_settings(), n_cens, qz)
    st.markdown(f":material/tune: **Scored with** {md(line)} · {runs}{nf}"
                + (f"  \n{extra}" if extra else ""),
                help="Change these in the sidebar; the details are just below.")
    details = st.expander("Score settings in detail", key="settings_details", on_change="rerun")
    if details.open:  # drawn only when open: fewer elements for the browser to lay out after each change
        w = cfg.words(Rs.censoring_label(cfg))
        c = details.columns([1.25, 1.5, 1.6, 1.0])
        c[0].markdown(f"**Score** {w['score']}  \n{w['unit']}; {w['direction']}",
                      help="Beta-family proper scoring rule S(p, y) applied at every step.")
        c[1].markdown(f"**Weights** `{w['formula']}`  \n{S.VERDICT_ICON.get(v.status, '')} {w['schedule_status']}",
                      help=w["schedule_reason"])
        c[2].markdown(f"**Censoring** {w['censoring']}",
                      help="How runs stopped before their outcome are scored (see the Censoring page).")
        c[3].markdown(f"**ε** {w['eps']}  \n{ntext}{nf}",
                      help="ε: forecasts clipped to [ε, 1−ε]. n: trajectories scored after filters.")
    info = sample_info(data)
    if info:  # a dataset larger than memory: every number on the page covers the sample (sample.py)
        st.info(sample_words(info, all_runs_below), icon=":material/casino:")
    if not v.is_strictly_proper:  # a page-level warning on every page, not only the icon above
        st.warning(f"**The weight schedule {md(s.spec)} is {md(v.status)}.** {md(v.reason)} Scores under it do not "
                   "reward reporting the true probability at every step: use it to explore, not to rank.",
                   icon=":material/warning:")


def column_help() -> dict:
    """Column definitions (hover on the table header)."""
    return {
        "TPS": "Trajectory Proper Score: Σ_t w_t S(F_t, Y), mean over trajectories. Higher is better, 0 is perfect.",
        "CI": "Percentile bootstrap interval resampling trajectories.",
        "skill": "1 − TPS/TPS_ref, TPS_ref = TPS of the constant base-rate forecast under the same settings (its "
                 "rate follows the censoring mode). 1 is perfect, 0 = no better than the base rate, < 0 worse; "
                 "± SE from a paired trajectory bootstrap; −∞/— when TPS is −∞.",
        "AUROC": "Area under the ROC curve, pooled over (trajectory, step) pairs of complete runs: the chance a "
                 "success step outranks a failure step. Ranking only: blind to calibration. 0.5 = chance, ↑ better.",
        "AUPRC": "Average precision pooled over steps of complete runs. Ranking only. ↑ better.",
        "T-ECE": "Trajectory ECE: Σ_bins (n_k/n)|mean F − success rate| over (trajectory, step) pairs, 10 equal-width "
                 "bins. ↓ better; blind to resolution within a bin.",
        "n": "Trajectories scored (censored among them).",
    }
