"""``mnemo status [--data-dir DIR | --probe [NAME=]URL ...] [--nats-url URL] [--json]``: the report of
:mod:`mnemo.runtime.status` as one table, or as JSON for scripts. Exit code 0 when every process is ready and
NATS could be read, 1 otherwise (a monitoring script can rely on it). ``--usage [--tenant T] [--since D]
[--until D]``: the per-tenant usage report instead (``mnemo.rpc.ops.usage.v1``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console

from mnemo.runtime import views
from mnemo.runtime.contract_client import ContractError, connected, contract_call
from mnemo.runtime.status import ProcessStatus, gather, processes_from_flags, processes_from_pids
from mnemo.shared import subjects
from mnemo.shared.mapping import mapped
from mnemo.shared.settings import Settings
from mnemo_client.wire.ops_contract import UsageRequest


def _targets(args: argparse.Namespace) -> tuple[list[ProcessStatus], list[str]]:
    if args.probe:
        return processes_from_flags(args.probe), []
    data_dir: Path | None = args.data_dir
    if data_dir is None:  # the local deployments' defaults: a cluster's, else the one-process stack's
        data_dir = next((d for d in (Path(".data-cluster"), Path(".data")) if (d / "run" / "pids.json").exists()), None)
    return processes_from_pids(data_dir) if data_dir is not None else ([], [])


def status_command(args: argparse.Namespace) -> int:
    console = Console(soft_wrap=False)
    try:
        processes, node_urls = _targets(args)
    except (OSError, ValueError) as exc:
        Console(stderr=True).print(f"[red]error[/red]: {exc}")
        return 2
    nats_url = args.nats_url or os.environ.get("MNEMO_NATS_URL") or ",".join(node_urls) or None
    settings = Settings(service_name="cli")
    if nats_url:
        settings = settings.model_copy(update={"nats_url": nats_url})
    if args.usage:
        return _usage(args, settings, console)
    report = asyncio.run(gather(settings, processes))
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        views.status(console, report)
    healthy = not report.problems and all(p.ready is not False for p in report.processes)
    return 0 if healthy else 1


def _usage(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    """``--usage``: the per-tenant usage report (``mnemo.rpc.ops.usage.v1``, an operators' request)."""
    try:
        request = mapped(UsageRequest, args, tenant_ids=args.tenant)  # the flags are named like its fields
    except ValidationError as exc:
        Console(stderr=True).print(f"[red]error[/red]: {exc}")
        return 2

    async def call() -> dict[str, Any]:
        async with connected(settings) as nc:
            return await contract_call(nc, subjects.OPS_USAGE, request, wait_s=120)

    try:
        reply = asyncio.run(call())
    except ContractError as exc:
        Console(stderr=True).print(f"[red]error[/red] {exc.code}: {exc.message}")
        return 1
    if args.json:
        print(json.dumps(reply, indent=2))
    else:
        views.usage(console, reply)
    return 0


def add_status_command(sub: Any) -> None:
    st = sub.add_parser(
        "status",
        help="a running deployment at a glance: readiness, durable lag and partitions, dead letters, stream sizes",
        description="Reads each process's /readyz (from pids.json of --data-dir, default .data-cluster or .data, "
        "or from --probe URLs) and JetStream (--nats-url). Exit code 1 when a process is not ready.",
    )
    st.add_argument("--data-dir", type=Path, help="a `make cluster` or `make run` data directory (its run/pids.json)")
    st.add_argument("--probe", action="append", help="a process's probe server, [NAME=]URL (repeatable)")
    st.add_argument("--nats-url", help="the deployment's NATS (default MNEMO_NATS_URL, or the cluster's nodes)")
    st.add_argument("--json", action="store_true", help="print the report as JSON")
    st.add_argument("--usage", action="store_true", help="the per-tenant usage report instead (operators only)")
    st.add_argument("--tenant", action="append", help="--usage: only this tenant (repeatable)")
    st.add_argument("--since", help="--usage: the first UTC day of the metered counts, YYYY-MM-DD")
    st.add_argument("--until", help="--usage: the last UTC day, YYYY-MM-DD (included)")
    st.add_argument("--limit", type=int, default=100, help="--usage: tenants per page")
    st.add_argument("--offset", type=int, default=0, help="--usage: tenants to skip")
    st.add_argument(
        "--growth-days", type=int, default=0, help="--usage: also each memory type held and added over N days"
    )
    st.set_defaults(func=status_command)
