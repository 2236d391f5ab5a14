"""What a replay costs: the editable price table (``prices.toml`` beside this module, or a file the
user names), the tokens a provider reports, and the price of an estimate or of a run (issue 47
point 4; docs/forecasts.md §3).

Prices are US dollars per million tokens: ``input`` (a prompt token at the full rate),
``cached_input`` (a prompt token served from the provider's prefix cache) and ``output`` (a reply
token, reasoning included). Before a run the output is an assumption (:data:`OUTPUT_TOKENS_PER_REPLY`)
and the cached part an estimate (:func:`shared_prefix_tokens`); after it, the provider's own counts,
stored beside each answer in the cache (:func:`token_usage`), are summed (:func:`usage_totals`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from tpsviz.forecasts.prompts import read_toml

__all__ = ["DEFAULT_PRICES", "OUTPUT_TOKENS_PER_REPLY", "CACHE_MIN_TOKENS", "Price", "PriceTable", "load_prices",
           "cost", "usd", "token_usage", "usage_totals", "shared_prefix_tokens"]

#: the price table shipped with tpsviz
DEFAULT_PRICES = Path(__file__).with_name("prices.toml")
#: the output tokens assumed a reply before any is seen: the one line the judge prompt asks for
#: ("probability: 0.73") and a little more; a reasoning model bills its reasoning as output too
OUTPUT_TOKENS_PER_REPLY = 20
#: the shortest shared prefix a provider's prefix cache serves (OpenAI's automatic cache: 1,024 tokens)
CACHE_MIN_TOKENS = 1024
_FIELDS = ("input", "cached_input", "output")


@dataclass(frozen=True)
class Price:
    """One model's prices, US dollars per million tokens."""

    input: float
    cached_input: float
    output: float


@dataclass(frozen=True)
class PriceTable:
    """The prices read from one file.

    Attributes
    ----------
    prices : dict
        ``PROVIDER/MODEL`` -> :class:`Price`.
    source : str
        The file's name (never its content).
    listed : str or None
        When the prices were listed (the file's ``listed`` key).
    """

    prices: dict
    source: str
    listed: str | None = None

    def get(self, model: str) -> Price | None:
        """The price of ``model`` (exactly as the model is named), or None."""
        return self.prices.get(model)


def load_prices(path: str | Path | None = None) -> PriceTable:
    """Read a price table (default :data:`DEFAULT_PRICES`).

    Parameters
    ----------
    path : str or Path, optional
        A TOML file: an optional text key ``listed``, and one table per model named
        ``"PROVIDER/MODEL"`` with the numbers ``input``, ``output`` and optionally ``cached_input``.

    Returns
    -------
    PriceTable

    Raises
    ------
    ValueError
        The file cannot be read as TOML, or a key holds something else than the form above. The
        message names the file and the key, never the file's content.
    """
    p = Path(path) if path is not None else DEFAULT_PRICES
    doc = read_toml(p, "price file")
    listed = doc.pop("listed", None)
    if listed is not None and not isinstance(listed, str):
        raise ValueError(f"price file {p.name}: key 'listed' must be a text (a date)")
    prices = {}
    for model, entry in doc.items():
        where = f"price file {p.name}: key {_shown(model)}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} must be a table of prices (input, cached_input, output)")
        unknown = sorted(set(entry) - set(_FIELDS))
        if unknown:
            raise ValueError(f"{where}: unknown key {_shown(unknown[0])}; a model's keys are input, cached_input, "
                             "output")
        values = {}
        for field in _FIELDS:
            v = entry.get(field, entry.get("input") if field == "cached_input" else None)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"{where}: {field} must be a number of US dollars per million tokens, at least 0")
            values[field] = float(v)
        prices[model] = Price(**values)
    return PriceTable(prices, "tpsviz/forecasts/prices.toml" if path is None else p.name, listed)


def _shown(key) -> str:
    """A key of the file for a message: quoted, at most 80 characters, no control characters."""
    text = "".join(ch for ch in str(key) if ch.isprintable())
    return repr(text[:80] + ("…" if len(text) > 80 else ""))


def cost(price: Price, input_tokens: float, output_tokens: float, cached_tokens: float = 0) -> float:
    """US dollars for ``input_tokens`` prompt tokens at the full rate, ``cached_tokens`` served from
    the cache and ``output_tokens`` reply tokens.

    Parameters
    ----------
    price : Price
    input_tokens, output_tokens, cached_tokens : float

    Returns
    -------
    float
    """
    return (input_tokens * price.input + cached_tokens * price.cached_input + output_tokens * price.output) / 1e6


def usd(x: float) -> str:
    """Dollars as text: cents from $1 on, else three significant figures (``$0.0042``)."""
    return f"${x:,.2f}" if x >= 1 else f"${x:.3g}"


def token_usage(output) -> dict | None:
    """The tokens the provider reported for one reply (inspect_ai's ``ModelOutput.usage``), or None.

    Returns
    -------
    dict or None
        ``{"input": …, "cached": …, "output": …}``: prompt tokens charged at the full rate (a cache
        write counted here), prompt tokens read from the provider's cache, reply tokens.
    """
    u = getattr(output, "usage", None)
    if u is None:
        return None
    whole = (getattr(u, "input_tokens", 0) or 0) + (getattr(u, "input_tokens_cache_write", 0) or 0)
    return {"input": int(whole), "cached": int(getattr(u, "input_tokens_cache_read", 0) or 0),
            "output": int(getattr(u, "output_tokens", 0) or 0)}


def usage_totals(usages) -> tuple[dict, int]:
    """The sum of token usages (:func:`token_usage`; None where an answer has none).

    Returns
    -------
    totals : dict
        ``input``, ``cached``, ``output`` summed over the answers that carry a usage.
    n : int
        How many did.
    """
    totals, n = {"input": 0, "cached": 0, "output": 0}, 0
    for u in usages:
        if u is None:
            continue
        n += 1
        for k in totals:
            totals[k] += int(u.get(k, 0) or 0)
    return totals, n


def shared_prefix_tokens(questions, chars_per_token: float) -> int:
    """About how many prompt tokens a provider's prefix cache could serve: for each question, the
    characters its prompt shares at its start with the previous question of the same run (in the
    order given), counted where they make at least :data:`CACHE_MIN_TOKENS` tokens.

    Parameters
    ----------
    questions : list of tpsviz.forecasts.replay.Question
    chars_per_token : float

    Returns
    -------
    int
    """
    last, total = {}, 0
    for q in questions:
        before = last.get(q.trajectory_id)
        if before is not None:
            shared = len(os.path.commonprefix([before, q.prompt])) / chars_per_token
            total += int(shared) if shared >= CACHE_MIN_TOKENS else 0
        last[q.trajectory_id] = q.prompt
    return total
