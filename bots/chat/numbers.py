"""Figures as people read them in a thread: costs in cents, tokens with separators."""

from __future__ import annotations


def cost(usd: float) -> str:
    """``$0.42``, ``$3.10``, ``$1,204.00``; ``under $0.01`` below a cent, ``$0`` for none."""
    if usd <= 0:
        return "$0"
    if usd < 0.01:
        return "under $0.01"
    return f"${usd:,.2f}"


def tokens(n: int) -> str:
    """``12,345 tokens`` (``1 token``)."""
    return f"{n:,} token{'' if n == 1 else 's'}"
