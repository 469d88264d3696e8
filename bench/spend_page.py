"""The spend page's cost (``caramba web``'s ``/spend``, :mod:`bots.web.spend`): a big
month (200 channels, 20 workspaces, 500 people, 10 models, 30 days) rendered N times
through the app as served (guards, headers, the template, the SVG chart), its source a
fixed report (the ledger's own cost: bench/spend_ledger.py). Prints the page's size and
the wall and CPU time per page. Run: ``.venv/bin/python bench/spend_page.py``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from bots.web.access import Signer
from bots.web.app import Inspector, create_app, secured
from core.config import load_settings
from core.types.spend import SpendReport, SpendTotal

N = 50


def lines(prefix: str, n: int) -> tuple[SpendTotal, ...]:
    return tuple(
        SpendTotal(key=f"{prefix}{i}", name=f"{prefix} <b>{i}</b>", cost_usd=1.0 + i)
        for i in range(n)
    )


REPORT = SpendReport(
    month="2026-11",
    total_usd=999.0,
    by_channel=lines("ch", 200),
    by_team=lines("t", 20),
    by_person=lines("p", 500),
    by_model=lines("m", 10),
    by_day=tuple(
        SpendTotal(key=f"2026-11-{d:02d}", name="", cost_usd=d * 1.5) for d in range(1, 31)
    ),
)


async def source(*, month: str, team_key: str | None, channel_key: str | None) -> SpendReport:
    return REPORT


async def main() -> None:
    nothing: Any = None  # the page reads no store, workspace or live feed
    inspector = Inspector(
        load_settings(), nothing, nothing, Signer(b"k" * 32), nothing, True, spend=source
    )
    transport = httpx.ASGITransport(app=secured(create_app(inspector)), client=("127.0.0.1", 1))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8400") as c:
        first = await c.get("/spend?month=2026-11")
        assert first.status_code == 200, first.text
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(N):
            await c.get("/spend?month=2026-11")
        wall_ms = (time.perf_counter() - wall) / N * 1000
        cpu_ms = (time.process_time() - cpu) / N * 1000
    print(
        f"/spend, 200 channels, 500 people, 10 models, 30 days: {len(first.text) / 1024:.0f} KiB,"
        f" {wall_ms:.1f} ms wall, {cpu_ms:.1f} ms CPU a page (mean of {N})"
    )


if __name__ == "__main__":
    asyncio.run(main())
