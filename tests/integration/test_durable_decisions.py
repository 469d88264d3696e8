"""The writes besides a turn's commit that must survive a failover ask for the replicas
(``redis.replicas_to_ack``, ``core.state.durable_writes``): a person's decision on a
proposal, a tool call's approval, an outbox entry. The test Redis has no replica, so each
ask comes back short and is counted (``short_acks``); with ``replicas_to_ack = 0`` none is
sent (the WAIT's marker key is never written)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bots.chat.outbox import Entry, Outbox
from bots.chat.store import ChatStore
from core.llm.scripted import ScriptedModel
from core.runs import control, people
from core.runs.approval import Approve, Reject
from core.runs.outcomes import Done, Refused
from core.services import Services
from core.state import approvals as book
from core.state.durable_writes import short_acks
from core.types import AgentSpec
from core.types.approvals import ApprovalDecision, ApprovalRequest
from core.types.people import Person
from tests.conftest import REDIS_URL, make_settings

pytestmark = pytest.mark.integration

ALICE = Person("U0ALICE", "Alice")
BOB = Person("U0BOB", "Bob")


def _services(make_services: Any, real_redis: Any, replicas: int) -> Services:
    settings = make_settings(
        redis={"url": REDIS_URL, "replicas_to_ack": replicas, "replicas_ack_timeout_ms": 5}
    )
    return make_services(settings, ScriptedModel(), redis=real_redis, start=False)


async def _proposed(svc: Services) -> str:
    spec = AgentSpec(name="Solo", role="solo", tools=("finish",))
    return await control.propose_run(svc, "a task", spec, requested_by=ALICE.id)


def _request(run_id: str, approval_id: str) -> ApprovalRequest:
    return ApprovalRequest(
        id=approval_id,
        run_id=run_id,
        agent_id="a1",
        agent_name="Writer",
        call_id="c1",
        tool="write_file",
        purpose="Writes a file.",
        arguments='{"path": "notes.md"}',
        asked_at=time.time(),
        deadline=time.time() + 60,
    )


async def test_a_persons_decision_on_a_proposal_asks_for_the_replicas(
    make_services: Any, real_redis: Any
) -> None:
    svc = _services(make_services, real_redis, 1)
    approved, rejected = await _proposed(svc), await _proposed(svc)
    assert short_acks(real_redis) == 0  # proposing is not a decision
    # Refused (Bob may not decide): nothing written, nothing asked.
    assert isinstance(await people.decide(svc, approved, BOB, Approve()), Refused)
    assert short_acks(real_redis) == 0
    assert isinstance(await people.decide(svc, approved, ALICE, Approve()), Done)
    assert short_acks(real_redis) == 1
    assert isinstance(await people.decide(svc, rejected, ALICE, Reject(reason="not now")), Done)
    assert short_acks(real_redis) == 2
    # Decided already: the second click changes nothing and asks nothing.
    assert isinstance(await people.decide(svc, rejected, ALICE, Approve()), Refused)
    assert short_acks(real_redis) == 2


async def test_a_tool_calls_approval_asks_for_the_replicas(
    make_services: Any, real_redis: Any
) -> None:
    svc = _services(make_services, real_redis, 1)
    request = _request("run_tool", "ap1")
    made = ApprovalDecision(choice="once", by=ALICE.id, name="Alice", at=time.time())
    assert await book.decide(svc.store, "run_tool", request, made) is None
    assert short_acks(real_redis) == 1
    # A second click loses to the first decision: nothing written, nothing asked.
    late = ApprovalDecision(choice="deny", by=BOB.id, name="Bob", at=time.time())
    first = await book.decide(svc.store, "run_tool", request, late)
    assert first is not None and first.by == ALICE.id
    assert short_acks(real_redis) == 1
    # Approved for the whole run (the grant is written too): one ask, after both.
    whole = ApprovalDecision(choice="run", by=ALICE.id, name="Alice", at=time.time())
    assert await book.decide(svc.store, "run_tool", _request("run_tool", "ap2"), whole) is None
    assert await book.granted(svc.store, "run_tool", "write_file")
    assert short_acks(real_redis) == 2


async def test_an_outbox_entry_asks_for_the_replicas(make_services: Any, real_redis: Any) -> None:
    svc = _services(make_services, real_redis, 1)
    outbox = Outbox(ChatStore.of(svc, "slack"))
    entry = Entry(run="run_out", what="result", text="Done.")
    await outbox.add("run_out", [entry])
    assert short_acks(real_redis) == 1
    assert (await outbox.head("run_out")).entry == entry
    # Only the status message's content (updated in place, its latest shown): no ask.
    from bots.chat.ports import Rendered

    await outbox.add("run_out", [], Rendered(text="Working", payload=[]))
    assert short_acks(real_redis) == 1


async def test_no_replica_asked_when_replicas_to_ack_is_0(
    make_services: Any, real_redis: Any
) -> None:
    svc = _services(make_services, real_redis, 0)
    run_id = await _proposed(svc)
    assert isinstance(await people.decide(svc, run_id, ALICE, Approve()), Done)
    made = ApprovalDecision(choice="once", by=ALICE.id, name="Alice", at=time.time())
    assert await book.decide(svc.store, "run_tool", _request("run_tool", "ap1"), made) is None
    await Outbox(ChatStore.of(svc, "slack")).add("run_out", [Entry(run="run_out", what="x")])
    assert short_acks(real_redis) == 0
    assert await real_redis.exists(svc.store.keys.replicated()) == 0
