"""A durable consumer's lag read the way KEDA's ``nats-jetstream`` scaler reads it, and the replicas it would ask for.

KEDA (>= 2.20, ``pkg/scalers/nats_jetstream_scaler.go``) asks a node's monitoring port for
``/jsz?acc=<account>&config=true&consumers=true``, finds the node that leads the consumer (in a cluster only
the leader's numbers are current), and takes ``num_pending + num_ack_pending`` of that consumer as the lag: the
messages not yet delivered plus those delivered and not yet acknowledged. The Horizontal Pod Autoscaler it
feeds then asks for ``ceil(lag / lagThreshold)`` replicas, within the ScaledObject's min and max; at or below
``activationLagThreshold`` a ScaledObject whose min is 0 scales to zero. A consumer that does not exist is an
error (KEDA >= 2.20 reports it instead of scaling to the maximum).

Which consumers exist, on which stream, comes from the services' own wiring (:data:`WORKERS`, derived from
``mnemo.runtime.nats_auth.ROLES`` and ``mnemo.shared.subjects.durable``); the Helm chart's KEDA triggers are
rendered from the same table (``deploy/helm/mnemo/files/consumers.json``, written by :func:`write_chart_file`
and checked by ``tests/chart``).

Used by the KEDA reading test on ``mnemo cluster`` (``tests/integration/test_keda_reading.py``); ``mnemo
status`` can show the same figures.
"""

from __future__ import annotations

import json
import math
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemo.runtime.nats_auth import ROLES
from mnemo.shared import subjects

#: The account of a server without accounts (mnemo's NATS users all live in it).
GLOBAL_ACCOUNT = "$G"
#: Where the chart reads the consumers its KEDA triggers name.
CHART_FILE = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "mnemo" / "files" / "consumers.json"


class LagReadError(RuntimeError):
    """The consumer cannot be read: no node answers, or none leads it (KEDA reports the same as an error)."""


@dataclass(frozen=True)
class WorkerConsumer:
    """A JetStream worker service and the durable consumers its replicas share. Ingest's also include one durable
    per partition of the chat stream (``partition_durable``, ``%`` partition and count: the count is a setting)."""

    service: str
    stream: str
    durables: tuple[str, ...]
    partition_durable: str = ""

    def all_durables(self, partitions: int) -> tuple[str, ...]:
        """Every durable with the chat stream in ``partitions`` partitions (one KEDA trigger each)."""
        if not self.partition_durable:
            return self.durables
        return (*self.durables, *(self.partition_durable % (k, partitions) for k in range(partitions)))


def _worker(name: str, stream: str) -> WorkerConsumer:
    if name == "ingest":  # partitioned: the v1 router's durable, then one per partition (mnemo/shared/partitions.py)
        return WorkerConsumer(name, stream, (subjects.INGEST_V1_DURABLE,), subjects.PARTITION_DURABLE)
    return WorkerConsumer(name, stream, (subjects.durable(name),))


def _workers() -> tuple[WorkerConsumer, ...]:
    return tuple(_worker(name, role.consumes) for name, role in ROLES.items() if role.consumes is not None)


#: Every service that consumes a JetStream stream through durables, in the order of ``ROLES``.
WORKERS: tuple[WorkerConsumer, ...] = _workers()


@dataclass(frozen=True)
class ConsumerLag:
    stream: str
    durable: str
    leader: str  # the server name of the node whose numbers these are
    num_pending: int  # matching messages not yet delivered
    num_ack_pending: int  # delivered, not yet acknowledged

    @property
    def lag(self) -> int:
        return self.num_pending + self.num_ack_pending


def jsz_url(monitor_url: str, account: str = GLOBAL_ACCOUNT) -> str:
    """The URL KEDA asks: ``<monitor>/jsz?acc=<account>&config=true&consumers=true``."""
    query = urllib.parse.urlencode({"acc": account, "config": "true", "consumers": "true"})
    return f"{monitor_url.rstrip('/')}/jsz?{query}"


def _get_json(url: str, timeout: float) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def find_consumer(jsz: dict[str, Any], account: str, stream: str, durable: str) -> dict[str, Any] | None:
    """The consumer's entry in one node's ``/jsz`` answer (KEDA matches the account by id or by name)."""
    for acc in jsz.get("account_details") or []:
        if account not in (acc.get("id"), acc.get("name")):
            continue
        for detail in acc.get("stream_detail") or []:
            if detail.get("name") != stream:
                continue
            for consumer in detail.get("consumer_detail") or []:
                if consumer.get("name") == durable:
                    found: dict[str, Any] = consumer
                    return found
    return None


def read_lag(
    monitor_urls: Iterable[str],
    stream: str,
    durable: str,
    account: str = GLOBAL_ACCOUNT,
    timeout: float = 5.0,
) -> ConsumerLag:
    """The consumer's lag as its leader reports it. ``monitor_urls``: every node's monitoring base URL.

    A node that does not answer is passed over (KEDA tries the nodes it learns from ``/varz`` the same way);
    a single server (no cluster) is its consumers' leader."""
    urls = list(monitor_urls)
    seen: list[str] = []
    for url in urls:
        try:
            name = str(_get_json(f"{url.rstrip('/')}/varz", timeout).get("server_name", ""))
            jsz = _get_json(jsz_url(url, account), timeout)
        except OSError as exc:
            seen.append(f"{url}: {exc}")
            continue
        consumer = find_consumer(jsz, account, stream, durable)
        if consumer is None:
            seen.append(f"{url} ({name}): no consumer {durable} on {stream}")
            continue
        leader = (consumer.get("cluster") or {}).get("leader")
        if leader in (None, name):
            return ConsumerLag(
                stream, durable, name, int(consumer.get("num_pending", 0)), int(consumer.get("num_ack_pending", 0))
            )
        seen.append(f"{url} ({name}): {durable} is led by {leader}")
    raise LagReadError(f"no node leads consumer {durable} of {stream} in account {account}: " + "; ".join(seen))


@dataclass(frozen=True)
class ScalingBounds:
    """What a ScaledObject's nats-jetstream trigger and replica range say."""

    min_replicas: int
    max_replicas: int
    lag_threshold: int
    activation_lag_threshold: int = 0


def desired_replicas(lag: int, bounds: ScalingBounds) -> int:
    """Replicas the autoscaler asks for at ``lag``: ``ceil(lag / lagThreshold)`` (the HPA's rule for an
    ``AverageValue`` target) within the bounds; at or below the activation threshold with a min of 0, none.

    The HPA leaves the count alone while the ratio to the current count is within its 10 % tolerance: this is
    the count it moves to once it moves."""
    if lag < 0 or bounds.lag_threshold <= 0:
        raise ValueError(f"lag {lag} and lag threshold {bounds.lag_threshold} must be >= 0 and > 0")
    if bounds.min_replicas == 0 and lag <= bounds.activation_lag_threshold:
        return 0
    wanted = math.ceil(lag / bounds.lag_threshold)
    return max(bounds.min_replicas, 1, min(bounds.max_replicas, wanted))


def chart_consumers() -> dict[str, Any]:
    """The chart's view of :data:`WORKERS`: each worker's stream and durables, by service name."""
    return {
        "generated_by": "mnemo/runtime/consumer_lag.py (make docs); do not edit by hand",
        "workers": {w.service: _chart_worker(w) for w in WORKERS},
    }


def _chart_worker(worker: WorkerConsumer) -> dict[str, Any]:
    out: dict[str, Any] = {"stream": worker.stream, "durables": list(worker.durables)}
    if worker.partition_durable:
        out["partitionDurable"] = worker.partition_durable  # printf'd with each partition and .Values.ingestPartitions
    return out


def chart_file_text() -> str:
    return json.dumps(chart_consumers(), indent=2) + "\n"


def write_chart_file(path: Path = CHART_FILE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(chart_file_text())
    return path


if __name__ == "__main__":
    print(write_chart_file())
