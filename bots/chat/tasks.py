"""One task per agent on a run's status (``StatusLine.tasks``): its name, its state and
its last action, for platforms that show a run's progress as a list of tasks (Slack's
plan and task-update chunks). Folded by the relay from the run's events."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

TaskState = Literal["pending", "in_progress", "complete", "error"]


@dataclass(frozen=True)
class AgentTask:
    """Agent ``agent_id`` (``name``), ``state``, and ``last``: what it did last, in words."""

    agent_id: str
    name: str
    state: TaskState = "in_progress"
    last: str = ""


def with_task(
    tasks: tuple[AgentTask, ...], agent_id: str | None, **changes: str
) -> tuple[AgentTask, ...]:
    """``tasks`` with agent ``agent_id``'s task changed (added if it has none yet)."""
    key = agent_id or ""
    for i, task in enumerate(tasks):
        if task.agent_id == key:
            return (*tasks[:i], replace(task, **changes), *tasks[i + 1 :])  # type: ignore[arg-type]
    name = changes.pop("name", key or "the run")
    return (*tasks, replace(AgentTask(agent_id=key, name=name), **changes))  # type: ignore[arg-type]


def all_ended(tasks: tuple[AgentTask, ...], ok: bool) -> tuple[AgentTask, ...]:
    """The run ended: tasks still going end with it (complete if the run did)."""
    state: TaskState = "complete" if ok else "error"
    return tuple(t if t.state in ("complete", "error") else replace(t, state=state) for t in tasks)
