"""The replay forecaster: a model reads each transcript prefix H_t of a finished log and gives
P(eventual success); the answers become the per-step table ``trajectory_id, step, conf_<name>``
that ``--forecasts`` and the dashboard join (docs/forecasts.md §3).

The model is called through inspect_ai's model API (``get_model``, ``generate``), opened by
:func:`tpsviz.forecasts.provider.open_model`, so that ``import tpsviz`` never loads it. Every request
is bounded in time and retried a bounded number of times (:func:`ask_model`). Every answer is stored
in an :class:`~tpsviz.forecasts.cache.AnswerCache` as it arrives (cut to a bound): a killed run asks
only what is missing, and the table (sorted, written atomically) is the same bytes. A reply without
a readable probability is a missing value with its problem; a provider error or a timeout on one
prompt is counted and that prompt is left missing (asked again by the next run). No setting,
address or key of the provider is written to the table, the cache or a message.
"""

from __future__ import annotations

import asyncio
import io
import math
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tpsviz.core.errors import SettingError
from tpsviz.core.wording import setting
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.forecasts.cache import AnswerCache, answer_key, write_atomic
from tpsviz.forecasts.prices import token_usage
from tpsviz.forecasts.methods import NOT_ANSWERED, table_frame, values_and_reasons
from tpsviz.forecasts.prompts import Prompts
from tpsviz.forecasts.provider import (
    DEFAULT_TIMEOUT, MAX_RETRIES, describe_error, is_not_found, is_retriable, is_timeout, last_attempt, open_model,
    redact, retry_wait, status_of, uses_responses_api)
from tpsviz.io.harness.transcripts import DEFAULT_MAX_CHARS, Transcript, render_prefix

__all__ = ["run_coroutine", "Question", "Replay", "CHARS_PER_TOKEN", "MAX_RETRIES", "DEFAULT_TIMEOUT",
           "select_runs", "build_questions", "estimate_tokens", "column_name", "check_name", "redact",
           "describe_error", "open_model", "ask_model", "stall_limit", "count_usage", "forecast_table", "write_table"]

#: the estimate of input tokens counts this many characters a token
CHARS_PER_TOKEN = 4
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_NOT_ASKED = object()  # a question left once the provider had stopped answering


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
    timed_out : int
        Prompts whose last try got no answer within the timeout (counted in ``errors`` too).
    not_found : int
        Prompts whose last try was told the address serves no such endpoint (HTTP 404).
    not_asked : int
        Prompts left unasked once the provider had stopped answering (``stalled``).
    stalled : bool
        Whether so many requests in a row timed out that the rest were not asked (:func:`stall_limit`).
    switched : bool
        Whether the Responses API was not served and chat completions were used instead.
    retries : int
        Tries made again after a transient failure.
    usage : Counter
        What the provider reported of its answers: ``input_tokens`` (cached ones included),
        ``cached_input_tokens``, ``output_tokens``.
    statuses : Counter
        The HTTP status of each provider error that carried one.
    form : bool or str, optional
        The form of structured output the replies were asked in, where a caller chose one
        (:func:`tpsviz.forecasts.methods.generate_config`: True is OpenAI's ``json_schema``).
    """

    asked: int = 0
    answered: int = 0
    errors: Counter = field(default_factory=Counter)
    first_error: str | None = None
    timed_out: int = 0
    not_found: int = 0
    not_asked: int = 0
    stalled: bool = False
    switched: bool = False
    retries: int = 0
    usage: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)
    form: bool | str | None = None


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

def ask_model(model, questions: list[Question], cache: AnswerCache, concurrency: int = 4, progress=None,
              timeout: float = DEFAULT_TIMEOUT, reopen=None, config=None, keep=None,
              retries: int = MAX_RETRIES, retry_timeouts: bool = True) -> Replay:
    """Ask ``model`` every question whose answer is not in ``cache``; store each answer as it comes.

    Every request is bounded by ``timeout`` seconds; a transient failure (HTTP 408, 409, 429, 5xx,
    a timeout, a dropped connection) is tried again at most :data:`MAX_RETRIES` times, after the
    pause :func:`tpsviz.forecasts.provider.retry_wait` gives (the provider's ``Retry-After``, at most
    a minute). When :func:`stall_limit` requests in a row time out with no answer between them,
    the provider is taken as not answering and the questions not yet asked are left for the next run.

    Parameters
    ----------
    model : inspect_ai.model.Model
    questions : list of Question
        Questions with the same key are asked once.
    cache : AnswerCache
    concurrency : int
        Requests in flight at most.
    progress : callable, optional
        ``progress(done, total)`` after every answer, error or question left.
    timeout : float
        Seconds a request may take (a hard bound around inspect_ai's own).
    reopen : callable, optional
        ``reopen()`` gives the same model asking through chat completions. When given and ``model``
        asks through the Responses API, the first question is asked alone; if the address does not
        serve that endpoint (HTTP 404), every question is asked through ``reopen()`` instead.
    config : inspect_ai.model.GenerateConfig, optional
        The requests' settings (a method's: :func:`tpsviz.forecasts.methods.generate_config`).
    keep : callable, optional
        ``keep(output) -> str``, what is stored of a reply (default: its text).
    retries : int
        Tries after the first, at most (default :data:`MAX_RETRIES`).
    retry_timeouts : bool
        Whether a timeout is tried again (False for a probe: a stalled server is found by the asking
        that follows, which stops after :func:`stall_limit` timeouts in a row).

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
        asking = _Asking(model, cache, result, timeout, stall_limit(concurrency), progress, len(todo))
        asking.config, asking.keep, asking.retries, asking.retry_timeouts = config, keep, int(retries), retry_timeouts
        run_coroutine(asking.run(todo, max(1, concurrency), reopen))
    return result


def stall_limit(concurrency: int) -> int:
    """Requests in a row that time out, with no answer between them, after which the provider is
    taken as not answering: twice the requests in flight, at least 4."""
    return max(4, 2 * concurrency)


class _Asking:
    """One pass of :func:`ask_model`: the model asked (switched once to chat completions where the
    Responses API is not served), the timeouts in a row, and what happened to each question."""

    def __init__(self, model, cache, result: Replay, timeout: float, limit: int, progress, total: int):
        self.model, self.cache, self.result = model, cache, result
        self.timeout, self.limit, self.progress, self.total = timeout, limit, progress, total
        self.bound = math.ceil(timeout) + 2  # inspect_ai's attempt timeout fires first; this one always does
        self.in_a_row = 0
        self.finished = 0
        self.config, self.keep, self.retries, self.retry_timeouts = None, None, MAX_RETRIES, True

    async def run(self, todo: list[Question], concurrency: int, reopen) -> None:
        if reopen is not None and uses_responses_api(self.model):
            error = await self.ask(todo[0])
            if error is not None and is_not_found(error):
                self.model = reopen()
                self.result.switched = True
                error = await self.ask(todo[0])
            self.record(error)
            todo = todo[1:]
        gate = asyncio.Semaphore(concurrency)

        async def one(q: Question) -> None:
            async with gate:
                self.record(await self.ask(q))

        await asyncio.gather(*(one(q) for q in todo))

    async def ask(self, q: Question):
        """None once ``q`` is answered and stored, else its last error (:data:`_NOT_ASKED` when the
        provider had stopped answering before it was asked)."""
        error = _NOT_ASKED
        for retry in range(self.retries + 1):
            if self.result.stalled:
                return error
            try:
                asked = self.model.generate(q.prompt) if self.config is None else \
                    self.model.generate(q.prompt, config=self.config)
                out = await asyncio.wait_for(asked, self.bound)
                if getattr(out, "error", None):
                    raise RuntimeError(out.error)
                self.cache.put(q.key, self.keep(out) if self.keep else out.completion or "", token_usage(out))
                count_usage(self.result.usage, getattr(out, "usage", None))
                self.in_a_row = 0
                return None
            except Exception as exc:  # a provider error: retried if transient, else counted
                exc = error = last_attempt(exc)
                if is_timeout(exc):
                    self.in_a_row += 1
                    self.result.stalled = self.result.stalled or self.in_a_row >= self.limit
                if retry == self.retries or self.result.stalled or not is_retriable(exc) \
                        or (is_timeout(exc) and not self.retry_timeouts):
                    return exc
                self.result.retries += 1
                await asyncio.sleep(retry_wait(exc, retry + 1))
        return error  # (not reached: the last try returns)

    def record(self, error) -> None:
        r = self.result
        if error is None:
            r.answered += 1
        elif error is _NOT_ASKED:
            r.not_asked += 1
        else:
            r.errors[type(error).__name__] += 1
            r.timed_out += is_timeout(error)
            r.not_found += is_not_found(error)
            if (status := status_of(error)) is not None:
                r.statuses[status] += 1
            if r.first_error is None:
                r.first_error = describe_error(error)
        self.finished += 1
        if self.progress:
            self.progress(self.finished, self.total)

def count_usage(usage: Counter, reported) -> None:
    """Add a reply's token counts (inspect_ai's ``ModelUsage``, or None) to ``usage``: input tokens
    with the cached ones (read or written), the cached ones apart, output tokens."""
    if reported is None:
        return
    cached = (getattr(reported, "input_tokens_cache_read", None) or 0) + \
        (getattr(reported, "input_tokens_cache_write", None) or 0)
    usage["input_tokens"] += int(getattr(reported, "input_tokens", 0) or 0) + int(cached)
    usage["cached_input_tokens"] += int(getattr(reported, "input_tokens_cache_read", None) or 0)
    usage["output_tokens"] += int(getattr(reported, "output_tokens", 0) or 0)


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
    values, _, reasons = values_and_reasons("verbal", [questions], cache)
    unanswered = len(reasons.pop(NOT_ANSWERED, []))
    return table_frame(questions, {column: values}), reasons, unanswered


def write_table(table: pd.DataFrame, path, csv_text=None) -> None:
    """Write the table to ``path`` (Parquet for ``.parquet``, else CSV), atomically: the same
    table gives the same bytes.

    Parameters
    ----------
    table : DataFrame
    path : str or Path
    csv_text : callable, optional
        ``csv_text(table) -> str``, the CSV text, needed for a CSV file: the command line passes
        :func:`tpsviz.report.export.safe_csv`, so that no id can run as a spreadsheet formula
        (Parquet keeps every id exactly).
    """
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        buf = io.BytesIO()
        table.to_parquet(buf, index=False)
        data = buf.getvalue()
    elif csv_text is None:
        raise ValueError("a CSV forecasts table needs csv_text (tpsviz.report.export.safe_csv): it neutralises "
                         "cells a spreadsheet would run as formulas")
    else:
        data = csv_text(table).encode("utf-8")
    write_atomic(path, data)
