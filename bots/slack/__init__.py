"""The Slack adapter: Bolt (async) app, proposal cards, approvals and progress relay."""
