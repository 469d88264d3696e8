"""MCP elicitation without a server: a form's fields from the 2026 schema shapes, the
check of what people type, and ``elicit`` waiting for ``people.answer_form`` (who may
answer, once, accept / decline / cancel, the time-out) on fakeredis."""

from __future__ import annotations

import asyncio
from typing import Any

import fakeredis
import pytest

from core.agent.context import ToolContext
from core.llm.scripted import ScriptedModel
from core.runs import control, people
from core.runs.outcomes import Done, FormInvalid, Refused, ToFill
from core.services import Services
from core.state import forms
from core.tools import elicit as elicit_module
from core.tools.elicit import ElicitAnswer, ElicitRequest, elicit
from core.types import AgentSpec
from core.types.agent import AgentState
from core.types.events import FormAsked, FormClosed
from core.types.forms import Typed, check, fields_of
from core.types.people import Person
from tests.conftest import make_settings

ALICE = Person("U0ALICE", "Alice")
BOB = Person("U0BOB", "Bob")
BOSS = Person("U0BOSS", "Boss")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 2},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 1, "maximum": 150},
        "score": {"type": "number"},
        "agree": {"type": "boolean", "title": "Agree", "default": False},
        "colour": {"type": "string", "enum": ["red", "green"]},
        "size": {
            "type": "string",
            "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
        },
        "old": {"type": "string", "enum": ["a", "b"], "enumNames": ["Apple", "Banana"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 1},
        "pets": {
            "type": "array",
            "items": {
                "anyOf": [{"const": "cat", "title": "Cat"}, {"const": "dog", "title": "Dog"}]
            },
        },
    },
    "required": ["name", "age", "colour"],
}


def test_fields_follow_the_schema_shapes() -> None:
    f = {x.name: x for x in fields_of(SCHEMA)}
    assert [x.name for x in fields_of(SCHEMA)] == list(SCHEMA["properties"])
    assert (f["name"].label, f["name"].kind, f["name"].required) == ("Your name", "text", True)
    assert f["age"].kind == "integer" and f["score"].kind == "number"
    assert f["agree"].kind == "boolean" and f["agree"].default is False
    assert [(o.value, o.label) for o in f["size"].options] == [("s", "Small"), ("l", "Large")]
    assert [o.label for o in f["old"].options] == ["Apple", "Banana"]
    assert f["colour"].kind == "choice" and f["tags"].kind == "choices"
    assert [o.label for o in f["pets"].options] == ["Cat", "Dog"]
    assert fields_of(None) == ()


def test_check_gives_content_or_plain_words() -> None:
    fields = fields_of(SCHEMA)
    typed: dict[str, Typed] = {"name": " Ana ", "age": "42", "score": "1.5", "agree": True,
                               "colour": "red", "size": "l", "tags": ["x"],
                               "pets": ["cat", "dog"], "email": ""}  # fmt: skip
    content, problems = check(fields, typed)
    assert problems == []
    assert content == {"name": "Ana", "age": 42, "score": 1.5, "agree": True, "colour": "red",
                       "size": "l", "tags": ["x"], "pets": ["cat", "dog"]}  # fmt: skip
    bad: dict[str, Typed] = {"name": "A", "email": "nope", "age": "200", "score": "many",
                             "colour": "blue", "tags": ["x", "y"]}  # fmt: skip
    _, problems = check(fields, bad)
    assert [p.text for p in problems] == [
        "Your name needs at least 2 characters.",
        "email must be an email address.",
        "age must be at most 150.",
        "score must be a number.",
        "colour: pick one of red, green.",
        "tags: pick at most 1.",
    ]
    _, missing = check(fields, {"age": "x1"})
    assert [(p.field, p.text) for p in missing] == [("name", "Your name is required."),
        ("age", "age must be a whole number."), ("colour", "colour is required.")]  # fmt: skip


@pytest.fixture
async def svc(make_services: Any) -> Services:
    settings = make_settings(approval={"approvers": ["U0BOSS"]}, mcp={"elicitation_timeout_s": 30})
    redis = fakeredis.FakeAsyncRedis(decode_responses=True)
    return make_services(settings, ScriptedModel(), redis=redis, start=False)


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit_module, "POLL_S", 0.02)


async def _ctx(svc: Services) -> ToolContext:
    spec = AgentSpec(name="Solo", role="solo", tools=("finish",))
    run_id = await control.propose_run(svc, "a task", spec, requested_by=ALICE.id)
    return ToolContext(svc, AgentState(spec=spec, run_id=run_id))


async def _asked(svc: Services, ctx: ToolContext, request: ElicitRequest) -> tuple[Any, FormAsked]:
    waiting = asyncio.create_task(elicit(ctx, request))
    for _ in range(200):
        found = await forms.open_forms(svc.store, ctx.run_id)
        if found:
            break
        await asyncio.sleep(0.01)
    events = await svc.store.read_events(ctx.run_id)
    asked = [e for _, e in events if isinstance(e, FormAsked)]
    assert len(asked) == 1
    return waiting, asked[0]


async def test_the_requester_fills_in_the_form_once(svc: Services) -> None:
    ctx = await _ctx(svc)
    request = ElicitRequest(server="shop", message="Your details?", schema=SCHEMA, url=None)
    waiting, asked = await _asked(svc, ctx, request)
    assert asked.server == "shop" and [f.name for f in asked.fields][:2] == ["name", "email"]

    refused = await people.open_form(svc, ctx.run_id, asked.form_id, BOB)
    assert isinstance(refused, Refused) and "can answer this form" in refused.reason
    opened = await people.open_form(svc, ctx.run_id, asked.form_id, ALICE)
    assert isinstance(opened, ToFill) and opened.message == "Your details?"

    wrong = await people.answer_form(svc, ctx.run_id, asked.form_id, ALICE, "accept", {"age": "0"})
    assert isinstance(wrong, FormInvalid) and "age must be at least 1." in wrong.lines
    typed = {"name": "Ana", "age": "7", "colour": "green"}
    done = await people.answer_form(svc, ctx.run_id, asked.form_id, ALICE, "accept", typed)
    assert isinstance(done, Done) and done.line == "Sent by Alice to shop."
    answer = await asyncio.wait_for(waiting, 5)
    # An unticked box is an answer too: False.
    want = {"name": "Ana", "age": 7, "agree": False, "colour": "green"}
    assert answer == ElicitAnswer("accept", want)

    again = await people.answer_form(svc, ctx.run_id, asked.form_id, BOSS, "decline")
    assert isinstance(again, Refused) and "closed" in again.reason
    closed = [e for _, e in await svc.store.read_events(ctx.run_id) if isinstance(e, FormClosed)]
    assert [(c.action, c.by) for c in closed] == [("accept", ALICE.id)]


async def test_an_approver_declines_a_link(svc: Services) -> None:
    ctx = await _ctx(svc)
    request = ElicitRequest(server="bank", message="Log in", schema=None, url="https://x.test/a")
    waiting, asked = await _asked(svc, ctx, request)
    assert asked.url == "https://x.test/a" and asked.fields == ()
    done = await people.answer_form(svc, ctx.run_id, asked.form_id, BOSS, "decline")
    assert isinstance(done, Done) and done.line == "Declined by Boss for bank."
    assert await asyncio.wait_for(waiting, 5) == ElicitAnswer("decline")


async def test_nobody_answers_in_time_so_the_server_reads_cancel(make_services: Any) -> None:
    settings = make_settings(mcp={"elicitation_timeout_s": 0.2})
    redis = fakeredis.FakeAsyncRedis(decode_responses=True)
    svc = make_services(settings, ScriptedModel(), redis=redis, start=False)
    ctx = await _ctx(svc)
    request = ElicitRequest(server="shop", message="Anything?", schema={}, url=None)
    waiting, asked = await _asked(svc, ctx, request)
    assert await asyncio.wait_for(waiting, 5) == ElicitAnswer("cancel")
    late = await people.answer_form(svc, ctx.run_id, asked.form_id, ALICE, "accept", {})
    assert isinstance(late, Refused)
    closed = [e for _, e in await svc.store.read_events(ctx.run_id) if isinstance(e, FormClosed)]
    assert [(c.action, c.timed_out) for c in closed] == [("cancel", True)]


async def test_the_run_ending_cancels_the_form(svc: Services) -> None:
    ctx = await _ctx(svc)
    request = ElicitRequest(server="shop", message="Anything?", schema=SCHEMA, url=None)
    waiting, asked = await _asked(svc, ctx, request)
    assert isinstance(await people.cancel(svc, ctx.run_id, ALICE), Done)
    assert await asyncio.wait_for(waiting, 5) == ElicitAnswer("cancel")
    late = await people.answer_form(svc, ctx.run_id, asked.form_id, ALICE, "decline")
    assert isinstance(late, Refused) and "closed" in late.reason
