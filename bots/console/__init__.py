"""The console adapter: the same run flow as the chat platforms, in a terminal."""
