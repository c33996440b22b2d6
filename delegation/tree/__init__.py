"""The delegation tree: the delegate tool, its guards, the turn's budget, asking and reporting."""
