"""``caramba web --demo`` answers whatever is typed: a simple question by the router's
direct path (no card, the answer in the thread), a complex request with a cohort shaped
from its words (its card, then the teams' merged result)."""

from __future__ import annotations

from tests.integration.test_web_chat import chat_app, client, post, until


async def test_a_simple_question_is_answered_directly(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        asked = await post(c, "/chat", task="What is 2+2?")
        path = asked.headers["location"]
        done = await until(c, path, r'class="msg k-result"')
        assert "2+2 = 4" in done and "Budget lead" not in done
        assert 'value="approve"' not in done  # no card: the direct path
        run = await svc.store.get_run(path.rsplit("/", 1)[1])
        assert run.status.value == "completed" and run.result.startswith("4")


async def test_a_complex_request_gets_a_cohort_of_its_own(settings) -> None:
    async with chat_app(settings) as (app, svc), client(app) as c:
        asked = await post(c, "/chat", task="Compare Postgres, MySQL and SQLite for a web app")
        path = asked.headers["location"]
        card = await until(c, path, r'value="approve"')
        for name in ("Research lead", "Postgres researcher", "SQLite researcher", "Writer"):
            assert name in card
        assert "Budget lead" not in card
        await post(c, f"{path}/act", action="approve")
        done = await until(c, path, r'class="msg k-result"', timeout_s=60)
        assert "MySQL researcher: Finds the facts about MySQL — notes in" in done
        assert (
            done.index("<h2>Research</h2>") < done.index("<h2>Writing</h2>") and "Demo mode" in done
        )
        run = await svc.store.get_run(path.rsplit("/", 1)[1])
        assert run.status.value == "completed"
