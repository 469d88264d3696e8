"""What a turn reads from and writes to the bus, gathered for its one save transaction.

Owns the turn's inbox (drained, acknowledged or dead-lettered with the save), the events
and writes its tools staged, and the follow-ups done after the save. May call the bus,
the store and ``core.state`` (never the Redis client), ``core.agent.questions``/``wake``
and ``core.effects`` (intents, timers)."""

from __future__ import annotations

from core.agent import questions, responses
from core.agent.context import ToolContext
from core.agent.create import created_event
from core.agent.lease import LEASE_S
from core.agent.wake import submit_jobs, wake_agent
from core.effects import intents, timers
from core.services import Services
from core.state import agents, approvals
from core.state.bus import Delivered, Outgoing, delivered
from core.state.routing import Route
from core.state.store import AfterSave, PipelineWrite
from core.state.turn_start import StartReply
from core.types.agent import AgentSpec, AgentState, AgentStatus
from core.types.approvals import ApprovalRequest
from core.types.chat import ChatMessage, Usage
from core.types.events import ErrorRaised, MessageSent, RunEvent
from core.types.messages import HumanReply, Message, ResultMessage

_EVENT_TEXT_CHARS = 500


def clip(text: str | None, limit: int = _EVENT_TEXT_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + "…"


# A sender's name and role by its spec's JSON (a spec never changes: parsed once).
_SENDERS: dict[str, tuple[str, str]] = {}
_SENDERS_MAX = 256


def _name_and_role(raw: str) -> tuple[str, str]:
    found = _SENDERS.get(raw)
    if found is None:
        spec = AgentSpec.model_validate_json(raw)
        if len(_SENDERS) >= _SENDERS_MAX:
            _SENDERS.clear()
        found = _SENDERS[raw] = (spec.name, spec.role)
    return found


class TurnIO:
    def __init__(self, svc: Services, state: AgentState) -> None:
        self.svc = svc
        self.state = state
        self.ctx = ToolContext(services=svc, state=state)
        self.delivered: list[Delivered] = []
        self.dead: list[Delivered] = []
        # The sequence number of this turn (state.seq moves on before the save).
        self.seq = state.seq
        # A question this turn asked a person (ask_user), saved with the turn.
        self.question: questions.OpenQuestion | None = None
        # A tool call of this turn waiting for a person's approval (core.agent.approvals),
        # and the events of a decided one whose outcome this turn placed.
        self.approval: ApprovalRequest | None = None
        self.settled: list[RunEvent] = []

    @property
    def run_id(self) -> str:
        return self.state.run_id

    async def take_mail(self, mail: StartReply) -> int:
        """Append the agent's messages the turn's start script read (its pending ones, then
        new ones unless an earlier delivery saved the model's answer) to its thread; return
        how many arrived (its own posts on its team's topic aside)."""
        self.delivered = delivered(mail.pending) + delivered(mail.fresh)
        names: dict[str, tuple[str, str]] = {}
        for sender, row in mail.senders.items():
            names[sender] = (sender, "unknown") if row is None else _name_and_role(row[0])
        for d in self.delivered:
            message = d.message
            if message.sender == self.state.spec.id:
                continue  # its own post on the team topic
            if isinstance(message, ResultMessage):
                self.state.team_usage = self.state.team_usage + Usage(
                    completion_tokens=message.tokens, cost_usd=message.cost_usd
                )
            if message.sender not in names:  # not looked up by the start script
                found = await self.svc.store.load_spec(self.run_id, message.sender)
                names[message.sender] = (
                    (found[0].name, found[0].role) if found else (message.sender, "unknown")
                )
            self.state.thread.append(
                ChatMessage(role="user", content=self._render(message, *names[message.sender]))
            )
        return sum(d.message.sender != self.state.spec.id for d in self.delivered)

    def _render(self, message: Message, sender_name: str, sender_role: str) -> str:
        audience = (
            "your team"
            if message.recipient.startswith("team:")
            else "everyone"
            if message.recipient.startswith("all:")
            else "you"
        )
        return self.svc.prompts.render(
            "bus/incoming.j2",
            kind=message.kind,
            sender_name=sender_name,
            sender_role=sender_role,
            body=message.body,
            audience=audience,
            ok=message.ok if isinstance(message, ResultMessage) else True,
            author=message.author if isinstance(message, HumanReply) else "",
        )

    async def close_question(self, qid: str) -> int:
        """Forget an answered question; close one past its deadline with a note. Returns 1
        when that note was added to the thread (it counts as something that arrived)."""
        svc, state = self.svc, self.state
        expired = await questions.expire_if_due(svc, state.run_id, qid)
        if expired is not None:
            state.open_question = None
            note = svc.prompts.render(
                "feedback/question_timeout.j2",
                question=expired.question,
                timeout_s=expired.deadline - expired.asked_at,
            )
            state.thread.append(ChatMessage(role="user", content=note))
            return 1
        if await questions.get(svc, state.run_id, qid) is None:
            state.open_question = None  # answered: the reply came with the drain
        return 0

    def quarantine(self, mail: StartReply) -> None:
        """The turn is given up: the messages it kept reading (its pending ones) go to the
        dead-letter stream with it (saved and acknowledged in its save), never read again."""
        self.dead = delivered(mail.pending)

    def send_result_to_parent(self, ok: bool, body: str) -> None:
        spec = self.state.spec
        if not spec.parent_id:
            return
        spent = self.state.usage + self.state.team_usage
        message = ResultMessage(
            run_id=self.run_id,
            sender=spec.id,
            recipient=spec.parent_id,
            body=body,
            ok=ok,
            tokens=spent.total_tokens,
            cost_usd=spent.cost_usd,
        )
        stream = self.svc.store.keys.inbox(self.run_id, spec.parent_id)
        self.ctx.outbox.append(Outgoing(stream, message, (spec.parent_id,)))
        _ = Route  # routing rules always allow a child to reach its parent

    def events(self) -> list[RunEvent]:
        events: list[RunEvent] = list(self.settled)
        for child in self.ctx.spawned:
            events.append(created_event(self.svc, child))
        for out in self.ctx.outbox:
            events.append(
                MessageSent(
                    run_id=self.run_id,
                    agent_id=self.state.spec.id,
                    message_id=out.message.id,
                    recipient=out.message.recipient,
                    preview=clip(out.message.body, 200) or "",
                )
            )
        for d in self.dead:
            events.append(
                ErrorRaised(
                    run_id=self.run_id,
                    agent_id=self.state.spec.id,
                    message=f"message {d.message.id} from {d.message.sender} was not "
                    f"processed: the turn reading it was quarantined after "
                    f"{self.svc.settings.limits.max_deliveries} deliveries; it was moved to "
                    "the dead-letter stream",
                    hint="see the worker logs for the crash; the message is kept in "
                    f"{self.svc.store.keys.dead_letters(self.run_id)}",
                )
            )
        return events

    def writes(self) -> list[PipelineWrite]:
        svc, spec = self.svc, self.state.spec
        writes = svc.bus.send_writes(self.ctx.outbox)
        for child in self.ctx.spawned:
            writes.append(svc.store.agent_create_write(child))
            writes += svc.bus.register_writes(self.run_id, child.spec)
        writes += svc.bus.ack_writes(spec, self.run_id, self.delivered, self.dead)
        writes.append(responses.forget_write(svc, self.run_id, spec.id, self.seq))
        writes.append(svc.bus.release_wake_write(self.run_id, spec.id))
        if self.ctx.intents:
            keyed = intents.keyed(self.ctx.intents, self.run_id, spec.id, self.seq)
            writes.append(intents.save_write(svc, keyed))
        if self.question is not None:
            writes.append(questions.ask_write(svc, self.question))
        if self.approval is not None and self.state.open_approval == self.approval.id:
            writes.append(approvals.ask_write(svc.store, self.approval))
        return writes

    def after_save(self, lease: tuple[str, str] | None) -> AfterSave:
        """What the save script does once the turn is applied: claim the wake-ups of the
        agents its messages went to (and its own, when it waits and mail came meanwhile),
        record the turns to schedule with the save, release the lease."""
        spec, state = self.state.spec, self.state
        recipients = tuple(dict.fromkeys(r for out in self.ctx.outbox for r in out.recipients))
        running = state.status is AgentStatus.RUNNING
        streams = self.svc.bus.streams_of(self.run_id, spec) if state.status.waiting else []
        return AfterSave(
            lease=lease,
            jobs=tuple(f"{c.spec.id}:0" for c in self.ctx.spawned),
            wake=recipients,
            next_job=f"{spec.id}:{state.seq}" if running else "",
            unread=tuple(streams),
            waits_for=tuple(self.ctx.wait_for) if state.status is AgentStatus.WAITING else (),
            wake_ttl_s=self.svc.settings.bus.wake_ttl_s,
            # (the start of the turn it schedules, should the save start it:
            # ``core.state.turn_ahead``)
            ahead=(int(LEASE_S * 1000), self.svc.settings.bus.drain_max),
        )

    async def after_commit(self, jobs: list[tuple[str, int]]) -> None:
        """Process the turn's intents, then schedule what the save asked for (new agents'
        first turns, the wake-ups it claimed, its next turn); the follow-ups' record is then
        cleared by this process's next script."""
        svc, run_id = self.svc, self.run_id
        if self.ctx.intents:
            # Before the next turn: a post made in this turn reaches the chat before
            # anything the agent does next (its result included).
            await intents.process_pending(svc)
        if jobs:
            await submit_jobs(svc, run_id, jobs)
            svc.store.turns.done(run_id, self.state.spec.id, self.seq)
        asked = self.approval
        if asked is not None and self.state.open_approval == asked.id:
            timer = timers.WakeAgent(id=asked.id, run_id=run_id, agent_id=asked.agent_id)
            await timers.schedule(svc, timer, asked.deadline)
        if self.state.open_question and self.state.status.waiting:
            # (Re-)arm the time-out; the timer's id is the question's, so this is idempotent.
            q = self.question or await questions.get(svc, run_id, self.state.open_question)
            if q is not None:
                timer = timers.WakeAgent(id=q.id, run_id=run_id, agent_id=q.agent_id)
                await timers.schedule(svc, timer, q.deadline)

    async def wake(self, agent_id: str) -> None:
        await wake_agent(self.svc, self.run_id, agent_id)

    async def spurious_wake(self) -> None:
        """Woken with nothing to read: release the claim (what it read was only its own
        posts: acknowledged with it), re-check (a message may have arrived between the
        drain and the release)."""
        me = self.state.spec.id
        own = [(d.stream, d.entry_id) for d in self.delivered if d.message.sender == me]
        await agents.release_wake(self.svc.store, self.run_id, me, own)
        if await self.svc.bus.has_unread(self.run_id, self.state.spec):
            await self.wake(self.state.spec.id)
