"""On a running stack (`mnemo run`), nats-server's monitoring endpoint shows every log consumer's durable filtering
the event subjects its handler table handles, and no durable on the log taking every event (``mnemo.log.>``)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from mnemo.services.embedding.domain import HANDLERS as EMBEDDING
from mnemo.services.memory_extractor.handlers import HANDLERS as MEMORY_EXTRACTOR
from mnemo.services.summarizer.handlers import HANDLERS as SUMMARIZER
from mnemo.shared import subjects
from tests.e2e.stackproc import StackProcess

LOG_CONSUMERS = {"embedding": EMBEDDING, "summarizer": SUMMARIZER, "memory-extractor": MEMORY_EXTRACTOR}


def log_durables(monitor_port: int) -> dict[str, dict[str, Any]]:
    """Durable name -> its configuration, of every consumer of the log stream, from ``/jsz``."""
    url = f"http://127.0.0.1:{monitor_port}/jsz?consumers=true&config=true"
    with urllib.request.urlopen(url, timeout=10) as response:
        jsz = json.load(response)
    return {
        consumer["name"]: consumer["config"]
        for account in jsz.get("account_details") or []
        for stream in account.get("stream_detail") or []
        if stream["name"] == subjects.LOG_STREAM
        for consumer in stream.get("consumer_detail") or []
    }


def test_every_log_consumer_filters_only_what_it_handles(stack: StackProcess) -> None:
    durables = log_durables(stack.monitor_port)
    for service, table in LOG_CONSUMERS.items():
        config = durables[subjects.durable(service)]
        assert sorted(config.get("filter_subjects") or [config.get("filter_subject")]) == table.filter_subjects()
    for name, config in durables.items():
        filters = config.get("filter_subjects") or [config.get("filter_subject")]
        assert subjects.LOG_ALL not in filters, f"{name} takes every log event"
