"""``caramba schedule …`` against the real Redis (issue 28): add, a plain hint for words
it cannot read, list, pause, edit, resume, delete, and what is left in Redis."""

from __future__ import annotations

import re
import uuid

import pytest
from typer.testing import CliRunner

from bots.cli import app
from tests.conftest import REDIS_URL
from tests.integration.processes import unique_prefix

pytestmark = pytest.mark.integration
runner = CliRunner()


def test_schedules_from_the_command_line() -> None:
    with unique_prefix() as prefix:
        env = {
            "CARAMBA_REDIS__URL": REDIS_URL,
            "CARAMBA_REDIS__KEY_PREFIX": prefix,
            "COLUMNS": "300",
            "LOGNAME": "ana",
        }

        def cli(*args: str) -> tuple[int, str]:
            done = runner.invoke(app, ["schedule", *args], env=env)
            return done.exit_code, " ".join(done.output.split())

        code, out = cli("add", "every blursday", "count tickets")
        assert code == 1 and "I could not read “every blursday” as a schedule" in out
        code, out = cli("add", "every 10 seconds", "count tickets")
        assert code == 1
        code, out = cli(
            "add",
            "every weekday at 9:00",
            "count the tickets",
            "--budget",
            "2",
            "--tz",
            "Europe/Paris",
            "--place",
            "slack:T1:C1",
        )
        assert code == 0, out
        assert "“every weekday at 9:00” (Europe/Paris), $2.00 a firing" in out
        sid = re.search(r"id (sch_[0-9a-f]+)", out).group(1)  # type: ignore[union-attr]
        code, out = cli("add", "0 9 * * 1", "x", "--place", "nonsense")
        assert code != 0
        code, out = cli("list", "--place", "slack:T1:C1")
        assert code == 0 and sid in out and "count the tickets" in out
        assert cli("pause", sid)[1].startswith("Paused by ana")
        code, out = cli("edit", sid, "--budget", "3")
        assert code == 0 and "asks for approval again" in out and "$3.00" in out
        code, out = cli("edit", sid, "--budget", "999")
        assert code == 1 and "more than the $20.00 allowed" in out
        assert cli("resume", sid)[1].startswith("Resumed by ana")
        assert cli("delete", sid)[1].startswith("Deleted by ana")
        code, out = cli("delete", sid)
        assert code == 1 and "no longer exists" in out
        code, out = cli("pause", f"sch_{uuid.uuid4().hex[:10]}")
        assert code == 1
        assert cli("list")[1] == "No schedules."
