"""model subsystem."""
