"""Figures as people read them (in a thread, on a card, in a pause): costs in cents,
tokens with separators — "1,000,000 tokens", "$2.00". The only formatter of counts,
tokens and costs: core's words and every adapter (Discord, Slack, web, console) use it,
so a figure reads the same on every surface. Pure: no I/O."""

from __future__ import annotations

import math


def cost(usd: float) -> str:
    """``$0.42``, ``$3.10``, ``$1,204.00``; ``under $0.01`` below a cent, ``$0`` for none."""
    if usd <= 0:
        return "$0"
    if usd < 0.01:
        return "under $0.01"
    return f"${usd:,.2f}"


def exact_cost(usd: float) -> str:
    """A budget, or spending set against one, exact enough to decide on: as :func:`cost`
    from a cent up; below a cent to two significant figures (``$0.0004``, ``$0.0012``)
    where :func:`cost` would say "under $0.01" — a planner's budget may be that small."""
    if not 0 < usd < 0.01:
        return cost(usd)
    decimals = 1 - math.floor(math.log10(usd))
    return f"${usd:.{decimals}f}".rstrip("0")


def number(n: int) -> str:
    """A count with separators: ``12,345``."""
    return f"{n:,}"


def tokens(n: int) -> str:
    """``12,345 tokens`` (``1 token``)."""
    return f"{number(n)} token{'' if n == 1 else 's'}"
