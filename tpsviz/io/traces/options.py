"""How a trace file is mapped onto runs and steps (docs/traces.md): :class:`TraceOptions`, carried
by :class:`tpsviz.io.harness.runs.ReadOptions` (hashable: part of the dashboard's cache key), and
the parsing of its command-line spellings.
"""

from __future__ import annotations

from dataclasses import dataclass

from tpsviz.core.errors import SettingError
from tpsviz.core.wording import setting

__all__ = ["TraceOptions", "parse_rules", "MAX_RULES"]

#: rules of --step-spans or --censor-when read at once
MAX_RULES = 32


@dataclass(frozen=True)
class TraceOptions:
    """The mapping of spans onto runs, steps, outcomes (docs/traces.md).

    Attributes
    ----------
    run_by : str or None
        An attribute (of a span or of the trace) whose value groups traces into one run, e.g.
        ``gen_ai.conversation.id`` or ``session.id``; None: one run per trace.
    step_spans : tuple of (str, str)
        Rules naming the spans that are steps, any of which may match: ``("name", GLOB)`` on the
        span's name, ``(ATTRIBUTE, VALUE)`` on an attribute (equal as text, or one item of an
        array). Empty: the reader's model calls (``Span.kind == "model"``). Tool spans are never
        steps.
    outcome : str or None
        The name of the score, evaluation or attribute (of a span or of the trace) that holds the
        run's outcome: 0/1, true/false, or a number compared with the success threshold.
    censor_when : tuple of (str, str)
        ``(ATTRIBUTE, VALUE)``: a run without an outcome is censored when one of its spans (or
        traces) has the attribute with that value (e.g. ``("agent.stop_reason", "max_turns")``);
        otherwise it is dropped, and counted.
    """

    run_by: str | None = None
    step_spans: tuple = ()
    outcome: str | None = None
    censor_when: tuple = ()

    def describe(self) -> dict:
        """The options as plain values (for JSON output and notes)."""
        return {"run_by": self.run_by, "step_spans": [f"{k}={v}" for k, v in self.step_spans],
                "outcome": self.outcome, "censor_when": [f"{k}={v}" for k, v in self.censor_when]}


def parse_rules(items, name: str) -> tuple:
    """``["name=chat*,agent.kind=llm", …]`` → ``(("name", "chat*"), ("agent.kind", "llm"))``.

    Parameters
    ----------
    items : iterable of str or None
        Comma-separated ``KEY=VALUE`` rules (a value may not hold a comma).
    name : str
        The setting (``step_spans`` or ``censor_when``), for messages.

    Returns
    -------
    tuple of (str, str)

    Raises
    ------
    SettingError
        A part that is not ``KEY=VALUE``, or more than :data:`MAX_RULES` rules.
    """
    out = []
    for item in [items] if isinstance(items, str) else items or ():
        for part in str(item).split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise SettingError(f"{setting(name)} {part.strip()!r}: write it as ATTRIBUTE=VALUE "
                                   "(or name=PATTERN), e.g. gen_ai.operation.name=chat")
            out.append((key.strip(), value.strip()))
    if len(out) > MAX_RULES:
        raise SettingError(f"{setting(name)} names {len(out)} rules; at most {MAX_RULES} are read at once")
    return tuple(out)
