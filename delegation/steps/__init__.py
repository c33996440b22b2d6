"""A run's steps: the delivery loop, a step's model call and commits, tools, streaming, prompts."""
