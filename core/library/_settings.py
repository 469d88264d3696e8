"""What the library derives from its settings: paths and secrets (env only, by name)."""

from __future__ import annotations

import os
from pathlib import Path

from core.config import PROJECT_ROOT, LibrarySettings, Settings
from core.errors import MissingSecretError

PINECONE_KEY_VARIABLE = "PINECONE_API_KEY"


def library_dir(settings: Settings) -> Path:
    """The local index folder; a relative one is taken from the config file's folder."""
    base = settings.config_file.parent if settings.config_file else PROJECT_ROOT
    path = settings.library.index_dir
    return path if path.is_absolute() else base / path


def pinecone_api_key() -> str:
    """PINECONE_API_KEY from the environment (never from config.toml)."""
    value = os.environ.get(PINECONE_KEY_VARIABLE)
    if not value:
        raise MissingSecretError(PINECONE_KEY_VARIABLE, "the Pinecone library backend")
    return value


def embedding_api_key(settings: LibrarySettings) -> str | None:
    """The key in the variable ``embedding_api_key_env`` names; None = provider default."""
    variable = settings.embedding_api_key_env
    if not variable:
        return None
    value = os.environ.get(variable)
    if not value:
        raise MissingSecretError(variable, f"the embedding model {settings.embedding_model}")
    return value
