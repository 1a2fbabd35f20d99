"""The lorebook contract several services read: the normalised model (``model``), the key syntax the
importer validates and activation compiles (``keys``), and the fold of a book's stream (``history``).

Reading and writing file formats belongs to the lore service (``mnemo/services/lore/formats``), activation to the
context-assembler (``mnemo/services/context_assembler/lore/engine``).
"""
