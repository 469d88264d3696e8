"""Prompt templates are data: Jinja2 files under ``prompts/``, rendered strictly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from core.errors import PromptError


class PromptLibrary:
    """Renders templates from one folder with ``StrictUndefined``.

    A missing template or variable raises :class:`PromptError` naming the template.
    """

    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise PromptError(str(root), "the prompts folder does not exist")
        self.root = root
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(root),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
        )

    def render(self, template: str, /, **variables: Any) -> str:
        try:
            return self._env.get_template(template).render(**variables).strip()
        except jinja2.TemplateNotFound:
            raise PromptError(template, f"not found under {self.root}") from None
        except jinja2.UndefinedError as exc:
            raise PromptError(template, f"missing variable: {exc.message}") from None
        except jinja2.TemplateSyntaxError as exc:
            raise PromptError(template, f"syntax error line {exc.lineno}: {exc.message}") from None

    def names(self) -> list[str]:
        """Every template under the root (``*.j2``), relative paths, sorted."""
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*.j2"))
