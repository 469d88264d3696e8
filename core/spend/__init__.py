"""The cost ledger: every run's cost attributed to its channel, workspace, requester and
model per UTC month (``ledger``), and the monthly budgets of channels and workspaces with
their owners and warnings (``budgets``). Redis is reached only through
``core.state.spend``; the people's actions are ``core.runs.spend``."""
