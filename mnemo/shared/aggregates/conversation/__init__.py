"""The conversation aggregate: everything folded from one ``conversation/<tenant>/<user>/<conversation>`` stream
(pure: no I/O).

- ``state``: the conversation's state (the conversations read model stores it, ingest decides new messages on
  it), a strict fold by version.
- ``known``: its messages' statuses (what ingest decides edits, deletes and redeliveries on).
- ``timeline``: its messages with their alternatives (what ingest decides swipes and forks on).
- ``tail``: a log tail folded once into all three (ingest's catch-up after a lost concurrency race).
- ``deciders`` and ``branches``: its deciders, the events a platform command becomes (messages; swipes and
  forks), which ingest calls on the three folds above.

``EVENTS`` names the payload classes of the stream (registered in ``mnemo/shared/events/recorded/``, where the
log's codec finds every type).
"""

from mnemo.shared.aggregates.conversation.deciders import (
    Branches,
    ConversationDecider,
    MessageCommand,
    needs_timeline,
)
from mnemo.shared.aggregates.conversation.known import KnownMessage, known_from_events
from mnemo.shared.aggregates.conversation.state import (
    BotPresence,
    ConversationState,
    PersonaSwitch,
    as_utc,
    by_stream,
    evolve,
    fold,
    folded_states,
)
from mnemo.shared.aggregates.conversation.tail import fold_tail
from mnemo.shared.aggregates.conversation.timeline import Slot, Timeline
from mnemo.shared.events.recorded import (
    ConversationForkRecorded,
    MessageAlternativeDeleted,
    MessageAlternativeRecorded,
    MessageDeletionRecorded,
    MessageEditRecorded,
    MessageRecorded,
)

#: The payload classes of a conversation's stream.
EVENTS = (
    MessageRecorded,
    MessageEditRecorded,
    MessageDeletionRecorded,
    MessageAlternativeRecorded,
    MessageAlternativeDeleted,
    ConversationForkRecorded,
)

__all__ = [
    "EVENTS",
    "BotPresence",
    "Branches",
    "ConversationDecider",
    "ConversationState",
    "KnownMessage",
    "MessageCommand",
    "PersonaSwitch",
    "Slot",
    "Timeline",
    "as_utc",
    "by_stream",
    "evolve",
    "fold",
    "fold_tail",
    "folded_states",
    "known_from_events",
    "needs_timeline",
]
