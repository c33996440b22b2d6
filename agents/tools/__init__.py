"""Built-in tools; importing a module registers its tools."""
