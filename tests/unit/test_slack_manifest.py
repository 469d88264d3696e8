"""manifest.yml against the code: every event the bot listens to is subscribed, every
Web API method it calls has its scope, and the features the code relies on (the App Home
tab, direct messages, the agent pane) are on — read from the listeners and calls in
bots/slack, so a new listener or call without its manifest line fails here."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "bots" / "slack").glob("*.py"))
# Events a Bolt listener names → the subscriptions that deliver them (message: where
# the bot takes messages: channels, private channels, direct messages).
SUBSCRIPTIONS = {
    "app_mention": {"app_mention"},
    "message": {"message.channels", "message.groups", "message.im"},
    "app_home_opened": {"app_home_opened"},
    "assistant_thread_started": {"assistant_thread_started"},
    "assistant_thread_context_changed": {"assistant_thread_context_changed"},
}
# Web API method (as the SDK names it) → the bot scope it needs (None: no scope).
SCOPES: dict[str, str | None] = {
    "assistant_threads_setStatus": "assistant:write",
    "assistant_threads_setSuggestedPrompts": "assistant:write",
    "assistant_threads_setTitle": "assistant:write",
    "auth_test": None,
    "chat_appendStream": "chat:write",
    "conversations_info": "channels:read",
    "chat_delete": "chat:write",
    "chat_postEphemeral": "chat:write",
    "chat_postMessage": "chat:write",
    "chat_startStream": "chat:write",
    "chat_stopStream": "chat:write",
    "chat_update": "chat:write",
    "files_completeUploadExternal": "files:write",
    "files_getUploadURLExternal": "files:write",
    "files_upload_v2": "files:write",
    "files_info": "files:read",
    "reactions_add": "reactions:write",
    "users_info": "users:read",
    "views_open": None,
    "views_publish": None,
}
# Subscriptions → the scope Slack wants for them.
EVENT_SCOPES = {
    "app_mention": "app_mentions:read",
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
}


def manifest() -> dict:
    return yaml.safe_load((ROOT / "manifest.yml").read_text())


def code() -> str:
    return "\n".join(p.read_text() for p in SOURCES)


def listened_events() -> set[str]:
    return set(re.findall(r'\.event\("([a-z_]+)"\)', code()))


def called_methods() -> set[str]:
    return set(re.findall(r"client\.([a-z]+_[A-Za-z0-9_]+)\(", code()))


def test_every_event_listened_to_is_subscribed() -> None:
    events = listened_events()
    assert {"app_mention", "message", "app_home_opened", "assistant_thread_started"} <= events
    subscribed = set(manifest()["settings"]["event_subscriptions"]["bot_events"])
    for event in events:
        assert event in SUBSCRIPTIONS, f"{event}: which subscription delivers it?"
        assert SUBSCRIPTIONS[event] <= subscribed, f"{event} is not subscribed"
    # And nothing is subscribed that no listener takes.
    taken = set().union(*(SUBSCRIPTIONS[e] for e in events))
    assert subscribed <= taken, subscribed - taken


def test_every_method_called_and_event_subscribed_has_its_scope() -> None:
    scopes = set(manifest()["oauth_config"]["scopes"]["bot"])
    methods = called_methods()
    assert {"chat_startStream", "views_publish", "assistant_threads_setTitle"} <= methods
    for method in methods:
        assert method in SCOPES, f"{method}: which scope does it need?"
        assert SCOPES[method] is None or SCOPES[method] in scopes, f"{method} needs a scope"
    for event in manifest()["settings"]["event_subscriptions"]["bot_events"]:
        wanted = EVENT_SCOPES.get(event)
        assert wanted is None or wanted in scopes, f"{event} needs {wanted}"
    assert "commands" in scopes and manifest()["features"]["slash_commands"]


def test_the_features_the_code_uses_are_on() -> None:
    features = manifest()["features"]
    home = features["app_home"]
    # views.publish of the Home tab, and direct messages people can write.
    assert home["home_tab_enabled"] and home["messages_tab_enabled"]
    assert not home["messages_tab_read_only_enabled"]
    # The agent pane: the current feature, not the one it replaced.
    assert "assistant_view" not in features
    pane = features["agent_view"]
    assert pane["agent_description"].strip()
    assert all(p["title"] and p["message"] for p in pane["suggested_prompts"])
    assert len(pane["suggested_prompts"]) <= 4
    settings = manifest()["settings"]
    assert settings["interactivity"]["is_enabled"], "buttons, feedback and forms are clicked"
