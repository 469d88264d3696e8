"""The phases of one agent turn, in order (``core.agent.turn`` reads them as its spine):
prepare → call the model → run tools → resolve the next step → commit."""
