"""The stack works under the least-privilege users: every service as its own OS process (``python -m
services.<name>``, as ``mnemo cluster`` runs them), each connecting as its own NATS user over TLS
(``MNEMO_NATS__PASSWORD_DIR``, ``MNEMO_NATS__TLS_CA_FILE``), vectors in stream mode (the points stream's
permissions too). The platform publishes a conversation and gets a context back that retrieved an old message
by meaning, imports a lorebook and lists memories; the server logs no permission violation from any service.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo.runtime.catalog import SERVICES
from mnemo.shared import subjects
from tests.integration.secured import SecuredNats, connected, start_secured
from tests.integration.test_points_stream_processes import DRAGON, FILLER, REQUEST, T0, Services, message
from tests.waiting import wait_until


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[SecuredNats]:
    yield from start_secured(tmp_path / "secured-nats")


async def test_every_service_in_its_own_process_under_its_own_user(
    secured: SecuredNats, mongo_url: str, tmp_path: Path
) -> None:
    services = Services(tmp_path, secured.url, mongo_url)
    services.env.update(secured.secure.env)
    services.env.update({"MNEMO_SUMMARIZER__FIRST_AT": "2", "MNEMO_SUMMARIZER__EVERY": "2"})
    try:
        for spec in SERVICES:
            services.start(spec.name, spec.module)
        async with connected(secured, "platform") as platform:
            js = platform.nc.jetstream()
            bot = {"tenant_id": REQUEST["tenant_id"], "bot_id": "ada", "name": "Ada", "updated_at": T0.isoformat()}
            await js.publish(subjects.BOT_UPSERTED, json.dumps(bot).encode())
            for i, text in enumerate([DRAGON, *FILLER]):
                await js.publish(subjects.MESSAGE_CREATED, json.dumps(message(i, text)).encode())

            async def retrieved() -> bool:
                reply = json.loads(
                    (await platform.nc.request(subjects.CONTEXT_ASSEMBLE, json.dumps(REQUEST).encode(), 60)).data
                )
                return DRAGON in reply.get("context", "")

            await wait_until(retrieved, "the context retrieves the old message by meaning", 180, interval=0.5)
            book = {
                "tenant_id": REQUEST["tenant_id"], "owner_user_id": REQUEST["user_id"], "name": "Mill lore",
                "data": {"entries": {"0": {"uid": 0, "key": ["mill"], "content": "The mill burned in 1820."}}},
                "attach_to_bots": ["ada"],
            }  # fmt: skip
            imported = json.loads((await platform.nc.request(subjects.LORE_IMPORT, json.dumps(book).encode(), 60)).data)
            assert imported["entries"] == 1, imported
            listing = json.dumps({"tenant_id": REQUEST["tenant_id"], "user_id": REQUEST["user_id"]}).encode()

            async def summarized() -> bool:  # the summarizer's summary, appended and relayed as its own user
                return bool(json.loads((await platform.nc.request(subjects.MEMORY_LIST, listing, 60)).data)["items"])

            await wait_until(summarized, "the memory service lists the summarizer's summary", 180, interval=1)
            platform.allowed()
        for spec in SERVICES:
            services.stop(spec.name)
    finally:
        services.stop_all()
    assert secured.violations() == []
