"""The normalised lorebook: one shape for every imported format, close to SillyTavern's World Info entry.

Fields keep SillyTavern's camelCase names as aliases so that a dump ``by_alias`` is a World Info entry. Values are
normalised at import (see ``importer``) to what SillyTavern actually does with the raw file, so the activation
engine never has to guess about missing or mistyped fields.
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo_client.wire.lore_contract import MAX_UID


class Position(IntEnum):
    """Where activated content goes. Any other value (kept as imported) means "activated but inserted nowhere"."""

    BEFORE_CHAR = 0
    AFTER_CHAR = 1
    AN_TOP = 2
    AN_BOTTOM = 3
    AT_DEPTH = 4
    EM_TOP = 5
    EM_BOTTOM = 6
    OUTLET = 7


class Role(IntEnum):
    """Role of an at-depth injection."""

    SYSTEM = 0
    USER = 1
    ASSISTANT = 2


class SelectiveLogic(IntEnum):
    """How secondary keys combine. Stored as SillyTavern's numbers; other numbers never activate."""

    AND_ANY = 0
    NOT_ALL = 1
    NOT_ANY = 2
    AND_ALL = 3


#: The largest number an entry field holds, and the largest uid: JavaScript's largest safe integer (SillyTavern
#: and the JavaScript client read them as numbers), well inside the 64-bit integers of BSON and of Qdrant
#: payloads, where a uid and the timed effects' ends (``sticky`` and ``cooldown`` added to a message count) are
#: stored plain. A larger value made the log's insert fail (found by the 100,000-case fuzz run).
MAX_NUMBER = MAX_UID
Whole = Annotated[int, Field(ge=-MAX_NUMBER, le=MAX_NUMBER)]
Number = Annotated[int | float, Field(ge=-MAX_NUMBER, le=MAX_NUMBER)]

ActivationMode = Literal["keyword", "vector", "hybrid"]
"""mnemo's addition: keyword only, similarity only, or either (SillyTavern's ``vectorized`` maps to hybrid)."""


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", validate_assignment=True)


class CharacterFilter(_Model):
    """Restricts an entry to (or away from) characters by avatar name and tag id."""

    is_exclude: bool = Field(default=False, alias="isExclude")
    names: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


class LoreEntry(_Model):
    """One World Info entry with every field of the spec, defaults from SillyTavern's entry template."""

    uid: int = Field(ge=0, le=MAX_UID)
    key: list[str] = Field(default_factory=list)
    keysecondary: list[str] = Field(default_factory=list)
    comment: str = ""
    content: str = ""
    constant: bool = False
    vectorized: bool = False
    selective: bool = True
    selective_logic: Whole = Field(default=0, alias="selectiveLogic")
    add_memo: bool = Field(default=False, alias="addMemo")
    order: Number = 100
    position: Whole = 0
    depth: Whole = 4
    role: Whole = 0
    outlet_name: str = Field(default="", alias="outletName")
    disable: bool = False
    ignore_budget: bool = Field(default=False, alias="ignoreBudget")
    exclude_recursion: bool = Field(default=False, alias="excludeRecursion")
    prevent_recursion: bool = Field(default=False, alias="preventRecursion")
    # 0 = off; a positive level means "only in recursion passes at or after this level" (true is level 1).
    delay_until_recursion: Whole = Field(default=0, alias="delayUntilRecursion")
    probability: Number = 100
    use_probability: bool = Field(default=True, alias="useProbability")
    group: str = ""
    group_override: bool = Field(default=False, alias="groupOverride")
    group_weight: Number = Field(default=100, alias="groupWeight")
    use_group_scoring: bool | None = Field(default=None, alias="useGroupScoring")
    scan_depth: Whole | None = Field(default=None, alias="scanDepth")
    case_sensitive: bool | None = Field(default=None, alias="caseSensitive")
    match_whole_words: bool | None = Field(default=None, alias="matchWholeWords")
    match_persona_description: bool = Field(default=False, alias="matchPersonaDescription")
    match_character_description: bool = Field(default=False, alias="matchCharacterDescription")
    match_character_personality: bool = Field(default=False, alias="matchCharacterPersonality")
    match_character_depth_prompt: bool = Field(default=False, alias="matchCharacterDepthPrompt")
    match_scenario: bool = Field(default=False, alias="matchScenario")
    match_creator_notes: bool = Field(default=False, alias="matchCreatorNotes")
    sticky: Whole = 0
    cooldown: Whole = 0
    delay: Whole = 0
    triggers: list[str] = Field(default_factory=list)
    automation_id: str = Field(default="", alias="automationId")
    character_filter: CharacterFilter = Field(default_factory=CharacterFilter, alias="characterFilter")
    display_index: Whole | None = Field(default=None, alias="displayIndex")
    extensions: dict[str, Any] = Field(default_factory=dict)
    activation_mode: ActivationMode = Field(default="keyword", alias="activationMode")

    @property
    def groups(self) -> list[str]:
        """Inclusion group names: SillyTavern splits ``group`` on ``,\\s*`` and ignores empty names."""
        return [g for g in _split_groups(self.group) if g]


_GROUP_SPLIT = re.compile(r",\s*")


def _split_groups(group: str) -> list[str]:
    return _GROUP_SPLIT.split(group) if group else []


class Lorebook(_Model):
    """A normalised book. Book-level scan settings are informational: SillyTavern ignores them (spec §1.1)."""

    name: str = ""
    description: str = ""
    entries: list[LoreEntry] = Field(default_factory=list)
    scan_depth: int | None = None
    token_budget: int | None = None
    recursive_scanning: bool | None = None
    extensions: dict[str, Any] = Field(default_factory=dict)
    source_format: str = "sillytavern"


class WorldInfoSettings(_Model):
    """The global World Info settings (spec §1.4), defaulting to a fresh SillyTavern install's settings.json."""

    depth: int = Field(default=2, ge=0, le=1000)
    budget_percent: int = Field(default=25, ge=1, le=100)
    budget_cap: int = Field(default=0, ge=0)
    include_names: bool = True
    recursive: bool = True
    min_activations: int = Field(default=0, ge=0)
    min_activations_depth_max: int = Field(default=0, ge=0)
    max_recursion_steps: int = Field(default=0, ge=0)
    case_sensitive: bool = False
    match_whole_words: bool = True
    use_group_scoring: bool = False
    character_strategy: Literal[0, 1, 2] = 1
