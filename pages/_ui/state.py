"""The settings and the data source of a rerun: the one place that knows about st.session_state.

- :class:`Config`: everything the shared sidebar sets (``current()``).
- :class:`Source`: where the log comes from (``current_source()``); its ``key`` identifies the
  data: ``upload:<sha of bytes>:<sha of name>``, ``demo:<name>``, or
  ``path:<real path>:<size>:<mtime>`` for a server file, read only under ``TPSVIZ_DATA_ROOTS``
  (``tpsviz.io.files.DataRoots``).
- Sessions: a browser session that ends, or a widget change that starts the page over, cancels
  the work in progress (:func:`cancel_when_unneeded`).

Loading lives in ``loading.py``; every result a page shows, keyed on an ``Analysis`` made from
these settings, in ``results.py`` (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

import tpsviz
from tpsviz.core.cancel import Cancelled, cancel_when  # noqa: F401  (Cancelled: app.py catches it here)
from tpsviz.io.files import DataRoots, PathRefused
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.core.schedules import Schedule
from tpsviz.core.scores import family_name, score_unit
from tpsviz.core.tps import settings_words

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "demo_data"
DEMOS = {
    "tau2-like": "Tau2-like: few censored runs, saturated verbal confidence.",
    "webshop-like": "WebShop-like: step budget 30, ~45% censored, Monte-Carlo rollouts.",
    "drift-like": "Drift-like: 900 runs over five weeks; after a model update the agent's confidence turns "
                  "over-confident (see Monitoring).",
    "multiclass-like": "Multiclass-like: 500 runs ending in success, partial or failure, ~15% censored with q "
                       "vectors (see Other outcomes).",
    "continuous-like": "Continuous-like: 200 runs whose outcome is a final reward, forecast as Gaussians, quantiles "
                       "and samples (see Other outcomes).",
    "tau-bench-airline": "tau-bench airline, gpt-4o: a real public log (200 runs = 50 tasks x 4 trials) without any "
                         "forecast: it opens with the reference forecasters, the bar a real signal has to clear.",
}
#: the file of a demo whose log is not ``<name>.csv`` (a real log, copied as published: demo_data/README.md)
DEMO_FILES = {"tau-bench-airline": "tau-bench-airline-gpt-4o.json"}
DEMOS_HELP = " ".join(f"{k}: {v}" for k, v in DEMOS.items())
DEFAULT_DEMO = "tau2-like"  # the gentler landing: few censored runs; webshop-like is one click away
EPS_CHOICES = [0.0, 1e-9, 1e-6, 1e-4, 1e-3, 1e-2]
EPS_TEXT = ["0", "1e-09", "1e-06", "0.0001", "0.001", "0.01"]   # URL-friendly (?eps=0 works)
BOOT_CHOICES = [0, 200, 500, 1000, 2000]
METRIC_BOOT_CHOICES = ["auto", "0", "100", "200", "500", "1000", "2000"]
QZ_LABELS = {"q_z column": "log", "rollouts": "rollouts", "one value": "constant"}
QZ_SOURCES = {
    "log": "q_z column of the log",
    "rollouts": "rollouts file (Monte-Carlo mean)",
    "constant": "one value for every censored run",
}
SCHEDULE_HELP = {
    "uniform": "w_t = 1: every step counts the same.",
    "linear": "w_t = t: later steps count more.",
    "front": "w_t = γ^(t−1): early steps count more (γ < 1).",
    "back": "w_t = γ^(H−t) for a fixed budget H: late steps count more (γ < 1).",
    "endpoint": "w = 1 at the last observed step only: scores only the final forecast.",
    "per-length": "w_t = 1/T: normalised by the realised length (NOT proper).",
    "column": "w_t from the log's 'weight' column (your responsibility).",
}
#: the icon beside a weight schedule's propriety verdict (sidebar, settings banner, Scoring rule lab)
VERDICT_ICON = {"strictly proper": ":green[:material/check_circle:]", "final forecast only": ":orange[:material/warning:]",
                "not proper": ":red[:material/cancel:]", "your responsibility": ":gray[:material/help:]"}
SEED = tpsviz.core.inference.DEFAULT_SEED


# ----------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class Config:
    """Everything the shared sidebar sets (hashable; part of every cache key)."""

    source: str = "demo"                 # demo | upload | path
    demo: str = DEFAULT_DEMO
    path: str = ""
    alpha: float = 0.0
    beta: float = 0.0
    schedule: str = "uniform"
    gamma: float = 0.9
    horizon: int = 30
    censoring: str = "simple"
    qz_source: str = "log"
    qz_const: float = 0.5
    eps: float = 1e-6
    n_boot: int = 2000
    metric_boot: int = -1                # −1 = auto (see metric_boot)
    predictors: tuple = ()
    references: bool = False             # the log's reference forecasters ref:* are added (references.py)
    filters: tuple = ()                  # ((column, kind, values), ...)
    recal: tuple = ()                    # recalibration specs, see parse_recal

    @property
    def schedule_obj(self) -> Schedule:
        if self.schedule == "front":
            return Schedule("front", float(self.gamma))
        if self.schedule == "back":
            return Schedule("back", float(self.gamma), int(self.horizon))
        return Schedule(self.schedule)

    def score_settings(self, censoring: str | None = None, n_boot: int | None = None) -> tpsviz.ScoreSettings:
        return tpsviz.ScoreSettings(alpha=float(self.alpha), beta=float(self.beta),
                                    schedule=self.schedule_obj, censoring=censoring or self.censoring,
                                    eps=float(self.eps), n_boot=self.n_boot if n_boot is None else n_boot,
                                    seed=SEED)

    def settings_columns(self, n_boot: int | None = None) -> dict:
        """The settings that change the numbers, written into every exported row (``n_boot``:
        the replicates used, where they differ from the sidebar's)."""
        sch = self.schedule_obj
        exact = self.censoring == "exact"
        return {"alpha": self.alpha, "beta": self.beta, "schedule": sch.spec,
                "gamma": self.gamma if sch.name in ("front", "back") else None,
                "H": self.horizon if sch.name == "back" else None, "censoring": self.censoring,
                "q_z_source": self.qz_source if exact else None,
                "q_z_constant": self.qz_const if exact and self.qz_source == "constant" else None,
                "eps": self.eps, "n_boot": self.n_boot if n_boot is None else n_boot, "seed": SEED}

    @property
    def score_tuple(self) -> tuple:
        """The parameters TPS depends on (cache key part)."""
        return (float(self.alpha), float(self.beta), self.schedule_obj.spec, self.censoring,
                self.qz_source, float(self.qz_const), float(self.eps), int(self.n_boot))

    @property
    def family_name(self) -> str:
        return family_name(self.alpha, self.beta)

    @property
    def unit(self) -> str:
        return score_unit(self.alpha, self.beta)

    def words(self, censoring_label: str | None = None) -> dict:
        """tpsviz.core.tps.settings_words of these settings (the one description every output uses)."""
        return settings_words(self.score_settings(), censoring_label)


def current() -> Config:
    """The settings of this rerun (set by the sidebar in app.py)."""
    return st.session_state.get("_cfg", Config())


@dataclass(frozen=True)
class Source:
    """Where the data of this rerun comes from (not hashed: ``key`` identifies it)."""

    key: str
    kind: str
    name: str
    raw: bytes | None = field(default=None, repr=False)
    path: str | None = None
    rollouts_key: str | None = None
    rollouts_raw: bytes | None = field(default=None, repr=False)
    rollouts_path: str | None = None
    rollouts_name: str | None = None
    file_key: str = ""                   # the file(s) alone, without the reading options
    options: ReadOptions = field(default_factory=ReadOptions)
    parts: tuple = field(default=(), repr=False)          # several uploaded files: ((bytes, name), …)
    forecasts_raw: tuple | None = field(default=None, repr=False)   # (bytes, name) of a forecasts table
    forecasts_path: str | None = None
    outcomes_raw: tuple | None = field(default=None, repr=False)    # (bytes, name) of a trace file's outcomes
    outcomes_path: str | None = None

    def __post_init__(self):
        if not self.file_key:
            object.__setattr__(self, "file_key", self.key)


def current_source() -> Source | None:
    return st.session_state.get("_source")


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:20]


def options_key(options: ReadOptions, forecasts: str = "", outcomes: str = "") -> str:
    """The part of a data key that the reading options, a forecasts table and an outcomes table add."""
    if options == ReadOptions() and not forecasts and not outcomes:
        return ""
    return ("|" + sha(repr(options).encode()) + (f"|fc:{forecasts}" if forecasts else "")
            + (f"|oc:{outcomes}" if outcomes else ""))


def upload_source(files: tuple, options: ReadOptions, forecasts, rraw, rname, outcomes=None) -> "Source":
    """The Source of uploaded file(s) (several files = a tau2-bench folder layout), with the
    uploaded forecasts and outcomes tables as (bytes, name) or None."""
    file_key = "upload:" + ":".join(upload_key(raw, name)[len("upload:"):] for raw, name in files)
    fkey = upload_key(*forecasts) if forecasts else ""
    okey = upload_key(*outcomes) if outcomes else ""
    name = files[0][1] if len(files) == 1 else f"{len(files)} files (tau2-bench folder)"
    return Source(key=file_key + options_key(options, fkey, okey), kind="upload", name=name,
                  raw=files[0][0] if len(files) == 1 else None, parts=files if len(files) > 1 else (),
                  rollouts_key=upload_key(rraw, rname) + ":rollouts" if rraw else None,
                  rollouts_raw=rraw, rollouts_name=rname, file_key=file_key, options=options,
                  forecasts_raw=forecasts, outcomes_raw=outcomes)


def upload_key(raw: bytes, name: str) -> str:
    """Cache key of an upload: its bytes *and* its file name, so a session never sees the name
    another session gave to the same bytes."""
    return f"upload:{sha(raw)}:{sha(name.encode('utf-8', 'replace'))}"


def data_roots() -> DataRoots:
    """The folders server paths may be read from (``TPSVIZ_DATA_ROOTS``; none = off)."""
    return DataRoots.from_env()


def path_key(real: Path) -> str:
    """Cache key of a resolved server path: real path, size and modification time (of every
    file, for a tau2-bench results folder)."""
    try:
        if real.is_dir():  # a tau2-bench results folder: its index and simulations/*.json only
            if not (real / "results.json").is_file():
                return f"path:{real}:dir"
            files = [real / "results.json"]
            sims = real / "simulations"
            if sims.is_dir():
                files += sorted(p for p in sims.iterdir() if p.suffix == ".json")[:100_000]
            stamp = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]
            return f"path:{real}:dir:{sha(repr(stamp).encode())}"
        st_ = real.stat()
        return f"path:{real}:{st_.st_size}:{int(st_.st_mtime_ns)}"
    except OSError:
        return f"path:{real}:missing"


def _optional_path(roots: DataRoots, path: str | None) -> Path | None:
    """The real path of an optional server path under the roots, or None (not given or refused)."""
    if not path:
        return None
    try:
        return roots.resolve(path)
    except PathRefused:
        return None


def path_source(path: str, rpath: str | None, options: ReadOptions = ReadOptions(),
                fpath: str | None = None, opath: str | None = None) -> "Source":
    """The Source of a server path (a file, or a tau2-bench results folder) with optional rollouts,
    forecasts and outcomes paths, checked against the data roots. A refused path gives a Source whose load
    fails with one identical message."""
    roots = data_roots()
    try:
        real = roots.resolve(path, allow_dir=True)
        if real.is_dir() and (real / "simulations").exists():  # a folder's parts stay under the roots too
            roots.resolve(str(real / "simulations"), allow_dir=True)
    except PathRefused:
        return Source(key="refused", kind="refused", name="server path")
    freal, rreal, oreal = _optional_path(roots, fpath), _optional_path(roots, rpath), _optional_path(roots, opath)
    if fpath and freal is None:
        return Source(key="refused", kind="refused", name="forecasts path")
    if opath and oreal is None:
        return Source(key="refused", kind="refused", name="outcomes path")
    file_key = path_key(real)
    return Source(key=file_key + options_key(options, path_key(freal) if freal else "",
                                             path_key(oreal) if oreal else ""), kind="path",
                  name=real.name, path=str(real),
                  rollouts_key=(path_key(rreal) + ":rollouts") if rreal else
                  ("refused:rollouts" if rpath else None),
                  rollouts_path=str(rreal) if rreal else None,
                  rollouts_name=rreal.name if rreal else ("rollouts path" if rpath else None),
                  file_key=file_key, options=options, forecasts_path=str(freal) if freal else None,
                  outcomes_path=str(oreal) if oreal else None)


def demo_source(name: str) -> Source:
    path = DEMO_DIR / DEMO_FILES.get(name, f"{name}.csv")
    roll = DEMO_DIR / f"{name}_rollouts.csv"
    return Source(key=f"demo:{name}", kind="demo", name=path.name, path=str(path),
                  rollouts_key=f"demo:{name}:rollouts" if roll.exists() else None,
                  rollouts_path=str(roll) if roll.exists() else None,
                  rollouts_name=roll.name if roll.exists() else None)


# ----------------------------------------------------------------------------- abandoned work
def _session_gone(session_id: str) -> Callable[[], bool]:
    """A cheap, thread-safe test: has this browser session ended (tab closed, disconnected)?"""
    from streamlit.runtime import Runtime  # (Streamlit's runtime internals: looked up when a run starts)

    def gone() -> bool:
        try:
            return Runtime.exists() and not Runtime.instance().is_active_session(session_id)
        except Exception:  # the runtime is shutting down
            return True

    return gone


def _rerun_pending(requests) -> Callable[[], bool]:
    """A cheap, thread-safe test: has a widget change asked Streamlit to start this page over?

    Streamlit stops a run for a newer one only at its next element; a bootstrap between two elements
    would finish first and hold the slider up (issue 11: intervals must not block a slider). The rule
    is Streamlit's own (``ScriptRequests.on_scriptrunner_yield``): a pending STOP, or a RERUN that is
    not a fragment's timer run, preempts. It reads the request state without taking it.
    """
    try:
        from streamlit.runtime.scriptrunner_utils.script_requests import (
            ScriptRequestType, _fragment_run_should_not_preempt_script)
    except ImportError:  # pragma: no cover - the internal API moved: keep the session test only
        return lambda: False

    def pending() -> bool:
        state = getattr(requests, "_state", None)
        if state is ScriptRequestType.STOP:
            return True
        if state is not ScriptRequestType.RERUN:
            return False
        data = requests._rerun_data
        return not _fragment_run_should_not_preempt_script(data.fragment_id_queue, data.is_fragment_scoped_rerun)

    return pending


def cancel_when_unneeded():
    """A context in which the core's long loops stop once nobody will see their result: the session
    has ended, or a widget change has asked for a new run (the page starts over at once)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # (looked up per run: tests replace it)

    ctx = get_script_run_ctx()
    if ctx is None:  # not in a script run (bare mode, some tests)
        return contextlib.nullcontext()
    gone = _session_gone(ctx.session_id)
    requests = getattr(ctx, "script_requests", None)
    superseded = _rerun_pending(requests) if requests is not None else (lambda: False)
    return cancel_when(lambda: superseded() or gone())


# ----------------------------------------------------------------------------- recal specs
def recal_spec(source: str, method: str, folds: int, per_step: bool) -> str:
    return f"{source}|{method}|{int(folds)}|{'step' if per_step else 'pooled'}"


#: recalibrated predictors a session (or a link) may hold: each adds a column to the whole log
MAX_RECAL = 8


def parse_recal(spec: str) -> dict | None:
    parts = str(spec).split("|")
    if len(parts) != 4:
        return None
    src, method, folds, mode = parts
    if "@" in src or not src.strip():  # a recalibration of a recalibration is refused (no chains)
        return None
    try:
        folds = int(folds)
    except ValueError:
        return None
    if method not in ("platt", "isotonic", "beta") or mode not in ("step", "pooled") or not 2 <= folds <= 20:
        return None
    base = re.sub(r"^(conf|raw|unc)_", "", src)
    name = f"{base}@{method}" + ("-step" if mode == "step" else "")
    return {"source": src, "method": method, "folds": folds, "per_step": mode == "step", "name": name}


# ----------------------------------------------------------------------------- group choice
def group_choice() -> tuple:
    """(column, base group, pair_on) last chosen on the Overview for groups of this log, or
    (None, None, "auto"). Kept under a key of its own: widget state is dropped on other pages."""
    return st.session_state.get("_grp_choice") or (None, None, "auto")


def remember_group_choice(by, base, pair_on) -> None:
    """Called by the Overview: the group comparison the report should include (None: none)."""
    st.session_state["_grp_choice"] = (by, base, pair_on) if by else None


# ----------------------------------------------------------------------------- sections drawn while open
#: the Overview's groups section: drawn only while open, and Streamlit forgets the value of a widget
#: a run does not draw, so its choices are kept under keys of their own while it is closed
GROUP_WIDGETS = ("grp_mode", "grp_by", "grp_base", "grp_pair", "cand_pair")


def restore_widgets(keys) -> None:
    """Before drawing them again: give widgets the values they had when last drawn (kept by
    :func:`keep_widgets`), unless they have one."""
    for k in keys:
        if k not in st.session_state and f"_kept_{k}" in st.session_state:
            st.session_state[k] = st.session_state[f"_kept_{k}"]


def keep_widgets(keys) -> None:
    """After drawing them: keep the widgets' values for :func:`restore_widgets`."""
    for k in keys:
        if k in st.session_state:
            st.session_state[f"_kept_{k}"] = st.session_state[k]


def count_run() -> int:
    """Number this script run (``app.py``, once per run, whatever the page)."""
    n = st.session_state.get("_run_no", 0) + 1
    st.session_state["_run_no"] = n
    return n


def upload_bytes(up, key: str) -> bytes:
    """The bytes of ``up``, a file the upload box ``key`` returned, without a copy of them.

    ``st.file_uploader`` returns a deep copy of the box's value (Streamlit copies every widget's
    value on every run), and the copy of an ``UploadedFile`` copies its bytes. The same file in
    ``st.session_state[key]`` shares its bytes with Streamlit's upload store, which holds them
    anyway until the file is removed from the box. A copy kept past the run (in the session's
    Source, which Streamlit keeps one run longer) doubled an upload's memory, also after the
    file was removed (issue 46, point 7; ``bench/bench_upload_memory.py``).

    Parameters
    ----------
    up : UploadedFile
        A file ``st.file_uploader(..., key=key)`` returned in this run.
    key : str
        The upload box's widget key.

    Returns
    -------
    bytes
        The file's bytes: the store's own object when the box's state holds the file, else a copy.
    """
    file_id = getattr(up, "file_id", None)
    if file_id is not None:  # (for release_uploads)
        st.session_state.setdefault(_UPLOADED, {}).setdefault(key, set()).add(file_id)
    held = st.session_state.get(key)
    for f in held if isinstance(held, list) else [held]:
        if file_id is not None and getattr(f, "file_id", None) == file_id:
            return f.getvalue()
    return up.getvalue()


_UPLOADED = "_uploaded_ids"  # upload box key → ids of the files it returned (upload_bytes)

#: the sidebar's upload boxes, drawn only while the data source is Upload
UPLOAD_BOXES = ("upload", "upload_rollouts", "upload_forecasts", "upload_outcomes")


def release_uploads(keys) -> int:
    """Give Streamlit's upload store back the files the upload boxes ``keys`` held, once a run no
    longer draws them (the data source is no longer Upload): Streamlit forgets the value of a box
    it does not draw, so the file cannot be seen again, but its store keeps the bytes until the
    browser session ends. Returns how many files were released.

    Parameters
    ----------
    keys : iterable of str
        The boxes' widget keys (files read through :func:`upload_bytes`).
    """
    known = st.session_state.get(_UPLOADED) or {}
    gone = [file_id for key in keys for file_id in known.pop(key, ())]
    if not gone:
        return 0
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    remove = getattr(getattr(ctx, "uploaded_file_mgr", None), "remove_file", None)
    if remove is None:  # (a store without remove_file keeps them until the session ends)
        return 0
    for file_id in gone:
        remove(ctx.session_id, file_id)
    return len(gone)


def kept_upload(up, key: str):
    """(bytes, file name, restored) of an upload box drawn only while its section is open: the file
    it holds, or the one it held when it was last drawn (Streamlit forgets the file of a box a run
    does not draw: the section closed, another page; ``restored`` is then True), until the user
    removes it from the box, uploads another or calls :func:`forget_upload`. None: no file."""
    kept_key, shown_key = f"_kept_{key}", f"_shown_{key}"
    now = st.session_state.get("_run_no", 0)
    was_shown = st.session_state.get(shown_key) == now - 1  # drawn in the run just before
    st.session_state[shown_key] = now
    if up is not None:
        st.session_state[kept_key] = (upload_bytes(up, key), up.name, False)
    elif (kept := st.session_state.get(kept_key)) is not None and not kept[2]:
        if was_shown:  # the box held it in the last run and is empty now: the user removed it
            del st.session_state[kept_key]
        else:  # the box was hidden and is drawn again
            st.session_state[kept_key] = (kept[0], kept[1], True)
    return st.session_state.get(kept_key)


def forget_upload(key: str) -> None:
    """Drop the file :func:`kept_upload` keeps for ``key`` (a button's callback)."""
    st.session_state.pop(f"_kept_{key}", None)


# ----------------------------------------------------------------------------- report registry
def register_figure(name: str, fig, caption: str = "") -> None:
    """Remember a figure drawn on this page for the Export page (PNG / HTML report)."""
    reg = st.session_state.setdefault("_figures", {})
    reg[name] = (fig, caption)


def safe_filename(s: str) -> str:
    """``s`` as a file name stem: runs of other characters become one "_", none at either end
    ("Reliability (all steps)" gave "…all_steps_" before ".png"), at most 80 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)[:80].strip("_.") or "tpsviz"


def pressed(label: str, key: str, **kwargs) -> bool:
    """``st.button`` whose press is not lost when the page's fragment (app.py) hands a click on to a
    run of the whole app: a plain button is True in the run its click starts only, and that run is
    the fragment's, which stops at once. The click sets a flag (a callback runs before either run),
    taken by the run that draws the page."""
    flag = f"_pressed_{key}"
    st.button(label, key=key, on_click=st.session_state.__setitem__, args=(flag, True), **kwargs)
    return bool(st.session_state.pop(flag, False))
