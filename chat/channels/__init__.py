"""Messaging channels (LINE, Slack): one gateway joins them to the same turns as the page."""
