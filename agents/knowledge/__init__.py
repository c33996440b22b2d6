"""Knowledge bases per expert agent: documents, chunks, CJK-aware retrieval and the kb tools."""
