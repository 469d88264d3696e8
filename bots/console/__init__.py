"""The console adapter: the same run flow as the chat platforms, in a terminal.

- ``thread``: a run followed through the chat layer's relay (``bots.chat.relay``), its
  messages delivered at once by the console's ``render`` (intentions → rich markup) and
  ``transport`` (printed; the status message is the ``live`` status line), between the
  lines of its ``trace`` (the agents at work: what a thread leaves to the inspector);
- ``person``: the person at the terminal, acting through the people room
  (``core.runs.people``) from ``session`` (cancel, answers; ``paused``: extend, stop) and
  ``run`` (the rating);
- ``run``: ``caramba run`` step by step; ``proposal``, ``card``, ``edit_form``: the card
  and the decision about it; ``lines``: what the person types; ``logs``: log records
  kept out of the terminal; ``text``: what comes from outside made safe to print;
  ``tools``: ``caramba tools``.
"""
