"""The replay forecaster: a model reads each transcript prefix H_t of a finished log and gives
P(eventual success); the answers become the per-step table ``trajectory_id, step, conf_<name>``
that ``--forecasts`` and the dashboard join (docs/forecasts.md §3).

The model is called through inspect_ai's model API (``get_model``, ``generate``), imported only
inside :func:`open_model` and :func:`ask_model` so that ``import tpsviz`` never loads it. Every
answer is stored in an :class:`~tpsviz.forecasts.cache.AnswerCache` as it arrives: a killed run
asks only what is missing, and the table (sorted, written atomically) is the same bytes. A reply
without a readable probability is a missing value with its problem; a provider error on one prompt
is counted and that prompt is left missing (asked again by the next run). No setting, address or
key of the provider is written to the table, the cache or a message.
"""

from __future__ import annotations

import asyncio
import threading
import io
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tpsviz.core.errors import SettingError
from tpsviz.core.wording import setting
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.forecasts.cache import AnswerCache, answer_key, write_atomic
from tpsviz.forecasts.prompts import Prompts
from tpsviz.forecasts.replies import parse_probability
from tpsviz.io.harness.transcripts import DEFAULT_MAX_CHARS, Transcript, render_prefix

__all__ = ["run_coroutine", "Question", "Replay", "CHARS_PER_TOKEN", "MAX_RETRIES", "select_runs", "build_questions",
           "estimate_tokens", "column_name", "check_name", "redact", "describe_error", "open_model", "ask_model",
           "forecast_table", "write_table"]

#: the estimate of input tokens counts this many characters a token
CHARS_PER_TOKEN = 4
#: retries of one prompt after a provider error (inspect_ai's own retry, with backoff)
MAX_RETRIES = 3
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_SECRET_VARS = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)
_MARKUP = re.compile(r"\[/?(?:bold|blue|red|green|yellow|italic|dim)\]")


@dataclass(frozen=True)
class Question:
    """One prompt: the judge prompt around the prefix H_t of one run and step.

    Attributes
    ----------
    trajectory_id : str
    step : int
    prompt : str
        The whole text sent to the model.
    key : str
        The cache key (:func:`tpsviz.forecasts.cache.answer_key`).
    truncated : bool
        Whether the prefix was cut to the bound (:func:`tpsviz.io.harness.transcripts.render_prefix`).
    """

    trajectory_id: str
    step: int
    prompt: str
    key: str
    truncated: bool


@dataclass
class Replay:
    """What asking the model did.

    Attributes
    ----------
    asked : int
        Distinct prompts sent.
    answered : int
        Of those, answered (and stored in the cache).
    errors : Counter
        Provider errors by exception type.
    first_error : str or None
        The first error's message, with secrets removed.
    """

    asked: int = 0
    answered: int = 0
    errors: Counter = field(default_factory=Counter)
    first_error: str | None = None


def select_runs(transcripts: list[Transcript], max_runs: int | None = None, sample: int | None = None,
                seed: int | None = None) -> list[Transcript]:
    """The runs to replay: a seeded random sample of ``sample`` runs (kept in the log's order),
    then the first ``max_runs``.

    Parameters
    ----------
    transcripts : list of Transcript
    max_runs, sample : int, optional
    seed : int, optional
        Default :data:`tpsviz.core.inference.DEFAULT_SEED`.

    Returns
    -------
    list of Transcript
    """
    runs = list(transcripts)
    if sample is not None and sample < len(runs):
        rng = np.random.default_rng(DEFAULT_SEED if seed is None else seed)
        runs = [runs[i] for i in sorted(rng.choice(len(runs), size=sample, replace=False))]
    return runs[:max_runs] if max_runs is not None else runs


def build_questions(transcripts: list[Transcript], prompts: Prompts, model: str,
                    max_chars: int = DEFAULT_MAX_CHARS) -> list[Question]:
    """One question per (run, agent step), in the log's order.

    Parameters
    ----------
    transcripts : list of Transcript
    prompts : Prompts
        Its ``judge`` prompt is filled with each prefix.
    model : str
        ``provider/model``: part of every cache key.
    max_chars : int
        The bound of a rendered prefix.

    Returns
    -------
    list of Question
    """
    out = []
    for tr in transcripts:
        for t in range(1, tr.steps + 1):
            prefix, cut = render_prefix(tr, t, max_chars)
            out.append(Question(tr.trajectory_id, t, prompts.judge_prompt(prefix),
                                answer_key(prefix, model, prompts.digest), cut))
    return out


def estimate_tokens(questions) -> int:
    """About how many input tokens the questions hold (:data:`CHARS_PER_TOKEN` characters a
    token; a provider's tokenizer differs by some tens of percent)."""
    return math.ceil(sum(len(q.prompt) for q in questions) / CHARS_PER_TOKEN)


def check_name(name: str) -> str:
    """``name`` if it can be a predictor's name (``conf_<name>``), else ValueError."""
    if not _NAME.match(name) or "__" in name:
        raise SettingError(f"{setting('name', repr(name))}: a predictor name is 1 to 64 letters, digits and "
                           ". _ : - (starting with a letter or digit, without '__')")
    return name


def column_name(model: str, name: str | None = None) -> str:
    """The table's forecast column: ``conf_<name>``, by default the model's name after its
    provider (``openai/gpt-4o-mini`` → ``conf_gpt-4o-mini``)."""
    if name is None:
        name = re.sub(r"[^A-Za-z0-9._:-]+", "-", model.rsplit("/", 1)[-1]).strip("-.:_") or "replay"
        name = re.sub(r"_{2,}", "_", name)[:64]
    return "conf_" + check_name(name)


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


def open_model(model: str, base_url: str | None = None, concurrency: int = 4, **model_args):
    """inspect_ai's model ``model`` (``provider/name``), or ValueError saying why it cannot be used.

    Parameters
    ----------
    model : str
    base_url : str, optional
        The provider's address (default: its usual environment variable, e.g. ``OPENAI_BASE_URL``).
    concurrency : int
        At most this many requests at once.
    **model_args
        Passed to ``get_model`` (the tests pass the mock model's ``custom_outputs``).

    Returns
    -------
    inspect_ai.model.Model
    """
    # inspect_ai is imported here, never at `import tpsviz` (seconds to load, optional)
    from inspect_ai.model import GenerateConfig, get_model

    if "/" not in model:
        raise SettingError(f"{setting('model', repr(model))}: write it as PROVIDER/MODEL, e.g. openai/gpt-4o-mini")
    config = GenerateConfig(max_connections=concurrency, max_retries=MAX_RETRIES)
    try:
        return get_model(model, base_url=base_url, config=config, memoize=False, **model_args)
    except Exception as exc:  # unknown provider, missing package or API key: inspect_ai says which
        raise SettingError(f"{setting('model', redact(model))}: cannot be used ({type(exc).__name__}: "
                           f"{redact(exc)})") from None



def run_coroutine(coro):
    """Run ``coro`` to its end and return its result, also from a thread whose event loop is already
    running (a notebook, a test session with a browser open): ``asyncio.run`` refuses there, so the
    coroutine then runs in a thread of its own with a new loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box = {}

    def work():
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed to the caller below, as asyncio.run would raise it
            box["error"] = exc

    worker = threading.Thread(target=work, name="tpsviz-replay")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")

def ask_model(model, questions: list[Question], cache: AnswerCache, concurrency: int = 4,
              progress=None) -> Replay:
    """Ask ``model`` every question whose answer is not in ``cache``; store each answer as it comes.

    Parameters
    ----------
    model : inspect_ai.model.Model
    questions : list of Question
        Questions with the same key are asked once.
    cache : AnswerCache
    concurrency : int
        Requests in flight at most.
    progress : callable, optional
        ``progress(done, total)`` after every answer or error.

    Returns
    -------
    Replay
    """
    todo, seen = [], set()
    for q in questions:
        if q.key not in seen and cache.get(q.key) is None:
            todo.append(q)
        seen.add(q.key)
    result = Replay(asked=len(todo))
    if todo:
        run_coroutine(_ask_all(model, todo, cache, max(1, concurrency), result, progress))
    return result


async def _ask_all(model, todo: list[Question], cache: AnswerCache, concurrency: int, result: Replay,
                   progress) -> None:
    gate = asyncio.Semaphore(concurrency)
    finished = 0

    async def one(q: Question) -> None:
        nonlocal finished
        async with gate:
            try:
                out = await model.generate(q.prompt)
                if getattr(out, "error", None):
                    raise RuntimeError(out.error)
                cache.put(q.key, out.completion or "")
                result.answered += 1
            except Exception as exc:  # a provider error: counted, the prompt left for the next run
                exc = _last_attempt(exc)
                result.errors[type(exc).__name__] += 1
                if result.first_error is None:
                    result.first_error = describe_error(exc)
            finished += 1
            if progress:
                progress(finished, len(todo))

    await asyncio.gather(*(one(q) for q in todo))


def describe_error(exc: BaseException) -> str:
    """A provider error for a message: its type, the HTTP status and the provider's own message
    when the error carries them (inspect_ai's ``ModelGenerateError`` does; its text would repeat
    the request, so the text of such an error is never shown), :func:`redact`-ed."""
    status, said = getattr(exc, "status_code", None), getattr(exc, "provider_message", None)
    if status is not None or said:
        text = f"HTTP {status}: {said or '(no message)'}"
    elif type(exc).__name__ == "ModelGenerateError":
        text = "(no provider message)"
    else:
        text = str(exc)
    return f"{type(exc).__name__}: {redact(text)}"


def _last_attempt(exc: BaseException) -> BaseException:
    """The error of the last try behind a retry library's wrapper (tenacity's ``RetryError``)."""
    last = getattr(exc, "last_attempt", None)
    inner = last.exception() if last is not None and hasattr(last, "exception") else None
    return inner if isinstance(inner, BaseException) else exc


def forecast_table(questions: list[Question], cache: AnswerCache, column: str
                   ) -> tuple[pd.DataFrame, dict, int]:
    """The forecasts table from the cached answers.

    Parameters
    ----------
    questions : list of Question
    cache : AnswerCache
    column : str
        ``conf_<name>``.

    Returns
    -------
    table : DataFrame
        ``trajectory_id, step, <column>`` sorted by (trajectory_id, step); a missing value where
        the reply held no probability or the question has no answer yet.
    problems : dict
        Problem (:data:`tpsviz.forecasts.replies.PROBLEMS`) -> list of (trajectory_id, step).
    unanswered : int
        Questions without an answer in the cache (provider errors).
    """
    values, problems, unanswered = [], {}, 0
    for q in questions:
        reply = cache.get(q.key)
        if reply is None:
            unanswered += 1
            values.append(math.nan)
            continue
        r = parse_probability(reply)
        if r.value is None:
            problems.setdefault(r.problem, []).append((q.trajectory_id, q.step))
        values.append(math.nan if r.value is None else r.value)
    table = pd.DataFrame({"trajectory_id": pd.Series([q.trajectory_id for q in questions], dtype=object),
                          "step": np.array([q.step for q in questions], dtype=np.int64),
                          column: np.array(values, dtype=np.float64)})
    table = table.sort_values(["trajectory_id", "step"], kind="stable").reset_index(drop=True)
    return table, problems, unanswered


def write_table(table: pd.DataFrame, path) -> None:
    """Write the table to ``path`` (Parquet for ``.parquet``, else CSV), atomically: the same
    table gives the same bytes.

    Parameters
    ----------
    table : DataFrame
    path : str or Path
    """
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        buf = io.BytesIO()
        table.to_parquet(buf, index=False)
        data = buf.getvalue()
    else:
        data = table.to_csv(index=False, lineterminator="\n").encode("utf-8")
    write_atomic(path, data)
