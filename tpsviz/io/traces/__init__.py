"""Readers of production traces: OpenTelemetry GenAI (OTLP JSON), OpenInference (Phoenix) and
Langfuse exports, and the one mapping of their spans onto runs and steps (issue 36; docs/traces.md).

Each reader returns a :class:`tpsviz.io.traces.spans.TraceFile`; the mapping turns it into the
shared run model of :mod:`tpsviz.io.harness.runs`, which the harness readers produce too.
"""
