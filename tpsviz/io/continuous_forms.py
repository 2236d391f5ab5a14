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

import numpy as np
import pandas as pd

from tpsviz.core.errors import LogFormatError
from tpsviz.io.kinds import (MU_PATTERN, QUANTILE_PATTERN, SAMPLES_PATTERN, SIGMA_PATTERN, is_continuous,
                              quantile_level)
from tpsviz.io.cells import parse_numeric, row_examples
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
    return [(quantile_level(QUANTILE_PATTERN.fullmatch(c).group(1)), c) for c in columns]


def predictor_columns(cols: list[str], source: str, notes: list[str]):
    """Predictors as name → (form, columns in order) and the metadata columns; a
    LogFormatError for a malformed header."""
    problems = []
    missing = [c for c in _REQUIRED if c not in cols]
    mu, sigma, samples, quant = {}, {}, {}, {}
    bad_levels, conf = [], []
    meta = []
    for c in cols:
        if c in _REQUIRED or c == "censored":
            continue
        for pattern, table, role in ((MU_PATTERN, mu, "mu"), (SIGMA_PATTERN, sigma, "sigma"), (SAMPLES_PATTERN, samples, "samples")):
            m = pattern.fullmatch(c)
            if m:
                table.setdefault(m.group(1), []).append(c)
                break
        else:
            m = QUANTILE_PATTERN.fullmatch(c)
            if m:
                lv = quantile_level(m.group(1))
                if not 0.0 < lv < 1.0:
                    bad_levels.append(c)
                else:
                    quant.setdefault(m.group(2), []).append((lv, c))
            elif c.startswith("conf_"):
                conf.append(c)
                meta.append(c)
            else:
                meta.append(c)
    names = list(dict.fromkeys(list(mu) + list(sigma) + list(quant) + list(samples)))
    if missing:
        found = (f" (columns: {', '.join(show_id(c, 30) for c in cols[:12])}"
                 + (f" and {len(cols) - 12} more" if len(cols) > 12 else "") + ")"
                 if looks_like_ours(cols) else " (the file's column names, its header or JSON keys, include none of "
                 "the log's columns)")
        problems.append(f"missing required column{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(repr(c) for c in missing)}{found}")
    if not names:
        multi = [c for c in conf if "__" in c[len("conf_"):]]
        if multi:
            hint = ("it has conf_<name>__<label> columns, so it is a multi-class log: score it with "
                    "'tpsviz multiclass'")
        elif conf:
            hint = "it has conf_<name> columns, so it is a binary (success/failure) log: score it with 'tpsviz score'"
        else:
            hint = "none was found"
        problems.append("no continuous predictor: the crps command needs mu_<name> and sigma_<name>, "
                        f"q<level>_<name> or samples_<name> columns; {hint}")
        raise LogFormatError(source, problems)
    for c in bad_levels:
        problems.append(f"column {show_id(c)}: a quantile level must be in (0, 1) (write it as a fraction, "
                        "e.g. q0.1_<name>)")
    spec = {}
    for n in names:
        forms = [f for f, present in (("mu_/sigma_ (gaussian)", n in mu or n in sigma),
                                      ("q<level>_ (quantile)", n in quant),
                                      ("samples_ (ensemble)", n in samples)) if present]
        if len(forms) > 1:
            problems.append(f"predictor {show_id(n)} is given in more than one form ({', '.join(forms)}); "
                            "give one form per predictor")
            continue
        twice = [c for t in (mu, sigma, samples) for c in [t.get(n, [])] if len(c) > 1]
        if twice:
            problems.append(f"predictor {show_id(n)}: columns {', '.join(show_id(c) for c in twice[0])} "
                            "name the same field (names are matched ignoring case); keep one")
            continue
        if n in mu or n in sigma:
            if n not in mu or n not in sigma:
                has, lacks = ("mu", "sigma") if n in mu else ("sigma", "mu")
                problems.append(f"predictor {show_id(n)}: column {show_id(f'{has}_{n}')} has no matching "
                                f"{show_id(f'{lacks}_{n}')}; a Gaussian forecast needs both")
                continue
            spec[n] = ("gaussian", [mu[n][0], sigma[n][0]])
        elif n in quant:
            q = sorted(quant[n])
            lv = [x for x, _ in q]
            if len(set(lv)) < len(lv):
                dup = [c for x, c in q if lv.count(x) > 1]
                problems.append(f"predictor {show_id(n)}: columns {', '.join(show_id(c) for c in dup)} give the "
                                "same quantile level; give each level once")
                continue
            if len(q) < 2:
                problems.append(f"predictor {show_id(n)}: a quantile forecast needs at least 2 levels, "
                                f"the log has 1 ({show_id(q[0][1])})")
                continue
            spec[n] = ("quantile", [c for _, c in q])
        else:
            spec[n] = ("ensemble", [samples[n][0]])
    if len(names) > MAX_PREDICTORS:
        problems.append(f"{len(names):,} predictors, more than the {MAX_PREDICTORS} tpsviz scores at once; "
                        "split the log or drop columns")
    if problems:
        raise LogFormatError(source, problems)
    if conf:
        notes.append(f"{len(conf)} conf_ column(s) (binary success probabilities) are not scored by the CRPS; "
                     "they were kept as metadata (score them with 'tpsviz score' on a 1/0 outcome).")
    clash = [c for c in meta if c in INTERNAL]
    if clash:
        notes.append("metadata column(s) " + ", ".join(f"{show_id(c)} kept as {show_id(c + '_log')}" for c in clash)
                     + " (the name is used by tpsviz itself).")
    return spec, meta


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
