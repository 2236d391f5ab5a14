"""Where per-step forecasts come from, the same for every reader (docs/harness.md):

(i)   a numeric field of the agent's message, named by a dotted path (``metadata.confidence``,
      ``raw_data.choices.0.x``);
(ii)  signals derived from token log-probabilities where the log has them, per message: the
      mean and the minimum token log-probability (``raw_mean_logprob``, ``raw_min_logprob``:
      higher = more confident) and the mean entropy of the top log-probabilities of each token
      (``unc_entropy``: higher = less confident; the top-k probabilities are renormalised);
(iii) a sidecar table ``trajectory_id, step, conf_*/raw_*/unc_*`` joined on (trajectory_id,
      step) by :func:`join_sidecar`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from tpsviz.core.errors import LogFormatError
from tpsviz.io.tables.run_ids import MAX_STEP
from tpsviz.core.schema import canonical_name, show_id

__all__ = ["message_value", "logprob_signals", "join_sidecar"]


def message_value(msg, path: str):
    """The value at a dotted ``path`` in a message (dict keys, list indices), or None; a key that
    holds the whole dotted path (a span's flattened attribute ``agent.confidence``) is read first."""
    if isinstance(msg, dict) and path in msg:
        return msg[path]
    cur = msg
    for part in str(path).split("."):
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return None
        else:
            return None
        if cur is None:
            return None
    return cur


def _finite(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def logprob_signals(tokens) -> dict | None:
    """Signals of one message's token log-probabilities (a list of ``{"logprob": …,
    "top_logprobs": [{"logprob": …}, …]}``), or None when there are none."""
    if not isinstance(tokens, list) or not tokens:
        return None
    lps = [v for v in (_finite(t.get("logprob")) for t in tokens if isinstance(t, dict)) if v is not None]
    if not lps:
        return None
    out = {"raw_mean_logprob": float(np.mean(lps)), "raw_min_logprob": float(np.min(lps))}
    entropies = []
    for t in tokens:
        top = t.get("top_logprobs") if isinstance(t, dict) else None
        if not isinstance(top, list) or len(top) < 2:
            continue
        vals = [v for v in (_finite(x.get("logprob")) for x in top if isinstance(x, dict)) if v is not None]
        if len(vals) < 2:
            continue
        p = np.exp(np.asarray(vals) - max(vals))
        p /= p.sum()
        entropies.append(float(-(p * np.log(np.clip(p, 1e-300, None))).sum()))
    if entropies:
        out["unc_entropy"] = float(np.mean(entropies))
    return out


def join_sidecar(frame: pd.DataFrame, side: pd.DataFrame, side_name: str, dropped_ids=()) -> tuple[pd.DataFrame, list]:
    """Add a sidecar table's forecast columns to the long frame, matched on (trajectory_id, step).

    Parameters
    ----------
    frame : DataFrame
        The log's long frame (``trajectory_id``, ``step``, …).
    side : DataFrame
        The sidecar as read (``trajectory_id``, ``step`` and ``conf_*``/``raw_*``/``unc_*``).
    side_name : str
        Its file name, for messages.
    dropped_ids : iterable of str
        Runs the reader left out on purpose; sidecar rows of theirs are counted, not an error.

    Returns
    -------
    frame : DataFrame
    notes : list of str

    Raises
    ------
    LogFormatError
        Missing key columns, no forecast column, a forecast column the log already has,
        duplicate keys, or (trajectory_id, step) pairs that match no agent step (listed).
    """
    where = side["_where"].to_numpy() if "_where" in side else np.arange(2, len(side) + 2)
    prefix = side.attrs.get("where_prefix", "line")
    side = side.drop(columns=[c for c in ("_where",) if c in side])
    cols = _sidecar_columns(side, side_name, frame)

    def at(mask) -> str:
        return ", ".join(f"{prefix} {int(w)}" for w in where[np.flatnonzero(np.asarray(mask))[:3]])

    key = _sidecar_keys(side, cols, side_name, at)
    of_dropped = _match_keys(frame, key, side_name, set(map(str, dropped_ids)))
    values = side[cols].copy()
    values["trajectory_id"] = key["trajectory_id"].to_numpy()
    values["step"] = key["step"].to_numpy()
    out = frame.copy()
    out["step"] = out["step"].astype(np.int64)
    out["trajectory_id"] = out["trajectory_id"].astype(str)
    out = out.merge(values, on=["trajectory_id", "step"], how="left")
    notes = []
    if of_dropped:
        notes.append(f"{side_name}: {of_dropped} row(s) belong to runs that were dropped and were ignored")
    covered = set(key["trajectory_id"])
    runs = out["trajectory_id"].unique()
    without = [r for r in runs if r not in covered]
    if without:
        notes.append(f"{side_name}: {len(without)} of {len(runs)} runs have no forecast in the table")
    return out, notes


def _sidecar_columns(side: pd.DataFrame, side_name: str, frame: pd.DataFrame) -> list[str]:
    """The sidecar's forecast columns, its columns renamed in place to the long format's names
    (the same name matching as the log: reserved names and prefixes regardless of case)."""
    names = [canonical_name(c) for c in side.columns]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise LogFormatError(side_name, [f"the header names column {show_id(twice[0])} twice (also ignoring "
                                         "case); keep one"])
    side.columns = names
    missing = [c for c in ("trajectory_id", "step") if c not in side.columns]
    if missing:
        raise LogFormatError(side_name, [f"the forecasts table needs columns trajectory_id and step; "
                                         f"missing: {', '.join(missing)}"])
    cols = [c for c in side.columns if c.startswith(("conf_", "raw_", "unc_"))]
    if not cols:
        raise LogFormatError(side_name, ["the forecasts table has no conf_<name>, raw_<name> or "
                                         "unc_<name> column"])
    clash = [c for c in cols if c in frame.columns]
    if clash:
        raise LogFormatError(side_name, [f"column(s) {', '.join(show_id(c) for c in clash)} are already "
                                         "in the log; rename them in the forecasts table"])
    return cols


def _sidecar_keys(side: pd.DataFrame, cols: list[str], side_name: str, at) -> pd.DataFrame:
    """The sidecar's (trajectory_id, step) of every row, once its steps, forecasts and keys are
    checked (``at(mask)``: the table's own lines for a message)."""
    tid = side["trajectory_id"].astype(str).str.strip()
    step = pd.to_numeric(side["step"], errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(step) | (step != np.floor(step)) | (step < 0) | (step > MAX_STEP)
    if bad.any():
        raise LogFormatError(side_name, [f"column 'step' must hold whole numbers from 0 to 2^53; not so at {at(bad)}"])
    problems = []
    for c in cols:  # the table's own values, with the table's own lines
        v = pd.to_numeric(side[c], errors="coerce").to_numpy(dtype=float)
        text = side[c].notna().to_numpy() & np.isnan(v)
        if text.any():
            problems.append(f"column {show_id(c)}: not a number at {at(text)}")
        if c.startswith("conf_"):
            with np.errstate(invalid="ignore"):
                out_of = (v < 0) | (v > 1)
            if out_of.any():
                problems.append(f"column {show_id(c)}: probabilities must be in [0, 1]; not so at {at(out_of)}")
        elif np.isinf(v).any():
            problems.append(f"column {show_id(c)}: signals must be finite; not so at {at(np.isinf(v))}")
    if problems:
        raise LogFormatError(side_name, problems)
    key = pd.DataFrame({"trajectory_id": tid, "step": step.astype(np.int64)})
    dup = key.duplicated(keep=False)
    if dup.any():
        raise LogFormatError(side_name, [f"the same (trajectory_id, step) appears twice at {at(dup.to_numpy())}"])
    return key


def _match_keys(frame: pd.DataFrame, key: pd.DataFrame, side_name: str, dropped: set) -> int:
    """How many sidecar rows belong to runs the reader dropped; a LogFormatError listing the
    (trajectory_id, step) pairs that match no agent step of any other run."""
    log_keys = set(zip(frame["trajectory_id"].astype(str), frame["step"].astype(np.int64)))
    side_keys = list(zip(key["trajectory_id"], key["step"]))
    of_dropped = [k for k in side_keys if k[0] in dropped]
    unmatched = [k for k in side_keys if k not in log_keys and k[0] not in dropped]
    if unmatched:
        known = set(frame["trajectory_id"].astype(str))
        ids = sorted({k[0] for k in unmatched if k[0] not in known})
        steps = [k for k in unmatched if k[0] in known]
        problems = []
        if ids:
            problems.append(f"{len(ids)} trajectory id(s) match no run of the log: "
                            + ", ".join(show_id(i) for i in ids[:5]) + (" …" if len(ids) > 5 else ""))
        if steps:
            problems.append(f"{len(steps)} (trajectory_id, step) pair(s) match no agent step of the log: "
                            + ", ".join(f"({show_id(a)}, {b})" for a, b in steps[:5])
                            + (" …" if len(steps) > 5 else ""))
        raise LogFormatError(side_name, problems)
    return len(of_dropped)
