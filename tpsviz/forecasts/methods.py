"""The ways the replay asks a model for P(eventual success) (``tpsviz forecast --method``; docs/forecasts.md §3).

- ``verbal``: the judge prompt; the reply is read by :func:`tpsviz.forecasts.replies.parse_probability`.
  Where inspect_ai offers the provider's structured output (:data:`STRUCTURED_PROVIDERS`) the reply
  is also requested as ``{"probability": X}`` (``response_schema``); elsewhere the prompt's own
  line ``probability: X`` is the format asked. Its cache keys are those of the replay before
  methods existed, so answers cached then are used.
- ``ptrue``: the same transcript with the question "Will the task end in success? Answer Yes or
  No" (the prompt file's ``ptrue`` text); one token is generated with ``logprobs`` and
  :data:`TOP_LOGPROBS` alternatives, and P(Yes) is the summed probability of the Yes variants over
  that of the Yes and No variants among them (:func:`p_true`).
- ``consistency``: ``k`` verbal answers sampled at temperature :data:`TEMPERATURE`, each its own
  request (local servers ignore the ``n`` of several choices in one request, so one request per
  sample gives ``k`` samples from every provider); the forecast is their mean, their standard
  deviation (``ddof=0``) is written beside it (:func:`consistency_values`).
- ``combined``: a stack of the others' forecasts (:mod:`tpsviz.forecasts.stack`), asked nothing.

Every method's cache entries are keyed apart (:func:`key_model`). What is stored for ``ptrue`` is
the first token's alternatives as JSON (:func:`keep_logprobs`), never the provider's request.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from tpsviz.forecasts.replies import Reply, parse_probability

__all__ = ["METHODS", "ASKED_METHODS", "DEFAULT_SAMPLES", "TEMPERATURE", "TOP_LOGPROBS", "RESPONSES_MIN_TOKENS", "STRUCTURED_PROVIDERS",
           "NO_LOGPROBS", "NO_YES_NO", "FEW_SAMPLES", "NOT_ANSWERED", "YES", "NO", "key_model",
           "method_prompts", "generate_config", "keep_logprobs", "p_true", "read_ptrue", "method_column",
           "sd_column", "consistency_values", "values_and_reasons", "table_frame"]

#: every method, in the order of the table's columns
METHODS = ("verbal", "ptrue", "consistency", "combined")
#: the methods that ask the model (``combined`` is fitted on their answers)
ASKED_METHODS = ("verbal", "ptrue", "consistency")
#: samples of ``consistency`` (``--samples``)
DEFAULT_SAMPLES = 5
#: the sampling temperature of ``consistency``
TEMPERATURE = 0.7
#: alternatives of the first reply token asked by ``ptrue`` (the most OpenAI's API gives)
TOP_LOGPROBS = 20
#: the fewest output tokens OpenAI's Responses API accepts
RESPONSES_MIN_TOKENS = 16
#: providers whose structured output (``response_schema``) inspect_ai passes on
STRUCTURED_PROVIDERS = ("openai", "openai-api", "anthropic", "google", "grok")
#: the providers asked with ``{"type": "json_object", "schema": …}`` when OpenAI's ``json_schema`` is refused
#: (an OpenAI-compatible server: llama-cpp-python's answers ``json_schema`` with HTTP 500 and takes this form)
JSON_OBJECT_PROVIDERS = ("openai-api",)
#: reasons a ``ptrue`` answer has no value
NO_LOGPROBS = "provider returned no logprobs"
NO_YES_NO = "no Yes or No among the top logprobs"
#: the reason a ``consistency`` forecast has no value: fewer than half of its samples readable
FEW_SAMPLES = "fewer than half of the samples readable"
#: the reason of a prompt without an answer in the cache (a provider error, a timeout)
NOT_ANSWERED = "no answer yet (provider error)"
#: the spellings of the answer tokens, compared after stripping spaces, punctuation and the
#: tokenizers' word marks (▁, Ġ) and lowering the case
YES = ("yes",)
NO = ("no",)
_MARKS = " \t\r\n▁Ġ.,:;!\"'`*()[]"
_SCHEMA_PROPERTY = "probability"


def key_model(model: str, method: str, sample: int | None = None) -> str:
    """The model part of a method's cache keys (:func:`tpsviz.forecasts.cache.answer_key`):
    ``model`` itself for ``verbal`` (the keys of the replay before methods existed), the model with
    the method (and the sample's number and temperature for ``consistency``) otherwise."""
    if method == "verbal":
        return model
    tag = f"{model}\x00method={method}"
    if method == "ptrue":
        return f"{tag};top_logprobs={TOP_LOGPROBS}"
    return f"{tag};temperature={TEMPERATURE:g};sample={int(sample or 0)}"


def method_prompts(prompts, method: str):
    """The prompts a method fills: the judge prompt, or for ``ptrue`` the prompt file's ``ptrue``
    text in the judge's place (so that its digest, in every key, follows that text)."""
    return replace(prompts, judge=prompts.ptrue) if method == "ptrue" else prompts


def generate_config(method: str, provider: str, structured: bool | str = True, responses_api: bool = False,
                    max_tokens: int | None = None):
    """inspect_ai's ``GenerateConfig`` of one method's requests (merged by inspect_ai with the
    model's own: timeouts and connections stay).

    Parameters
    ----------
    method : str
        One of :data:`ASKED_METHODS`.
    provider : str
        The provider (``openai-api``, ``anthropic`` …): structured output only where
        :data:`STRUCTURED_PROVIDERS` holds it.
    structured : bool or str
        Ask ``verbal`` and ``consistency`` replies as ``{"probability": X}``: True or ``"json_schema"``
        through inspect_ai's ``response_schema`` (OpenAI's ``json_schema``); ``"json_object"`` as
        ``response_format: {"type": "json_object", "schema": …}``, the form llama.cpp's servers take
        (an OpenAI-compatible server only, :data:`JSON_OBJECT_PROVIDERS`); False: the prompt's own line.
    max_tokens : int, optional
        The most tokens a ``verbal`` or ``consistency`` reply may hold (``--max-tokens``; default: the
        provider's). A small model that does not stop otherwise writes until its context is full.
    responses_api : bool
        The model asks through OpenAI's Responses API, whose ``max_output_tokens`` is at least
        :data:`RESPONSES_MIN_TOKENS`: ``ptrue`` asks that many there (it reads the first token only).

    Returns
    -------
    inspect_ai.model.GenerateConfig
    """
    # inspect_ai: seconds to import, loaded only when a model is asked (as in tpsviz.forecasts.provider)
    from inspect_ai.model import GenerateConfig, ResponseSchema
    from inspect_ai.util import JSONSchema

    if method == "ptrue":
        return GenerateConfig(max_tokens=RESPONSES_MIN_TOKENS if responses_api else 1, logprobs=True, top_logprobs=TOP_LOGPROBS, temperature=0.0)
    schema = None
    if structured == "json_object" and provider in JSON_OBJECT_PROVIDERS:
        return GenerateConfig(temperature=TEMPERATURE if method == "consistency" else None, max_tokens=max_tokens, extra_body={
            "response_format": {"type": "json_object", "schema": {
                "type": "object", "properties": {_SCHEMA_PROPERTY: {"type": "number", "minimum": 0, "maximum": 1}},
                "required": [_SCHEMA_PROPERTY]}}})
    if structured and provider in STRUCTURED_PROVIDERS:
        schema = ResponseSchema(name="forecast", description="P(eventual success) of the task", json_schema=JSONSchema(
            type="object", properties={_SCHEMA_PROPERTY: JSONSchema(type="number", description="between 0 and 1")},
            required=[_SCHEMA_PROPERTY], additionalProperties=False))
    return GenerateConfig(response_schema=schema, temperature=TEMPERATURE if method == "consistency" else None,
                          max_tokens=max_tokens)


def keep_logprobs(output) -> str:
    """What ``ptrue`` stores of a reply (inspect_ai's ``ModelOutput``): JSON
    ``{"top": [[token, logprob], …]}`` of the first generated token's alternatives (the token
    itself added when the provider listed none), or ``{"top": null}`` when it sent no logprobs."""
    choices = getattr(output, "choices", None) or []
    logprobs = getattr(choices[0], "logprobs", None) if choices else None
    content = getattr(logprobs, "content", None) or []
    if not content:
        return json.dumps({"top": None})
    first = content[0]
    top = [[t.token, float(t.logprob)] for t in (first.top_logprobs or [])]
    if not any(tok == first.token for tok, _ in top):
        top.append([first.token, float(first.logprob)])
    return json.dumps({"top": top}, ensure_ascii=False)


def _side(token: str) -> int:
    """1 for a Yes variant, 0 for a No variant, -1 for any other token."""
    word = str(token).strip(_MARKS).lower()
    return 1 if word in YES else 0 if word in NO else -1


def p_true(top) -> Reply:
    """P(Yes) from the first token's alternatives: Σ exp(logprob) over the Yes variants divided by
    that over the Yes and No variants (" Yes", "yes", "YES", "▁Yes" … and " No", "no" …).

    Parameters
    ----------
    top : list of (str, float) or None
        (token, log-probability) pairs; None when the provider sent no logprobs.

    Returns
    -------
    Reply
        The value, or None with :data:`NO_LOGPROBS` or :data:`NO_YES_NO`.

    Examples
    --------
    >>> round(p_true([[" Yes", math.log(0.6)], ["No", math.log(0.2)], ["Maybe", -1.0]]).value, 6)
    0.75
    """
    if top is None:
        return Reply(None, NO_LOGPROBS)
    mass = [0.0, 0.0]
    for token, logprob in top:
        side = _side(token)
        if side >= 0 and math.isfinite(float(logprob)):
            mass[side] += math.exp(float(logprob))
    if mass[0] + mass[1] <= 0.0:
        return Reply(None, NO_YES_NO)
    return Reply(mass[1] / (mass[0] + mass[1]))


def read_ptrue(stored: str) -> Reply:
    """:func:`p_true` of what :func:`keep_logprobs` stored (a damaged entry is :data:`NO_LOGPROBS`)."""
    try:
        top = json.loads(stored)["top"]
    except (ValueError, KeyError, TypeError):
        return Reply(None, NO_LOGPROBS)
    return p_true(top if isinstance(top, list) else None)


def method_column(column: str, method: str, methods) -> str:
    """The table's column of a method: ``conf_<name>`` when ``verbal`` is the only method asked (the
    table of the replay before methods existed), else ``conf_<name>:<method>``."""
    return column if list(methods) == ["verbal"] else f"{column}:{method}"


def sd_column(column: str) -> str:
    """The column of the spread of ``consistency``'s samples, ``sd_<name>:consistency``, from ``conf_<name>``. Its prefix is
    none the readers take as a forecast (``conf_``, ``raw_``, ``unc_``), so ``--forecasts`` ignores it."""
    return "sd_" + column.removeprefix("conf_") + ":consistency"


def consistency_values(replies: list) -> tuple[float, float, str | None]:
    """The mean and standard deviation (``ddof=0``) of the readable verbal replies among a step's
    samples, or NaN with :data:`FEW_SAMPLES` when fewer than half of them are readable.

    Parameters
    ----------
    replies : list of str
        The samples' replies.

    Returns
    -------
    mean, sd : float
    problem : str or None
    """
    values = [r.value for r in map(parse_probability, replies) if r.value is not None]
    if not values or 2 * len(values) < len(replies):
        return math.nan, math.nan, FEW_SAMPLES
    return float(np.mean(values)), float(np.std(values)), None


def values_and_reasons(method: str, groups: list, cache) -> tuple[np.ndarray, np.ndarray, dict]:
    """One method's forecast per question from the cached answers.

    Parameters
    ----------
    method : str
        One of :data:`ASKED_METHODS`.
    groups : list of list of Question
        One list of questions per sample (one list for ``verbal`` and ``ptrue``), all in the same
        order of (run, step).
    cache : AnswerCache

    Returns
    -------
    values, spread : ndarray
        The forecast per question (NaN where missing) and, for ``consistency``, the samples'
        standard deviation (NaN otherwise).
    reasons : dict
        Why values are missing (a problem of the reply, or :data:`NOT_ANSWERED`) → the
        (trajectory_id, step) of each.
    """
    n = len(groups[0])
    values, spread, reasons = np.full(n, np.nan), np.full(n, np.nan), {}
    read = read_ptrue if method == "ptrue" else parse_probability
    for i in range(n):
        replies = [cache.get(g[i].key) for g in groups]
        where = (groups[0][i].trajectory_id, groups[0][i].step)
        if any(r is None for r in replies):
            reasons.setdefault(NOT_ANSWERED, []).append(where)
            continue
        if method == "consistency":
            values[i], spread[i], problem = consistency_values(replies)
        else:
            r = read(replies[0])
            values[i], problem = (np.nan if r.value is None else r.value), r.problem
        if problem is not None:
            reasons.setdefault(problem, []).append(where)
    return values, spread, reasons


def table_frame(questions: list, columns: dict) -> pd.DataFrame:
    """``trajectory_id, step`` and the given columns (name → values in the questions' order),
    sorted by (trajectory_id, step) as the replay's table is."""
    table = pd.DataFrame({"trajectory_id": pd.Series([q.trajectory_id for q in questions], dtype=object),
                          "step": np.array([q.step for q in questions], dtype=np.int64),
                          **{c: np.asarray(v, dtype=np.float64) for c, v in columns.items()}})
    return table.sort_values(["trajectory_id", "step"], kind="stable").reset_index(drop=True)
