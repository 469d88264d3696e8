"""The services a turn, a tool or a person's action uses: one plain record per process,
assembled by ``core.process.wiring`` and passed down explicitly (never globals)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from core.config import Settings
from core.llm.base import LLM
from core.llm.capabilities import Ladder
from core.prompts import PromptLibrary
from core.scheduler.base import Scheduler
from core.state.bus import Bus
from core.state.client import Client
from core.state.store import Store
from core.types.events import RunEvent
from core.types.intents import Intent
from core.workspace import Workspace

if TYPE_CHECKING:
    # Type only: the library loads in the processes that plan or learn, when first used.
    from core.library import Library

    # Type only: the tools sit above the services (a tool gets the services it may use).
    from core.tools.registry import ToolRegistry


class IntentProcessor(Protocol):
    """Carries out one kind of intent; returns events to record with its done-marker."""

    async def __call__(self, svc: Services, intent: Intent) -> list[RunEvent]: ...


@dataclass
class Services:
    """Everything the agent turn, the tools and the people's actions use."""

    settings: Settings
    # The Redis client, kept for the tests that look into Redis; the code speaks Redis only
    # through ``store`` and the other ``core.state`` objects (tests/unit/test_redis_room.py).
    redis: Client
    store: Store
    llm: LLM
    tools: ToolRegistry
    prompts: PromptLibrary
    scheduler: Scheduler
    bus: Bus
    # The runs' files (Redis-backed, or a local folder in embedded mode).
    workspace: Workspace
    # Intent kind → processor; chat adapters replace post_to_chat/notify with their own.
    intent_processors: dict[str, IntentProcessor] = field(default_factory=dict)
    # Opens the agent library (``wiring`` sets it); called once, on first use.
    open_library: Callable[[], Awaitable[Library]] | None = field(default=None, repr=False)
    _library: Library | None = field(default=None, repr=False)
    _library_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    # What each model was seen able to do with tools (core.llm.capabilities).
    ladder: Ladder = field(default_factory=Ladder, repr=False)

    async def library(self) -> Library:
        """The agent library, opened on first use: its embedder loads once per process,
        and only in processes that plan or learn."""
        async with self._library_lock:
            if self._library is None:
                if self.open_library is None:
                    raise RuntimeError("these services have no agent library")
                self._library = await self.open_library()
            return self._library

    async def aclose(self) -> None:
        if self._library is not None:
            await self._library.aclose()
        await self.llm.aclose()
        await self.store.aclose()
