"""evaluation subsystem."""
