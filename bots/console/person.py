"""Who acts in the console: the person at the terminal, as the people room
(``core.runs.people``) takes them — id ``console`` (what runs record: they requested the
run, so they may decide about it), named by their login on this machine ("you" where it
has none) — and the console's ``who`` port.

May call: ``core.types.people``.
"""

from __future__ import annotations

import getpass

from core.types.people import Person

CONSOLE = "console"


def login() -> str:
    """This machine's name for the person at the terminal ("you" if it has none)."""
    try:
        return getpass.getuser() or "you"
    except (OSError, KeyError):  # no login name in the environment or the user database
        return "you"


def console_person() -> Person:
    """The person at the terminal."""
    return Person(id=CONSOLE, name=login())


def named(user_id: str) -> str:
    """How the console names the person ``user_id`` (a run's requester on a card): the
    person at the terminal by their login name; any other id as it is (runs of a chat
    platform do not reach the console)."""
    return login() if user_id == CONSOLE else user_id


class ConsoleWho:
    """The console's ``who`` port: the person at the terminal by their name; any other
    id (runs of a chat platform do not reach the console) as it is."""

    def __init__(self, person: Person) -> None:
        self.person = person

    async def name(self, user_id: str) -> str:
        return self.person.name if user_id == self.person.id else user_id
