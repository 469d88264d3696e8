"""docs/redis-acl.md's ready-to-paste user is the one the TLS + ACL test runs with
(tests/integration/redis_tls.py), and every key Caramba's broker writes is under the
prefix that user is given."""

from __future__ import annotations

import re

from core.config import PROJECT_ROOT
from tests.conftest import make_settings
from tests.integration.redis_tls import COMMANDS, acl_rule

DOC = PROJECT_ROOT / "docs" / "redis-acl.md"


def pasted_rule() -> list[str]:
    (line,) = re.findall(r"^ACL SETUSER caramba (.+)$", DOC.read_text(), re.MULTILINE)
    return line.split()


def test_the_documented_user_is_the_tested_one() -> None:
    documented = pasted_rule()
    tested = acl_rule("caramba", "CHANGE-ME")
    assert documented == tested
    assert sorted(w[1:] for w in documented if w.startswith("+")) == sorted(COMMANDS)
    assert "+@all" not in documented and "allkeys" not in documented
    assert [w for w in documented if w.startswith("~")] == ["~caramba:*"]


def test_no_command_twice_and_none_that_reaches_past_the_prefix() -> None:
    assert len(set(COMMANDS)) == len(COMMANDS)
    for refused in ("keys", "flushdb", "flushall", "config", "info", "debug", "monitor"):
        assert refused not in COMMANDS


def test_the_broker_keys_are_under_the_prefix() -> None:
    from tasks.app import make_app, transport_options

    settings = make_settings(redis={"url": "redis://127.0.0.1:6379/0", "key_prefix": "acme"})
    assert transport_options(settings)["global_keyprefix"] == "acme:celery:"
    # Celery's remote control is off (celery.remote_control): no pidbox channel to allow.
    assert [w for w in acl_rule("acme", "x") if w.startswith("&")] == ["&acme:*"]
    app = make_app(settings)
    try:
        assert app.conf.worker_enable_remote_control is False
    finally:
        app.close()
