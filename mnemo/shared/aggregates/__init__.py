"""The aggregates: one module per stream kind (a package once it outgrows one), pure (no I/O): the stream's
events (``EVENTS``, its payload classes, registered in ``mnemo/shared/events/recorded/``), its fold and its
deciders, which the services call and the read models are projected with.

- ``conversation``: a conversation's stream: its state, its messages' statuses, its timeline of alternatives
  (``fold_tail`` folds a tail into all three) and the deciders of messages, swipes and forks (ingest's).
- ``profiles``: a bot's and a persona's stream: the upserts' decider (ingest's).
- ``lorebook``: a book's stream: its fold (the read model's state is a snapshot, the log's events past it are
  folded on) and the lore service's deciders.
- ``knowledge``: a character's stream: the fact events' fold table, who witnessed a message, what a character
  learns, curation and the cap, what a message's edit or delete retires, and the changes by hand
  (the memory-extractor's deciders).
- ``summaries``: a conversation's summary stream: the live summaries, a span's summary, consolidation, staleness,
  retirement (the summarizer's), a memory's state, edit and delete (the memory service's).
- ``memories``: a memory's stream (the memory API): its versions and the remember/update/forget deciders.
- ``legacy_lore``: a legacy entry's stream: the entry a memory is converted to, and its deletion (the memory
  service's).
- ``documents``: an uploaded document's stream: its import's ids and events (the lore service's).
- ``lore_timed``: a conversation's World Info timed effects: the state a scan starts from and what it records
  (the context-assembler's).
- ``privacy``: a tenant's privacy stream: the record of an erasure (the privacy service's).

Every event type belongs to one aggregate (``tests/unit/test_layout.py``). A decider takes the state and the
command, and the time when it records one: it reads no clock.
"""
