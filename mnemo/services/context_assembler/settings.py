"""The context-assembler's section of the settings tree (``MNEMO_CONTEXT_ASSEMBLER__<KEY>``), read once at start."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SECTION = "context_assembler"


class LoreVectorSettings(BaseModel):
    """``MNEMO_CONTEXT_ASSEMBLER__LORE_VECTOR__<KEY>``: vector activation of lore entries (SillyTavern's Vector Storage defaults are
    2 messages and 5 entries; the threshold is higher than its 0.25 because the bundled MiniLM model gives
    unrelated sentences cosines up to about 0.25)."""

    model_config = ConfigDict(frozen=True)

    threshold: float = Field(0.35, ge=-1.0, le=1.0, description="minimum cosine for an entry to activate")
    query_messages: int = Field(2, ge=0, le=50, description="recent messages embedded with the user_message")
    max_entries: int = Field(5, ge=0, le=100, description="entries activated by similarity at most")
    timeout_s: float = Field(1.5, gt=0, description="embed + search deadline")


class LoreScanSettings(BaseModel):
    """``MNEMO_CONTEXT_ASSEMBLER__LORE_SCAN__<KEY>``: keyword scans run off the event loop (``lore_scans.py``),
    so one tenant's huge book on long chat text cannot stall other tenants' requests."""

    model_config = ConfigDict(frozen=True)

    budget_s: float = Field(
        1.0, gt=0, description="one lore scan's time budget; past it the request gets no keyword lore"
    )
    grace_s: float = Field(0.25, ge=0, description="how long past its budget a request waits for its scan to stop")
    workers: int = Field(4, ge=1, le=64, description="threads scanning lore, per replica")
    per_tenant: int = Field(
        2, ge=1, description="of those, the most one tenant's scans may hold at once (keep it below `workers`)"
    )
    inline_s: float = Field(
        0.005,
        ge=0,
        description="a scan of a short chat first runs on the event loop within this much of the loop thread's CPU "
        "time, and only past it on a worker (then that book's scans go to the workers for a minute); 0: always on "
        "a worker",
    )


class DocumentLoreSettings(BaseModel):
    """``MNEMO_CONTEXT_ASSEMBLER__DOCUMENTS__<KEY>``: chunks of uploaded documents in the lore section."""

    model_config = ConfigDict(frozen=True)

    max_chunks: int = Field(5, ge=0, le=50, description="document chunks offered to the lore section at most")
    threshold: float = Field(
        0.2, ge=-1.0, le=1.0, description="minimum cosine of the dense side (a lexical match enters anyway)"
    )
    query_messages: int = Field(2, ge=0, le=50, description="recent messages searched with the user_message")
    timeout_s: float = Field(1.5, gt=0, description="embed + search + chunk reads deadline")


class RecencySettings(BaseModel):
    """``MNEMO_CONTEXT_ASSEMBLER__RECENCY__<KEY>``: recency as a ranking lever of the memory search and of a
    context's memories (``recall/scoring.py``); a request's ``recency_half_life_days`` overrides the half-life."""

    model_config = ConfigDict(frozen=True)

    half_life_days: float = Field(
        0.0, ge=0, le=36_500, description="age at which a memory keeps half its recency boost (0: recency off)"
    )
    floor: float = Field(
        0.5, ge=0, le=1, description="the least share of its relevance an old memory keeps (1: recency off)"
    )


class AssemblerSettings(BaseModel):
    """Section ``context_assembler``: ``MNEMO_CONTEXT_ASSEMBLER__<KEY>``."""

    model_config = ConfigDict(frozen=True)

    history_limit: int = Field(40, ge=0, description="most recent messages loaded as the history window")
    min_history: int = Field(
        4, ge=0, description="newest messages placed before the scored sections (knowledge, memories, retrieved)"
    )
    memories_limit: int = Field(4, ge=0, description="summaries searched for the memories section")
    retrieved_limit: int = Field(6, ge=0, description="older messages retrieved by search")
    legacy_limit: int = Field(2, ge=0, description="legacy memories (summaries turned into lore) searched")
    remembered_limit: int = Field(
        6, ge=0, description="memories written through the memory API offered to the budget, each in its type's section"
    )
    knowledge_limit: int = Field(
        20, ge=0, description="facts of the speaking bot offered to the budget, most relevant to the query first"
    )
    knowledge_directive: bool = Field(
        True, description="the `directive` section in every context unless a request says otherwise"
    )
    min_score: float = Field(0.3, description="cosine below which a search hit is ignored")
    second_search_weight: float = Field(
        0.0,
        ge=0,
        le=1,
        description="retrieved messages are searched again with the words the first hits share added to the "
        "lexical query at this weight (multi-hop expansion, search/expansion.py); 0: one search",
    )
    rank_by_aliases: bool = Field(
        True,
        description='a name the retrieved messages address a participant by ("Hey Kate!" to Emi) names that '
        "participant when the message asks about them (search/aliases.py)",
    )
    rank_per_named_person: bool = Field(
        True,
        description="a message about two or more participants ranks the retrieved messages once per person, "
        "that person's boosted, and interleaves the rankings (search/ranking.py)",
    )
    rank_when_boost: float = Field(
        0.0,
        ge=0,
        description='a message that asks when ("When did Kate start reading it?") lifts the retrieved messages '
        'that say when ("yesterday", "last week", a date) by this fraction (search/when.py); 0: off',
    )
    rank_parse_dates: bool = Field(
        False,
        description='time expressions the fixed patterns miss ("last Saturday", "вчера", "昨天") resolved with '
        "dateparser against the message's date, in the message and in the retrieved messages (search/when.py; "
        "tens of milliseconds a message that names a time)",
    )
    rank_hop_weight: float = Field(
        0.4,
        ge=0,
        description="multi-hop expansion inside the retrieved pool: each message's score gains this much of what "
        "a personalized PageRank from the first hits over the words the pool's messages share brings it "
        "(search/hops.py; 0.4 measured best offline), when that raises its score (it never lowers one, so it "
        "lifts no message above the first of the fused list); 0: off",
    )
    retrieval_timeout_s: float = Field(1.5, gt=0, description="embed + vector searches, together")
    read_timeout_s: float = Field(2.0, gt=0, description="each read-model query")
    deadline_s: float = Field(
        4.0, gt=0, description="the whole gathering: a read-model query gets at most the time that is left"
    )
    tokenizer_file: Path | None = Field(
        None, description="the configured LLM's tokenizer.json (Hugging Face tokenizers); unset: the estimator"
    )
    fault_file: Path | None = Field(
        None,
        description="testing only: while this file exists the assembler's vector index is stopped, "
        "see mnemo/services/context_assembler/faults.py",
    )
    max_workers: int = Field(32, ge=1, description="requests answered concurrently per replica")
    cache_ttl_s: float = Field(
        60.0,
        ge=0,
        description="profiles, fork families, attached books, documents, timed lore state and facts are kept until "
        "the log relays a change, and at most this long (a lost invalidation is stale at most that); 0: not kept",
    )
    lore_vector: LoreVectorSettings = Field(default_factory=LoreVectorSettings)
    lore_scan: LoreScanSettings = Field(default_factory=LoreScanSettings)
    documents: DocumentLoreSettings = Field(default_factory=DocumentLoreSettings)
    recency: RecencySettings = Field(default_factory=RecencySettings)
