"""`mnemo` command line: run the embedded stack, replay the log into the projections, write AsyncAPI and the
settings reference."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from shared.bootstrap import configure_logging
from shared.settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    # Command-line flags win over MNEMO_* variables, which win over defaults.
    if getattr(args, "data_dir", None):
        os.environ["MNEMO_DATA_DIR"] = str(args.data_dir)
    if getattr(args, "nats_url", None):
        os.environ["MNEMO_NATS_URL"] = args.nats_url
    if getattr(args, "mongodb_url", None):
        os.environ["MNEMO_MONGODB_URL"] = args.mongodb_url
    return Settings(service_name="stack")


def cmd_run(args: argparse.Namespace) -> int:
    from runtime.stack import run_stack

    settings = _settings(args)
    asyncio.run(run_stack(settings, demo=not args.no_demo))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from runtime.replay import replay

    settings = _settings(args)
    asyncio.run(replay(settings, embedded=not args.external))
    return 0


def cmd_asyncapi(args: argparse.Namespace) -> int:
    from runtime.contract_doc import asyncapi_document

    doc = json.dumps(asyncapi_document(), indent=2)
    if args.out == "-":
        print(doc)
    else:
        Path(args.out).write_text(doc + "\n")
        print(f"wrote {args.out}")
    return 0


def cmd_settings_doc(args: argparse.Namespace) -> int:
    from runtime.settings_doc import settings_markdown

    if args.out == "-":
        print(settings_markdown(), end="")
    else:
        Path(args.out).write_text(settings_markdown())
        print(f"wrote {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mnemo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def add_backend_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-dir", type=Path, help="embedded data directory (default .data)")
        p.add_argument("--nats-url", help="where nats-server listens (default nats://127.0.0.1:4222)")
        p.add_argument("--mongodb-url", help="where the MongoDB-protocol server listens")

    run = sub.add_parser("run", help="run nats-server, SecantusDB and every mnemo service (embedded mode)")
    add_backend_flags(run)
    run.add_argument("--no-demo", action="store_true", help="do not play the demo scene on first start")
    run.set_defaults(func=cmd_run)

    rep = sub.add_parser("replay", help="rebuild every read model and the vector index from the event log")
    add_backend_flags(rep)
    rep.add_argument(
        "--external", action="store_true", help="use running NATS/MongoDB/Qdrant from settings instead of embedded"
    )
    rep.set_defaults(func=cmd_replay)

    doc = sub.add_parser("asyncapi", help="write the AsyncAPI document of the public contract")
    doc.add_argument("--out", default="asyncapi.json", help="file to write, or - for stdout")
    doc.set_defaults(func=cmd_asyncapi)

    ref = sub.add_parser("settings-doc", help="write the settings reference (every MNEMO_* variable)")
    ref.add_argument("--out", default="docs/settings.md", help="file to write, or - for stdout")
    ref.set_defaults(func=cmd_settings_doc)
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
