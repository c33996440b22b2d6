"""MCP servers as governed sources of tools: server rows, tool snapshots, the client."""
