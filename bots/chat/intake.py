"""A request taken in a thread, the same on every chat platform: a new run id, the files
attached fetched into that run's workspace (by the adapter's own means: ``fetch``; any
refused, the request is not taken), the request recorded by the people room
(``core.runs.people.request``: a worker plans it), then the thread linked to the run and
the run relayed into it (:meth:`bots.chat.relays.Relays.open`).

The outcome says what became of it; an adapter only posts a :class:`NotOpened` in its
own markup (Slack's ``:x:``, Discord's ❌, the web chat's error) — it opens the thread
and fetches the files, the rest is here.

May call: ``bots.chat`` (relays, inputs, ports), ``core.runs`` (people, requests).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bots.chat.inputs import Fetched
from bots.chat.ports import Place
from bots.chat.relays import Relays
from core.runs import people
from core.runs.outcomes import NotTaken
from core.runs.requests import new_run_id
from core.types.files import AttachedFile
from core.types.people import Person
from core.types.place import Place as Where

log = logging.getLogger(__name__)

# Fetches a request's files into the workspace of the run id it is given.
Fetch = Callable[[str], Awaitable[Fetched]]


@dataclass(frozen=True)
class Opened:
    """The request is run ``run_id``, shown in its thread from now on."""

    run_id: str


@dataclass(frozen=True)
class NotOpened:
    """Not taken: ``reason`` says why in plain words (the request could not be recorded,
    or its files fetched); or ``files``: the files refused, one line each, naming them."""

    reason: str = ""
    files: tuple[str, ...] = ()


async def take_request(
    relays: Relays,
    task: str,
    person: Person,
    place: Place,
    fetch: Fetch | None = None,
    *,
    run_id: str | None = None,
    where: Where | None = None,
) -> Opened | NotOpened:
    """``person``'s ``task`` asked in ``place`` (its files fetched with ``fetch``) → run
    ``run_id`` (a new one by default) shown there, or why not. ``where``: the platform,
    workspace and channel it was asked in, with their names (the spend ledger counts the
    run's cost there: ``core.types.place.Place``)."""
    svc = relays.svc
    run_id = run_id or new_run_id()
    kept: list[AttachedFile] = []
    if fetch is not None:
        try:
            fetched = await fetch(run_id)
        except Exception as exc:
            log.exception("could not fetch the files of a request in %s", place.thread)
            return NotOpened(people.not_taken(exc).reason)
        if fetched.refused:
            await svc.workspace.clear(run_id)
            return NotOpened(files=tuple(fetched.refused))
        kept = fetched.kept
    taken = await people.request(svc, task, person, files=kept, run_id=run_id, place=where)
    if isinstance(taken, NotTaken):
        return NotOpened(taken.reason)
    await relays.open(run_id, place)
    return Opened(run_id)
