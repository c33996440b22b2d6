"""config.db.sqlite_backend with the test run's flush (tests/backends)."""
