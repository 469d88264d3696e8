"""``caramba doctor``: the key that signs `caramba web`'s links, once ``[web_ui]`` has a
``base_url`` (chat threads then link to the run inspector)."""

from __future__ import annotations

from core.config import Settings
from core.errors import ConfigError
from core.process.doctor_types import Check, Level


def check_web_ui(settings: Settings) -> list[Check]:
    web = settings.web_ui
    if not web.configured:
        return []
    try:
        web.signing_key()
    except ConfigError as exc:
        return [Check("web links", Level.FAIL, str(exc).partition(" — ")[0], exc.hint)]
    return [Check("web links", Level.OK, f"{web.base_url}: signed with ${web.secret_env}")]
