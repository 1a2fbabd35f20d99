"""The lorebook aggregate: a book's stream (``lorebook/<tenant>/<book>``), pure (no I/O).

- ``state``: the book's state and its fold (the lore read model stores it; the lore service decides on it, the
  read model's state serving as a snapshot and the log's events past it folded on).
- ``deciders``: the deciders, the events a lore request becomes (import, create, rename, delete, attach,
  detach, entry writes), with the owner rule and the errors they answer.

``EVENTS`` names the payload classes of the stream (registered in ``mnemo/shared/events/recorded/``).
"""

from mnemo.shared.aggregates.lorebook.deciders import EVENTS
from mnemo.shared.aggregates.lorebook.state import (
    _APPLY,
    LORE_EVENTS,
    NEW_LIFE,
    BookState,
    VersionGap,
    fold,
    fold_all,
    targets_of,
)

__all__ = [
    "EVENTS",
    "LORE_EVENTS",
    "NEW_LIFE",
    "_APPLY",
    "BookState",
    "VersionGap",
    "fold",
    "fold_all",
    "targets_of",
]
