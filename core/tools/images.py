"""``generate_image``: a picture from a prompt, through litellm's image generation (any
provider litellm supports, or a local OpenAI-compatible server), saved into the run's
workspace as a PNG.

The model, endpoint, key variable, size and time limit come from ``[images]``. Providers
answer with the image inline (base64) or with a URL; a URL is fetched through the web
tools' guarded fetcher (SSRF guard, size and time caps) like any other download. The cost
litellm reports is given in the result. litellm is imported on the first call (seconds).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import os
import posixpath
from typing import Any

from core.agent.context import ToolContext
from core.config import Settings
from core.config_tools import ImageSettings
from core.errors import ToolRetry, WorkspaceError
from core.llm.gateway import import_litellm
from core.state import spend as spend_ledger
from core.tools.registry import Tool, ToolRegistry, tool
from core.tools.web.guard import WebError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@tool(read_only=False, category="images", network=True)
async def generate_image(ctx: ToolContext, prompt: str, path: str = "outputs/image.png") -> str:
    """Create a picture from a description and save it as a PNG in the run's workspace
    (in "outputs/" it is sent to the chat when the run ends).

    Args:
        prompt: What the picture shows, in detail: subject, style, colours, composition,
            any text it must contain.
        path: Where to save it, e.g. "outputs/logo.png" (".png" is added if missing).
    """
    if not prompt.strip():
        raise ToolRetry("the prompt is empty: describe the picture")
    cfg = ctx.settings.images
    problem = config_problem(cfg)
    if problem:
        raise ToolRetry(f"image generation is not set up: {problem}")
    litellm = import_litellm()
    try:
        async with asyncio.timeout(cfg.timeout_s + 5):
            response = await litellm.aimage_generation(**_request(cfg, prompt.strip()))
    except TimeoutError:
        raise ToolRetry(
            f"the image model {cfg.model} did not answer within {cfg.timeout_s:g} s; try "
            "again later or with a simpler prompt"
        ) from None
    except Exception as exc:  # litellm raises provider errors of many types
        message = str(getattr(exc, "message", "") or exc).strip().splitlines()
        raise ToolRetry(
            f"the image model {cfg.model} failed: {message[0][:300] if message else exc!r}"
        ) from None
    data = await _image_bytes(ctx, response)
    if not data.startswith(PNG_MAGIC):
        data = await asyncio.to_thread(_to_png, data)
    target = png_path(path)
    try:
        info = await ctx.workspace.write(ctx.run_id, target, data)
    except WorkspaceError as exc:
        raise ToolRetry(str(exc)) from None
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    cost = _cost(litellm, response, cfg)
    if cost:  # counted to the run in the spend ledger (core.spend), with its model calls
        await spend_ledger.add_image_cost(ctx.store, ctx.run_id, cfg.model, cost)
    spent = f"cost ${cost:.4f}" if cost is not None else "cost not reported by the provider"
    return f"Saved {info.describe()}, {width}×{height} pixels, made by {cfg.model} ({spent})."


def config_problem(cfg: ImageSettings) -> str:
    """What is missing for image generation to work, or "" (nothing is contacted)."""
    if not cfg.model:
        return 'images.model is empty: set a litellm image model, e.g. "openai/gpt-image-1"'
    if cfg.api_key_env and not os.environ.get(cfg.api_key_env):
        return f"export {cfg.api_key_env}=... (the key named by images.api_key_env)"
    return ""


def png_path(path: str) -> str:
    """``path`` ending in ``.png`` (another image extension is replaced)."""
    target = path.strip() or "outputs/image.png"
    stem, ext = posixpath.splitext(target)
    if ext.lower() == ".png":
        return target
    if ext.lower() in (".jpg", ".jpeg", ".webp", ".gif", ".bmp"):
        return stem + ".png"
    return target + ".png"


def register(registry: ToolRegistry, settings: Settings) -> None:
    """Add generate_image, or record why it cannot be offered."""
    problem = config_problem(settings.images)
    if problem:
        registry.mark_unavailable(generate_image.name, problem)
    else:
        registry.register(generate_image)


def _request(cfg: ImageSettings, prompt: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": cfg.model,
        "prompt": prompt,
        "n": 1,
        "size": cfg.size,
        "timeout": cfg.timeout_s,
    }
    if cfg.api_base:
        kwargs["api_base"] = cfg.api_base
    if cfg.api_key_env:
        kwargs["api_key"] = os.environ[cfg.api_key_env]
    elif cfg.api_base:
        # A local OpenAI-compatible server needs no key, but the client insists on one.
        kwargs["api_key"] = "no-key-needed"
    return kwargs


async def _image_bytes(ctx: ToolContext, response: Any) -> bytes:
    items = list(getattr(response, "data", None) or [])
    if not items:
        raise ToolRetry("the image model answered without an image; try another prompt")
    first = items[0]
    b64 = _field(first, "b64_json")
    if b64:
        try:
            return base64.b64decode(b64, validate=False)
        except (binascii.Error, ValueError):
            raise ToolRetry("the image model sent an image that is not valid base64") from None
    url = _field(first, "url")
    if not url:
        raise ToolRetry("the image model answered with neither image data nor a URL")
    from core.tools.web.fetcher import fetcher_for  # httpx: only when an image is fetched

    try:
        fetched = await fetcher_for(ctx.settings.web).get(url, accept="image/*")
    except WebError as exc:
        raise ToolRetry(f"the generated image could not be fetched: {exc}") from None
    return fetched.data


def _field(item: Any, name: str) -> str:
    value = item.get(name) if isinstance(item, dict) else getattr(item, name, None)
    return str(value or "")


def _to_png(data: bytes) -> bytes:
    """Another image format (JPEG, WebP) re-encoded as PNG with Pillow (matplotlib's)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            out = io.BytesIO()
            image.save(out, format="PNG")
    except (UnidentifiedImageError, OSError):
        raise ToolRetry("the image model sent data that is not an image") from None
    return out.getvalue()


def _cost(litellm: Any, response: Any, cfg: ImageSettings) -> float | None:
    hidden = getattr(response, "_hidden_params", None) or {}
    reported = hidden.get("response_cost")
    if reported:
        return float(reported)
    try:
        cost = litellm.completion_cost(
            completion_response=response,
            model=cfg.model,
            call_type="image_generation",
            size=cfg.size,
        )
    except Exception:  # an unpriced model: say so rather than guess
        return None
    return float(cost) if cost else None


IMAGE_TOOLS: tuple[Tool, ...] = (generate_image,)
