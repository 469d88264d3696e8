"""``caramba doctor``: the key that signs `caramba web`'s links, once ``[web_ui]`` has a
``base_url`` (chat threads then link to the run inspector), and what the server trusts
(the Host names it answers to, the proxies whose headers it believes)."""

from __future__ import annotations

from core.config import Settings
from core.errors import ConfigError
from core.process.doctor_types import Check, Level


def check_web_ui(settings: Settings) -> list[Check]:
    web = settings.web_ui
    trust = Check("web access", Level.OK, web.trust())
    if "*" in web.allowed_hosts:
        trust = Check(
            "web access",
            Level.WARN,
            f'{web.trust()}: "*" answers to any name, so DNS rebinding is not refused',
            "list the names people use in [web_ui] allowed_hosts instead of *",
        )
    if not web.configured:
        return [trust] if web.allowed_hosts or web.forwarded_allow_ips else []
    try:
        web.signing_key()
    except ConfigError as exc:
        return [Check("web links", Level.FAIL, str(exc).partition(" — ")[0], exc.hint), trust]
    return [Check("web links", Level.OK, f"{web.base_url}: signed with ${web.secret_env}"), trust]
