"""The shared model of every trace reader (issue 36; docs/traces.md).

A reader of production traces (OTLP JSON with the OpenTelemetry GenAI conventions, OpenInference
spans as Phoenix exports them, Langfuse exports) turns a file into a :class:`TraceFile`: its spans,
each with flattened attributes and the reader's own reading of what the span is (a model call, a
tool call, something else) and of its messages; and the scores or evaluations attached to traces or
spans. :mod:`tpsviz.io.traces.mapping` then maps a trace file onto runs and steps
(:class:`tpsviz.io.harness.runs.Run`), with the same rule for every source.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Span", "TraceScore", "TraceFile", "SPAN_KINDS", "TRACE_SOURCES"]

SPAN_KINDS = ("model", "tool", "other")
TRACE_SOURCES = ("otlp", "openinference", "langfuse")


@dataclass(frozen=True)
class Span:
    """One span (OTLP, OpenInference) or observation (Langfuse).

    Attributes
    ----------
    trace_id, span_id : str
        Identifiers as the file writes them (hex for OTLP).
    parent_id : str or None
        The parent span's id; None for a root span.
    name : str
        The span's name.
    start, end : float or None
        Start and end, in seconds since the Unix epoch (UTC); ``end`` None when not recorded.
    attributes : dict
        Flattened attributes: dotted keys (``gen_ai.request.model``,
        ``llm.output_messages.0.message.content``) to scalars (str, bool, int, float, None) or
        tuples of scalars for array values.
    kind : str
        The reader's default reading, one of :data:`SPAN_KINDS`: ``model`` for a model call (an
        agent step by default: OTLP ``gen_ai.operation.name`` in chat/text_completion/
        generate_content, OpenInference span kind ``LLM``, Langfuse ``GENERATION``), ``tool``
        for a tool call (never a step), ``other`` for the rest.
    input_messages, output_messages : tuple of dict
        The model call's messages where the span records them, each a dict with ``role`` and
        ``content`` (text) and optionally ``tool_calls``: the prefix H_t of the replay
        forecaster is built from them. Empty when not recorded.
    where : str
        How to locate the span in the file for messages ("span 12 of batch 3", "line 40");
        never its content.
    logprobs : tuple of dict
        The output's token log-probabilities where the span records them (``{"logprob": …,
        "top_logprobs": [{"logprob": …}, …]}`` per token, as
        :func:`tpsviz.io.harness.forecasts.logprob_signals` reads them); empty when not recorded.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float
    end: float | None
    attributes: dict
    kind: str = "other"
    input_messages: tuple = ()
    output_messages: tuple = ()
    where: str = ""
    logprobs: tuple = ()


@dataclass(frozen=True)
class TraceScore:
    """A score or evaluation attached to a trace or a span (a Langfuse score, a Phoenix
    evaluation, an outcome attribute written by the application).

    Attributes
    ----------
    trace_id : str
    span_id : str or None
        The span it is attached to, None when it is attached to the whole trace.
    name : str
        The score's name (``success``, ``correctness`` …).
    value : float, bool, str or None
        As recorded: numeric, boolean or categorical.
    where : str
        How to locate it in the file for messages.
    """

    trace_id: str
    span_id: str | None
    name: str
    value: object
    where: str = ""


@dataclass
class TraceFile:
    """What a trace reader returns.

    Attributes
    ----------
    source : str
        One of :data:`TRACE_SOURCES`.
    spans : list of Span
    scores : list of TraceScore
    trace_attributes : dict
        Trace-level attributes by trace id (Langfuse's trace ``name``, ``userId``,
        ``sessionId``, ``metadata.*``; OTLP resource attributes such as ``service.name``),
        flattened as span attributes are.
    notes : list of str
        What the reader noticed (skipped records with their counts, loops in parent links …).
    """

    source: str
    spans: list = field(default_factory=list)
    scores: list = field(default_factory=list)
    trace_attributes: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
