"""Team spend in Slack: where a request was asked (:class:`SlackPlaces`: the team and
channel with their names, for the spend ledger), a request over its channel's budget
asked in its thread with Approve spending / Deny (:func:`ask_message`,
:class:`SpendButtons`: a click → ``core.runs.spend.approve_spend`` by the clicker — the
budget's owner or an admin, once per request — the message redrawn through the run's
outbox saying who decided; a refusal only the clicker sees), ``/caramba budget …``
(:func:`handle_budget`: the channel's month for anybody, a budget set by admins), and the
channel lines of the App Home (:func:`home_lines`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from slack_bolt.async_app import AsyncAck
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    MarkdownTextObject,
    SectionBlock,
)
from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.intentions import SpendAsk
from bots.chat.ports import Place as ThreadPlace
from bots.chat.ports import Rendered
from bots.chat.spend_asks import APPROVE_LABEL, DENY_LABEL, decided_text, spend_ask
from bots.slack.context import SlackContext
from bots.slack.mentions import People
from bots.slack.text import escape, truncate
from core.runs import spend
from core.runs.outcomes import Refused
from core.services import Services
from core.types.events import SpendApprovalAsked
from core.types.figures import cost
from core.types.place import Place
from core.types.run import RunState
from core.types.spend import SpendReport

log = logging.getLogger(__name__)
APPROVE, DENY = "caramba_spend_approve", "caramba_spend_deny"
BUDGET_WORD = "budget"
BUDGET_HELP = (
    "`/caramba budget` shows this channel's month. Admins set it: "
    "`/caramba budget $50` (you approve requests over it), "
    "`/caramba budget $50 owner @ana`, `/caramba budget workspace $500`."
)
_AMOUNT = re.compile(r"^\$?(\d{1,9}(?:\.\d{1,2})?)$")
_USER = re.compile(r"^<@([A-Z0-9]+)(?:\|[^>]*)?>$")
# Channels shown in the App Home at most.
HOME_CHANNELS = 8


class SlackPlaces:
    """Slack team and channel ids → a core :class:`Place`, with the names this process
    has learned — for free from slash commands (``channel_name``, ``team_domain``), or
    looked up off the request path (the Home tab, ``/caramba budget``) — so a mention
    costs no extra Slack call. Names learned are kept in the ledger's names too: a
    report shows a channel by name even for runs recorded before it was learned. The
    workspace is the event's team, else the bot's own (``auth.test``, once)."""

    def __init__(self, client: AsyncWebClient, svc: Services) -> None:
        self.client, self.svc = client, svc
        self.own_team = ""
        self.channels: dict[str, str] = {}
        self.teams: dict[str, str] = {}

    async def place(self, team: str, channel: str, thread: str = "") -> Place:
        """``team``: the workspace's id ("" → the bot's own)."""
        team = team or await self._own_team()
        return Place(
            platform="slack",
            workspace=team or "slack",
            channel=channel,
            workspace_name=self.teams.get(team, ""),
            channel_name=self.channels.get(channel, ""),
            thread=thread,
        )

    async def learn(self, command: dict[str, Any]) -> Place:
        """The names a slash command carries, kept; the command's place."""
        channel, name = command.get("channel_id", ""), command.get("channel_name", "")
        team, domain = command.get("team_id", ""), command.get("team_domain", "")
        if name and name not in ("directmessage", "privategroup"):
            self.channels[channel] = f"#{name}"
        if domain:
            self.teams[team] = domain
        place = await self.place(team, channel)
        await self._keep(place)
        return place

    async def look_up(self, team: str, channel: str) -> Place:
        """Ask Slack for the names not known yet (off the request path); the place."""
        if channel and channel not in self.channels:
            try:
                got = await self.client.conversations_info(channel=channel)
                info = got.get("channel") or {}
                if info.get("name") and not info.get("is_im"):
                    self.channels[channel] = f"#{info['name']}"
            except Exception:
                log.info("could not name channel %s for the spend ledger", channel)
        place = await self.place(team, channel)
        await self._keep(place)
        return place

    async def _keep(self, place: Place) -> None:
        try:
            await spend.name_place(self.svc, place)
        except Exception:  # names are a nicety: a report falls back to ids
            log.exception("keeping the names of %s failed", place.key)

    async def _own_team(self) -> str:
        if not self.own_team:
            try:
                got = await self.client.auth_test()
                self.own_team = str(got.get("team_id") or "")
            except Exception:
                log.info("could not ask Slack which workspace the bot is in")
        return self.own_team


def ask_message(a: SpendAsk, decided: str = "") -> Rendered:
    """The ask; with ``decided`` (mrkdwn, already rendered), that line instead of the
    buttons."""
    text = escape(a.text)
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=truncate(text)))]
    if decided:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=decided)]))
    else:
        blocks.append(
            ActionsBlock(
                block_id=f"spend_ask:{a.run_id}"[:255],
                elements=[
                    ButtonElement(
                        text=APPROVE_LABEL, action_id=APPROVE, value=a.run_id, style="primary"
                    ),
                    ButtonElement(text=DENY_LABEL, action_id=DENY, value=a.run_id, style="danger"),
                ],
            )
        )
    return Rendered(truncate(text), [b.to_dict() for b in blocks])


class SpendButtons:
    """The Approve spending / Deny listeners on ``ctx.app``; ``refuse(body, text)`` tells
    the clicker only."""

    def __init__(
        self, ctx: SlackContext, refuse: Callable[[dict[str, Any], str], Awaitable[None]]
    ) -> None:
        self.ctx, self.refuse = ctx, refuse
        ctx.app.action(APPROVE)(self._on_click)
        ctx.app.action(DENY)(self._on_click)

    async def _on_click(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self.ctx.spawn(self.decide(body))

    async def decide(self, body: dict[str, Any]) -> None:
        action = body["actions"][0]
        run_id, approve = str(action.get("value", "")), action.get("action_id") == APPROVE
        person = await self.ctx.people.person(body["user"]["id"])
        try:
            outcome = await spend.approve_spend(self.ctx.svc, run_id, person, approve)
        except Exception:  # an unknown run (a forged value), Redis away
            log.exception("deciding about spending for %s failed", run_id)
            await self.refuse(body, "I could not take this decision; try again in a minute.")
            return
        if isinstance(outcome, spend.AskEnded) and outcome.run is not None:
            # Its run ended undecided: the buttons go, the ask says so.
            await self._redraw(outcome.run, escape(outcome.reason), body)
            return
        if isinstance(outcome, Refused):
            await self.refuse(body, outcome.reason)
            return
        mention = f"<@{escape(body['user']['id'])}>"
        await self._redraw(outcome.run, decided_text(outcome.said.render(escape, mention)), body)

    async def _redraw(self, run: RunState, line: str, body: dict[str, Any]) -> None:
        """The ask redrawn with ``line`` (mrkdwn) instead of its buttons."""
        message = body["message"]
        place = ThreadPlace(body["channel"]["id"], message.get("thread_ts") or message["ts"])
        events = [e for _, e in await self.ctx.svc.store.read_events(run.id)]
        asked = [e for e in events if isinstance(e, SpendApprovalAsked)]
        if not asked:
            return
        shown = ask_message(spend_ask(asked[-1]), line)
        await self.ctx.redraws.redraw(run.id, place, message["ts"], shown, "spend ask")


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


async def home_lines(svc: Services) -> list[str]:
    """The App Home's lines: this month's Slack channels, with their budgets' use."""
    made = await spend.report(svc)
    budgets = {u.budget.place_key: u for u in made.budgets}
    lines = []
    for t in [t for t in made.by_channel if t.key.startswith("slack:")][:HOME_CHANNELS]:
        use = budgets.get(t.key)
        of = f" of {cost(use.budget.month_usd)} ({use.share:.0%})" if use else ""
        lines.append(f"• *{_channel(t.key, t.name)}*: {cost(t.cost_usd)}{of}")
    for key, use in budgets.items():
        if (
            key.startswith("slack:")
            and use.budget.scope == "channel"
            and not any(t.key == key for t in made.by_channel)
        ):
            shown = _channel(key, use.budget.place_name)
            lines.append(f"• *{shown}*: $0 of {cost(use.budget.month_usd)}")
    return lines[:HOME_CHANNELS]


def _channel(key: str, name: str) -> str:
    """A channel by its name, else as Slack's own channel link (Slack shows its name)."""
    channel = key.rsplit(":", 1)[-1]
    if name and name not in (key, channel):
        return escape(name)
    return f"<#{escape(channel)}>"
