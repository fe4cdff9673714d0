"""tools subsystem."""
