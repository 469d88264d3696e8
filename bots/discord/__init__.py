"""The Discord adapter: a discord.py gateway bot over core (``caramba discord``)."""
