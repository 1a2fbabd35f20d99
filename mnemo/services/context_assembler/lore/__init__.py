"""Lore for the context: books and documents attached to the bot and the conversation, activated on the chat
(keywords through ``engine/``, SillyTavern's World Info rules; vectors), with their timed effects per conversation."""
