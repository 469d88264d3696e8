"""The proposal card in the terminal: the task, the plan, the agent tree, the budget.

Made to be read at 80 columns: everything wraps between words (rich does the wrapping;
nothing is cut to a column width), long texts end at a word with "…", the agents are a
tree (orchestrator → leads → members), and what every agent shares (its model, the
messaging tools) is said once above the tree instead of on each agent.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from bots.console.person import named
from bots.console.text import escape, printable
from core.runs.approval import AgentCard, ProposalView
from core.types.figures import exact_cost, tokens

TASK_CHARS = 300
PROMPT_CHARS = 110


def card(view: ProposalView) -> Panel:
    """The proposal: the task, plan steps, the agent tree, reuse, budget."""
    parts: list[RenderableType] = [Text(shorten(view.task, TASK_CHARS), style="bold")]
    if view.steps:
        parts.append(Text.from_markup("\n[bold]Plan[/]"))
        steps = Table.grid(padding=(0, 1))
        steps.add_column(justify="right")
        steps.add_column()
        for i, step in enumerate(view.steps, 1):
            steps.add_row(f"{i}.", Text(printable(step)))
        parts.append(steps)
    parts.append(Text())
    parts.append(_tree(view))
    if view.reused_from:
        parts.append(Text.from_markup(f"[bold]Reused cohort:[/] {escape(view.reused_from)}"))
    for line in view.reused:
        parts.append(Text.from_markup(f"[bold]Reused:[/] {escape(line)}"))
    if view.budget is not None:
        b = view.budget
        parts.append(
            Text.from_markup(
                f"\n[bold]Budget[/] for the whole run: {tokens(b.tokens)} · "
                f"{money(b.cost_usd)} · {duration(b.wall_clock_s)}"
            )
        )
    return Panel(
        Group(*parts),
        title=f"Proposal for {escape(named(view.requested_by))}",
        title_align="left",
        border_style="cyan",
    )


def _shared_tools(agents: Sequence[AgentCard]) -> list[str]:
    if len(agents) < 2:
        return []
    return [t for t in agents[0].tools if all(t in a.tools for a in agents[1:])]


def _shared_model(agents: Sequence[AgentCard]) -> str | None:
    models = {a.model for a in agents}
    return agents[0].model if len(agents) > 1 and len(models) == 1 else None


def _common(agents: Sequence[AgentCard]) -> Text | None:
    """What every agent has, said once (None with one agent, or nothing shared)."""
    model, shared = _shared_model(agents), _shared_tools(agents)
    said = ([f"model {escape(model)}"] if model else []) + (
        [f"tools {escape(', '.join(shared))}"] if shared else []
    )
    if not said:
        return None
    return Text.from_markup("[dim]every agent:[/] " + "; ".join(said))


def _tree(view: ProposalView) -> Tree:
    agents = view.agents
    model, shared = _shared_model(agents), set(_shared_tools(agents))
    teams = dict(_team(p, agents) for p in view.patterns)
    common = _common(agents)
    root = (
        Text("Agents", style="bold")
        if common is None
        else Group(Text("Agents", style="bold"), common)
    )
    tree = Tree(root, guide_style="cyan")
    said: dict[str, str] = {}  # instructions → the first agent given them
    names = {a.name for a in agents}
    placed: set[int] = set()

    def grow(node: Tree, parent: str | None) -> None:
        """Each agent under its parent, in the card's order (one whose parent is not on
        the card sits at the top)."""
        for number, agent in enumerate(agents, 1):
            above = agent.parent if agent.parent in names else None
            if above != parent or number in placed:
                continue
            placed.add(number)
            label = _label(number, agent, model, shared, teams.get(agent.name), said)
            grow(node.add(label), agent.name)

    grow(tree, None)
    for number, agent in enumerate(agents, 1):  # in a loop of parents: shown all the same
        if number not in placed:
            placed.add(number)
            label = _label(number, agent, model, shared, teams.get(agent.name), said)
            grow(tree.add(label), agent.name)
    return tree


def _team(pattern: str, agents: Sequence[AgentCard]) -> tuple[str, str]:
    """``"Budget lead: fan_out"`` (core's line for a team) → its lead and how it works."""
    for a in agents:
        if pattern.startswith(f"{a.name}: "):
            return a.name, pattern[len(a.name) + 2 :].replace("_", " ")
    return "", ""


def _label(
    number: int,
    agent: AgentCard,
    model: str | None,
    shared: set[str],
    team: str | None,
    said: dict[str, str],
) -> Group:
    """One agent: number, name, role, budget (and model, team); its own tools, risks, and
    the start of its instructions (or whose they repeat)."""
    facts = [escape(agent.role)]
    if model is None:
        facts.append(escape(agent.model))
    if team:
        facts.append(f"team: {escape(team)}")
    budget = tokens(agent.max_tokens) if agent.max_tokens else "default budget"
    if agent.max_cost_usd is not None:
        budget += f" · {money(agent.max_cost_usd)}"
    facts.append(budget)
    lines: list[RenderableType] = [
        Text.from_markup(f"[bold]{number}. {escape(agent.name)}[/][dim] · {' · '.join(facts)}[/]")
    ]
    own = [t for t in agent.tools if t not in shared]
    if own:
        lines.append(Text.from_markup(f"[dim]tools:[/] {escape(', '.join(own))}"))
    for risk in agent.risks:
        lines.append(Text.from_markup(f"[yellow]⚠ {escape(risk)}[/]"))
    prompt = shorten(agent.prompt_excerpt, PROMPT_CHARS)
    if agent.prompt_excerpt in said:
        first = said[agent.prompt_excerpt]
        lines.append(Text.from_markup(f"[dim]instructions: the same as {escape(first)}[/]"))
    elif prompt:
        said[agent.prompt_excerpt] = f"{number}. {agent.name}"
        lines.append(Text(f"“{prompt}”", style="italic dim"))
    return Group(*lines)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line (control characters written out), at most about ``limit``
    characters: cut after a whole word, with "…"."""
    flat = " ".join(printable(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit + 1]
    end = cut.rfind(" ")
    head = cut[:end] if end > 0 else flat[:limit]
    return head.rstrip(" ,;:.") + "…"


money = exact_cost  # a budget, exact below a cent too


def duration(seconds: float) -> str:
    """1800 → "30 min"; 90 → "90 s"; 5400 → "1.5 h"."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h".replace(".0 h", " h")
