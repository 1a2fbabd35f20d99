"""The ranking's deployment levers (``ranking.rank_candidates``' steps 9 to 12) as one value.

Built once from the settings (:meth:`RankLevers.of`, in the gatherer) and handed down unchanged through
``retrieved_lines`` to the ranking, so a new lever is one field here, one setting and its use in the ranking,
not one more parameter in every layer between them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo.services.context_assembler.settings import AssemblerSettings


@dataclass(frozen=True)
class RankLevers:
    """Aliases, the split by named person, the lift of turns that say when, dates parsed and the second hop's
    weight (``rank_candidates`` explains each). None: the ranking module's constant of that name
    (``USE_ALIASES``, ``SPLIT_NAMED``, ``WHEN_BOOST``, ``PARSE_DATES``, ``HOP_WEIGHT``), read at call time, so
    the offline ablations (``bench/retrieval_ablation.py``), which set those constants, still move them."""

    use_aliases: bool | None = None
    split_named: bool | None = None
    when_boost: float | None = None
    parse_dates: bool | None = None
    hop_weight: float | None = None

    @classmethod
    def of(cls, s: AssemblerSettings) -> RankLevers:
        """The levers a deployment configured (``rank_*`` in ``AssemblerSettings``)."""
        return cls(
            use_aliases=s.rank_by_aliases,
            split_named=s.rank_per_named_person,
            when_boost=s.rank_when_boost,
            parse_dates=s.rank_parse_dates,
            hop_weight=s.rank_hop_weight,
        )


#: Every lever at the ranking module's constant.
DEFAULT_LEVERS = RankLevers()
