"""Reading logs whose outcome is one of k labels (docs/multiclass.md): :class:`MulticlassLog`.

A long table, one row per (run, step): ``trajectory_id``, ``step``, ``outcome`` (a label, the same
on every row of a run; empty for a censored run), optional ``censored``, and per predictor
``<name>`` and label ``<label>`` a column ``conf_<name>__<label>`` holding P_t(label), the
forecast at step t that the run will end with that label. A censored run may carry its
continuation label distribution q_Z in columns ``q_z__<label>``.

Every defect is collected and raised together as a :class:`~tpsviz.core.errors.LogFormatError`
naming rows (lines), runs and columns, never a cell value of the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tpsviz.core.data import RunLog
from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import Limits, limits_from_env
from tpsviz.io.kinds import is_multiclass, split_conf
from tpsviz.io.loading import read_source
from tpsviz.io.tables import MAX_PREDICTORS
from tpsviz.io.tables.cells import (
    id_examples, is_missing, parse_boolean, parse_numeric, rounding_into_unit, row_examples)
from tpsviz.io.tables.header import prepared_frame
from tpsviz.io.tables.longform import per_run_constant, run_censoring
from tpsviz.io.tables.run_ids import step_numbers, trajectory_ids
from tpsviz.core.schema import REQUIRED, canonical_name, show_id
from tpsviz.io.tables import MISSING, format_of, read_table, table_columns

__all__ = ["MulticlassLog", "is_multiclass", "read_multiclass", "multiclass_from_frame",
           "SUM_TOLERANCE", "MAX_LABELS"]

#: a probability vector must sum to 1 within this
SUM_TOLERANCE = 1e-6
#: largest number of labels read (each label is a column per predictor and a score branch)
MAX_LABELS = 100
_QZ = "q_z__"


@dataclass
class MulticlassLog(RunLog):
    """A validated multi-class trajectory log, sorted and typed once.

    Attributes
    ----------
    steps : DataFrame
        One row per (run, step), sorted by run then step: ``trajectory_id``, ``step``, ``t``
        (1-based position in the run), ``traj`` (run code = row of ``trajectories``) and the
        forecast columns ``conf_<name>__<label>`` (float, NaN = missing forecast).
    trajectories : DataFrame
        One row per run, in code order: ``trajectory_id``, ``outcome`` (the label, None when
        censored), ``censored`` (bool), ``length`` (T, or the stopping step Z of a censored run)
        and, when the log gives them, ``q_z__<label>`` (the q vector of a censored run; NaN when
        not given).
    labels : list of str
        The k labels, in the order of their first appearance in the columns.
    predictors : list of str
    source : str
    notes : list of str
        Things the user should know (missing forecasts, ignored columns, …).
    """

    steps: pd.DataFrame
    trajectories: pd.DataFrame
    labels: list[str]
    predictors: list[str]
    source: str = "<memory>"
    notes: list[str] = field(default_factory=list)

    def column(self, name: str, label: str) -> str:
        """The steps column of predictor ``name`` and ``label``."""
        return f"conf_{name}__{label}"

    def forecasts(self, name: str) -> np.ndarray:
        """P_t of predictor ``name`` for every step row, shape (n_rows, k), labels in
        :attr:`labels` order; a row of NaN is a missing forecast."""
        if name not in self.predictors:
            raise ValueError(f"no predictor {show_id(name)} in this log (it has "
                             f"{', '.join(show_id(p) for p in self.predictors)})")
        return np.column_stack([self.steps[self.column(name, lab)].to_numpy(dtype=float)
                                for lab in self.labels])

    @property
    def outcome_index(self) -> np.ndarray:
        """Index of each run's label in :attr:`labels` (−1 for a censored run)."""
        pos = {lab: j for j, lab in enumerate(self.labels)}
        return np.array([-1 if o is None or o is np.nan or (isinstance(o, float) and np.isnan(o)) else pos[o]
                         for o in self.trajectories["outcome"]], dtype=np.int64)

    @property
    def has_q(self) -> bool:
        """True when the log has ``q_z__<label>`` columns."""
        return f"{_QZ}{self.labels[0]}" in self.trajectories

    def q_vectors(self) -> np.ndarray:
        """The q vector of every run, shape (n_runs, k); NaN rows where none is given (always
        for complete runs)."""
        n = len(self.trajectories)
        if not self.has_q:
            return np.full((n, len(self.labels)), np.nan)
        return np.column_stack([self.trajectories[f"{_QZ}{lab}"].to_numpy(dtype=float) for lab in self.labels])

    def censored_without_q(self) -> np.ndarray:
        """Which runs are censored and have no (complete) q vector: in exact censoring they are
        scored as a chosen label instead (:func:`tpsviz.outcomes.multiclass.tps_k`)."""
        return self.trajectories["censored"].to_numpy(dtype=bool) & np.isnan(self.q_vectors()).any(axis=1)



def read_multiclass(source, name: str | None = None, limits: Limits | None = None,
                    fmt: str | None = None) -> MulticlassLog:
    """Read and validate a multi-class log.

    Parameters
    ----------
    source : str, PathLike, bytes, (bytes, name), binary file-like or DataFrame
        The log. A path is opened read-only under the size limit (:func:`tpsviz.io.loading.read_source`).
    name : str, optional
        File name for the format (by extension) and in messages.
    limits : tpsviz.io.files.Limits, optional
        Largest file, rows and cells read (default :func:`tpsviz.io.files.limits_from_env`).
    fmt : {"csv", "tsv", "parquet", "jsonl"}, optional
        Force a format (default: by the name's extension).

    Returns
    -------
    MulticlassLog

    Raises
    ------
    LogFormatError
        For every defect, naming the file, rows or runs and columns.
    tpsviz.io.files.FileRefused
        For a path that is missing, not a regular file or too large.
    """
    if isinstance(source, pd.DataFrame):
        return multiclass_from_frame(source, name or "<memory>")
    limits = limits or limits_from_env()
    raw, name = read_source(source, name, limits)
    fmt = fmt or format_of(name, "a multi-class log")
    # labels are text: "01" stays "01", and a label column of digits is not read as numbers
    text = [c for c in table_columns(raw, name, fmt) if canonical_name(c) == "outcome"]
    df = read_table(raw, name, fmt, limits.max_rows, limits.max_cells, limits.max_bytes, text_columns=text,
                    max_nodes=limits.max_json_nodes)
    return multiclass_from_frame(df, name)


def _label_text(s: pd.Series) -> pd.Series:
    """Outcome labels as text (None where empty); a whole number read as a float is written as an
    integer (2.0 -> "2"), so numeric labels match their column names."""
    missing = is_missing(s).to_numpy()

    def text(v):
        if isinstance(v, (float, np.floating)) and np.isfinite(v) and float(v).is_integer():
            return str(int(v))
        return str(v).strip()

    out = [None if m else text(v) for v, m in zip(s.to_numpy(dtype=object), missing)]
    return pd.Series(out, index=s.index, dtype=object)


def _header(cols: list[str], source: str, notes: list[str]):
    """(predictor -> {label: column}, labels, q columns by label) or a LogFormatError."""
    problems = []
    missing_req = [c for c in REQUIRED if c not in cols]
    if missing_req:
        problems.append(f"missing required column{'s' if len(missing_req) > 1 else ''} "
                        f"{', '.join(repr(c) for c in missing_req)}")
    preds: dict[str, dict[str, str]] = {}
    labels: list[str] = []
    binary = []
    for c in cols:
        parts = split_conf(c)
        if parts is None:
            if c.startswith("conf_"):
                binary.append(c)
            continue
        name, label = parts
        preds.setdefault(name, {})[label] = c
        if label not in labels:
            labels.append(label)
    if not preds:
        problems.append("no multi-class forecast column: a multi-class log names one column "
                        "conf_<name>__<label> (double underscore) per predictor and label; for a binary "
                        "log (conf_<name> = probability of success) use `tpsviz score`")
        raise LogFormatError(source, problems)
    if binary:
        notes.append(f"column(s) {', '.join(show_id(c) for c in binary[:5])}"
                     f"{' and more' if len(binary) > 5 else ''} hold no label (conf_<name>__<label>); "
                     "they are not scored by TPS-k.")
    if len(labels) < 2:
        problems.append(f"only one label ({show_id(labels[0])}) among the conf_<name>__<label> columns; "
                        "a multi-class log needs at least two")
    if len(labels) > MAX_LABELS:
        problems.append(f"{len(labels)} labels, more than the {MAX_LABELS} tpsviz scores; merge labels")
    if len(preds) > MAX_PREDICTORS:
        problems.append(f"{len(preds)} predictors, more than the {MAX_PREDICTORS} tpsviz scores at once")
    for name, cols_of in preds.items():
        lacking = [lab for lab in labels if lab not in cols_of]
        if lacking:
            problems.append(f"predictor {show_id(name)} has no column for label(s) "
                            f"{', '.join(show_id(lab) for lab in lacking[:5])}"
                            f"{' and more' if len(lacking) > 5 else ''} that other predictors give; every "
                            "predictor needs one conf_<name>__<label> column per label")
    empty_like = [lab for lab in labels if lab.strip().lower() in MISSING]
    if empty_like:
        problems.append(f"label {show_id(empty_like[0])} reads as an empty value in the 'outcome' column "
                        "(censored); rename that label")
    qcols = {}
    for c in cols:
        if c.lower().startswith(_QZ):
            qcols[c[len(_QZ):]] = c
    if qcols:
        extra = [lab for lab in qcols if lab not in labels]
        lacking = [lab for lab in labels if lab not in qcols]
        if extra:
            problems.append(f"column(s) {', '.join(show_id(qcols[lab]) for lab in extra[:5])} name a label "
                            "no predictor gives")
        if lacking:
            problems.append(f"the q vector columns q_z__<label> lack label(s) "
                            f"{', '.join(show_id(lab) for lab in lacking[:5])}; give one column per label")
    if problems:
        raise LogFormatError(source, problems)
    return preds, labels, qcols


def _probability_block(df, columns: list[str], what: str, where, problems: list[str], notes: list[str]):
    """The columns as an (n, k) float matrix, with errors for non-numbers, values outside [0, 1],
    partly empty rows and rows not summing to 1."""
    mats = []
    for c in columns:
        num, bad = parse_numeric(df[c])
        if bad.any():
            problems.append(f"column {show_id(c)}: not a number at {row_examples(where[bad])}")
        num = rounding_into_unit(num, c, notes)
        out = num.notna() & (~np.isfinite(num) | (num < 0) | (num > 1))
        if out.any():
            problems.append(f"column {show_id(c)}: probabilities must be in [0, 1]; not so at "
                            f"{row_examples(where[out])}")
        mats.append(num.to_numpy(dtype=float))
    m = np.column_stack(mats)
    given = ~np.isnan(m)
    partly = given.any(axis=1) & ~given.all(axis=1)
    if partly.any():
        problems.append(f"{what}: the label columns are partly empty at {row_examples(where[pd.Series(partly)])}; "
                        "give every label's probability, or none (a missing forecast)")
    full = given.all(axis=1)
    with np.errstate(invalid="ignore"):
        off = full & ~(np.abs(m.sum(axis=1) - 1.0) <= SUM_TOLERANCE)
    if off.any():
        problems.append(f"{what}: the probabilities over the {len(columns)} labels must sum to 1 (within "
                        f"{SUM_TOLERANCE:g}); not so at {row_examples(where[pd.Series(off)])}")
    return m


def multiclass_from_frame(df: pd.DataFrame, source: str = "<memory>") -> MulticlassLog:
    """Validate a long multi-class frame into a :class:`MulticlassLog`.

    Parameters
    ----------
    df : DataFrame
        One row per (run, step); columns as in docs/multiclass.md. An optional ``_where`` column
        gives each row's location for messages (default "row N").
    source : str
        Name used in messages.

    Returns
    -------
    MulticlassLog

    Raises
    ------
    LogFormatError
    """
    notes: list[str] = list(df.attrs.get("notes", []))
    df, where = prepared_frame(df, source, notes)
    cols = [c for c in df.columns if c != "_where"]
    preds, labels, qcols = _header(cols, source, notes)
    problems: list[str] = []
    tid, tid_missing = trajectory_ids(df, where, notes, problems)
    step = step_numbers(df, tid, tid_missing, where, problems)
    outcome = _label_text(df["outcome"])
    if "censored" in cols:
        cens, cbad = parse_boolean(df["censored"])
        if cbad.any():
            problems.append(f"column 'censored' must be true/false or 1/0; not so at {row_examples(where[cbad])}")
    else:
        cens = pd.Series(np.nan, index=df.index)
    blocks = {name: _probability_block(df, [preds[name][lab] for lab in labels], f"predictor {show_id(name)}",
                                       where, problems, notes) for name in preds}
    q = (_probability_block(df, [qcols[lab] for lab in labels], "the q vector (q_z__<label>)", where,
                            problems, notes) if qcols else None)
    if problems:
        raise LogFormatError(source, problems)
    codes_unsorted, uniques = pd.factorize(tid, sort=True)
    order = np.lexsort((step.to_numpy(), codes_unsorted))
    codes = codes_unsorted[order]
    n = len(uniques)
    pos = {lab: float(j) for j, lab in enumerate(labels)}
    known = outcome.map(lambda v: v is None or v in pos).to_numpy(dtype=bool)
    if not known.all():
        bad_runs = np.zeros(n, dtype=bool)
        bad_runs[codes_unsorted[~known]] = True
        raise LogFormatError(source, [
            f"run {id_examples(uniques, bad_runs)}: 'outcome' is not one of the {len(labels)} labels of the "
            "conf_<name>__<label> columns (nor empty for a censored run)"])
    y_rows = pd.Series([np.nan if v is None else pos[v] for v in outcome], dtype=float)
    y_t, cens_t, q_t = _run_values(y_rows, cens, q, codes, order, uniques, source, notes)
    steps = pd.DataFrame({"trajectory_id": tid.to_numpy()[order],
                          "step": step.to_numpy()[order].astype(np.int64),
                          "traj": codes.astype(np.int64)})
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    lengths = np.diff(np.r_[starts, len(codes)])
    steps["t"] = np.arange(len(codes)) - np.repeat(starts, lengths) + 1
    steps = steps[["trajectory_id", "step", "t", "traj"]]
    for name in preds:
        m = blocks[name][order]
        for j, lab in enumerate(labels):
            steps[f"conf_{name}__{lab}"] = m[:, j]
        miss = int(np.isnan(m[:, 0]).sum())
        if miss == len(m):
            notes.append(f"predictor {name}: no forecast at all; it is listed but cannot be scored.")
        elif miss:
            notes.append(f"predictor {name}: {miss} step(s) have no forecast; they are left out of its "
                         "score (and counted).")
    traj = pd.DataFrame({
        "trajectory_id": np.asarray(uniques, dtype=object).astype(str),
        "outcome": pd.Series([None if np.isnan(v) else labels[int(v)] for v in y_t], dtype=object),
        "censored": cens_t,
        "length": lengths.astype(np.int64),
    })
    if q_t is not None:
        for j, lab in enumerate(labels):
            traj[f"{_QZ}{lab}"] = q_t[:, j]
    return MulticlassLog(steps.reset_index(drop=True), traj, list(labels), list(preds), source, notes)


def _run_values(y_rows, cens, q, codes, order, uniques, source, notes):
    """Per run: outcome index (NaN when censored), censored, and the q matrix (None without q columns)."""
    n = len(uniques)
    problems: list[str] = []

    def per_run(values: np.ndarray):
        return per_run_constant(pd.Series(values[order]), codes, n)

    y_t, c_t, q_t = None, None, None
    for label, values in (("'outcome'", y_rows.to_numpy()), ("'censored'", cens.to_numpy(dtype=float))):
        vals, conflict = per_run(values)
        if conflict.any():
            problems.append(f"column {label} changes within run {id_examples(uniques, conflict)}; it must be the "
                            "same on every row of a run")
        y_t, c_t = (vals, c_t) if y_t is None else (y_t, vals)
    if q is not None:
        pairs = [per_run(q[:, j]) for j in range(q.shape[1])]
        q_t = np.column_stack([v for v, _ in pairs])
        conflict = np.any([c for _, c in pairs], axis=0)
        if conflict.any():
            problems.append(f"the q vector (q_z__<label> columns) changes within run {id_examples(uniques, conflict)}; "
                            "it must be the same on every row of a run")
    if problems:
        raise LogFormatError(source, problems)
    censored = run_censoring(np.isnan(y_rows.to_numpy()[order]), y_t, c_t, codes, uniques, notes, problems, "run",
                             "give its label or mark it censored")
    if problems:
        raise LogFormatError(source, problems)
    if q_t is not None:
        on_complete = ~censored & ~np.isnan(q_t).all(axis=1)
        if on_complete.any():
            notes.append(f"{int(on_complete.sum())} complete run(s) carry a q vector; q is only used for "
                         "censored runs, so it was ignored there.")
            q_t[~censored] = np.nan
    return y_t, censored.astype(bool), q_t
