"""The people room's guards (``core.runs.people``), one by one, on fakeredis without a
worker: who may, in what state, once per person — and the lines, naming people."""

from __future__ import annotations

from typing import Any

import fakeredis
import pytest

from core.llm.scripted import ScriptedModel
from core.runs import control, people
from core.runs.approval import Approve, Reject
from core.runs.edits import AgentEdit, Edit
from core.runs.outcomes import (
    AlreadyRated,
    Delivered,
    Done,
    Editable,
    NotDelivered,
    NotRated,
    Rated,
    Refused,
    Requested,
)
from core.services import Services
from core.types import AgentSpec
from core.types.people import Person
from core.types.run import RunState, RunStatus
from tests.conftest import make_settings

ALICE = Person("U0ALICE", "Alice")
BOB = Person("U0BOB", "Bob")
BOSS = Person("U0BOSS", "Boss")  # in [approval] approvers
ROLE = Person("U0ROLE", "Rolf", approver=True)  # an approver by the platform's say


class Names:
    """The adapter's who port: ids → names."""

    async def name(self, user_id: str) -> str:
        return {"U0ALICE": "Alice", "U0BOB": "Bob"}.get(user_id, "someone")


WHO = Names()


@pytest.fixture
async def svc(make_services: Any) -> Services:
    settings = make_settings(approval={"approvers": ["U0BOSS"]})
    return make_services(
        settings,
        ScriptedModel(),
        redis=fakeredis.FakeAsyncRedis(decode_responses=True),
        start=False,
    )


async def proposed(svc: Services) -> str:
    spec = AgentSpec(name="Solo", role="solo", tools=("finish",))
    return await control.propose_run(svc, "a task", spec, requested_by=ALICE.id)


async def _set(svc: Services, run_id: str, **fields: Any) -> None:
    def change(run: RunState) -> tuple[RunState | None, list[Any]]:
        return run.model_copy(update=fields), []

    await svc.store.update_run(run_id, change)


async def test_request_records_the_persons_run(svc: Services) -> None:
    outcome = await people.request(svc, "find flights", ALICE)
    assert isinstance(outcome, Requested)
    run = await svc.store.get_run(outcome.run_id)
    assert run.status is RunStatus.PLANNING and run.requested_by == "U0ALICE"


async def test_only_the_requester_and_approvers_decide(svc: Services) -> None:
    run_id = await proposed(svc)
    refused = await people.decide(svc, run_id, BOB, Approve(), who=WHO)
    assert isinstance(refused, Refused)
    assert refused.reason.startswith("Only Alice, who asked")
    assert "U0ALICE" not in refused.reason
    done = await people.decide(svc, run_id, BOSS, Reject(), who=WHO)
    assert isinstance(done, Done) and done.line == "Rejected by Boss."
    again = await people.decide(svc, run_id, ALICE, Approve(), who=WHO)
    assert isinstance(again, Refused) and "already decided: rejected by someone" in again.reason


async def test_a_platform_approver_may_decide_and_edit(svc: Services) -> None:
    run_id = await proposed(svc)
    opened = await people.editable(svc, run_id, ROLE, who=WHO)
    assert isinstance(opened, Editable) and [a.name for a in opened.agents] == ["Solo"]
    agent = opened.agents[0].id
    edit = Edit(agents=(AgentEdit(agent_id=agent, system_prompt="Be brief."),))
    done = await people.decide(svc, run_id, ROLE, edit, who=WHO)
    assert isinstance(done, Done) and done.line == "Updated by Rolf; approve it to start."
    assert isinstance(await people.editable(svc, run_id, BOB, who=WHO), Refused)


async def test_an_ended_proposal_cannot_be_edited(svc: Services) -> None:
    run_id = await proposed(svc)
    assert isinstance(await people.decide(svc, run_id, ALICE, Reject(), who=WHO), Done)
    refused = await people.editable(svc, run_id, ALICE, who=WHO)
    assert isinstance(refused, Refused) and "can no longer be edited" in refused.reason


async def test_cancel_by_a_stranger_is_refused_and_the_notice_names_people(
    svc: Services,
) -> None:
    run_id = await proposed(svc)
    refused = await people.cancel(svc, run_id, BOB, who=WHO)
    assert isinstance(refused, Refused) and refused.reason.startswith("Only Alice, who asked")
    assert (await svc.store.get_run(run_id)).status is RunStatus.PROPOSED
    done = await people.cancel(svc, run_id, ALICE, who=WHO)
    assert isinstance(done, Done) and done.line == "Cancelled by Alice"
    events = [e for _, e in await svc.store.read_events(run_id, count=100)]
    assert "cancelled by Alice" in str(events[-1]) and "U0ALICE" not in str(events[-1])
    twice = await people.cancel(svc, run_id, ALICE, who=WHO)
    assert isinstance(twice, Refused) and twice.reason.startswith("Not cancelled:")


async def test_extend_and_stop_need_a_paused_run_and_a_decider(svc: Services) -> None:
    run_id = await proposed(svc)
    assert isinstance(await people.extend(svc, run_id, ALICE, who=WHO), Refused)
    await _set(svc, run_id, status=RunStatus.WAITING_HUMAN, paused="tokens")
    stranger = await people.stop(svc, run_id, BOB, who=WHO)
    assert isinstance(stranger, Refused) and stranger.reason.startswith("Only Alice")
    done = await people.extend(svc, run_id, BOSS, who=WHO)
    assert isinstance(done, Done)
    tokens = svc.settings.humans.extend_tokens
    assert done.line == f"▶ Extended by Boss: +{tokens:,} tokens"
    assert done.said.render(str.upper, "**Boss**").startswith("▶ EXTENDED BY **Boss**: +")
    again = await people.stop(svc, run_id, ALICE, who=WHO)
    assert isinstance(again, Refused) and again.reason.startswith("Not stopped:")


async def test_stop_names_who_stopped(svc: Services) -> None:
    run_id = await proposed(svc)
    await _set(svc, run_id, status=RunStatus.WAITING_HUMAN, paused="cost")
    done = await people.stop(svc, run_id, ALICE, who=WHO)
    assert isinstance(done, Done) and done.line == "■ Stopped by Alice, with the results so far"
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.FAILED and "refused by Alice" in (run.error or "")


async def test_one_rating_per_person_and_run(svc: Services, monkeypatch: Any) -> None:
    counted: list[bool | None] = []

    async def rate(svc: Services, run: RunState, **kw: Any) -> None:
        counted.append(kw.get("thumbs_up"))

    monkeypatch.setattr("core.runs.learning.rate", rate)
    run_id = await proposed(svc)
    outcomes = [await people.rate(svc, run_id, ALICE, up=True) for _ in range(3)]
    assert isinstance(outcomes[0], Rated) and all(isinstance(o, AlreadyRated) for o in outcomes[1:])
    assert isinstance(await people.rate(svc, run_id, ALICE, up=False), AlreadyRated)
    assert isinstance(await people.rate(svc, run_id, BOB, up=False), Rated)
    assert counted == [True, False]


async def test_a_vote_kept_by_slack_or_discord_before_the_upgrade_still_counts_once(
    svc: Services, monkeypatch: Any
) -> None:
    counted: list[bool | None] = []

    async def rate(svc: Services, run: RunState, **kw: Any) -> None:
        counted.append(kw.get("thumbs_up"))

    monkeypatch.setattr("core.runs.learning.rate", rate)
    run_id = await proposed(svc)
    prefix = svc.settings.redis.key_prefix
    # Where Slack and Discord kept their votes before the people room.
    await svc.redis.set(f"{prefix}:slack:feedback:{run_id}:U0ALICE", "up")
    await svc.redis.set(f"{prefix}:discord:vote:{run_id}:1100000000000000021", "down")
    dan = Person("1100000000000000021", "Dan")
    assert isinstance(await people.rate(svc, run_id, ALICE, up=True), AlreadyRated)
    assert isinstance(await people.rate(svc, run_id, dan, up=True), AlreadyRated)
    assert isinstance(await people.rate(svc, run_id, BOB, up=True), Rated)
    assert counted == [True]


async def test_a_rating_that_failed_may_be_given_again(svc: Services, monkeypatch: Any) -> None:
    async def broken(svc: Services, run: RunState, **kw: Any) -> None:
        raise RuntimeError("library down")

    monkeypatch.setattr("core.runs.learning.rate", broken)
    run_id = await proposed(svc)
    assert isinstance(await people.rate(svc, run_id, ALICE, up=True), NotRated)
    monkeypatch.undo()
    monkeypatch.setattr("core.runs.learning.rate", lambda *a, **k: _none())
    assert isinstance(await people.rate(svc, run_id, ALICE, up=True), Rated)


async def _none() -> None:
    return None


async def test_a_reply_that_reaches_nobody_hints_once_per_person(svc: Services) -> None:
    run_id = await proposed(svc)
    first = await people.reply(svc, run_id, "hello?", ALICE)
    assert isinstance(first, NotDelivered) and first.first
    assert first.hint.startswith("The agents start once the proposal is approved")
    second = await people.reply(svc, run_id, "anyone?", ALICE)
    assert isinstance(second, NotDelivered) and not second.first
    bob = await people.reply(svc, run_id, "hi", BOB)
    assert isinstance(bob, NotDelivered) and bob.first


async def test_a_reply_to_a_running_run_is_delivered(svc: Services) -> None:
    run_id = await proposed(svc)
    assert (await control.approve_run(svc, run_id, ALICE.id)).ok
    outcome = await people.reply(svc, run_id, "also check trains", BOB)
    assert isinstance(outcome, Delivered) and not outcome.answered


async def test_people_are_named_by_the_name_they_were_last_seen_under(svc: Services) -> None:
    """Pages that hold only ids (the inspector, the web chat) name people as the people
    room last saw them; an id is never kept as a name."""
    run_id = await proposed(svc)
    await people.decide(svc, run_id, Person("U0ALICE", "Ali"), Reject(), who=WHO)
    await people.reply(svc, run_id, "hello", Person("console", "console"))
    await people.request(svc, "a task", BOB)
    assert await people.names(svc, ["U0ALICE", "U0BOB", "console", "U0NOBODY", ""]) == {
        "U0ALICE": "Ali",
        "U0BOB": "Bob",
    }


async def test_files_in_a_reply_are_taken_only_while_the_run_runs(svc: Services) -> None:
    run_id = await proposed(svc)
    assert not await people.takes_files(svc, run_id)
    await _set(svc, run_id, status=RunStatus.RUNNING)
    assert await people.takes_files(svc, run_id)
    await _set(svc, run_id, status=RunStatus.COMPLETED)
    assert not await people.takes_files(svc, run_id)
    assert people.with_attached(svc, " the numbers ", ()) == "the numbers"
