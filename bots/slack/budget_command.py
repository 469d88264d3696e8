"""``/caramba budget …`` in Slack: the channel's month for anybody (:func:`month_text`),
a budget set by admins — an amount, an owner, the channel or the workspace
(:class:`BudgetWords`) — through ``core.runs.spend.set_budget``, where the rule lives.
Answered to the person alone, except a budget set: said in the channel."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from bots.slack.mentions import People
from bots.slack.spend import SlackPlaces
from bots.slack.text import escape, truncate
from core.runs import spend
from core.runs.outcomes import Refused
from core.services import Services
from core.types.figures import cost
from core.types.place import Place
from core.types.spend import SpendReport

BUDGET_WORD = "budget"
BUDGET_HELP = (
    "`/caramba budget` shows this channel's month. Admins set it: "
    "`/caramba budget $50` (you approve requests over it), "
    "`/caramba budget $50 owner @ana`, `/caramba budget workspace $500`."
)
_AMOUNT = re.compile(r"^\$?(\d{1,9}(?:\.\d{1,2})?)$")
_USER = re.compile(r"^<@([A-Z0-9]+)(?:\|[^>]*)?>$")


def is_budget(text: str) -> bool:
    """Whether ``/caramba`` text is a budget command (``budget …``)."""
    words = text.strip().split(maxsplit=1)
    return bool(words) and words[0].casefold() == BUDGET_WORD


class BudgetWords:
    """What ``/caramba budget …`` says: an amount, an owner, the scope; or why not."""

    def __init__(self, text: str) -> None:
        self.amount: float | None = None
        self.owner: str = ""
        self.scope: Literal["channel", "workspace"] = "channel"
        self.problem = ""
        words = text.strip().split()[1:]
        while words:
            word = words.pop(0)
            if word.casefold() in ("workspace", "team"):
                self.scope = "workspace"
            elif word.casefold() == "channel":
                self.scope = "channel"
            elif word.casefold() == "owner" and words:
                found = _USER.match(words.pop(0))
                if not found:
                    self.problem = "Name the owner as a mention: `owner @ana`."
                    return
                self.owner = found.group(1)
            elif (amount := _AMOUNT.match(word.replace(",", ""))) is not None:
                self.amount = float(amount.group(1))
            else:
                self.problem = f"I did not understand “{truncate(word, 40)}”. {BUDGET_HELP}"
                return


async def handle_budget(
    svc: Services,
    people: People,
    places: SlackPlaces,
    command: dict[str, Any],
    respond: Callable[..., Awaitable[Any]],
) -> None:
    """``/caramba budget …``: the channel's month (anybody), or a budget set (admins).
    Answered to the person only, except a budget set: said in the channel."""
    said = BudgetWords(command.get("text", ""))
    if said.problem:
        await respond(text=escape(said.problem), response_type="ephemeral")
        return
    place = await places.learn(command)
    if said.amount is None:
        made = await spend.report(svc, channel_key=place.key)
        await respond(text=month_text(made, place), response_type="ephemeral")
        return
    person = await people.person(command.get("user_id", ""))
    owner = await people.person(said.owner) if said.owner else None
    outcome = await spend.set_budget(
        svc, person, place, month_usd=said.amount, owner=owner, scope=said.scope
    )
    if isinstance(outcome, Refused):
        await respond(text=escape(outcome.reason), response_type="ephemeral")
        return
    await respond(text=f":moneybag: {escape(outcome.line)}", response_type="in_channel")


def month_text(made: SpendReport, place: Place) -> str:
    """The channel's month in one short message (mrkdwn)."""
    name = escape(place.channel_name or "this channel")
    lines = [f"*{name} in {made.month}*: {cost(made.total_usd)} over ended runs"]
    if made.under_way_usd:
        lines.append(f"Runs under way: {cost(made.under_way_usd)}")
    for use in made.budgets:
        b = use.budget
        owner = escape(b.owner_name or "nobody")
        lines.append(
            f"{b.scope.capitalize()} budget: {cost(use.spent_usd)} of {cost(b.month_usd)} "
            f"({use.share:.0%}) · owner {owner}"
        )
    if not made.budgets:
        lines.append("No budget: admins set one with `/caramba budget $50`.")
    top = ", ".join(f"{escape(t.name)} {cost(t.cost_usd)}" for t in made.by_person[:5])
    if top:
        lines.append(f"By person: {top}")
    return "\n".join(lines)
