"""The parsing subprocess: ``python -m mnemo.services.lore.documents.worker <path> <name> <memory_mb> <cpu_s>``.

Reads the file (``reading.read``) and chunks it (``chunks.chunk_blocks``), then writes one JSON object to
stdout: ``{"ok": true, "pages": n, "chunks": [{index, text, heading, page, tokens, hash}, ...]}`` or
``{"ok": false, "reason": "..."}``. It runs in its own process, so a hostile file can exhaust only this process:
before reading it lowers its own priority and caps its address space and CPU time (``parsing.py`` adds the
wall-clock deadline). The child sets these itself rather than through ``preexec_fn``: a ``preexec_fn`` makes
the parent ``fork()`` instead of ``vfork()``, and forking a service that holds a model in memory copies its
page tables on the event loop (measured with tests/integration/test_documents_isolation.py: another tenant's
context p95 went from 2.5x its baseline to 1.8x once the limits moved here).
"""

from __future__ import annotations

import json
import os
import resource
import sys
from pathlib import Path


def run(path: Path, name: str) -> dict[str, object]:
    # Imported here, not at the top: the readers' imports (pypdf, python-docx, lxml, BeautifulSoup) are most of
    # the child's start-up CPU, and they run after ``limit_self`` has lowered its priority.
    from mnemo.services.lore.documents.chunks import chunk_blocks
    from mnemo.services.lore.documents.reading import DocumentError, read

    try:
        parsed = read(path, name)
    except DocumentError as exc:
        return {"ok": False, "reason": str(exc)}
    except MemoryError:
        return {"ok": False, "reason": "the file needs more memory to read than mnemo allows for one document"}
    except RecursionError:
        return {"ok": False, "reason": "the file is nested too deeply to read"}
    chunks = chunk_blocks(parsed.blocks)
    return {
        "ok": True,
        "pages": parsed.pages,
        "chunks": [
            {
                "index": c.index,
                "text": c.text,
                "heading": c.heading,
                "page": c.page,
                "last_page": c.last_page,
                "tokens": c.tokens,
                "hash": c.hash,
            }
            for c in chunks
        ],
    }


def limit_self(memory_mb: int, cpu_s: int) -> None:
    os.nice(19)  # parsing yields the CPU to the services' requests (context assembly goes first)
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 1024**2, memory_mb * 1024**2))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


def main() -> None:
    limit_self(int(sys.argv[3]), int(sys.argv[4]))
    result = run(Path(sys.argv[1]), sys.argv[2])
    sys.stdout.write(json.dumps(result, ensure_ascii=False))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
