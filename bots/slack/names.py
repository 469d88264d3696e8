"""People agents mention, shown by name without pinging them.

An agent's text may hold Slack mentions (``<@U123>``, ``<@U123|ana>``): escaped as they
were, people saw ``&lt;@U123&gt;``; posted raw, they would ping. The renderer
(:func:`content`) turns each into a marker that survives escaping, and the transport
(:meth:`Names.resolve` / :meth:`Names.resolve_payload`) turns the markers into
``@Name`` (``users.info``, once per person and process; "someone" when Slack will not
say) just before the call that posts: plain text, never a ``<@…>`` mention. Broadcasts
(``<!channel>``, ``<!here>``, ``<!everyone>``) stay escaped text (``bots.slack.text``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from bots.chat.ports import Payload
from bots.slack.mentions import People
from bots.slack.text import SECTION_LIMIT, escape, truncate

_MENTION = re.compile(r"<@([UW][A-Z0-9]{2,})(?:\|[^>]*)?>")
_LABELLED = re.compile(r"<@([UW][A-Z0-9]{2,})(?:\|([^>]*))?>")
_MARK = "\ue000"
_MARKED = re.compile(_MARK + r"([UW][A-Z0-9]{2,})" + _MARK)


def content(text: str) -> str:
    """An agent's ``text`` escaped for mrkdwn, its mentions of people marked."""
    return escape(_MENTION.sub(lambda m: f"{_MARK}{m.group(1)}{_MARK}", text))


def named_now(text: str, known: dict[str, str]) -> str:
    """``text`` escaped, its mentions as the names already ``known`` (else the mention's
    label, else "someone"): for what no transport call resolves (the Home tab)."""

    def name(m: re.Match[str]) -> str:
        return "@" + known.get(m.group(1), m.group(2) or "someone")

    return escape(_LABELLED.sub(name, text))


class Names:
    """Turns marked mentions into names, with ``people`` (``users.info``)."""

    def __init__(self, people: People) -> None:
        self.people = people

    async def resolve(self, text: str) -> str:
        """A message's text (or a streamed one) with names: never cut."""
        if _MARK not in text:
            return text
        names = {uid: await self.people.name(uid) for uid in set(_MARKED.findall(text))}
        # (A mark the renderer cut in half goes.)
        return _MARKED.sub(lambda m: "@" + escape(names[m.group(1)]), text).replace(_MARK, "")

    async def resolve_payload(self, payload: Payload) -> Payload:
        """Blocks with names, each text within the limit the renderer kept."""
        if payload is None or _MARK not in json.dumps(payload, ensure_ascii=False):
            return payload
        found = set(_MARKED.findall(json.dumps(payload, ensure_ascii=False)))
        names = {uid: await self.people.name(uid) for uid in found}
        resolved: Payload = _walk(payload, names)
        return resolved


def _named(text: str, names: dict[str, str]) -> str:
    """``text`` with its marks as names, never grown past a section's limit by them
    (the renderer cut it to fit with the shorter marks)."""
    named = _MARKED.sub(lambda m: "@" + escape(names.get(m.group(1), "someone")), text)
    named = named.replace(_MARK, "")  # a mark the renderer cut in half
    if len(named) > len(text) and len(named) > SECTION_LIMIT:
        return truncate(named, max(len(text), SECTION_LIMIT))
    return named


def _walk(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _named(value, names)
    if isinstance(value, list):
        return [_walk(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, names) for k, v in value.items()}
    return value
