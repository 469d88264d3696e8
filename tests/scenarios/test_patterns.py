"""The collaboration patterns, one scenario each: a designed cohort (as the planner writes
it: a team with its pattern) is proposed, approved and run with a scripted model whose
lead follows the team's playbook (core/prompts/patterns/*.md.j2), and the shape of the
pattern is read back from what went over the bus — who messaged whom, in which order."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.process.demo_reading import (
    body,
    called,
    delivered,
    playbook_members,
    system_text,
    tool_results,
)
from core.runs import control
from core.runs.approval import Approve, decide
from core.types import AgentSpec, Cohort, TeamSpec
from core.types.events import AgentCreated, AgentFinished, MessageSent, RunEvent, RunFinished
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect

Brain = Callable[[LLMRequest], Reply]
TEAM = "team-x"
BASE = ("send_message", "roster", "wait_for_messages", "finish")


def _cohort(pattern: str, lead: str, *others: tuple[str, str, str, tuple[str, ...]]) -> Cohort:
    """Orchestrator → ``lead`` (its team's ``pattern``) → ``others``: (name, role,
    description, tools); members join the team, a judge stays outside it."""
    root = AgentSpec(name="Orchestrator", role="orchestrator", tools=BASE, description="Runs it.")
    head = AgentSpec(
        name=lead,
        role="lead",
        parent_id=root.id,
        team_id=TEAM,
        tools=("calculate", *BASE),
        description=f"Lead the team's {pattern}.",
    )
    children = [
        AgentSpec(
            name=name,
            role=role,
            parent_id=head.id,
            team_id=TEAM if role == "member" else None,
            tools=(*tools, *BASE),
            description=description,
        )
        for name, role, description, tools in others
    ]
    return Cohort(
        task=f"A {pattern} task",
        agents=(root, head, *children),
        teams=(TeamSpec(id=TEAM, lead_id=head.id, name="X", pattern=pattern),),
    )


def _orchestrator(lead: str) -> Brain:
    def brain(r: LLMRequest) -> Reply:
        result = delivered(r, f"[Result from {lead}")
        if not result:
            return Reply(calls=(call("wait_for_messages"),))
        return Reply(calls=(call("finish", {"result": body(result[0])}),))

    return brain


async def _run(
    make_services: Any, redis: Any, cohort: Cohort, brains: dict[str, Brain]
) -> tuple[list[RunEvent], list[tuple[str, str, str]], ScriptedModel]:
    """Propose, approve and run ``cohort``; its events and the bus's traffic in order:
    (sender, recipient, preview), names for ids and "team" for the team's topic."""
    lead = cohort.agents[1].name
    everyone = {"Orchestrator": _orchestrator(lead), **brains}
    model = ScriptedModel(responder=lambda r: everyone[r.agent_name](r))
    svc = make_services(make_settings(limits={"turns_per_agent": 12}), model, redis=redis)
    run_id = await control.propose_run(svc, cohort.task, cohort, requested_by="@ana")
    assert (await decide(svc, run_id, "@ana", Approve())).ok
    events = await collect(svc, run_id, timeout_s=20)
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status is RunStatus.COMPLETED, events[-3:]
    names = {e.agent_id: e.name for e in events if isinstance(e, AgentCreated)}
    assert len(names) == len(cohort.agents)
    ended = [e for e in events if isinstance(e, AgentFinished)]
    assert {e.reason.value for e in ended} == {"finished"}  # nobody failed or hit a cap
    if cohort.teams[0].pattern != "discussion":  # its members wait for another round
        assert {names[e.agent_id or ""] for e in ended} == set(names.values())
    traffic = [
        (
            names[e.agent_id or ""],
            "team" if e.recipient.startswith("team:") else names[e.recipient],
            e.preview,
        )
        for e in events
        if isinstance(e, MessageSent)
    ]
    first = next(q for q in model.requests if q.agent_name == lead)
    playbook = first.messages[0].content or ""
    pattern = cohort.teams[0].pattern
    assert f"## Playbook: {_TITLES.get(pattern, pattern)} (" in playbook
    for member in cohort.agents[2:]:
        assert f"{member.name} (id {member.id})" in playbook  # the playbook names them
    return events, traffic, model


WAIT = call("wait_for_messages")
_TITLES = {"fan_out": "fan-out / fan-in"}


def _wait() -> Reply:
    return Reply(calls=(WAIT,))


async def test_discussion_rounds_on_the_team_topic_until_consensus(make_services, any_redis):
    def moderator(r: LLMRequest) -> Reply:
        replies = [body(t) for t in delivered(r, "[Message from ") if "(member)" in t]
        rounds = called(r, "send_message")
        if rounds == 0:
            return Reply(
                calls=(
                    call("send_message", {"to": "team", "body": "Round 1 of 3: ship Friday?"}),
                    WAIT,
                )
            )
        if len(replies) < 2 * rounds:
            return _wait()
        latest = replies[-2:]
        if all(t.startswith("I agree") for t in latest):
            result = f"Consensus after {rounds} rounds: ship Friday with a rollback plan."
            return Reply(calls=(call("finish", {"result": result}),))
        summary = f"Round {rounds + 1} of 3: open point — " + " / ".join(latest) + ". Agree?"
        return Reply(calls=(call("send_message", {"to": "team", "body": summary}), WAIT))

    def member(first: str) -> Brain:
        def brain(r: LLMRequest) -> Reply:
            asked, answered = delivered(r, "[Message from Moderator"), called(r, "send_message")
            if len(asked) <= answered:
                return _wait()
            text = first if answered == 0 else "I agree, with a rollback plan."
            return Reply(calls=(call("send_message", {"to": "parent", "body": text}), WAIT))

        return brain

    cohort = _cohort(
        "discussion",
        "Moderator",
        ("Optimist", "member", "Argue for shipping.", ()),
        ("Skeptic", "member", "Argue against shipping.", ()),
    )
    brains = {
        "Moderator": moderator,
        "Optimist": member("I agree: the tests are green."),
        "Skeptic": member("Not without a rollback plan."),
    }
    events, traffic, _ = await _run(make_services, any_redis, cohort, brains)

    posts = [i for i, (s, to, _) in enumerate(traffic) if (s, to) == ("Moderator", "team")]
    assert [traffic[i][2].split(":")[0] for i in posts] == ["Round 1 of 3", "Round 2 of 3"]
    for n, (start, end) in enumerate(zip(posts, [*posts[1:], len(traffic)], strict=True), 1):
        answers = [s for s, to, _ in traffic[start + 1 : end] if to == "Moderator"]
        assert sorted(answers) == ["Optimist", "Skeptic"], f"round {n}: {answers}"
    # Round 2 restates both positions; members only ever talk to the moderator.
    assert "Not without a rollback plan" in traffic[posts[1]][2]
    assert {to for s, to, _ in traffic if s in ("Optimist", "Skeptic")} == {"Moderator"}
    assert traffic[-1][:2] == ("Moderator", "Orchestrator")
    final = events[-1]
    assert isinstance(final, RunFinished)
    assert final.result == "Consensus after 2 rounds: ship Friday with a rollback plan."


async def test_competition_keeps_teams_apart_and_the_judge_picks(make_services, any_redis):
    brief = "Work out the seconds in a leap year; show how."

    def solver(expression: str) -> Brain:
        def brain(r: LLMRequest) -> Reply:
            if not called(r, "calculate"):
                return Reply(calls=(call("calculate", {"expression": expression}),))
            return Reply(calls=(call("finish", {"result": tool_results(r, "calculate")[-1]}),))

        return brain

    def contest_lead(r: LLMRequest) -> Reply:
        entries = {
            t.split(" (")[0].removeprefix("[Result from "): body(t)
            for t in delivered(r, "[Result from Solver")
        }
        verdict = delivered(r, "[Result from Judge")
        if verdict:
            # The private map from label to team, kept since the candidates were sent.
            labels = dict(zip("AB", sorted(entries, key=entries.__getitem__), strict=True))
            label = re.search(r"Candidate (\w)", verdict[0])
            winner = labels[label.group(1) if label else "A"]
            result = f"{entries[winner]}\nWinner: {label.group(0) if label else '?'} ({winner})."
            return Reply(calls=(call("finish", {"result": result}),))
        if len(entries) < 2 or called(r, "send_message"):
            return _wait()
        candidates = "\n".join(
            f"Candidate {label}: {text}"
            for label, text in zip("AB", sorted(entries.values()), strict=True)
        )
        note = f"Brief: {brief}\nCriteria: correct for a leap year, shown.\n{candidates}"
        return Reply(calls=(call("send_message", {"to": "Judge", "body": note}), WAIT))

    def judge(r: LLMRequest) -> Reply:
        sent = delivered(r, "[Message from Contest lead")
        if not sent:
            return _wait()
        best = next(line for line in sent[0].splitlines() if "366" in line)
        return Reply(calls=(call("finish", {"result": f"{best.split(':')[0]}: 366 days."}),))

    cohort = _cohort(
        "competition",
        "Contest lead",
        ("Solver B", "member", brief, ("calculate",)),
        ("Solver A", "member", brief, ("calculate",)),
        ("Judge", "judge", "Pick the most correct answer.", ()),
    )
    brains = {
        "Contest lead": contest_lead,
        "Solver A": solver("366 * 24 * 3600"),
        "Solver B": solver("365 * 24 * 3600"),
        "Judge": judge,
    }
    events, traffic, model = await _run(make_services, any_redis, cohort, brains)

    # The playbook tells the judge apart: not among the competitors, named as the judge.
    first = next(q for q in model.requests if q.agent_name == "Contest lead")
    assert playbook_members(first) == ["Solver B", "Solver A"]
    playbook = system_text(first).split("## Playbook:", 1)[1]
    competitors, judging = playbook.split("The judge (not a competitor", 1)
    assert "Judge" not in competitors.split("Competitors", 1)[1]
    judge_id = next(a.id for a in cohort.agents if a.name == "Judge")
    assert f"Judge: Judge (id {judge_id}): Pick the most correct answer." in judging
    assert "create_agent" not in playbook  # everyone exists already: nobody to create

    # Independent teams: nobody sends a solver anything, and solvers talk only upwards.
    assert not [t for t in traffic if t[1].startswith("Solver")]
    assert {to for s, to, _ in traffic if s.startswith("Solver")} == {"Contest lead"}
    (to_judge,) = [i for i, t in enumerate(traffic) if t[1] == "Judge"]
    assert traffic[to_judge][0] == "Contest lead"
    solved = [i for i, t in enumerate(traffic) if t[0].startswith("Solver")]
    assert len(solved) == 2 and max(solved) < to_judge  # every candidate before judging
    # Anonymised: labels, no team names; the judge's pick maps back to the right team.
    asked = [delivered(q, "[Message from Contest lead") for q in model.requests]
    shown = body(next(m for m in asked if m)[0])
    assert "Candidate A" in shown and "Candidate B" in shown and "Solver" not in shown
    assert [s for s, to, _ in traffic if to == "Contest lead" and s == "Judge"] == ["Judge"]
    final = events[-1]
    assert isinstance(final, RunFinished) and final.result is not None
    assert final.result.startswith("366 * 24 * 3600 = 31622400")
    assert final.result.endswith("Winner: Candidate B (Solver A).")  # B: labels are sorted


async def test_pipeline_runs_its_stages_in_order_one_at_a_time(make_services, any_redis):
    jobs = {
        "Collector": "list the three costs",
        "Adder": "add them up with calculate",
        "Writer": "write the one-line summary",
    }

    def editor(r: LLMRequest) -> Reply:
        stages, done = playbook_members(r), delivered(r, "[Result from ")
        if len(done) < called(r, "send_message"):
            return _wait()
        if len(done) == len(stages):
            lines = "\n".join(f"- {s}: {jobs[s]}" for s in stages)
            return Reply(calls=(call("finish", {"result": f"{body(done[-1])}\n{lines}"}),))
        stage = stages[len(done)]
        given = body(done[-1]) if done else "trains 1068, rooms 2520, meals 1980"
        note = f"Stage {len(done) + 1}: {jobs[stage]}.\n---\n{given}"
        return Reply(calls=(call("send_message", {"to": stage, "body": note}), WAIT))

    def stage(work: Callable[[str, LLMRequest], Reply | None]) -> Brain:
        def brain(r: LLMRequest) -> Reply:
            given = delivered(r, "[Message from Editor")
            if not given:
                return _wait()
            return work(given[0].split("---\n", 1)[1], r) or _wait()

        return brain

    def adder(given: str, r: LLMRequest) -> Reply:
        if not called(r, "calculate"):
            figures = " + ".join(re.findall(r"\d+", given))
            return Reply(calls=(call("calculate", {"expression": figures}),))
        total = tool_results(r, "calculate")[-1]
        return Reply(calls=(call("finish", {"result": f"{given}\ntotal {total}"}),))

    brains = {
        "Editor": editor,
        "Collector": stage(lambda g, r: Reply(calls=(call("finish", {"result": g}),))),
        "Adder": stage(adder),
        "Writer": stage(
            lambda g, r: Reply(calls=(call("finish", {"result": "Offsite: €" + g.split()[-1]}),))
        ),
    }
    cohort = _cohort(
        "pipeline",
        "Editor",
        *((name, "member", job, ("calculate",)) for name, job in jobs.items()),
    )
    events, traffic, _ = await _run(make_services, any_redis, cohort, brains)

    # Exactly one stage at work at a time, in the playbook's order.
    assert [(s, to) for s, to, _ in traffic] == [
        ("Editor", "Collector"),
        ("Collector", "Editor"),
        ("Editor", "Adder"),
        ("Adder", "Editor"),
        ("Editor", "Writer"),
        ("Writer", "Editor"),
        ("Editor", "Orchestrator"),
    ]
    # Each stage got the previous stage's output unchanged.
    outputs = {s: p for s, to, p in traffic if to == "Editor"}
    inputs = {to: p.split("---\n", 1)[1] for s, to, p in traffic if s == "Editor" and to in jobs}
    assert inputs["Adder"] == outputs["Collector"] and inputs["Writer"] == outputs["Adder"]
    assert outputs["Adder"].endswith("= 5568")
    final = events[-1]
    assert isinstance(final, RunFinished) and final.result is not None
    assert final.result.splitlines()[0] == "Offsite: €5568"
    assert final.result.splitlines()[1:] == [f"- {s}: {j}" for s, j in jobs.items()]


async def test_fan_out_sends_every_part_at_once_and_fans_all_results_in(make_services, any_redis):
    parts = {"North": "12 * 89", "South": "6 * 3 * 140", "East": "12 * 3 * 55"}

    def splitter(r: LLMRequest) -> Reply:
        if not called(r, "send_message"):
            sends = tuple(
                call("send_message", {"to": m, "body": f"Your part only: {parts[m]}"})
                for m in playbook_members(r)
            )
            return Reply(calls=(*sends, WAIT))
        results = [body(t) for t in delivered(r, "[Result from ")]
        if len(results) < len(parts):
            return _wait()
        if not called(r, "calculate"):
            figures = " + ".join(t.rsplit("= ", 1)[1] for t in results)
            return Reply(calls=(call("calculate", {"expression": figures}),))
        merged = "\n".join(sorted(results)) + f"\nTotal: {tool_results(r, 'calculate')[-1]}"
        return Reply(calls=(call("finish", {"result": merged}),))

    def worker(r: LLMRequest) -> Reply:
        asked = delivered(r, "[Message from Splitter")
        if not asked:
            return _wait()
        if not called(r, "calculate"):
            # East takes two turns: the lead must keep waiting for it.
            if r.agent_name == "East" and not called(r, "roster"):
                return Reply(calls=(call("roster"),))
            return Reply(calls=(call("calculate", {"expression": asked[0].split(": ")[-1]}),))
        return Reply(calls=(call("finish", {"result": tool_results(r, "calculate")[-1]}),))

    cohort = _cohort(
        "fan_out",
        "Splitter",
        *((name, "member", f"Cost the {name} office.", ("calculate",)) for name in parts),
    )
    brains: dict[str, Brain] = {"Splitter": splitter, **{name: worker for name in parts}}
    events, traffic, _ = await _run(make_services, any_redis, cohort, brains)

    out = [i for i, (s, to, _) in enumerate(traffic) if s == "Splitter" and to in parts]
    assert [traffic[i][1] for i in out] == list(parts) and out == [0, 1, 2]  # one turn
    for name, expression in parts.items():  # each member got its own part, and only it
        assert [p for s, to, p in traffic if to == name] == [f"Your part only: {expression}"]
    back = [i for i, (s, to, _) in enumerate(traffic) if to == "Splitter"]
    assert sorted(traffic[i][0] for i in back) == sorted(parts)
    up = next(i for i, (s, to, _) in enumerate(traffic) if (s, to) == ("Splitter", "Orchestrator"))
    assert up > max(back)  # fan-in: the lead answered only after every member's result
    final = events[-1]
    assert isinstance(final, RunFinished) and final.result is not None
    for expression in parts.values():
        assert expression in final.result
    assert final.result.endswith(" = 5568")  # 1068 + 2520 + 1980, in arrival order
