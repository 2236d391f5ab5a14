"""One run's transcript split at the agent's steps, as the replay forecaster splits it (issue 46).

The replay's prompt for step t holds H_t: every message up to and including the agent's t-th
message (:func:`tpsviz.io.harness.transcripts.render_prefix`). Here each message is put at the
first step whose prefix holds it, so step t shows what H_t adds to H_{t−1}: the user's turn, tool
results, and the agent's t-th message with its tool calls. Messages after the agent's last message
(a closing user turn, a last tool result) come after the last step. Each message is rendered with
the replay's own :func:`~tpsviz.io.harness.transcripts.render_message`, so the page reads what a
replayed model reads.

:func:`read_run_transcript` reads one run's transcript from a harness log (tau-bench, tau2-bench
in both layouts, Inspect AI) or a trace file (OTLP JSON, OpenInference, Langfuse).
"""

from __future__ import annotations

from dataclasses import dataclass

from tpsviz.io.files import Limits
from tpsviz.io.harness.runs import ReadOptions
from tpsviz.io.harness.transcripts import Transcript, read_transcripts, render_message
from tpsviz.io.traces.detect import TRACE_FORMATS

__all__ = ["MESSAGE_FORMATS", "KINDS", "StepMessage", "has_messages", "transcript_steps", "read_run_transcript",
           "cut_text"]

#: the ``reading["format"]`` of the logs whose messages can be read (a table holds none)
MESSAGE_FORMATS = ("tau-bench", "tau2-bench", "inspect") + TRACE_FORMATS
#: the kinds of message told apart: who speaks, and whether the agent calls a tool
KINDS = ("system", "user", "agent", "agent (tool call)", "tool result", "other")


@dataclass(frozen=True)
class StepMessage:
    """One message of a run, at the agent step that first holds it.

    Attributes
    ----------
    step : int
        t: the message is in H_t and not in H_{t−1} (T + 1: after the agent's last message).
    index : int
        Its position among the run's messages (0-based).
    kind : str
        One of :data:`KINDS`.
    label : str
        Its heading as the replay writes it (``AGENT``, ``USER``, ``TOOL RESULT (name)``, …).
    text : str
        Its text as the replay writes it: the content, ``[tool call] name(arguments)`` lines, a
        tool's error; never the message's metadata, scores or the run's reward.
    """

    step: int
    index: int
    kind: str
    label: str
    text: str


def has_messages(reading: dict | None) -> bool:
    """Whether a log read with this reading record (``TrajectoryData.reading``) has messages."""
    return str((reading or {}).get("format")) in MESSAGE_FORMATS


def _kind(m: dict) -> str:
    role = m.get("role")
    if role == "assistant":
        return "agent (tool call)" if m.get("tool_calls") else "agent"
    if role == "tool":
        return "tool result"
    return role if role in ("system", "user") else "other"


def transcript_steps(transcript: Transcript) -> list[StepMessage]:
    """Every message of a run, each at the first agent step whose prefix H_t holds it.

    Parameters
    ----------
    transcript : Transcript
        :func:`tpsviz.io.harness.transcripts.read_transcripts`'s, one run.

    Returns
    -------
    list of StepMessage
        In the run's order; messages that are not objects are left out, as the replay leaves them out.
    """
    ends = transcript.ends
    calls: dict = {}
    out, t = [], 0
    for i, m in enumerate(transcript.messages):
        while t < len(ends) and i >= ends[t]:
            t += 1
        if not isinstance(m, dict):
            continue
        head, _, body = render_message(m, calls).partition("\n")
        out.append(StepMessage(step=t + 1, index=i, kind=_kind(m), label=head.removeprefix("### "), text=body))
    return out


def read_run_transcript(path, run_id: str, options: ReadOptions | None = None, limits: Limits | None = None,
                        outcomes=None, raw: bytes | None = None) -> Transcript | None:
    """One run's transcript of a harness log or trace file (None: the log keeps no run with this id).

    The whole file is read (as :func:`~tpsviz.io.harness.transcripts.read_transcripts` reads it,
    within its limits) and only this run's messages are kept.

    Parameters
    ----------
    path : str or Path
        The file (or a tau2-bench results folder); with ``raw``, only its name.
    run_id : str
    options : ReadOptions, optional
        The options the log was read with (they decide which runs are kept).
    limits : Limits, optional
    outcomes : optional
        A trace file's outcomes table, as ``read_transcripts`` takes it.
    raw : bytes, optional
        The file's bytes, read already.

    Returns
    -------
    Transcript or None

    Raises
    ------
    LogFormatError, OSError
        As ``read_transcripts`` raises them.
    """
    transcripts, _ = read_transcripts(path, options, limits, outcomes, raw=raw)
    return next((tr for tr in transcripts if tr.trajectory_id == str(run_id)), None)


def cut_text(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters.

    Returns
    -------
    text : str
        The first ``limit`` characters (all of it when shorter).
    left_out : int
        Characters left out (0: none).
    """
    text = str(text)
    limit = max(int(limit), 0)
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)
