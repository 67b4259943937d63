"""Real servers for the tests that need them: built or found, started on loopback ports, stopped afterwards."""
