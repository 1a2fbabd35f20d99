"""The parsing subprocess: ``python -m services.lore.documents.worker <path> <name>``.

Reads the file (``reading.read``) and chunks it (``chunks.chunk_blocks``), then writes one JSON object to
stdout: ``{"ok": true, "pages": n, "chunks": [{index, text, heading, page, tokens, hash}, ...]}`` or
``{"ok": false, "reason": "..."}``. It runs in its own process under the limits ``parsing.py`` sets (address
space, CPU time, a wall-clock deadline), so a hostile file can exhaust only this process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from services.lore.documents.chunks import chunk_blocks
from services.lore.documents.reading import DocumentError, read


def run(path: Path, name: str) -> dict[str, object]:
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


def main() -> None:
    result = run(Path(sys.argv[1]), sys.argv[2])
    sys.stdout.write(json.dumps(result, ensure_ascii=False))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
