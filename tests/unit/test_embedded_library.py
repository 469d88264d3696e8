"""Embedded mode keeps the library between processes: a cohort saved under a name in one
``embedded_services`` (a ``caramba run``) is found by that name in the next, with its
record; the in-process Redis of each is new."""

from __future__ import annotations

import json
from pathlib import Path

from core.llm.scripted import ScriptedModel
from core.process.embedded import embedded_services
from core.process.embedded_library import records_path
from core.types import AgentSpec, Cohort
from tests.conftest import make_settings


async def test_a_name_saved_in_one_process_is_found_in_the_next(tmp_path: Path) -> None:
    settings = make_settings(
        library={"index_dir": str(tmp_path / "library"), "embedder": "hashing"},
        workspace={"dir": str(tmp_path / "workspaces")},
    )
    cohort = Cohort(
        task="Plan the offsite budget",
        agents=(AgentSpec(name="Planner", role="orchestrator", description="Budgets trips."),),
    )
    async with embedded_services(settings, ScriptedModel()) as svc:
        library = await svc.library()
        await library.save_cohort(cohort, name="offsite")
        await library.record_run(cohort.id, success=True)
    kept = json.loads(records_path(settings).read_text("utf-8"))["keys"]
    assert kept["caramba:library:names"] == ["hash", {"offsite": cohort.id}]

    async with embedded_services(settings, ScriptedModel()) as svc:
        assert await svc.redis.dbsize() > 0  # loaded before anything else runs
        library = await svc.library()
        entry = await library.get_by_name("offsite")
        assert entry.cohort is not None and entry.cohort.task == "Plan the offsite budget"
        assert (entry.record.runs, entry.record.successes) == (1, 1)
        found = await library.find_cohorts("budget for the team offsite")
        assert [m.entry.id for m in found] == [cohort.id]  # index and entries agree again


async def test_nothing_is_written_for_a_process_that_kept_nothing(tmp_path: Path) -> None:
    settings = make_settings(library={"index_dir": str(tmp_path / "library")})
    async with embedded_services(settings, ScriptedModel()):
        pass
    assert not records_path(settings).exists()
