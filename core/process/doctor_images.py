"""``caramba doctor``'s image check: is ``[images] model`` set, and is its key in the
environment. Nothing is generated: a picture costs real money, so only the configuration
and the key are checked (the detail says so)."""

from __future__ import annotations

import os

from core.config import LLMSettings, Settings
from core.llm.setup import key_variables
from core.process.doctor_types import Check, Level
from core.tools.images import config_problem

NAME = "images"
_NOT_TRIED = "not tried (a picture costs money)"


def check_images(settings: Settings) -> Check:
    cfg = settings.images
    if "images" in settings.tools.disabled or "generate_image" in settings.tools.disabled:
        return Check(NAME, Level.OK, "generate_image is switched off (tools.disabled)")
    problem = config_problem(cfg)
    if problem:
        return Check(NAME, Level.WARN, f"generate_image is not offered: {problem}", problem)
    if cfg.api_key_env:
        return Check(NAME, Level.OK, f"{cfg.model}: ${cfg.api_key_env} is set; {_NOT_TRIED}")
    where = f" via {cfg.api_base}" if cfg.api_base else ""
    if cfg.api_base:
        return Check(NAME, Level.OK, f"{cfg.model}{where}: no key needed; {_NOT_TRIED}")
    variables = key_variables(LLMSettings(model=cfg.model), cfg.model)
    if not variables:
        return Check(NAME, Level.OK, f"{cfg.model}: its key is not known here; {_NOT_TRIED}")
    if not any(os.environ.get(v) for v in variables):
        return Check(
            NAME,
            Level.WARN,
            f"{cfg.model}: {variables[0]} is not set, so generate_image will fail",
            f"export {variables[0]}=..., or set [images] model / api_key_env",
        )
    return Check(NAME, Level.OK, f"{cfg.model}: {variables[0]} is set; {_NOT_TRIED}")
