"""The transcripts of a finished harness log, for the replay forecaster (docs/forecasts.md §3).

:func:`read_transcripts` reads a tau-bench, tau2-bench or Inspect AI file with the harness readers
themselves (their file handling, limits and treatment table), so a run's id and its step numbers are
those of ``tpsviz score``: step t is the run's t-th assistant message, and only the runs the
treatment table keeps are returned. :func:`render_prefix` writes the transcript prefix H_t as text:
every message up to and including the agent's t-th message, tool calls and tool results included,
nothing after it. The log's reward, termination reason, scores and message metadata are never part
of a message's text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from tpsviz.core.errors import LogFormatError
from tpsviz.io.files import Limits, limits_from_env, read_file
from tpsviz.io.harness import HARNESS_FORMATS, detect_format, read_harness_log, read_tau2_dir_log
from tpsviz.io.harness.runs import ReadOptions, runs_to_frame
from tpsviz.io.loading import guarded, read_outcomes_table
from tpsviz.io.traces.read import TRACE_FORMATS, read_trace_log

__all__ = ["Transcript", "read_transcripts", "render_prefix", "render_message", "render_messages", "DEFAULT_MAX_CHARS"]

#: the default bound of a rendered prefix, in characters (~6,000 tokens at 4 characters a token)
DEFAULT_MAX_CHARS = 24_000

_LABELS = {"system": "SYSTEM", "user": "USER", "assistant": "AGENT", "tool": "TOOL RESULT"}


@dataclass(frozen=True)
class Transcript:
    """One kept run of a harness log: its messages and where each agent step ends.

    Attributes
    ----------
    trajectory_id : str
        The run's id, as the readers spell it (the long format's ``trajectory_id``).
    messages : tuple of dict
        The run's messages in order.
    ends : tuple of int
        ``ends[t - 1]``: the number of messages of H_t, i.e. the index of the agent's t-th
        message plus one.
    """

    trajectory_id: str
    messages: tuple
    ends: tuple

    @property
    def steps(self) -> int:
        """The run's agent steps T (the readers' step rows 1..T)."""
        return len(self.ends)


def read_transcripts(path, options: ReadOptions | None = None, limits: Limits | None = None,
                     outcomes=None, *, raw: bytes | None = None) -> tuple[list[Transcript], dict]:
    """The kept runs of a harness log file, with their messages.

    Parameters
    ----------
    path : str or Path
        A tau-bench (v1) ``.json``, a tau2-bench results ``.json`` or folder, an Inspect AI
        ``.eval`` or ``.json`` log, or a trace file (OTLP JSON, OpenInference, Langfuse).
    options : ReadOptions, optional
        The reading options ``score`` is given (format, treatments, scorer, success threshold):
        they decide which runs are kept, hence which rows the forecasts table needs.
    limits : Limits, optional
        Default from the environment (``TPSVIZ_MAX_FILE_MB``, ``TPSVIZ_MAX_ROWS`` …).
    outcomes : str, PathLike or (bytes, name), optional
        A trace file's outcomes table (or Phoenix evaluations), as ``score --outcomes`` takes it:
        with ``options.traces`` it decides which runs are kept (docs/traces.md).
    raw : bytes, optional
        The file's bytes, already read (an upload, or a file read under the data roots): ``path``
        then only names it, and is never opened. A tau2-bench folder layout needs its path.

    Returns
    -------
    transcripts : list of Transcript
        In the log's order.
    reading : dict
        The reading record of :func:`tpsviz.io.harness.runs.runs_to_frame` (format, treatments,
        dropped runs, notes).

    Raises
    ------
    LogFormatError
        For a file that is not a harness log, or one the readers refuse (named as ``score``
        names it).
    OSError
        For a path that is not a readable regular file within the size limit.
    """
    limits = limits or limits_from_env()
    options = replace(options or ReadOptions(), transcripts=True)
    p = Path(path)
    name = p.name or str(p)
    log, kind = _read_log(p, name, options, limits, outcomes, raw)
    frame, reading = guarded(runs_to_frame, name, kind, log, options, name, limits.max_rows)
    kept = set(frame["trajectory_id"].astype(str))
    del frame
    out = []
    for run in log.runs:
        if run.trajectory_id not in kept:
            continue
        messages = run.messages or []
        ends = tuple(i + 1 for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant")
        if len(ends) != len(run.steps) or any(messages[e - 1] is not s for e, s in zip(ends, run.steps)):
            raise LogFormatError(name, [f"{run.where}: its agent messages could not be matched to its steps"])
        out.append(Transcript(run.trajectory_id, tuple(messages), ends))
    return out, reading


def _read_log(p: Path, name: str, options: ReadOptions, limits: Limits, outcomes=None, raw: bytes | None = None):
    """(HarnessLog, format) of a harness log file, or of a tau2-bench folder layout given as the
    folder or as its ``results.json`` index (read with ``simulations/`` beside it); ``raw``: the
    file's bytes, read already (then ``p`` is not opened)."""
    if raw is None and p.is_dir():
        if options.fmt not in (None, "tau2") or not (p / "results.json").is_file():
            raise LogFormatError(name, ["is a folder without results.json; the replay reads one harness log file "
                                        "(a tau-bench or tau2-bench results .json, an Inspect AI .eval or .json) "
                                        "or a tau2-bench results folder (results.json with simulations/)"])
        return guarded(read_tau2_dir_log, name, "tau2", p, options, limits, name), "tau2"
    given = raw is not None
    if raw is None:
        raw = read_file(p, limits.max_bytes, label=name)
    elif len(raw) > limits.max_bytes:
        raise LogFormatError(name, [f"is larger than the limit of {limits.max_bytes:,} bytes"])
    kind, parsed = (options.fmt, None) if options.fmt else detect_format(raw, name, limits.max_json_nodes)
    if kind == "tau2-index" or (kind == "tau2" and parsed is None and _is_tau2_index(raw, name, limits)):
        if given:
            raise LogFormatError(name, ["is the index of a tau2-bench results folder: its simulations are read "
                                        "from the folder, which was not given"])
        del raw, parsed
        folder = p.resolve().parent
        return guarded(read_tau2_dir_log, name, "tau2", folder, options, limits, folder.name or name), "tau2"
    if kind in TRACE_FORMATS:
        table = read_outcomes_table(outcomes, limits) if outcomes is not None else None
        return guarded(read_trace_log, name, kind, raw, name, kind, options, limits, parsed, table)[0], kind
    if kind not in HARNESS_FORMATS:
        raise LogFormatError(name, [f"is read as a {kind} file; the replay needs the messages of a harness log "
                                    "(tau-bench, tau2-bench or Inspect AI) or a trace file: a table holds none"])
    return guarded(read_harness_log, name, kind, raw, name, kind, options, limits, parsed), kind


def _is_tau2_index(raw: bytes, name: str, limits: Limits) -> bool:
    """Whether a file forced to be read as tau2 is the index of a folder layout."""
    try:
        kind, _ = detect_format(raw, name, limits.max_json_nodes)
    except LogFormatError:
        return False
    return kind == "tau2-index"


def _part(part) -> str:
    """One part of a list content: its text; reasoning marked as such (``(reasoning) …``, or
    ``(reasoning withheld)`` when redacted); any other part named by its type (``[image]``), never
    its bytes."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return "[part]"
    kind = part.get("type")
    if kind == "reasoning":
        text = part.get("summary") if part.get("redacted") else part.get("reasoning")
        return "(reasoning) " + text if isinstance(text, str) and text else "(reasoning withheld)"
    text = part.get("text") if kind in ("text", "output_text", "input_text", None) else None
    return text if isinstance(text, str) else f"[{kind if isinstance(kind, str) else 'part'}]"


def _text(content) -> str:
    """A message's content as text: a string, or its parts one per line (:func:`_part`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p for p in map(_part, content) if p)
    return json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)


def _call(tc) -> tuple[str, str, str]:
    """(id, name, arguments as text) of a tool call in the OpenAI (``function: {name, arguments}``),
    tau2 (``name``, ``arguments``) or Inspect (``function``, ``arguments``) shape."""
    if not isinstance(tc, dict):
        return "", "tool", _text(tc)
    fn = tc.get("function")
    name = fn.get("name") if isinstance(fn, dict) else (fn if isinstance(fn, str) else tc.get("name"))
    args = fn.get("arguments") if isinstance(fn, dict) else tc.get("arguments")
    args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    call_id = tc.get("id")
    return str(call_id) if call_id is not None else "", str(name) if name else "tool", args


def render_message(m, calls: dict | None = None) -> str:
    """One message as role-labelled text: its text, its tool calls, or the tool result it holds.

    Parameters
    ----------
    m : dict
        A message of a tau-bench, tau2-bench or Inspect AI log.
    calls : dict, optional
        Tool call id -> tool name of the earlier messages (updated with this message's calls):
        names the tool of a result that does not name it.

    Returns
    -------
    str
        ``### AGENT`` (or ``SYSTEM``, ``USER``, ``TOOL RESULT (name)``) and the text; only the
        role, content, tool calls and tool name are read, never metadata or scores.
    """
    calls = {} if calls is None else calls
    if not isinstance(m, dict):
        return ""
    role = m.get("role") if isinstance(m.get("role"), str) else "message"
    label = _LABELS.get(role, role.upper())
    lines = []
    if role == "tool":
        ref = m.get("tool_call_id", m.get("id"))
        tool = m.get("name") or m.get("function") or calls.get(str(ref))
        if isinstance(tool, str) and tool:
            label = f"{label} ({tool})"
        if m.get("error") not in (None, False, "", {}):
            label += " [error]"
    text = _text(m.get("content"))
    if text.strip():
        lines.append(text.strip())
    error = m.get("error")
    if role == "tool" and isinstance(error, dict) and isinstance(error.get("message"), str):
        lines.append(f"(tool error: {error['message']})")
    for tc in m.get("tool_calls") or []:
        call_id, name, args = _call(tc)
        calls[call_id] = name
        lines.append(f"[tool call] {name}({args})")
    return f"### {label}\n" + ("\n".join(lines) if lines else "(empty)")


def render_prefix(transcript: Transcript, step: int, max_chars: int = DEFAULT_MAX_CHARS) -> tuple[str, bool]:
    """The transcript prefix H_t as text, bounded to about ``max_chars`` characters.

    Parameters
    ----------
    transcript : Transcript
    step : int
        t, from 1 to ``transcript.steps``.
    max_chars : int
        The bound. A longer prefix keeps the transcript's beginning (its first third of the bound:
        the system prompt, the opening), the task statement (the first user message, cut to a
        quarter of the bound) when the beginning does not hold it whole, and the end of the
        transcript, with a line saying how many characters were left out before the end. The cut
        is made so that the prompts of consecutive steps begin with the same text, as a provider's
        prefix cache needs: the beginning and the task statement never change, and the end starts
        a whole number of blocks (half the room left for the end, at least an eighth of the bound)
        after the beginning, the fewest that keep within the bound; as the transcript grows, the
        cut stays where it is until the end outgrows its room, then moves by blocks. The end kept
        holds between half its room and all of it.

    Returns
    -------
    text : str
    truncated : bool
        Whether characters were left out.
    """
    if not 1 <= step <= transcript.steps:
        raise ValueError(f"step {step} is not an agent step of run {transcript.trajectory_id!r} (1..{transcript.steps})")
    return render_messages(transcript.messages[:transcript.ends[step - 1]], max_chars)


def render_messages(messages, max_chars: int = DEFAULT_MAX_CHARS) -> tuple[str, bool]:
    """Messages as role-labelled text (:func:`render_message`, a blank line between them), bounded to
    about ``max_chars`` characters as :func:`render_prefix` says. The replay and the judge of the
    elicitation (tpsviz.forecasts.elicit) both render H_t with it, so a judge reads one format.

    Parameters
    ----------
    messages : sequence of dict
        Every message of the prefix, in order (non-dict items are skipped).
    max_chars : int
        The bound.

    Returns
    -------
    text : str
    truncated : bool
    """
    messages = [m for m in messages if isinstance(m, dict)]
    calls: dict = {}
    parts = [render_message(m, calls) for m in messages]
    text = "\n\n".join(parts)
    if len(text) <= max_chars:
        return text, False
    first = max_chars // 3
    first_user = next((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), None)
    task = ""
    if first_user is not None and first_user < len(messages) - 1 \
            and len("\n\n".join(parts[:first_user + 1])) > first:  # the task statement is not whole in the beginning
        task = parts[first_user]
        if len(task) > max_chars // 4:
            task = task[:max_chars // 4] + " […]"
        task = "(the task statement, the transcript's first user message)\n" + task + "\n\n"
    keep = max(max_chars - first - len(task), max_chars // 8)
    block = max(1, keep // 2)
    left_out = -(-(len(text) - first - keep) // block) * block  # rounded up to whole blocks: the cut moves by blocks
    tail = text[first + left_out:]
    return f"{text[:first]}\n\n{task}[… {left_out:,} characters of the transcript left out …]\n\n{tail}", True
