"""Dependencies point inward: core imports no chat SDK and no Celery."""

from __future__ import annotations

import ast
from pathlib import Path

from core.config import PROJECT_ROOT

FORBIDDEN = ("slack_bolt", "slack_sdk", "discord", "celery", "bots", "tasks")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_imports_no_chat_sdk_or_celery() -> None:
    offenders = {
        str(path.relative_to(PROJECT_ROOT)): sorted(_imports(path) & set(FORBIDDEN))
        for path in (PROJECT_ROOT / "core").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_core_modules_stay_small() -> None:
    sizes = {
        str(p.relative_to(PROJECT_ROOT)): len(p.read_text().splitlines())
        for p in (PROJECT_ROOT / "core").rglob("*.py")
    }
    assert {k: n for k, n in sizes.items() if n > 300} == {}
