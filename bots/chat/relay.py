"""A run's progress in its thread, on any chat platform: the proposal card once planning
produced a cohort, one status message updated in place (at most about once per the
platform's ``status_interval_s``), milestone replies, the final result.

Each text is shown once, and the run's result (with its files) is the last post: what an
agent does after the run ended (a member whose turn was under way when the top agent
finished) is not shown. The run's result is its top agent's, and a lead's result sums
up its team's, so an agent that has agents under it gets no milestone when it finishes
(its text comes up in its parent's, or as the result); milestones are the results of
the agents that did the work, and one with the same text as an earlier one is not
posted again.

The relay folds the run's events into intentions (``bots.chat.ports``) and has the
platform's renderer turn them into messages. It never calls the platform: what it posts
goes into the run's outbox in Redis (``bots.chat.outbox``), in the transaction that saves
how far it got (``bots.chat.follow``), and the run's courier (``bots.chat.courier``)
delivers it. Reading the run's events never waits for the platform, and nothing is lost
while it is unreachable.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

from bots.chat.approvals import follow_approval
from bots.chat.forms import follow_form
from bots.chat.links import run_link
from bots.chat.outbox import Entry
from bots.chat.outputs import plain_filename, queue_outputs
from bots.chat.pause import follow_pause
from bots.chat.ports import (
    Card,
    ChatPost,
    Intention,
    Limits,
    Milestone,
    Note,
    Notify,
    Place,
    Question,
    Rendered,
    Renderer,
    StatusLine,
    TextFile,
)
from bots.chat.result_post import result_entries
from bots.chat.spend_asks import follow_spend, warn_at_end
from bots.chat.tasks import all_ended, with_task
from core.runs.approval import view
from core.services import Services
from core.types.agent import EndReason
from core.types.events import (
    AgentCreated,
    AgentFinished,
    BudgetReached,
    ChatPosted,
    ErrorRaised,
    FormAsked,
    FormClosed,
    Notified,
    QuestionAsked,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatusChanged,
    ToolCalled,
    ToolProgress,
)
from core.types.run import RunStatus

log = logging.getLogger(__name__)
NO_CARD = "I could not post the proposal here; ask me again."


class ThreadRelay:
    """Folds one run's events into what to post into ``place``: entries for its outbox
    and the status message's content (taken with :meth:`take`), rendered by ``renderer``
    within ``limits``; with ``svc`` (where the run is read from), its proposal card and
    output files too."""

    def __init__(
        self,
        place: Place,
        run_id: str,
        renderer: Renderer,
        limits: Limits,
        *,
        svc: Services | None = None,
        streams: bool = False,
    ) -> None:
        self.place, self.run_id, self.svc = place, run_id, svc
        # The platform streams messages (bots.chat.streams): a completed result is streamed.
        self.streams = streams
        self.renderer, self.limits = renderer, limits
        # The status message appears when the run starts (not while it is a proposal).
        self.started = False
        # Replaying events an earlier bot process relayed: fold them in, post nothing.
        self.quiet = False
        self.running = True
        self.names: dict[str, str] = {}
        # Agents with agents under them, and the milestone texts posted (once each).
        self.leads: set[str] = set()
        self.said: set[str] = set()
        # The run's inspector page, made once: its token is the same on every edit.
        self.link = (run_link(svc.settings, run_id) if svc is not None else None) or ""
        self.line = StatusLine(run_id=run_id, phase="starting", link=self.link)
        self.shown: StatusLine | None = None
        self.last_update = 0.0
        # Queued since the last take(): posts, and the status message's new content.
        self.out: list[Entry] = []
        self.new_status: Rendered | None = None

    def take(self) -> tuple[list[Entry], Rendered | None]:
        """What to add to the outbox, and forget it here."""
        out, status = self.out, self.new_status
        self.out, self.new_status = [], None
        return out, status

    def entries(self, what: str, intention: Intention) -> list[Entry]:
        """``intention`` as posts (one per message the renderer made of it)."""
        return [Entry.post(self.run_id, what, m) for m in self.renderer.render(intention)]

    def reply(self, what: str, intention: Intention) -> None:
        if not self.quiet:
            self.out.extend(self.entries(what, intention))

    def show_status(self, *, force: bool = False, interval_s: float | None = None) -> None:
        """Queue the status message's new content, unless it is unchanged or (without
        ``force``) shown less than ``interval_s`` ago (the platform's by default)."""
        interval_s = self.limits.status_interval_s if interval_s is None else interval_s
        line = replace(self.line, running=self.running and bool(self.run_id))
        if line == self.shown or not self.started or self.quiet:
            return
        if not force and time.monotonic() - self.last_update < interval_s:
            return
        self.shown, self.last_update = line, time.monotonic()
        (self.new_status,) = self.renderer.render(line)

    def _status(self, **changes: Any) -> None:
        self.line = replace(self.line, **changes)

    def _task(self, agent_id: str | None, **changes: str) -> None:
        self.line = replace(self.line, tasks=with_task(self.line.tasks, agent_id, **changes))

    def _who(self, agent_id: str | None) -> str:
        return self.names.get(agent_id or "", agent_id or "the run")

    async def on_event(self, event: RunEvent) -> None:
        """Fold one event into the status line; queue it if it is a milestone. After the
        run's end, what its agents do is not: the result is the thread's last word (an
        agent whose turn was under way when the top agent finished ends after the run,
        and its "finished" line would come below the result)."""
        if not self.running and not isinstance(event, RunFinished):
            return
        line = self.line
        match event:
            case RunStarted():
                self.started = True
                if not self.quiet:  # posted first: milestones come below it
                    self.out.append(Entry(run=self.run_id, what="status message", kind="status"))
                self.show_status(force=True)
            case RunStatusChanged(status=RunStatus.PROPOSED):
                await self.post_card()
            case AgentCreated():
                self.names[event.agent_id or ""] = event.name
                if event.parent_id:
                    self.leads.add(event.parent_id)
                self._status(phase="running", agents=line.agents + 1, who=event.name)
                self._status(doing="joined", tool="")
                self._task(event.agent_id, name=event.name, last="joined")
            case ToolCalled():
                self._status(phase="running", tool_calls=line.tool_calls + 1)
                self._status(who=self._who(event.agent_id), doing="used", tool=event.tool)
                self._task(event.agent_id, last=f"used {event.tool}")
            case ToolProgress():
                count = f"{event.progress:g}" + (f"/{event.total:g}" if event.total else "")
                shown = count if event.progress or event.total else ""
                about = " · ".join(x for x in (shown, event.message) if x)
                self._status(who=self._who(event.agent_id), doing="is using")
                self._status(tool=f"{event.tool} ({about})" if about else event.tool)
                self._task(event.agent_id, last=f"is using {self.line.tool}")
                self.show_status()
            case AgentFinished():
                who, reason = self._who(event.agent_id), event.reason.value
                self._status(phase="running", finished=line.finished + 1)
                self._status(who=who, doing=reason, tool="")
                state = "complete" if event.reason is EndReason.FINISHED else "error"
                self._task(event.agent_id, state=state, last=reason.replace("_", " "))
                if self.is_milestone(event, line.agents):
                    assert event.result is not None
                    self.said.add(event.result.strip())
                    self.reply("milestone", Milestone(who, reason, event.result))
            case ErrorRaised():
                self.reply("error", Note(event.message, "warning"))
            case QuestionAsked():
                self.reply("question", Question(self._who(event.agent_id), event.question))
            case FormAsked() | FormClosed():
                follow_form(self, event)
            case ChatPosted():
                self.post_chat(ChatPost(self._who(event.agent_id), event.text, event.filename))
            case Notified():
                notify = Notify(self._who(event.agent_id), event.who, event.text)
                self.reply("notification", notify)
            case RunFinished(status=RunStatus.REJECTED):
                self.running = False  # the card says who rejected it
            case RunFinished():
                self.running = False
                self._status(phase="ended", outcome=event.status.value, tokens=event.tokens)
                self._status(cost_usd=event.cost_usd)
                ok = event.status is RunStatus.COMPLETED
                self.line = replace(self.line, tasks=all_ended(self.line.tasks, ok))
                await self.post_outputs(event)
                await warn_at_end(self)
                self.post_result(event)
            case BudgetReached() | RunStatusChanged(status=RunStatus.RUNNING):
                await follow_pause(self, event)
            case _:  # a tool call or a request over budget waiting, or nothing shown
                await follow_approval(self, event)
                follow_spend(self, event)

    def is_milestone(self, event: AgentFinished, agents: int) -> bool:
        """Whether an agent's end is worth a reply of its own: in a run of several
        agents, one that did work of its own (an agent with agents under it that
        finished sums their work up: its text comes again above it, or as the run's
        result), with a text not posted yet."""
        if not (event.agent_id and event.result and event.result.strip() and agents > 1):
            return False
        if event.agent_id in self.leads and event.reason is EndReason.FINISHED:
            return False
        return event.result.strip() not in self.said

    def post_chat(self, post: ChatPost) -> None:
        """An agent's post; with a file name, the text as that file (if the file cannot
        be sent, the text is posted, named)."""
        if post.filename is None or self.quiet:
            self.reply("chat post", post)
            return
        name, r = plain_filename(post.filename), self.renderer
        comment = f"{r.bold(post.agent)} posted {r.escape(name)}"
        file = TextFile(content=post.text, filename=name, title=name, comment=comment)
        instead = tuple(self.entries("chat post", post))
        self.out.append(
            Entry(run=self.run_id, what="chat post file", kind="upload", file=file, instead=instead)
        )

    async def post_card(self) -> None:
        """The proposal card (planning produced a cohort), from the run as stored; if it
        cannot be posted, the thread says so."""
        if self.svc is None or self.quiet:
            return
        sorry = self.entries("note that the proposal failed", Note(NO_CARD, "error"))
        try:
            card = view(
                self.svc.settings, await self.svc.store.get_run(self.run_id), self.svc.tools
            )
            (message,) = self.renderer.render(Card(card, link=self.link))
        except Exception:
            log.exception("building the proposal of %s failed", self.run_id)
            self.out.extend(sorry)
            return
        entry = Entry.post(self.run_id, "proposal card", message)
        self.out.append(entry.model_copy(update={"instead": tuple(sorry)}))

    async def post_outputs(self, event: RunFinished) -> None:
        """The files the agents left under outputs/, uploaded above the result."""
        if self.svc is not None and not self.quiet and event.status is not RunStatus.CANCELLED:
            self.out.extend(await queue_outputs(self.svc, self.run_id, self.limits, self.renderer))

    def post_result(self, event: RunFinished) -> None:
        """The result (or why the run failed) in the thread (``bots.chat.result_post``)."""
        if not self.quiet:
            self.out.extend(
                result_entries(self.run_id, event, self.limits, self.renderer, self.streams)
            )
