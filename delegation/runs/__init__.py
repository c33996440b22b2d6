"""The run engine: create, claim, lease, fenced writes, waits, resumption, the ways a run ends."""
