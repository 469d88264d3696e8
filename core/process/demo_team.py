"""The offline demo's team at work: how the scripted model answers each agent of the cohort
the planner designed (core/process/demo_planning.py) — from its playbook, its messages and
what its tools returned, the way a model would.

The orchestrator hands the budget to the Budget lead; the lead fans the three parts out to
its members (one message each) and, once every part is back, adds them up with
``calculate`` and writes ``budget.md``; the orchestrator reads the file, checks the sum
and answers. An agent removed on the card is covered: the lead works a missing member's
part out itself, and an orchestrator left alone does the whole budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, call
from core.process.demo_reading import (
    body,
    called,
    delivered,
    playbook_members,
    tool_results,
)

TEAM_TASK = (
    "Budget our 3-night team offsite in Lisbon for 12 people: hotel rooms are €140 a night "
    "(two people a room), meals €55 a day per person, return trains €89 per person. "
    "Write the budget to budget.md and double-check the total."
)
BUDGET_FILE = "budget.md"
LEAD = "Budget lead"
_EURO = re.compile(r"€\s?([\d.]+)")


@dataclass(frozen=True)
class Part:
    """One independent part of the budget: the member who costs it, and how."""

    member: str
    what: str
    expression: str
    how: str


PARTS = (
    Part("Trains", "return trains", "12 * 89", "12 people × €89"),
    Part("Rooms", "hotel rooms", "6 * 3 * 140", "6 rooms × 3 nights × €140"),
    Part("Meals", "meals", "12 * 3 * 55", "12 people × 3 days × €55"),
)


def _amount(calculated: str) -> str:
    """The value of a ``calculate`` result ("12 * 89 = 1068" → "1068")."""
    return calculated.rsplit("=", 1)[-1].strip()


def _lines(request: LLMRequest) -> list[str]:
    """The budget's lines, in the parts' order: the members' results, and the parts done
    here (their ``calculate`` results come first, in the parts' order)."""
    results = [body(r).strip() for r in delivered(request, "[Result from ")]
    by_member = {line.split(":", 1)[0]: line for line in results}
    own = iter(tool_results(request, "calculate"))
    return [
        by_member.get(p.member) or f"{p.member}: €{_amount(next(own, '?'))} ({p.how})"
        for p in PARTS
    ]


def lead(r: LLMRequest) -> Reply:
    """Fan out one part per member; fan in; add up; write the file; finish."""
    members = set(playbook_members(r))
    mine = [p for p in PARTS if p.member in members]
    if not called(r, "send_message") and not called(r, "calculate"):
        sends = [
            call(
                "send_message",
                {
                    "to": p.member,
                    "body": f"Your part: the {p.what} ({p.how}).\nCompute: {p.expression}\n"
                    f'Finish with one line: "{p.member}: €<amount> (<how>)".',
                },
            )
            for p in mine
        ]
        missing = [call("calculate", {"expression": p.expression}) for p in PARTS if p not in mine]
        waiting = [call("wait_for_messages")] if mine else []
        return Reply(
            content=f"Fanning out: {len(mine)} parts to {len(mine)} members, "
            f"{len(missing)} done myself.",
            calls=(*sends, *missing, *waiting),
        )
    if len(delivered(r, "[Result from ")) < len(mine):
        return Reply(calls=(call("wait_for_messages"),))
    lines = _lines(r)
    amounts = [m.group(1) for line in lines if (m := _EURO.search(line))]
    if called(r, "calculate") == len(PARTS) - len(mine):
        return Reply(
            content="Every part is in; adding them up.",
            calls=(call("calculate", {"expression": " + ".join(amounts)}),),
        )
    total = _amount(tool_results(r, "calculate")[-1])
    table = "\n".join(f"- {line}" for line in lines) + f"\n\n**Total: €{total}**"
    if not called(r, "write_file"):
        content = f"# Offsite budget\n\n{table}\n"
        return Reply(calls=(call("write_file", {"path": BUDGET_FILE, "content": content}),))
    return Reply(calls=(call("finish", {"result": f"{BUDGET_FILE} is written:\n{table}"}),))


def member(r: LLMRequest) -> Reply:
    """Wait for the part from the lead; work it out; finish with one line."""
    asked = delivered(r, f"[Message from {LEAD}")
    if not asked:
        return Reply(calls=(call("wait_for_messages"),))
    if not called(r, "calculate"):
        expression = re.search(r"Compute: (.+)", asked[-1])
        return Reply(
            calls=(call("calculate", {"expression": expression.group(1) if expression else "0"}),)
        )
    part = next(p for p in PARTS if p.member == r.agent_name)
    result = tool_results(r, "calculate")[-1]
    line = f"{part.member}: €{_amount(result)} ({part.how})"
    return Reply(calls=(call("finish", {"result": line}),))


def orchestrator(r: LLMRequest) -> Reply:
    """Hand over to the lead, then check its file and answer (or do it all when alone)."""
    if not called(r, "roster"):
        return Reply(content="Who is on the team?", calls=(call("roster"),))
    alone = LEAD not in tool_results(r, "roster")[0]
    if alone:
        return _alone(r)
    if not called(r, "send_message"):
        note = (
            f"Kick-off: one line per part in {BUDGET_FILE}, then the total in €. "
            "Two people share a room, so 6 rooms."
        )
        return Reply(
            calls=(call("send_message", {"to": LEAD, "body": note}), call("wait_for_messages"))
        )
    if not delivered(r, f"[Result from {LEAD}"):
        return Reply(calls=(call("wait_for_messages"),))
    if not called(r, "read_file"):
        return Reply(
            content="The team is done; checking the file.",
            calls=(call("read_file", {"path": BUDGET_FILE}),),
        )
    text = tool_results(r, "read_file")[-1]
    rows = [line for line in text.splitlines() if line.startswith(("- ", "**Total"))]
    figures = [m.group(1) for line in rows if (m := _EURO.search(line))]
    if not figures:  # the file was not written (e.g. a person denied the write)
        said = f"The team's {BUDGET_FILE} could not be checked: {text.strip()}"
        return Reply(content="No file to check.", calls=(call("finish", {"result": said}),))
    if not called(r, "calculate"):
        return Reply(calls=(call("calculate", {"expression": " + ".join(figures[:-1])}),))
    checked, total = _amount(tool_results(r, "calculate")[-1]), figures[-1]
    verdict = "the parts add up to the total" if checked == total else "the total is wrong"
    answer = text.split("\n", 1)[1].split("\n", 1)[1].strip()  # without the file's header
    return Reply(
        content="Checked.",
        calls=(call("finish", {"result": f"{answer}\n\nChecked: {verdict} (€{checked})."}),),
    )


def _alone(r: LLMRequest) -> Reply:
    if not called(r, "calculate"):
        expression = " + ".join(f"({p.expression})" for p in PARTS)
        return Reply(calls=(call("calculate", {"expression": expression}),))
    total = _amount(tool_results(r, "calculate")[-1])
    text = "\n".join(f"- {p.member}: {p.how}" for p in PARTS) + f"\n\n**Total: €{total}**"
    if not called(r, "write_file"):
        return Reply(calls=(call("write_file", {"path": BUDGET_FILE, "content": text}),))
    return Reply(calls=(call("finish", {"result": text}),))
