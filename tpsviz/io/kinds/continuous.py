"""Reading logs whose outcome is a number (docs/continuous.md): :class:`ContinuousLog`.

A long table, one row per (run, step): ``trajectory_id``, ``step``, ``outcome`` (a number, the
same on every row of a run; empty for a censored run), optional ``censored``, and per predictor
``<name>`` one of three forms of a predictive distribution of the outcome:

``gaussian``  ``mu_<name>`` and ``sigma_<name>`` (σ > 0): N(μ, σ²);
``quantile``  ``q<level>_<name>`` for at least 2 levels in (0, 1), non-decreasing in the level;
``ensemble``  ``samples_<name>``: a list of at least 2 finite numbers (a JSON array text in CSV,
              a list in JSON Lines and Parquet), at most :data:`MAX_MEMBERS`.

A row where all of a predictor's fields are empty is a missing forecast (skipped, counted).
Bytes are read with :func:`tpsviz.io.loading.read_source` and parsed with
:func:`tpsviz.io.tables.read_table`, so the size, row and cell limits apply. Messages name the
file, rows and columns, never a value of the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tpsviz.core.data import RunLog
from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import Limits, limits_from_env
from tpsviz.io.kinds.continuous_forms import (
    FORM_READERS, FORMS, INTERNAL, MAX_MEMBERS, MAX_VALUE, levels_of, out_of_range,
    predictor_columns)
from tpsviz.io.kinds import SAMPLES_PATTERN, is_continuous
from tpsviz.io.tables.cells import id_examples, parse_boolean, parse_numeric, row_examples
from tpsviz.io.tables.header import prepared_frame
from tpsviz.io.tables.longform import per_run_constant, run_censoring
from tpsviz.io.tables.run_ids import code_runs, step_numbers, trajectory_ids
from tpsviz.core.schema import show_id
from tpsviz.io.tables import format_of, read_table
from tpsviz.io.loading import read_source
import io
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["ContinuousLog", "is_continuous", "read_continuous", "continuous_from_frame", "MAX_MEMBERS",
           "FORMS"]

@dataclass
class ContinuousLog(RunLog):
    """A validated log whose outcome is a number.

    Attributes
    ----------
    steps : DataFrame
        One row per (run, step), sorted by run then step: ``trajectory_id``, ``step``, ``t``
        (1-based position in the run), ``traj`` (run code = row of ``trajectories``), every
        predictor's columns as named in the file (numbers as float, NaN = missing; a
        ``samples_<name>`` column holds a float array per row, or None when missing) and other
        columns as metadata.
    trajectories : DataFrame
        One row per run, in code order: ``trajectory_id``, ``outcome`` (float, NaN when
        censored), ``censored`` (bool), ``length`` (observed number of steps).
    predictors : dict
        Name → form: ``"gaussian"``, ``"quantile"`` or ``"ensemble"``.
    levels : dict
        Name → quantile levels, increasing (quantile predictors only).
    source : str
    notes : list of str
        What the user should know (missing forecasts, columns ignored, …).
    columns : dict
        Name → its columns in ``steps``: [mu, sigma]; the quantile columns in level order;
        [samples].
    """

    steps: pd.DataFrame
    trajectories: pd.DataFrame
    predictors: dict[str, str]
    levels: dict[str, list[float]]
    source: str = "<memory>"
    notes: list[str] = field(default_factory=list)
    columns: dict[str, list[str]] = field(default_factory=dict)

    def form(self, name: str) -> str:
        """The form of predictor ``name`` (ValueError naming the predictors when unknown)."""
        if name not in self.predictors:
            have = ", ".join(show_id(n) for n in self.predictors)
            raise ValueError(f"no predictor {show_id(name)} in this log (it has {have})")
        return self.predictors[name]

    def row_outcome(self) -> np.ndarray:
        """The run's outcome on every step row (NaN for censored runs)."""
        y = self.trajectories["outcome"].to_numpy(dtype=float)
        return y[self.steps["traj"].to_numpy()]

    def present(self, name: str) -> np.ndarray:
        """Step rows where predictor ``name`` gives a forecast."""
        form = self.form(name)
        col = self.steps[self.columns[name][0]]
        if form == "ensemble":
            return col.map(lambda a: a is not None).to_numpy(dtype=bool)
        return ~np.isnan(col.to_numpy(dtype=float))

    def gaussian(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(μ, σ) of every step row (NaN where missing) of a Gaussian predictor."""
        self._expect(name, "gaussian")
        mu, sigma = self.columns[name]
        return self.steps[mu].to_numpy(dtype=float), self.steps[sigma].to_numpy(dtype=float)

    def quantiles(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(levels τ_1 < … < τ_m, values: rows × m, NaN where missing) of a quantile predictor."""
        self._expect(name, "quantile")
        return (np.asarray(self.levels[name], dtype=float),
                self.steps[self.columns[name]].to_numpy(dtype=float))

    def samples(self, name: str) -> np.ndarray:
        """The members of every step row (object array of float arrays; None where missing)."""
        self._expect(name, "ensemble")
        return self.steps[self.columns[name][0]].to_numpy(dtype=object)

    def _expect(self, name: str, form: str) -> None:
        if self.form(name) != form:
            raise ValueError(f"predictor {show_id(name)} is of form {self.predictors[name]}, not {form}")


# ----------------------------------------------------------------------------------------- reading

def read_continuous(source, name: str | None = None, limits: Limits | None = None) -> ContinuousLog:
    """Read and validate a continuous-outcome log.

    Parameters
    ----------
    source : str, PathLike, bytes, binary file object or DataFrame
        The log (CSV, TSV, Parquet or JSON Lines; the format from the name's extension). A
        DataFrame is validated as it is (:func:`continuous_from_frame`).
    name : str, optional
        File name for the format and messages (needed for bytes and file objects).
    limits : tpsviz.io.files.Limits, optional
        Size, row and cell limits (default :func:`tpsviz.io.files.limits_from_env`).

    Returns
    -------
    ContinuousLog

    Raises
    ------
    LogFormatError
        For every defect, naming the file, rows or runs and columns.
    tpsviz.io.files.FileRefused
        (an ``OSError``) for a path that is missing, not a regular file or too large.
    """
    if isinstance(source, pd.DataFrame):
        return continuous_from_frame(source, name or "<memory>")

    limits = limits or limits_from_env()
    raw, name = read_source(source, name, limits)
    fmt = format_of(name, "a continuous-outcome log", raw)
    df = read_table(raw, name, fmt, limits.max_rows, limits.max_cells, limits.max_bytes,
                    max_nodes=limits.max_json_nodes)
    if fmt == "parquet":
        df = _parquet_samples(raw, name, df)
    del raw
    return continuous_from_frame(df, name)


def _parquet_samples(raw: bytes, name: str, df: pd.DataFrame) -> pd.DataFrame:
    """Add the ``samples_<name>`` list columns that :func:`tpsviz.io.tables.read_table` leaves out of
    a Parquet file (it drops every nested column). ``read_table`` has already checked the file's
    decoded size against the limit; the member count per row is checked before decoding."""


    pf = pq.ParquetFile(io.BytesIO(raw))
    nested = [f for f in pf.schema_arrow if pa.types.is_nested(f.type)]
    lists = [f.name for f in nested if SAMPLES_PATTERN.fullmatch(f.name.strip())
             and (pa.types.is_list(f.type) or pa.types.is_large_list(f.type))]
    if not nested:
        return df
    notes = [n for n in df.attrs.get("notes", []) if "of nested type" not in n]
    other = [f.name for f in nested if f.name not in lists]
    if other:
        notes.append(f"{len(other)} column(s) of nested type other than samples_<name> lists were left out: "
                     + ", ".join(show_id(c) for c in other[:5]))
    problems = []
    for col in lists:
        arr = pf.read(columns=[col]).column(col)
        n = pc.list_value_length(arr)
        big = np.asarray(pc.fill_null(pc.greater(n, MAX_MEMBERS), False))
        if big.any():
            where = pd.Series([f"row {i + 1}" for i in np.flatnonzero(big)])
            problems.append(f"column {show_id(col.strip())}: more than {MAX_MEMBERS:,} members at "
                            f"{row_examples(where)}; thin the ensemble")
            continue
        df[col.strip()] = pd.Series(arr.to_pandas(), dtype=object).to_numpy()
    if problems:
        raise LogFormatError(name, problems)
    df.attrs["notes"] = notes
    return df


def continuous_from_frame(df: pd.DataFrame, source: str = "<memory>") -> ContinuousLog:
    """Validate a long frame (one row per (run, step)) into a :class:`ContinuousLog`.

    Parameters
    ----------
    df : DataFrame
        Columns as in docs/continuous.md; values as read from a file (text) or typed. An
        optional ``_where`` column gives each row's location for messages (default "row N").
    source : str
        Name used in messages.

    Returns
    -------
    ContinuousLog

    Raises
    ------
    LogFormatError
        Naming rows, runs and columns, never cell values.
    """
    notes: list[str] = list(df.attrs.get("notes", []))
    df, where = prepared_frame(df, source, notes)
    cols = [c for c in df.columns if c != "_where"]
    spec, meta = predictor_columns(cols, source, notes)
    problems: list[str] = []
    tid, tid_missing = trajectory_ids(df, where, notes, problems)
    step = step_numbers(df, tid, tid_missing, where, problems)
    outcome, out_bad = parse_numeric(df["outcome"])
    out_bad = out_bad | out_of_range(outcome)
    if out_bad.any():
        problems.append(f"column 'outcome' must be a number (the run's final reward or cost, within ±{MAX_VALUE:.0e}) "
                        f"or empty (censored); not so at {row_examples(where[out_bad])}")
    cens = pd.Series(np.nan, index=df.index)
    if "censored" in cols:
        cens, cbad = parse_boolean(df["censored"])
        if cbad.any():
            problems.append(f"column 'censored' must be true/false or 1/0; not so at {row_examples(where[cbad])}")
    values: dict[str, pd.Series] = {}
    for name, (form, columns) in spec.items():
        values.update(FORM_READERS[form](df, name, columns, where, problems))
    if problems:
        raise LogFormatError(source, problems)
    codes, uniques, order = code_runs(tid, step)
    outcome_t, censored = _run_labels(outcome, cens, codes, uniques, order, notes, source)
    steps = pd.DataFrame({"trajectory_id": tid.to_numpy()[order],
                          "step": step.to_numpy()[order].astype(np.int64),
                          "traj": codes.astype(np.int64)})
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    lengths = np.diff(np.r_[starts, len(codes)])
    steps["t"] = np.arange(len(codes)) - np.repeat(starts, lengths) + 1
    steps = steps[["trajectory_id", "step", "t", "traj"]]
    if (steps["step"].to_numpy() != steps["t"].to_numpy()).any():
        notes.append("some runs have steps not numbered 1, 2, …, T; steps keep their order and the weight "
                     "schedules use each row's position t = 1 … T in its run.")
    extra = {}
    for name, (form, columns) in spec.items():
        for c in columns:
            v = values[c]
            extra[c] = v.to_numpy(dtype=object)[order] if form == "ensemble" else v.to_numpy(dtype=float)[order]
    for c in meta:
        target = f"{c}_log" if c in INTERNAL else c
        extra[target] = df[c].to_numpy()[order]
    steps = pd.concat([steps, pd.DataFrame(extra, index=steps.index)], axis=1) if extra else steps
    traj = pd.DataFrame({"trajectory_id": np.asarray(uniques, dtype=object).astype(str),
                         "outcome": outcome_t, "censored": censored.astype(bool),
                         "length": lengths.astype(np.int64)})
    log = ContinuousLog(steps, traj, {n: f for n, (f, _) in spec.items()},
                        {n: [lv for lv, _ in levels_of(c)] for n, (f, c) in spec.items() if f == "quantile"},
                        source, notes, {n: list(c) for n, (_, c) in spec.items()})
    for name in log.predictors:
        present = log.present(name)
        if not present.any():
            notes.append(f"predictor {show_id(name)}: no row gives a forecast; it cannot be scored.")
        elif not present.all():
            notes.append(f"predictor {show_id(name)}: {int((~present).sum()):,} step row(s) have no forecast; "
                         "they are left out of its score (and counted).")
    return log


def _run_labels(outcome, cens, codes, uniques, order, notes: list[str], source: str):
    """Per run: the outcome (NaN when censored) and whether it was censored."""
    n = len(uniques)
    problems = []
    out_sorted = outcome.iloc[order].reset_index(drop=True)
    outcome_t, conflict = per_run_constant(out_sorted, codes, n)
    if conflict.any():
        problems.append(f"column 'outcome' changes within trajectory {id_examples(uniques, conflict)}; it must be "
                        "constant within a run")
    cens_t, cconf = per_run_constant(cens.iloc[order].reset_index(drop=True), codes, n)
    if cconf.any():
        problems.append(f"column 'censored' changes within trajectory {id_examples(uniques, cconf)}; it must be "
                        "constant within a run")
    if problems:
        raise LogFormatError(source, problems)
    censored = run_censoring(out_sorted.isna().to_numpy(), outcome_t, cens_t, codes, uniques, notes, problems,
                             "trajectory", "give the outcome or mark the run censored")
    if problems:
        raise LogFormatError(source, problems)
    return outcome_t, censored


ENSEMBLE_CHUNK = 1 << 21  # ensemble members handled per batch (rows × m): bounds the working memory


def ensemble_batches(members, rows: np.ndarray):
    """Batches of step rows whose ensembles have the same size m, as (rows, members array rows × m)
    with at most :data:`ENSEMBLE_CHUNK` members per batch (for the CRPS and the PIT of samples)."""
    sizes = np.fromiter((members[i].size for i in rows), dtype=np.int64, count=rows.size)
    for m in np.unique(sizes):
        same = rows[sizes == m]
        step = max(1, ENSEMBLE_CHUNK // int(m))
        for k in range(0, same.size, step):
            part = same[k:k + step]
            yield part, np.stack([members[i] for i in part])
