"""Gathering: what a context request reads (bot, persona, history, lore, knowledge, memories, retrieved
messages), each part under its own deadline; the read port (``port.py``) and its read-model adapter (``reads.py``)."""
