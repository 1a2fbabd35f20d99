"""Summarizer wiring: one durable JetStream batch consumer on the log (see ``handlers.py``); settings from
the ``summarizer`` section (``MNEMO_SUMMARIZER__<KEY>``, per tenant via ``MNEMO_SUMMARIZER__TENANTS``), read
once here unless the caller passes them."""

from __future__ import annotations

from faststream.nats import NatsRouter

from mnemo.services.summarizer.handlers import HANDLERS, Summarizer
from mnemo.services.summarizer.settings import SECTION, SummarizerSettings
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.consumers import log_consumer_router
from mnemo.shared.deps import Deps
from mnemo.shared.readmodels.catalog import SUMMARIES
from mnemo.shared.settings import read_section

SERVICE = "summarizer"


def create_router(deps: Deps, settings: SummarizerSettings | None = None) -> NatsRouter:
    summarizer = Summarizer(
        deps.store,
        deps.saver,
        deps.require_embedder(),
        deps.read_model(SUMMARIES),
        settings or read_section(SECTION, SummarizerSettings),
        deps.chat_model,
    )
    return log_consumer_router(
        deps,
        service=SERVICE,
        handlers=HANDLERS,
        handle=summarizer.on_batch,
        title="summarizer: presence-aware summaries (count and token triggers), consolidation, stale recompute",
    )


DEFINITION = ServiceDefinition(SERVICE, create_router, embedder=True, read_models=(SUMMARIES,))
