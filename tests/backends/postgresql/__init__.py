"""Django's Postgres backend with the test run's flush (tests/backends)."""
