"""The shared chat layer: what every chat adapter (Slack, Discord, the web chat) relays the
same way — runs' events as intentions, one relay per run with leases, the durable outbox,
thread ↔ run links. It imports no platform: adapters plug in through ``bots.chat.ports``."""
