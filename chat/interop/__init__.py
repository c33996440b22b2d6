"""Doors for other platforms' clients: the OpenAI-compatible API, the MCP endpoint, A2A."""
