"""The proposal card in the terminal, and the person's decision about it."""

from __future__ import annotations

from typing import Any, TextIO

from pydantic import ValidationError
from rich.console import Console, Group
from rich.panel import Panel
from rich.prompt import Prompt
from rich.table import Table

from bots.console.render import escape
from core.runs.approval import Approve, Decision, ProposalView, Reject
from core.runs.edits import AgentEdit, Edit


def card(view: ProposalView) -> Panel:
    """The proposal: plan steps, the agent tree, patterns, reuse, budget."""
    parts: list[object] = []
    if view.steps:
        parts.append(
            "[bold]Plan[/]\n" + "\n".join(f"{i}. {escape(s)}" for i, s in enumerate(view.steps, 1))
        )
    agents = Table("#", "agent", "role", "model", "tools", "budget", "prompt", expand=True)
    for i, a in enumerate(view.agents, 1):
        name = escape(a.name) + (f"\n[dim]under {escape(a.parent)}[/]" if a.parent else "")
        budget = (f"{a.max_tokens} tok" if a.max_tokens else "default") + (
            f"\n${a.max_cost_usd:.2f}" if a.max_cost_usd is not None else ""
        )
        agents.add_row(
            str(i),
            name,
            a.role,
            a.model,
            escape(", ".join(a.tools)) + "".join(f"\n[yellow]⚠ {escape(r)}[/]" for r in a.risks),
            budget,
            escape(a.prompt_excerpt[:120]),
        )
    parts.append(agents)
    if view.patterns:
        parts.append("[bold]Teams[/] " + "; ".join(escape(p) for p in view.patterns))
    if view.reused_from:
        parts.append(f"[bold]Reused cohort[/] from the library: {escape(view.reused_from)}")
    if view.reused:
        parts.append("[bold]Reused agents[/]: " + "; ".join(escape(r) for r in view.reused))
    if view.budget is not None:
        b = view.budget
        parts.append(
            f"[bold]Budget[/] {b.tokens} tokens · ${b.cost_usd:.2f} · {b.wall_clock_s:.0f} s"
        )
    return Panel(
        Group(*parts),  # type: ignore[arg-type]
        title=f"Proposal for {escape(view.requested_by)}: {escape(view.task[:80])}",
        border_style="cyan",
    )


def ask(console: Console, view: ProposalView, stream: TextIO | None = None) -> Decision:
    """Approve, reject (with a reason) or edit one agent; blocking (run it in a thread).
    The answers are read from ``stream`` (the console's lines) if given, else stdin."""
    console.print(card(view))

    def said(question: str, **options: Any) -> str:
        return str(Prompt.ask(question, console=console, stream=stream, **options))

    # Escaped: rich would take "[a]" for markup and print "pprove, dit or eject".
    choice = said(escape("[a]pprove, [e]dit or [r]eject"), choices=["a", "e", "r"], default="a")
    if choice == "a":
        return Approve()
    if choice == "r":
        return Reject(reason=said("Reason (optional)", default=""))
    numbers = [str(i) for i in range(1, len(view.agents) + 1)]
    agent = view.agents[int(said("Which agent", choices=numbers, default="1")) - 1]
    if said(f"Remove {agent.name}?", choices=["y", "n"], default="n") == "y":
        return Edit(agents=(AgentEdit(agent_id=agent.id, remove=True),))
    prompt = said("New instructions (empty: keep)", default="")
    tools = said("Tools, comma-separated (empty: keep)", default="")
    model = said("Model (empty: keep)", default="")
    while True:
        tokens = said("Token budget, at least 1000 (empty: keep)", default="")
        cost = said("Cost budget in USD (empty: keep)", default="")
        try:
            change = AgentEdit(
                agent_id=agent.id,
                system_prompt=prompt or None,
                tools=tuple(t.strip() for t in tools.split(",") if t.strip()) or None,
                model=model or None,
                max_tokens=int(tokens) if tokens.strip() else None,
                max_cost_usd=float(cost) if cost.strip() else None,
            )
        except (ValueError, ValidationError) as exc:
            console.print(f"[red]Not a budget: {escape(_first_error(exc))}[/] Try again.")
            continue
        return Edit(agents=(change,))


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return f"{e['loc'][0] if e['loc'] else 'value'}: {e['msg']}"
    return str(exc)
