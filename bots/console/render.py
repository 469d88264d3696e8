"""Rich rendering of run events for the terminal."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from bots.console.text import escape, printable
from core.types.events import (
    AgentCreated,
    AgentFinished,
    BudgetReached,
    ChatPosted,
    ErrorRaised,
    LLMCalled,
    MessageSent,
    Notified,
    QuestionAsked,
    QuestionClosed,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatusChanged,
    ToolCalled,
    TurnStarted,
)
from core.types.run import RunStatus

if TYPE_CHECKING:
    from core.services import Services
    from core.workspace.base import Workspace

OUTPUTS = "outputs/"


class EventPrinter:
    """Prints each event as one line; the final result as a panel, and under it the files
    the agents left under outputs/ (with ``workspace``; where they are on disk with
    ``folder``, the local workspace's root)."""

    def __init__(
        self,
        console: Console,
        *,
        verbose: bool = False,
        workspace: Workspace | None = None,
        folder: Path | None = None,
    ) -> None:
        self.console = console
        self.verbose = verbose
        self.workspace = workspace
        self.folder = folder
        self.names: dict[str, str] = {}
        self.tools_called = 0

    def show_outputs(self, svc: Services) -> None:
        """List each run's output files from ``svc``'s workspace (with their place on
        disk when it is a local folder, as in embedded mode)."""
        from core.workspace.local_store import LocalWorkspace

        self.workspace = svc.workspace
        local = isinstance(svc.workspace, LocalWorkspace)
        self.folder = svc.settings.workspace_dir if local else None

    def _who(self, agent_id: str | None) -> str:
        return self.names.get(agent_id or "", agent_id or "run")

    def __call__(self, event: RunEvent) -> Awaitable[None] | None:
        c = self.console
        match event:
            case RunStarted():
                c.print(f"[bold]▶ run {event.run_id}[/] — {escape(event.task)}")
            case AgentCreated():
                self.names[event.agent_id or ""] = event.name
                c.print(
                    f"  [cyan]+ {escape(event.name)}[/] ({escape(event.role)}, "
                    f"{escape(event.model)}) tools: {escape(', '.join(event.tools)) or 'none'}"
                )
            case TurnStarted():
                if self.verbose:
                    c.print(f"  [dim]{escape(self._who(event.agent_id))} turn {event.seq}[/]")
            case LLMCalled():
                if event.text:
                    c.print(
                        f"  [magenta]{escape(self._who(event.agent_id))}:[/] {escape(event.text)}"
                    )
                if self.verbose:
                    c.print(
                        f"  [dim]{event.prompt_tokens}+{event.completion_tokens} tokens, "
                        f"${event.cost_usd:.4f}[/]"
                    )
            case ToolCalled():
                self.tools_called += 1
                mark = "[green]✓[/]" if event.ok else "[red]✗[/]"
                c.print(
                    f"  {mark} [dim]{escape(self._who(event.agent_id))}[/] "
                    f"[yellow]{escape(event.tool)}[/]({escape(event.arguments)}) → "
                    f"{escape(event.result.splitlines()[0] if event.result else '')}"
                )
            case MessageSent():
                c.print(
                    f"  ✉ {escape(self._who(event.agent_id))} → "
                    f"{escape(self.names.get(event.recipient, event.recipient))}: "
                    f"{escape(event.preview)}"
                )
            case AgentFinished():
                style = "green" if event.reason.value == "finished" else "red"
                c.print(
                    f"  [{style}]■ {escape(self._who(event.agent_id))} "
                    f"{event.reason.value}[/] {escape(event.detail)} "
                    f"[dim]({event.tokens} tokens, ${event.cost_usd:.4f})[/]"
                )
            case ErrorRaised():
                c.print(
                    f"  [bold red]! {escape(event.message)}[/]"
                    + (f"\n    [dim]→ {escape(event.hint)}[/]" if event.hint else "")
                )
            case RunFinished():
                ok = event.status is RunStatus.COMPLETED
                body = (
                    Markdown(printable(event.result))
                    if event.result
                    else Text(printable(event.error or ""))
                )
                c.print(
                    Panel(
                        body,
                        title=f"{event.status.value} · {event.tokens} tokens · "
                        f"${event.cost_usd:.4f}",
                        border_style="green" if ok else "red",
                    )
                )
                if self.workspace is not None:
                    return self.print_outputs(event.run_id)
            case ChatPosted():
                c.print(
                    Panel(
                        Markdown(printable(event.text)),
                        title=f"{escape(self._who(event.agent_id))} posted"
                        + (f" · {escape(event.filename)}" if event.filename else ""),
                        border_style="blue",
                    )
                )
            case Notified():
                c.print(
                    f"  🔔 {escape(self._who(event.agent_id))} → {escape(event.who)}: "
                    f"{escape(event.text)}"
                )
            case QuestionAsked():
                c.print(
                    f"  [bold yellow]? {escape(self._who(event.agent_id))} asks:[/] "
                    f"{escape(event.question)}"
                )
            case QuestionClosed():
                how = (
                    "no answer in time"
                    if event.timed_out
                    else f"answered by {escape(event.by or '?')}"
                )
                c.print(f"  [yellow]✓ question {how}[/]")
            case BudgetReached():
                c.print(
                    f"  [bold yellow]⏸ paused: {escape(event.detail)}[/] — extend by "
                    f"{event.extend_tokens} tokens / ${event.extend_cost_usd:.2f} / "
                    f"{event.extend_wall_clock_s:.0f} s, or stop"
                )
            case RunStatusChanged():
                if self.verbose:
                    c.print(f"  [dim]run is {event.status.value} ({escape(event.by)})[/]")
            case _:
                assert_never(event)
        return None

    async def print_outputs(self, run_id: str) -> None:
        """The run's files under outputs/: their paths (and where they are on disk)."""
        assert self.workspace is not None
        files = [f for f in await self.workspace.files(run_id) if f.path.startswith(OUTPUTS)]
        if not files:
            return
        self.console.print(f"[bold]Files the agents made[/] ({len(files)}):")
        for f in files:
            where = f" → {self.folder / run_id / f.path}" if self.folder is not None else ""
            self.console.print(f"  📎 {escape(f.describe())}{escape(where)}")
