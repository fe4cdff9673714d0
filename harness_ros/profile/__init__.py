"""profile subsystem."""
