"""A stand-in for the shared chat layer's relays (``bots.chat.relays``), used until they
take an :class:`~bots.chat.ports.Adapter`: one task per run in this process, folding the
run's events into the chat layer's intentions and showing them with the Discord renderer
and transport at once (no outbox, no leases, no resume after a restart). Same calls as
``bots.chat.relays.Relays``: ``follow``, ``start``, ``wait``, ``aclose``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from bots.chat.ports import (
    Adapter,
    Artifacts,
    Card,
    ChatPost,
    Intention,
    Milestone,
    Note,
    Notify,
    OutFile,
    Place,
    Question,
    Result,
    StatusLine,
    TextFile,
)
from core.runs.approval import view
from core.services import Services
from core.state.event_hub import EventHub
from core.types.events import (
    AgentCreated,
    AgentFinished,
    ChatPosted,
    ErrorRaised,
    Notified,
    QuestionAsked,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatusChanged,
    ToolCalled,
)
from core.types.run import RunStatus

log = logging.getLogger(__name__)


class _Run:
    """One run shown in ``place``: its status message and what it counts."""

    def __init__(self, svc: Services, adapter: Adapter, run_id: str, place: Place) -> None:
        self.svc, self.adapter, self.run_id, self.place = svc, adapter, run_id, place
        self.names: dict[str, str] = {}
        self.status = StatusLine(run_id=run_id, phase="starting", running=True)
        self.status_id: str | None = None
        self.shown: StatusLine | None = None
        self.last_edit = 0.0

    async def show(self, intention: Intention) -> None:
        for rendered in self.adapter.renderer.render(intention):
            await self.adapter.transport.post(self.place, rendered.text, rendered.payload)

    async def show_status(self, *, force: bool = False) -> None:
        if self.status_id is None or self.status == self.shown:
            return
        interval = self.adapter.limits.status_interval_s
        if not force and time.monotonic() - self.last_edit < interval:
            return
        (rendered,) = self.adapter.renderer.render(self.status)
        self.shown, self.last_edit = self.status, time.monotonic()
        await self.adapter.transport.update(
            self.place, self.status_id, rendered.text, rendered.payload
        )

    def _who(self, agent_id: str | None) -> str:
        return self.names.get(agent_id or "", agent_id or "the run")

    def _running(self, who: str, doing: str, tool: str = "") -> None:
        self.status = StatusLine(
            run_id=self.run_id,
            phase="running",
            agents=self.status.agents,
            finished=self.status.finished,
            tool_calls=self.status.tool_calls,
            who=who,
            doing=doing,
            tool=tool,
            running=True,
        )

    async def on_event(self, event: RunEvent) -> bool:
        """Show ``event``; False once the run ended."""
        s = self.status
        match event:
            case RunStarted():
                (rendered,) = self.adapter.renderer.render(s)
                self.status_id = await self.adapter.transport.post(
                    self.place, rendered.text, rendered.payload
                )
                self.shown, self.last_edit = s, time.monotonic()
            case RunStatusChanged(status=RunStatus.PROPOSED):
                run = await self.svc.store.get_run(self.run_id)
                await self.show(Card(view=view(self.svc.settings, run, self.svc.tools)))
            case AgentCreated():
                self.names[event.agent_id or ""] = event.name
                self.status = s.__class__(**{**s.__dict__, "agents": s.agents + 1})
                self._running(event.name, "joined")
            case ToolCalled():
                self.status = s.__class__(**{**s.__dict__, "tool_calls": s.tool_calls + 1})
                self._running(self._who(event.agent_id), "used", event.tool)
            case AgentFinished():
                self.status = s.__class__(**{**s.__dict__, "finished": s.finished + 1})
                self._running(self._who(event.agent_id), event.reason.value)
                if event.result and self.status.agents > 1:
                    name = self._who(event.agent_id)
                    await self.show(Milestone(name, event.reason.value, event.result))
            case ErrorRaised():
                await self.show(Note(event.message, "warning"))
            case QuestionAsked():
                await self.show(Question(self._who(event.agent_id), event.question))
            case ChatPosted():
                await self.show(ChatPost(self._who(event.agent_id), event.text))
            case Notified():
                await self.show(Notify(self._who(event.agent_id), event.who, event.text))
            case RunFinished(status=RunStatus.REJECTED):
                return False
            case RunFinished():
                await self.finish(event)
                return False
            case _:
                pass
        await self.show_status()
        return True

    async def finish(self, event: RunFinished) -> None:
        s = self.status
        self.status = StatusLine(
            run_id=self.run_id,
            phase="ended",
            agents=s.agents,
            finished=s.finished,
            tool_calls=s.tool_calls,
            outcome=event.status.value,
            tokens=event.tokens,
            cost_usd=event.cost_usd,
        )
        await self.show_status(force=True)
        if event.status is not RunStatus.CANCELLED:
            await self.outputs()
        ok = event.status is RunStatus.COMPLETED
        text = (event.result if ok else event.error) or ""
        rateable = event.status in (RunStatus.COMPLETED, RunStatus.FAILED)
        file = None
        if ok and len(text) > self.adapter.limits.result_file_chars:
            file = f"result-{self.run_id}.md"
            await self.adapter.transport.upload(
                self.place, TextFile(content=text, filename=file, title="Result")
            )
        await self.show(
            Result(self.run_id, event.status, text, event.tokens, event.cost_usd, rateable, file)
        )

    async def outputs(self) -> None:
        limits = self.adapter.limits
        files = sorted(await self.svc.workspace.files(self.run_id), key=lambda f: f.path)
        sent: list[OutFile] = []
        total = 0
        for f in files:
            if not f.path.startswith("outputs/"):
                continue
            if len(sent) < limits.outputs_max_files and total + f.size <= limits.outputs_max_bytes:
                name = f.path.removeprefix("outputs/")
                sent.append(
                    OutFile(path=f.path, filename=name.replace("/", "-"), title=name, size=f.size)
                )
                total += f.size
        if sent:
            from bots.chat.ports import Files

            (comment,) = self.adapter.renderer.render(Artifacts(self.run_id, tuple(sent)))
            files_msg = Files(self.run_id, f"{self.run_id}:outputs", tuple(sent), comment.text)
            await self.adapter.transport.send_files(self.place, files_msg)
            await self.adapter.transport.forget_files(files_msg)


class InterimRelays:
    def __init__(self, svc: Services, adapter: Adapter) -> None:
        self.svc, self.adapter = svc, adapter
        self.hub = EventHub(svc.store, blocking=not svc.settings.redis.embedded)
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def __len__(self) -> int:
        return len(self.tasks)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self.tasks

    async def start(self) -> int:
        return 0

    async def follow(self, run_id: str, place: Place) -> None:
        shown = _Run(self.svc, self.adapter, run_id, place)

        async def relay() -> None:
            try:
                async for _, event in self.hub.follow(run_id):
                    try:
                        going = await shown.on_event(event)
                    except Exception:
                        log.exception("showing an event of %s failed", run_id)
                        going = True
                    if not going:
                        break
            finally:
                self.tasks.pop(run_id, None)

        self.tasks[run_id] = asyncio.create_task(relay(), name=f"discord-relay-{run_id}")

    async def wait(self, timeout_s: float | None = None) -> None:
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=timeout_s)

    async def aclose(self) -> None:
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await self.hub.aclose()
