"""Monte-Carlo audit of censored runs (docs/theory.md §4): q̂_Z from rollouts, exact vs simple TPS.

A censored run stopped at Z has no outcome. Rolling the agent forward from H_Z several times
(rollouts) gives an honest, evaluator-side estimate q̂_Z of its continuation success
probability (never the agent's own F_Z). With it the exact reduced score
TPS_cen(q̂_Z) = Σ_{t≤Z} w_t [q̂_Z S(F_t,1) + (1−q̂_Z) S(F_t,0)] can be compared with the simple
score TPS_cen(0), which treats censoring as failure.

Rollouts table: one row per rollout, columns ``trajectory_id`` and ``outcome`` (0/1);
a ``rollout`` index column and anything else are allowed and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from tpsviz.core.inference import paired_difference
from tpsviz.core.errors import LogFormatError
from tpsviz.core.data import TrajectoryData
from tpsviz.core.schema import show_id
from tpsviz.io.tables import FORMATS, read_table
from tpsviz.core.tps import ScoreSettings, compute_tps
from tpsviz.io.files import limits_from_env
from tpsviz.io.loading import read_source

__all__ = ["load_rollouts", "qz_from_rollouts", "MCAudit", "mc_audit", "rollout_qz_series",
           "QZ_SOURCES", "qz_for_source"]

#: where exact mode takes q_Z from (:func:`qz_for_source`)
QZ_SOURCES = ("log", "rollouts", "constant")

_TRUE_VALUES = {"1": 1, "1.0": 1, "true": 1, "0": 0, "0.0": 0, "false": 0}
# a rollouts table by its extension (not .txt or .json, which say nothing about a table)
_ROLLOUT_FORMATS = {ext: fmt for ext, fmt in FORMATS.items() if ext not in (".txt", ".json")}


def _as_text(df: pd.DataFrame) -> pd.DataFrame:
    where = df.pop("_where") if "_where" in df else None
    out = df.astype(object).where(df.notna(), "").astype(str)
    prefix = df.attrs.get("where_prefix", "row")
    if where is None:
        where = np.arange(1, len(df) + 1)
    out["_where"] = [f"{prefix} {w}" for w in where]
    return out


def _examples(where: pd.Series) -> str:
    items = list(where.iloc[:3])
    more = f" and {len(where) - 3} more" if len(where) > 3 else ""
    return ", ".join(items) + more


def load_rollouts(source, name: str | None = None, limits=None) -> pd.DataFrame:
    """Read and validate a rollouts table.

    Parameters
    ----------
    source : str, Path, bytes or DataFrame
        A CSV/TSV/Parquet/JSON Lines file (a regular file of bounded size, read through
        :func:`tpsviz.io.files.read_file`), its bytes (with ``name``), or a frame with columns
        ``trajectory_id`` and ``outcome``.
    name : str, optional
        Name used in messages and, for bytes, for the format (default: the file name).
    limits : tpsviz.io.files.Limits, optional
        Largest file and number of rows (default: from the environment).

    Returns
    -------
    DataFrame
        ``trajectory_id`` (str), ``outcome`` (int 0/1), and ``rollout`` when given.

    Raises
    ------
    LogFormatError
        Unknown file type, missing columns, empty ids, or outcomes other than 0/1, naming the
        rows and columns (never values). The file is only read.
    tpsviz.io.files.FileRefused
        A path that is not a readable regular file or is too large.
    """
    if isinstance(source, pd.DataFrame):
        label = name or "<rollouts frame>"
        df = _as_text(source.copy())
    else:

        limits = limits or limits_from_env()
        label = name or (Path(source).name if isinstance(source, (str, Path)) else "rollouts")
        fmt = _ROLLOUT_FORMATS.get(Path(label).suffix.lower())
        if fmt is None:  # checked before a byte is read
            raise LogFormatError(label, ["unknown file type for a rollouts table; use .csv, .tsv, "
                                         ".parquet or .jsonl"])
        raw, label = read_source(source, label, limits)
        df = _as_text(read_table(raw, label, fmt, limits.max_rows, limits.max_cells, limits.max_bytes))
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in ("trajectory_id", "outcome") if c not in df.columns]
    if missing:
        raise LogFormatError(label, [f"the rollouts table needs columns trajectory_id and "
                                     f"outcome; missing: {', '.join(missing)}"])
    if len(df) == 0:
        raise LogFormatError(label, ["the rollouts table has no rows"])
    problems = []
    tid = df["trajectory_id"].str.strip()
    empty = tid == ""
    if empty.any():
        problems.append(f"column trajectory_id is empty at {_examples(df['_where'][empty])}")
    out_txt = df["outcome"].str.strip().str.lower()
    outcome = out_txt.map(_TRUE_VALUES)
    bad = outcome.isna()
    if bad.any():
        problems.append(f"column outcome must be 0 or 1 for every rollout; not so at "
                        f"{_examples(df['_where'][bad])}")
    if problems:
        raise LogFormatError(label, problems)
    out = pd.DataFrame({"trajectory_id": tid.to_numpy(), "outcome": outcome.astype(int)})
    if "rollout" in df.columns:
        out["rollout"] = df["rollout"].to_numpy()
    return out


def qz_from_rollouts(rollouts) -> pd.DataFrame:
    """q̂_Z per trajectory: the mean rollout outcome, with its binomial SE.

    Parameters
    ----------
    rollouts : DataFrame, str or Path
        A rollouts table (validated by :func:`load_rollouts`).

    Returns
    -------
    DataFrame
        ``trajectory_id``, ``q_hat`` = (successful rollouts)/n, ``se`` = sqrt(q̂(1−q̂)/n)
        (0 when every rollout agrees; an honest SE needs several rollouts), ``n_rollouts``.
    """
    r = load_rollouts(rollouts)
    g = r.groupby("trajectory_id", sort=True)["outcome"]
    out = pd.DataFrame({"q_hat": g.mean(), "n_rollouts": g.size()}).reset_index()
    out["se"] = np.sqrt(out["q_hat"] * (1 - out["q_hat"]) / out["n_rollouts"])
    return out[["trajectory_id", "q_hat", "se", "n_rollouts"]]


def rollout_qz_series(data: TrajectoryData, rollouts) -> tuple[pd.Series, dict]:
    """q̂_Z aligned with the log's censored runs, and what did not match.

    Returns
    -------
    q_z : Series
        Index ``trajectory_id`` of every run of ``data``; q̂_Z for censored runs with
        rollouts, NaN elsewhere (pass it as ``q_z`` to :func:`compute_tps`).
    info : dict
        ``unknown_ids`` (rollout ids not in the log), ``complete_ids`` (rollouts of runs that
        finished; ignored), ``censored_without`` (censored runs with no rollout),
        ``n_censored``, ``n_with_rollouts``.
    """
    qz = qz_from_rollouts(rollouts).set_index("trajectory_id")
    t = data.trajectories
    ids = t["trajectory_id"]
    cens = t["censored"].to_numpy()
    known = set(ids)
    censored_ids = set(ids[cens])
    unknown = [i for i in qz.index if i not in known]
    complete = [i for i in qz.index if i in known and i not in censored_ids]
    q = qz["q_hat"].reindex(ids).to_numpy(dtype=float, copy=True)
    q[~cens] = np.nan
    without = list(ids[cens & np.isnan(q)])
    info = {"unknown_ids": unknown, "complete_ids": complete, "censored_without": without,
            "n_censored": int(cens.sum()), "n_with_rollouts": int((cens & ~np.isnan(q)).sum())}
    return pd.Series(q, index=pd.Index(ids, name="trajectory_id"), name="q_z"), info


def qz_for_source(data: TrajectoryData, source: str = "log", constant: float = 0.5,
                  rollouts=None) -> tuple[pd.Series | np.ndarray | None, str]:
    """The ``q_z`` argument of :func:`compute_tps` in exact mode, and where it came from.

    Parameters
    ----------
    data : TrajectoryData
    source : {"log", "rollouts", "constant"}
        The log's ``q_z`` column; the Monte-Carlo mean of ``rollouts`` (a censored run without
        rollouts has no q_Z, as without a q_z value: exact mode then refuses the log,
        :class:`tpsviz.core.censoring.MissingQz`); or ``constant`` for every censored run.
    constant : float
        q_Z of source ``"constant"``, in [0, 1].
    rollouts : DataFrame, optional
        A validated rollouts table (:func:`load_rollouts`); without one, source ``"rollouts"``
        falls back to the log's column.

    Returns
    -------
    q_z : Series, ndarray or None
        None means the log's own ``q_z`` column.
    note : str
        The source in words, for the reader.
    """
    if source not in QZ_SOURCES:
        raise ValueError(f"q_Z source must be one of {', '.join(QZ_SOURCES)}, got {source!r}")
    if source == "constant":
        if not 0.0 <= float(constant) <= 1.0:
            raise ValueError(f"q_Z must be in [0, 1], got {constant!r}")
        return np.full(data.n_trajectories, float(constant)), f"q_Z = {float(constant):g} for every censored run"
    if source == "rollouts":
        if rollouts is None:
            return None, "no usable rollouts file: q_Z taken from the log's q_z column"
        q, _ = rollout_qz_series(data, rollouts)
        return q, "q_Z = Monte-Carlo mean of the rollouts"
    return None, "q_Z from the log's q_z column"


@dataclass
class MCAudit:
    """Result of :func:`mc_audit`.

    Attributes
    ----------
    table : DataFrame
        Per predictor (index): ``tps_exact``, ``tps_simple`` (mean TPS per trajectory over all
        runs), ``delta`` = exact − simple, ``delta_se``, ``delta_z``, ``delta_ci_low``,
        ``delta_ci_high`` (paired over runs: percentile bootstrap resampling trajectories, or
        tasks where runs repeat them, docs/theory.md §6.1),
        ``mc_se`` (the part of the SE due to the rollouts' own noise,
        sqrt(Σ_i a_i² se_i²)/n with a_i = Σ_t w_t [S(F_t,1) − S(F_t,0)]; already contained in
        ``delta_se``), ``exact_ci_low``/``exact_ci_high`` and ``simple_ci_low``/
        ``simple_ci_high`` (each score's own CI), ``n_trajectories``.
    qz : DataFrame
        :func:`qz_from_rollouts` of the rollouts.
    info : dict
        See :func:`rollout_qz_series`.
    notes : list of str
        Sentences for the user (runs lacking rollouts, unknown ids …).
    """

    table: pd.DataFrame
    qz: pd.DataFrame
    info: dict
    notes: list = field(default_factory=list)


def mc_audit(data: TrajectoryData, rollouts, settings: ScoreSettings | None = None,
             predictors: list[str] | None = None) -> MCAudit:
    """Compare the exact censored TPS with q̂_Z from rollouts against the simple (q_Z = 0) one.

    Parameters
    ----------
    data : TrajectoryData
    rollouts : DataFrame, str or Path
        Rollouts table (see :func:`load_rollouts`).
    settings : ScoreSettings, optional
        α, β, schedule, ε, bootstrap; the censoring mode is set to exact and simple in turn.
    predictors : list of str, optional

    Returns
    -------
    MCAudit
        Censored runs without rollouts have no q_Z, so exact mode cannot score them: the audit
        leaves them out of both modes (counted in the notes and in ``info["n_left_out"]``).
    """
    settings = settings or ScoreSettings()
    q, info = rollout_qz_series(data, rollouts)
    qz = qz_from_rollouts(rollouts)
    if info["censored_without"]:  # exact mode needs every censored run's q_Z (docs/theory.md §4)
        keep = ~(data.trajectories["censored"].to_numpy(dtype=bool) & np.isnan(q.to_numpy(dtype=float)))
        data = data.subset(keep)
        q = q[keep]
    info["n_left_out"] = len(info["censored_without"])
    names = list(data.predictors if predictors is None else predictors)
    ex = compute_tps(data, replace(settings, censoring="exact"), names, q_z=q)
    si = compute_tps(data, replace(settings, censoring="simple"), names)
    ids = data.trajectories["trajectory_id"]
    me, ms = ex.tps_matrix().reindex(ids), si.tps_matrix().reindex(ids)
    se_map = qz.set_index("trajectory_id")["se"].reindex(ids).to_numpy(dtype=float)
    groups = ex.clusters.groups()  # paired by run, clustered by task where runs repeat tasks
    qv = q.to_numpy(dtype=float)
    rows = []
    for name in names:
        a, b = me[name].to_numpy(dtype=float), ms[name].to_numpy(dtype=float)
        ok = ~np.isnan(a) & ~np.isnan(b)
        est, z = paired_difference(a[ok], b[ok], n_boot=settings.n_boot, level=settings.level,
                                   seed=settings.seed, groups=None if groups is None else groups[ok],
                                   interval=settings.interval)
        # a_i = (exact − simple)/q̂_i for runs with q̂ > 0; MC noise of the mean difference
        with np.errstate(invalid="ignore", divide="ignore"):
            slope = np.where(qv > 0, (a - b) / qv, 0.0)
        has = ok & ~np.isnan(qv) & ~np.isnan(se_map) & (qv > 0)
        mc = float(np.sqrt(np.sum((slope[has] * se_map[has]) ** 2)) / max(ok.sum(), 1))
        re, rs = ex.summary.loc[name], si.summary.loc[name]
        rows.append({"predictor": name, "tps_exact": re.tps_mean, "tps_simple": rs.tps_mean,
                     "delta": est.mean, "delta_se": est.se, "delta_z": z,
                     "delta_ci_low": est.ci_low, "delta_ci_high": est.ci_high, "mc_se": mc,
                     "exact_ci_low": re.tps_ci_low, "exact_ci_high": re.tps_ci_high,
                     "simple_ci_low": rs.tps_ci_low, "simple_ci_high": rs.tps_ci_high,
                     "n_trajectories": int(ok.sum())})
    notes = []
    if info["censored_without"]:
        notes.append(f"{len(info['censored_without'])} of {info['n_censored']} censored runs have "
                     "no rollouts, so no q_Z: the audit leaves them out of both modes")
    if info["unknown_ids"]:
        ex_ids = ", ".join(show_id(i) for i in info["unknown_ids"][:3])
        notes.append(f"{len(info['unknown_ids'])} trajectory id(s) in the rollouts are not in the "
                     f"log and were ignored (e.g. {ex_ids})")
    if info["complete_ids"]:
        notes.append(f"{len(info['complete_ids'])} run(s) with rollouts finished with an observed "
                     "outcome; their rollouts were ignored")
    if info["n_censored"] == 0:
        notes.append("the log has no censored run: exact and simple scores coincide")
    return MCAudit(pd.DataFrame(rows).set_index("predictor"), qz, info, notes)
