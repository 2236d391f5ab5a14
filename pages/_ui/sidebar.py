"""The shared sidebar (rendered by app.py on every page): data source, predictors, score family,
schedule, censoring, ε, filters. Widgets are bound to the URL (``bind="query-params"``) so a copied
link reproduces the view; recalibrations are mirrored by hand in ``?recal=``."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pandas as pd
import streamlit as st

import tpsviz
from tpsviz.report import figures as F
from tpsviz.core.schedules import SCHEDULE_NAMES
from tpsviz.core.censoring import CENSORING_MODES, qz_coverage
from tpsviz.evaluation.reading import default_forecasts

from . import reading as R
from . import results as Rs
from . import loading as L
from . import references as Ref
from . import sources_in_use as SU
from . import state as S
from .text import code, md
from .wording import LABELS, UNCERTAINTY, say

UPLOAD_TYPES = ["csv", "tsv", "txt", "parquet", "pq", "jsonl", "ndjson", "json", "eval"]

BIND = "query-params"
# Every bound widget gets its default on every run, also once its key has state: going back in the
# browser to a URL without a widget's parameter restores the widget's default, and a default left
# out is the widget's own (a slider's minimum, no option): helper-24 saw Back set α = β = −0.95,
# empty the predictors and pick complete-case censoring. (Streamlit then logs that the value was
# also set through Session State: switched off in .streamlit/config.toml.)
CENSORING_HELP = ("How runs stopped by an administrative limit (censored: outcome unknown) are scored. "
                  "complete-case drops them (changes the population); simple scores them as failures "
                  "(q_Z = 0); exact uses q_Z, an honest estimate of P(success | history at the stop); "
                  "upper uses q_Z = 1. Simple and upper bound every possible exact score.")


SOURCES = {"Demo": "demo", "Upload": "upload", "Server path": "path"}


def _on_preset():
    name = st.session_state.get("preset")
    fam = tpsviz.PRESETS.get(name)
    # the sliders moved in the same rerun: the preset is one the browser still showed (the key
    # presses came faster than the reruns that set it to match the sliders), not one chosen
    shown = st.session_state.get("_ab_shown")
    if shown is not None and (st.session_state.get("a"), st.session_state.get("b")) != shown:
        _on_ab()
        return
    if fam is not None:
        st.session_state["a"] = float(fam.alpha)
        st.session_state["b"] = float(fam.beta)


def _on_ab():
    a, b = st.session_state.get("a", 0.0), st.session_state.get("b", 0.0)
    match = [n for n, f in tpsviz.PRESETS.items() if f.alpha == a and f.beta == b]
    st.session_state["preset"] = match[0] if match else "custom"


#: the keys of the page's fragment (app.py) and of the sidebar's α/β view below the sliders
MAIN, FAMILY = "main", "family"


def _on_ab_slider():
    """An α or β slider moved: the page and the α/β view rerun alone when nothing else of the sidebar
    changes with it (the preset stays "custom"); else, the whole app."""
    before = st.session_state.get("preset")
    _on_ab()
    if before == st.session_state.get("preset") == "custom":
        rerun_main_only(alpha=float(st.session_state.get("a", 0.0)), beta=float(st.session_state.get("b", 0.0)))


def _rerun_family_only() -> None:
    from streamlit.errors import StreamlitAPIException

    try:
        st.rerun(FAMILY)
    except StreamlitAPIException:  # not drawn yet: the interaction's own rerun
        pass


def rerun_main_only(**changed) -> None:
    """From a sidebar widget's callback: rerun only the page and the sidebar's α/β view, with the
    settings ``changed`` (fields of :class:`state.Config`) applied to the session's Config, so the
    sidebar's widgets are not drawn again (issue 48, point 4). Returns (a whole-app rerun follows)
    when there is no Config yet or the page's fragment is not known to this session."""
    from dataclasses import replace

    from streamlit.errors import StreamlitAPIException

    cfg = st.session_state.get("_cfg")
    if cfg is None:
        return
    st.session_state["_cfg"] = replace(cfg, **changed)
    if "alpha" in changed:
        st.session_state["_ab_shown"] = (changed["alpha"], changed.get("beta", cfg.beta))  # what the sliders show
    st.session_state["_main_only"] = True
    try:
        st.rerun([FAMILY, MAIN])
    except StreamlitAPIException:  # a fragment of the last run is unknown: the whole app runs
        st.session_state["_main_only"] = False
        st.session_state["_cfg"] = cfg


def _on_ab_entry(key: str, entry: str, shown: float):
    """A typed α or β moves its slider (the slider, bound to the URL, holds the setting).

    ``shown`` is the value the entry was drawn with: Streamlit also calls this for an entry of an
    earlier rerun that the browser still shows (its first value seen on the server counts as a
    change), and its value is then the slider's old one, not something typed.
    """
    v = st.session_state.get(entry)
    if v is None or float(v) == shown:
        # nothing typed: ask for the α/β view's rerun only. A callback that returns makes Streamlit run
        # the whole app when it comes with an α nudge (the entry drawn by the nudge reports its first
        # value with the next one), and the sidebar would be drawn again
        _rerun_family_only()
        return
    st.session_state[key] = float(v)
    _on_ab()
    st.rerun()  # (the entry is drawn in a fragment: the slider beside it must be drawn again too)


#: a metadata column with more distinct values than this gets no filter (the widget would be unusable)
MAX_SEARCH_VALUES = 5000


def filter_key(col: str) -> str:
    """Widget (and URL) key of a metadata filter: readable, unique per column name."""
    # 16 hex digits (64 bits): two column names cannot be crafted to share a key (6 took a second)
    digest = hashlib.sha256(str(col).encode("utf-8", "replace")).hexdigest()[:16]
    return "f_" + re.sub(r"[^A-Za-z0-9_]+", "_", str(col))[:32] + "_" + digest


def _source() -> S.Source | None:
    sb = st.sidebar
    label = sb.radio("Data source", list(SOURCES), key="src", bind=BIND, horizontal=True,
                    help="Demo: synthetic logs whose true success probabilities are known, and one real public log "
                         "(tau-bench) without forecasts. Upload: a table "
                         "(CSV, TSV, Parquet, JSON Lines) or a harness log (tau2-bench, tau-bench, Inspect AI). "
                         "Server path: a file under the folders this server may read.")
    kind = SOURCES[label]
    if kind != "upload":  # the upload boxes are not drawn: Streamlit's store may let their files go
        S.release_uploads(S.UPLOAD_BOXES)
    if kind == "demo":
        name = sb.selectbox("Demo scenario", list(S.DEMOS), key="demo", bind=BIND,
                            help=S.DEMOS_HELP + " The others than tau-bench-airline are synthetic benchmarks made by "
                                 "tpsviz.synthetic.agent; 'truthful' reports the true q_t (the true probability) and is "
                                 "drawn in black.")
        for k in ("path", "rpath", *R.OPTION_KEYS):  # a link to the demo carries no file's path or options
            R.drop_param(k)
        return S.demo_source(name)
    if kind == "upload":
        ups = sb.file_uploader("Trajectory log", type=UPLOAD_TYPES, key="upload", accept_multiple_files=True,
                               help="A table with one row per (trajectory, step) — trajectory_id, step, outcome, "
                                    "conf_<name> — or a harness log: tau2-bench results (.json; for its folder "
                                    "layout, select results.json and the simulation files together), tau-bench "
                                    "results (.json), Inspect AI (.eval or .json); or production traces: OTLP JSON, a "
                                    "Phoenix span table, a Langfuse export (docs/traces.md).")
        roll = sb.file_uploader(LABELS["rollouts"], type=["csv", "tsv", "parquet", "pq", "jsonl", "ndjson"],
                                key="upload_rollouts",
                                help="Monte-Carlo continuations of censored runs: trajectory_id, outcome (0/1). "
                                     "Their mean is q̂_Z for the exact censored score.")
        _forget_options(tuple(u.name for u in ups) if ups else None)
        side, outcomes = R.sidebar_options(kind)
        if not ups:
            return None
        if len(ups) > 1 and not any(u.name == "results.json" for u in ups):
            sb.caption(f":orange[:material/warning:] {len(ups)} files are in the upload box, and they are read "
                       "together as one log (a tau2-bench folder layout: results.json with its simulation "
                       "files). For one table or harness log, remove the others (× beside each file).")
        files = tuple((S.upload_bytes(u, "upload"), u.name) for u in ups)  # (not a copy of them)
        rraw = S.upload_bytes(roll, "upload_rollouts") if roll is not None else None
        opts = _options()
        return S.upload_source(files, opts, side, rraw, roll.name if roll is not None else None, outcomes)
    return _server_path()


def _forget_options(identity) -> None:
    """Clear the reading options of another file (:func:`pages._ui.reading.options_follow_file`)
    and say so."""
    if R.options_follow_file(identity):
        st.sidebar.caption(":material/restart_alt: Reading options were cleared: they were set for another file.")


def _options():
    opts, problems = R.options_from_state(st.session_state.get("_reading"))
    for p in problems:
        st.sidebar.warning(p, icon=":material/warning:")  # (each names its widget: Reading options › …)
    return opts


def _path_from_url(key: str) -> None:
    """On a session's first run, take a server path from the link (before its widget exists)."""
    if f"_{key}_init" not in st.session_state:
        st.session_state[f"_{key}_init"] = True
        given = st.query_params.get(key, "")
        if given and key not in st.session_state:
            st.session_state[key] = given


def _url_path(key: str, roots) -> None:
    """Put a server path into the URL only when it lies under a data root (docs/deployment.md);
    the log's path may be a folder (a dataset, a tau2-bench results folder)."""
    value = str(st.session_state.get(key, "")).strip()
    if value and roots.contains(value, allow_dir=key == "path"):
        if st.query_params.get(key) != value:
            st.query_params[key] = value
    elif key in st.query_params:
        del st.query_params[key]


def readable_folders(roots) -> str:
    """The sidebar's caption of the data roots: each by its name (``logs``), never its place on the
    server, unless the administrator opted in (``TPSVIZ_SHOW_ROOT_PATHS=1``)."""
    shown = [str(r) for r in roots.roots] if roots.show_paths else roots.names
    how = ("" if roots.show_paths else
           f" A path may also start with a folder's name: {code(roots.names[0] + ':/runs/log.json', 80)}.")
    return "Readable folders: " + ", ".join(code(r, 120) for r in shown) + "." + how


def _server_path() -> S.Source | None:
    sb = st.sidebar
    roots = S.data_roots()
    if not roots.enabled:
        sb.info("Server paths are off on this server. The administrator turns them on by listing the folders "
                "logs may be read from in `TPSVIZ_DATA_ROOTS` (see the README's deployment notes). "
                "Upload the log instead.", icon=":material/lock:")
        for key in ("path", "rpath"):
            if key in st.query_params:
                del st.query_params[key]
        return None
    _path_from_url("path")
    _path_from_url("rpath")
    _path_from_url("fpath")
    _path_from_url("opath")
    # back from another source, the paths typed before (Streamlit forgets an undrawn widget's value):
    # as the boxes' values, so that the browser shows them too
    kept = {key: st.session_state.get(f"_{key}_kept", "") for key in ("path", "rpath")}
    sb.text_input("Path on the server", key="path", value=kept["path"], placeholder="run_logs.parquet",
                  help="A log file under one of the folders this server may read (relative paths start at "
                       "the first one; `name:/path` starts at the folder of that name). It is only read, never "
                       "modified.")
    sb.text_input(LABELS["rollouts_path"], key="rpath", value=kept["rpath"],
                  help="CSV/TSV/Parquet/JSON Lines with trajectory_id, outcome for Monte-Carlo q̂_Z.")
    for key in ("path", "rpath"):
        st.session_state[f"_{key}_kept"] = st.session_state.get(key, "")
    _url_path("path", roots)
    _url_path("rpath", roots)
    sb.caption(readable_folders(roots))
    _forget_options(str(st.session_state.get("path", "")).strip() or None)
    R.sidebar_options("path")
    _url_path("fpath", roots)
    _url_path("opath", roots)
    path = str(st.session_state.get("path", "")).strip()
    if not path:
        return None
    rpath = str(st.session_state.get("rpath", "")).strip() or None
    fpath = str(st.session_state.get("fpath", "")).strip() or None
    opath = str(st.session_state.get("opath", "")).strip() or None
    return S.path_source(path, rpath, _options(), fpath, opath)


def _auto_recalibrate(base, data_key, recal: tuple) -> tuple:
    """A log with raw signals only opens with each signal converted as the core says for every face
    (``tpsviz.evaluation.reading.default_forecasts``: a cross-fitted Platt scaling, 5 folds, fewer when
    a class has fewer runs), so there is something to score; once per file (the user may remove them)."""
    done = st.session_state.setdefault("_auto_recal", set())
    if data_key in done:
        return recal
    done.add(data_key)
    have = {(S.parse_recal(s) or {}).get("source") for s in recal}
    plan = default_forecasts(base)
    added = [S.recal_spec(sig, plan.method, plan.folds, False) for sig in plan.signals if sig not in have]
    room = max(S.MAX_RECAL - len(recal), 0)
    if len(added) > room:  # each adds a column to the whole log: the first ones, and say so
        st.session_state["_recal_dropped"] = st.session_state.get("_recal_dropped", 0) + len(added) - room
        added = added[:room]
    if added:
        st.session_state["recal"] = list(recal) + added
        names = [S.parse_recal(a)["name"] for a in added]
        if "pred" in st.session_state:
            st.session_state["pred"] = list(dict.fromkeys(list(st.session_state["pred"]) + names))
        st.session_state["_auto_recal_note"] = (names, plan.words())
    return tuple(st.session_state["recal"])


def _recal_specs() -> tuple:
    """The recalibrations of the session, first read from the link: valid specs, one per name, at most
    S.MAX_RECAL (each adds a column to the whole log; the rest is dropped and said so)."""
    if "recal" not in st.session_state:
        specs, names = [], set()
        asked = st.query_params.get_all("recal")
        for s in asked:
            r = S.parse_recal(s)
            if r and r["name"] not in names and len(specs) < S.MAX_RECAL:
                specs.append(s)
                names.add(r["name"])
        st.session_state["recal"] = specs
        if len(asked) > len(specs):
            st.session_state["_recal_dropped"] = len(asked) - len(specs)
    dropped = st.session_state.get("_recal_dropped")
    if dropped:
        st.sidebar.caption(f":orange[:material/warning:] {dropped} recalibration(s) were not applied (invalid, "
                           f"repeated, a recalibration of a recalibration, or more than {S.MAX_RECAL} at once).")
    return tuple(st.session_state["recal"])


def render() -> S.Config:
    """Draw the sidebar, store the Config and Source in session state, mirror to the URL."""
    sb = st.sidebar
    src = _source()
    st.session_state["_source"] = src
    SU.use_source(src)  # a log this session leaves, and no other uses, leaves the shared cache now
    base = L.load_base(src) if src is not None else None
    ok = base is not None and not L.is_failure(base)
    recal, changed = _remember_base(src, base)
    if base is None:
        sb.info("No log yet: upload a file or give a server path (or switch back to Demo).")
    elif not ok and base.named & {"multiclass", "continuous"}:  # multi-class or continuous
        sb.caption(":material/category: Not a success/failure log: the Other outcomes page scores it, with the "
                   "weight schedule and bootstrap below and its own score and censoring choices.")
    elif not ok:  # the page shows the problems (once); here only where to look
        what = "The forecasts table cannot be joined" if base.forecasts else "This log cannot be used"
        sb.caption(f":red[:material/block:] {what}: the problems are listed on the page.")
    refs = _references(sb, base) if ok else False
    preds = _predictors(sb, base, recal, changed, refs) if ok else []
    alpha, beta = _score_family(sb)
    sched, gamma, horizon = _schedule(sb, base if ok else None)
    cens, qzs, qz_const, eps = _censoring(sb, base if ok else None)
    filters = _filters(sb, base) if ok and base.metadata_columns else []
    n_boot, metric_boot = _uncertainty(sb)
    cfg = S.Config(source=src.kind if src else "none", demo=src.name if src else "", path=src.path or "" if src else "",
                   alpha=float(alpha), beta=float(beta), schedule=sched, gamma=float(gamma), horizon=int(horizon),
                   censoring=cens, qz_source=qzs, qz_const=float(qz_const), eps=float(eps), n_boot=int(n_boot),
                   metric_boot=metric_boot, predictors=tuple(preds), references=refs, filters=tuple(filters),
                   recal=recal)
    st.session_state["_cfg"] = cfg
    _mirror_recal(recal)
    sb.caption("Settings are kept across pages and in the URL: copy the link to share this view.")
    return cfg


def _remember_base(src, base) -> tuple[tuple, bool]:
    """Remember what was loaded; a new file (not new reading options) resets the selection,
    filters and treatments. Returns the recalibration specs and whether the file changed."""
    # only a failure is remembered for the page (a loaded log stays in the shared cache, not in
    # every session's state)
    st.session_state["_base"] = (src.key, base) if src is not None and L.is_failure(base) else None
    if base is not None and not L.is_failure(base):
        st.session_state["_reading"] = base.reading
    recal = _recal_specs()
    # a new file (not new reading options) resets the selection, filters and treatments
    data_key = src.file_key if src is not None else None
    # no source yet (an empty server path or upload box while the user chooses) is no new file:
    # going back to the same file then keeps every setting
    changed = data_key is not None and st.session_state.get("_data_key", data_key) != data_key
    if data_key is not None:
        st.session_state["_data_key"] = data_key
    if changed:
        st.session_state["_reading"] = base.reading if base is not None and not L.is_failure(base) else None
        for k in [k for k in st.session_state if str(k).startswith("tr_")]:
            del st.session_state[k]
    # a new file that did not load (e.g. it waits for a column mapping) resets the rest when it
    # first loads: the previous file's filters would otherwise apply to it (values it does not
    # have: every run filtered out)
    if base is None or L.is_failure(base):
        st.session_state["_new_file_pending"] = st.session_state.get("_new_file_pending", False) or changed
    elif st.session_state.pop("_new_file_pending", False):
        changed = True
    if base is not None and not L.is_failure(base) and not base.predictors and base.signals:
        recal = _auto_recalibrate(base, data_key, recal)

    return recal, changed


def _references(sb, base) -> bool:
    """Whether the reference forecasters are added (references.py): the switch, or a note in its place
    on a log without any forecast (they are always added there)."""
    if not Ref.has_own_forecasts(base):
        sb.caption(f":material/straighten: **No forecast in this log**: the pages score its reference forecasters "
                   f"({', '.join(Ref.offered(base))}), yardsticks from the other runs' outcomes, not the agent's. "
                   "The Overview says how to get a real signal.")
        return True
    if default_forecasts(base).references:  # raw signals only: scored beside the references, as by the CLI
        sb.caption(f":material/straighten: **Raw signals only**: their conversions are scored beside the reference "
                   f"forecasters ({', '.join(Ref.offered(base))}), yardsticks from the other runs' outcomes, the bar "
                   "a real signal has to clear.")
        return True
    return bool(sb.toggle(Ref.SWITCH, key="refs", bind=BIND, value=False, help=Ref.SWITCH_HELP))


def _predictors(sb, base, recal: tuple, changed: bool, refs: bool = False) -> list[str]:
    """The predictor multiselect (the log's, the recalibrated ones and, when added, the references)."""
    rnames = [r["name"] for r in map(S.parse_recal, recal) if r]
    options = list(base.predictors) + [n for n in rnames if n not in base.predictors]
    options += [n for n in Ref.offered(base) if refs and n not in options]
    if changed and "pred" in st.session_state:
        st.session_state["pred"] = options
    elif "pred" in st.session_state and st.session_state.get("_pred_opts") not in (None, options):
        # new predictors (a forecast field, a mapping, a recalibration) join the selection
        prev = st.session_state["_pred_opts"]
        st.session_state["pred"] = list(dict.fromkeys(
            [p for p in st.session_state["pred"] if p in options] + [o for o in options if o not in prev]))
    st.session_state["_pred_opts"] = options
    for k in [k for k in st.session_state if k.startswith("f_")] if changed else []:
        del st.session_state[k]
    # the censoring mode follows each log's default (exact where the log gives q_Z) unless the user
    # chose another one: an explicit choice is kept for the next file
    default = tpsviz.default_censoring(base)
    if changed and "cens" in st.session_state and st.session_state["cens"] == st.session_state.get("_cens_default"):
        st.session_state["cens"] = default
    st.session_state["_cens_default"] = default
    preds = sb.multiselect("Predictors", options, key="pred", bind=BIND, default=options,
                           help="conf_<name> columns of the log (and recalibrated predictors; ref:… are the reference "
                                "forecasters, yardsticks from the log itself). Each has one colour on every page; the "
                                "truthful/oracle predictor of synthetic data, the true probability, is black.")
    preds = [p for p in preds if p in options]
    return preds


def _score_family(sb) -> tuple[float, float]:
    """Preset, α and β (sliders with exact entries) and the ω(c) thumbnail."""
    sb.markdown("**Score family** (beta family, reward: higher is better, 0 is perfect)")
    presets = list(tpsviz.PRESETS) + ["custom"]
    sb.selectbox(LABELS["score"], presets, key="preset", bind=BIND, on_change=_on_preset,
                 help="log (0,0): nats, punishes confident mistakes without bound. brier (1,1): half the "
                      "Brier score, bounded. boosting (−½,−½): harsher than log at the extremes. asym-high/"
                      "asym-low: emphasise high/low decision thresholds.")
    c1, c2 = sb.columns(2)
    alpha = c1.slider(LABELS["alpha"], -0.95, 4.0, step=0.05, key="a", bind=BIND, on_change=_on_ab_slider, value=0.0,
                      help="α > −1. ω(c) = c^(α−1)(1−c)^(β−1) weighs decision thresholds c; larger α moves weight "
                           "to high thresholds. α ≤ 0 makes S(p,1) unbounded as p → 0.")
    beta = c2.slider(LABELS["beta"], -0.95, 4.0, step=0.05, key="b", bind=BIND, on_change=_on_ab_slider, value=0.0,
                     help="β > −1. Larger β moves weight to low thresholds. β ≤ 0 makes S(p,0) unbounded as p → 1.")
    with sb:
        _family_view()
    return alpha, beta


@st.fragment(key=FAMILY)
def _family_view() -> None:
    """What changes with α and β below their sliders: an entry for each (its exact value), the family's
    name and the ω(c) picture. A fragment: an α nudge redraws it with the page, not the sidebar."""
    alpha, beta = float(st.session_state.get("a", 0.0)), float(st.session_state.get("b", 0.0))
    c1, c2 = st.columns(2)
    # a number entry below each slider for an exact value; it always shows the slider's value. Its
    # key carries that value, and only a value other than it is taken as typed: one entry kept in
    # step by writing its state sent its old value back while the slider moved (key presses faster
    # than reruns), and that moved the slider back
    for col, key, value, name in ((c1, "a", alpha, "α"), (c2, "b", beta, "β")):
        entry = f"{key}_in_{float(value)!r}"
        col.number_input(f"{name} value", -0.95, 4.0, value=float(value), step=0.01, format="%.2f", key=entry,
                         on_change=_on_ab_entry, args=(key, entry, float(value)), label_visibility="collapsed",
                         help=f"Type an exact {name} (−0.95 to 4).")
    st.session_state["_ab_shown"] = (alpha, beta)  # (what the sliders show: _on_preset)
    fam = tpsviz.PRESETS.get(st.session_state.get("preset", "log"))
    if fam is not None and (fam.alpha, fam.beta) == (alpha, beta):
        st.caption(f"{fam.name}: {fam.description}")
    else:
        st.caption(f"custom: α = {alpha:g}, β = {beta:g}")
    c = np.linspace(0.005, 0.995, 199)
    st.image(F.omega_svg(c, tpsviz.omega(c, alpha, beta), alpha, beta), width="stretch")  # static: no plotly redraw


def _schedule(sb, base):
    """The weight schedule w_t, γ and H, with the schedule's propriety verdict."""
    sched = sb.selectbox("Weight schedule w_t", list(SCHEDULE_NAMES), key="sched", bind=BIND,
                         help="TPS = Σ_t w_t S(F_t, Y). Strictly proper only if every w_t > 0 is known at step t. "
                              + " ".join(f"{k}: {v}" for k, v in S.SCHEDULE_HELP.items()))
    sb.caption(S.SCHEDULE_HELP[sched])
    if sched == "column" and base is not None and "weight" not in base.steps:
        sb.warning("This log has no numeric `weight` column, so the `column` schedule cannot score it. "
                   "Choose another schedule.", icon=":material/warning:")
    c1, c2 = sb.columns(2)
    gamma = c1.slider("γ", 0.5, 1.5, step=0.01, key="g", bind=BIND, disabled=sched not in ("front", "back"),
                      value=0.9,
                      help="Geometric ratio of the front (γ^(t−1)) and back (γ^(H−t)) schedules.")
    horizon = c2.number_input("H (budget)", 1, 10_000, step=1, key="H", bind=BIND, disabled=sched != "back",
                              value=30,
                              help="Fixed step budget H of the back-loaded schedule (known in advance).")
    try:
        sobj = S.Config(schedule=sched, gamma=gamma, horizon=int(horizon)).schedule_obj
        v = sobj.verdict
        sb.markdown(f"{S.VERDICT_ICON.get(v.status, '')} **{v.status}** — `{sobj.formula}`",
                    help=v.reason)
    except ValueError as e:
        sb.error(f"Schedule: {md(say(e))}")
    return sched, gamma, horizon


def _censoring(sb, base):
    """The censoring mode, the q_Z source of exact mode, and ε."""
    default_cens = tpsviz.default_censoring(base) if base is not None else "simple"
    cens = sb.selectbox(LABELS["censoring"], list(CENSORING_MODES), key="cens", bind=BIND,
                        index=list(CENSORING_MODES).index(default_cens),
                        help=CENSORING_HELP)
    cens_caption = sb.empty()  # filled below, once the q_Z source is known
    exact = cens == "exact"
    qz_label = sb.radio(LABELS["q_z"], list(S.QZ_LABELS), key="qzs", bind=BIND,
                   disabled=not exact, horizontal=False,
                   help="q_Z = P(success | history at the stop Z), the evaluator's estimate (never the agent's own "
                        "F_Z). From the log's q_z column, from Monte-Carlo rollouts, or one value you set "
                        "(the Censoring page sweeps it over [0, 1]).")
    qzs = S.QZ_LABELS[qz_label]
    qz_const = sb.slider("q_Z for every censored run", 0.0, 1.0, step=0.05, key="qz", bind=BIND,
                         disabled=not (exact and qzs == "constant"), value=0.5,
                         help="Used when the q_Z source is 'one value'. 0 = simple (censoring as failure), 1 = upper.")
    cens_caption.caption(Rs.censoring_label(S.Config(censoring=cens, qz_source=qzs, qz_const=float(qz_const))))
    with_qz, n_cens = qz_coverage(base) if base is not None else (0, 0)
    if 0 < with_qz < n_cens:  # exact mode is exact (docs/theory.md §4): say why it is not the default
        sb.caption(f"The log's q_z covers {with_qz:,} of its {n_cens:,} censored runs; exact needs every one "
                   "(rollouts or one value).")
    eps_txt = sb.select_slider(LABELS["eps"], S.EPS_TEXT, key="eps", bind=BIND,
                               value="1e-06",
                               help="Forecasts are clipped to [ε, 1−ε] before scoring so unbounded scores stay finite; "
                                    "ε = 0 turns clipping off and shows −∞ honestly. The leaderboard's 'clipped' column "
                                    "counts the clipped forecasts (with ε = 0: those exactly 0 or 1).")
    eps = S.EPS_CHOICES[S.EPS_TEXT.index(eps_txt)] if eps_txt in S.EPS_TEXT else 1e-6
    if eps == 0:
        sb.caption("ε = 0: clipping off.")
    return cens, qzs, qz_const, eps


def _filters(sb, base) -> list[tuple]:
    """Metadata filters: a range slider, a multiselect, or a searchable multiselect per column."""
    filters = []
    with sb.expander("Filters on metadata", expanded=False):
        t = base.trajectories
        for col in base.metadata_columns:
            vals = t[col]
            key = filter_key(col)
            num = pd.api.types.is_numeric_dtype(vals)
            uniq = vals.dropna().astype(str).unique()
            if num and len(uniq) > 20:
                finite = vals[np.isfinite(vals.astype(float))]
                if finite.empty:
                    continue
                lo, hi = float(finite.min()), float(finite.max())  # ±inf cannot bound a slider
                if lo == hi:
                    continue
                rng = st.slider(md(col, 60), lo, hi, key=key, bind=BIND, value=(lo, hi),
                                help=f"Keep runs whose {md(col, 60)} is in this range.")
                if tuple(rng) != (lo, hi):
                    filters.append((col, "range", (float(rng[0]), float(rng[1]))))
            elif len(uniq) <= 60:
                opts = sorted(uniq)
                chosen = st.multiselect(md(col, 60), opts, key=key, bind=BIND, default=opts,
                                        help=f"Keep runs whose {md(col, 60)} is one of these values.")
                if set(chosen) != set(opts):
                    filters.append((col, "in", tuple(sorted(chosen))))
            elif len(uniq) <= MAX_SEARCH_VALUES:
                # many values (task ids, models…): start empty (= every run) and search by typing
                chosen = st.multiselect(
                    md(col, 60), sorted(uniq), key=key, bind=BIND, default=[],
                    placeholder=f"Type to search {len(uniq):,} values; empty keeps every run",
                    help=f"Keep only runs whose {md(col, 60)} is one of the values chosen here; leave it "
                         "empty to keep every run.")
                if chosen:
                    filters.append((col, "in", tuple(sorted(chosen))))
            else:
                st.caption(f"{md(col, 60)}: {len(uniq):,} distinct values (more than "
                           f"{MAX_SEARCH_VALUES:,}: no filter offered)")
    return filters


def _uncertainty(sb) -> tuple[int, int]:
    """Bootstrap replicates of TPS and of the metrics (−1 = auto)."""
    with sb.expander(UNCERTAINTY, expanded=False):
        n_boot = st.select_slider(LABELS["n_boot"], S.BOOT_CHOICES, key="boot", bind=BIND,
                                  value=2000,
                                  help="Percentile bootstrap over trajectories (the unit; steps within a run are "
                                       "dependent), seeded so numbers are reproducible. 0 = mean ± 1.96 SE.")
        mb = st.select_slider("Metric bootstrap (AUROC, AUPRC, T-ECE)", S.METRIC_BOOT_CHOICES, key="mboot", bind=BIND,
                              value="auto",
                              help="Replicates of the AUROC / AUPRC / T-ECE bootstraps. auto = the TPS value "
                                   "(all bootstraps then share the same replicates, drawn once).")
        metric_boot = -1 if mb == "auto" else int(mb)
    return n_boot, metric_boot


def _mirror_recal(recal: tuple) -> None:
    """Recalibrations are not widgets: mirror them in the URL by hand (page switches clear unbound params)."""
    if list(st.query_params.get_all("recal")) != list(recal):
        if recal:
            st.query_params["recal"] = list(recal)
        elif "recal" in st.query_params:
            del st.query_params["recal"]
