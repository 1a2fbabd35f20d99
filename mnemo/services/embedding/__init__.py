"""Embedding: chunks and embeds recorded messages and summaries into the vector index."""
