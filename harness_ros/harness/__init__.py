"""harness subsystem."""
