"""Prompt templates are data: Jinja2 files shipped in this package, rendered strictly.

The templates live next to this module (``core/prompts/roles/``, ``feedback/``, ...) and are
read with :mod:`importlib.resources`, so an installed wheel carries them. ``prompts.dir`` in
``config.toml`` may name a folder of templates that replaces the packaged ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
from jinja2.loaders import split_template_path

from core.errors import ConfigError, PromptError

PACKAGE = __name__
# The folder of the templates of what comes to an agent over the bus (rendered by turns,
# with each role's system prompt: ``PromptLibrary.warm``).
BUS_TEMPLATES = "bus/"


def packaged_templates() -> Traversable:
    """The folder of templates shipped with Caramba (this package)."""
    return files(PACKAGE)


class _TraversableLoader(jinja2.BaseLoader):
    """Loads templates from an :mod:`importlib.resources` folder (a plain folder works too)."""

    def __init__(self, root: Traversable) -> None:
        self.root = root

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, Callable[[], bool] | None]:
        node = self.root
        for part in split_template_path(template):
            node = node.joinpath(part)
        if not node.is_file():
            raise jinja2.TemplateNotFound(template)
        source = node.read_text("utf-8")
        if not isinstance(node, Path):  # inside a zip or similar: never changes
            return source, None, lambda: True
        path, mtime = node, node.stat().st_mtime

        def uptodate() -> bool:
            try:
                return path.stat().st_mtime == mtime
            except OSError:
                return False

        return source, str(path), uptodate


def _walk(node: Traversable, prefix: str = "") -> Iterator[str]:
    for child in node.iterdir():
        if child.is_dir():
            yield from _walk(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".j2"):
            yield f"{prefix}{child.name}"


class PromptLibrary:
    """Renders templates with ``StrictUndefined``: the packaged ones, or an override folder.

    ``root=None`` uses the templates shipped in this package; a folder (``prompts.dir``)
    replaces them. A missing template or variable raises :class:`PromptError` naming it.
    """

    def __init__(self, root: Path | None = None) -> None:
        if root is not None and not root.is_dir():
            problem = "is not a folder" if root.exists() else "does not exist"
            raise ConfigError(
                f"prompts.dir points to {root}, which {problem}",
                hint="create it with the templates, fix prompts.dir in config.toml "
                '(relative to its folder), or set prompts.dir = "" to use the packaged templates',
            )
        self.root: Path | None = root
        self._templates: Traversable = root if root is not None else packaged_templates()
        self._env = jinja2.Environment(
            loader=_TraversableLoader(self._templates),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
            # The packaged templates never change under a running process: no stat of the
            # file on every render (about 3 % of an inline turn's CPU). An operator's
            # prompts.dir is still read again when a template is edited.
            auto_reload=root is not None,
        )

    @property
    def source(self) -> str:
        """Where the templates come from, for messages."""
        return str(self.root) if self.root is not None else f"the packaged templates ({PACKAGE})"

    def render(self, template: str, /, **variables: Any) -> str:
        try:
            return self._env.get_template(template).render(**variables).strip()
        except jinja2.TemplateNotFound:
            raise PromptError(template, f"not found in {self.source}") from None
        except jinja2.UndefinedError as exc:
            raise PromptError(template, f"missing variable: {exc.message}") from None
        except jinja2.TemplateSyntaxError as exc:
            raise PromptError(template, f"syntax error line {exc.lineno}: {exc.message}") from None

    def warm(self, names: Iterable[str] = (), folders: Iterable[str] = (BUS_TEMPLATES,)) -> int:
        """Compile ``names`` and every template under ``folders`` now, at a process's
        start, rather than in the first turns that render them (1–2 ms each); how many.
        Only what turns render every time is worth it (the bus, the configured roles):
        the rest (feedback on a bad call, patterns) is compiled when first rendered. One
        that does not compile is left to fail where it is rendered, with its error."""
        wanted = dict.fromkeys(names)
        # With their bases (``_*.j2`` beside them), loaded when a child is first rendered.
        prefixes = (*folders, *(f"{PurePosixPath(n).parent}/_" for n in wanted))
        wanted.update(dict.fromkeys(n for n in self.names() if n.startswith(prefixes)))
        compiled = 0
        for name in wanted:
            try:
                self._env.get_template(name)
            except jinja2.TemplateError:
                continue
            compiled += 1
        return compiled

    def names(self) -> list[str]:
        """Every template (``*.j2``), relative names like ``roles/lead.md.j2``, sorted."""
        return sorted(_walk(self._templates))
