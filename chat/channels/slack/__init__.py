"""Slack: the Events API requests Slack sends and the Web API the answers go out through."""
