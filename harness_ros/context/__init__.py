"""context subsystem."""
