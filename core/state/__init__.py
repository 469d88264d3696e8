"""Redis: runs, agents, events and the bus, written atomically; who may message whom."""
