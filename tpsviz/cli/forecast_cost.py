"""What ``tpsviz forecast`` says about its cost and its steps (issue 47 point 4; docs/forecasts.md §3):
the steps asked, the tokens and price before a run (``--dry-run`` too), the tokens the provider
reported and their price after it, and the steps carried forward in the table.
"""

from __future__ import annotations

from tpsviz.cli.common import safe
from tpsviz.forecasts.prices import OUTPUT_TOKENS_PER_REPLY, cost, shared_prefix_tokens, usage_totals, usd

__all__ = ["steps_line", "plan_lines", "usage_lines", "carry_line"]


def steps_line(rule, n_steps: int, n_asked: int) -> str | None:
    """The steps ``--steps`` keeps, or None without it."""
    if rule is None:
        return None
    return (f"  --steps {rule}: {n_asked / max(n_steps, 1):.0%} of the agent steps are asked; a step not asked carries "
            "the last asked forecast forward (only the past), a step before the first asked one stays missing")


def plan_lines(model: str, prices, todo, input_tokens: int, chars_per_token: float) -> list[str]:
    """The output tokens assumed and the price of the prompts to ask (or "no price known").

    Parameters
    ----------
    model : str
    prices : tpsviz.forecasts.prices.PriceTable
    todo : list of Question
        The prompts to ask, in the order they will be asked.
    input_tokens : int
        Their estimate of input tokens.
    chars_per_token : float
    """
    output = len(todo) * OUTPUT_TOKENS_PER_REPLY
    lines = [f"  about {output:,} output tokens ({OUTPUT_TOKENS_PER_REPLY} a reply assumed: the one line the prompt "
             "asks for; a reasoning model bills its reasoning as output too)"]
    price = prices.get(model)
    if price is None:
        lines.append(f"  price: no price known for {safe(model)} (add it to {safe(prices.source)}, or give "
                     "--prices FILE)")
        return lines
    cached = min(shared_prefix_tokens(todo, chars_per_token), input_tokens)
    listed = f", listed {safe(prices.listed)}" if prices.listed else ""
    lines.append(f"  price: about {usd(cost(price, input_tokens, output))} for {safe(model)} at the prices of "
                 f"{safe(prices.source)} (USD per million tokens: input {price.input:g}, cached input "
                 f"{price.cached_input:g}, output {price.output:g}{listed}; check them)")
    if cached:
        lines.append(f"  or about {usd(cost(price, input_tokens - cached, output, cached))} where the provider's "
                     f"prefix cache serves the {cached:,} tokens the prompts share with their run's previous "
                     "prompt (OpenAI's does from 1,024 tokens)")
    return lines


def usage_lines(model: str, prices, cache, asked_keys, all_keys) -> list[str]:
    """The tokens the provider reported for this run's answers and for the whole table's, and their price.

    Parameters
    ----------
    model : str
    prices : PriceTable
    cache : tpsviz.forecasts.cache.AnswerCache
    asked_keys : iterable of str
        The keys this run asked.
    all_keys : iterable of str
        The keys of every prompt of the table (answers of earlier runs included).
    """
    lines, asked, every = [], list(asked_keys), list(all_keys)
    price = prices.get(model)
    for label, keys in (("this run", asked), ("the whole table", every)):
        totals, n = usage_totals(cache.usage(k) for k in keys)
        if not n or (label == "the whole table" and set(keys) == set(asked)):
            continue
        whole = totals["input"] + totals["cached"]
        priced = f"; {usd(cost(price, totals['input'], totals['output'], totals['cached']))}" if price else ""
        lines.append(f"  tokens the provider reported, {label} ({n:,} answers): {whole:,} input, of which "
                     f"{totals['cached']:,} cached ({totals['cached'] / max(whole, 1):.0%}), {totals['output']:,} "
                     f"output{priced}")
    return lines


def carry_line(rule, counts) -> str | None:
    """Steps asked, carried forward and missing in the table, or None without ``--steps``."""
    if rule is None:
        return None
    return (f"  --steps {rule}: {counts.asked:,} rows asked, {counts.carried:,} carried forward from the last asked "
            f"step before them, {counts.missing:,} missing (no asked step with a forecast before them); column "
            "asked marks the asked rows")
