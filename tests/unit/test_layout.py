"""The layout's rules, checked on the tree: small modules, short module docstrings, and boundaries (mnemo/shared/ is
infrastructure and contracts, so it imports no service; a service imports no other service; the Python client
installs alone, so it imports only its own dependencies; a service reaches the database only through its read
models' ports)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("mnemo", "clients/python/mnemo_client")
MAX_LINES = 400
MAX_DOCSTRING_LINES = 25


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _part_of(path: Path) -> tuple[str, ...]:
    """A module's place under the import root: ("shared", ...), ("services", "ingest", ...), ("runtime", ...)."""
    parts = path.relative_to(ROOT).parts
    return parts[1:] if parts[0] == "mnemo" else ()


def _service_of(path: Path) -> str | None:
    parts = _part_of(path)
    return parts[1] if parts[:1] == ("services",) and len(parts) > 2 else None


def test_no_module_is_over_the_size_limit():
    big = {str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert big == {}, f"split these modules (over {MAX_LINES} lines)"


def test_no_module_docstring_is_an_essay():
    long = {}
    for path in _modules():
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        if doc and len(doc.splitlines()) > MAX_DOCSTRING_LINES:
            long[str(path.relative_to(ROOT))] = len(doc.splitlines())
    assert long == {}, f"module docstrings over {MAX_DOCSTRING_LINES} lines: keep the contract, move the rest"


@pytest.mark.parametrize("path", [p for p in _modules() if _part_of(p)[:1] == ("shared",)], ids=str)
def test_shared_imports_no_service_and_not_the_host(path: Path):
    bad = {m for m in _imports(path) if m.split(".")[:2] in (["mnemo", "services"], ["mnemo", "runtime"])}
    assert bad == set()


def test_no_service_imports_another():
    crossings = set()
    for path in _modules():
        own = _service_of(path)
        if own is None:
            continue
        for module in _imports(path):
            parts = module.split(".")
            if parts[:2] == ["mnemo", "services"] and len(parts) > 2 and parts[2] != own:
                crossings.add(f"{path.relative_to(ROOT)} -> {module}")
    assert crossings == set(), "services talk over NATS; what two services share belongs in shared/"


def test_the_python_client_imports_only_its_declared_dependencies():
    """clients/python's pyproject declares nats-py and pydantic; anything else would fail where it is installed
    alone (the fresh-venv e2e test shows that too, later and slower)."""
    allowed = {"mnemo_client", "nats", "pydantic", "__future__", *sys.stdlib_module_names}
    outside = set()
    for path in (ROOT / "clients" / "python" / "mnemo_client").rglob("*.py"):
        outside |= {f"{path.name}: {m}" for m in _imports(path) if m.split(".")[0] not in allowed}
    assert outside == set()


def test_the_context_assembler_keeps_a_small_top_level():
    """Its parts live in subpackages (gather/, search/, lore/, assemble/); the top holds only the wiring, the
    handler, its settings and the value types every part shares."""
    top = ROOT / "mnemo" / "services" / "context_assembler"
    modules = sorted(p.name for p in top.glob("*.py"))
    assert len(modules) <= 12, modules
    assert {p.name for p in top.iterdir() if (p / "__init__.py").exists()} >= {"gather", "search", "lore", "assemble"}


# Pairs left with one name for two classes, each waiting for its owner's rework (issue 27), so that the test
# holds from now on for every other name. Remove a pair once it is renamed.
SHARED_NAMES_WAITING = {
    # the context-assembler's own message of a lore scan (role and text) vs the wire model of the reply's messages
    "ChatMessage": {
        "mnemo/services/context_assembler/lore/engine/scan_types.py",
        "clients/python/mnemo_client/wire/contract.py",
    },
    # the context-assembler's scored memory in a request vs the wire model of one memory.list item
    "MemoryItem": {"mnemo/services/context_assembler/items.py", "clients/python/mnemo_client/wire/memory_contract.py"},
    # the log's payloads vs the platform's chat events of the same name; ingest builds the log ones (being reworked)
    "ConversationForked": {
        "mnemo/shared/events/recorded/conversation.py",
        "clients/python/mnemo_client/wire/contract.py",
    },
    "MessageDeleted": {"mnemo/shared/events/recorded/conversation.py", "clients/python/mnemo_client/wire/contract.py"},
    "MessageEdited": {"mnemo/shared/events/recorded/conversation.py", "clients/python/mnemo_client/wire/contract.py"},
}
# One concept in two places by design: the client installs alone, so it holds its own (generated) row of the
# registry's operation table instead of importing the server's class.
SAME_CONCEPT = {
    "Operation": {"mnemo/shared/contract_registry/operation.py", "clients/python/mnemo_client/wire/operations.py"},
}


def test_one_name_per_concept():
    """A class name is defined once across mnemo/services, mnemo/shared and the wire models the services import
    (clients/python/mnemo_client/wire), so a name says which thing it is without its module."""
    defined: dict[str, set[str]] = {}
    for folder in ("mnemo/services", "mnemo/shared", "clients/python/mnemo_client/wire"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    defined.setdefault(node.name, set()).add(str(path.relative_to(ROOT)))
    allowed = SHARED_NAMES_WAITING | SAME_CONCEPT
    twice = {name: sorted(paths) for name, paths in defined.items() if len(paths) > 1 and paths != allowed.get(name)}
    assert twice == {}, "rename one of each (keep the wire models' names: they are the public contract)"
    stale = {name for name, paths in SHARED_NAMES_WAITING.items() if defined.get(name) != paths}
    assert stale == set(), f"renamed or moved since: drop from SHARED_NAMES_WAITING: {sorted(stale)}"


# The modules of mnemo/services that hold the database (or a collection) itself: each is an adapter that goes
# through every collection. Everything else reads and writes its read models through their ports
# (``deps.read_model``, declared in its ``ServiceDefinition``: docs/architecture.md).
HOLD_THE_DATABASE = {
    "mnemo/services/privacy/app.py": "hands it to the sweep and the export",
    "mnemo/services/privacy/erasure.py": "deletes a user's or tenant's rows from every collection of the catalog",
    "mnemo/services/privacy/rows.py": "which rows of a collection are the user's, and their deletion",
    "mnemo/services/privacy/export.py": "reads a user's rows from every read model",
    "mnemo/services/context_assembler/app.py": "hands it to the usage report; none (in memory): no documents",
    "mnemo/services/context_assembler/usage_report.py": "counts a tenant's rows for the operators' report",
}
_DATABASE = re.compile(r"AsyncDatabase|AsyncCollection|from pymongo|deps\.db\b|require_db\(")


def test_a_service_reaches_the_database_only_through_ports():
    services = ROOT / "mnemo" / "services"
    holders = {str(p.relative_to(ROOT)) for p in services.rglob("*.py") if _DATABASE.search(p.read_text())}
    assert holders == set(HOLD_THE_DATABASE), "use the read model's port: deps.read_model(<catalog entry>)"


# Ingest still builds its events by type name (its partitioning is being reworked alongside; issue 27 moves them).
BUILD_EVENTS_BY_NAME = {"mnemo/services/ingest/domain.py", "mnemo/services/ingest/branches.py"}


def test_events_are_built_from_their_payload_class():
    """``new_event(payload, ...)`` (mnemo/shared/events/recorded/base.py) takes the type from the payload's class,
    so a type name and a payload can never disagree; nothing else builds a ``NewEvent`` by hand."""
    by_hand = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "mnemo").rglob("*.py")
        if "NewEvent(" in p.read_text() and p.parent.name != "recorded" and p.name != "envelope.py"
    }
    assert by_hand == BUILD_EVENTS_BY_NAME


SERVICES = sorted(p for p in (ROOT / "mnemo" / "services").iterdir() if (p / "__init__.py").exists())
#: What registers a subscription or an RPC, or declares the service: the wiring, which lives in app.py alone.
_WIRING = re.compile(r"ServiceDefinition\(|NatsRouter\(|\.subscriber\(|\bserve\(router|consumer_router\(")
#: What does I/O: a domain module decides, it neither waits nor talks to a server.
_IO = ("asyncio", "faststream", "nats", "pymongo", "httpx", "qdrant_client", "qdrant_edge")


def test_every_service_has_the_room_plan():
    """``app.py`` wires it (router, subscriptions, RPCs, its ``DEFINITION``), ``__main__.py`` runs it alone, and
    nothing but ``app.py`` registers a subscription (docs/architecture.md, "Where things live")."""
    for service in SERVICES:
        assert {"app.py", "__main__.py"} <= {p.name for p in service.iterdir()}, service.name
        wired = {p.relative_to(service).as_posix() for p in service.rglob("*.py") if _WIRING.search(p.read_text())}
        # The gateway is an ASGI app: no NATS router (docs/architecture.md, "Ways to run").
        assert wired == (set() if service.name == "gateway" else {"app.py"}), (service.name, wired)


def test_a_services_domain_does_no_io():
    domains = [p for service in SERVICES for p in (service / "domain.py", *service.glob("domain/*.py")) if p.exists()]
    assert len(domains) >= 6
    for path in domains:
        io = {m for m in _imports(path) if m.split(".")[0] in _IO}
        assert io == set(), f"{path.relative_to(ROOT)} does I/O: {sorted(io)}"
