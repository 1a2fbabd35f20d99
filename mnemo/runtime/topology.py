"""How many replicas of each service ``mnemo cluster`` runs: the defaults, a topology file, then flags.

A topology file is TOML (``.toml``) or JSON (any other name) with one table, ``replicas``, naming services as
in the subjects::

    [replicas]            # {"replicas": {"ingest": 3, "lore": 1}}
    ingest = 3
    context-assembler = 4

Services it leaves out keep their default (:data:`DEFAULT_REPLICAS`); 0 runs none of that service. Flags
(``--replicas ingest=3,lore=1``, repeatable) override the file.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from mnemo.runtime.catalog import SERVICES

#: The default topology, the catalog's (two of each pipeline service, one lore and one memory service); the
#: compose file uses the same counts (``tests/unit/test_compose.py``).
DEFAULT_REPLICAS: dict[str, int] = {spec.name: spec.replicas for spec in SERVICES}


class TopologyError(ValueError):
    pass


def _checked(counts: Mapping[str, object], origin: str) -> dict[str, int]:
    known = {s.name for s in SERVICES}
    out: dict[str, int] = {}
    for name, count in counts.items():
        if name not in known:
            raise TopologyError(f"{origin}: unknown service {name!r} (services: {', '.join(sorted(known))})")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise TopologyError(f"{origin}: replicas of {name} must be a whole number >= 0, not {count!r}")
        out[name] = count
    return out


def read_topology_file(path: Path) -> dict[str, int]:
    """The replica counts a topology file sets (only those it names)."""
    text = path.read_text()
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise TopologyError(f"{path}: {exc}") from exc
    replicas = data.get("replicas") if isinstance(data, dict) else None
    if not isinstance(replicas, dict):
        raise TopologyError(f"{path}: expected a table 'replicas' mapping service names to counts")
    return _checked(replicas, str(path))


def parse_replica_flags(values: Iterable[str]) -> dict[str, int]:
    """``["ingest=3,lore=1", "memory=2"]`` as counts."""
    counts: dict[str, object] = {}
    for value in values:
        for item in filter(None, (part.strip() for part in value.split(","))):
            name, sep, count = item.partition("=")
            if not sep or not count.strip().isdigit():
                raise TopologyError(f"--replicas: expected service=count, got {item!r}")
            counts[name.strip()] = int(count)
    return _checked(counts, "--replicas")


def resolve_topology(file: Path | None = None, flags: Iterable[str] = ()) -> dict[str, int]:
    """Every service's replica count, in the catalog's order: defaults, then the file, then the flags."""
    counts = dict(DEFAULT_REPLICAS)
    if file is not None:
        counts.update(read_topology_file(file))
    counts.update(parse_replica_flags(flags))
    return {s.name: counts[s.name] for s in SERVICES}
