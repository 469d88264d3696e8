"""``caramba doctor``: check the configuration and the services, say what to fix."""

from __future__ import annotations

import os

from core.config import LLMSettings, Settings
from core.errors import CarambaError, ConfigError
from core.llm.gateway import import_litellm
from core.llm.routes import is_direct
from core.llm.setup import key_variables, missing_key
from core.process.doctor_discord import check_discord
from core.process.doctor_images import check_images
from core.process.doctor_keeper import check_keeper
from core.process.doctor_live import check_library, check_model_calls
from core.process.doctor_mcp import check_mcp
from core.process.doctor_sandbox import check_sandbox
from core.process.doctor_slack import check_slack
from core.process.doctor_types import Check, Level
from core.process.doctor_web import check_web_ui
from core.prompts import PromptLibrary
from core.state.reach import describe_redis, redis_problem, redis_version


async def run_checks(settings: Settings) -> list[Check]:
    checks = [
        Check("config", Level.OK, f"loaded {settings.config_file or 'built-in defaults'}"),
        _check_prompts(settings),
        await _check_redis(settings),
        *_check_model(settings),
        check_library(settings),
        check_sandbox(settings),
        _check_web_search(settings),
        check_images(settings),
        *check_web_ui(settings),
        # The chat platforms' tokens are tried with Slack and Discord themselves.
        *await check_slack(settings),
        await check_discord(settings),
        *await check_mcp(settings),
    ]
    keeper = await check_keeper(settings)
    if keeper is not None:
        checks.insert(3, keeper)  # after the redis row
    if not any(c.level is Level.FAIL for c in checks if c.name in ("model", "api key")):
        checks += await check_model_calls(settings)
    return checks


def _check_web_search(settings: Settings) -> Check:
    from core.tools.web.search import SearchUnavailable, check_backend

    web = settings.web
    try:
        check_backend(web)
    except SearchUnavailable as exc:
        return Check(
            "web search",
            Level.WARN,
            f"web_search is not offered: {exc}",
            "configure [web] in config.toml (fetch_url and download work without it)",
        )
    where = f" at {web.search_url}" if web.search_url else ""
    return Check("web search", Level.OK, f"{web.search_backend}{where}")


def _check_prompts(settings: Settings) -> Check:
    try:
        library = PromptLibrary(settings.prompts_dir)
        names = library.names()
    except CarambaError as exc:
        return Check(
            "prompts",
            Level.FAIL,
            str(exc),
            'point prompts.dir at a folder of templates, or set prompts.dir = "" '
            "for the packaged ones",
        )
    missing = [f"{role} → {t}" for role, t in settings.prompts.roles.items() if t not in names]
    if missing:
        return Check(
            "prompts",
            Level.FAIL,
            f"templates not found: {', '.join(missing)}",
            f"add them to {library.source} or fix [prompts.roles]",
        )
    return Check("prompts", Level.OK, f"{len(names)} templates in {library.source}")


async def _check_redis(settings: Settings) -> Check:
    if settings.redis.embedded:
        return Check(
            "redis",
            Level.WARN,
            "redis.url is empty: embedded mode (in-process, nothing survives a restart)",
            "export CARAMBA_REDIS__URL=redis://127.0.0.1:6379/0 for production",
        )
    # Which Redis: host, TLS, user, Sentinel service; never a password.
    try:
        shown = describe_redis(settings.redis)
    except ConfigError as exc:
        return Check("redis", Level.FAIL, str(exc).removesuffix(f" — {exc.hint}"), exc.hint)
    problem = await redis_problem(settings.redis)
    if problem is not None:
        detail = str(problem).removesuffix(f" — {problem.hint}")
        return Check("redis", Level.FAIL, detail, problem.hint)
    try:
        version = await redis_version(settings.redis)
    except Exception as exc:
        return Check("redis", Level.FAIL, f"{shown} answers but not to INFO: {exc}", "")
    if tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < (6, 2):
        return Check(
            "redis", Level.FAIL, f"Redis {version} lacks XAUTOCLAIM", "use Redis 6.2 or newer"
        )
    return Check("redis", Level.OK, f"{shown} answers (Redis {version})")


def _check_model(settings: Settings) -> list[Check]:
    llm = settings.llm
    out = [
        Check(
            "model",
            Level.OK,
            f"{llm.model}"
            + (f" via {llm.api_base}" if llm.api_base else "")
            + (f"; per role: {dict(llm.models)}" if llm.models else ""),
        )
    ]
    if llm.api_key_env:
        if os.environ.get(llm.api_key_env):
            out.append(Check("api key", Level.OK, f"{llm.api_key_env} is set"))
        else:
            out.append(
                Check(
                    "api key",
                    Level.FAIL,
                    f"{llm.api_key_env} is not set",
                    f"export {llm.api_key_env}=...",
                )
            )
        return out
    if llm.api_base:
        out.append(Check("api key", Level.OK, "custom api_base; no provider key required"))
        return out
    missing: list[str] = []
    for model in dict.fromkeys((llm.model, *llm.models.values())):
        problem = _missing_key(llm, model)
        if isinstance(problem, str):
            out.append(Check("api key", Level.WARN, problem))
        elif problem is not None:
            missing += [v for v in problem if v not in missing]
    if missing:
        out.append(
            Check(
                "api key",
                Level.FAIL,
                f"not set: {', '.join(missing)}",
                f"export {' '.join(f'{k}=...' for k in missing)} (or set "
                "llm.api_base to a local OpenAI-compatible server)",
            )
        )
    else:
        out.append(Check("api key", Level.OK, "provider keys present"))
    return out


def _missing_key(llm: LLMSettings, model: str) -> tuple[str, ...] | str | None:
    """The variables one of which ``model`` needs and none is set; a sentence when that cannot
    be told; None when its key is there. The same check a call makes first (litellm is asked
    only for a provider that check does not know, and only for a model litellm calls)."""
    if not is_direct(llm, model) and not key_variables(llm, model):
        try:
            report = import_litellm().validate_environment(model=model)
        except Exception as exc:
            return f"cannot tell what {model} needs: {exc}"
        return tuple(report.get("missing_keys") or ()) or None
    problem = missing_key(llm, model)
    return None if problem is None else key_variables(llm, model)
