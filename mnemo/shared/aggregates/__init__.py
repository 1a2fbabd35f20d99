"""The aggregates: one module per stream kind (a package once it outgrows one), pure (no I/O): the stream's
events (``EVENTS``, its payload classes, registered in ``mnemo/shared/events/recorded/``), its fold and its
deciders, which the services call and the read models are projected with.

- ``conversation``: a conversation's stream: its state, its messages' statuses, its timeline of alternatives
  (``fold_tail`` folds a tail into all three) and the deciders of messages, swipes and forks (ingest's).
- ``profiles``: a bot's and a persona's stream: the upserts' decider (ingest's).
- ``lorebook``: a book's stream: its fold (the read model's state is a snapshot, the log's events past it are
  folded on) and the lore service's deciders.
- ``knowledge``: a character's stream: the fact events' fold table and who witnessed a message.
- ``summaries``: a conversation's summary stream: the live summaries, consolidation, staleness, retirement.
- ``memories``: a memory's stream (the memory API): its versions and the remember/update/forget deciders.
"""
