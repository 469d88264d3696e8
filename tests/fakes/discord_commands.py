"""Application commands on the fake Discord: the bulk overwrite ``tree.sync()`` sends
(global or for the guild), and the interaction data of a synced slash command."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.discord_limits import Problems
from tests.fakes.discord_world import World

Json = dict[str, Any]
OPTION_TYPES = {3: str, 4: int, 5: bool, 10: float}
CHAT_INPUT = 1


def overwrite(world: World, guild_id: str | None, wanted: list[Json]) -> Json | None:
    """Replace the commands, as Discord: a command keeps its id when its name and type stay;
    a bad name or description refuses the whole list (the 400 body, else None)."""
    problems = Problems()
    for index, command in enumerate(wanted):
        name, kind = command.get("name") or "", int(command.get("type") or CHAT_INPUT)
        if not re.fullmatch(r"[-_\w]{1,32}", name) or (kind == CHAT_INPUT and name != name.lower()):
            problems.add([index, "name"], "APPLICATION_COMMAND_INVALID_NAME", "Invalid name")
        if kind == CHAT_INPUT and not 1 <= len(command.get("description") or "") <= 100:
            message = "Must be between 1 and 100 in length."
            problems.add([index, "description"], "BASE_TYPE_BAD_LENGTH", message)
    if (body := problems.body()) is not None:
        return body
    known = {(c["name"], c["type"]): c["id"] for c in world.commands.get(guild_id, [])}
    synced = []
    for command in wanted:
        kind = int(command.get("type") or CHAT_INPUT)
        defaults: Json = {
            "default_member_permissions": None,
            "dm_permission": True,
            "nsfw": False,
            "contexts": None,
            "integration_types": [0],
            "options": [],
        }
        synced.append(
            defaults
            | command
            | {
                "id": known.get((command["name"], kind)) or world.snowflake(),
                "application_id": world.app_id,
                "type": kind,
                "version": world.snowflake(),
            }
            | ({"guild_id": guild_id} if guild_id else {})
        )
    world.commands[guild_id] = synced
    return None


def invocation(world: World, name: str, options: dict[str, Any] | None) -> Json:
    """The ``data`` of an interaction running ``/name``: the command must be synced (the
    guild's first, then global ones); options are checked and typed by its schema."""
    guild_cmd = next((c for c in world.commands.get(world.guild_id, []) if c["name"] == name), None)
    command = guild_cmd or next((c for c in world.commands[None] if c["name"] == name), None)
    if command is None:
        synced = [c["name"] for c in world.commands[None] + world.commands.get(world.guild_id, [])]
        raise LookupError(f"/{name} is not synced (call tree.sync()); synced: {synced}")
    schema = {o["name"]: o for o in command.get("options") or []}
    given = options or {}
    if unknown := set(given) - set(schema):
        raise LookupError(f"/{name} has no options {sorted(unknown)}")
    if missing := [n for n, o in schema.items() if o.get("required") and n not in given]:
        raise ValueError(f"/{name} needs {missing}")
    typed = [
        {"name": n, "type": schema[n]["type"], "value": OPTION_TYPES.get(schema[n]["type"], str)(v)}
        for n, v in given.items()
    ]
    data: Json = {"id": command["id"], "name": name, "type": CHAT_INPUT, "options": typed}
    if guild_cmd is not None:
        data["guild_id"] = world.guild_id
    return data
