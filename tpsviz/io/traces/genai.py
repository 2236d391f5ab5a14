"""The messages of a model call as the OpenTelemetry GenAI semantic conventions record them
(docs/traces.md), read into the plain messages the replay renders (``role``, ``content`` text,
``tool_calls``, ``tool_call_id``).

Three generations of the conventions are read, newest first:

- the span attributes ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
  ``gen_ai.output.messages`` (a JSON text, or the same structure as OTLP array/key-value values):
  messages ``{role, parts: [{type: text, content}, {type: tool_call, id, name, arguments},
  {type: tool_call_response, id, response}, {type: reasoning, content} …], finish_reason}``; the
  same attributes on a ``gen_ai.client.inference.operation.details`` event;
- the per-message events ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (``content``, ``tool_calls``, ``id``) and
  ``gen_ai.choice`` (``message``, ``finish_reason``);
- the oldest ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events with the attributes
  ``gen_ai.prompt`` / ``gen_ai.completion`` (a JSON list of messages, or plain text).

Nothing here raises on a malformed value: it is counted by the caller, never echoed.
"""

from __future__ import annotations

import json

__all__ = ["MESSAGE_ATTRIBUTES", "MAX_MESSAGES", "genai_messages", "plain_message", "token_logprobs"]

#: span attributes that hold messages: read into the span's messages, not kept as attributes
MESSAGE_ATTRIBUTES = ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages",
                      "gen_ai.prompt", "gen_ai.completion")
#: messages read from one span at most (a longer history keeps its last ones)
MAX_MESSAGES = 10_000

_ROLE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"


class BadMessages(ValueError):
    """A message attribute that is neither a message list nor text (counted, never echoed)."""


def _json(value):
    """A message value as a structure: JSON text parsed, a structure as it is."""
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("[", "{"):
            try:
                return json.loads(s)
            except (ValueError, RecursionError):
                raise BadMessages("not JSON") from None
        return value
    return value


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _parts(parts, role: str) -> dict:
    """A message of the current conventions (its ``parts``) as a plain message."""
    texts, calls, out = [], [], {"role": role}
    for part in parts if isinstance(parts, list) else [parts]:
        if not isinstance(part, dict):
            texts.append(_text(part))
            continue
        kind = part.get("type")
        if kind == "tool_call":
            calls.append({"id": _text(part.get("id")), "name": _text(part.get("name")) or "tool",
                          "arguments": _text(part.get("arguments"))})
        elif kind == "tool_call_response":
            out["tool_call_id"] = _text(part.get("id"))
            texts.append(_text(part.get("response", part.get("result"))))
        elif kind == "reasoning":
            texts.append("(reasoning) " + _text(part.get("content")))
        elif kind == "text" or "content" in part:
            texts.append(_text(part.get("content")))
        else:
            texts.append(f"[{_text(kind) or 'part'}]")
    out["content"] = "\n".join(t for t in texts if t)
    if calls:
        out["tool_calls"] = calls
    return out


def plain_message(m, role: str | None = None) -> dict:
    """One message of any generation of the conventions (or the OpenAI chat shape) as a plain
    message ``{role, content, tool_calls?, tool_call_id?}``.

    Parameters
    ----------
    m : dict or str
        The message; a text is a message of ``role``.
    role : str, optional
        The role when the message does not say it.

    Returns
    -------
    dict
    """
    if not isinstance(m, dict):
        return {"role": role or "user", "content": _text(m)}
    r = m.get("role") if isinstance(m.get("role"), str) else (role or "user")
    if "parts" in m:
        return _parts(m.get("parts"), r)
    out = {"role": r, "content": _content(m.get("content"))}
    calls = m.get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [c for c in calls if isinstance(c, dict)]
    if m.get("tool_call_id") is not None or (r == "tool" and m.get("id") is not None):
        out["tool_call_id"] = _text(m.get("tool_call_id", m.get("id")))
    return out


def _content(content) -> str:
    if isinstance(content, list):  # [{type: text, text}, …] of the OpenAI shape, or parts
        return "\n".join(_text(p.get("text", p.get("content"))) if isinstance(p, dict) else _text(p)
                         for p in content)
    return _text(content)


def _message_list(value, role: str) -> list:
    value = _json(value)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise BadMessages("not a list")
    return [plain_message(m, role) for m in value[-MAX_MESSAGES:]]


def _system(value) -> list:
    value = _json(value)
    if isinstance(value, list) and value and all(isinstance(p, dict) and "role" not in p for p in value):
        return [_parts(value, "system")]
    return _message_list(value, "system")


def _from_attributes(attrs: dict) -> tuple[list, list]:
    inputs, outputs = [], []
    if attrs.get("gen_ai.system_instructions") is not None:
        inputs += _system(attrs["gen_ai.system_instructions"])
    for key, into, role in (("gen_ai.input.messages", inputs, "user"), ("gen_ai.prompt", inputs, "user"),
                            ("gen_ai.output.messages", outputs, "assistant"),
                            ("gen_ai.completion", outputs, "assistant")):
        if attrs.get(key) is not None:
            into += _message_list(attrs[key], role)
    return inputs, outputs


def _from_event(name: str, attrs: dict, inputs: list, outputs: list) -> None:
    if name in _ROLE_EVENTS:
        m = {"role": attrs.get("role") if isinstance(attrs.get("role"), str) else _ROLE_EVENTS[name],
             "content": _json(attrs.get("content"))}
        for k in ("tool_calls", "id"):
            if k in attrs:
                m[k] = _json(attrs[k])
        inputs.append(plain_message(m))
    elif name == "gen_ai.choice":
        msg = _json(attrs.get("message"))
        if not isinstance(msg, dict):
            msg = {"content": attrs.get("content"), "tool_calls": attrs.get("tool_calls")}
        outputs.append(plain_message({**msg, "role": msg.get("role") or "assistant"}))
    elif name in (_DETAILS_EVENT, "gen_ai.content.prompt", "gen_ai.content.completion"):
        more_in, more_out = _from_attributes(attrs)
        inputs += more_in
        outputs += more_out


def genai_messages(attrs: dict, events: list) -> tuple[tuple, tuple]:
    """The input and output messages of a span.

    Parameters
    ----------
    attrs : dict
        The span's attributes as structures (before flattening).
    events : list of (str, dict)
        The span's events: name and attributes as structures.

    Returns
    -------
    input_messages, output_messages : tuple of dict
        Plain messages; the attributes win over the events when both are present.

    Raises
    ------
    BadMessages
        A message attribute that is neither JSON messages nor text.
    """
    inputs, outputs = _from_attributes(attrs)
    if not inputs and not outputs:
        for name, ev in events:
            _from_event(name, ev, inputs, outputs)
    return tuple(inputs[-MAX_MESSAGES:]), tuple(outputs[-MAX_MESSAGES:])


def token_logprobs(attrs: dict) -> tuple:
    """Token log-probabilities recorded with the output where an instrumentation keeps them
    (no convention names them: an output message's ``logprobs``, as a list of tokens or the OpenAI
    ``{content: [...]}`` shape), as a tuple of ``{logprob, top_logprobs}`` dicts; empty when none."""
    try:
        out = _json(attrs.get("gen_ai.output.messages"))
    except BadMessages:
        return ()
    for m in out if isinstance(out, list) else []:
        lp = m.get("logprobs") if isinstance(m, dict) else None
        if isinstance(lp, dict):
            lp = lp.get("content")
        if isinstance(lp, list) and lp:
            return tuple(t for t in lp if isinstance(t, dict))
    return ()
