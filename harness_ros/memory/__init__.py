"""memory subsystem."""
