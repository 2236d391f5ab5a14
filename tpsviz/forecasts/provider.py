"""The replay's provider: opening inspect_ai's model with bounded requests, and reading its errors
(docs/forecasts.md §3).

inspect_ai is imported only inside :func:`open_model`, so that ``import tpsviz`` never loads it.
Every request is bounded by a timeout (inspect_ai's ``attempt_timeout`` and the HTTP client's
timeout, with a hard bound around the call in :mod:`tpsviz.forecasts.replay`). inspect_ai and the
OpenAI client are told not to retry: the replay retries itself (:func:`retry_wait`), a bounded number
of times, waiting what the provider's ``Retry-After`` asks, at most :data:`MAX_WAIT` seconds. A
missing provider package is a :class:`~tpsviz.core.errors.SettingError` with the line that installs
it. No key, address or setting of the provider is written to a message (:func:`redact`).
"""

from __future__ import annotations

import email.utils
import math
import os
import random
import re
import time

from tpsviz.core.errors import SettingError
from tpsviz.core.wording import setting

__all__ = ["DEFAULT_TIMEOUT", "MAX_RETRIES", "MAX_WAIT", "FIRST_WAIT", "CHAT_PROVIDERS", "provider_of",
           "open_model", "uses_responses_api", "install_line", "redact", "describe_error", "last_attempt",
           "status_of", "is_timeout", "is_not_found", "is_retriable", "retry_after", "retry_wait"]

#: seconds a request may take (``--timeout``)
DEFAULT_TIMEOUT = 120.0
#: retries of one prompt after a transient failure (429, 408, 5xx, a timeout, a dropped connection)
MAX_RETRIES = 3
#: the longest pause before a retry, in seconds: a ``Retry-After`` asking more is cut to it
MAX_WAIT = 60.0
#: the pause before the first retry when the provider asks none; it doubles at each retry
FIRST_WAIT = 1.0
#: providers built on the OpenAI client, whose own retries and timeout tpsviz sets
CHAT_PROVIDERS = ("openai", "openai-api")
_SECRET_VARS = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)
_MARKUP = re.compile(r"\[/?(?:bold|blue|red|green|yellow|italic|dim)\]")
_PIP = re.compile(r"pip install [A-Za-z0-9_.\-\[\]<>=, \"']+?(?=\s*(?:$|\n|\)|;|\.\s))")
_NOT_FOUND = re.compile(r"unknown endpoint|unexpected endpoint|no route|not found|404", re.IGNORECASE)
_INSPECT_LINE = "pip install inspect_ai openai"


def provider_of(model: str) -> str:
    """The provider of ``provider/name`` (``openai-api/llama/x`` → ``openai-api``)."""
    return model.split("/", 1)[0]


def install_line(exc: BaseException) -> str | None:
    """The ``pip install …`` line that would cure ``exc``, or None when it is not a missing package.

    inspect_ai's ``PrerequisiteError`` names the line ("Install with: pip install anthropic"); a
    ``ModuleNotFoundError`` names the module, whose top-level name is the package's in every case
    inspect_ai's providers need (``anthropic``, ``openai``, ``groq``, ``mistralai``).

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    str or None
    """
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        return _INSPECT_LINE if top == "inspect_ai" else f"pip install {top}"
    text = _MARKUP.sub("", str(exc))
    if type(exc).__name__ == "PrerequisiteError" or "pip install" in text:
        found = _PIP.search(text)
        if found:
            return " ".join(found.group(0).replace("'", "").replace('"', "").split())
    return None


def open_model(model: str, base_url: str | None = None, concurrency: int = 4, timeout: float = DEFAULT_TIMEOUT,
               chat_completions: bool = False, **model_args):
    """inspect_ai's model ``model`` (``provider/name``), or SettingError saying why it cannot be used.

    Parameters
    ----------
    model : str
    base_url : str, optional
        The provider's address (default: its usual environment variable, e.g. ``OPENAI_BASE_URL``).
    concurrency : int
        At most this many requests at once (a static limit: inspect_ai's adaptive one is off).
    timeout : float
        Seconds one request may take: inspect_ai's ``attempt_timeout`` and ``timeout`` (rounded up
        to whole seconds) and, for :data:`CHAT_PROVIDERS`, the HTTP client's timeout.
    chat_completions : bool
        Ask through ``/v1/chat/completions``, never the Responses API (:data:`CHAT_PROVIDERS` only).
    **model_args
        Passed to ``get_model`` (the tests pass the mock model's ``custom_outputs``).

    Returns
    -------
    inspect_ai.model.Model
    """
    if "/" not in model:
        raise SettingError(f"{setting('model', repr(model))}: write it as PROVIDER/MODEL, e.g. openai/gpt-4o-mini")
    provider = provider_of(model)
    if chat_completions and provider not in CHAT_PROVIDERS:
        raise SettingError(f"{setting('model', redact(model))}: chat completions are chosen only for openai/… and "
                           "openai-api/… models (the others choose their own endpoint)")
    try:  # inspect_ai is imported here, never at `import tpsviz` (seconds to load)
        from inspect_ai.model import GenerateConfig, get_model
    except ImportError as exc:
        raise SettingError(f"{setting('model', redact(model))}: the replay calls models through inspect_ai, which "
                           f"is not installed ({redact(exc)}): {install_line(exc) or _INSPECT_LINE}") from None
    whole = max(1, math.ceil(timeout))
    config = GenerateConfig(max_connections=concurrency, adaptive_connections=False, max_retries=0,
                            timeout=whole, attempt_timeout=whole)
    if provider in CHAT_PROVIDERS:  # the OpenAI client: no retries of its own, the same timeout
        model_args = {"max_retries": 0, "client_timeout": float(timeout), **model_args}
        if chat_completions:
            model_args["responses_api"] = False
    try:
        return get_model(model, base_url=base_url, config=config, memoize=False, **model_args)
    except Exception as exc:  # unknown provider, missing package or API key: inspect_ai says which
        line = install_line(exc)
        if line:
            raise SettingError(f"{setting('model', redact(model))}: the provider {redact(provider)} needs a "
                               f"package that is not installed: {line}") from None
        raise SettingError(f"{setting('model', redact(model))}: cannot be used ({type(exc).__name__}: "
                           f"{redact(exc)})") from None


def uses_responses_api(model) -> bool:
    """Whether inspect_ai's ``model`` asks through the Responses API (``/v1/responses``): its
    ``openai/…`` provider does for gpt-5, o-series and every model name it does not know."""
    return bool(getattr(getattr(model, "api", None), "responses_api", False))


def redact(text) -> str:
    """``text`` for a message: the values of environment variables that look like secrets (names
    with KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL, AUTH) replaced, URL credentials removed,
    console markup dropped, one line of at most 300 characters."""
    text = _MARKUP.sub("", str(text))
    for var, value in os.environ.items():
        if _SECRET_VARS.search(var) and len(value) >= 6:
            text = text.replace(value, "<redacted>")
    text = re.sub(r"(\w+://)[^/\s:@]+:[^/\s@]+@", r"\1<redacted>@", text)
    text = " ".join(text.split())
    return text[:300] + ("…" if len(text) > 300 else "")


def describe_error(exc: BaseException) -> str:
    """A provider error for a message: its type, the HTTP status and the provider's own message
    when the error carries them (inspect_ai's ``ModelGenerateError`` does; its text would repeat
    the request, so the text of such an error is never shown), :func:`redact`-ed."""
    status, said = status_of(exc), getattr(exc, "provider_message", None)
    if is_timeout(exc):
        text = "no answer within the timeout"
    elif status is not None or said:
        text = f"HTTP {status}: {said or '(no message)'}"
    elif type(exc).__name__ == "ModelGenerateError":
        text = "(no provider message)"
    else:
        text = str(exc)
    return f"{type(exc).__name__}: {redact(text)}"


def last_attempt(exc: BaseException) -> BaseException:
    """The error of the last try behind a retry library's wrapper (tenacity's ``RetryError``)."""
    last = getattr(exc, "last_attempt", None)
    inner = last.exception() if last is not None and hasattr(last, "exception") else None
    return inner if isinstance(inner, BaseException) else exc


def _chain(exc: BaseException):
    """``exc`` and the errors it was raised from, at most 5."""
    seen = 0
    while exc is not None and seen < 5:
        yield exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an error carries (its own or its cause's), or None."""
    for e in _chain(exc):
        status = getattr(e, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a request that got no answer in time (asyncio's, the HTTP client's, or
    inspect_ai's attempt timeout)."""
    return any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in _chain(exc))


def is_not_found(exc: BaseException) -> bool:
    """Whether ``exc`` says the address serves no such endpoint: HTTP 404, or a message such as
    "unknown endpoint" that some servers send with another status."""
    status = status_of(exc)
    if status == 404:
        return True
    said = str(getattr(exc, "provider_message", None) or "")
    return status in (400, 405) and bool(_NOT_FOUND.search(said))


def is_retriable(exc: BaseException) -> bool:
    """Whether trying again may help: HTTP 408, 409, 429 or 5xx, a timeout, a dropped connection."""
    status = status_of(exc)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    return is_timeout(exc) or any(isinstance(e, ConnectionError) or "Connection" in type(e).__name__
                                  for e in _chain(exc))


def retry_after(exc: BaseException, now: float | None = None) -> float | None:
    """Seconds the provider asked to wait (``Retry-After`` in seconds or as an HTTP date, or
    ``retry-after-ms``), from the response an error carries, or None."""
    for e in _chain(exc):
        headers = getattr(getattr(e, "response", None), "headers", None)
        if headers is None:
            continue
        try:
            ms = headers.get("retry-after-ms")
            if ms is not None:
                return max(0.0, float(ms) / 1000.0)
            value = headers.get("retry-after")
        except (TypeError, ValueError, AttributeError):
            return None
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(str(value)).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        return max(0.0, when - (time.time() if now is None else now))
    return None


def retry_wait(exc: BaseException, retry: int, rng: random.Random | None = None) -> float:
    """The pause before retry number ``retry`` (1, 2, …) after ``exc``: what ``Retry-After`` asks,
    else :data:`FIRST_WAIT` doubled at each retry with up to a quarter more at random; at most
    :data:`MAX_WAIT` seconds.

    Parameters
    ----------
    exc : BaseException
    retry : int
    rng : random.Random, optional

    Returns
    -------
    float
    """
    asked = retry_after(exc)
    if asked is None:
        base = FIRST_WAIT * 2 ** max(0, retry - 1)
        asked = base * (1 + 0.25 * (rng or random).random())
    return min(MAX_WAIT, asked)
