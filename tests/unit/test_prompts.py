"""Every prompt template renders with the sample variables; failures name the template.

The templates ship in the package (core/prompts/); ``prompts.dir`` may replace them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

import core.prompts as prompts_module
from core.config import PROJECT_ROOT, load_settings
from core.errors import ConfigError, PromptError
from core.prompts import BUS_TEMPLATES, PromptLibrary, packaged_templates

PROMPTS_DIR = PROJECT_ROOT / "core" / "prompts"
LIBRARY = PromptLibrary()
SAMPLES: dict[str, Any] = tomllib.loads((PROMPTS_DIR / "samples.toml").read_text("utf-8"))
# Templates whose basename starts with "_" are bases, rendered through their children.
RENDERABLE = [n for n in LIBRARY.names() if not PurePosixPath(n).name.startswith("_")]


def test_library_finds_the_templates() -> None:
    names = LIBRARY.names()
    assert names == sorted(names)
    assert "roles/_base.md.j2" in names
    assert "feedback/unknown_tool.j2" in names
    assert all(n.endswith(".j2") for n in names)
    assert len(RENDERABLE) >= 10


@pytest.mark.parametrize("name", RENDERABLE)
def test_every_template_renders_with_samples(name: str) -> None:
    text = LIBRARY.render(name, **SAMPLES)
    assert text.strip()
    assert "{{" not in text and "{%" not in text
    assert text == text.strip()


@pytest.mark.parametrize("name", [n for n in RENDERABLE if n.startswith("roles/")])
def test_role_templates_include_base_and_samples(name: str) -> None:
    text = LIBRARY.render(name, **SAMPLES)
    # From roles/_base.md.j2:
    assert text.startswith(f"You are {SAMPLES['agent']['name']}, {SAMPLES['agent']['role_title']}")
    assert "## Your tools" in text
    assert "- `calculate`: Evaluate an arithmetic expression." in text
    assert f"at most {SAMPLES['limits']['turns']} turns" in text
    # From the child's purpose block:
    assert SAMPLES["task"] in text


def test_feedback_unknown_tool_lists_tools() -> None:
    text = LIBRARY.render("feedback/unknown_tool.j2", name="fly", tools=["a", "b"])
    assert 'no tool named "fly"' in text
    assert "Available tools: a, b." in text


def test_missing_variable_names_template_and_variable() -> None:
    samples = {k: v for k, v in SAMPLES.items() if k != "task"}
    with pytest.raises(PromptError) as info:
        LIBRARY.render("roles/solo.md.j2", **samples)
    assert info.value.template == "roles/solo.md.j2"
    assert "roles/solo.md.j2" in str(info.value)
    assert "task" in str(info.value)


def test_unknown_template_raises_prompt_error() -> None:
    with pytest.raises(PromptError) as info:
        LIBRARY.render("roles/nope.md.j2", **SAMPLES)
    assert info.value.template == "roles/nope.md.j2"
    assert "not found" in str(info.value)


def test_syntax_error_names_template(tmp_path: Path) -> None:
    (tmp_path / "bad.j2").write_text("hello {{ name ", "utf-8")
    with pytest.raises(PromptError, match=r"'bad\.j2'.*syntax error line 1"):
        PromptLibrary(tmp_path).render("bad.j2", name="x")


def test_packaged_templates_need_no_configured_folder(tmp_path: Path) -> None:
    # A config file elsewhere, without [prompts] dir: the templates come from the package.
    path = tmp_path / "config.toml"
    path.write_text('[prompts.roles]\nsolo = "roles/solo.md.j2"\n', "utf-8")
    settings = load_settings(path)
    assert settings.prompts.dir is None
    assert settings.prompts_dir is None
    library = PromptLibrary(settings.prompts_dir)
    assert library.root is None
    assert library.names() == sorted(
        str(p.relative_to(PROMPTS_DIR)) for p in PROMPTS_DIR.rglob("*.j2")
    )
    assert "roles/orchestrator.md.j2" in library.names()
    assert library.render("roles/solo.md.j2", **SAMPLES).startswith("You are ")
    assert packaged_templates().joinpath("roles", "solo.md.j2").is_file()


def test_empty_dir_means_the_packaged_templates(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[prompts]\ndir = ""\n', "utf-8")
    assert load_settings(path).prompts_dir is None


def test_override_folder_replaces_the_packaged_templates(tmp_path: Path) -> None:
    (tmp_path / "mine" / "roles").mkdir(parents=True)
    (tmp_path / "mine" / "roles" / "solo.md.j2").write_text("Solo: {{ task }}\n", "utf-8")
    (tmp_path / "mine" / "hello.j2").write_text("Hi {{ name }}", "utf-8")
    path = tmp_path / "config.toml"
    path.write_text('[prompts]\ndir = "mine"\n', "utf-8")
    settings = load_settings(path)
    assert settings.prompts_dir == tmp_path / "mine"
    library = PromptLibrary(settings.prompts_dir)
    assert library.names() == ["hello.j2", "roles/solo.md.j2"]
    assert library.render("roles/solo.md.j2", task="sum it") == "Solo: sum it"
    assert library.render("hello.j2", name="Ana") == "Hi Ana"
    # The packaged templates are gone, not merged in.
    with pytest.raises(PromptError, match="not found in") as info:
        library.render("feedback/unknown_tool.j2", name="fly", tools=[])
    assert str(tmp_path / "mine") in str(info.value)


def test_missing_override_folder_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[prompts]\ndir = "absent"\n', "utf-8")
    settings = load_settings(path)
    with pytest.raises(ConfigError, match="does not exist") as info:
        PromptLibrary(settings.prompts_dir)
    assert "prompts.dir" in str(info.value)
    assert str(tmp_path / "absent") in str(info.value)
    assert 'prompts.dir = ""' in info.value.hint


def test_override_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file.j2").write_text("x", "utf-8")
    with pytest.raises(ConfigError, match=r"prompts\.dir .* is not a folder"):
        PromptLibrary(tmp_path / "file.j2")


def test_every_configured_role_has_a_template() -> None:
    settings = load_settings(PROJECT_ROOT / "config.toml")
    roles = settings.prompts.roles
    assert {"ui", "orchestrator", "lead", "member", "judge", "solo"} <= set(roles)
    assert settings.prompts_dir is None  # config.toml uses the packaged templates
    library = PromptLibrary(settings.prompts_dir)
    names = set(library.names())
    for role, template in roles.items():
        assert template in names, f"role {role!r} points to missing template {template!r}"
        assert (PROMPTS_DIR / template).is_file()
        assert library.render(template, **SAMPLES)


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The templates read (and so compiled) from here on."""
    seen: list[str] = []
    real = prompts_module._TraversableLoader.get_source

    def get_source(self: Any, environment: Any, template: str) -> Any:
        seen.append(template)
        return real(self, environment, template)

    monkeypatch.setattr(prompts_module._TraversableLoader, "get_source", get_source)
    return seen


def test_warming_compiles_the_bus_and_role_templates_so_a_turn_reads_none(
    loads: list[str],
) -> None:
    library = PromptLibrary()
    roles = ["roles/member.md.j2", "roles/orchestrator.md.j2"]
    bus = [n for n in library.names() if n.startswith(BUS_TEMPLATES)]
    assert library.warm(roles) == len(roles) + len(bus) + 1
    assert set(loads) == {*roles, *bus, "roles/_base.md.j2"}  # with the roles' base
    loads.clear()
    for name in ("bus/incoming.j2", *roles):
        assert library.render(name, **SAMPLES)
    assert loads == [], "rendered from the compiled templates"
    assert library.render("feedback/unknown_tool.j2", **SAMPLES | {"name": "x", "tools": []})
    assert loads == ["feedback/unknown_tool.j2"], "the rest is compiled when first rendered"


def test_a_template_that_does_not_compile_fails_where_it_is_rendered(tmp_path: Path) -> None:
    (tmp_path / "bus").mkdir()
    (tmp_path / "bus" / "bad.j2").write_text("hello {{ name ", "utf-8")
    (tmp_path / "bus" / "good.j2").write_text("hello {{ name }}", "utf-8")
    library = PromptLibrary(tmp_path)
    assert library.warm(["missing.j2"]) == 1
    with pytest.raises(PromptError, match=r"'bus/bad\.j2'.*syntax error line 1"):
        library.render("bus/bad.j2", name="x")


async def test_embedded_services_start_with_the_turn_templates_compiled(
    loads: list[str],
) -> None:
    from core.llm.scripted import ScriptedModel
    from core.process.embedded import embedded_services

    settings = load_settings(redis={"url": ""})
    async with embedded_services(settings, ScriptedModel()) as svc:
        assert {"bus/incoming.j2", *settings.prompts.roles.values()} <= set(loads)
        loads.clear()
        assert svc.prompts.render("bus/incoming.j2", **SAMPLES)
        assert svc.prompts.render(settings.prompts.roles["member"], **SAMPLES)
        assert loads == []
