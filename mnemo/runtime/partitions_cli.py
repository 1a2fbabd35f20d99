"""``mnemo ingest-partitions [--set N] [--nats-url URL]``: the chat stream's partitions, and changing their count on
a running deployment (docs/scaling.md).

Without ``--set``: the current count, each generation's durables with what they hold, and the older generations
ingest is still finishing. With ``--set N``: the stream maps keyed events into ``N`` partitions from then on;
ingest records what the older partitions hold, deletes their durables, then begins the new ones (no restart, no
message lost or reordered). Connects as ``MNEMO_NATS__USER`` (an operator's ``admin`` on a secured deployment).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from rich.console import Console

from mnemo.runtime.contract_client import ContractError, connected
from mnemo.shared import partitions
from mnemo.shared.settings import Settings

#: How long one JetStream API request may take: a deployment under load (its servers busy recording) answers
#: slower than nats-py's 5 s default, and a listing cut short helps no operator.
API_WAIT_S = 30.0


async def _run(settings: Settings, count: int | None, console: Console) -> int:
    async with connected(settings) as nc:
        js = nc.jetstream(timeout=API_WAIT_S)
        if count is not None:
            before = await partitions.set_count(js, count)
            if before == count:
                console.print(f"the chat stream already has {count} partitions")
            else:
                console.print(f"the chat stream maps keyed events into {count} partitions from now on (was {before})")
        for generation in await partitions.generations(js):
            state = "current" if generation.current else "older: being finished, then deleted"
            console.print(f"{generation.count} partitions ({state}): {generation.backlog:,} messages to record")
            for p in generation.durables:
                console.print(f"  {p.durable}: {p.pending:,} pending, {p.ack_pending:,} being recorded")
    return 0


def partitions_command(args: argparse.Namespace) -> int:
    console = Console(soft_wrap=False)
    settings = Settings(service_name="cli")
    nats_url = args.nats_url or os.environ.get("MNEMO_NATS_URL")
    if nats_url:
        settings = settings.model_copy(update={"nats_url": nats_url})
    if args.set is not None and args.set < 1:
        Console(stderr=True).print("[red]error[/red]: --set takes a count of at least 1")
        return 2
    try:
        return asyncio.run(_run(settings, args.set, console))
    except ContractError as exc:
        Console(stderr=True).print(f"[red]error[/red] {exc.code}: {exc.message}")
        return 1
    except (NatsTimeout, TimeoutError) as exc:
        Console(stderr=True).print(
            f"[red]error[/red] timeout: JetStream did not answer within {API_WAIT_S:.0f}s ({exc})"
        )
        return 1
    except NatsError as exc:  # no stream yet (a deployment never started), not allowed (a user without the rights)
        Console(stderr=True).print(f"[red]error[/red] unavailable: {exc}")
        return 1


def add_partitions_command(sub: Any) -> None:
    cmd = sub.add_parser(
        "ingest-partitions",
        help="the chat stream's ingest partitions; --set N changes their count on a running deployment",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("--set", type=int, metavar="N", help="map keyed chat events into N partitions from now on")
    cmd.add_argument("--nats-url", help="the deployment's NATS (default MNEMO_NATS_URL)")
    cmd.set_defaults(func=partitions_command)
