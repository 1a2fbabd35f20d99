"""Assembly, pure: what was gathered in, the reply out: budget packing, drafts, rendering, chat messages."""
