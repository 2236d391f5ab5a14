"""``tpsviz forecast LOG --model PROVIDER/MODEL --out FORECASTS.parquet``: a model replays a finished
harness log and gives P(eventual success) at every agent step (docs/forecasts.md §3).

The table it writes, ``trajectory_id, step, conf_<name>``, is what ``score LOG --forecasts FILE``
and the dashboard join. Before any call it prints the number of prompts, an estimate of the input and
output tokens and the price (``--dry-run`` stops there; :mod:`tpsviz.cli.forecast_cost`). Answers are cached as they arrive, so a killed run resumes where
it stopped. inspect_ai is loaded only when a model is called (:mod:`tpsviz.forecasts.replay`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tpsviz.cli.common import Fail, safe
from tpsviz.cli.forecast_cost import carry_line, plan_lines, steps_line, usage_lines
from tpsviz.cli.wording import say
from tpsviz.cli.forecast_methods import (
    add_method_arguments, ask_methods, chosen_methods, merge_replays, method_questions, methods_table, plan_words,
    print_methods, write_summary)
from tpsviz.cli.options import add_harness_options, add_seed, add_trace_options, check_numbers
from tpsviz.evaluation import reading as evaluation_reading
from tpsviz.forecasts.cache import AnswerCache
from tpsviz.forecasts.methods import NOT_ANSWERED
from tpsviz.forecasts.prices import load_prices
from tpsviz.forecasts.prompts import load_prompts
from tpsviz.forecasts.provider import CHAT_PROVIDERS, DEFAULT_TIMEOUT, MAX_RETRIES, MAX_WAIT, provider_of
from tpsviz.forecasts.replay import (
    CHARS_PER_TOKEN, build_questions, column_name, estimate_tokens, open_model, select_runs, stall_limit,
    write_table)
from tpsviz.forecasts.steps import ASKED, asked_steps, carry_forward, keep_asked, parse_steps
from tpsviz.io.harness.transcripts import DEFAULT_MAX_CHARS, read_transcripts
from tpsviz.report.export import neutralise_cells, safe_csv

__all__ = ["add_arguments", "run", "DESCRIPTION"]

DESCRIPTION = """\
Replay a finished harness log (tau-bench, tau2-bench, Inspect AI) to a model: for every run and
agent step t it sends the transcript up to and including the agent's t-th message (never later
messages, the reward or the termination reason) and asks for the probability that the task will
end in success. Writes trajectory_id, step, conf_<name> (Parquet or CSV) for
`python -m tpsviz score LOG --forecasts FILE`. The model is reached through inspect_ai's model API
with the provider's usual environment variables (OPENAI_API_KEY, OPENAI_BASE_URL, ...). A local or
OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio, a gateway):
--model openai-api/NAME/MODEL --model-base-url http://HOST:PORT/v1, with NAME_API_KEY set.
"""

#: where a local or OpenAI-compatible server is told to look (messages and help)
LOCAL_FORM = ("--model openai-api/NAME/MODEL --model-base-url http://HOST:PORT/v1 (the address ends in /v1; "
              "MODEL as the server lists it at /v1/models; NAME_API_KEY set, any value for a server without keys)")


def add_arguments(p) -> None:
    """The options of ``forecast``."""
    p.add_argument("path", help="harness log: tau-bench .json, tau2-bench results .json or folder, Inspect AI "
                                ".eval/.json; or a trace file (OTLP JSON, OpenInference, Langfuse)")
    p.add_argument("--model", required=True, metavar="PROVIDER/MODEL",
                   help="the model asked, as inspect_ai names it (openai/gpt-4o-mini, anthropic/..., "
                        "google/..., vllm/..., ollama/..., openai-api/<service>/...)")
    p.add_argument("--out", required=True, metavar="FORECASTS.parquet",
                   help="the forecasts table to write (.parquet or .csv)")
    p.add_argument("--name", default=None,
                   help="the predictor's name: column conf_<name> (default: the model's name after its provider)")
    p.add_argument("--prompts", metavar="FILE", default=None,
                   help="a prompt file in the form of tpsviz/forecasts/prompts.toml (default: that file)")
    p.add_argument("--cache", metavar="DIR", default=None,
                   help="where answers are kept as they arrive (default: OUT.cache/ beside --out)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the number of prompts, the estimate of input and output tokens and the price, and stop")
    p.add_argument("--max-runs", type=int, default=None, metavar="N", help="replay at most the first N runs")
    p.add_argument("--steps", default=None, metavar="RULE",
                   help="ask only some agent steps of each run: every:K (steps 1, 1+K, ...), first:N, last:N, "
                        "sample:N (seeded by --seed); a step not asked carries the last asked forecast forward "
                        f"(only the past), the table's column {ASKED} marks the asked ones")
    p.add_argument("--prices", metavar="FILE", default=None,
                   help="a price table in the form of tpsviz/forecasts/prices.toml (default: that file)")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="replay a random sample of N runs (seeded by --seed)")
    add_seed(p, "seed of --sample")
    p.add_argument("--concurrency", type=int, default=4, metavar="K",
                   help="requests in flight at most (default 4)")
    p.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS, metavar="N",
                   help=f"bound of a transcript prefix in characters (default {DEFAULT_MAX_CHARS:,}); a longer "
                        "one keeps its beginning, the task statement and its end, cut where consecutive steps' "
                        "prompts keep a common beginning")
    p.add_argument("--model-base-url", metavar="URL", default=None,
                   help="the provider's address (default: its environment variable, e.g. OPENAI_BASE_URL)")
    p.add_argument("--chat-completions", action="store_true",
                   help="ask an openai/... model through /v1/chat/completions, never /v1/responses (which most "
                        "local servers do not serve; without it, a 404 on the first call switches once)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"seconds one request may take (default {DEFAULT_TIMEOUT:g}); a transient failure is "
                        f"tried again at most {MAX_RETRIES} times, after what Retry-After asks (at most "
                        f"{MAX_WAIT:g} s)")
    add_method_arguments(p)
    add_harness_options(p.add_argument_group("reading the log, as `score` reads it (docs/harness.md)"))
    add_trace_options(p)


def _check(args) -> tuple[Path, Path, str]:
    """(output path, cache folder, column) once every option value is checked."""
    check_numbers(args)
    for flag, value, low in (("--max-runs", args.max_runs, 1), ("--sample", args.sample, 1),
                             ("--concurrency", args.concurrency, 1), ("--max-chars", args.max_chars, 1000),
                             ("--max-tokens", args.max_tokens, 1)):
        if value is not None and value < low:
            raise Fail(f"{flag} must be at least {low}")
    if args.concurrency > 256:
        raise Fail("--concurrency must be at most 256")
    if not 1 <= args.timeout <= 3600:  # (also refuses nan)
        raise Fail("--timeout must be between 1 and 3600 seconds")
    if args.chat_completions and provider_of(args.model) not in CHAT_PROVIDERS:
        raise Fail(f"--chat-completions applies to openai/... and openai-api/... models, not {safe(args.model)}")
    out = Path(args.out)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise Fail(f"--out {safe(args.out)}: name a .parquet or .csv file")
    if out.is_dir() or (out.exists() and not out.is_file()):
        raise Fail(f"--out {safe(args.out)} is not a regular file; give a file name")
    if os.path.realpath(out) == os.path.realpath(args.path):
        raise Fail("--out would write over the log; the log is never modified: choose another file name")
    try:
        column = column_name(args.model, args.name)
    except ValueError as exc:
        raise Fail(say(exc)) from None
    cache = Path(args.cache) if args.cache else out.with_name(out.name + ".cache")
    if cache.exists() and not cache.is_dir():
        raise Fail(f"--cache {safe(cache)} is not a folder")
    return out, cache, column


def run(args) -> int:
    """``forecast``: read the log, ask the model what the cache lacks, write the table."""
    out, cache_dir, column = _check(args)
    methods = chosen_methods(args)
    try:
        prompts, prices, rule = load_prompts(args.prompts), load_prices(args.prices), parse_steps(args.steps)
        options = evaluation_reading.read_options(args.format, args.success_threshold, args.treat, args.scorer,
                                                   run_by=args.run_by, step_spans=args.step_spans,
                                                   outcome=args.outcome, censor_when=args.censor_when)
    except ValueError as exc:
        raise Fail(say(exc)) from None
    transcripts, reading = read_transcripts(args.path, options, outcomes=args.outcomes)
    runs = select_runs(transcripts, args.max_runs, args.sample, args.seed)
    asked = asked_steps(runs, rule, args.seed) if rule is not None else None

    def build(p, key_model):  # one method's questions: the asked steps of every run
        questions = build_questions(runs, p, key_model, args.max_chars)
        return questions if asked is None else keep_asked(questions, asked)

    by_method = method_questions(methods, prompts, args.model, args.samples, build)
    questions = [q for groups in by_method.values() for g in groups for q in g]
    n_steps = sum(tr.steps for tr in runs)
    cache = AnswerCache(cache_dir)
    distinct = {q.key: q for q in questions}
    todo = [q for k, q in distinct.items() if cache.get(k) is None]
    _print_plan(args, reading, transcripts, runs, questions, distinct, todo, by_method, n_steps)
    asked_rows = len(next(iter(by_method.values()))[0])
    for line in filter(None, [steps_line(rule, n_steps, asked_rows),
                              *plan_lines(args.model, prices, todo, estimate_tokens(todo), CHARS_PER_TOKEN)]):
        print(line)
    if args.dry_run:
        print("  dry run: no model was called")
        return 0
    replays = _ask(args, by_method, todo, distinct, cache) if todo else {}
    table, parts = methods_table(args, by_method, cache, column, methods, options)
    carried = None
    if rule is not None:  # the steps not asked carry the last asked forecast (the past only)
        table, carried = carry_forward(table, runs, [c for c in table.columns if c not in ("trajectory_id", "step")])
    write_table(table, out, safe_csv)
    summary = write_summary(out, table, parts, replays, args)
    _print_result(args, out, cache_dir, table, parts)
    print_methods(parts, summary)
    for line in filter(None, [carry_line(rule, carried),
                              *usage_lines(args.model, prices, cache, [q.key for q in todo], distinct)]):
        print(line)
    return 0


def _ask(args, by_method, todo, distinct, cache) -> dict:
    """Ask the model what the cache lacks (each method's questions) and say what went wrong; Fail when
    it answered nothing. Returns method → Replay."""
    def opened(chat: bool):
        try:
            return open_model(args.model, args.model_base_url, args.concurrency, args.timeout, chat)
        except ValueError as exc:
            raise Fail(say(exc)) from None

    model = opened(args.chat_completions)
    reopen = (lambda: opened(True)) if provider_of(args.model) == "openai" and not args.chat_completions else None
    replays, switched = ask_methods(model, by_method, cache, args, reopen, _progress)
    result = merge_replays(replays.values())
    if switched:
        print("the server does not serve the Responses API (/v1/responses answered HTTP 404): asked through "
              "chat completions (/v1/chat/completions) instead; --chat-completions skips this first try, and "
              f"for a local or OpenAI-compatible server the form is {LOCAL_FORM}", file=sys.stderr)
    failed = sum(result.errors.values())
    if failed:
        print(f"provider errors on {failed} of {result.asked} prompts ("
              + ", ".join(f"{k}: {v}" for k, v in sorted(result.errors.items()))
              + f"); first: {safe(result.first_error)}; they stay missing: run the command again to ask them",
              file=sys.stderr)
    if result.not_found:
        print(f"HTTP 404 (not found) on {result.not_found} prompts: the address serves no such endpoint or model. "
              f"For a local or OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio, a gateway) use "
              f"{LOCAL_FORM}; for an openai/... model, --chat-completions", file=sys.stderr)
    if result.timed_out or result.not_asked:
        print(f"timed out: {result.timed_out} of {result.asked} prompts got no answer within --timeout "
              f"{args.timeout:g} s (each tried at most {MAX_RETRIES + 1} times)"
              + (f"; after {stall_limit(args.concurrency)} timeouts in a row the provider was taken as not answering and "
                 f"{result.not_asked} prompts were not asked" if result.stalled else "")
              + "; they stay missing: run the command again to ask them", file=sys.stderr)
    if result.answered == 0 and len(todo) == len(distinct):
        if result.timed_out:
            raise Fail(f"timed out: the model answered none of the {result.asked} prompts within --timeout "
                       f"{args.timeout:g} s; no table was written")
        raise Fail("the model answered no prompt (provider errors above); no table was written")
    return replays


def _print_plan(args, reading, transcripts, runs, questions, distinct, todo, by_method, n_steps: int) -> None:
    """What will be asked: agent steps, the steps asked (``--steps``), prompts per method, runs, cached answers,
    the estimate of input tokens."""
    steps = next(iter(by_method.values()))[0]
    kept = len(transcripts)
    chosen = f"{len(runs)} of {kept} runs" if len(runs) != kept else f"{kept} runs"
    dropped = sum(reading.get("dropped", {}).values())
    print(f"forecast: {safe(Path(args.path).name)} ({reading['format']}): {chosen}"
          + (f" ({dropped} dropped by the treatment table)" if dropped else "")
          + _steps_words(args, by_method, n_steps, len(questions)))
    same = len(questions) - len(distinct)
    print(f"  {len(distinct) - len(todo):,} answered in the cache, {len(todo):,} to ask"
          + (f" ({same:,} prompts repeat an earlier one and are asked once)" if same else ""))
    cut = sum(q.truncated for q in steps)
    print(f"  about {estimate_tokens(todo):,} input tokens to send ({CHARS_PER_TOKEN} characters a token; "
          f"{estimate_tokens(distinct.values()):,} for every prompt)"
          + (f"; {cut:,} transcript prefixes longer than {args.max_chars:,} characters were cut" if cut else ""))


def _steps_words(args, by_method: dict, n_steps: int, n_prompts: int) -> str:
    """``, 300 agent steps = prompts``; ``, 300 agent steps, 102 asked (--steps every:3) = prompts``; with several
    methods ``…, 714 prompts (verbal 102, ptrue 102, consistency 5 × 102)``."""
    n_asked = len(next(iter(by_method.values()))[0])
    words = f", {n_steps:,} agent steps" + (f", {n_asked:,} asked (--steps {safe(args.steps)})"
                                           if n_asked != n_steps else "")
    return words + (" = prompts" if n_prompts == n_asked else f", {n_prompts:,} prompts ({plan_words(by_method)})")


def _progress(done: int, total: int) -> None:
    step = max(10, total // 10)
    if done % step == 0 or (done == total and total >= 10):
        print(f"  asked {done:,}/{total:,}", file=sys.stderr, flush=True)


def _print_result(args, out: Path, cache_dir: Path, table, parts: dict) -> None:
    """The table written: rows, values, and every missing value by its cause, per method's column."""
    n = len(table)
    print(f"wrote {safe(out)}: {n:,} rows ({table['trajectory_id'].nunique():,} runs)"
          + ("," if len(parts) == 1 else f", {len(parts)} columns:"))
    for part in parts.values():
        values = part["answered"]
        print(f"  column {safe(part['column'])}, {values:,} forecasts, {n - values:,} missing")
        for problem, where in sorted(part["where"].items()):
            if problem == NOT_ANSWERED:
                print(f"  no answer yet (provider errors): {len(where):,}; run the command again to ask them")
                continue
            examples = ", ".join(f"({safe(t)}, {s})" for t, s in where[:5]) + (" …" if len(where) > 5 else "")
            print(f"  reply without a probability, {problem}: {len(where):,} ({examples})")
    if out.suffix.lower() == ".csv":
        changed = int((neutralise_cells(table[["trajectory_id"]])["trajectory_id"] != table["trajectory_id"]).sum())
        if changed:
            print(f"  {changed:,} rows have an id that a spreadsheet would run as a formula: the CSV writes it "
                  "after a ' (it then no longer joins the log); a .parquet table keeps every id exactly")
    print(f"  answers cached in {safe(cache_dir)}")
    print(f"  score it: python -m tpsviz score {safe(args.path)} --forecasts {safe(out)}")
