"""tau2-bench results (sierra-research/tau2-bench): the single JSON file
``{"info", "tasks", "simulations": [...]}`` and the directory layout (``results.json`` with
``simulation_index`` plus ``simulations/<id>.json``). See docs/harness.md.

- One run per simulation; ``trajectory_id`` = the simulation ``id``; step t = the t-th
  assistant message of the run.
- Outcome: success iff ``reward_info.reward`` ≥ the success threshold (default 1 − 1e-6, the
  harness's own |reward − 1| ≤ 1e-6).
- Censoring comes from ``termination_reason``, never from the reward: the harness writes reward
  0 on every premature stop.
- Time and cost (:mod:`tpsviz.io.harness.times`): ``start_time`` and ``end_time`` (else
  ``timestamp``, written when the run ended) as recorded, ``duration_s`` from ``duration``, ``cost``
  from ``agent_cost`` (tau2's ``SimulationRun``).
"""

from __future__ import annotations

from tpsviz.core.errors import MAX_PROBLEMS, LogFormatError
from tpsviz.core.schema import show_id
from tpsviz.io.harness.forecasts import message_value
from tpsviz.io.harness.runs import HarnessLog, ReadOptions, Run, is_key, is_number
from tpsviz.io.harness.times import time_metadata

__all__ = ["read_tau2", "DEFAULT_TREATMENT"]

DEFAULT_TREATMENT = {
    "user_stop": "outcome",
    "agent_stop": "outcome",
    "max_steps": "censored",
    "timeout": "censored",
    "context_window_exceeded": "censored",
    "too_many_errors": "failure",
    "agent_error": "failure",
    "user_error": "failure",
    "infrastructure_error": "dropped",
    "unexpected_error": "dropped",
}
REASON_HELP = {
    "user_stop": "the user simulator ended the conversation; the reward is the harness's judgement",
    "agent_stop": "the agent ended the run; the reward is the harness's judgement",
    "max_steps": "stopped by the step budget: reward 0 is written without judging the run",
    "timeout": "stopped by the time limit: reward 0 is written without judging the run",
    "context_window_exceeded": "stopped by the context window: reward 0 without judging",
    "too_many_errors": "too many tool errors: the agent failed",
    "agent_error": "the agent broke the protocol: a failure of the agent",
    "user_error": "the user simulator broke the protocol (counted as a failure by default)",
    "infrastructure_error": "the harness failed (API, worker): no result; tau2's own metrics exclude it",
    "unexpected_error": "an unexpected harness error: no result",
}


def _logprobs(msg: dict):
    """Token log-probabilities in a tau2 message's raw litellm response, if requested."""
    for path in ("raw_data.choices.0.logprobs.content", "raw_data.logprobs.content"):
        v = message_value(msg, path)
        if isinstance(v, list) and v:
            return v
    return None


def read_tau2(obj: dict, name: str, options: ReadOptions, simulations: list | None = None) -> HarnessLog:
    """Runs of a tau2-bench results object.

    Parameters
    ----------
    obj : dict
        The parsed ``results.json`` (monolithic, or the directory layout's index file).
    name : str
        File name for messages.
    options : ReadOptions
    simulations : list of (label, dict), optional
        The directory layout's ``simulations/*.json`` (label = file name), instead of
        ``obj["simulations"]``.

    Raises
    ------
    LogFormatError
        Naming the file, the simulation (index and id) and the field.
    """
    info = obj.get("info") if isinstance(obj.get("info"), dict) else {}
    model = message_value(info, "agent_info.llm") or message_value(info, "agent_info.implementation")
    domain = message_value(info, "environment_info.domain_name")
    context = {"model": model if isinstance(model, str) else None,
               "domain": domain if isinstance(domain, str) else None, "transcripts": options.transcripts}
    if simulations is None:
        sims = obj.get("simulations")
        if not isinstance(sims, list):
            raise LogFormatError(name, ["'simulations' must be a list of simulation objects"])
        sims = [(f"simulation {i + 1}", s) for i, s in enumerate(sims)]
    else:
        sims = simulations
    problems: list[str] = []
    runs: list[Run] = []
    seen: dict[str, str] = {}
    voice = 0
    thr = options.threshold
    for where, sim in sims:
        if len(problems) > MAX_PROBLEMS:
            break
        run, problem = _run_of(where, sim, seen, thr, context)
        if problem:
            problems.append(problem)
        elif run is None:
            voice += 1  # full-duplex voice runs keep ticks, not messages
        else:
            runs.append(run)
    if problems:
        raise LogFormatError(name, problems)
    notes = []
    if voice:
        notes.append(f"{voice} full-duplex voice simulation(s) store audio ticks, not messages, and "
                     "were left out")
    return HarnessLog("tau2-bench", runs, dict(DEFAULT_TREATMENT), notes, dict(REASON_HELP), task_column="task_id")


def _run_of(where: str, sim, seen: dict, thr: float, context: dict) -> tuple[Run | None, str | None]:
    """One simulation as a run, or the problem that prevents it; (None, None) for a voice
    simulation. ``seen``: ids read so far (updated); ``context``: the model and domain of the file,
    and whether to keep the messages (``transcripts``)."""
    if not isinstance(sim, dict):
        return None, f"{where}: not a JSON object"
    sid = sim.get("id")
    if not is_key(sid) or str(sid).strip() == "":
        return None, f"{where}: field 'id' is missing"
    sid = str(sid)
    label = f"{where} (id {show_id(sid)})"
    if sid in seen:
        return None, f"{label}: the id already appeared in {seen[sid]}"
    seen[sid] = where
    reason = sim.get("termination_reason")
    if not isinstance(reason, str) or not reason:
        return None, f"{label}: field 'termination_reason' is missing"
    messages = sim.get("messages")
    if messages is None and sim.get("ticks") is not None:
        return None, None
    if messages is None:
        messages = []
    if not isinstance(messages, list):
        return None, f"{label}: field 'messages' must be a list"
    reward_info = sim.get("reward_info")
    reward = reward_info.get("reward") if isinstance(reward_info, dict) else None
    if reward is not None and not is_number(reward):
        return None, f"{label}: field 'reward_info.reward' is not a finite number"
    outcome = None if reward is None else float(reward >= thr)
    steps = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    task, trial = sim.get("task_id"), sim.get("trial")
    meta = {"task_id": str(task) if isinstance(task, (str, int)) else None,
            "trial": trial if isinstance(trial, int) and not isinstance(trial, bool) else None,
            "model": context["model"], "domain": context["domain"],
            "termination_reason": reason}
    end = sim.get("end_time") if isinstance(sim.get("end_time"), str) else sim.get("timestamp")
    meta.update(time_metadata(sim.get("start_time"), end, sim.get("duration"), sim.get("agent_cost")))
    return Run(sid, reason, outcome, steps, [_logprobs(m) for m in steps], meta, label,
               messages if context["transcripts"] else None), None
