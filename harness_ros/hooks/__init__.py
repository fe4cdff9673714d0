"""hooks subsystem."""
