"""Which model names a person may choose (an edit of a proposal): the ones configured,
and the ones litellm's price map knows — read from its bundled JSON, without importing
litellm (3 s and 195 MB in a chat bot's process)."""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

from core.config import Settings

_MAP_FILE = "model_prices_and_context_window_backup.json"


@functools.cache
def _litellm_models() -> frozenset[str]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    path = Path(next(iter(spec.submodule_search_locations))) / _MAP_FILE
    try:
        names = json.loads(path.read_text())
    except (OSError, ValueError):
        return frozenset()
    return frozenset(k for k in names if k != "sample_spec")


def configured_models(settings: Settings) -> list[str]:
    llm = settings.llm
    return sorted({llm.model, *llm.models.values(), *llm.prices})


def _provider(name: str) -> str:
    return name.split("/", 1)[0] if "/" in name else ""


def model_problem(settings: Settings, name: str) -> str | None:
    """None if ``name`` can be used; else why not, and what to do, in plain words."""
    name = name.strip()
    if name in configured_models(settings):
        return None
    # A local OpenAI-compatible server (llm.api_base) serves names no map knows: any name
    # for the configured provider is the server's to accept.
    if settings.llm.api_base and _provider(name) == _provider(settings.llm.model):
        return None
    known = _litellm_models()
    if name in known or (_provider(name) and name.split("/", 1)[1] in known):
        return None
    return (
        f"{name!r} is not a model Caramba knows. Use one of the configured models "
        f"({', '.join(configured_models(settings))}) or a model name litellm knows, such as "
        "openai/gpt-4o-mini; an admin can add a model under [llm.prices] in config.toml."
    )
