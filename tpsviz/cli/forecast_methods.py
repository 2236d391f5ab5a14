"""``tpsviz forecast --method``: the ways of asking in one run, their table and their summary file
(:mod:`tpsviz.forecasts.methods`, :mod:`tpsviz.forecasts.stack`; docs/forecasts.md §3).

The summary, ``OUT.summary.json`` beside the table, holds per method its column, its share of
answered prompts with the reasons of the rest, what it asked (samples, temperature, structured
output, top logprobs) and the cost of this run's requests from the provider's usage; never a key,
an address, the model's provider or a setting of it.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import numpy as np

from tpsviz.cli.common import Fail, safe
from tpsviz.cli.wording import say
from tpsviz.cli.options import add_censoring
from tpsviz.core.censoring import default_censoring, mode_labels
from tpsviz.forecasts.cache import write_atomic
from tpsviz.forecasts.methods import (
    ASKED_METHODS, DEFAULT_SAMPLES, JSON_OBJECT_PROVIDERS, METHODS, NO_LOGPROBS, STRUCTURED_PROVIDERS, TEMPERATURE,
    TOP_LOGPROBS,
    generate_config, keep_logprobs, key_model, method_column, method_prompts, sd_column, table_frame,
    values_and_reasons)
from tpsviz.forecasts.provider import provider_of, uses_responses_api
from tpsviz.forecasts.replay import Replay, ask_model
from tpsviz.forecasts.stack import FOLDS, combined_forecast
from tpsviz.io.loading import load

__all__ = ["add_method_arguments", "chosen_methods", "method_questions", "ask_methods", "merge_replays", "plan_words",
           "methods_table", "summary_path", "write_summary", "print_methods"]


def add_method_arguments(p) -> None:
    """``--method``, ``--samples``, ``--no-structured``, ``--censoring``."""
    p.add_argument("--method", action="append", choices=METHODS, default=None, metavar="METHOD",
                   help="how the model is asked, repeatable, one column conf_<name>:<method> each: verbal (a number "
                        "in words, default), ptrue (P(Yes) from the first reply token's logprobs), consistency "
                        "(the mean of --samples verbal answers at temperature "
                        f"{TEMPERATURE:g}), combined (a cross-fitted logistic stack of the others, fitted on other "
                        "runs' outcomes)")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, metavar="K",
                   help=f"samples of --method consistency (default {DEFAULT_SAMPLES})")
    p.add_argument("--no-structured", action="store_true",
                   help="never ask for the provider's structured output ({\"probability\": X}) in verbal and "
                        "consistency replies (for a server that refuses response_format)")
    p.add_argument("--max-tokens", type=int, default=None, metavar="N",
                   help="the most tokens a verbal or consistency reply may hold (default: the provider's); e.g. 64 "
                        "for a small local model that otherwise writes on until its context is full (not for a "
                        "reasoning model, whose reasoning counts too)")
    add_censoring(p, words="the population --method combined is fitted on, as `score` scores it (default: the log's)")


def chosen_methods(args) -> list[str]:
    """The methods asked, in :data:`METHODS`' order (default ``verbal``); Fail on a bad choice."""
    chosen = [m for m in METHODS if m in (args.method or ["verbal"])]
    if chosen == ["combined"]:
        raise Fail("--method combined stacks other methods: add at least one of "
                   + ", ".join(f"--method {m}" for m in ASKED_METHODS))
    if not 1 <= args.samples <= 50:
        raise Fail("--samples must be between 1 and 50")
    return chosen


def method_questions(methods: list[str], prompts, model: str, samples: int, build) -> dict:
    """Each asked method's questions: method → one list per sample (one for verbal and ptrue).

    Parameters
    ----------
    methods : list of str
    prompts : Prompts
    model : str
    samples : int
    build : callable
        ``build(prompts, key_model) -> list of Question`` (the replay's
        :func:`tpsviz.forecasts.replay.build_questions` over the chosen runs).
    """
    out = {}
    for m in methods:
        if m == "combined":
            continue
        count = samples if m == "consistency" else 1
        out[m] = [build(method_prompts(prompts, m), key_model(model, m, i)) for i in range(count)]
    return out


def plan_words(by_method: dict) -> str:
    """The prompts of each method, in words: ``verbal 300, ptrue 300, consistency 5 × 300``."""
    return ", ".join(f"{m} " + (f"{len(g)} × " if len(g) > 1 else "") + f"{len(g[0]):,}" for m, g in by_method.items())


def ask_methods(model, by_method: dict, cache, args, reopen, progress) -> tuple[dict, bool]:
    """Ask each method's questions the cache lacks, one method after the other. Once the provider
    has stopped answering (a stall), the methods not yet asked are left for the next run. Where the
    reply is requested as structured output, the first question is asked alone: a server that refuses
    ``response_format`` (llama-cpp-python's answers ``json_schema`` with HTTP 500) is then asked without it,
    once, and the run says so (:func:`_structured_or_not`).

    Returns
    -------
    replays : dict
        Method → :class:`~tpsviz.forecasts.replay.Replay`.
    switched : bool
        Whether chat completions were used where the Responses API is not served.
    """
    replays, switched, provider = {}, False, provider_of(args.model)
    config_of = functools.partial(generate_config, max_tokens=args.max_tokens)
    structured = not args.no_structured and provider in STRUCTURED_PROVIDERS
    settled = not structured  # the form of structured output the server takes, once one was answered
    for m, groups in by_method.items():
        runs = {t: i for i, t in enumerate(dict.fromkeys(q.trajectory_id for q in groups[0]))}
        # run by run, step after step (a sample's copies together): a one-slot local server reuses the prefix
        todo = sorted((q for g in groups for q in g), key=lambda q: (runs[q.trajectory_id], q.step))
        if any(r.stalled for r in replays.values()):
            replays[m] = Replay(not_asked=len({q.key for q in todo if cache.get(q.key) is None}), stalled=True)
            continue
        if len(by_method) > 1:
            print(f"  {m}:", file=sys.stderr, flush=True)
        ask = functools.partial(ask_model, model, cache=cache, timeout=args.timeout, reopen=reopen,
                                keep=keep_logprobs if m == "ptrue" else None)
        first = None
        if m != "ptrue" and not settled:
            first, structured = _structured_or_not(ask, config_of, m, provider, todo, cache, uses_responses_api(model))
            settled = first is not None
            if first is not None and first.switched:  # the Responses API is not served: chat completions from now
                model, reopen, switched = reopen(), None, True
                ask = functools.partial(ask_model, model, cache=cache, timeout=args.timeout, reopen=None,
                                        keep=None)
        r = ask(todo, concurrency=args.concurrency, progress=progress,
                config=config_of(m, provider, structured, uses_responses_api(model)))
        if r.switched:  # the next methods ask through chat completions from the start
            model, reopen, switched = reopen(), None, True
        r = r if first is None else merge_replays([first, r])
        r.form = None if m == "ptrue" else structured
        replays[m] = r
        if m != "ptrue" and r.asked and not r.answered and sum(r.errors.values()) > r.timed_out + r.not_found \
                and structured:
            print(f"{m}: no prompt was answered while the reply was requested as structured output "
                  "({\"probability\": X}, response_format); if the server refuses it, add --no-structured",
                  file=sys.stderr)
    return replays, switched


#: the statuses of a server that cannot take the request as sent (llama-cpp-python answers OpenAI's ``json_schema``
#: with 500, other servers with 400 or 422)
REFUSED = {400, 422, 500}


def _structured_or_not(ask, config_of, method: str, provider: str, todo: list, cache, responses_api: bool):
    """Ask the first question not in the cache alone as structured output; while the provider refuses the
    form (an HTTP status of :data:`REFUSED`), try the next: OpenAI's ``json_schema``, then ``json_object``
    with the schema (an OpenAI-compatible server), then the prompt's own line; go on with the first form
    answered, and say so.

    Returns
    -------
    first : Replay or None
        What asking it did when it was answered (None: nothing left to ask, or asked again with the others).
    structured : bool or str
        The form to ask the others in (:func:`tpsviz.forecasts.methods.generate_config`).
    """
    first = [q for q in todo if cache.get(q.key) is None][:1]
    if not first:
        return None, True
    forms = [True] + (["json_object"] if provider in JSON_OBJECT_PROVIDERS else []) + [False]
    refused = None
    for form in forms:
        tried = ask(first, concurrency=1, retry_timeouts=False,
                    config=config_of(method, provider, form, responses_api))
        if tried.answered:
            if refused is not None:
                how = ("as JSON with response_format json_object" if form else "without it")
                print(f"{method}: the server refused the reply as structured output ({{\"probability\": X}}, "
                      f"response_format json_schema: {safe(refused, 160)}); asked {how} from here on "
                      "(--no-structured skips this first try)", file=sys.stderr)
            return tried, form
        if not tried.statuses or set(tried.statuses) - REFUSED:  # a timeout, a rate limit…: asked again
            return None, (True if refused is None else form)
        refused = refused or tried.first_error
    return None, True  # refused in every form: asked again with the others (and counted there)


def merge_replays(replays) -> Replay:
    """One :class:`~tpsviz.forecasts.replay.Replay` adding up several."""
    total = Replay()
    for r in replays:
        for f in ("asked", "answered", "timed_out", "not_found", "not_asked", "retries"):
            setattr(total, f, getattr(total, f) + getattr(r, f))
        total.errors.update(r.errors)
        total.usage.update(r.usage)
        total.statuses.update(r.statuses)
        total.first_error = total.first_error or r.first_error
        total.stalled = total.stalled or r.stalled
        total.switched = total.switched or r.switched
    return total


def methods_table(args, by_method: dict, cache, column: str, methods: list[str], options=None):
    """The table with every method's column, and each method's part of the summary.

    Parameters
    ----------
    args : argparse.Namespace
    by_method : dict
        :func:`method_questions`.
    cache : AnswerCache
    column : str
        ``conf_<name>``.
    methods : list of str
    options : ReadOptions, optional
        How the log was read (``combined`` reads its outcomes so).

    Returns
    -------
    table : DataFrame
    parts : dict
        Method → ``column``, ``prompts`` (rows), ``answered``, ``share``, ``missing`` (reason → count).
    """
    rows = next(iter(by_method.values()))[0]
    columns, parts = {}, {}
    for m, groups in by_method.items():
        values, spread, reasons = values_and_reasons(m, groups, cache)
        name = method_column(column, m, methods)
        columns[name] = values
        parts[m] = _part(name, values, reasons)
        if m == "consistency":
            columns[sd_column(column)] = spread
            parts[m]["sd_column"] = sd_column(column)
    if "combined" in methods:
        name = method_column(column, "combined", methods)
        values, report = _combined(args, options, rows, [columns[method_column(column, m, methods)] for m in by_method])
        columns[name] = values
        missing = {report["refused"]: len(values)} if report["refused"] else {}
        if report["rows_without_all_methods"] and not report["refused"]:
            missing["a method's forecast missing"] = report["rows_without_all_methods"]
        if report["folds_without_both_outcomes"]:
            missing["a fold's training runs hold one outcome only"] = int(
                np.isnan(values).sum()) - report["rows_without_all_methods"]
        parts["combined"] = {**_part(name, values, missing), "stack": report}
    return table_frame(rows, columns), parts


def _part(name: str, values: np.ndarray, reasons: dict) -> dict:
    """A method's part of the summary (``where``, the rows of each reason, is printed, not stored)."""
    n, answered = len(values), int(np.isfinite(values).sum())
    return {"column": name, "prompts": n, "answered": answered, "share": answered / n if n else None,
            "missing": {str(k): int(len(v) if isinstance(v, list) else v) for k, v in sorted(reasons.items())},
            "where": {str(k): v for k, v in reasons.items() if isinstance(v, list)}}


def _combined(args, options, rows, columns) -> tuple[np.ndarray, dict]:
    """The stack's forecasts of ``rows`` from the methods' columns, labelled by the censoring mode."""
    try:
        data = load(args.path, options=options, outcomes=args.outcomes)
        mode = args.censoring or default_censoring(data)
        labels = mode_labels(data, mode)
    except ValueError as exc:
        raise Fail(f"--method combined: the runs' outcomes cannot be read: {say(exc)}") from None
    label_of = dict(zip(data.trajectories["trajectory_id"].astype(str), labels))
    runs = list(dict.fromkeys(str(q.trajectory_id) for q in rows))  # the runs asked, in the log's order
    position = {t: i for i, t in enumerate(runs)}
    run_of_row = np.array([position[str(q.trajectory_id)] for q in rows], dtype=np.int64)
    run_labels = np.array([label_of.get(t, np.nan) for t in runs], dtype=float)
    values, report = combined_forecast(np.column_stack(columns), run_of_row, run_labels, FOLDS, args.seed)
    report["censoring"] = mode
    return values, report


def summary_path(out: Path) -> Path:
    """``OUT.summary.json`` beside the table."""
    return out.with_name(out.name + ".summary.json")


def write_summary(out: Path, table, parts: dict, replays: dict, args) -> Path:
    """Write the summary file (no key, address, provider or setting of the provider in it)."""
    for m, part in parts.items():
        r = replays.get(m)
        # the form the replies were asked in this run (the first refused forms fall back: ask_methods)
        structured = "not asked this run" if r is None else {True: "json_schema"}.get(r.form, r.form)
        part["cost"] = {"requests": r.asked if r else 0, "input_tokens": int(r.usage["input_tokens"]) if r else 0,
                        "cached_input_tokens": int(r.usage["cached_input_tokens"]) if r else 0,
                        "output_tokens": int(r.usage["output_tokens"]) if r else 0}
        part["asked"] = {"verbal": {"structured_output": structured},
                         "ptrue": {"max_tokens": 1, "top_logprobs": TOP_LOGPROBS},
                         "consistency": {"samples": args.samples, "temperature": TEMPERATURE,
                                         "structured_output": structured},
                         "combined": {}}[m]
    parts = {m: {k: v for k, v in p.items() if k != "where"} for m, p in parts.items()}
    doc = {"table": out.name, "rows": int(len(table)), "runs": int(table["trajectory_id"].nunique()),
           "methods": parts}
    path = summary_path(out)
    write_atomic(path, (json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n").encode("utf-8"))
    return path


def print_methods(parts: dict, path: Path) -> None:
    """Each method's share of answered prompts, the reasons of the rest, and its cost (verbal alone: its column's
    lines and the tokens the provider reported say it already; only the summary file is named)."""
    if set(parts) != {"verbal"}:
        _print_parts(parts)
    if parts.get("ptrue", {}).get("missing", {}).get(NO_LOGPROBS):
        print("ptrue: the provider returned no logprobs; ptrue needs the reply's token log-probabilities (chat "
              "completions with logprobs and top_logprobs: OpenAI's chat models, vLLM, llama.cpp's server …)",
              file=sys.stderr)
    print(f"  summary: {safe(path)}")


def _print_parts(parts: dict) -> None:
    print("methods (share of prompts with a forecast; requests sent now and their tokens, from the provider's usage):")
    for m, p in parts.items():
        share = "—" if p["share"] is None else f"{p['share']:.0%}"
        cost = p.get("cost", {})
        print(f"  {m:<12} {safe(p['column'])}: {p['answered']:,}/{p['prompts']:,} ({share}); "
              f"{cost.get('requests', 0):,} requests, {cost.get('input_tokens', 0):,} input tokens "
              f"({cost.get('cached_input_tokens', 0):,} cached), {cost.get('output_tokens', 0):,} output tokens")
        for reason, count in p["missing"].items():
            print(f"      missing, {safe(reason)}: {count:,}")
        if "sd_column" in p:
            print(f"      {safe(p['sd_column'])}: the samples' standard deviation (not a forecast: --forecasts "
                  "ignores it)")
        if m == "combined" and p["stack"]["refused"]:
            print(f"      combined refused: {safe(p['stack']['refused'])}; the other methods' columns are written",
                  file=sys.stderr)

