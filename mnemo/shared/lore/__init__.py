"""The lorebook contract several services read: the normalised model (``model``), the key syntax the
importer validates and activation compiles (``keys``); the fold of a book's stream is its aggregate
(``mnemo.shared.aggregates.lorebook``).

Reading and writing file formats belongs to the lore service (``mnemo/services/lore/formats``), activation to the
context-assembler (``mnemo/services/context_assembler/lore/engine``).
"""
