"""Setup errors of the model: what a model needs before it can be called (its key), and the
one line that says what is wrong and what to do when a call shows it (no key, a refused
key, a model the server does not know, no server at the address).

The key check is quick and imports nothing for the common providers, so ``caramba run``
can say "export OPENAI_API_KEY=…" before it spends seconds importing litellm; other
providers are asked of litellm's ``validate_environment``. A server at ``llm.api_base`` (a
local one, or a proxy) is not asked for a key before the call unless ``api_key_env`` names
one: its 401 says which variable to set. Nor is vLLM (its key is optional).
"""

from __future__ import annotations

import os
from typing import Any

from core.config import LLMSettings, Settings
from core.errors import LLMError, LLMSetupError
from core.llm.failures import CallFailure
from core.llm.routes import is_direct

# The variables litellm reads a provider's key from (any one of them will do).
_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "hosted_vllm": ("HOSTED_VLLM_API_KEY",),
}
# Providers whose key is optional (a vLLM server started without --api-key takes none).
_OPTIONAL = ("hosted_vllm/",)
_OPENAI_NAMES = ("gpt-", "o1", "o3", "o4", "chatgpt-")
_WHICH_MODEL = "[llm] model or CARAMBA_LLM__MODEL"
_WHICH_BASE = "[llm] api_base or CARAMBA_LLM__API_BASE"


def key_variables(llm: LLMSettings, model: str, litellm: Any = None) -> tuple[str, ...]:
    """The environment variables that may hold ``model``'s key (empty: not known)."""
    if llm.api_key_env:
        return (llm.api_key_env,)
    provider = _provider(model)
    if provider in _KEYS:
        return _KEYS[provider]
    if is_direct(llm, model):
        return ("OPENAI_API_KEY",)  # what OpenAI-compatible clients send to any server
    if litellm is None:
        return ()
    try:
        report = litellm.validate_environment(model=model)
    except Exception:
        return ()
    return tuple(k for k in report.get("missing_keys") or () if k.endswith("_KEY"))


def missing_key(llm: LLMSettings, model: str, litellm: Any = None) -> LLMSetupError | None:
    """The error to raise before calling ``model`` when its key is not in the environment;
    None when it is, when ``llm.api_base`` is set (and no ``api_key_env``), or when unknown
    (without ``litellm``, providers outside the short list are not checked)."""
    if llm.api_key_env:
        return None if os.environ.get(llm.api_key_env) else no_key(llm, model)
    if llm.api_base or model.startswith(("scripted/", *_OPTIONAL)):
        return None
    variables = key_variables(llm, model, litellm)
    if not variables or any(os.environ.get(v) for v in variables):
        return None
    return no_key(llm, model, variables)


def check_keys(settings: Settings) -> LLMSetupError | None:
    """The first configured model (``llm.model``, ``[llm.models]``) whose key is missing."""
    llm = settings.llm
    for model in dict.fromkeys((llm.model, *llm.models.values())):
        problem = missing_key(llm, model)
        if problem is not None:
            return problem
    return None


def no_key(llm: LLMSettings, model: str, variables: tuple[str, ...] = ()) -> LLMSetupError:
    variables = variables or key_variables(llm, model)
    if not variables:
        return LLMSetupError(
            f"No API key for the model {model}",
            model=model,
            kind="no_key",
            hint="export the provider's key (see `caramba doctor`), or name its variable "
            "in [llm] api_key_env",
        )
    also = f" (or {', '.join(variables[1:])})" if variables[1:] else ""
    where = " — [llm] api_key_env names it" if llm.api_key_env else ""
    return LLMSetupError(
        f"No API key for the model {model}",
        model=model,
        kind="no_key",
        variable=variables[0],
        hint=f"export {variables[0]}=…{also}{where}",
    )


def call_error(
    llm: LLMSettings,
    model: str,
    failure: CallFailure,
    attempts: int,
    *,
    keyed: bool,
    litellm: Any = None,
) -> LLMError:
    """The error a call ends with after its last failed attempt, whichever client made it:
    the setup's one line (:func:`setup_error`), or an :class:`LLMError` saying what failed."""
    if failure.setup:
        return setup_error(
            llm,
            model,
            failure.setup,
            status=failure.status,
            attempts=attempts,
            keyed=keyed,
            address=failure.address,
            said=failure.message if failure.status else "",
            litellm=litellm,
        )
    return LLMError(
        failure.message,
        model=model,
        status=failure.status,
        attempts=attempts,
        retryable=failure.transient,
    )


def setup_error(
    llm: LLMSettings,
    model: str,
    kind: str,
    *,
    status: int | None,
    attempts: int,
    keyed: bool,
    address: str = "",
    said: str = "",
    litellm: Any = None,
) -> LLMSetupError:
    """The one line for a call that failed because of the setup (``kind`` as classified by
    :mod:`core.llm.failures`); ``keyed``: a real key was sent (not none, not a placeholder)."""
    code = f" (HTTP {status}{': ' + said if said else ''})" if status else ""
    server = llm.api_base or "the provider"
    if kind == "bad_key" and not keyed:
        kind = "no_key"
    if kind == "no_key":
        error = no_key(llm, model, key_variables(llm, model, litellm))
        error.status, error.attempts = status, attempts
        return error
    if kind == "bad_key":
        variables = key_variables(llm, model, litellm)
        which = variables[0] if variables else "the API key"
        return LLMSetupError(
            f"{server} refused the API key for the model {model}{code}",
            model=model,
            kind=kind,
            status=status,
            attempts=attempts,
            variable=variables[0] if variables else "",
            hint=f"put a valid key in {which} (export {which}=…)"
            if variables
            else "check the provider's API key",
        )
    if kind == "unknown_model":
        return LLMSetupError(
            f"{server} does not know the model {model}{code}",
            model=model,
            kind=kind,
            status=status,
            attempts=attempts,
            hint=f"set a model it serves in {_WHICH_MODEL}"
            + (f" (or check {_WHICH_BASE})" if llm.api_base else ""),
        )
    url = llm.api_base or address or "the provider"
    return LLMSetupError(
        f"Cannot reach the model server at {url}",
        model=model,
        kind="no_server",
        status=status,
        attempts=attempts,
        hint=f"start it, or fix {_WHICH_BASE}" if llm.api_base else "check the network",
    )


def _provider(model: str) -> str:
    if "/" in model:
        return model.split("/", 1)[0]
    return "openai" if model.startswith(_OPENAI_NAMES) else ""
