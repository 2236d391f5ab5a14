"""Reading and validating trajectory logs (DESIGN §3).

Formats: long CSV/TSV, Parquet, JSON Lines (one object per (trajectory, step) row), and nested
JSON Lines (one trajectory per line with a ``steps`` list). The user's file is only ever read.
Every defect raises :class:`LogFormatError` naming the file, the row (line) or trajectory and
the column; problems of one load are collected and reported together.
"""

from __future__ import annotations

import io as _io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["TrajectoryData", "LogFormatError", "load", "from_frame", "FORMATS"]

REQUIRED = ("trajectory_id", "step", "outcome")
RESERVED = ("trajectory_id", "step", "outcome", "censored", "q_z", "weight")
PREFIXES = {"conf_": "conf", "raw_": "raw", "unc_": "unc"}
FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
           ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
_MISSING = {"", "na", "n/a", "nan", "null", "none"}
_TRUE = {"1", "1.0", "true", "t", "yes", "y"}
_FALSE = {"0", "0.0", "false", "f", "no", "n"}
_MAX_EXAMPLES = 3


class LogFormatError(ValueError):
    """A trajectory log that cannot be used, with every problem found.

    Attributes
    ----------
    source : str
        The file name (or a description of the in-memory source).
    problems : list of str
        One sentence per defect, each naming the row/trajectory and column.
    """

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = list(problems)
        head = f"{source}: " + ("cannot be used" if len(problems) > 1 else "")
        if len(problems) == 1:
            msg = f"{source}: {problems[0]}"
        else:
            msg = head + f" ({len(problems)} problems):\n" + "\n".join(f"- {p}" for p in problems)
        super().__init__(msg)


@dataclass
class TrajectoryData:
    """A validated trajectory log, sorted and typed once.

    Attributes
    ----------
    steps : DataFrame
        One row per (trajectory, step), sorted by trajectory then step. Columns:
        ``trajectory_id`` (str), ``step`` (int), ``t`` (1-based position within the run),
        ``traj`` (int code = row of ``trajectories``), ``conf_<name>`` (float in [0, 1], NaN
        = missing forecast), ``raw_<name>`` / ``unc_<name>`` (float), ``weight`` if given,
        and step-level metadata.
    trajectories : DataFrame
        One row per trajectory, in code order. Columns: ``trajectory_id``, ``outcome``
        (1.0 / 0.0 / NaN), ``censored`` (bool), ``q_z`` (float, NaN = not given),
        ``length`` (observed number of steps T, or the stopping step count Z),
        ``last_step`` and trajectory-level metadata.
    predictors : list of str
        Names of the ``conf_<name>`` predictors.
    signals : dict
        ``{"raw_<name>": +1, "unc_<name>": -1}``: non-probability signals and their direction.
    source : str
        Where the data came from.
    notes : list of str
        Things the user should know (missing forecasts, filled outcomes, ignored q_z, …).
    """

    steps: pd.DataFrame
    trajectories: pd.DataFrame
    predictors: list[str]
    signals: dict[str, int] = field(default_factory=dict)
    source: str = "<memory>"
    notes: list[str] = field(default_factory=list)

    @property
    def trajectory_ids(self) -> pd.Categorical:
        """Trajectory ids in code order, as a categorical (cheap to select from; cached)."""
        cached = self.__dict__.get("_ids")
        if cached is None or len(cached) != len(self.trajectories):
            ids = self.trajectories["trajectory_id"]
            cached = pd.Categorical.from_codes(np.arange(len(ids)), categories=pd.Index(ids))
            self.__dict__["_ids"] = cached
        return cached

    @property
    def row_outcome(self) -> np.ndarray:
        """The run's outcome Y (1.0 / 0.0 / NaN if censored) for every step row (cached)."""
        cached = self.__dict__.get("_row_outcome")
        if cached is None or cached.shape[0] != len(self.steps):
            cached = self.trajectories["outcome"].to_numpy(dtype=float)[
                self.steps["traj"].to_numpy()]
            cached.setflags(write=False)
            self.__dict__["_row_outcome"] = cached
        return cached

    @property
    def n_trajectories(self) -> int:
        """Number of trajectories."""
        return len(self.trajectories)

    @property
    def n_steps(self) -> int:
        """Number of (trajectory, step) rows."""
        return len(self.steps)

    @property
    def n_censored(self) -> int:
        """Number of censored trajectories."""
        return int(self.trajectories["censored"].sum())

    @property
    def metadata_columns(self) -> list[str]:
        """Trajectory-level metadata columns (for filters and grouping)."""
        fixed = {"trajectory_id", "outcome", "censored", "q_z", "length", "last_step"}
        return [c for c in self.trajectories.columns if c not in fixed]

    def forecasts(self, name: str) -> np.ndarray:
        """F_t of predictor ``name`` for every step row (NaN where missing)."""
        return self.steps[f"conf_{name}"].to_numpy(dtype=float)

    def with_predictor(self, name: str, values: np.ndarray, note: str | None = None) -> "TrajectoryData":
        """A copy with one more predictor ``conf_<name>`` (e.g. a recalibrated one)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (self.n_steps,):
            raise ValueError(f"predictor {name!r} needs one value per step row ({self.n_steps})")
        if np.any((values < 0) | (values > 1)):
            raise ValueError(f"predictor {name!r} has values outside [0, 1]")
        steps = self.steps.copy(deep=False)  # copy-on-write: the original frame is not touched
        steps[f"conf_{name}"] = values
        preds = self.predictors + ([name] if name not in self.predictors else [])
        notes = self.notes + ([note] if note else [])
        return TrajectoryData(steps, self.trajectories, preds, dict(self.signals), self.source, notes)

    def subset(self, keep: np.ndarray) -> "TrajectoryData":
        """A copy restricted to the trajectories where the boolean array ``keep`` is True."""
        keep = np.asarray(keep, dtype=bool)
        if keep.all():
            return self
        trajs = self.trajectories[keep].reset_index(drop=True)
        new_code = np.full(len(keep), -1)
        new_code[keep] = np.arange(int(keep.sum()))
        rows = keep[self.steps["traj"].to_numpy()]
        steps = self.steps[rows].reset_index(drop=True)
        steps["traj"] = new_code[steps["traj"].to_numpy()]
        return TrajectoryData(steps, trajs, list(self.predictors), dict(self.signals), self.source,
                              list(self.notes))


# ---------------------------------------------------------------------------------------------
# reading files into a raw long frame (values as read; a "_where" column locates each row)


def _decode(raw: bytes, name: str) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise LogFormatError(name, ["the file is UTF-16 encoded; save it as UTF-8 and load it again"])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise LogFormatError(
            name,
            [f"line {line}: the file is not valid UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
             f"{exc.start}); save it as UTF-8 and load it again"],
        ) from None


def _sniff_binary(raw: bytes, name: str, claimed: str) -> None:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        _decode(raw, name)  # raises the UTF-16 message
    if raw[:4] == b"PAR1":
        raise LogFormatError(name, [f"the file is named as {claimed} but its content is Parquet; "
                                    "rename it to .parquet"])
    if b"\x00" in raw[:4096]:
        raise LogFormatError(name, [f"the file is named as {claimed} but contains binary data, "
                                    "not text"])


def _read_delimited(raw: bytes, name: str, sep: str) -> pd.DataFrame:
    _sniff_binary(raw, name, "CSV" if sep == "," else "TSV")
    text = _decode(raw, name)
    if not text.strip():
        raise LogFormatError(name, ["the file is empty"])
    first = text.lstrip()[:65536].split("\n", 1)[0].rstrip("\r")
    if first.startswith(("{", "[")):
        raise LogFormatError(name, ["the file is named as CSV but looks like JSON; rename it to "
                                    ".jsonl (one JSON object per line)"])
    try:
        header = [h.strip() for h in first.split(sep)]
        text_cols = {h: str for h in header if h == "trajectory_id"}
        df = pd.read_csv(_io.StringIO(text), sep=sep, dtype=text_cols, keep_default_na=False,
                         na_values=sorted(_MISSING | {m.upper() for m in _MISSING}
                                          | {m.title() for m in _MISSING}),
                         skipinitialspace=True)
    except pd.errors.ParserError as exc:
        raise LogFormatError(name, [f"not a well-formed {'CSV' if sep == ',' else 'TSV'} file: "
                                    f"{exc}".strip()]) from None
    df.columns = [str(c).strip() for c in df.columns]
    df["_where"] = np.arange(2, len(df) + 2)
    df.attrs["where_prefix"] = "line"
    return df


def _read_parquet(raw: bytes, name: str) -> pd.DataFrame:
    if raw[:4] != b"PAR1":
        hint = ""
        try:
            head = raw[:200].decode("utf-8")
            if head.lstrip().startswith("{"):
                hint = " (it looks like JSON Lines: rename it to .jsonl)"
            elif "," in head:
                hint = " (it looks like CSV text: rename it to .csv)"
        except UnicodeDecodeError:
            pass
        if not raw:
            raise LogFormatError(name, ["the file is empty"])
        raise LogFormatError(name, [f"the file is named as Parquet but is not a Parquet file{hint}"])
    try:
        df = pd.read_parquet(_io.BytesIO(raw))
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise LogFormatError(name, [f"the Parquet file cannot be read: {exc}"]) from None
    df.columns = [str(c).strip() for c in df.columns]
    df = df.reset_index(drop=True)
    df["_where"] = np.arange(1, len(df) + 1)
    df.attrs["where_prefix"] = "row"
    return df


def _flatten_nested(records: list[tuple[int, dict]], name: str) -> pd.DataFrame:
    problems: list[str] = []
    rows: list[dict] = []
    seen: dict[str, int] = {}
    for line, rec in records:
        tid = rec.get("trajectory_id")
        where = f"line {line}"
        if tid is None or str(tid).strip() == "":
            problems.append(f"{where}: the trajectory has no 'trajectory_id'")
            continue
        tid = str(tid)
        if tid in seen:
            problems.append(f"{where}: trajectory '{tid}' already appeared on line {seen[tid]}")
            continue
        seen[tid] = line
        steps = rec.get("steps")
        if not isinstance(steps, list):
            problems.append(f"{where} (trajectory '{tid}'): 'steps' must be a list of step objects")
            continue
        top = {k: v for k, v in rec.items() if k != "steps"}
        for j, st in enumerate(steps, start=1):
            swhere = f"{where}, step entry {j} (trajectory '{tid}')"
            if not isinstance(st, dict):
                problems.append(f"{swhere}: each step must be a JSON object")
                continue
            row = dict(top)
            bad = False
            for key, val in st.items():
                if key in PREFIXES.values() or key in ("conf", "raw", "unc"):
                    if not isinstance(val, dict):
                        problems.append(f"{swhere}: '{key}' must be an object of name: value")
                        bad = True
                        continue
                    for pname, pval in val.items():
                        row[f"{key}_{pname}"] = pval
                elif key in ("outcome", "censored", "q_z", "trajectory_id"):
                    if key in top and top[key] != val:
                        problems.append(f"{swhere}: '{key}' = {val!r} contradicts the trajectory's "
                                        f"value {top[key]!r}")
                        bad = True
                    row[key] = val
                else:
                    row[key] = val
            if bad:
                continue
            row["_where"] = f"{where}, step entry {j}"
            rows.append(row)
    if problems:
        raise LogFormatError(name, problems[:20] + ([f"… and {len(problems) - 20} more"]
                                                    if len(problems) > 20 else []))
    return pd.DataFrame(rows)


def _read_jsonl(raw: bytes, name: str) -> pd.DataFrame:
    _sniff_binary(raw, name, "JSON Lines")
    text = _decode(raw, name)
    if not text.strip():
        raise LogFormatError(name, ["the file is empty"])
    records: list[tuple[int, dict]] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            hint = ""
            if i == 1 and "," in line and not line.lstrip().startswith(("{", "[")):
                hint = " (the file looks like CSV: rename it to .csv)"
            raise LogFormatError(name, [f"line {i}: not valid JSON ({exc.msg}){hint}"]) from None
        if not isinstance(obj, dict):
            raise LogFormatError(name, [f"line {i}: each line must be one JSON object, got "
                                        f"{type(obj).__name__}"])
        records.append((i, obj))
    nested = ["steps" in r for _, r in records]
    if any(nested):
        if not all(nested):
            first_flat = next(line for (line, _), n in zip(records, nested) if not n)
            raise LogFormatError(name, [
                f"line {first_flat}: inconsistent records: some lines are nested trajectories "
                "(with a 'steps' list) and others are flat step rows; use one layout per file"])
        return _flatten_nested(records, name)
    df = pd.DataFrame([r for _, r in records])
    df["_where"] = np.array([line for line, _ in records])
    df.attrs["where_prefix"] = "line"
    return df


def _read_raw(raw: bytes, name: str, fmt: str | None) -> pd.DataFrame:
    if fmt is None:
        ext = Path(name).suffix.lower()
        fmt = FORMATS.get(ext)
        if fmt is None:
            raise LogFormatError(name, [f"unknown file type '{ext or '(none)'}'; use .csv, .tsv, "
                                        ".parquet or .jsonl"])
    if len(raw) == 0:
        raise LogFormatError(name, ["the file is empty"])
    if fmt in ("csv", "tsv"):
        return _read_delimited(raw, name, "," if fmt == "csv" else "\t")
    if fmt == "parquet":
        return _read_parquet(raw, name)
    if fmt == "jsonl":
        return _read_jsonl(raw, name)
    raise ValueError(f"unknown format {fmt!r}")


def load(source, name: str | None = None, fmt: str | None = None) -> TrajectoryData:
    """Read and validate a trajectory log.

    Parameters
    ----------
    source : str, PathLike, bytes or binary file-like
        The log. A path is opened read-only; bytes / file objects need ``name``.
    name : str, optional
        File name used for the format (by extension) and in messages.
    fmt : {"csv", "tsv", "parquet", "jsonl"}, optional
        Override the format implied by the name.

    Returns
    -------
    TrajectoryData

    Raises
    ------
    LogFormatError
        For every defect, naming the file, row or trajectory and column.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = name or path.name
        if not path.exists():
            raise LogFormatError(name, [f"no such file: {path}"])
        if path.is_dir():
            raise LogFormatError(name, [f"{path} is a folder, not a file"])
        raw = path.read_bytes()
    elif isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
        name = name or "<upload>"
    else:
        raw = source.read()
        name = name or getattr(source, "name", "<upload>")
    df = _read_raw(raw, str(name), fmt)
    return from_frame(df, source=str(name))


# ---------------------------------------------------------------------------------------------
# validation of the long frame


class _Locations:
    """Row locations kept as integers and formatted as "line 12" / "row 12" only on demand."""

    def __init__(self, numbers: pd.Series, prefix: str):
        self.numbers = numbers
        self.prefix = prefix

    def __getitem__(self, mask) -> pd.Series:
        return (self.prefix + " " + self.numbers[mask].astype(str)).rename("_where")

    @property
    def iloc(self):
        return _LocIloc(self)


class _LocIloc:
    def __init__(self, loc: _Locations):
        self.loc = loc

    def __getitem__(self, idx):
        return self.loc.prefix + " " + self.loc.numbers.iloc[idx].astype(str)


def _show(v) -> str:
    """A value from the file as the user would recognise it, quoted."""
    if isinstance(v, (bool, np.bool_)):
        return repr(str(bool(v)).lower())
    if isinstance(v, (int, float, np.integer, np.floating)):
        return repr(f"{float(v):g}")
    return repr(str(v))


def _examples(where: pd.Series, values: pd.Series | None = None) -> str:
    items = []
    for i, w in enumerate(where.iloc[:_MAX_EXAMPLES]):
        items.append(f"{w}" + (f" ({_show(values.iloc[i])})" if values is not None else ""))
    more = f" and {len(where) - _MAX_EXAMPLES} more" if len(where) > _MAX_EXAMPLES else ""
    return ", ".join(items) + more


def _text(s: pd.Series) -> pd.Series:
    return s.astype("string").str.strip()


def _is_missing(s: pd.Series) -> pd.Series:
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return s.isna()
    return (s.isna() | _text(s).str.lower().isin(_MISSING)).fillna(True).astype(bool)


def _numeric(s: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Values as float (NaN where missing) and a mask of present values that are not numbers."""
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        return s.astype(float), pd.Series(False, index=s.index)
    missing = _is_missing(s)
    is_bool = s.map(type).eq(bool)  # JSON true/false is not a number
    num = pd.to_numeric(_text(s).where(~missing & ~is_bool), errors="coerce").astype(float)
    bad = (num.isna() & ~missing) | is_bool
    return num.where(~missing & ~is_bool, np.nan), bad


def _boolean(s: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Parse true/false/1/0 (any case); returns (values as float 1/0/NaN, bad mask)."""
    if pd.api.types.is_bool_dtype(s):
        return s.astype(float), pd.Series(False, index=s.index)
    missing = _is_missing(s)
    txt = _text(s).str.lower()
    val = pd.Series(np.nan, index=s.index)
    val[txt.isin(_TRUE).fillna(False).astype(bool)] = 1.0
    val[txt.isin(_FALSE).fillna(False).astype(bool)] = 0.0
    bad = val.isna() & ~missing
    return val, bad


def _per_traj_constant(values: pd.Series, codes: np.ndarray, n: int):
    """First present value per trajectory, and which trajectories have conflicting values."""
    present = values.notna().to_numpy()
    first = pd.Series(values.to_numpy()[present]).groupby(codes[present]).agg(["min", "max"])
    out = np.full(n, np.nan)
    conflict = np.zeros(n, dtype=bool)
    out[first.index.to_numpy()] = first["min"].to_numpy()
    conflict[first.index.to_numpy()] = (first["min"] != first["max"]).to_numpy()
    return out, conflict


def from_frame(df: pd.DataFrame, source: str = "<frame>") -> TrajectoryData:
    """Validate a long-format frame (one row per (trajectory, step)) into a :class:`TrajectoryData`.

    Parameters
    ----------
    df : DataFrame
        Columns as in DESIGN §3. Values may be strings (as read from CSV) or typed. An optional
        ``_where`` column gives each row's location for messages (default "row N").
    source : str
        Name used in messages.

    Returns
    -------
    TrajectoryData

    Raises
    ------
    LogFormatError
    """
    prefix = df.attrs.get("where_prefix", "row")
    df = df.copy()
    if "_where" not in df.columns:
        df["_where"] = np.arange(1, len(df) + 1)
    df = df.reset_index(drop=True)
    where = df["_where"]
    if pd.api.types.is_integer_dtype(where):
        where = _Locations(where, prefix)
    problems: list[str] = []
    cols = [c for c in df.columns if c != "_where"]
    if len(df) == 0:
        raise LogFormatError(source, ["the file has a header but no data rows" if cols else
                                      "the file is empty"])
    missing_req = [c for c in REQUIRED if c not in cols]
    if missing_req:
        problems.append(
            f"missing required column{'s' if len(missing_req) > 1 else ''} "
            f"{', '.join(repr(c) for c in missing_req)} (found: {', '.join(cols[:12])})")
    conf_cols = [c for c in cols if c.startswith("conf_")]
    sig_cols = [c for c in cols if c.startswith(("raw_", "unc_"))]
    bad_names = [c for c in conf_cols + sig_cols if c.split("_", 1)[1] == ""]
    if bad_names:
        problems.append(f"column {bad_names[0]!r} has no predictor name after the prefix")
    if not conf_cols:
        extra = (" (raw_/unc_ signals were found: recalibrate them into probabilities first)"
                 if sig_cols else "")
        problems.append("no predictor column: at least one column named conf_<name> holding "
                        f"probabilities of success is required{extra}")
    if problems:
        raise LogFormatError(source, problems)

    # trajectory ids
    tid_missing = _is_missing(df["trajectory_id"])
    if tid_missing.any():
        problems.append(f"column 'trajectory_id': empty at {_examples(where[tid_missing])}")
    tid = df["trajectory_id"].astype(str).str.strip()

    # steps
    step, step_bad = _numeric(df["step"])
    step_missing = step.isna() & ~step_bad
    non_int = step.notna() & ((step != np.floor(step)) | (step < 0))
    if step_bad.any() or non_int.any() or step_missing.any():
        m = step_bad | non_int | step_missing
        problems.append("column 'step': every row needs an integer step >= 0; not so at "
                        f"{_examples(where[m], df['step'][m])}")
    else:
        key = pd.DataFrame({"t": tid, "s": step})
        dup = key.duplicated(keep=False) & ~tid_missing
        if dup.any():
            problems.append("duplicate (trajectory_id, step): "
                            + _examples(where[dup], tid[dup] + " step " + step[dup].astype(int).astype(str)))

    # outcomes
    outcome, out_bad = _numeric(df["outcome"])
    if pd.api.types.is_bool_dtype(df["outcome"]) is False and out_bad.any():
        # accept true/false words too
        ob, ob_bad = _boolean(df["outcome"])
        outcome = outcome.where(~out_bad, ob)
        out_bad = out_bad & ob_bad
    not01 = outcome.notna() & ~outcome.isin([0.0, 1.0])
    if out_bad.any() or not01.any():
        m = out_bad | not01
        problems.append("column 'outcome' must be 1 (success), 0 (failure) or empty (censored); "
                        f"found {_examples(where[m], df['outcome'][m])}")

    # forecasts and signals
    values: dict[str, pd.Series] = {}
    notes: list[str] = []
    for c in conf_cols:
        num, bad = _numeric(df[c])
        if bad.any():
            problems.append(f"column {c!r}: not a number at {_examples(where[bad], df[c][bad])}")
        out = num.notna() & ((num < 0) | (num > 1))
        if out.any():
            problems.append(f"column {c!r}: probabilities must be in [0, 1]; found "
                            f"{_examples(where[out], num[out])}")
        values[c] = num
    for c in sig_cols:
        num, bad = _numeric(df[c])
        inf = num.notna() & ~np.isfinite(num)
        if bad.any() or inf.any():
            m = bad | inf
            problems.append(f"column {c!r}: not a finite number at {_examples(where[m], df[c][m])}")
        values[c] = num
    if "weight" in cols:
        wnum, wbad = _numeric(df["weight"])
        wneg = wnum.notna() & (~np.isfinite(wnum) | (wnum < 0))
        if wbad.any() or wneg.any():
            m = wbad | wneg
            problems.append("column 'weight': weights must be finite numbers >= 0; found "
                            f"{_examples(where[m], df['weight'][m])}")
        values["weight"] = wnum
    if "q_z" in cols:
        qz, qbad = _numeric(df["q_z"])
        qout = qz.notna() & ((qz < 0) | (qz > 1))
        if qbad.any() or qout.any():
            m = qbad | qout
            problems.append("column 'q_z' (continuation success probability) must be in [0, 1] "
                            f"or empty; found {_examples(where[m], df['q_z'][m])}")
    else:
        qz = pd.Series(np.nan, index=df.index)
    if "censored" in cols:
        cens, cbad = _boolean(df["censored"])
        if cbad.any():
            problems.append("column 'censored' must be true/false or 1/0; found "
                            f"{_examples(where[cbad], df['censored'][cbad])}")
    else:
        cens = pd.Series(np.nan, index=df.index)
    if problems:
        raise LogFormatError(source, problems)

    # sort once, code trajectories
    codes_unsorted, uniques = pd.factorize(tid, sort=True)
    order = np.lexsort((step.to_numpy(), codes_unsorted))
    codes = codes_unsorted[order]
    n = len(uniques)
    where_s = where.iloc[order].reset_index(drop=True)

    def per_traj(series: pd.Series, label: str):
        vals, conflict = _per_traj_constant(series.iloc[order].reset_index(drop=True), codes, n)
        if conflict.any():
            bad_ids = [str(uniques[i]) for i in np.flatnonzero(conflict)[:_MAX_EXAMPLES]]
            more = int(conflict.sum()) - len(bad_ids)
            problems.append(f"column {label!r} changes within trajectory "
                            f"{', '.join(repr(b) for b in bad_ids)}"
                            + (f" and {more} more" if more > 0 else "")
                            + "; it must be constant within a run")
        return vals

    outcome_t = per_traj(outcome, "outcome")
    cens_t = per_traj(cens, "censored")
    qz_t = per_traj(qz, "q_z")
    if problems:
        raise LogFormatError(source, problems)

    partial = (pd.Series(outcome.iloc[order].isna().to_numpy()).groupby(codes).any().to_numpy()
               & ~np.isnan(outcome_t))
    if partial.any():
        notes.append(f"{int(partial.sum())} trajectories give 'outcome' on some rows only; the "
                     "value given was used for the whole run.")
    marked = ~np.isnan(cens_t)
    censored = np.where(marked, cens_t == 1.0, np.isnan(outcome_t))
    both = censored & ~np.isnan(outcome_t)
    if both.any():
        ids = [repr(str(uniques[i])) for i in np.flatnonzero(both)[:_MAX_EXAMPLES]]
        problems.append(f"trajectory {', '.join(ids)}: column 'censored' is true while 'outcome' "
                        "is present; a censored run has no observed outcome")
    neither = ~censored & np.isnan(outcome_t)
    if neither.any():
        ids = [repr(str(uniques[i])) for i in np.flatnonzero(neither)[:_MAX_EXAMPLES]]
        problems.append(f"trajectory {', '.join(ids)}: 'outcome' is empty but column 'censored' "
                        "says the run finished; give the outcome (1/0) or mark it censored")
    if problems:
        raise LogFormatError(source, problems)
    qz_complete = ~np.isnan(qz_t) & ~censored
    if qz_complete.any():
        notes.append(f"{int(qz_complete.sum())} complete trajectories carry a q_z value; q_z is "
                     "only used for censored runs, so it was ignored there.")
        qz_t = np.where(censored, qz_t, np.nan)

    # steps frame
    steps = pd.DataFrame({
        "trajectory_id": tid.to_numpy()[order],
        "step": step.to_numpy()[order].astype(np.int64),
        "traj": codes.astype(np.int64),
    })
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    lengths = np.diff(np.r_[starts, len(codes)])
    steps["t"] = np.arange(len(codes)) - np.repeat(starts, lengths) + 1
    for c, v in values.items():
        steps[c] = v.to_numpy()[order]
    meta_cols = [c for c in cols if c not in RESERVED and c not in values]
    traj = pd.DataFrame({
        "trajectory_id": np.asarray(uniques, dtype=object).astype(str),
        "outcome": outcome_t,
        "censored": censored.astype(bool),
        "q_z": qz_t,
        "length": lengths.astype(np.int64),
        "last_step": steps["step"].to_numpy()[starts + lengths - 1],
    })
    for c in meta_cols:
        col = df[c].iloc[order].reset_index(drop=True)
        try:
            nun = col.groupby(codes).nunique(dropna=False)
        except TypeError:  # unhashable (lists/dicts from JSON): keep as text at step level
            steps[c] = col.astype(str).to_numpy()
            continue
        if (nun <= 1).all():
            traj[c] = col.groupby(codes).first().reindex(range(n)).to_numpy()
        else:
            steps[c] = col.to_numpy()
    for c in conf_cols:
        miss = int(steps[c].isna().sum())
        if miss:
            notes.append(f"{c}: {miss} step(s) have no forecast; they are left out of that "
                         "predictor's score (and counted).")
    del where_s
    predictors = [c[len("conf_"):] for c in conf_cols]
    signals = {c: (1 if c.startswith("raw_") else -1) for c in sig_cols}
    return TrajectoryData(steps, traj, predictors, signals, source, notes)
