"""What a model call cost, the same for every client of the port: ``[llm.prices]`` first, then
the client's own figure when it has one (litellm's price map), then the shipped table of
known OpenAI-compatible models (``core/llm/prices.toml``). A model priced nowhere counts $0,
with one warning per model per process saying how to price it.

Owns the price arithmetic and that warning; reads prices.toml once.
"""

from __future__ import annotations

import functools
import logging
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path

from core.config import LLMSettings
from core.config_sections import ModelPrice
from core.llm.routes import wire_model

log = logging.getLogger(__name__)
TABLE = Path(__file__).with_name("prices.toml")
_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_warned: set[str] = set()


@functools.cache
def shipped() -> dict[str, ModelPrice]:
    """The shipped price table, by the name the server knows."""
    with TABLE.open("rb") as file:
        return {name: ModelPrice(**price) for name, price in tomllib.load(file).items()}


def price_of(table: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    """``model``'s entry: by its name as configured, as sent, or undated (…-2024-07-18)."""
    sent = wire_model(model)
    for name in dict.fromkeys((model, sent, _DATED.sub("", sent))):
        if name in table:
            return table[name]
    return None


def cost_usd(
    llm: LLMSettings,
    model: str,
    prompt: int,
    completion: int,
    known: Callable[[], float | None] | None = None,
) -> float:
    """USD for the tokens of one call of ``model``; ``known``: the client's own figure."""
    price = price_of(llm.prices, model)
    if price is None and known is not None:
        figure = known()
        if figure is not None:
            return figure
    price = price or price_of(shipped(), model)
    if price is None:
        warn_unpriced(model)
        return 0.0
    return (prompt * price.input_per_mtok + completion * price.output_per_mtok) / 1e6


def warn_unpriced(model: str) -> None:
    """Once per model per process: its calls count $0, and how to give it a price."""
    if model in _warned:
        return
    _warned.add(model)
    log.warning(
        "No price known for the model %s: its calls count $0 against the run's cost limit. "
        'To price it, add to config.toml under [llm.prices]: "%s" = { input_per_mtok = …, '
        "output_per_mtok = … } (USD per million tokens).",
        model,
        model,
    )
