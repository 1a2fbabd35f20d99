"""The engine's inputs and outputs: a scan request, and the activated entries with why each fired."""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Literal

from mnemo.services.context_assembler.lore.engine.placement import Placement
from mnemo.services.context_assembler.lore.engine.timed import TimedState
from mnemo.shared.lore.model import LoreEntry
from mnemo.shared.tokens import estimate_tokens

MAX_SCAN_DEPTH = 1000


class ScanState(IntEnum):
    NONE = 0
    INITIAL = 1
    RECURSION = 2
    MIN_ACTIVATIONS = 3


@dataclass(frozen=True)
class ScanMessage:
    """One chat message as a lore scan reads it: who said it and what (not the reply's wire ``ChatMessage``)."""

    name: str
    text: str


@dataclass(frozen=True)
class ScanRequest:
    """One generation's scan. `messages` are oldest first; `max_context` is context minus response length."""

    messages: Sequence[ScanMessage]
    max_context: int
    seed: str = ""
    timed: TimedState = field(default_factory=TimedState)
    scan_data: Mapping[str, str] = field(default_factory=dict)  # persona_description, scenario, ...
    injected: Sequence[str] = ()  # extension prompts with scanning on (Author's Note, ...)
    trigger: str = "normal"
    character: str | None = None  # avatar name, for character filters
    character_tags: Sequence[str] | None = None
    forced: frozenset[str] = frozenset()  # "<book>.<uid>" hits from vector activation
    # The chat's length L for timed effects and delay (spec §3.9). SillyTavern scans the whole chat, so L is
    # len(messages); a caller that passes only a recent window passes the chat's real length here.
    message_count: int | None = None
    dry_run: bool = False
    count_tokens: Callable[[str], int] = estimate_tokens
    # `clock()` after which the scan stops with `ScanBudgetExceeded` (checked before each regex test and each
    # pass): a scan of long text with many keys cannot hold a worker past its budget. The clock is wall time
    # (`time.monotonic`) on a worker; the event loop's inline try counts its own thread's CPU time
    # (`time.thread_time`, ``scans.py``).
    deadline: float | None = None
    clock: Callable[[], float] = time.monotonic


class ScanBudgetExceeded(Exception):
    """The scan ran past its request's ``deadline``; it has changed nothing (no partial result)."""


@dataclass(frozen=True)
class Why:
    """Why an entry fired: a key (with the secondary keys that matched), constant, sticky, vector, decorator."""

    kind: Literal["key", "constant", "sticky", "vector", "decorator"]
    key: str | None = None
    secondary: tuple[str, ...] = ()
    scan_pass: int = 1
    state: ScanState = ScanState.INITIAL


@dataclass(frozen=True)
class ActivatedEntry:
    ident: str
    book_id: str
    entry: LoreEntry
    content: str
    why: Why
    tokens: int
    placed: bool


@dataclass(frozen=True)
class ActivationResult:
    entries: list[ActivatedEntry]  # insertion order: placements in prompt order, then entries placed nowhere
    placements: list[Placement]
    timed: TimedState
    budget: int
    tokens_used: int
    overflowed: bool
    passes: int


def token_budget(percent: int, max_context: int, cap: int) -> int:
    """`round(percent% of the context)`, at least 1, then capped (JavaScript's Math.round rounds halves up)."""
    budget = max(1, int(percent * max_context / 100 + 0.5))
    return min(budget, cap) if cap > 0 else budget


def seeded_rng(seed: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))
