"""Doors for other platforms' clients: the OpenAI-compatible API (and, next, A2A and MCP)."""
