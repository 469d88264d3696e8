"""A run and its people: the request, the proposal, approval, budgets, learning."""
