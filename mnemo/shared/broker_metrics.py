"""FastStream's Prometheus middleware for a service's broker, with subjects as bounded label values.

FastStream's ``NatsPrometheusMiddleware`` labels each series with the message's subject. mnemo's subjects are
a fixed set (the contract's, ``mnemo.log.<event type>.v1``, the dead letters'), but a subject may also carry
ids (a vector point's, or a chat partition's tokens): those become the subject's first two tokens and ``>``
(``mnemo.points.>``), so no id reaches a label. Its series go to :data:`mnemo.shared.metrics.REGISTRY` with
the prefix ``mnemo_broker`` and a ``service`` label (``make run`` hosts every service's broker in one process).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from faststream.nats.prometheus.provider import (
    BaseNatsMetricsSettingsProvider,
    BatchNatsMetricsSettingsProvider,
    NatsMetricsSettingsProvider,
)
from faststream.prometheus import ConsumeAttrs
from faststream.prometheus.middleware import PrometheusMiddleware
from nats.aio.msg import Msg

from mnemo.shared import subjects
from mnemo.shared.metrics import BROKER_PREFIX, REGISTRY

_FIXED_PREFIXES = (f"{subjects.LOG_PREFIX}.", f"{subjects.DLQ_PREFIX}.", f"{subjects.PREFIX}.rpc.")
_KNOWN = frozenset(subjects.CHAT_INBOUND) | {subjects.LORE_DOCUMENT_STATUS}


@functools.lru_cache(maxsize=1024)
def bounded_subject(subject: str) -> str:
    """``subject`` when it names no id (a contract, log, dead-letter or RPC subject), else its first two
    tokens and ``>``. Cached: the same few subjects come again and again."""
    if subject in _KNOWN or subject.startswith(_FIXED_PREFIXES):
        return subject
    return ".".join([*subject.split(".")[:2], ">"])


class _Bounded(BaseNatsMetricsSettingsProvider[Any]):
    """FastStream's provider (the one it comes before) with each subject it reports bounded."""

    __slots__ = ()

    def get_consume_attrs_from_message(self, msg: Any) -> ConsumeAttrs:
        # The provider after this class in the MRO (single or batch) implements it; mypy sees the abstract base.
        attrs = super().get_consume_attrs_from_message(msg)  # type: ignore[safe-super]
        attrs["destination_name"] = bounded_subject(attrs["destination_name"])
        return attrs

    def get_publish_destination_name_from_cmd(self, cmd: Any) -> str:
        return bounded_subject(super().get_publish_destination_name_from_cmd(cmd))


class _Single(_Bounded, NatsMetricsSettingsProvider):
    __slots__ = ()


class _Batch(_Bounded, BatchNatsMetricsSettingsProvider):
    __slots__ = ()


_SINGLE, _BATCH = _Single(), _Batch()


def _provider(msg: Msg | Sequence[Msg] | None) -> _Single | _Batch | None:
    if isinstance(msg, Sequence):
        return _BATCH
    if isinstance(msg, Msg) or msg is None:
        return _SINGLE
    return None  # key-value and object-store watches: not counted


def broker_metrics(service: str) -> PrometheusMiddleware[Any, Any]:
    """The middleware a service's broker carries (``mnemo.shared.broker.make_broker``)."""
    return PrometheusMiddleware(
        settings_provider_factory=_provider,
        registry=REGISTRY,
        app_name="mnemo",
        metrics_prefix=BROKER_PREFIX,
        custom_labels={"service": service},
    )
