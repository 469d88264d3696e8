"""``caramba web``: the run inspector (``bots.web.main.run_web``) and the links chat
threads carry to it (``bots.web.access.run_link``)."""
