"""UI-side state and caching: the one place that knows about st.session_state and st.cache_*.

Pages are thin: ``cfg = current()`` gives the settings of the shared sidebar; the ``get_*``
functions return cached results keyed by (dataset key, parameters) — small hashable values —
never by hashing a large DataFrame (DESIGN §4). The dataset key is the SHA-256 of an upload,
``demo:<name>`` for the embedded demo data, or ``path:<abs>:<size>:<mtime>`` for a server file.
Big objects (TrajectoryData, TPSResult) live in ``st.cache_resource`` (no copy per rerun) and are
treated as read-only.

A parameter slider reruns only what depends on it: loading, filtering, recalibration, AUROC,
AUPRC and T-ECE do not depend on α, β, the schedule or censoring and stay cached.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

import tpsviz
from tpsviz import figures as F
from tpsviz.schedules import Schedule
from tpsviz.tps import CENSORING_LABELS

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "demo_data"
DEMOS = {
    "webshop-like": "WebShop-like: step budget 30, ~45% censored, Monte-Carlo rollouts.",
    "tau2-like": "Tau2-like: few censored runs, saturated verbal confidence.",
}
DEMOS_HELP = " ".join(f"{k}: {v}" for k, v in DEMOS.items())
DEFAULT_DEMO = "webshop-like"
EPS_CHOICES = [0.0, 1e-9, 1e-6, 1e-4, 1e-3, 1e-2]
BOOT_CHOICES = [0, 200, 500, 1000, 2000]
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
    n_boot: int = 1000
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


def current_source() -> Source | None:
    return st.session_state.get("_source")


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:20]


def path_key(path: str) -> str:
    p = Path(path).expanduser()
    try:
        st_ = p.stat()
        return f"path:{p.resolve()}:{st_.st_size}:{int(st_.st_mtime_ns)}"
    except OSError:
        return f"path:{p}:missing"


def demo_source(name: str) -> Source:
    path = DEMO_DIR / f"{name}.csv"
    roll = DEMO_DIR / f"{name}_rollouts.csv"
    return Source(key=f"demo:{name}", kind="demo", name=f"{name}.csv", path=str(path),
                  rollouts_key=f"demo:{name}:rollouts" if roll.exists() else None,
                  rollouts_path=str(roll) if roll.exists() else None,
                  rollouts_name=roll.name if roll.exists() else None)


# ----------------------------------------------------------------------------- recal specs
def recal_spec(source: str, method: str, folds: int, per_step: bool) -> str:
    return f"{source}|{method}|{int(folds)}|{'step' if per_step else 'pooled'}"


def parse_recal(spec: str) -> dict | None:
    parts = str(spec).split("|")
    if len(parts) != 4:
        return None
    src, method, folds, mode = parts
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


@st.cache_resource(max_entries=6, show_spinner="Reading and validating the log…")
def _load(key: str, _src: Source):
    try:
        if _src.raw is not None:
            return tpsviz.load(_src.raw, name=_src.name)
        return tpsviz.load(_src.path, name=_src.name)
    except tpsviz.LogFormatError as e:
        return LoadFailure(e.source, e.problems)
    except Exception as e:  # never a traceback in the page
        return LoadFailure(_src.name, [f"the file could not be read ({type(e).__name__}: {e})"])


def load_base(src: Source):
    """TrajectoryData or LoadFailure for the source (cached by its key)."""
    return _load(src.key, src)


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


@st.cache_resource(max_entries=6, show_spinner="Applying filters and recalibration…")
def _prepared(key: str, filters: tuple, recal: tuple, _src: Source):
    base = load_base(_src)
    if isinstance(base, LoadFailure):
        return base, []
    data = base.subset(_filter_mask(base, filters))
    problems = []
    for spec in recal:
        r = parse_recal(spec)
        if r is None:
            problems.append(f"recalibration {spec!r} is malformed and was ignored")
            continue
        try:
            data = data.with_predictor(r["name"], _recal_values(data, r),
                                       note=None)
        except Exception as e:
            problems.append(f"recalibration of {r['source']} by {r['method']} failed: {e}")
    return data, problems


def _recal_values(data, r: dict) -> np.ndarray:
    from tpsviz.recalibration import recalibrate

    src = r["source"]
    if src in data.predictors:
        x = data.forecasts(src)
        signal, direction = "probability", 1
    elif src in data.signals:
        x = data.steps[src].to_numpy(dtype=float)
        signal, direction = "raw", data.signals[src]
    else:
        raise ValueError(f"{src} is not a predictor or signal of this log")
    ok = np.isfinite(x)
    codes = data.steps["traj"].to_numpy()
    y = data.trajectories["outcome"].to_numpy(dtype=float)[codes]
    out = np.full(x.shape, np.nan)
    res = recalibrate(x[ok], y[ok], codes[ok], method=r["method"], folds=r["folds"],
                      per_step=data.steps["t"].to_numpy()[ok] if r["per_step"] else None,
                      seed=SEED, direction=direction, signal=signal)
    out[ok] = res.probabilities
    return out


def get_data(cfg: Config | None = None, src: Source | None = None):
    """(TrajectoryData | LoadFailure, problems) for the current settings."""
    cfg = cfg or current()
    src = src or current_source()
    return _prepared(src.key, cfg.filters, cfg.recal, src)


# ----------------------------------------------------------------------------- rollouts / q_Z
@st.cache_resource(max_entries=6, show_spinner=False)
def _rollouts(key: str, _src: Source):
    """Per-trajectory q̂_Z, SE and n from a rollouts table, or a LoadFailure."""
    name = _src.rollouts_name or "rollouts"
    try:
        if _src.rollouts_raw is not None:
            import io
            df = pd.read_csv(io.BytesIO(_src.rollouts_raw))
        else:
            df = pd.read_csv(_src.rollouts_path)
    except Exception as e:
        return LoadFailure(name, [f"the rollouts file could not be read as CSV ({type(e).__name__}: {e})"])
    problems = [f"column {c!r} is missing (a rollouts table needs trajectory_id and outcome)"
                for c in ("trajectory_id", "outcome") if c not in df]
    if problems:
        return LoadFailure(name, problems)
    y = pd.to_numeric(df["outcome"], errors="coerce")
    bad = ~y.isin([0, 1])
    if bad.any():
        rows = (np.flatnonzero(bad.to_numpy())[:3] + 2).tolist()
        return LoadFailure(name, [f"column 'outcome': rows {rows} are not 0/1"])
    g = pd.DataFrame({"trajectory_id": df["trajectory_id"].astype(str), "y": y}).groupby("trajectory_id")["y"]
    out = g.agg(["mean", "count", "std"]).rename(columns={"mean": "q_hat", "count": "n_rollouts"})
    out["q_se"] = np.sqrt(out["q_hat"] * (1 - out["q_hat"]) / np.maximum(out["n_rollouts"] - 1, 1))
    return out[["q_hat", "q_se", "n_rollouts"]]


def get_rollouts(src: Source | None = None):
    src = src or current_source()
    if src is None or src.rollouts_key is None:
        return None
    return _rollouts(src.rollouts_key, src)


def qz_override(data, cfg: Config, src: Source):
    """The q_z argument for compute_tps in exact mode, and a note for the user."""
    if cfg.censoring != "exact":
        return None, None
    if cfg.qz_source == "constant":
        return np.full(data.n_trajectories, float(cfg.qz_const)), f"q_Z = {cfg.qz_const:g} for every censored run"
    if cfg.qz_source == "rollouts":
        ro = get_rollouts(src)
        if ro is None or isinstance(ro, LoadFailure):
            return None, "no usable rollouts file: q_Z taken from the log's q_z column"
        q = ro["q_hat"].reindex(data.trajectories["trajectory_id"]).to_numpy(dtype=float)
        return q, "q_Z = Monte-Carlo mean of the rollouts"
    return None, "q_Z from the log's q_z column"


# ----------------------------------------------------------------------------- TPS
@st.cache_resource(max_entries=24, show_spinner="Scoring…")
def _tps(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, censoring: str,
         _cfg: Config, _src: Source):
    data, _ = _prepared(key, filters, recal, _src)
    cfg = replace(_cfg, censoring=censoring)
    q, _ = qz_override(data, cfg, _src)
    return tpsviz.compute_tps(data, cfg.score_settings(), list(preds), q_z=q)


def get_tps(cfg: Config | None = None, censoring: str | None = None, predictors=None):
    """TPSResult for the current settings (optionally another censoring mode)."""
    cfg = cfg or current()
    src = current_source()
    preds = tuple(predictors) if predictors is not None else cfg.predictors
    return _tps(src.key, cfg.filters, cfg.recal, cfg.score_tuple, preds, censoring or cfg.censoring, cfg, src)


@st.cache_resource(max_entries=24, show_spinner=False)
def _reference(key: str, filters: tuple, recal: tuple, score: tuple, censoring: str, _cfg: Config, _src: Source):
    """Per-trajectory TPS of the base-rate forecast (success rate of the complete runs)."""
    data, _ = _prepared(key, filters, recal, _src)
    t = data.trajectories
    rate = float(t.loc[~t["censored"], "outcome"].mean())
    ref = data.with_predictor("__base_rate__", np.full(data.n_steps, rate))
    cfg = replace(_cfg, censoring=censoring)
    q, _ = qz_override(data, cfg, _src)
    res = tpsviz.compute_tps(ref, cfg.score_settings(n_boot=0), ["__base_rate__"], q_z=q)
    return rate, res.per_trajectory.set_index("trajectory_id")["tps"]


def get_reference(cfg: Config | None = None):
    cfg = cfg or current()
    src = current_source()
    return _reference(src.key, cfg.filters, cfg.recal, cfg.score_tuple, cfg.censoring, cfg, src)


def skill_table(res, ref_tps: pd.Series) -> pd.DataFrame:
    """Skill = 1 − TPS/TPS_ref per predictor, with a delta-method SE over trajectories."""
    rows = []
    m = res.tps_matrix()
    for name in m.columns:
        a = m[name].dropna()
        b = ref_tps.reindex(a.index)
        ok = np.isfinite(a.to_numpy()) & np.isfinite(b.to_numpy())
        a, b = a[ok].to_numpy(), b[ok].to_numpy()
        if a.size < 2 or b.mean() == 0:
            rows.append({"predictor": name, "skill": np.nan, "skill_se": np.nan, "tps_ref": np.nan})
            continue
        ma, mb = a.mean(), b.mean()
        infl = -(a - ma * b / mb) / mb
        rows.append({"predictor": name, "skill": 1 - ma / mb, "skill_se": infl.std(ddof=1) / np.sqrt(a.size),
                     "tps_ref": mb})
    return pd.DataFrame(rows).set_index("predictor")


def paired_z_matrix(res) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Paired Δ (row − column), its SE and Δ/SE of per-trajectory TPS on runs scored by both."""
    m = res.tps_matrix()
    names = list(m.columns)
    d = pd.DataFrame(np.nan, index=names, columns=names)
    se = d.copy()
    for a in names:
        for b in names:
            if a == b:
                continue
            diff = (m[a] - m[b]).to_numpy()
            diff = diff[np.isfinite(diff)]
            if diff.size >= 2:
                d.loc[a, b] = diff.mean()
                se.loc[a, b] = diff.std(ddof=1) / np.sqrt(diff.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = d / se
    return d, se, z


# ----------------------------------------------------------------------------- rank metrics
def complete_rows(data):
    """Mask of step rows of complete runs, their outcomes and trajectory codes."""
    codes = data.steps["traj"].to_numpy()
    cens = data.trajectories["censored"].to_numpy()[codes]
    y = data.trajectories["outcome"].to_numpy(dtype=float)[codes]
    return ~cens, y, codes


@st.cache_resource(max_entries=12, show_spinner="Computing AUROC / AUPRC / T-ECE with bootstrap CIs…")
def _metrics(key: str, filters: tuple, recal: tuple, preds: tuple, n_boot: int, _src: Source):
    from tpsviz import metrics as M

    data, _ = _prepared(key, filters, recal, _src)
    comp, y, codes = complete_rows(data)
    rows = []
    for name in preds:
        p = data.forecasts(name)
        ok = comp & np.isfinite(p)
        row = {"predictor": name, "n_traj_metrics": int(np.unique(codes[ok]).size), "n_rows_metrics": int(ok.sum())}
        for metric in ("auroc", "auprc", "tece"):
            try:
                if n_boot > 0:
                    e = M.bootstrap_metric(metric, p[ok], y[ok], codes[ok], n_boot=n_boot, seed=SEED)
                    row.update({metric: e.mean, f"{metric}_lo": e.ci_low, f"{metric}_hi": e.ci_high,
                                f"{metric}_se": e.se})
                else:
                    val = {"auroc": M.auroc, "auprc": M.auprc, "tece": M.tece}[metric](p[ok], y[ok])
                    row.update({metric: val, f"{metric}_lo": np.nan, f"{metric}_hi": np.nan, f"{metric}_se": np.nan})
            except Exception:
                row.update({metric: np.nan, f"{metric}_lo": np.nan, f"{metric}_hi": np.nan, f"{metric}_se": np.nan})
        rows.append(row)
    return pd.DataFrame(rows).set_index("predictor") if rows else pd.DataFrame()


def get_metrics(cfg: Config | None = None):
    cfg = cfg or current()
    src = current_source()
    return _metrics(src.key, cfg.filters, cfg.recal, cfg.predictors, cfg.n_boot, src)


@st.cache_resource(max_entries=12, show_spinner="Paired bootstrap of AUROC against the baseline…")
def _auroc_vs(key: str, filters: tuple, recal: tuple, preds: tuple, baseline: str, n_boot: int, _src: Source):
    from tpsviz import metrics as M

    data, _ = _prepared(key, filters, recal, _src)
    comp, y, codes = complete_rows(data)
    pb = data.forecasts(baseline)
    out = {}
    for name in preds:
        if name == baseline:
            continue
        pa = data.forecasts(name)
        ok = comp & np.isfinite(pa) & np.isfinite(pb)
        try:
            out[name] = M.paired_metric_difference("auroc", pa[ok], pb[ok], y[ok], codes[ok],
                                                   n_boot=max(n_boot, 200), seed=SEED)
        except Exception:
            out[name] = None
    return out


def get_auroc_vs(baseline: str, cfg: Config | None = None):
    cfg = cfg or current()
    src = current_source()
    return _auroc_vs(src.key, cfg.filters, cfg.recal, cfg.predictors, baseline, cfg.n_boot, src)


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


def is_failure(obj) -> bool:
    return isinstance(obj, LoadFailure)


def file_size_text(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def safe_filename(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)[:80] or "tpsviz"


def env_max_path_bytes() -> int:
    return int(os.environ.get("TPSVIZ_MAX_PATH_BYTES", str(8 * 1024 ** 3)))


# ----------------------------------------------------------------------------- step contributions
def _contrib(key, filters, recal, score, preds, censoring, cfg, src, which):
    res = _tps(key, filters, recal, score, preds, censoring, cfg, src)
    try:
        out = res.step_contributions(which)
        if len(out) and {"trajectory_id", "t", "contribution"} <= set(out.columns):
            return out
    except Exception:
        pass
    data, _ = _prepared(key, filters, recal, src)
    return contributions_fallback(data, res, which)


def contributions_fallback(data, res, which) -> pd.DataFrame:
    """w_t·S per scored step row, recomputed from the core's public functions (used when
    ``TPSResult.step_contributions`` is unavailable)."""
    from tpsviz.scores import beta_score, clip_forecasts, expected_score
    from tpsviz.tps import step_weights

    st_ = res.settings
    steps = data.steps
    codes = steps["traj"].to_numpy()
    y = data.trajectories["outcome"].to_numpy(dtype=float)[codes]
    w = step_weights(data, st_.schedule)
    frames = []
    pt = res.per_trajectory
    for name in which:
        sub = pt[pt["predictor"] == name]
        scored = np.zeros(data.n_trajectories, dtype=bool)
        scored[sub["traj"].to_numpy()] = True
        qz = np.full(data.n_trajectories, np.nan)
        qz[sub["traj"].to_numpy()] = sub["q_z_used"].to_numpy(dtype=float)
        p = data.forecasts(name)
        ok = scored[codes] & np.isfinite(p)
        pc, _ = clip_forecasts(p[ok], st_.eps)
        yy, qq = y[ok], qz[codes][ok]
        sc = np.empty(pc.shape)
        comp = np.isfinite(yy)
        sc[comp] = beta_score(pc[comp], yy[comp], st_.alpha, st_.beta)
        if (~comp).any():
            sc[~comp] = expected_score(pc[~comp], qq[~comp], st_.alpha, st_.beta)
        ww = w[ok]
        frames.append(pd.DataFrame({
            "trajectory_id": steps["trajectory_id"].to_numpy()[ok], "step": steps["step"].to_numpy()[ok],
            "t": steps["t"].to_numpy()[ok], "predictor": name, "forecast": pc, "weight": ww, "score": sc,
            "contribution": np.where(ww == 0, 0.0, ww * sc)}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@st.cache_resource(max_entries=12, show_spinner="Aggregating per-step contributions…")
def _step_means(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, censoring: str,
                _cfg: Config, _src: Source):
    c = _contrib(key, filters, recal, score, preds, censoring, _cfg, _src, list(preds))
    return F.prepare_step_means(c)


def get_step_means(cfg: Config | None = None):
    cfg = cfg or current()
    src = current_source()
    return _step_means(src.key, cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, cfg.censoring, cfg, src)


@st.cache_resource(max_entries=12, show_spinner="Building the heatmap…")
def _heatmap(key: str, filters: tuple, recal: tuple, score: tuple, preds: tuple, censoring: str, pred: str,
             _cfg: Config, _src: Source):
    data, _ = _prepared(key, filters, recal, _src)
    c = _contrib(key, filters, recal, score, preds, censoring, _cfg, _src, [pred])
    return F.prepare_heatmap(c, data.trajectories)


def get_heatmap(pred: str, cfg: Config | None = None):
    cfg = cfg or current()
    src = current_source()
    return _heatmap(src.key, cfg.filters, cfg.recal, cfg.score_tuple, cfg.predictors, cfg.censoring, pred, cfg, src)


# ----------------------------------------------------------------------------- inference helpers
def shift_estimate(res_a, res_b, name: str, n_traj: int, n_boot: int, level: float = 0.95) -> dict:
    """mean TPS under res_a − mean TPS under res_b for one predictor, each over its own scored
    runs (populations may differ, e.g. complete-case), with a trajectory-bootstrap CI."""
    from tpsviz.inference import bootstrap_weights

    def col(res):
        pt = res.per_trajectory
        pt = pt[pt["predictor"] == name]
        v = np.full(n_traj, np.nan)
        v[pt["traj"].to_numpy()] = pt["tps"].to_numpy()
        return v

    a, b = col(res_a), col(res_b)
    ma, mb = np.isfinite(a), np.isfinite(b)
    delta = float(a[ma].mean() - b[mb].mean()) if ma.any() and mb.any() else np.nan
    lo = hi = se = np.nan
    if n_boot > 0 and ma.sum() >= 2 and mb.sum() >= 2:
        av, bv = np.where(ma, a, 0.0), np.where(mb, b, 0.0)
        reps = []
        for w in bootstrap_weights(n_traj, n_boot, SEED):
            with np.errstate(invalid="ignore", divide="ignore"):
                reps.append((w @ av) / (w @ ma) - (w @ bv) / (w @ mb))
        reps = np.concatenate(reps)
        reps = reps[np.isfinite(reps)]
        lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
        se = float(reps.std(ddof=1))
    return {"delta": delta, "ci_low": float(lo), "ci_high": float(hi), "se": se}


# ----------------------------------------------------------------------------- reliability
def scope_rows(data, scope: str, step: int | None, pseudo: bool):
    """Row mask, outcomes and codes for a reliability scope (complete runs, or pseudo-labels)."""
    codes = data.steps["traj"].to_numpy()
    t = data.trajectories
    cens = t["censored"].to_numpy()[codes]
    y = t["outcome"].to_numpy(dtype=float)[codes]
    if pseudo:
        y = np.where(cens, 0.0, y)
        keep = np.ones(codes.size, dtype=bool)
    else:
        keep = ~cens
    tt = data.steps["t"].to_numpy()
    if scope == "step" and step is not None:
        keep &= tt == int(step)
    elif scope == "final":
        length = t["length"].to_numpy()[codes]
        keep &= tt == length
    return keep, y, codes


@st.cache_resource(max_entries=12, show_spinner="Reliability diagrams (CORP curves and consistency bands)…")
def _reliability(key: str, filters: tuple, recal: tuple, preds: tuple, scope: str, step, pseudo: bool,
                 n_bins: int, _src: Source):
    from tpsviz.reliability import corp_curve, forecast_histogram, reliability_bins

    data, _ = _prepared(key, filters, recal, _src)
    keep, y, codes = scope_rows(data, scope, step, pseudo)
    panels, hists = [], []
    for name in preds:
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
    return _reliability(src.key, cfg.filters, cfg.recal, tuple(preds or cfg.predictors), scope,
                        None if step is None else int(step), pseudo, n_bins, src)


@st.cache_resource(max_entries=24, show_spinner="CORP decomposition…")
def _decomp(key: str, filters: tuple, recal: tuple, preds: tuple, scope: str, step, pseudo: bool,
            alpha: float, beta: float, eps: float, by_step: bool, _src: Source):
    from tpsviz.decomposition import decompose, decompose_by_step
    from tpsviz.scores import clip_forecasts

    data, _ = _prepared(key, filters, recal, _src)
    keep, y, codes = scope_rows(data, scope, step, pseudo)
    rows, steps = [], []
    tt = data.steps["t"].to_numpy()
    for name in preds:
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
    return _decomp(src.key, cfg.filters, cfg.recal, tuple(preds or cfg.predictors), scope,
                   None if step is None else int(step), pseudo, float(cfg.alpha), float(cfg.beta), float(cfg.eps),
                   by_step, src)
