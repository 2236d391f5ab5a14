"""A transcript prefix H_t rendered as plain text for a judge model (the judge prompt's
``{transcript}``).

Messages are plain dicts as logs store them: Inspect AI's (``role``, ``content`` as a text or a
list of parts ``{"type": "text" | "reasoning" | "image" | …}``, ``tool_calls`` of
``{"function": NAME, "arguments": {…}}``, a tool message's ``function`` and ``error``) and the
OpenAI chat shape (``tool_calls`` of ``{"function": {"name", "arguments"}}``, a tool message's
``name``). Each message becomes a header line ``[role]`` (``[tool NAME]`` for a tool result)
followed by its text, one line ``-> call NAME(ARGUMENTS)`` per tool call, and a blank line.
"""

from __future__ import annotations

import json

__all__ = ["render_transcript", "render_message"]


def _content_text(content) -> str:
    """The text of a message's content: a text, or the parts' texts one per line (reasoning
    marked as such, redacted reasoning and images named, never their bytes)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content)
    lines = []
    for part in content:
        if isinstance(part, str):
            lines.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            lines.append(str(part.get("text") or ""))
        elif kind == "reasoning":
            text = part.get("summary") if part.get("redacted") else part.get("reasoning")
            lines.append("(reasoning) " + str(text) if text else "(reasoning withheld)")
        else:
            lines.append(f"({kind or 'content'})")
    return "\n".join(line for line in lines if line)


def _arguments(args) -> str:
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(args)


def _call_line(call) -> str:
    if not isinstance(call, dict):
        return "-> call (unreadable)"
    fn = call.get("function")
    if isinstance(fn, dict):  # OpenAI chat shape
        return f"-> call {fn.get('name')}({_arguments(fn.get('arguments'))})"
    return f"-> call {fn}({_arguments(call.get('arguments'))})"


def render_message(message: dict) -> str:
    """One message as text: ``[role]``, its content, its tool calls.

    Parameters
    ----------
    message : dict
        A message as a log stores it (see the module's docstring).

    Returns
    -------
    str
    """
    role = str(message.get("role") or "message")
    if role == "tool":
        name = message.get("function") or message.get("name")
        head = f"[tool {name}]" if name else "[tool]"
    else:
        head = f"[{role}]"
    lines = [head]
    text = _content_text(message.get("content"))
    if text:
        lines.append(text)
    error = message.get("error")
    if isinstance(error, dict) and error.get("message"):
        lines.append(f"(tool error: {error['message']})")
    for call in message.get("tool_calls") or ():
        lines.append(_call_line(call))
    return "\n".join(lines)


def render_transcript(messages) -> str:
    """The messages of a transcript prefix H_t as text, in order, a blank line between them.

    Parameters
    ----------
    messages : iterable of dict
        Every message up to and including the agent's t-th (assistant) message.

    Returns
    -------
    str

    Examples
    --------
    >>> print(render_transcript([{"role": "user", "content": "Add 3 and 5."},
    ...                          {"role": "assistant", "content": "",
    ...                           "tool_calls": [{"function": "add", "arguments": {"x": 3, "y": 5}}]}]))
    [user]
    Add 3 and 5.
    <BLANKLINE>
    [assistant]
    -> call add({"x": 3, "y": 5})
    """
    return "\n\n".join(render_message(m) for m in messages if isinstance(m, dict))
