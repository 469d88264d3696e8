"""The console's proposal: the card read at 80 columns (a tree, wrapped between words,
short), and the edit form asking field by field, a refused value asked again with the
other fields kept."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Sequence

import pytest
from rich.console import Console

from bots.console import proposal
from bots.console.card import card, shorten
from bots.console.edit_form import Check
from core.process.demo_flow import run_demo
from core.runs.approval import AgentCard, Decision, ProposalView, Reject
from core.runs.edits import AgentEdit, Edit, EditProblem
from core.types.run import RunBudget, RunStatus
from tests.conftest import make_settings

WORD = re.compile(r"[A-Za-z][A-Za-z_']*[A-Za-z]")


def _agent(i: int, name: str, parent: str | None, prompt: str, **more: object) -> AgentCard:
    fields: dict[str, object] = {
        "id": f"agt_{i}",
        "name": name,
        "role": "member" if parent else "orchestrator",
        "parent": parent,
        "model": "openai/x",
        "tools": ("calculate", "finish"),
        "prompt_excerpt": prompt,
        "max_tokens": 20000,
        "max_cost_usd": None,
    }
    return AgentCard.model_validate(fields | more)


def _view(agents: Sequence[AgentCard], task: str = "t", steps: Sequence[str] = ()) -> ProposalView:
    return ProposalView(
        run_id="run_1",
        task=task,
        requested_by="ana",
        status=RunStatus.PROPOSED,
        steps=tuple(steps),
        agents=tuple(agents),
        patterns=(),
        reused=(),
        budget=RunBudget(tokens=120000, cost_usd=0.5, wall_clock_s=1800),
        expires_at=None,
        decided_by=None,
    )


def _rendered(view: ProposalView, width: int = 80) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(card(view))
    return console.export_text().splitlines()


def _words(*texts: str) -> set[str]:
    return {w for t in texts for w in WORD.findall(t)}


def _demo_view() -> ProposalView:
    views: list[ProposalView] = []

    async def ask(view: ProposalView) -> Decision:
        views.append(view)
        return Reject(reason="only looking")

    asyncio.run(run_demo(make_settings(), ask, on_message=lambda _: None))
    return views[0]


def test_the_demo_cohorts_card_fits_80_columns_as_a_short_tree_of_whole_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOGNAME", "ana")
    view = _demo_view()
    lines = _rendered(view)
    text = "\n".join(lines)
    assert "Proposal for ana" in text  # the requester by name, not the id "console"
    assert max(len(line) for line in lines) <= 80
    assert len(lines) <= 40  # the table it replaces took 93
    # A tree: the orchestrator at the top, its lead under it, the members under the lead.
    assert re.search(r"└── 1\. Orchestrator · orchestrator", text)
    assert re.search(r"\n│ +└── 2\. Budget lead · lead · team: fan out", text)
    assert re.search(r"├── 3\. Trains · member · 20,000 tokens", text)
    assert "Budget for the whole run: 120,000 tokens · $0.50 · 30 min" in text
    assert "⚠ write_file: changes things" in text
    # Every word shown is a whole word of what the card was made from: none cut mid-word.
    allowed = _words(view.task, *view.steps, *view.patterns) | {
        w
        for a in view.agents
        for w in _words(a.name, a.role, a.model, a.prompt_excerpt, *a.tools, *a.risks)
    }
    allowed |= _words("Proposal for ana Plan Agents Every agent model tools team fan out")
    allowed |= _words("tokens Budget for the whole run min instructions the same as")
    assert _words(text) <= allowed, _words(text) - allowed
    # A long text ends with "…" after a whole word.
    for cut in re.findall(r"(\S+)…", text):
        assert any(cut in a.prompt_excerpt.split() for a in view.agents), cut


def test_long_names_prompts_and_many_agents_wrap_inside_80_columns() -> None:
    prompt = "Read every source you are given and summarise it " * 20
    agents = [_agent(1, "Orchestrator of a very long and winding name indeed", None, prompt)]
    agents += [
        _agent(i, f"Researcher number {i} with a long name", agents[0].name, f"{i} " + prompt)
        for i in range(2, 31)
    ]
    agents.append(_agent(31, "Deep", agents[5].name, "x" * 200))  # one unbroken word
    task = "Compare these\x1b[2J " * 40
    view = _view(agents, task=task, steps=["Look at all of it closely " * 8])
    lines = _rendered(view)
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    assert "Researcher number 30 with a long name" in text.replace("│", " ").replace("\n", " ")
    assert "Compare these\\x1b[2J Compare" in text and "…" in text and "\x1b" not in text


def test_shorten_cuts_after_a_whole_word() -> None:
    assert shorten("one two three", 20) == "one two three"
    assert shorten("alpha beta gamma delta", 13) == "alpha beta…"
    assert shorten("alpha,   beta\n\ngamma", 12) == "alpha, beta…"
    assert shorten("x" * 30, 10) == "x" * 10 + "…"


def _ask(typed: list[str], view: ProposalView, check: Check | None = None) -> tuple[Decision, str]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=120)
    stream = io.StringIO("\n".join(typed) + "\n")
    return proposal.ask(console, view, stream, check), out.getvalue()


def test_a_refused_budget_is_asked_again_and_the_other_fields_are_kept() -> None:
    view = _view([_agent(1, "Analyst", None, "Analyse.", max_tokens=120000)])
    typed = ["e", "1", "Analyse it twice.", "calculate", "", "abc", "500", "50k", "$1.50"]

    decision, printed = _ask(typed, view)

    assert "[a]pprove, [e]dit or [r]eject [a/e/r]" in printed
    assert (
        "Not a number: write a whole number of tokens, at least 1,000, or leave it empty to "
        "keep 120,000 tokens." in printed
    )
    assert "Too small for an agent" in printed  # 500
    assert "invalid literal" not in printed and "int()" not in printed
    assert isinstance(decision, Edit)
    (change,) = decision.agents
    assert change == AgentEdit(
        agent_id="agt_1",
        system_prompt="Analyse it twice.",
        tools=("calculate",),
        max_tokens=50000,
        max_cost_usd=1.5,
    )


def test_only_the_field_core_refuses_is_asked_again() -> None:
    view = _view([_agent(1, "Analyst", None, "Analyse.")])
    tried: list[AgentEdit] = []

    def check(change: AgentEdit) -> list[EditProblem]:
        tried.append(change)
        if change.tools and "nope" in change.tools:
            return [
                EditProblem(
                    agent_id="agt_1",
                    agent_name="Analyst",
                    field="tools",
                    message="there is no tool named nope",
                )
            ]
        return []

    typed = ["e", "Analyst", "New words.", "nope", "calculate", "openai/y", "", "0.2"]
    decision, printed = _ask(typed, view, check)

    assert "Not changed: Analyst (tools): there is no tool named nope — type it again." in printed
    assert printed.count("New instructions") == 1 and printed.count("Tools, comma") == 2
    assert isinstance(decision, Edit)
    assert decision.agents[0] == AgentEdit(
        agent_id="agt_1",
        system_prompt="New words.",
        tools=("calculate",),
        model="openai/y",
        max_cost_usd=0.2,
    )
    assert tried[-1] == decision.agents[0]  # the whole edit was checked before it was sent


def test_an_edit_that_changes_nothing_asks_again_and_a_member_can_be_removed() -> None:
    top = _agent(1, "Lead", None, "Lead.")
    view = _view([top, _agent(2, "Worker", "Lead", "Work."), _agent(3, "Sub", "Worker", "Sub.")])
    typed = ["e", "9", "1", "", "", "", "", "", "e", "2", "y"]

    decision, printed = _ask(typed, view)

    assert "No agent 9: type a number from 1 to 3" in printed
    assert "Nothing changed." in printed
    assert "Remove Worker and the 1 agent under it? [y/n]" in printed
    assert decision == Edit(agents=(AgentEdit(agent_id="agt_2", remove=True),))


@pytest.mark.parametrize("typed", ["1e999", "nan", "-1"])
def test_a_cost_that_is_not_an_amount_is_refused(typed: str) -> None:
    view = _view([_agent(1, "Analyst", None, "Analyse.")])
    decision, printed = _ask(["e", "1", "", "", "", "", typed, "0"], view)
    assert "or leave it empty to keep no cost limit." in printed
    assert isinstance(decision, Edit) and decision.agents[0].max_cost_usd == 0


def test_every_agent_is_under_its_parent_whatever_the_order_and_none_is_lost() -> None:
    agents = [
        _agent(1, "Member", "Lead", "m"),
        _agent(2, "Lead", "Top", "l"),
        _agent(3, "Top", None, "t"),
        _agent(4, "Ping", "Pong", "p"),  # a loop of parents: still on the card
        _agent(5, "Pong", "Ping", "q"),
    ]
    text = "\n".join(_rendered(_view(agents)))
    assert re.search(
        r"── 3\. Top.*\n.*\n.*│   └── 2\. Lead.*\n.*\n.*│       └── 1\. Member", text
    ), text
    assert "4. Ping" in text and "5. Pong" in text


def test_tools_can_be_added_and_taken_away_by_name() -> None:
    view = _view([_agent(1, "Analyst", None, "Analyse.", tools=("calculate", "finish"))])
    typed = ["e", "1", "", "+web_search, -calculate", "", "", ""]
    decision, printed = _ask(typed, view)
    assert isinstance(decision, Edit)
    assert decision.agents[0].tools == ("finish", "web_search")
    mixed = ["e", "1", "", "web_search, -calculate", "fetch_url", "", "", ""]
    decision, printed = _ask(mixed, view)
    assert "Either list the tools the agent should have" in printed
    assert isinstance(decision, Edit) and decision.agents[0].tools == ("fetch_url",)
