"""Starting runs and agents, and following a run's events until it ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from core.errors import RunError
from core.lifecycle import limits_for
from core.runtime import Services
from core.scheduler.base import TurnJob
from core.store import transition
from core.types._base import new_id
from core.types.agent import AgentSpec, AgentState, AgentStatus
from core.types.chat import ChatMessage
from core.types.events import AgentCreated, RunEvent, RunFinished, RunStarted
from core.types.run import RunState, RunStatus


def system_prompt(svc: Services, spec: AgentSpec, task: str, requester: str) -> str:
    """The agent's system prompt from its role's template (config: [prompts.roles])."""
    state = AgentState(spec=spec, run_id="")
    limits = limits_for(svc.settings, state)
    role_titles = {
        "orchestrator": "the orchestrator",
        "lead": "a team lead",
        "member": "a team member",
        "judge": "the judge",
        "ui": "the chat assistant",
        "solo": "an assistant",
    }
    body = svc.prompts.render(
        svc.settings.prompts.template_for(spec.role),
        agent={
            "name": spec.name,
            "role": spec.role,
            "description": spec.description,
            "role_title": role_titles.get(spec.role, f"a {spec.role}"),
        },
        task=task,
        requester=requester,
        tool_docs=[
            {"name": t.name, "description": t.description} for t in svc.tools.subset(spec.tools)
        ],
        limits={"turns": limits.max_turns, "tokens": limits.max_tokens},
    )
    return f"{body}\n\n{spec.system_prompt}".strip() if spec.system_prompt else body


async def spawn_agent(
    svc: Services, run_id: str, spec: AgentSpec, task: str, requester: str
) -> AgentState:
    """Create an agent (state saved, event emitted) and schedule its first turn."""
    unknown = svc.tools.unknown(spec.tools)
    if unknown:
        raise RunError(
            f"agent {spec.name} names unknown tools: {', '.join(unknown)} "
            f"(available: {', '.join(svc.tools.names())})"
        )
    state = AgentState(
        spec=spec,
        run_id=run_id,
        status=AgentStatus.READY,
        thread=[
            ChatMessage(role="system", content=system_prompt(svc, spec, task, requester)),
            ChatMessage(role="user", content=task),
        ],
    )
    model = spec.model or svc.settings.llm.model_for(spec.role)
    await svc.store.create_agent(
        state,
        [
            AgentCreated(
                run_id=run_id,
                agent_id=spec.id,
                name=spec.name,
                role=spec.role,
                parent_id=spec.parent_id,
                model=model,
                tools=spec.tools,
            )
        ],
    )
    await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=spec.id, seq=0))
    return state


async def start_run(
    svc: Services,
    task: str,
    root: AgentSpec,
    *,
    requested_by: str = "console",
    approved_by: str | None = None,
) -> str:
    """Create a run for ``task`` with ``root`` as its top agent and start it.

    Without a planner in front, the requester's own request counts as the approval.
    """
    run = RunState(id=new_id("run"), task=task, requested_by=requested_by, root_agent_id=root.id)
    await svc.store.create_run(run)
    approver = approved_by or requested_by
    step = await svc.store.transition_run(run.id, RunStatus.APPROVED, by=approver)
    if not step.ok:
        raise RunError(step.reason)

    def begin(r: RunState) -> tuple[RunState | None, list[RunEvent]]:
        result = transition(r, RunStatus.RUNNING, by=approver)
        if not result.ok:
            return None, []
        result.run.started_at = time.time()
        result.run.deadline_at = result.run.started_at + svc.settings.limits.wall_clock_s
        return result.run, [RunStarted(run_id=r.id, task=task)]

    if await svc.store.update_run(run.id, begin) is None:
        raise RunError(f"run {run.id} could not be started")
    await spawn_agent(svc, run.id, root, task, requested_by)
    return run.id


async def follow_events(
    svc: Services, run_id: str, *, poll_s: float = 0.05, timeout_s: float | None = None
) -> AsyncIterator[RunEvent]:
    """Yield the run's events in order until its ``run_finished`` event (or timeout)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last = "0-0"
    # fakeredis answers blocking reads at once; poll with a short sleep instead.
    block = None if svc.settings.redis.embedded else 1000
    while True:
        batch = await svc.store.read_events(run_id, after=last, block_ms=block)
        for entry_id, event in batch:
            last = entry_id
            yield event
            if isinstance(event, RunFinished):
                return
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} did not finish within {timeout_s} s")
        if not batch and block is None:
            await asyncio.sleep(poll_s)
