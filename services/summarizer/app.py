"""Summarizer wiring: one durable JetStream batch consumer on the log (see ``handlers.py``); settings from
``MNEMO_SUMMARIZER_*`` (``domain.SummarizerSettings``, per tenant via ``MNEMO_SUMMARIZER_TENANTS``)."""

from __future__ import annotations

from faststream.nats import NatsRouter

from services.summarizer.domain import SummarizerSettings
from services.summarizer.handlers import Summarizer
from shared.consumers import log_consumer_router
from shared.readmodels.summaries import SummariesReadModel
from shared.runtime import Deps

SERVICE = "summarizer"


def create_router(deps: Deps, settings: SummarizerSettings | None = None) -> NatsRouter:
    summarizer = Summarizer(
        deps.store,
        deps.publisher,
        deps.require_embedder(),
        SummariesReadModel(deps.db, deps.cipher),
        settings or SummarizerSettings(),
        deps.chat_model,
    )
    return log_consumer_router(
        deps,
        service=SERVICE,
        handle=summarizer.on_batch,
        title="summarizer: presence-aware summaries (count and token triggers), consolidation, stale recompute",
    )
