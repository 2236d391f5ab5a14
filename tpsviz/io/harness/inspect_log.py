"""Inspect AI eval logs (UKGovernmentBEIS/inspect_ai): ``.eval`` archives — with per-sample
members ``samples/<id>_epoch_<n>.json`` or the chunked per-sample folders
``samples/<id>_epoch_<n>/{sample.json, messages/<start>.json, events/<start>.json, …}`` — and
``.json`` logs. See docs/harness.md.

- One run per (sample id, epoch); step t = the t-th assistant message of the sample.
- Outcome from ``sample.scores``: the first scorer unless one is named. ``C``/correct/true/1
  → 1, ``I``/incorrect/false/0 → 0, ``N`` (no answer) → 0; partial (``P`` = 0.5) and numeric
  values count as success when ≥ the success threshold.
- A sample stopped by a limit (``sample.limit``) is censored by default; the limit's type is
  kept as metadata (reason ``<type>_limit``). Errored samples (``sample.error``) are dropped,
  and so are samples without any score; both are counted.
- A confidence elicited during the run (:mod:`tpsviz.forecasts.elicit`, message metadata
  ``tpsviz_confidence``) is found without options: the predictor ``conf_elicited``, with the
  replies that held no usable probability counted by problem.
- Time and cost (:mod:`tpsviz.io.harness.times`): ``start_time`` from ``started_at`` (older logs:
  the first event's ``timestamp``), ``end_time`` from ``completed_at``, ``duration_s`` from
  ``total_time``, ``cost`` the sum of ``model_usage[*].total_cost`` where recorded.
"""

from __future__ import annotations

import math

import re

from tpsviz.core.cancel import checkpoint
from tpsviz.core.errors import MAX_PROBLEMS, LogFormatError
from tpsviz.core.schema import ELICITED_KEY, ELICITED_PROBLEM_KEY, show_id
from tpsviz.core.wording import setting
from tpsviz.io.harness.evalzip import EvalZip
from tpsviz.io.harness.runs import FoundForecast, HarnessLog, ReadOptions, Run, is_key
from tpsviz.io.harness.times import time_metadata

__all__ = ["read_inspect_json", "read_inspect_eval", "sample_members", "DEFAULT_TREATMENT"]

LIMIT_TYPES = ("context", "time", "working", "message", "token", "turn", "cost", "operator", "custom")
DEFAULT_TREATMENT = {"scored": "outcome", "error": "dropped", "unscored": "dropped",
                     **{f"{t}_limit": "censored" for t in LIMIT_TYPES}}
REASON_HELP = {"scored": "the sample finished and was scored",
               "error": "the sample failed with an error: no result",
               "unscored": "the sample has no score (no scorer ran): nothing to take an outcome from",
               **{f"{t}_limit": f"stopped by the {t} limit (still scored on its truncated state)"
                  for t in LIMIT_TYPES}}
_TRUE = {"c", "correct", "true", "yes", "1", "1.0"}
_FALSE = {"i", "incorrect", "false", "no", "0", "0.0", "n"}
#: a sample's name as Inspect writes it (``inspect_ai/log/_recorders/eval.py``, ``_sample_filename``:
#: ``samples/{id}_epoch_{epoch}``, the id as its text, not encoded): an id without ``/``, ``\\`` or
#: ``..`` (a name holding them is no sample Inspect wrote: a path's trick, skipped and counted)
_SAMPLE = r"samples/(?P<id>[^/\\]+)_epoch_\d{1,9}"
_MONOLITH = re.compile(rf"^{_SAMPLE}\.json$")
_CHUNKED = re.compile(rf"^(?P<prefix>{_SAMPLE})/(?P<rest>[^/\\][^\\]*)$")
_CHUNK = re.compile(r"^(samples/[^/]+)/(messages|events)/(\d{1,9})\.json$")
_REASON = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,30}$")
#: the confidence elicited during a run, when any agent message carries it
ELICITED = FoundForecast("elicited", f"metadata.{ELICITED_KEY}", f"metadata.{ELICITED_PROBLEM_KEY}",
                         f"elicited during the run (message metadata {ELICITED_KEY})")


def _dict(v) -> dict:
    return v if isinstance(v, dict) else {}


def _list(v) -> list:
    return v if isinstance(v, list) else []


def _score_value(v, thr: float):
    """1.0 / 0.0 from an Inspect score value, or None when it is not a single value."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v >= thr) if math.isfinite(v) else None
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE:
            return 1.0
        if s in _FALSE:
            return 0.0
        if s == "p":
            return float(0.5 >= thr)
        try:
            f = float(s)
        except ValueError:
            return None
        return float(f >= thr) if math.isfinite(f) else None
    return None


def _logprob_map(events) -> dict:
    """message id -> token log-probabilities, from the model events of a sample."""
    out = {}
    for ev in _list(events):
        if not isinstance(ev, dict) or ev.get("event") != "model":
            continue
        choices = _list(_dict(ev.get("output")).get("choices"))
        if not choices or not isinstance(choices[0], dict):
            continue
        mid = _dict(choices[0].get("message")).get("id")
        lp = _dict(choices[0].get("logprobs")).get("content")
        if isinstance(mid, (str, int)) and not isinstance(mid, bool) and isinstance(lp, list) and lp:
            out[mid] = lp
    return out


def _run(sample: dict, where: str, header: dict, options: ReadOptions, events=None) -> tuple[Run | None, str | None]:
    if not isinstance(sample, dict):
        return None, f"{where}: not a JSON object"
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    if not is_key(sid) or str(sid).strip() == "":
        return None, f"{where}: field 'id' is missing or not a text or number"
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        return None, f"{where} (sample {show_id(sid)}): field 'epoch' must be a whole number"
    tid = f"{sid}-epoch{epoch}"
    label = f"{where} (sample {show_id(sid)}, epoch {epoch})"
    messages = sample.get("messages") or []
    if not isinstance(messages, list):
        return None, f"{label}: field 'messages' must be a list"
    limit = sample.get("limit")
    limit_type = limit.get("type") if isinstance(limit, dict) else (limit if isinstance(limit, str) else None)
    if limit_type is not None and not (isinstance(limit_type, str) and _REASON.match(limit_type)):
        limit_type = "other" if limit_type else None  # an unexpected type is not echoed
    scores = sample.get("scores") or {}
    if not isinstance(scores, dict):
        return None, f"{label}: field 'scores' must be an object"
    outcome, scorer = None, None
    if sample.get("error"):
        reason = "error"
    elif limit_type:
        reason = f"{limit_type}_limit"
    elif not scores:
        reason = "unscored"
    else:
        reason = "scored"
    if scores:
        scorer = options.scorer or next(iter(scores))
        if not isinstance(scorer, str) or scorer not in scores:
            return None, (f"{label}: no score from scorer {show_id(scorer)} (its scorers: "
                          + ", ".join(show_id(s) for s in scores) + ")")
        val = scores[scorer].get("value") if isinstance(scores[scorer], dict) else None
        outcome = _score_value(val, options.threshold)
        if outcome is None and reason == "scored":
            return None, (f"{label}: the value of scorer {show_id(scorer)} is not a single score "
                          f"(C/I, true/false or a number); name another with {setting('scorer')}")
    steps = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    lp_map = _logprob_map(events if events is not None else sample.get("events"))
    lps = [lp_map.get(m.get("id")) if isinstance(m.get("id"), (str, int)) else None for m in steps]
    if steps and not any(lps):  # older logs: message ids missing; the last call's output only
        choices = _list(_dict(sample.get("output")).get("choices"))
        first = _dict(choices[0]) if choices else {}
        lp = _dict(first.get("logprobs")).get("content")
        if isinstance(lp, list) and lp:
            lps[-1] = lp
    ev = _dict(_dict(header).get("eval"))
    model, task = ev.get("model"), ev.get("task")
    meta = {"sample_id": str(sid), "epoch": epoch, "model": model if isinstance(model, str) else None,
            "task": task if isinstance(task, str) else None,
            "limit": limit_type or "", "scorer": scorer or "", "termination_reason": reason}
    meta.update(_times(sample, events if events is not None else sample.get("events")))
    return Run(tid, reason, outcome, steps, lps, meta, label,
               messages if options.transcripts else None), None


def _times(sample: dict, events) -> dict:
    """A sample's start, end, duration and cost where it records them (older logs have no
    ``started_at``: their first event's time is the start)."""
    start = sample.get("started_at")
    if not isinstance(start, str) or not start:
        first = _dict(events[0]) if isinstance(events, list) and events else {}
        start = first.get("timestamp")
    costs = [u.get("total_cost") for u in _dict(sample.get("model_usage")).values() if isinstance(u, dict)]
    costs = [c for c in costs if isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)]
    return time_metadata(start, sample.get("completed_at"), sample.get("total_time"), sum(costs) if costs else None)


def _finish(runs, problems, name, notes) -> HarnessLog:
    if problems:
        raise LogFormatError(name, problems)
    seen = {}
    for r in runs:
        if r.trajectory_id in seen:
            raise LogFormatError(name, [f"{r.where}: the same sample and epoch appear twice"])
        seen[r.trajectory_id] = r
    elicited = any(isinstance(m.get("metadata"), dict) and ELICITED_KEY in m["metadata"]
                   for r in runs for m in r.steps)
    return HarnessLog("inspect", runs, dict(DEFAULT_TREATMENT), notes, dict(REASON_HELP),
                      [ELICITED] if elicited else [], task_column="sample_id")


def read_inspect_json(obj: dict, name: str, options: ReadOptions) -> HarnessLog:
    """Runs of an Inspect AI ``.json`` log (``{"eval", "samples", …}``)."""
    samples = obj.get("samples")
    notes = []
    if samples is None:
        raise LogFormatError(name, ["the log has no 'samples' (it was written with samples left out)"])
    if not isinstance(samples, list):
        raise LogFormatError(name, ["'samples' must be a list"])
    if obj.get("status") not in (None, "success"):
        notes.append(f"the evaluation's status is {show_id(obj.get('status'))}: some samples may be missing")
    runs, problems = [], []
    for i, s in enumerate(samples, start=1):
        run, problem = _run(s, f"sample {i}", obj, options)
        (problems.append(problem) if problem else runs.append(run))
        if len(problems) > MAX_PROBLEMS:
            break
    return _finish(runs, problems, name, notes)


def sample_members(names) -> tuple[list[str], list[str], list[str]]:
    """The members of an ``.eval`` archive under ``samples/``, sorted by what Inspect wrote.

    Parameters
    ----------
    names : iterable of str
        The archive's member names.

    Returns
    -------
    monoliths : list of str
        The per-sample members ``samples/<id>_epoch_<n>.json``.
    shells : list of str
        The chunked samples' folders ``samples/<id>_epoch_<n>`` (those holding a ``sample.json``).
    skipped : list of str
        Every other name under ``samples/``: an id with ``..``, a backslash or a further ``/``, a
        part of a chunked sample without its ``sample.json``, any other name. Folder entries (names
        ending in ``/``, which a zip tool adds when it packs a folder) hold nothing and are not
        members.
    """
    monoliths, parts, skipped = [], {}, []
    for n in names:
        if not n.startswith("samples/") or n.endswith("/"):
            continue
        m = _MONOLITH.match(n)
        if m and ".." not in m.group("id"):
            monoliths.append(n)
            continue
        m = _CHUNKED.match(n)
        if m and ".." not in m.group("id") and ".." not in m.group("rest").split("/"):
            parts.setdefault(m.group("prefix"), []).append((m.group("rest"), n))
            continue
        skipped.append(n)
    shells = sorted(p for p, rest in parts.items() if any(r == "sample.json" for r, _ in rest))
    skipped += [n for p, rest in parts.items() if p not in set(shells) for _, n in rest]
    return sorted(monoliths), shells, skipped


def _skipped_note(skipped: list[str]) -> str:
    """The reader's note on the members under ``samples/`` that are not samples (a few named)."""
    n = len(skipped)
    named = ", ".join(show_id(m, 60) for m in sorted(skipped)[:3]) + (", …" if n > 3 else "")
    return (f"{n:,} member{'s' if n != 1 else ''} under samples/ skipped: not "
            f"{'a sample name' if n == 1 else 'sample names'} Inspect writes ({named})")


def _chunk_index(names) -> dict:
    """{(sample prefix, "messages" | "events"): [(start, member), …] sorted} in one pass over the
    archive's members (a pattern per sample matched against every member would be quadratic)."""
    index: dict = {}
    for n in names:
        m = _CHUNK.match(n)
        if m:
            index.setdefault((m.group(1), m.group(2)), []).append((int(m.group(3)), n))
    for chunks in index.values():
        chunks.sort()
    return index


def _chunked(z: EvalZip, prefix: str, max_messages: int, index: dict) -> tuple[dict, list]:
    """A chunked sample's shell with its final ``messages`` restored, and its events."""
    shell = z.json(f"{prefix}/sample.json")
    where = show_id(prefix, 60)
    if not isinstance(shell, dict):
        raise LogFormatError(z.name, [f"{where}/sample.json: not a JSON object"])

    def sequence(kind: str) -> list:
        chunks = index.get((prefix, kind), [])
        items: list = []
        for start, member in chunks:
            if start != len(items):
                raise LogFormatError(z.name, [f"{where}: the {kind} chunks are not contiguous"])
            part = z.json(member)
            if not isinstance(part, list):
                raise LogFormatError(z.name, [f"{where}: a {kind} chunk must be a list"])
            items += part
        return items

    pool = sequence("messages")
    refs = shell.get("message_refs") or []
    ok = isinstance(refs, list) and all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        and 0 <= r[0] <= r[1] <= len(pool) for r in refs)
    if not ok:
        raise LogFormatError(z.name, [f"{where}: 'message_refs' must be ranges [start, end) inside the messages"])
    total = sum(b - a for a, b in refs)
    if total > max_messages:  # ranges may repeat: bound the expansion before building it
        raise LogFormatError(z.name, [f"{where}: 'message_refs' expand to {total:,} messages, more than the "
                                      f"{max_messages:,} this installation reads (TPSVIZ_MAX_ROWS)"])
    shell["messages"] = [pool[i] for a, b in refs for i in range(a, b)]
    return shell, sequence("events")


def read_inspect_eval(raw: bytes, name: str, options: ReadOptions, limits) -> HarnessLog:
    """Runs of an Inspect AI ``.eval`` archive (per-sample and chunked samples, deflate or zstd)."""
    z = EvalZip(raw, name, limits.max_bytes, limits.max_json_nodes)
    notes = []
    if z.has("header.json"):
        header = z.json("header.json")
    elif z.has("_journal/start.json"):
        header = z.json("_journal/start.json")
        notes.append("the evaluation had not finished when the log was read (no header): the "
                     "samples written so far are used")
    else:
        raise LogFormatError(name, ["the archive has neither header.json nor _journal/start.json: "
                                    "not an Inspect AI .eval log"])
    if not isinstance(header, dict):
        raise LogFormatError(name, ["header.json is not a JSON object"])
    if header.get("status") not in (None, "success", "started"):
        notes.append(f"the evaluation's status is {show_id(header.get('status'))}: some samples may be missing")
    runs, problems = [], []
    names = z.names
    members, shells, skipped = sample_members(names)
    if skipped:
        notes.append(_skipped_note(skipped))
    index = _chunk_index(names) if shells else {}
    steps_left = limits.max_rows
    for member in members:
        checkpoint()  # stop here if nobody waits for the result (tpsviz.core.cancel)
        s = z.json(member)
        run, problem = _run(s, show_id(member, 60), header, options)
        (problems.append(problem) if problem else runs.append(run))
        if len(problems) > MAX_PROBLEMS:
            break
    for prefix in shells:
        checkpoint()
        s, events = _chunked(z, prefix, steps_left, index)
        steps_left -= len(s.get("messages") or [])
        run, problem = _run(s, show_id(prefix + "/", 60), header, options, events=events)
        (problems.append(problem) if problem else runs.append(run))
        if len(problems) > MAX_PROBLEMS:
            break
    if not members and not shells:
        raise LogFormatError(name, ["the archive holds no samples"])
    return _finish(runs, problems, name, notes)
