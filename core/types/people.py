"""A person acting on a run, as every adapter hands them to the people room
(``core.runs.people``): who they are on their platform, the name people read, and
whether the platform itself makes them an approver; and the ``who`` port an adapter
implements to name anybody else (a run's requester in a refusal).

Names, never ids, in anything people read: an outcome's line names the person by
:attr:`Person.name`, a refusal names others through :class:`Who`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Person:
    """Someone acting on a run. ``id``: their platform id (``U0ALICE``, a Discord
    snowflake, ``web``, ``console``), what runs record (``requested_by``, a transition's
    ``by``); ``name``: how people read them (``Alice``); ``approver``: the platform says
    they are one (a Discord approver role), beside ``[approval] approvers``."""

    id: str
    name: str
    approver: bool = False


class Who(Protocol):
    """The "who" port: a platform id → the name to show for that person (each adapter
    has one: Slack's ``users.info``, Discord's remembered display names, the web chat's
    own words)."""

    async def name(self, user_id: str) -> str: ...


class AsIs:
    """A :class:`Who` for callers whose ids are names already (the console's
    ``console``)."""

    async def name(self, user_id: str) -> str:
        return user_id


AS_IS = AsIs()
