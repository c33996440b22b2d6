"""The staff inbox page (its views; the data lives in delegation.humans)."""
