"""The predictor columns of a continuous-outcome log and their three forms (docs/continuous.md).

``gaussian``  ``mu_<name>`` and ``sigma_<name>`` (σ > 0);
``quantile``  ``q<level>_<name>`` for at least 2 levels in (0, 1), non-decreasing in the level;
``ensemble``  ``samples_<name>``: at least 2 finite numbers (a JSON array text in CSV, a list in
              JSON Lines and Parquet), at most :data:`MAX_MEMBERS`.

The header is classified by :func:`predictor_columns`; each form's cells are parsed by the
readers of :data:`FORM_READERS`, which add a problem (naming the column and rows, never a value)
for every defect.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tpsviz.core.errors import LogFormatError
from tpsviz.io.kinds import (MU_PATTERN, QUANTILE_PATTERN, SAMPLES_PATTERN, SIGMA_PATTERN, is_continuous,
                              quantile_level)
from tpsviz.io.tables.cells import parse_numeric, row_examples
from tpsviz.core.schema import looks_like_ours, show_id
from tpsviz.io.tables import MAX_PREDICTORS, MISSING

__all__ = ["is_continuous", "predictor_columns", "levels_of", "FORM_READERS", "MAX_MEMBERS", "FORMS",
           "SAMPLES_PATTERN", "INTERNAL", "MAX_VALUE", "out_of_range"]

#: largest ensemble (members per row) read; a row above it is an error, so memory stays bounded
MAX_MEMBERS = 10_000
FORMS = ("gaussian", "quantile", "ensemble")
#: largest magnitude of an outcome or forecast value: differences, weighted sums over a run and over
#: the runs then stay finite (weights are at most tpsviz.core.tps.MAX_WEIGHT = 1e150)
MAX_VALUE = 1e100

_REQUIRED = ("trajectory_id", "step", "outcome")
INTERNAL = ("t", "traj")  # columns the steps frame uses itself


def levels_of(columns: list[str]) -> list[tuple[float, str]]:
    """The quantile level of each ``q<level>_<name>`` column.

    Parameters
    ----------
    columns : list of str
        Quantile columns of one predictor.

    Returns
    -------
    list of (float, str)
        (level, column) in the order given.
    """
    return [(quantile_level(QUANTILE_PATTERN.fullmatch(c).group(1)), c) for c in columns]


def predictor_columns(cols: list[str], source: str, notes: list[str]):
    """Predictors as name → (form, columns in order) and the metadata columns.

    Parameters
    ----------
    cols : list of str
        The header (canonical names).
    source : str
        The file's name, for messages.
    notes : list of str
        Receives a note on ``conf_`` columns kept as metadata and on renamed metadata columns.

    Returns
    -------
    spec : dict
        Predictor name → (form of :data:`FORMS`, its columns in order).
    meta : list of str
        The metadata columns.

    Raises
    ------
    LogFormatError
        For a malformed header, naming every problem.
    """
    problems = []
    missing = [c for c in _REQUIRED if c not in cols]
    h = _classify(cols)
    names = list(dict.fromkeys(list(h.mu) + list(h.sigma) + list(h.quant) + list(h.samples)))
    if missing:
        found = (f" (columns: {', '.join(show_id(c, 30) for c in cols[:12])}"
                 + (f" and {len(cols) - 12} more" if len(cols) > 12 else "") + ")"
                 if looks_like_ours(cols) else " (the file's column names, its header or JSON keys, include none of "
                 "the log's columns)")
        problems.append(f"missing required column{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(repr(c) for c in missing)}{found}")
    if not names:
        problems.append(_no_predictor(h.conf))
        raise LogFormatError(source, problems)
    for c in h.bad_levels:
        problems.append(f"column {show_id(c)}: a quantile level must be in (0, 1) (write it as a fraction, "
                        "e.g. q0.1_<name>)")
    spec = {}
    for n in names:
        form = _form_of(n, h, problems)
        if form is not None:
            spec[n] = form
    if len(names) > MAX_PREDICTORS:
        problems.append(f"{len(names):,} predictors, more than the {MAX_PREDICTORS} tpsviz scores at once; "
                        "split the log or drop columns")
    if problems:
        raise LogFormatError(source, problems)
    if h.conf:
        notes.append(f"{len(h.conf)} conf_ column(s) (binary success probabilities) are not scored by the CRPS; "
                     "they were kept as metadata (score them with 'tpsviz score' on a 1/0 outcome).")
    clash = [c for c in h.meta if c in INTERNAL]
    if clash:
        notes.append("metadata column(s) " + ", ".join(f"{show_id(c)} kept as {show_id(c + '_log')}" for c in clash)
                     + " (the name is used by tpsviz itself).")
    return spec, h.meta


@dataclass
class _Header:
    """A continuous log's columns by role: forecast columns per predictor name, and the rest."""

    mu: dict = field(default_factory=dict)         # name -> mu_<name> columns
    sigma: dict = field(default_factory=dict)      # name -> sigma_<name> columns
    samples: dict = field(default_factory=dict)    # name -> samples_<name> columns
    quant: dict = field(default_factory=dict)      # name -> [(level, column)]
    bad_levels: list = field(default_factory=list)  # q<level>_ columns with a level outside (0, 1)
    conf: list = field(default_factory=list)       # conf_ columns (kept as metadata)
    meta: list = field(default_factory=list)


def _classify(cols: list[str]) -> _Header:
    """Each column of the header by the pattern it matches."""
    h = _Header()
    for c in cols:
        if c in _REQUIRED or c == "censored":
            continue
        for pattern, table in ((MU_PATTERN, h.mu), (SIGMA_PATTERN, h.sigma), (SAMPLES_PATTERN, h.samples)):
            m = pattern.fullmatch(c)
            if m:
                table.setdefault(m.group(1), []).append(c)
                break
        else:
            m = QUANTILE_PATTERN.fullmatch(c)
            if m:
                lv = quantile_level(m.group(1))
                if not 0.0 < lv < 1.0:
                    h.bad_levels.append(c)
                else:
                    h.quant.setdefault(m.group(2), []).append((lv, c))
            elif c.startswith("conf_"):
                h.conf.append(c)
                h.meta.append(c)
            else:
                h.meta.append(c)
    return h


def _no_predictor(conf: list[str]) -> str:
    """The problem of a header without a continuous predictor, saying what else the log may be."""
    multi = [c for c in conf if "__" in c[len("conf_"):]]
    if multi:
        hint = ("it has conf_<name>__<label> columns, so it is a multi-class log: score it with "
                "'tpsviz score' (tpsviz.evaluate)")
    elif conf:
        hint = "it has conf_<name> columns, so it is a binary (success/failure) log: score it with 'tpsviz score'"
    else:
        hint = "none was found"
    return ("no continuous predictor: the crps command needs mu_<name> and sigma_<name>, "
            f"q<level>_<name> or samples_<name> columns; {hint}")


def _form_of(n: str, h: _Header, problems: list[str]):
    """Predictor ``n``'s (form, columns), or None after adding the problem that prevents it."""
    forms = [f for f, present in (("mu_/sigma_ (gaussian)", n in h.mu or n in h.sigma),
                                  ("q<level>_ (quantile)", n in h.quant),
                                  ("samples_ (ensemble)", n in h.samples)) if present]
    if len(forms) > 1:
        problems.append(f"predictor {show_id(n)} is given in more than one form ({', '.join(forms)}); "
                        "give one form per predictor")
        return None
    twice = [c for t in (h.mu, h.sigma, h.samples) for c in [t.get(n, [])] if len(c) > 1]
    if twice:
        problems.append(f"predictor {show_id(n)}: columns {', '.join(show_id(c) for c in twice[0])} "
                        "name the same field (names are matched ignoring case); keep one")
        return None
    if n in h.mu or n in h.sigma:
        if n not in h.mu or n not in h.sigma:
            has, lacks = ("mu", "sigma") if n in h.mu else ("sigma", "mu")
            problems.append(f"predictor {show_id(n)}: column {show_id(f'{has}_{n}')} has no matching "
                            f"{show_id(f'{lacks}_{n}')}; a Gaussian forecast needs both")
            return None
        return "gaussian", [h.mu[n][0], h.sigma[n][0]]
    if n in h.quant:
        q = sorted(h.quant[n])
        lv = [x for x, _ in q]
        if len(set(lv)) < len(lv):
            dup = [c for x, c in q if lv.count(x) > 1]
            problems.append(f"predictor {show_id(n)}: columns {', '.join(show_id(c) for c in dup)} give the "
                            "same quantile level; give each level once")
            return None
        if len(q) < 2:
            problems.append(f"predictor {show_id(n)}: a quantile forecast needs at least 2 levels, "
                            f"the log has 1 ({show_id(q[0][1])})")
            return None
        return "quantile", [c for _, c in q]
    return "ensemble", [h.samples[n][0]]


def out_of_range(num: pd.Series) -> pd.Series:
    """Present values that are not finite or beyond ±:data:`MAX_VALUE`."""
    return num.notna() & ~(np.abs(num.fillna(0.0)) <= MAX_VALUE)


def _read_gaussian(df, name, columns, where, problems) -> dict:
    mc, sc = columns
    mu, mu_bad = parse_numeric(df[mc])
    sigma, sg_bad = parse_numeric(df[sc])
    ok = True
    for c, num, bad in ((mc, mu, mu_bad), (sc, sigma, sg_bad)):
        bad = bad | out_of_range(num)
        if bad.any():
            problems.append(f"column {show_id(c)}: not a finite number (within ±{MAX_VALUE:.0e}) at "
                            f"{row_examples(where[bad])}")
            ok = False
    nonpos = sigma.notna() & (sigma <= 0)
    if nonpos.any():
        problems.append(f"column {show_id(sc)}: the standard deviation must be > 0; not so at "
                        f"{row_examples(where[nonpos])}")
    tiny = sigma.notna() & (sigma > 0) & (sigma < 1.0 / MAX_VALUE)
    if tiny.any():  # (y − μ)/σ would overflow
        problems.append(f"column {show_id(sc)}: the standard deviation must be at least {1 / MAX_VALUE:.0e}; not "
                        f"so at {row_examples(where[tiny])}")
    half = (mu.isna() != sigma.isna()) & ~mu_bad & ~sg_bad
    if ok and half.any():
        problems.append(f"predictor {show_id(name)}: a row gives one of {show_id(mc)}, {show_id(sc)} but not "
                        f"the other at {row_examples(where[half])}; give both or neither")
    return {mc: mu, sc: sigma}


def _read_quantile(df, name, columns, where, problems) -> dict:
    out, ok = {}, True
    for c in columns:
        num, bad = parse_numeric(df[c])
        bad = bad | out_of_range(num)
        if bad.any():
            problems.append(f"column {show_id(c)}: not a finite number (within ±{MAX_VALUE:.0e}) at "
                            f"{row_examples(where[bad])}")
            ok = False
        out[c] = num
    if not ok:
        return out
    v = np.column_stack([out[c].to_numpy(dtype=float) for c in columns])
    given = ~np.isnan(v)
    partial = given.any(axis=1) & ~given.all(axis=1)
    if partial.any():
        problems.append(f"predictor {show_id(name)}: some but not all quantile columns are empty at "
                        f"{row_examples(where[pd.Series(partial, index=df.index)])}; give every level or none")
    full = given.all(axis=1)
    with np.errstate(invalid="ignore"):
        dec = full & (np.diff(v, axis=1) < 0).any(axis=1)
    if dec.any():
        problems.append(f"predictor {show_id(name)}: the quantiles decrease as the level increases at "
                        f"{row_examples(where[pd.Series(dec, index=df.index)])}; they must be non-decreasing "
                        "in the level")
    return out


_EMPTY, _NOT_LIST, _TOO_FEW, _TOO_MANY, _NOT_FINITE = range(5)


def _members(v):
    """A samples cell as a float array, or None (missing), or an error code."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, str):
        s = v.strip()
        if s.lower() in MISSING:
            return None
        if s.count(",") >= MAX_MEMBERS:  # before parsing: a huge cell is refused unread
            return _TOO_MANY
        try:
            v = json.loads(s)
        except (ValueError, RecursionError):
            return _NOT_LIST
    if isinstance(v, np.ndarray):
        if v.ndim != 1:
            return _NOT_LIST
        if v.dtype.kind in "iuf":
            arr = v.astype(float)
        elif v.dtype == object:
            v = list(v)
        else:
            return _NOT_LIST
    if isinstance(v, (list, tuple)):
        if len(v) > MAX_MEMBERS:
            return _TOO_MANY
        if not all(isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))
                   for x in v):
            return _NOT_LIST
        try:
            arr = np.asarray(v, dtype=float)
        except OverflowError:  # a JSON integer beyond the float range
            return _NOT_FINITE
    elif not isinstance(v, np.ndarray):
        return _NOT_LIST
    if arr.size == 0:
        return None
    if arr.size > MAX_MEMBERS:
        return _TOO_MANY
    if arr.size < 2:
        return _TOO_FEW
    if not (np.abs(arr) <= MAX_VALUE).all():
        return _NOT_FINITE
    return arr


def _read_samples(df, name, columns, where, problems) -> dict:
    (c,) = columns
    parsed = [_members(v) for v in df[c].to_numpy(dtype=object)]
    codes = np.array([p if isinstance(p, int) else -1 for p in parsed])
    messages = {
        _NOT_LIST: "not a list of numbers (in CSV write a JSON array, e.g. \"[1.5, 2]\")",
        _TOO_FEW: "fewer than 2 members (an ensemble needs at least 2)",
        _TOO_MANY: f"more than {MAX_MEMBERS:,} members (thin the ensemble)",
        _NOT_FINITE: f"a member is not a finite number (within ±{MAX_VALUE:.0e})",
    }
    for code, text in messages.items():
        m = codes == code
        if m.any():
            problems.append(f"column {show_id(c)}: {text} at {row_examples(where[pd.Series(m, index=df.index)])}")
    out = np.empty(len(parsed), dtype=object)
    out[:] = [p if isinstance(p, np.ndarray) else None for p in parsed]
    return {c: pd.Series(out, index=df.index, dtype=object)}


FORM_READERS = {"gaussian": _read_gaussian, "quantile": _read_quantile, "ensemble": _read_samples}
