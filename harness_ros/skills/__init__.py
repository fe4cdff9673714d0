"""skills subsystem."""
