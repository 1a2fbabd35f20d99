"""Chat histories brought in: reading an exported chat file (``formats``), the chat events it becomes and their
publishing (``plan``), and the ``mnemo.rpc.chat.import.v1`` handler (``rpc``). ``mnemo import-chats`` (the host's
command) uses the same reading and events."""
