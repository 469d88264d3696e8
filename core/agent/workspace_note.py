"""What an agent with file or code tools is told about the run's files on each call.

The note is added to the request only (after the thread, not saved in it): the list is
current at every call, and it never piles up in the agent's history.
"""

from __future__ import annotations

from core.services import Services
from core.types.chat import ChatMessage

# Tool categories whose users need to know the files.
FILE_CATEGORIES = frozenset({"files", "code"})
_SHOWN = 30


async def workspace_note(svc: Services, run_id: str, allowed: list[str]) -> ChatMessage | None:
    """A system message listing the run's files, or None if the agent has no file tool."""
    if not any(
        (t := svc.tools.get(name)) is not None and t.category in FILE_CATEGORIES for name in allowed
    ):
        return None
    files = await svc.workspace.files(run_id)
    text = svc.prompts.render(
        "bus/workspace.j2",
        files=[f.describe() for f in files[:_SHOWN]],
        more=max(0, len(files) - _SHOWN),
    )
    return ChatMessage(role="system", content=text)
