"""The save script tells its own save (sent again after a lost reply) from another
delivery's: the same token finds ``SAVED_BEFORE``, another finds ``STALE``."""

from __future__ import annotations

from typing import Any

from core.llm.scripted import ScriptedModel
from core.runs.control import start_run
from core.scheduler import RecordingScheduler
from core.state.turn_script import COMMIT_SCRIPT, Commit, script_args
from core.types import AgentSpec
from tests.conftest import make_settings


async def test_the_same_save_sent_twice_is_saved_once_and_known_as_its_own(
    make_services, any_redis
) -> None:
    svc = make_services(make_settings(), ScriptedModel(), redis=any_redis, start=False)
    svc.scheduler = RecordingScheduler()
    root = AgentSpec(name="O", role="orchestrator")
    run_id = await start_run(svc, "t", root)
    akey = svc.store.keys.agent(run_id, root.id)
    counter = f"{svc.store.keys.run(run_id)}:test-counter"
    save: Any = svc.redis.register_script(COMMIT_SCRIPT)

    def argv(token: str) -> list[Any]:
        # The turn's writes: seq moves on, and a counter shows how often they ran.
        return script_args(0, token, [(("HSET", akey, "seq", 1), {}), (("INCR", counter), {})])

    assert Commit.of(await save(keys=[akey], args=argv("attempt-1"))) is Commit.SAVED
    # redis-py sends the same call again (its reply was lost): known as this save.
    assert Commit.of(await save(keys=[akey], args=argv("attempt-1"))) is Commit.SAVED_BEFORE
    # Another delivery of the same turn: a duplicate.
    assert Commit.of(await save(keys=[akey], args=argv("attempt-2"))) is Commit.STALE
    assert int(await svc.redis.get(counter)) == 1, "the writes ran once"
    assert not Commit.STALE.saved and Commit.SAVED_BEFORE.saved
