"""The ranking's levers read from the settings (``search/levers.py``): each ``rank_*`` setting reaches the lever of
its meaning and no other (``RankLevers.of`` fills the fields by position)."""

from dataclasses import replace

import pytest

from mnemo.services.context_assembler.search.levers import RankLevers
from mnemo.services.context_assembler.settings import AssemblerSettings


@pytest.mark.parametrize(
    ("setting", "lever", "value"),
    [
        ("rank_by_aliases", "use_aliases", False),
        ("rank_per_named_person", "split_named", False),
        ("rank_when_boost", "when_boost", 0.3),
        ("rank_parse_dates", "parse_dates", True),
        ("rank_hop_weight", "hop_weight", 0.7),
    ],
)
def test_each_rank_setting_moves_its_own_lever(setting: str, lever: str, value: object) -> None:
    # Every value differs from the setting's default, so a swapped field would move another lever, or none.
    defaults = RankLevers.of(AssemblerSettings())
    assert getattr(defaults, lever) != value
    assert RankLevers.of(AssemblerSettings(**{setting: value})) == replace(defaults, **{lever: value})
