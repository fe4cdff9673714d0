"""Test and demo support that ships with the package (loopback model server, fixtures)."""
