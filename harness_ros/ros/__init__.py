"""ros subsystem."""
