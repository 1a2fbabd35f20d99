"""The aggregates: one module per stream kind, its state and its fold (pure: no I/O), which the services decide
on and the read models are projected with.

- ``conversation``: a conversation's stream (``conversation/<tenant>/<user>/<conversation>``): its state (the
  conversations read model stores it, ingest decides on it, caught up by folding the log's tail), the
  statuses of its messages (what ingest decides edits, deletes and redeliveries on) and its timeline of
  alternatives (what ingest decides swipes and forks on); a package, ``fold_tail`` folds a tail into all three.
- ``lorebook``: a book's stream (``lorebook/<tenant>/<book>``); the lore service decides on its fold (the read
  model's state serves as a snapshot, the log's events past it are folded on), the lore read model stores it.
"""
