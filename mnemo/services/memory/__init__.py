"""The memory service: request-reply over a user's memories (convert to legacy lore, delete, list)."""
