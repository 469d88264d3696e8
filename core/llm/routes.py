"""Which client calls a model, and where the direct client sends the call.

A model goes to the direct OpenAI-compatible client (:mod:`core.llm.openai_compat`) when it is
named ``openai/…`` or ``hosted_vllm/…``, or when ``llm.api_base`` is set, unless
``llm.client = "litellm"`` or it is listed in ``llm.litellm_models``; every other model goes to
litellm. Pure: reads the settings and the environment's base-URL variables, no I/O.
"""

from __future__ import annotations

import os

from core.config import LLMSettings

# Provider prefixes that name an OpenAI-compatible endpoint; stripped from the model sent.
PREFIXES = ("openai/", "hosted_vllm/")
DEFAULT_BASE = "https://api.openai.com/v1"
# Where litellm (and the openai SDK) look for a base URL when none is configured.
_ENV_BASES = {"hosted_vllm/": ("HOSTED_VLLM_API_BASE",), "": ("OPENAI_BASE_URL", "OPENAI_API_BASE")}


def is_direct(llm: LLMSettings, model: str) -> bool:
    """True when the direct client calls ``model``, False when litellm does."""
    if llm.client == "litellm" or model in llm.litellm_models:
        return False
    return bool(llm.api_base) or model.startswith(PREFIXES)


def wire_model(model: str) -> str:
    """The model name the server knows (``openai/gpt-4o`` → ``gpt-4o``)."""
    for prefix in PREFIXES:
        if model.startswith(prefix):
            return model[len(prefix) :]
    return model


def base_url(llm: LLMSettings, model: str) -> str:
    """``llm.api_base``, else the provider's variable in the environment, else OpenAI's."""
    if llm.api_base:
        return llm.api_base
    prefix = "hosted_vllm/" if model.startswith("hosted_vllm/") else ""
    found = (os.environ.get(v) for v in _ENV_BASES[prefix])
    return next((b for b in found if b), DEFAULT_BASE)
