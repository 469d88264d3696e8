"""One agent's life: created, takes turns, asks people, is woken, ends."""
