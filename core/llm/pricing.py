"""What a model call cost from ``[llm.prices]``: shared by every client of the port.

Owns the price arithmetic only; calls nothing.
"""

from __future__ import annotations

from core.config import LLMSettings


def configured_cost(
    settings: LLMSettings, model: str, prompt: int, completion: int
) -> float | None:
    """USD for the tokens at ``[llm.prices]``'s rate for ``model`` (None: no price set)."""
    price = settings.prices.get(model)
    if price is None:
        return None
    return (prompt * price.input_per_mtok + completion * price.output_per_mtok) / 1e6
