"""Images for models that see them: which models do (by name, the families known to take
image input), and the chat messages with the images tools returned shown after the tool
results (a ``tool`` message cannot carry images in the OpenAI format, so they follow in a
``user`` message of text and ``image_url`` parts)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from core.types.chat import ChatMessage

# Model families that take image input, matched anywhere in the configured name
# ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "ollama/llava:13b").
_SEES = re.compile(
    r"gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-5|\bo[134]\b|o[34]-mini|claude-3|claude-(sonnet|opus|haiku)-4"
    r"|gemini|pixtral|llava|vision|[-_.]vl\b|-vl-|qwen.*vl|llama-4|gemma-3|mistral-(small|medium)",
    re.IGNORECASE,
)


def sees_images(model: str) -> bool:
    """Whether ``model`` takes image input (by its name)."""
    return bool(_SEES.search(model))


def wire_messages(messages: Sequence[ChatMessage], model: str) -> list[dict[str, Any]]:
    """``messages`` in the OpenAI wire shape; the images of a run of tool results follow
    it as one user message when ``model`` sees images (else they are left out: the
    results name the files they were saved as)."""
    if not any(m.images for m in messages) or not sees_images(model):
        return [m.to_openai() for m in messages]
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for m in messages:
        if pending and m.role != "tool":
            out.append(_shown(pending))
            pending = []
        out.append(m.to_openai())
        pending.extend(m.images)
    if pending:
        out.append(_shown(pending))
    return out


def _shown(urls: list[str]) -> dict[str, Any]:
    text = (
        "The image(s) the tools returned above:"
        if len(urls) > 1
        else "The image the tool returned above:"
    )
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    return {"role": "user", "content": parts}
