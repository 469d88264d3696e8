"""Chat adapters (console now; Slack and Discord later) and the command line."""
