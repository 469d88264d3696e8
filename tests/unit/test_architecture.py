"""Modules stay small. (Which way imports may point — core/ in layers, no cycles, core/
free of adapters — is checked by the import contracts in pyproject.toml: `lint-imports`,
run by `make lint` and CI.)"""

from __future__ import annotations

from core.config import PROJECT_ROOT

MAX_LINES = 300


def test_modules_stay_small() -> None:
    sizes = {
        str(p.relative_to(PROJECT_ROOT)): len(p.read_text().splitlines())
        for package in ("core", "bots", "tasks")
        for p in (PROJECT_ROOT / package).rglob("*.py")
    }
    assert {k: n for k, n in sizes.items() if n > MAX_LINES} == {}
