"""What each context reply adds to the metrics: its tokens, each section's, and the parts named in ``degraded``
(by name: ``lore:<uid>`` and ``knowledge:<fact_id>`` count as ``lore`` and ``knowledge``, never their ids)."""

from __future__ import annotations

from typing import Any

from mnemo.shared.metrics import CONTEXT_DEGRADED, CONTEXT_SECTION_TOKENS, CONTEXT_TOKENS
from mnemo_client.wire.contract import ContextAssembleReply

#: Names past this many distinct ones count as ``other``: the label set stays bounded whatever a part is called.
MAX_NAMES = 64


class ContextMeter:
    def __init__(self) -> None:
        self._sections: dict[str, Any] = {}
        self._degraded: dict[str, Any] = {}

    def observe(self, reply: object) -> None:
        if not isinstance(reply, ContextAssembleReply):
            return
        CONTEXT_TOKENS.observe(reply.token_count)
        for section in reply.sections:
            _child(self._sections, section.name, CONTEXT_SECTION_TOKENS, "section").observe(section.tokens)
        for part in reply.degraded:
            _child(self._degraded, part.split(":", 1)[0], CONTEXT_DEGRADED, "part").inc()


def _child(children: dict[str, Any], name: str, metric: Any, label: str) -> Any:
    child = children.get(name)
    if child is None:
        name = name if len(children) < MAX_NAMES else "other"
        child = children.get(name) or children.setdefault(name, metric.labels(**{label: name}))
    return child
