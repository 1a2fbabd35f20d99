"""The knowledge aggregate: a character's stream (``knowledge/<tenant>/<character>``), what it witnessed and
learned and the scopes of its facts; pure (no I/O, the clock passed in). The memory-extractor reads a fact's
state (the knowledge read model's view), decides here and appends.

- ``folds``: the fact events' fold table (``fact_folds``), which the knowledge read model, its fake and the fact
  vectors fold by.
- ``witnesses``: who witnessed a message (``witnesses_of``).
- ``facts``: what a character learns from a message: a candidate, its subject, its ``knowledge.fact_learned``.
- ``curation``: dedup, supersession and the cap's consolidation.
- ``revisions``: what an edit or delete of a message retires and consolidates again.
- ``changes``: the changes by hand: add, edit, retract, promote and unpromote.

``EVENTS`` names the stream's payload classes.
"""

from mnemo.shared.aggregates.knowledge.changes import FactNotFound, NotAllowed
from mnemo.shared.aggregates.knowledge.facts import (
    CharacterKind,
    FactCandidate,
    learned,
    normalise,
    present_characters,
    subject_of,
)
from mnemo.shared.aggregates.knowledge.folds import ACTIVE, FACT_EVENTS, fact_folds
from mnemo.shared.aggregates.knowledge.witnesses import Witnessing, witness_event_id, witnesses_of
from mnemo.shared.events.recorded import (
    FactLearned,
    FactPromoted,
    FactRetired,
    FactsConsolidated,
    FactUnpromoted,
    MessagesWitnessed,
)

#: The payload classes of a character's knowledge stream.
EVENTS = (MessagesWitnessed, FactLearned, FactsConsolidated, FactRetired, FactPromoted, FactUnpromoted)

__all__ = [
    "ACTIVE",
    "EVENTS",
    "FACT_EVENTS",
    "CharacterKind",
    "FactCandidate",
    "FactNotFound",
    "NotAllowed",
    "Witnessing",
    "fact_folds",
    "learned",
    "normalise",
    "present_characters",
    "subject_of",
    "witness_event_id",
    "witnesses_of",
]
