"""Starting runs and agents, and following a run's events until it ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from core.agents import created_event, new_agent_state
from core.errors import RunError
from core.runtime import Services
from core.scheduler.base import TurnJob
from core.types.agent import AgentSpec, AgentState
from core.types.cohort import Cohort
from core.types.events import RunEvent, RunFinished


def require_known_tools(svc: Services, spec: AgentSpec) -> None:
    """Refuse an agent that names tools the registry lacks, listing the ones it has."""
    unknown = svc.tools.unknown(spec.tools)
    if unknown:
        raise RunError(
            f"agent {spec.name} names unknown tools: {', '.join(unknown)} "
            f"(available: {', '.join(svc.tools.names())})"
        )


async def spawn_cohort(
    svc: Services, run_id: str, cohort: Cohort, task: str, requester: str
) -> list[AgentState]:
    """Create a designed cohort's whole tree (root first) and start every agent.

    Each agent gets its place in the tree (depth, children), its brief (the task for the
    root, its description from its parent for the others) and, for a team's lead, its
    team's playbook with the members already named.
    """
    by_id = {a.id: a for a in cohort.agents}
    children: dict[str, list[str]] = {a.id: [] for a in cohort.agents}
    for a in cohort.agents:
        if a.parent_id in children:
            children[a.parent_id].append(a.id)
        require_known_tools(svc, a)
    root = cohort.root
    order, depth = [root], {root.id: 0}
    for spec in order:  # breadth first: a parent exists before its children
        for child_id in children[spec.id]:
            depth[child_id] = depth[spec.id] + 1
            order.append(by_id[child_id])
    patterns = {t.lead_id: t for t in cohort.teams}
    states: list[AgentState] = []
    for spec in order:
        parent = by_id.get(spec.parent_id or "")
        playbook = ""
        if spec.id in patterns:
            team = [by_id[c] for c in children[spec.id]]
            playbook = svc.prompts.render(
                f"patterns/{patterns[spec.id].pattern}.md.j2",
                team_name=spec.name,
                members=[{"name": m.name, "id": m.id, "description": m.description} for m in team],
                brief=spec.description,
                max_rounds=svc.settings.agents.discussion_rounds,
            )
        state = new_agent_state(
            svc,
            run_id,
            spec,
            task=task,
            requester=requester,
            brief=task if parent is None else f"Your brief from {parent.name}:\n{spec.description}",
            depth=depth[spec.id],
            playbook=playbook,
        )
        state.children = list(children[spec.id])
        await svc.redis.sadd(svc.store.keys.agent_slots(run_id), spec.id)
        await svc.store.create_agent(
            state, [created_event(svc, state)], svc.bus.register_writes(run_id, spec)
        )
        states.append(state)
    for state in states:
        await svc.scheduler.submit(TurnJob(run_id=run_id, agent_id=state.spec.id, seq=0))
    return states


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
    from core.control import approve_run, propose_run

    run_id = await propose_run(svc, task, root, requested_by=requested_by)
    step = await approve_run(svc, run_id, approved_by or requested_by)
    if not step.ok:
        raise RunError(step.reason)
    return run_id


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
