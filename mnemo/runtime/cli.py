"""`mnemo` command line: run the embedded stack or a local cluster, replay the log into the projections, export
a user's data, rotate keys, write the files generated from the contract registry and the settings reference;
against a running deployment (``mnemo/runtime/cli_contract.py``): lore, memories, context, dead letters; the HTTP
gateway."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from mnemo.shared.logs import configure_logging
from mnemo.shared.settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    # Command-line flags win over MNEMO_* variables, which win over defaults.
    if getattr(args, "data_dir", None):
        os.environ["MNEMO_DATA_DIR"] = str(args.data_dir)
    if getattr(args, "nats_url", None):
        os.environ["MNEMO_NATS_URL"] = args.nats_url
    if getattr(args, "mongodb_url", None):
        os.environ["MNEMO_MONGODB_URL"] = args.mongodb_url
    return Settings(service_name="stack")


def _secure(args: argparse.Namespace, settings: Settings) -> tuple[Settings, str]:
    """``--secure``: the users' passwords and a local CA under the data directory (``mnemo.runtime.secure``); the
    settings that use them and the nats-server configuration that enforces them."""
    if not getattr(args, "secure", False):
        return settings, ""
    from mnemo.runtime.secure import secure_nats

    secured = secure_nats(settings.data_dir)
    os.environ.update(secured.env)
    return Settings(service_name=settings.service_name), secured.server_config


def cmd_run(args: argparse.Namespace) -> int:
    from mnemo.runtime.stack import run_stack

    settings, nats_config = _secure(args, _settings(args))
    asyncio.run(run_stack(settings, demo=not args.no_demo, nats_config=nats_config, gateway=not args.no_gateway))
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    from mnemo.runtime.cluster_control import ClusterControlError, restart, status_lines
    from mnemo.runtime.topology import TopologyError, resolve_topology

    data_dir: Path = args.data_dir or Path(".data-cluster")
    try:
        if args.action == "start":
            if args.target:
                raise ClusterControlError(f"unexpected arguments: {' '.join(args.target)}")
            from mnemo.runtime.cluster import ClusterConfig, ClusterRunningError, run_cluster
            from mnemo.runtime.servers import ServerStartError

            config = ClusterConfig(
                data_dir=data_dir,
                replicas=resolve_topology(args.topology, args.replicas or ()),
                nats_url=args.nats_url or os.environ.get("MNEMO_NATS_URL", "nats://127.0.0.1:4222"),
                mongodb_url=args.mongodb_url
                or os.environ.get("MNEMO_MONGODB_URL", "mongodb://127.0.0.1:27017/?directConnection=true"),
                node_ports=[int(p) for p in args.nats_ports.split(",")] if args.nats_ports else None,
                stop_timeout=args.stop_timeout,
                secure=args.secure,
            )
            try:
                return run_cluster(config)
            except (ClusterRunningError, ServerStartError) as exc:
                print(f"mnemo cluster: {exc}", file=sys.stderr)
                return 1
        if args.action == "status":
            print("\n".join(status_lines(data_dir)))
            return 0
        if not 1 <= len(args.target) <= 2 or (len(args.target) == 2 and not args.target[1].isdigit()):
            raise ClusterControlError("usage: mnemo cluster restart <name> [<replica>] [--data-dir DIR]")
        replica = int(args.target[1]) if len(args.target) == 2 else None
        entry = restart(data_dir, args.target[0], replica)
        print(
            f"{args.target[0]}{'' if replica is None else f' {replica}'} restarted: pid {entry['pid']}, log {entry['log']}"
        )
        return 0
    except (ClusterControlError, TopologyError, ValueError) as exc:
        print(f"mnemo cluster: {exc}", file=sys.stderr)
        return 2


def cmd_replay(args: argparse.Namespace) -> int:
    from mnemo.runtime.replay import replay

    settings, nats_config = _secure(args, _settings(args))
    asyncio.run(replay(settings, embedded=not args.external, nats_config=nats_config))
    return 0


def cmd_export_user(args: argparse.Namespace) -> int:
    from mnemo.runtime.privacy_cli import export_user

    settings = _settings(args)
    out: Path = args.out or Path(f"export-{args.tenant}-{args.user}.json")
    asyncio.run(export_user(settings, args.tenant, args.user, out, embedded=args.embedded))
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    from mnemo.runtime import keys_cli

    settings = _settings(args)
    if args.action == "rotate-kek":
        asyncio.run(keys_cli.kek(settings, embedded=args.embedded, stop_after=args.stop_after))
        return 0
    if not args.tenant:
        print("mnemo keys rotate: give --tenant", file=sys.stderr)
        return 2
    report = asyncio.run(
        keys_cli.tenant(settings, args.tenant, embedded=args.embedded, stop_after=args.stop_after, batch=args.batch)
    )
    return 0 if report.done else 3


def cmd_reindex(args: argparse.Namespace) -> int:
    from mnemo.runtime.reindex import reindex, target_embedder

    settings = _settings(args)
    try:
        target = target_embedder(settings.embedder, args.model, args.provider, args.dimensions, args.base_url)
    except ValueError as exc:
        print(f"mnemo reindex: {exc}", file=sys.stderr)
        return 2
    asyncio.run(reindex(settings, target, embedded=not args.external, force=args.force))
    return 0


def cmd_asyncapi(args: argparse.Namespace) -> int:
    from mnemo.runtime.contract_doc import asyncapi_document

    doc = json.dumps(asyncapi_document(), indent=2)
    if args.out == "-":
        print(doc)
    else:
        Path(args.out).write_text(doc + "\n")
        print(f"wrote {args.out}")
    return 0


def cmd_contract_doc(args: argparse.Namespace) -> int:
    from mnemo.runtime.contract_artifacts import stale, write

    if args.check:
        outdated = stale()
        for path in outdated:
            print(f"stale: {path}", file=sys.stderr)
        if outdated:
            print("run `mnemo contract-doc` (or `make docs`) and commit the result", file=sys.stderr)
        return 1 if outdated else 0
    for path in write():
        print(f"wrote {path}")
    return 0


def cmd_settings_doc(args: argparse.Namespace) -> int:
    from mnemo.runtime.settings_doc import settings_markdown

    if args.out == "-":
        print(settings_markdown(), end="")
    else:
        Path(args.out).write_text(settings_markdown())
        print(f"wrote {args.out}")
    return 0


def cmd_metrics_doc(args: argparse.Namespace) -> int:
    from mnemo.runtime.metrics_doc import with_metric_table

    path = Path(args.out)
    path.write_text(with_metric_table(path.read_text()))
    print(f"wrote the metric table of {args.out}")
    return 0


_SECURE_HELP = (
    "NATS with TLS and a least-privilege user per service and the platform (passwords and a local CA "
    "generated once under the data directory's secure/)"
)


def cmd_nats_config(args: argparse.Namespace) -> int:
    from mnemo.runtime.nats_auth import render_authorization, write_passwords

    text = render_authorization(write_passwords(args.passwords) if args.passwords else None)
    if args.out == "-":
        print(text, end="")
    else:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mnemo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def add_backend_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-dir", type=Path, help="embedded data directory (default .data)")
        p.add_argument("--nats-url", help="where nats-server listens (default nats://127.0.0.1:4222)")
        p.add_argument("--mongodb-url", help="where the MongoDB-protocol server listens")
        p.add_argument("--secure", action="store_true", help=_SECURE_HELP)

    run = sub.add_parser("run", help="run nats-server, SecantusDB and every mnemo service (embedded mode)")
    add_backend_flags(run)
    run.add_argument("--no-demo", action="store_true", help="do not play the demo scene on first start")
    run.add_argument(
        "--gateway",
        action="store_true",
        help="serve the HTTP gateway and the workbench (the default; MNEMO_GATEWAY__HOST/PORT/API_KEYS)",
    )
    run.add_argument("--no-gateway", action="store_true", help="serve neither the HTTP gateway nor the workbench")
    run.set_defaults(func=cmd_run)

    clu = sub.add_parser(
        "cluster",
        help="a 3-node NATS JetStream cluster, SecantusDB and every service replica as its own process",
        description="start (default): run the local cluster until Ctrl-C. restart <name> [<replica>]: start "
        "one process of the running cluster again (a service, nats-<n> or secantusd). status: list them.",
    )
    clu.add_argument("action", nargs="?", choices=("start", "restart", "status"), default="start")
    clu.add_argument("target", nargs="*", help="restart: the process name and, for a service, the replica")
    clu.add_argument("--data-dir", type=Path, help="the cluster's data directory (default .data-cluster)")
    clu.add_argument("--nats-url", help="where the first NATS node listens (default nats://127.0.0.1:4222)")
    clu.add_argument("--nats-ports", help="client ports of nodes 2 and 3, e.g. 4223,4224 (default: the next two)")
    clu.add_argument("--mongodb-url", help="where SecantusDB listens (default mongodb://127.0.0.1:27017)")
    clu.add_argument("--topology", type=Path, help="a TOML or JSON file with a [replicas] table")
    clu.add_argument("--replicas", action="append", help="replicas per service, e.g. ingest=3,lore=1 (over the file)")
    clu.add_argument("--secure", action="store_true", help=_SECURE_HELP)
    clu.add_argument("--stop-timeout", type=float, default=40.0, help="seconds a process gets to stop on SIGTERM")
    clu.set_defaults(func=cmd_cluster)

    rep = sub.add_parser("replay", help="rebuild every read model and the vector index from the event log")
    add_backend_flags(rep)
    rep.add_argument(
        "--external", action="store_true", help="use running NATS/MongoDB/Qdrant from settings instead of embedded"
    )
    rep.set_defaults(func=cmd_replay)

    auth = sub.add_parser("nats-config", help="write nats-server's least-privilege users (deploy/nats-auth.conf)")
    auth.add_argument("--out", default="deploy/nats-auth.conf", help="file to write, or - for stdout")
    auth.add_argument(
        "--passwords",
        type=Path,
        help="write a random password per user to DIR/<user>.password (kept when present) and put them in the "
        "file; without it the file reads each from $MNEMO_NATS_PASSWORD_<USER>",
    )
    auth.set_defaults(func=cmd_nats_config)
    exp = sub.add_parser("export-user", help="write everything mnemo holds about a user to a JSON file")
    add_backend_flags(exp)
    exp.add_argument("--tenant", required=True, help="the user's tenant id")
    exp.add_argument("--user", required=True, help="the user id")
    exp.add_argument("--out", type=Path, help="file to write (default export-<tenant>-<user>.json)")
    exp.add_argument(
        "--embedded", action="store_true", help="start the embedded servers first (the stack must be stopped)"
    )
    exp.set_defaults(func=cmd_export_user)

    keys = sub.add_parser(
        "keys",
        help="key rotation: re-wrap every data key under the current KEK, or rotate a tenant's data keys",
        description="rotate-kek: re-wrap every data key under MNEMO_KEK (the old KEK in MNEMO_KEK_PREVIOUS). "
        "rotate --tenant T: new data keys for the tenant and its users, then re-encrypt its records. Both "
        "print progress and resume after an interruption (docs/privacy.md).",
    )
    keys.add_argument("action", choices=("rotate-kek", "rotate"))
    keys.add_argument("--tenant", help="rotate: the tenant whose data keys to rotate")
    keys.add_argument("--stop-after", type=int, help=argparse.SUPPRESS)  # tests: stop as a killed run would
    keys.add_argument("--batch", type=int, default=200, help="documents per batch (the progress and resume step)")
    add_backend_flags(keys)
    keys.add_argument("--embedded", action="store_true", help="start the embedded servers first (stack stopped)")
    keys.set_defaults(func=cmd_keys)
    rei = sub.add_parser(
        "reindex",
        help="re-embed every vector with another model (from the event log, with progress)",
        description="--model bundled|bundled-multilingual, or a model the HTTP --provider serves",
    )
    add_backend_flags(rei)
    rei.add_argument("--model", required=True, help="bundled, bundled-multilingual, or the HTTP provider's model")
    rei.add_argument("--provider", choices=("bundled", "bundled-multilingual", "openai", "tei", "ollama"))
    rei.add_argument("--dimensions", type=int, help="the model's vector size (HTTP providers)")
    rei.add_argument("--base-url", help="the HTTP provider's endpoint")
    rei.add_argument("--force", action="store_true", help="rebuild even when every point is on the model")
    rei.add_argument(
        "--external", action="store_true", help="use running NATS/MongoDB/Qdrant from settings instead of embedded"
    )
    rei.set_defaults(func=cmd_reindex)

    doc = sub.add_parser("asyncapi", help="write the AsyncAPI document of the public contract")
    doc.add_argument("--out", default="asyncapi.json", help="file to write, or - for stdout")
    doc.set_defaults(func=cmd_asyncapi)

    con = sub.add_parser(
        "contract-doc",
        help="write every file generated from the contract registry (AsyncAPI, JSON Schema, client models, docs/contract.md's table)",
    )
    con.add_argument("--check", action="store_true", help="write nothing; exit 1 when a generated file is stale")
    con.set_defaults(func=cmd_contract_doc)
    from mnemo.runtime.agents.cli import add_agent_commands
    from mnemo.runtime.chat_import_cli import add_import_chats_command
    from mnemo.runtime.cli_contract import add_commands, gateway_command
    from mnemo.runtime.partitions_cli import add_partitions_command
    from mnemo.runtime.status_cli import add_status_command

    add_commands(sub)
    add_status_command(sub)
    add_partitions_command(sub)
    add_import_chats_command(sub)
    add_agent_commands(sub)
    gw = sub.add_parser(
        "gateway",
        help="the HTTP gateway: serve it alone (needs only NATS), or print a new API key (new-key TENANT)",
    )
    gw.add_argument("action", nargs="?", choices=("serve", "new-key"), default="serve")
    gw.add_argument("tenant", nargs="?", help="new-key: the tenant the key acts for")
    gw.add_argument(
        "--engine", action="store_true", help="new-key: with the memory API's engine right (docs/memory-api.md)"
    )
    gw.add_argument(
        "--operator", action="store_true", help="new-key: with the operator views' right (docs/workbench.md)"
    )
    gw.set_defaults(func=gateway_command)

    ref = sub.add_parser("settings-doc", help="write the settings reference (every MNEMO_* variable)")
    ref.add_argument("--out", default="docs/settings.md", help="file to write, or - for stdout")
    ref.set_defaults(func=cmd_settings_doc)
    met = sub.add_parser("metrics-doc", help="write the metric table (mnemo/shared/metrics.py) into docs/operations.md")
    met.add_argument("--out", default="docs/operations.md", help="the file holding the table between its markers")
    met.set_defaults(func=cmd_metrics_doc)
    return parser


def main(argv: list[str] | None = None) -> int:
    configure_logging()
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
