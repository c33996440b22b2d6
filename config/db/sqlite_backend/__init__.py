"""SQLite with one writer at a time per process, queued on a lock (see base.py)."""
