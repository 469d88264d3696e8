"""How a process is put together, and what it runs beside its turns."""
