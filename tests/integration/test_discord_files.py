"""Files through Discord, offline: attachments on a request land in the run's workspace
under inputs/ (programs refused, the request then not started), the files the agents
leave under outputs/ come back as attachments, a long result goes up as a file, and a
reply with files comes through a form with a file upload."""

from __future__ import annotations

from typing import Any

import pytest

from core.llm.scripted import Reply, ScriptedModel, call
from core.types.run import RunStatus
from tests.fakes import discord_limits as limits
from tests.integration.test_discord_bot import custom_ids, harness
from tests.integration.test_slack_http import asking_design, responder
from tests.planning_helpers import ROUTE_PLAN, as_json, design

pytestmark = pytest.mark.integration
CSV = b"city,fare\nBER,49\nMUC,55\n"
LONG = "A long answer. " * 600  # 9,000 characters: past discord.result_file_chars


def writing_model() -> ScriptedModel:
    """The orchestrator writes outputs/fares.csv, then finishes with a long result."""

    def answer(request: Any) -> Reply:
        if request.agent_name != "Orchestrator":
            return responder(request)
        said = str([m.content for m in request.messages])
        if "fares.csv" not in said or "inputs/brief.csv" not in said:
            return Reply(
                calls=(call("write_file", {"path": "outputs/fares.csv", "content": "BER,49\n"}),)
            )
        return Reply(calls=(call("finish", {"result": LONG}),))

    plan = design()
    plan["agents"][0]["tools"] = ["write_file"]
    model = ScriptedModel(responder=answer)
    model.script("router", ROUTE_PLAN)
    model.script("planner", as_json(plan))
    return model


async def test_files_in_and_out(make_services, real_redis) -> None:
    async with harness(make_services, real_redis, model=writing_model()) as h:
        fake = h.fake
        refused = await fake.mention(
            "general", "alice", "Use these.", attachments=[("tool.exe", b"MZ\x90\x00")]
        )

        def told() -> bool:
            thread = fake.thread_of(refused)
            return thread is not None and any(
                "could not take" in t and "tool.exe" in t for t in h.thread_texts(thread["id"])
            )

        await fake.wait_until(told)
        assert not h.cards(), "a request with a refused file is not started"

        asked = await fake.mention(
            "general", "alice", "Compare the fares in the file.", attachments=[("brief.csv", CSV)]
        )
        card, run_id = await h.card()
        assert await h.svc.workspace.read(run_id, "inputs/brief.csv") == CSV
        run = await h.svc.store.get_run(run_id)
        assert [f.path for f in run.files] == ["inputs/brief.csv"]
        await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await h.runs_end()
        assert (await h.svc.store.get_run(run_id)).status is RunStatus.COMPLETED
        thread = fake.thread_of(asked)
        assert thread is not None
        attached = {
            a["filename"]: fake.file_bytes(a)
            for m in fake.channel_messages(thread["id"])
            for a in m["attachments"]
        }
        assert attached["fares.csv"] == b"BER,49\n"
        (result_file,) = [name for name in attached if name.startswith("result")]
        assert attached[result_file].decode() == LONG
        last = fake.channel_messages(thread["id"])[-1]["content"]
        assert len(last) <= 2000 and "A long answer." in last


async def test_a_reply_with_files_from_the_status_messages_form(make_services, real_redis) -> None:
    """ "Reply with files" under a running run's status: a modal with a FileUpload; the file
    lands under inputs/ and the words (with the file listed) answer the agent's question."""
    async with harness(make_services, real_redis, plan=asking_design()) as h:
        fake = h.fake
        asked = await fake.mention("general", "alice", "Book a flight: which airport is best?")
        card, run_id = await h.card()
        thread = fake.thread_of(asked)
        assert thread is not None
        await fake.click(card["id"], f"caramba:approve:{run_id}", "alice")
        await fake.wait_until(
            lambda: any("BER or a nearby" in t for t in h.thread_texts(thread["id"])), 10
        )
        button = f"caramba:files:{run_id}"
        status = next(m for m in fake.channel_messages(thread["id"]) if button in custom_ids(m))
        opened = await fake.click(status["id"], button, "alice")
        assert (await fake.wait_ack(opened)).json["type"] == 9, "the form"
        modal, _ = fake.modals[f"caramba:reply:{run_id}"]
        (label,) = [c for c in modal["components"] if c["type"] == limits.LABEL]
        assert label["component"]["type"] == limits.FILE_UPLOAD
        values = {"text": "BER, please", "files": [("brief.csv", CSV, "text/csv")]}
        sent = await fake.submit_modal(f"caramba:reply:{run_id}", values, "alice")
        await fake.wait_ack(sent)
        await fake.wait_until(lambda: bool(sent.followup_ids), 10)
        said = fake.message(sent.followup_ids[0])
        assert said["flags"] & 64 and "Sent to the agents (inputs/brief.csv)" in said["content"]
        await h.runs_end()
        assert await h.svc.workspace.read(run_id, "inputs/brief.csv") == CSV
        assert (await h.svc.store.get_run(run_id)).status is RunStatus.COMPLETED
    model = h.svc.llm
    assert isinstance(model, ScriptedModel)
    told = "\n".join(str(m.content) for r in model.requests for m in r.messages)
    assert "BER, please" in told and "inputs/brief.csv" in told
