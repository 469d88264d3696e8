"""Agents' mentions of people (``bots.slack.names``): named, never pinging, never shown as
escaped raw ids; broadcasts stay defused."""

from __future__ import annotations

import json

from bots.chat.ports import Milestone, Result
from bots.slack.mentions import People
from bots.slack.names import Names, content, named_now
from bots.slack.render import SlackRenderer
from core.types.run import RunStatus

TEXT = "ask <@U0ANA1> and <@W0BO2|bo> — cc <!channel> <!here> @everyone & <b>"


def names() -> Names:
    people = People(client=None)  # type: ignore[arg-type]
    people.names.update({"U0ANA1": "Ana Lima", "W0BO2": "Bo <Admin>"})
    return Names(people)


async def test_mentions_become_names_in_text_and_blocks() -> None:
    (message,) = SlackRenderer().render(Milestone(agent="Scout", reason="finished", text=TEXT))
    text = await names().resolve(message.text)
    assert "ask @Ana Lima and @Bo &lt;Admin&gt;" in text
    (result,) = SlackRenderer().render(
        Result(run_id="run_1", status=RunStatus.COMPLETED, text=TEXT, rateable=True)
    )
    blocks = json.dumps(await names().resolve_payload(result.payload), ensure_ascii=False)
    for shown in (text, blocks):
        assert "<@" not in shown and "&lt;@" not in shown and "U0ANA1" not in shown
        assert "<!channel>" not in shown and "<!here>" not in shown
        assert "&lt;!channel&gt;" in shown and "@\u2060everyone" in shown
    assert "@Ana Lima" in blocks


async def test_a_name_never_pushes_a_section_past_its_limit() -> None:
    marks = content("<@U0ANA1> " * 400)[:2990]  # cut to a section with the shorter marks
    section = {"type": "section", "text": {"type": "mrkdwn", "text": marks}}
    payload = await names().resolve_payload([section])
    assert isinstance(payload, list)
    assert len(payload[0]["text"]["text"]) <= 3000 and "@Ana Lima" in payload[0]["text"]["text"]


def test_named_now_uses_known_names_then_labels() -> None:
    shown = named_now(TEXT, {"U0ANA1": "Ana"})
    assert shown.startswith("ask @Ana and @bo") and "<" not in shown
