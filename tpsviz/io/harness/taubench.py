"""tau-bench (v1) trajectories (sierra-research/tau-bench): a JSON list of
``{task_id, trial, reward, info, traj}``. See docs/harness.md.

- ``trajectory_id`` = ``"<task_id>-<trial>"``; step t = the t-th assistant message of ``traj``.
- A run that hit the step cap (``max_num_steps``, 30 by default) has ``info.reward_info``
  null and no ``info.error``: censored. A crashed run has ``info.error`` (and an empty
  ``traj``): dropped and counted. Otherwise the outcome comes from ``reward``.
- The JSON holds neither the model nor the environment: the model is taken from the file name
  the harness writes (``<strategy>-<model>-<temperature>_range_…``) when it has that form, the
  domain from the policy text that opens the conversation.
"""

from __future__ import annotations

import re

from tpsviz.core.errors import MAX_PROBLEMS, LogFormatError
from tpsviz.core.schema import show_id
from tpsviz.io.harness.runs import HarnessLog, ReadOptions, Run, is_key, is_number

__all__ = ["read_taubench", "DEFAULT_TREATMENT"]

DEFAULT_TREATMENT = {"done": "outcome", "max_num_steps": "censored", "error": "dropped"}
REASON_HELP = {
    "done": "the conversation ended (user stop or a terminating tool); the reward is the judgement",
    "max_num_steps": "stopped by the step cap: info.reward_info is null, the reward 0 is not a judgement",
    "error": "the run crashed (info.error): no result",
}
_FILE = re.compile(r"^(?:tool-calling|act|react|few-shot|[a-z-]+)-(?P<model>.+)-(?P<temp>[0-9.]+)_range_")


def _domain(traj: list) -> str | None:
    for m in traj[:2]:
        text = m.get("content") if isinstance(m, dict) else None
        if isinstance(text, str):
            head = text.lstrip()[:200].lower()
            if "airline" in head:
                return "airline"
            if "retail" in head:
                return "retail"
    return None


def read_taubench(obj: list, name: str, options: ReadOptions) -> HarnessLog:
    """Runs of a tau-bench (v1) results list.

    Raises
    ------
    LogFormatError
        Naming the file, the record (index, task and trial) and the field.
    """
    m = _FILE.match(str(name).rsplit("/", 1)[-1])
    model = m.group("model") if m else None
    thr = options.threshold
    problems: list[str] = []
    runs: list[Run] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(obj, start=1):
        if len(problems) > MAX_PROBLEMS:
            break
        where = f"record {i}"
        if not isinstance(rec, dict):
            problems.append(f"{where}: not a JSON object")
            continue
        task, trial = rec.get("task_id"), rec.get("trial")
        if not is_key(task):
            problems.append(f"{where}: field 'task_id' is missing or not a text or number")
            continue
        if trial is not None and not is_key(trial):
            problems.append(f"{where}: field 'trial' is not a text or number")
            continue
        tid = f"{task}-{trial if trial is not None else 0}"
        label = f"{where} (run {show_id(tid)})"
        if tid in seen:
            problems.append(f"{label}: this task and trial already appeared in record {seen[tid]}")
            continue
        seen[tid] = i
        info = rec.get("info")
        traj = rec.get("traj") or []
        if not isinstance(traj, list):
            problems.append(f"{label}: field 'traj' must be a list of messages")
            continue
        if isinstance(info, str) or (isinstance(info, dict) and info.get("error") is not None):
            reason = "error"   # a crash (older files store info as the error string)
        elif not isinstance(info, dict):
            problems.append(f"{label}: field 'info' is missing")
            continue
        elif info.get("reward_info") is None:
            reason = "max_num_steps"
        else:
            reason = "done"
        reward = rec.get("reward")
        if reason == "done" and not is_number(reward):
            problems.append(f"{label}: field 'reward' is not a finite number")
            continue
        outcome = float(reward >= thr) if reason == "done" else None
        steps = [msg for msg in traj if isinstance(msg, dict) and msg.get("role") == "assistant"]
        meta = {"task_id": str(task), "trial": trial if isinstance(trial, int) else None, "model": model,
                "domain": _domain(traj),
                "termination_reason": reason}
        runs.append(Run(tid, reason, outcome, steps, [None] * len(steps), meta, label,
                        traj if options.transcripts else None))
    if problems:
        raise LogFormatError(name, problems)
    notes = [] if model else ["the model is not recorded in a tau-bench file (nor in this file's name)"]
    return HarnessLog("tau-bench", runs, dict(DEFAULT_TREATMENT), notes, dict(REASON_HELP), task_column="task_id")
