"""UI-side state and caching: the one place that knows about st.session_state and st.cache_*.

Pages are thin: ``cfg = current()`` gives the settings of the shared sidebar; the ``get_*``
functions return cached results keyed by (dataset key, parameters) — small hashable values —
never by hashing a large DataFrame (docs/architecture.md). The dataset key is the SHA-256 of an upload,
``demo:<name>`` for the embedded demo data, or ``path:<abs>:<size>:<mtime>`` for a server file.
Big objects (TrajectoryData, TPSResult) live in the shared, bounded cache of ``memo`` (no copy per
rerun; bounded in bytes and idle time, exceptions never cached) and are treated as read-only.
Server paths are read only under ``TPSVIZ_DATA_ROOTS`` (``tpsviz.files.DataRoots``).

A parameter slider reruns only what depends on it: loading, filtering, recalibration, AUROC,
AUPRC and T-ECE do not depend on α, β, the schedule or censoring and stay cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

import tpsviz
from tpsviz import figures as F
from tpsviz.cancel import Cancelled, cancel_when, checkpoint
from tpsviz.files import CANNOT_OPEN, DataRoots, PathRefused, size_text
from tpsviz.harness import ReadOptions
from tpsviz.schedules import Schedule
from tpsviz.tps import CENSORING_LABELS

from .memo import clear_all as _clear_memo
from .memo import give_back, memo
from .text import md

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "demo_data"
DEMOS = {
    "tau2-like": "Tau2-like: few censored runs, saturated verbal confidence.",
    "webshop-like": "WebShop-like: step budget 30, ~45% censored, Monte-Carlo rollouts.",
}
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
SEED = tpsviz.inference.DEFAULT_SEED


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

    @property
    def score_tuple(self) -> tuple:
        """The parameters TPS depends on (cache key part)."""
        return (float(self.alpha), float(self.beta), self.schedule_obj.spec, self.censoring,
                self.qz_source, float(self.qz_const), float(self.eps), int(self.n_boot))

    @property
    def family_name(self) -> str:
        for name, fam in tpsviz.PRESETS.items():
            if fam.alpha == self.alpha and fam.beta == self.beta:
                return name
        return "custom"

    @property
    def unit(self) -> str:
        return F.score_unit(self.alpha, self.beta)


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

    def __post_init__(self):
        if not self.file_key:
            object.__setattr__(self, "file_key", self.key)


def current_source() -> Source | None:
    return st.session_state.get("_source")


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:20]


def options_key(options: ReadOptions, forecasts: str = "") -> str:
    """The part of a data key that the reading options and a forecasts table add."""
    if options == ReadOptions() and not forecasts:
        return ""
    return "|" + sha(repr(options).encode()) + (f"|fc:{forecasts}" if forecasts else "")


def upload_source(files: tuple, options: ReadOptions, forecasts, rraw, rname) -> "Source":
    """The Source of uploaded file(s) (several files = a tau2-bench folder layout)."""
    file_key = "upload:" + ":".join(upload_key(raw, name)[len("upload:"):] for raw, name in files)
    fkey = upload_key(*forecasts) if forecasts else ""
    name = files[0][1] if len(files) == 1 else f"{len(files)} files (tau2-bench folder)"
    return Source(key=file_key + options_key(options, fkey), kind="upload", name=name,
                  raw=files[0][0] if len(files) == 1 else None, parts=files if len(files) > 1 else (),
                  rollouts_key=upload_key(rraw, rname) + ":rollouts" if rraw else None,
                  rollouts_raw=rraw, rollouts_name=rname, file_key=file_key, options=options,
                  forecasts_raw=forecasts)


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
                fpath: str | None = None) -> "Source":
    """The Source of a server path (a file, or a tau2-bench results folder) with optional rollouts
    and forecasts paths, checked against the data roots. A refused path gives a Source whose load
    fails with one identical message."""
    roots = data_roots()
    try:
        real = roots.resolve(path, allow_dir=True)
        if real.is_dir() and (real / "simulations").exists():  # a folder's parts stay under the roots too
            roots.resolve(str(real / "simulations"), allow_dir=True)
    except PathRefused:
        return Source(key="refused", kind="refused", name="server path")
    freal, rreal = _optional_path(roots, fpath), _optional_path(roots, rpath)
    if fpath and freal is None:
        return Source(key="refused", kind="refused", name="forecasts path")
    file_key = path_key(real)
    return Source(key=file_key + options_key(options, path_key(freal) if freal else ""), kind="path",
                  name=real.name, path=str(real),
                  rollouts_key=(path_key(rreal) + ":rollouts") if rreal else
                  ("refused:rollouts" if rpath else None),
                  rollouts_path=str(rreal) if rreal else None,
                  rollouts_name=rreal.name if rreal else ("rollouts path" if rpath else None),
                  file_key=file_key, options=options, forecasts_path=str(freal) if freal else None)


def demo_source(name: str) -> Source:
    path = DEMO_DIR / f"{name}.csv"
    roll = DEMO_DIR / f"{name}_rollouts.csv"
    return Source(key=f"demo:{name}", kind="demo", name=f"{name}.csv", path=str(path),
                  rollouts_key=f"demo:{name}:rollouts" if roll.exists() else None,
                  rollouts_path=str(roll) if roll.exists() else None,
                  rollouts_name=roll.name if roll.exists() else None)


# ----------------------------------------------------------------------------- abandoned work
def _session_gone(session_id: str) -> Callable[[], bool]:
    """A cheap, thread-safe test: has this browser session ended (tab closed, disconnected)?"""
    from streamlit.runtime import Runtime

    def gone() -> bool:
        try:
            return Runtime.exists() and not Runtime.instance().is_active_session(session_id)
        except Exception:  # the runtime is shutting down
            return True

    return gone


def cancel_when_session_ends():
    """A context in which the core's long loops stop once this session has ended."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:  # not in a script run (bare mode, some tests)
        return contextlib.nullcontext()
    return cancel_when(_session_gone(ctx.session_id))


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


# ----------------------------------------------------------------------------- loading
class LoadFailure:
    """A cached load failure (st.cache_* does not cache exceptions)."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems


_LOADS = threading.BoundedSemaphore(2)   # logs parsed at once (each can take GBs at the row cap)


@memo(max_entries=6, spinner="Reading and validating the log…")
def _load(key: str, _src: Source):
    """The validated log, or a LoadFailure for a file that cannot be used (cached: the key
    pins the bytes). Failures that may pass (a missing file, memory) raise instead: they are
    never cached."""
    if _src.kind == "refused":
        raise PathRefused()
    with _LOADS:
        try:
            forecasts = _src.forecasts_raw or _src.forecasts_path
            if _src.parts:
                return tpsviz.load(list(_src.parts), options=_src.options, forecasts=forecasts)
            if _src.raw is not None:
                return tpsviz.load(_src.raw, name=_src.name, options=_src.options, forecasts=forecasts)
            if _src.kind == "path":  # every file read stays under the data roots
                return tpsviz.load(Path(_src.path), name=_src.name, options=_src.options,
                                   forecasts=forecasts, read=_rooted_read)
            return tpsviz.load(_src.path, name=_src.name)
        except tpsviz.LogFormatError as e:
            give_back()  # a refused file may have been parsed half-way: return that memory
            return LoadFailure(e.source, e.problems)


def _rooted_read(path, max_bytes: int, label: str) -> bytes:
    """Read one file for a server-path load, refusing anything outside the data roots."""
    return data_roots().read(str(path), max_bytes=max_bytes, label=label)


def load_base(src: Source):
    """TrajectoryData or LoadFailure for the source (cached by its key, except failures that
    may pass: those are reported every time and never cached)."""
    try:
        return _load(src.key, src)
    except PathRefused:
        return LoadFailure("server path", [CANNOT_OPEN])
    except MemoryError:
        give_back()
        return LoadFailure(src.name, ["the server ran out of memory reading this log; try a "
                                      "smaller file, or ask the administrator to lower "
                                      "TPSVIZ_MAX_ROWS"])
    except OSError as e:  # FileRefused and friends: the message names no content
        return LoadFailure(src.name, [str(e)])
    except Cancelled:
        raise
    except Exception as e:  # never a traceback in the page
        return LoadFailure(src.name, [f"the file could not be read ({type(e).__name__})"])


def _filter_mask(data, filters: tuple) -> np.ndarray:
    keep = np.ones(data.n_trajectories, dtype=bool)
    t = data.trajectories
    for col, kind, values in filters:
        if col not in t:
            continue
        if kind == "in":
            keep &= t[col].astype(str).isin(values).to_numpy()
        elif kind == "range":
            v = pd.to_numeric(t[col], errors="coerce").to_numpy()
            keep &= (v >= values[0]) & (v <= values[1])
    return keep


@memo(max_entries=6, spinner="Applying filters and recalibration…")
def _prepared(key: str, filters: tuple, recal: tuple, _src: Source):
    from tpsviz.calibrate import add_recalibrated

    base = load_base(_src)
    if isinstance(base, LoadFailure):
        return base, []
    data = base.subset(_filter_mask(base, filters))
    problems = []
    for spec in recal:
        r = parse_recal(spec)
        if r is None:
            problems.append(f"a recalibration in the settings ({md(spec, 60)}) is malformed and was ignored")
            continue
        try:
            data, _ = add_recalibrated(data, r["source"], r["method"], folds=r["folds"],
                                       per_step=r["per_step"], seed=SEED, name=r["name"])
        except Exception as e:
            problems.append(f"recalibration of {md(r['source'], 60)} by {r['method']} failed: {md(e, 300)}")
    return data, problems


def result_key(src: Source) -> str:
    """Cache key of results computed on a source: the log's key and its rollouts file (q_Z from rollouts
    changes the scores; adversarial pass 4 found two rollouts files sharing cached results). A loaded or
    filtered log itself is keyed on ``src.key`` alone (_load, _prepared): it does not depend on rollouts."""
    return f"{src.key}|rollouts={src.rollouts_key or ''}"


def get_data(cfg: Config | None = None, src: Source | None = None):
    """(TrajectoryData | LoadFailure, problems) for the current settings."""
    cfg = cfg or current()
    src = src or current_source()
    seen = st.session_state.get("_base")  # what the sidebar loaded in this run
    if seen is not None and seen[0] == src.key and is_failure(seen[1]):
        return seen[1], []  # one answer per run, also for a failure that is not cached
    return _prepared(src.key, cfg.filters, cfg.recal, src)


# ----------------------------------------------------------------------------- rollouts / q_Z
@memo(max_entries=6)
def _rollouts(key: str, _src: Source):
    """The validated rollouts table (tpsviz.audit.load_rollouts), or a LoadFailure."""
    from tpsviz.audit import load_rollouts

    name = _src.rollouts_name or "rollouts"
    if _src.rollouts_raw is None and _src.rollouts_path is None:
        return LoadFailure(name, [CANNOT_OPEN])  # a refused server path
    try:
        if _src.rollouts_raw is not None:
            return load_rollouts(_src.rollouts_raw, name=name)
        return load_rollouts(data_roots().read(_src.rollouts_path, label="rollouts path"), name=name)
    except tpsviz.LogFormatError as e:
        return LoadFailure(e.source, e.problems)
    except PathRefused:
        return LoadFailure("rollouts path", [CANNOT_OPEN])
    except OSError as e:  # too large: the message names the limit, no content
        return LoadFailure(name, [str(e)])
    except Cancelled:
        raise
    except Exception as e:  # never a traceback in the page
        return LoadFailure(name, [f"the rollouts file could not be read ({type(e).__name__})"])


def get_rollouts(src: Source | None = None):
    """Validated rollouts table, a LoadFailure, or None when the source has no rollouts."""
    src = src or current_source()
    if src is None or src.rollouts_key is None:
        return None
    return _rollouts(src.rollouts_key, src)


def _rollout_qz(data, src: Source):
    from tpsviz.audit import rollout_qz_series

    ro = get_rollouts(src)
    if ro is None or isinstance(ro, LoadFailure):
        return None
    q, _ = rollout_qz_series(data, ro)
    return q


def qz_override(data, cfg: Config, src: Source):
    """The q_z argument for compute_tps in exact mode, and a note for the user."""
    if cfg.censoring != "exact":
        return None, None
    if cfg.qz_source == "constant":
        return np.full(data.n_trajectories, float(cfg.qz_const)), f"q_Z = {cfg.qz_const:g} for every censored run"
    if cfg.qz_source == "rollouts":
        q = _rollout_qz(data, src)
        if q is None:
            return None, "no usable rollouts file: q_Z taken from the log's q_z column"
        return q, "q_Z = Monte-Carlo mean of the rollouts"
    return None, "q_Z from the log's q_z column"


def censoring_label(cfg: Config, censoring: str | None = None) -> str:
    """The censoring mode in words, with the q_Z source that is really used in exact mode."""
    mode = censoring or cfg.censoring
    if mode != "exact":
        return CENSORING_LABELS[mode]
    src = current_source()
    if cfg.qz_source == "constant":
        return f"exact (q_Z = {cfg.qz_const:g} for every censored run)"
    if cfg.qz_source == "rollouts":
        ro = get_rollouts(src) if src is not None else None
        if ro is not None and not isinstance(ro, LoadFailure):
            return "exact (q_Z = Monte-Carlo mean of the rollouts, simple where a run has none)"
        return "exact (no usable rollouts: q_Z from the log, simple where missing)"
    return CENSORING_LABELS["exact"]


# ----------------------------------------------------------------------------- TPS
@memo(max_entries=24, spinner="Scoring…")
def _tps(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, censoring: str,
         _cfg: Config, _src: Source):
    data, _ = _prepared(_src.key, filters, recal, _src)
    cfg = replace(_cfg, censoring=censoring)
    q, _ = qz_override(data, cfg, _src)
    return tpsviz.compute_tps(data, cfg.score_settings(), list(preds), q_z=q)


def get_tps(cfg: Config | None = None, censoring: str | None = None, predictors=None):
    """TPSResult for the current settings (optionally another censoring mode)."""
    cfg = cfg or current()
    src = current_source()
    preds = tuple(predictors) if predictors is not None else cfg.predictors
    return _tps(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, preds, censoring or cfg.censoring, cfg, src)


@memo(max_entries=24, spinner="Base-rate reference and skill…")
def _skill(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, n_boot: int, _cfg: Config,
           _src: Source):
    """diagnostics.skill_table under the current settings (it scores the base-rate reference too:
    ``ref_rate``, ``ref_rule`` and ``tps_ref`` = the reference's mean TPS on each predictor's runs)."""
    from tpsviz.diagnostics import skill_table

    data, _ = _prepared(_src.key, filters, recal, _src)
    q, _ = qz_override(data, _cfg, _src)
    res = _tps(key, filters, recal, score, preds, _cfg.censoring, _cfg, _src)  # cached: not rescored
    return skill_table(data, _cfg.score_settings(), list(preds), q_z=q, n_boot=n_boot, result=res)


def get_skill(cfg: Config | None = None, predictors=None):
    """diagnostics.skill_table for the current settings."""
    cfg = cfg or current()
    src = current_source()
    preds = tuple(predictors) if predictors is not None else cfg.predictors
    return _skill(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, preds, int(cfg.n_boot), cfg, src)


@memo(max_entries=48, spinner="Verdict tests…")
def _verdict_stats(key: str, filters: tuple, recal: tuple, name: str, labels: tuple, _cfg: Config,
                   _src: Source) -> dict:
    """verdict.verdict_statistics of one predictor: keyed on the labels (censoring, q_Z), not on α/β or
    the schedule, and per predictor, so moving a slider or deselecting a predictor recomputes nothing."""
    from tpsviz.verdict import verdict_statistics

    data, _ = _prepared(_src.key, filters, recal, _src)
    q, _ = qz_override(data, _cfg, _src)
    return verdict_statistics(data, _cfg.score_settings(n_boot=0), name, q_z=q)


def get_verdicts(cfg: Config | None = None) -> dict:
    """verdict.verdicts of the selected predictors under the current settings."""
    from tpsviz.verdict import verdicts

    cfg = cfg or current()
    src = current_source()
    data, _ = get_data(cfg, src)
    labels = (cfg.censoring, cfg.qz_source, float(cfg.qz_const))
    stats = {n: _verdict_stats(result_key(src), cfg.filters, cfg.recal, n, labels, cfg, src) for n in cfg.predictors}
    q, _ = qz_override(data, cfg, src)
    skill = get_skill(cfg) if cfg.n_boot >= 200 else None
    return verdicts(data, cfg.score_settings(), list(cfg.predictors), q_z=q, skill=skill, statistics=stats,
                    result=get_tps(cfg))


@memo(max_entries=24, spinner="Checking for warnings…")
def _caveats(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, _cfg: Config, _src: Source):
    from tpsviz.caveats import caveats

    data, _ = _prepared(_src.key, filters, recal, _src)
    res = _tps(key, filters, recal, score, preds, _cfg.censoring, _cfg, _src)
    sk = _skill(key, filters, recal, score, preds, int(_cfg.n_boot), _cfg, _src)
    return caveats(data, _cfg.score_settings(), res.summary, sk, list(preds))


def get_caveats(cfg: Config | None = None):
    """caveats.caveats of the selected predictors under the current settings."""
    cfg = cfg or current()
    src = current_source()
    return _caveats(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, cfg, src)


@memo(max_entries=12, spinner="Scoring each group…")
def _groups(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, by: str, base: str | None,
            pair_on: str, _cfg: Config, _src: Source):
    """groups.group_table split by ``by`` and group_difference of every group against ``base`` (default the
    first group)."""
    from tpsviz.groups import default_base, group_difference, group_table

    data, _ = _prepared(_src.key, filters, recal, _src)
    q, _ = qz_override(data, _cfg, _src)
    settings = _cfg.score_settings()
    table = group_table(data, by, settings, list(preds), q_z=q)
    groups = list(dict.fromkeys(table.index.get_level_values("group")))
    base = base if base in groups else default_base(table)
    diffs = {g: group_difference(data, by, base, g, settings, list(preds), q_z=q,
                                 pair_on=pair_on)
             for g in groups if g != base}
    return table, base, diffs


def get_groups(by: str, base: str | None = None, pair_on: str = "auto", cfg: Config | None = None):
    """(group table, base group, {group: difference against base}) for the selected predictors."""
    cfg = cfg or current()
    src = current_source()
    return _groups(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, by, base, pair_on, cfg, src)


@memo(max_entries=6, spinner="Reading the candidate log and scoring both…")
def _two_logs(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, cand_key: str, pair_on: str,
              _cfg: Config, _src: Source, _cand: Source):
    """The current log (baseline, as filtered and recalibrated) against a second log (candidate):
    groups.combine_logs, then group_table and group_difference by the column ``log``."""
    from tpsviz.groups import combine_logs, free_column, group_difference, group_table

    cand = load_base(_cand)
    if is_failure(cand):
        return cand
    base, _ = _prepared(_src.key, filters, recal, _src)
    column = free_column(base, cand)  # "log", or "log_2" … when a log has a column of that name
    both = combine_logs(base, cand, column=column)
    names = [p for p in preds if p in both.predictors]
    if not names:
        raise ValueError("the two logs share none of the selected predictors (a predictor is compared "
                         "only when both logs have it)")
    settings = _cfg.score_settings()
    table = group_table(both, column, settings, names)
    diff = group_difference(both, column, "baseline", "candidate", settings, names,
                            pair_on=pair_on)
    left = [p for p in preds if p not in names]
    return table, "baseline", {"candidate": diff}, left


def get_two_logs(cand: Source, pair_on: str = "auto", cfg: Config | None = None):
    """(table, base, {"candidate": difference}, predictors left out) or a LoadFailure of the candidate."""
    cfg = cfg or current()
    src = current_source()
    return _two_logs(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, cand.key, pair_on, cfg,
                     src, cand)


def group_choice() -> tuple:
    """(column, base group, pair_on) last chosen on the Overview for groups of this log, or
    (None, None, "auto"). Kept under a key of its own: widget state is dropped on other pages."""
    return st.session_state.get("_grp_choice") or (None, None, "auto")


def remember_group_choice(by, base, pair_on) -> None:
    """Called by the Overview: the group comparison the report should include (None: none)."""
    st.session_state["_grp_choice"] = (by, base, pair_on) if by else None


def group_columns(data) -> list[str]:
    """Trajectory-level metadata columns with 2 to groups.MAX_GROUPS distinct values (candidates for --by)."""
    from tpsviz.groups import MAX_GROUPS

    t = data.trajectories
    return [c for c in data.metadata_columns if 2 <= t[c].nunique(dropna=False) <= MAX_GROUPS]


@memo(max_entries=24, spinner="Paired TPS comparison…")
def _compare_tps(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, baseline: str,
                 _cfg: Config, _src: Source):
    from tpsviz.compare import compare, z_matrix

    data, _ = _prepared(_src.key, filters, recal, _src)
    q, _ = qz_override(data, _cfg, _src)
    settings = _cfg.score_settings()
    # n_boot=0: the table shows Δ, the analytic SE and Δ/SE; the bootstrap CI of Δ is not shown
    names = list(dict.fromkeys(list(preds) + [baseline]))
    res = _tps(key, filters, recal, score, tuple(names), _cfg.censoring, _cfg, _src)  # cached
    table = compare(data, settings, baseline=baseline, predictors=list(preds), q_z=q, metrics=(), n_boot=0,
                    result=res)
    z = z_matrix(data, settings, list(preds), metric="tps", q_z=q, result=res)
    return table, z


def get_compare_tps(baseline: str, cfg: Config | None = None, predictors=None):
    """(compare.compare without metrics, compare.z_matrix of TPS) against ``baseline``."""
    cfg = cfg or current()
    src = current_source()
    preds = tuple(predictors) if predictors is not None else cfg.predictors
    return _compare_tps(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, preds, baseline, cfg, src)


@memo(max_entries=12, spinner="Paired bootstrap of AUROC and T-ECE against the baseline…")
def _compare_metrics(key: str, filters: tuple, recal: tuple, preds: tuple, baseline: str, n_boot: int,
                     _src: Source):
    """Rank/binned metric part of compare.compare (does not depend on α, β, schedule or censoring)."""
    from tpsviz.compare import compare

    data, _ = _prepared(_src.key, filters, recal, _src)
    settings = tpsviz.ScoreSettings(n_boot=n_boot, seed=SEED)
    t = compare(data, settings, baseline=baseline, predictors=list(preds), metrics=("auroc", "tece"))
    return t[[c for c in t.columns if c.startswith(("auroc_", "tece_"))]]


def get_compare_metrics(baseline: str, cfg: Config | None = None, predictors=None, n_boot: int | None = None):
    cfg = cfg or current()
    src = current_source()
    preds = tuple(predictors) if predictors is not None else cfg.predictors
    nb = metric_boot(cfg) if n_boot is None else n_boot
    return _compare_metrics(result_key(src), cfg.filters, cfg.recal, preds, baseline, nb, src)


@memo(max_entries=24, spinner="Shift between censoring treatments…")
def _shift(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, from_mode: str, to_mode: str,
           _cfg: Config, _src: Source):
    from tpsviz.compare import censoring_shift

    data, _ = _prepared(_src.key, filters, recal, _src)
    q, _ = qz_override(data, replace(_cfg, censoring="exact"), _src)
    return censoring_shift(data, _cfg.score_settings(), list(preds), from_mode, to_mode, q_z=q)


def get_shift(from_mode: str, to_mode: str, cfg: Config | None = None):
    """compare.censoring_shift between two modes (q_Z of exact mode from the current source)."""
    cfg = cfg or current()
    src = current_source()
    return _shift(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, from_mode, to_mode, cfg, src)


@memo(max_entries=12, spinner="Monte-Carlo audit…")
def _mc_audit(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, _cfg: Config, _src: Source):
    from tpsviz.audit import mc_audit

    data, _ = _prepared(_src.key, filters, recal, _src)
    return mc_audit(data, get_rollouts(_src), _cfg.score_settings(), list(preds))


def get_mc_audit(cfg: Config | None = None):
    """audit.mc_audit of the current source's rollouts (call only when get_rollouts() is a table)."""
    cfg = cfg or current()
    src = current_source()
    return _mc_audit(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, cfg, src)


# ----------------------------------------------------------------------------- rank metrics
LARGE_ROWS = 200_000          # above this many step rows, the Overview shows point estimates before CIs


def is_large(data=None) -> bool:
    if data is None:
        data, _ = get_data()
    return getattr(data, "n_steps", 0) > LARGE_ROWS


def metric_boot(cfg: Config | None = None) -> int:
    """Bootstrap replicates of AUROC/AUPRC/T-ECE: the sidebar value, or 'auto' = the TPS value."""
    cfg = cfg or current()
    if cfg.metric_boot >= 0:
        return int(cfg.metric_boot)
    return int(cfg.n_boot)


def metric_boot_note(cfg: Config | None = None) -> str:
    cfg = cfg or current()
    nb = metric_boot(cfg)
    if nb == 0:
        return "metric CIs off (0 replicates; raise 'Metric bootstrap' in the sidebar's Uncertainty box)"
    return f"metric CIs from {nb} replicates"


@memo(max_entries=24, spinner="Computing AUROC / AUPRC / T-ECE…")
def _metrics(key: str, filters: tuple, recal: tuple, preds: tuple, n_boot: int, eps: float, _src: Source):
    from tpsviz.diagnostics import metric_table

    data, _ = _prepared(_src.key, filters, recal, _src)
    settings = tpsviz.ScoreSettings(eps=eps, n_boot=n_boot, seed=SEED)
    return metric_table(data, settings, list(preds), n_bins=10, n_boot=n_boot)


def get_metrics(cfg: Config | None = None, predictors=None, ci: bool = True):
    """diagnostics.metric_table: points only (``ci=False``, fast) or with bootstrap CIs."""
    cfg = cfg or current()
    src = current_source()
    preds = tuple(predictors) if predictors is not None else cfg.predictors
    nb = metric_boot(cfg) if ci else 0
    return _metrics(result_key(src), cfg.filters, cfg.recal, preds, nb, float(cfg.eps), src)


# ----------------------------------------------------------------------------- why-not-AUROC demos
@memo(max_entries=12, spinner="Building the why-not-AUROC demonstrations…")
def _demos(key: str, filters: tuple, recal: tuple, score: tuple, _cfg: Config, _src: Source):
    """tpsviz.demonstrators on the current log; a failing demonstration gives its message instead."""
    from tpsviz import demonstrators as D

    data, _ = _prepared(_src.key, filters, recal, _src)
    settings = _cfg.score_settings(n_boot=0)
    out = {}
    for k, fn in (("distortion", D.monotone_distortion), ("binmean", D.bin_mean_forecast),
                  ("phimean", D.phi_mean_manipulation)):
        try:
            out[k] = fn(data, settings)
        except ValueError as e:
            out[k] = str(e)
    return out


def get_demos(cfg: Config | None = None) -> dict:
    cfg = cfg or current()
    src = current_source()
    return _demos(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, cfg, src)


# ----------------------------------------------------------------------------- colours
def colors(data=None) -> dict:
    """Colour per predictor of the whole dataset (stable under selection)."""
    if data is None:
        data, _ = get_data()
    names = list(getattr(data, "predictors", []))
    return F.predictor_colors(names)


def selected_colors(cfg: Config | None = None, data=None) -> dict:
    cfg = cfg or current()
    allc = colors(data)
    return {p: allc[p] for p in cfg.predictors if p in allc}


# ----------------------------------------------------------------------------- report registry
def register_figure(name: str, fig, caption: str = "") -> None:
    """Remember a figure drawn on this page for the Export page (PNG / HTML report)."""
    reg = st.session_state.setdefault("_figures", {})
    reg[name] = (fig, caption)


def reset_caches() -> None:
    st.cache_resource.clear()
    st.cache_data.clear()
    _clear_memo()


def is_failure(obj) -> bool:
    return isinstance(obj, LoadFailure)


file_size_text = size_text


def safe_filename(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)[:80] or "tpsviz"


# ----------------------------------------------------------------------------- step contributions
def _contrib(key, filters, recal, score, preds, censoring, cfg, src, which):
    return _tps(key, filters, recal, score, preds, censoring, cfg, src).step_contributions(list(which))


@memo(max_entries=12, spinner="Aggregating per-step contributions…")
def _step_means(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, censoring: str,
                _cfg: Config, _src: Source):
    c = _contrib(key, filters, recal, score, preds, censoring, _cfg, _src, list(preds))
    return F.prepare_step_means(c)


def get_step_means(cfg: Config | None = None):
    cfg = cfg or current()
    src = current_source()
    return _step_means(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, cfg.censoring, cfg, src)


@memo(max_entries=12, spinner="Building the heatmap…")
def _heatmap(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, censoring: str, pred: str,
             _cfg: Config, _src: Source):
    data, _ = _prepared(_src.key, filters, recal, _src)
    c = _contrib(key, filters, recal, score, preds, censoring, _cfg, _src, [pred])
    return F.prepare_heatmap(c, data.trajectories)


def get_heatmap(pred: str, cfg: Config | None = None):
    cfg = cfg or current()
    src = current_source()
    return _heatmap(result_key(src), cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, cfg.censoring, pred, cfg, src)


# ----------------------------------------------------------------------------- reliability
def scope_rows(data, scope: str, step: int | None, pseudo: bool):
    """Row mask, outcomes and codes for a reliability scope (complete runs, or pseudo-labels)."""
    from tpsviz.diagnostics import labelled_rows

    keep, y = labelled_rows(data, pseudo)
    codes = data.steps["traj"].to_numpy()
    tt = data.steps["t"].to_numpy()
    if scope == "step" and step is not None:
        keep &= tt == int(step)
    elif scope == "final":
        keep &= tt == data.trajectories["length"].to_numpy()[codes]
    return keep, y, codes


@memo(max_entries=12, spinner="Reliability diagrams (CORP curves and consistency bands)…")
def _reliability(key: str, filters: tuple, recal: tuple, preds: tuple, scope: str, step, pseudo: bool,
                 n_bins: int, _src: Source):
    from tpsviz.reliability import corp_curve, forecast_histogram, reliability_bins

    data, _ = _prepared(_src.key, filters, recal, _src)
    keep, y, codes = scope_rows(data, scope, step, pseudo)
    panels, hists = [], []
    for name in preds:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.cancel)
        p = data.forecasts(name)
        ok = keep & np.isfinite(p)
        if ok.sum() < 2:
            continue
        bins = reliability_bins(p[ok], y[ok], n_bins=n_bins)
        corp = corp_curve(p[ok], y[ok], n_boot=200, seed=SEED)
        panels.append({"name": name, "bins": bins, "corp": corp, "n": int(ok.sum()),
                       "n_traj": int(np.unique(codes[ok]).size)})
        h = forecast_histogram(p[ok], bins=20)
        hists.append(h.assign(predictor=name))
    return panels, (pd.concat(hists, ignore_index=True) if hists else pd.DataFrame())


def get_reliability(scope: str, step, pseudo: bool, n_bins: int = 10, cfg: Config | None = None, preds=None):
    cfg = cfg or current()
    src = current_source()
    return _reliability(result_key(src), cfg.filters, cfg.recal, tuple(preds or cfg.predictors), scope,
                        None if step is None else int(step), pseudo, n_bins, src)


@memo(max_entries=24, spinner="CORP decomposition…")
def _decomp(key: str, filters: tuple, recal: tuple, preds: tuple, scope: str, step, pseudo: bool,
            alpha: float, beta: float, eps: float, by_step: bool, _src: Source):
    from tpsviz.decomposition import decompose, decompose_by_step
    from tpsviz.scores import clip_forecasts

    data, _ = _prepared(_src.key, filters, recal, _src)
    keep, y, codes = scope_rows(data, scope, step, pseudo)
    rows, steps = [], []
    tt = data.steps["t"].to_numpy()
    for name in preds:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.cancel)
        p = data.forecasts(name)
        ok = keep & np.isfinite(p)
        if ok.sum() < 2:
            continue
        pc, _ = clip_forecasts(p[ok], eps)
        d = decompose(pc, y[ok], alpha, beta)
        rows.append({"predictor": name, **d})
        if by_step:
            dt = tt[ok]
            big = np.bincount(dt)
            common = np.flatnonzero(big >= 30)
            m = np.isin(dt, common)
            if m.sum():
                ds = decompose_by_step(pc[m], y[ok][m], dt[m], alpha, beta)
                steps.append(ds.assign(predictor=name))
    return pd.DataFrame(rows), (pd.concat(steps, ignore_index=True) if steps else pd.DataFrame())


def get_decomposition(scope: str, step, pseudo: bool, cfg: Config | None = None, by_step: bool = True, preds=None):
    cfg = cfg or current()
    src = current_source()
    return _decomp(result_key(src), cfg.filters, cfg.recal, tuple(preds or cfg.predictors), scope,
                   None if step is None else int(step), pseudo, float(cfg.alpha), float(cfg.beta), float(cfg.eps),
                   by_step, src)
