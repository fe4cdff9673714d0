"""observation subsystem."""
