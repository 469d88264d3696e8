"""The run workspace: files shared by every agent of a run and every worker machine.

:class:`Workspace` is the interface; :mod:`redis_store` (the default whenever
``redis.url`` is set) and :mod:`local_store` (a folder, for embedded mode) implement it;
:func:`open_workspace` picks one from the settings.
"""

from core.workspace.base import FileInfo, Workspace, WorkspaceCaps
from core.workspace.factory import open_workspace

__all__ = ["FileInfo", "Workspace", "WorkspaceCaps", "open_workspace"]
