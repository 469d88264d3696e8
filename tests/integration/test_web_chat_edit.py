"""Edit on the web chat's card (demo mode, the scripted offline model): choose an agent,
its form with instructions, tools, model and budgets; core's problems shown beside their
fields in plain words; the card shows the edited proposal and the edited agent is what
runs; who may edit is who may approve."""

from __future__ import annotations

import asyncio
import re
from html import unescape

from core.runs import people
from core.runs.edits import agents_of
from core.runs.outcomes import Requested
from core.types.agent import AgentSpec
from core.types.people import Person
from core.types.run import RunState, RunStatus
from tests.integration.test_web_chat import chat_app, client, post, until

LEAD = "Budget lead"


def _form_path(pick_html: str, name: str) -> str:
    link = rf'href="(/chat/[^"]+/edit/[^"]+)"><strong>{re.escape(name)}</strong>'
    found = re.search(link, pick_html)
    assert found is not None, pick_html
    return found.group(1).replace("&amp;", "&")


def _agent(run: RunState, name: str) -> AgentSpec:
    return next(a for a in agents_of(run) if a.name == name)


def _errors(html: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for field, text in re.findall(r'<p class="field-error" data-field="(\w+)">([^<]*)</p>', html):
        found.setdefault(field, []).append(unescape(text))
    return found


async def test_edit_an_agent_then_it_runs_as_edited(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        asked = await post(c, "/chat", task="Budget our offsite")
        path = asked.headers["location"]
        run_id = path.rsplit("/", 1)[1]
        card = await until(c, path, r'class="b-edit"')
        assert "approve, edit or reject" in card
        pick = await c.get(f"{path}/edit")
        assert pick.status_code == 200
        for name in ("Orchestrator", LEAD, "Trains", "Rooms", "Meals"):
            assert f"<strong>{name}</strong>" in pick.text
        form_path = _form_path(pick.text, LEAD)
        form = await c.get(form_path)
        assert form.status_code == 200
        assert 'name="prompt"' in form.text and 'value="write_file" checked' in form.text
        assert 'name="model"' in form.text
        assert 'name="tokens" type="text" inputmode="numeric" value="30000"' in form.text

        # Wrong values: each problem beside its field, in plain words; nothing changed.
        bad = await post(
            c,
            form_path,
            prompt="",
            tools="no_such_tool",
            model="nonsense-model-9",
            tokens="lots",
            cost="-1",
        )
        assert bad.status_code == 422
        errors = _errors(bad.text)
        assert errors["tokens"] == ["write a whole number of tokens, at least 1000"]
        assert errors["cost"] == ["write an amount in US dollars, e.g. 1.50"]
        # Budgets wrong: the form is shown again before core is asked.
        fixed = await c.post(
            form_path,
            data={
                "prompt": "",
                "tools": ["no_such_tool", "calculate"],
                "model": "nonsense-model-9",
                "tokens": "30000",
                "cost": "",
            },
            headers={"origin": "http://127.0.0.1:8400"},
        )
        errors = _errors(fixed.text)
        assert fixed.status_code == 422, fixed.text[-2000:]
        assert "instructions cannot be empty" in errors["prompt"][0]
        assert "there is no tool named no_such_tool" in errors["tools"][0]
        assert "'nonsense-model-9' is not a model Caramba knows" in errors["model"][0]
        assert _agent(await svc.store.get_run(run_id), LEAD).model == "scripted/offline"

        # A good edit: the card shows it.
        saved = await c.post(
            form_path,
            data={
                "prompt": "Split the budget <b>carefully</b>, then write budget.md.",
                "tools": ["calculate", "write_file", "read_file"],
                "model": "openai/gpt-4o-mini",
                "tokens": "40000",
                "cost": "",
            },
            headers={"origin": "http://127.0.0.1:8400"},
        )
        assert saved.status_code == 303 and saved.headers["location"] == path
        edited = await until(c, path, r"edited by the web chat")
        note = "Budget lead's instructions, tools, model, token budget edited by the web chat"
        assert note in unescape(edited)
        assert '<span class="model">openai/gpt-4o-mini</span> · 40,000 tokens' in edited
        assert "Split the budget &lt;b&gt;carefully&lt;/b&gt;" in edited
        assert "read_file" in edited and 'value="approve"' in edited

        assert (await post(c, f"{path}/act", action="approve")).status_code == 303
        await until(c, path, r'class="msg k-result"', timeout_s=60)
        run = await svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED
        lead = _agent(run, LEAD)
        ran = await svc.store.load_spec(run_id, lead.id)
        assert ran is not None
        spec = ran[0]
        assert spec.model == "openai/gpt-4o-mini" and spec.budget.max_tokens == 40_000
        assert spec.system_prompt.startswith("Split the budget")
        assert "read_file" in spec.tools and "finish" in spec.tools
        seen = [r for r in svc.llm.requests if r.agent_name == LEAD]  # type: ignore[attr-defined]
        assert seen and {r.model for r in seen} == {"openai/gpt-4o-mini"}

        # After the decision, Edit is refused in the thread.
        late = await c.get(f"{path}/edit")
        assert late.status_code == 303
        assert "can no longer be edited" in await until(c, path, r"no longer be edited")


async def test_only_who_may_approve_may_edit(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        asked = await people.request(svc, "Budget our offsite", Person("U-alice", "Alice"))
        assert isinstance(asked, Requested)
        run_id = asked.run_id
        for _ in range(300):
            if (await svc.store.get_run(run_id)).status is RunStatus.PROPOSED:
                break
            await asyncio.sleep(0.05)
        path = f"/chat/{run_id}"
        assert (await c.get(f"{path}/edit")).status_code == 303
        told = await until(c, path, r"Only Alice, who asked")  # by name, not "U-alice"
        assert "approvers" in told
        run = await svc.store.get_run(run_id)
        lead = _agent(run, LEAD)
        sneaky = await post(c, f"{path}/edit/{lead.id}", prompt="Do something else.")
        assert sneaky.status_code == 303
        after = _agent(await svc.store.get_run(run_id), LEAD)
        assert after.system_prompt != "Do something else."
        evil = await c.post(
            f"{path}/edit/{lead.id}",
            data={"prompt": "x"},
            headers={"origin": "http://evil.example"},
        )
        assert evil.status_code == 403
